/* analysis.c - the time axis, per-rank totals, imbalance and self time of a
 * profile, from its summary statistics (sp_analysis.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_analysis.h"
#include "sp_clock.h"

int64_t sp_rank_first_start(const struct sp_rank *rk)
{
	int64_t first = SP_NO_TIME;
	for (size_t i = 0; i < rk->nregions; i++) {
		const struct sp_stats *st = &rk->regions[i].stats;
		if (st->num_calls > 0 && st->first_start_ns != SP_NO_TIME &&
		    (first == SP_NO_TIME || st->first_start_ns < first))
			first = st->first_start_ns;
	}
	return first;
}

int64_t sp_rank_last_end(const struct sp_rank *rk)
{
	int64_t last = SP_NO_TIME;
	for (size_t i = 0; i < rk->nregions; i++) {
		const struct sp_stats *st = &rk->regions[i].stats;
		if (st->num_calls > 0 && st->last_end_ns != SP_NO_TIME &&
		    (last == SP_NO_TIME || st->last_end_ns > last))
			last = st->last_end_ns;
	}
	return last;
}

/* b - a, or 0 when it is negative or overflows (hostile files). */
static int64_t span(int64_t a, int64_t b)
{
	int64_t d;
	if (a == SP_NO_TIME || b == SP_NO_TIME || a > b || __builtin_sub_overflow(b, a, &d))
		return 0;
	return d;
}

int64_t sp_rank_span(const struct sp_rank *rk)
{
	if (rk->run_start_ns != SP_NO_TIME && rk->run_end_ns != SP_NO_TIME)
		return span(rk->run_start_ns, rk->run_end_ns);
	return span(sp_rank_first_start(rk), sp_rank_last_end(rk));
}

static int64_t earliest_run_start(const struct sp_profile *p)
{
	int64_t t = SP_NO_TIME;
	for (size_t r = 0; r < p->nranks; r++)
		if (p->ranks[r].run_start_ns != SP_NO_TIME &&
		    (t == SP_NO_TIME || p->ranks[r].run_start_ns < t))
			t = p->ranks[r].run_start_ns;
	return t;
}

static int64_t first_entry(const struct sp_profile *p)
{
	int64_t t = SP_NO_TIME;
	for (size_t r = 0; r < p->nranks; r++) {
		int64_t f = sp_rank_first_start(&p->ranks[r]);
		if (f != SP_NO_TIME && (t == SP_NO_TIME || f < t))
			t = f;
	}
	return t;
}

static int64_t last_exit(const struct sp_profile *p)
{
	int64_t t = SP_NO_TIME;
	for (size_t r = 0; r < p->nranks; r++) {
		int64_t l = sp_rank_last_end(&p->ranks[r]);
		if (l != SP_NO_TIME && (t == SP_NO_TIME || l > t))
			t = l;
	}
	return t;
}

int64_t sp_profile_time_origin(const struct sp_profile *p)
{
	int64_t t = earliest_run_start(p);
	return t != SP_NO_TIME ? t : first_entry(p);
}

int64_t sp_profile_time_span(const struct sp_profile *p)
{
	return span(first_entry(p), last_exit(p));
}

int64_t sp_profile_startup(const struct sp_profile *p)
{
	int64_t start = earliest_run_start(p), first = first_entry(p);
	if (start == SP_NO_TIME || first == SP_NO_TIME)
		return SP_NO_TIME;
	return span(start, first);
}

size_t sp_region_rank_totals(const struct sp_profile *p, const char *name, int64_t *totals)
{
	size_t have = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		totals[r] = 0;
		for (size_t i = 0; i < rk->nregions; i++)
			if (strcmp(rk->regions[i].name, name) == 0) {
				totals[r] = rk->regions[i].stats.total_ns;
				have++;
				break;
			}
	}
	return have;
}

double sp_imbalance_of(int64_t slowest, int64_t fastest)
{
	if (slowest <= 0)
		return NAN;
	return fastest > 0 ? (double)slowest / (double)fastest : INFINITY;
}

double sp_imbalance(const int64_t *totals, size_t n)
{
	if (n == 0)
		return NAN;
	int64_t lo = totals[0], hi = totals[0];
	for (size_t i = 1; i < n; i++) {
		lo = totals[i] < lo ? totals[i] : lo;
		hi = totals[i] > hi ? totals[i] : hi;
	}
	return sp_imbalance_of(hi, lo);
}

int64_t sp_tree_self_ns(const struct sp_rank *rk, size_t i)
{
	int64_t self = rk->tree[i].total_ns;
	/* Children come after their parent (sp_profile.h). */
	for (size_t j = i + 1; j < rk->ntree; j++)
		if (rk->tree[j].parent == (int32_t)i && __builtin_sub_overflow(self, rk->tree[j].total_ns, &self))
			return 0;
	return self > 0 ? self : 0;
}
