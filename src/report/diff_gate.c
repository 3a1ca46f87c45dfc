/* diff_gate.c - the --fail-above gate of diff (sp_diff.h): the floor on
 * region time, the verdicts from the totals, the one-sided Mann-Whitney
 * test on the per-call durations of the regions that grew past the bound
 * (their event columns streamed, sp_h5_stream), and the lines that say
 * how each region was judged. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_diff.h"
#include "sp_h5.h"
#include "sp_session.h"
#include "diff_int.h"

#define MS 1000000LL
#define SLICE 65536                    /* calls read at a time */
#define LIST_MAX 12                    /* names listed per verdict before "and N more" */
#define LINE_CAP 96                    /* the notes wrap before this column */
/* The test compares the fastest 1/FASTEST of each side's calls: whatever
 * else runs on the machine only ever adds time to a call, so the fastest
 * calls show the code's own speed (as timeit reads its minimum), while a
 * slower program slows them too. */
#define FASTEST 10

/* The calls the test compares out of n. */
static size_t fastest(size_t n)
{
	return n / FASTEST + (n % FASTEST != 0);
}

static int double_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

int64_t sp_diff_default_floor(int64_t span_a, int64_t span_b)
{
	int64_t span = span_a > span_b ? span_a : span_b;
	return span / 100 > MS ? span / 100 : MS;
}

int sp_diff_parse_time(const char *s, int64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1e9}};
	char *end;
	double v;
	if (sp_parse_decimal(s, &v, &end) != 0 || v < 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		double t = v * units[i].ns;
		if (t >= 9.2e18)
			return -1;
		*ns = (int64_t)llround(t);
		return 0;
	}
	return -1;
}

/* ---- the test ------------------------------------------------------------ */

struct obs {
	double v;
	int b;                         /* from b, else from a */
};

static int obs_cmp(const void *x, const void *y)
{
	double a = ((const struct obs *)x)->v, b = ((const struct obs *)y)->v;
	return (a > b) - (a < b);
}

/* The upper tail of the standard normal distribution at z. */
static double upper_tail(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

int sp_diff_mann_whitney(const double *a, size_t n, const double *b, size_t m, double scale,
			 double *p)
{
	*p = 1.0;
	if (n == 0 || m == 0)
		return 0;
	size_t total = n + m;
	if (total < n || total > SIZE_MAX / sizeof(struct obs))
		return -1;
	struct obs *o = malloc(total * sizeof *o);
	if (!o)
		return -1;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct obs){a[i] * scale, 0};
	for (size_t j = 0; j < m; j++)
		o[n + j] = (struct obs){b[j], 1};
	qsort(o, total, sizeof *o, obs_cmp);
	/* Ranks from 1, a run of ties sharing the mean of its ranks. */
	double rank_sum_b = 0, ties = 0;
	for (size_t i = 0, j; i < total; i = j) {
		for (j = i + 1; j < total && o[j].v == o[i].v; j++)
			;
		double rank = ((double)i + 1 + (double)j) / 2, t = (double)(j - i);
		ties += t * t * t - t;
		for (size_t k = i; k < j; k++)
			rank_sum_b += o[k].b ? rank : 0;
	}
	free(o);
	double dn = (double)n, dm = (double)m, dN = (double)total;
	double u = rank_sum_b - dm * (dm + 1) / 2, mean = dn * dm / 2;
	double var = dn * dm / 12 * ((dN + 1) - ties / (dN * (dN - 1)));
	if (var > 0)
		*p = upper_tail((u - mean - 0.5) / sqrt(var));
	return 0;
}

double sp_diff_min_p(size_t n, size_t m)
{
	if (n == 0 || m == 0)
		return 1.0;
	double dn = (double)n, dm = (double)m;
	return upper_tail((dn * dm / 2 - 0.5) / sqrt(dn * dm * (dn + dm + 1) / 12));
}

/* ---- the verdicts ------------------------------------------------------ */

/* worst and nabove from the rows' verdicts. */
static void tally(struct sp_diff *d)
{
	d->worst = NULL;
	d->worst_pct = 0;
	d->nabove = 0;
	for (size_t i = 0; i < d->n; i++) {
		struct sp_diff_row *r = &d->rows[i];
		r->above = r->verdict == SP_DIFF_ABOVE;
		if (!r->above)
			continue;
		d->nabove++;
		double g = r->tested ? r->fast_pct : r->growth;
		if (!d->worst || g > d->worst_pct) {
			d->worst = r;
			d->worst_pct = g;
		}
	}
}

void sp_diff_mark(struct sp_diff *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct sp_diff_row *r = &d->rows[i];
		r->verdict = SP_DIFF_UNJUDGED;
		if (isnan(d->bound) || !r->a || !r->b)
			continue;
		double g = r->pct;
		r->by_slowest = 0;
		if (d->several && !isnan(r->slow_pct) && (isnan(g) || r->slow_pct > g)) {
			g = r->slow_pct;
			r->by_slowest = 1;
		}
		r->growth = g;
		/* Past the bound only where the total grew past it (the test
		 * then says whether the noise made it): a region that got
		 * faster, or grew less, passes whatever its fastest call did. */
		if (r->a->slowest < d->min_time && r->b->slowest < d->min_time)
			r->verdict = SP_DIFF_BELOW_FLOOR;
		else if (!isnan(g) && g > d->bound)
			r->verdict = SP_DIFF_ABOVE;
		else
			r->verdict = SP_DIFF_WITHIN;
	}
	tally(d);
}

/* Per-call durations, growing. */
struct sample {
	double *v;
	size_t n, cap;
};

static int rank_selected(const struct sp_diff_file *f, int rank)
{
	for (size_t i = 0; i < f->nranks; i++)
		if (f->ranks[i] == rank)
			return 1;
	return 0;
}

/* Appends the durations of region `name`'s calls on the selected ranks of
 * f (only rank `only` when >= 0) to x. Sets *aggregate when a rank holds
 * the region as aggregates only (no calls to read). */
static enum sp_err durations(struct sp_h5_stream *s, const struct sp_diff_file *f, const char *name,
			     int only, struct sample *x, int *aggregate, struct sp_error *err)
{
	const struct sp_profile *p = sp_h5_stream_profile(s);
	int64_t *st = NULL, *en = NULL;
	enum sp_err rc = SP_OK;
	for (size_t ri = 0; ri < p->nranks && rc == SP_OK; ri++) {
		const struct sp_rank *rk = &p->ranks[ri];
		if (only >= 0 ? rk->rank != only : !rank_selected(f, rk->rank))
			continue;
		for (size_t gi = 0; gi < rk->nregions && rc == SP_OK; gi++) {
			const struct sp_region_data *rd = &rk->regions[gi];
			if (strcmp(rd->name, name) != 0 || rd->stats.num_calls <= 0)
				continue;
			if (rd->aggregate) {
				*aggregate = 1;
				goto out;
			}
			uint64_t calls = (uint64_t)rd->stats.num_calls;
			if (calls > (SIZE_MAX / sizeof *x->v) - x->n)
				goto nomem;
			if (x->n + calls > x->cap) {
				size_t cap = x->n + (size_t)calls;
				double *v = realloc(x->v, cap * sizeof *v);
				if (!v)
					goto nomem;
				x->v = v;
				x->cap = cap;
			}
			if (!st && (!(st = malloc(SLICE * sizeof *st)) || !(en = malloc(SLICE * sizeof *en))))
				goto nomem;
			for (uint64_t first = 0; first < calls && rc == SP_OK; first += SLICE) {
				size_t k = calls - first < SLICE ? (size_t)(calls - first) : SLICE;
				rc = sp_h5_stream_read(s, ri, gi, first, k, st, en, NULL, err);
				for (size_t i = 0; rc == SP_OK && i < k; i++)
					x->v[x->n++] = (double)(en[i] - st[i]);
			}
		}
	}
	goto out;
nomem:
	rc = sp_error_set(err, SP_ENOMEM, "out of memory for the calls of '%s'", name);
out:
	free(st);
	free(en);
	return rc;
}

/* A row too few calls to test: the growth of its total/rank were every
 * call as fast as its fastest (fast_pct, set; NAN when A has no call
 * time). Load on the machine only ever adds time to a call, so with few
 * calls the fastest shows the code's own speed; a region called more
 * often is not excused (the calls per rank scale it). Not for a growth
 * of the slowest rank: the fastest call is any rank's. */
static double untested_fast_pct(const struct sp_diff *d, struct sp_diff_row *r)
{
	double a = (double)r->a->fastest_call * (double)r->a->calls / (double)d->f[0].nranks;
	double b = (double)r->b->fastest_call * (double)r->b->calls / (double)d->f[1].nranks;
	r->fast_pct = a > 0 && b > 0 ? (b / a - 1) * 100 : NAN;
	return r->fast_pct;
}

enum sp_err sp_diff_confirm(struct sp_diff *d, struct sp_error *err)
{
	struct sp_h5_stream *s[2] = {NULL, NULL};
	struct sample x[2] = {{0}};
	enum sp_err rc = SP_OK;
	for (size_t i = 0; i < d->n && rc == SP_OK; i++) {
		struct sp_diff_row *r = &d->rows[i];
		const struct sp_diff_side *side[2] = {r->a, r->b};
		if (r->verdict != SP_DIFF_ABOVE)
			continue;
		/* Too few calls for any p below the level: the totals decide,
		 * and nothing is read. */
		int aggregate = 0;
		if (!r->by_slowest && sp_diff_min_p(fastest((size_t)r->a->calls),
						    fastest((size_t)r->b->calls)) >= SP_DIFF_ALPHA)
			goto untested;
		for (int k = 0; k < 2 && rc == SP_OK && !aggregate; k++) {
			x[k].n = 0;
			if (!s[k] && (rc = sp_h5_stream_open(d->f[k].path, &s[k], err)) != SP_OK)
				break;
			rc = durations(s[k], &d->f[k], r->name, r->by_slowest ? side[k]->slowest_rank : -1,
				       &x[k], &aggregate, err);
		}
		if (rc != SP_OK)
			break;
		if (aggregate || sp_diff_min_p(fastest(x[0].n), fastest(x[1].n)) >= SP_DIFF_ALPHA)
			goto untested;
		for (int k = 0; k < 2; k++)
			qsort(x[k].v, x[k].n, sizeof *x[k].v, double_cmp);
		/* B's total/rank above (1 + bound) times A's: B's calls longer
		 * than A's made that much longer, times A's calls per B's call,
		 * per rank. */
		double ranks_a = r->by_slowest ? 1 : (double)d->f[0].nranks;
		double ranks_b = r->by_slowest ? 1 : (double)d->f[1].nranks;
		double scale = (1 + d->bound / 100) * ((double)x[0].n / (double)x[1].n) * (ranks_b / ranks_a);
		if (sp_diff_mann_whitney(x[0].v, fastest(x[0].n), x[1].v, fastest(x[1].n), scale,
					 &r->p) != 0) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory for the calls of '%s'", r->name);
			break;
		}
		r->tested = 1;
		double sum[2] = {0, 0};
		for (int k = 0; k < 2; k++)
			for (size_t j = 0; j < fastest(x[k].n); j++)
				sum[k] += x[k].v[j];
		double mean_a = sum[0] / (double)fastest(x[0].n), mean_b = sum[1] / (double)fastest(x[1].n);
		/* B's total/rank over A's, at the fastest calls' mean. */
		double ratio = mean_a > 0 ? mean_b * ((double)x[1].n / (double)x[0].n) * (ranks_a / ranks_b) / mean_a
					  : NAN;
		r->fast_pct = (ratio - 1) * 100;
		if (r->p >= SP_DIFF_ALPHA || !(r->fast_pct > d->bound))
			r->verdict = isnan(r->growth) || r->growth <= d->bound ? SP_DIFF_WITHIN : SP_DIFF_NOISE;
		continue;
untested:
		if (isnan(r->growth) || r->growth <= d->bound)
			r->verdict = SP_DIFF_WITHIN;
		else if (!r->by_slowest && untested_fast_pct(d, r) <= d->bound)
			r->verdict = SP_DIFF_NOISE;   /* its fastest call kept its speed */
		else if (r->a->slowest < d->min_time &&
			 (r->b->slowest < 2 * d->min_time || r->b->slowest - r->a->slowest <= d->min_time))
			r->verdict = SP_DIFF_FEW_CALLS;   /* small, and lifted a little */
	}
	tally(d);
	for (int k = 0; k < 2; k++) {
		sp_h5_stream_close(s[k]);
		free(x[k].v);
	}
	return rc;
}

/* ---- the report -------------------------------------------------------- */

static const char *verdict_name(enum sp_diff_verdict v)
{
	switch (v) {
	case SP_DIFF_BELOW_FLOOR:
		return "below_min_time";
	case SP_DIFF_WITHIN:
		return "within";
	case SP_DIFF_NOISE:
		return "noise";
	case SP_DIFF_FEW_CALLS:
		return "few_calls";
	case SP_DIFF_ABOVE:
		return "above";
	default:
		return NULL;
	}
}

void sp_diff_json_verdict(FILE *out, const struct sp_diff_row *r)
{
	const char *v = verdict_name(r->verdict);
	fputs(", \"verdict\": ", out);
	fprintf(out, v ? "\"%s\"" : "null", v);
	fputs(", \"p_value\": ", out);
	if (r->tested && isfinite(r->p))
		fprintf(out, "%.6g", r->p);
	else
		fputs("null", out);
	fputs(", \"fastest_change_pct\": ", out);
	if (r->tested && isfinite(r->fast_pct))
		fprintf(out, "%.6f", r->fast_pct);
	else
		fputs("null", out);
}

/* One verdict's rows as a wrapped list: "  LABEL: a (+12.0%, p = 0.31), b". */
static void put_list(FILE *out, const struct sp_diff *d, enum sp_diff_verdict v, const char *label,
		     int detail)
{
	size_t count = 0, shown = 0;
	for (size_t i = 0; i < d->n; i++)
		count += d->rows[i].verdict == v;
	if (count == 0)
		return;
	int col = fprintf(out, "  %s:", label);
	/* The worst row first (the one stderr names), then the table's order. */
	const struct sp_diff_row *top = v == SP_DIFF_ABOVE ? d->worst : NULL;
	for (size_t i = 0; i <= d->n && shown < LIST_MAX; i++) {
		const struct sp_diff_row *r = i == 0 ? top : &d->rows[i - 1];
		char item[192], name[96], pct[CELL];
		if (!r || (i > 0 && r == top) || r->verdict != v)
			continue;
		int len = snprintf(item, sizeof item, "%s", sp_diff_plain(name, sizeof name, r->name));
		char fast[CELL];
		/* with several ranks, the slowest rank's growth where it was judged */
		const char *slow = r->by_slowest && r->slow_pct != r->pct ? "slowest rank " : "";
		if (detail && r->tested)
			snprintf(item + len, sizeof item - (size_t)len,
				 r->p < 0.001 ? " (%s%s, fastest %s, p < 0.001)" : " (%s%s, fastest %s, p = %.3f)",
				 slow, sp_diff_percent(pct, r->growth), sp_diff_percent(fast, r->fast_pct), r->p);
		else if (detail && v == SP_DIFF_NOISE)
			snprintf(item + len, sizeof item - (size_t)len, " (%s, fastest call %s, untested)",
				 sp_diff_percent(pct, r->growth), sp_diff_percent(fast, r->fast_pct));
		else if (detail)
			snprintf(item + len, sizeof item - (size_t)len, " (%s, untested)",
				 sp_diff_percent(pct, r->growth));
		int w = (int)strlen(item);
		if (shown && col + 2 + w > LINE_CAP) {
			fputs(",\n   ", out);
			col = 3;
		} else if (shown) {
			fputc(',', out);
			col++;
		}
		fprintf(out, " %s", item);
		col += 1 + w;
		shown++;
	}
	if (count > shown)
		fprintf(out, ", and %zu more", count - shown);
	fputc('\n', out);
}

void sp_diff_put_gate(FILE *out, const struct sp_diff *d)
{
	if (isnan(d->bound))
		return;
	char floor[CELL];
	fprintf(out, "\n--fail-above %g%% judges the regions in both files that reach --min-time %s s\n"
		"in either; one grows past it when its total does, its fastest tenth of calls too,\n"
		"and a one-sided Mann-Whitney test of them against A's made %g%% longer gives\n"
		"p < %g (too few calls: its total, and its fastest call times its calls)\n",
		d->bound, sp_diff_secs(floor, (double)d->min_time), d->bound, SP_DIFF_ALPHA);
	put_list(out, d, SP_DIFF_ABOVE, "above the bound", 1);
	put_list(out, d, SP_DIFF_NOISE, "past the bound but within the noise (not failed)", 1);
	put_list(out, d, SP_DIFF_FEW_CALLS, "too few calls to test, under --min-time in A (not judged)",
		 1);
	put_list(out, d, SP_DIFF_BELOW_FLOOR, "under --min-time in both files (not judged)", 0);
}
