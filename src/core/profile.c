/* profile.c - owning and summarising the in-memory profile model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_profile.h"

void sp_line_table_clear(struct sp_line_table *t)
{
	free(t->function);
	free(t->region);
	free(t->filename);
	free(t->hits);
	free(t->time_ns);
	if (t->source)
		for (size_t i = 0; i < t->n; i++)
			free(t->source[i]);
	free(t->source);
	memset(t, 0, sizeof *t);
}

const char *sp_value_kind_name(int kind)
{
	return kind == SP_VALUES_ALLOC_BYTES ? "alloc_bytes" : kind == SP_VALUES_BYTES ? "bytes" : NULL;
}

void sp_region_drop_events(struct sp_region_data *rd)
{
	if (rd->owns_events) {
		free(rd->starts);
		free(rd->ends);
		free(rd->lanes);
		free(rd->values);
	}
	rd->starts = rd->ends = NULL;
	rd->lanes = NULL;
	rd->values = NULL;
	rd->owns_events = 0;
}

void sp_likwid_region_clear(struct sp_likwid_region *t)
{
	free(t->region);
	free(t->events);
	free(t->count);
	free(t->time);
	free(t->metrics);
	memset(t, 0, sizeof *t);
}

int sp_rank_has_region(const struct sp_rank *rk, const char *name)
{
	for (size_t i = 0; i < rk->nregions; i++)
		if (strcmp(rk->regions[i].name, name) == 0)
			return 1;
	return 0;
}

void sp_rank_clear(struct sp_rank *rk)
{
	for (size_t i = 0; i < rk->nregions; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		free(rd->name);
		if (rd->owns_events) {
			free(rd->starts);
			free(rd->ends);
			free(rd->lanes);
			free(rd->values);
		}
	}
	free(rk->regions);
	free(rk->tree);
	for (size_t i = 0; i < rk->nlines; i++)
		sp_line_table_clear(&rk->lines[i]);
	free(rk->lines);
	for (size_t i = 0; i < rk->nlikwid; i++)
		sp_likwid_region_clear(&rk->likwid[i]);
	free(rk->likwid);
	free(rk->hostname);
	free(rk->children_dir);
	memset(rk, 0, sizeof *rk);
}

void sp_profile_free(struct sp_profile *p)
{
	if (!p)
		return;
	for (size_t r = 0; r < p->nranks; r++)
		sp_rank_clear(&p->ranks[r]);
	free(p->ranks);
	for (size_t i = 0; i < p->nmeta; i++) {
		free(p->meta[i].key);
		free(p->meta[i].value);
	}
	free(p->meta);
	free(p);
}

void sp_stats_compute(struct sp_stats *st, const int64_t *starts, const int64_t *ends, size_t n)
{
	memset(st, 0, sizeof *st);
	st->first_start_ns = SP_NO_TIME;
	st->last_end_ns = SP_NO_TIME;
	if (n == 0)
		return;
	/* Two passes: the integer sums first, then the squared deviations from
	 * the exact mean (as stable as Welford's update, without a division per
	 * event, and both loops vectorise). */
	int64_t total = 0, mn = INT64_MAX, mx = INT64_MIN;
	int64_t first = INT64_MAX, last = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		int64_t d = ends[i] - starts[i];
		total += d;
		mn = d < mn ? d : mn;
		mx = d > mx ? d : mx;
		first = starts[i] < first ? starts[i] : first;
		last = ends[i] > last ? ends[i] : last;
	}
	double mean = (double)total / (double)n, m2 = 0.0;
	for (size_t i = 0; i < n; i++) {
		double dev = (double)(ends[i] - starts[i]) - mean;
		m2 += dev * dev;
	}
	st->num_calls = (int64_t)n;
	st->total_ns = total;
	st->min_ns = mn;
	st->max_ns = mx;
	st->mean_ns = mean;
	st->std_ns = sqrt(m2 / (double)n);
	st->first_start_ns = first;
	st->last_end_ns = last;
}

void sp_stats_acc_init(struct sp_stats_acc *a)
{
	*a = (struct sp_stats_acc){.min = INT64_MAX, .max = INT64_MIN, .last_end = INT64_MIN};
}

void sp_stats_acc_columns(struct sp_stats_acc *a, const int64_t *starts, const int64_t *ends, size_t n)
{
	/* No overflow check per call: the sums wrap (as unsigned) and are
	 * checked once after, by their bounds (n times the largest |d|, and
	 * its square), which hold for any real run; a column past them is
	 * added again a call at a time, each sum checked. */
	uint64_t total = 0;
	int64_t mn = INT64_MAX, mx = INT64_MIN, last = INT64_MIN;
	unsigned __int128 squares = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t d = (int64_t)((uint64_t)ends[i] - (uint64_t)starts[i]);
		total += (uint64_t)d;
		mn = d < mn ? d : mn;
		mx = d > mx ? d : mx;
		last = ends[i] > last ? ends[i] : last;
		squares += (unsigned __int128)((sp_i128)d * d);
	}
	if (n == 0)
		return;
	int64_t big = mx > -(mn + 1) ? mx : -(mn + 1);   /* |d| - 1 at most, without overflow */
	sp_i128 b1 = (sp_i128)big + 1, bound, sq_bound, whole;
	int64_t sum;
	int exact = n <= (size_t)INT64_MAX && !__builtin_mul_overflow(b1, (sp_i128)n, &bound) &&
		    bound <= INT64_MAX && !__builtin_mul_overflow(b1 * b1, (sp_i128)n, &sq_bound) &&
		    !__builtin_add_overflow(a->total, (int64_t)total, &sum) &&
		    !__builtin_add_overflow(a->squares, (sp_i128)squares, &whole);
	if (!exact) {
		for (size_t i = 0; i < n; i++)
			sp_stats_acc_add(a, ends[i] - starts[i], ends[i]);
		return;
	}
	a->n += (int64_t)n;
	a->total = sum;
	a->squares = whole;
	a->min = mn < a->min ? mn : a->min;
	a->max = mx > a->max ? mx : a->max;
	a->last_end = last > a->last_end ? last : a->last_end;
}

int sp_stats_from_acc(struct sp_stats *st, const struct sp_stats_acc *a, int64_t first_start)
{
	if (a->overflow)
		return -1;
	memset(st, 0, sizeof *st);
	st->first_start_ns = SP_NO_TIME;
	st->last_end_ns = SP_NO_TIME;
	if (a->n == 0)
		return 0;
	st->num_calls = a->n;
	st->total_ns = a->total;
	st->min_ns = a->min;
	st->max_ns = a->max;
	st->first_start_ns = first_start;
	st->last_end_ns = a->last_end;
	st->mean_ns = (double)a->total / (double)a->n;
	/* n^2 var = n sum(d^2) - (sum d)^2, exact in 128 bits when it fits;
	 * else from the same exact sums in long double. */
	sp_i128 n = a->n, nsq, tsq, t = a->total;
	double var;
	if (!__builtin_mul_overflow(n, a->squares, &nsq) && !__builtin_mul_overflow(t, t, &tsq))
		var = (double)((long double)(nsq - tsq) / ((long double)a->n * (long double)a->n));
	else {
		long double mean = (long double)a->total / (long double)a->n;
		var = (double)((long double)a->squares / (long double)a->n - mean * mean);
	}
	st->std_ns = var > 0 ? sqrt(var) : 0.0;
	return 0;
}

const char *sp_profile_meta(const struct sp_profile *p, const char *key)
{
	for (size_t i = 0; i < p->nmeta; i++)
		if (strcmp(p->meta[i].key, key) == 0)
			return p->meta[i].value;
	return NULL;
}

int sp_kv_set(struct sp_kv **meta, size_t *n, const char *key, const char *value, enum sp_kv_type type)
{
	size_t i = 0;
	while (i < *n && strcmp((*meta)[i].key, key) != 0)
		i++;
	char *k = strdup(key), *v = strdup(value);
	struct sp_kv *m = i < *n ? *meta : realloc(*meta, (*n + 1) * sizeof *m);
	if (m)
		*meta = m;   /* moved by realloc: the old block is gone, whatever follows */
	if (!k || !v || !m) {
		free(k);
		free(v);
		return -1;
	}
	if (i < *n) {
		free(m[i].key);
		free(m[i].value);
	} else {
		(*n)++;
	}
	m[i] = (struct sp_kv){k, v, type};
	return 0;
}

/* Walks rk's tree depth first (children linked through first/next, roots
 * from *roots), counting each node nested inside a node of its own region
 * out of cumulative[]; open[] counts the open nodes of each region. */
static void cumulative_walk(const struct sp_rank *rk, const int32_t *first, const int32_t *next,
			    int32_t roots, int32_t *open, int64_t *cumulative)
{
	const struct sp_tree_node *t = rk->tree;
	int32_t i = roots;
	while (i >= 0) {
		/* Entering node i. */
		if (open[t[i].region]++ > 0)
			cumulative[t[i].region] = sp_sub_sat(cumulative[t[i].region], t[i].total_ns);
		if (first[i] >= 0) {
			i = first[i];
			continue;
		}
		/* Leaving i, and every ancestor whose last child it closes. */
		for (;;) {
			open[t[i].region]--;
			if (next[i] >= 0) {
				i = next[i];
				break;
			}
			if ((i = t[i].parent) < 0)
				break;
		}
	}
}

int sp_rank_region_times(const struct sp_rank *rk, int64_t *cumulative, int64_t *self)
{
	size_t nr = rk->nregions, n = rk->tree ? rk->ntree : 0;
	int exact = 1;
	int32_t *first = NULL, *next = NULL, *open = NULL;
	int64_t *kids = NULL;
	if (n && (n > INT32_MAX || !(first = malloc(n * sizeof *first)) ||
		  !(next = malloc(n * sizeof *next)) || !(kids = calloc(n, sizeof *kids)) ||
		  !(open = calloc(nr ? nr : 1, sizeof *open)))) {
		free(first);
		free(next);
		free(kids);
		return -1;
	}
	for (size_t r = 0; r < nr; r++) {
		const struct sp_region_data *rd = &rk->regions[r];
		int64_t total = rd->stats.total_ns;
		if (rk->tree)
			cumulative[r] = total;
		else if (rd->cumulative_ns > 0 && rd->cumulative_ns <= total)
			cumulative[r] = rd->cumulative_ns;
		else {
			cumulative[r] = total;
			exact &= rd->stats.num_calls <= 0;
		}
		if (self)
			self[r] = rd->aggregate ? rd->self_ns : total;
	}
	if (n) {
		/* Children linked in their order, roots likewise; a node naming
		 * no region, or a parent not before it (a damaged tree), is
		 * left out with its subtree. */
		int32_t roots = -1;
		for (size_t i = n; i-- > 0;)
			first[i] = -1;
		for (size_t i = n; i-- > 0;) {
			const struct sp_tree_node *nd = &rk->tree[i];
			int ok = nd->region >= 0 && (size_t)nd->region < nr && nd->parent < (int32_t)i;
			next[i] = -1;
			if (!ok)
				continue;
			int32_t *head = nd->parent < 0 ? &roots : &first[nd->parent];
			next[i] = *head;
			*head = (int32_t)i;
			if (nd->parent >= 0)
				kids[nd->parent] = sp_add_sat(kids[nd->parent], nd->total_ns);
		}
		cumulative_walk(rk, first, next, roots, open, cumulative);
		if (self)
			for (size_t i = 0; i < n; i++) {
				const struct sp_tree_node *nd = &rk->tree[i];
				if (nd->region < 0 || (size_t)nd->region >= nr || rk->regions[nd->region].aggregate)
					continue;
				int64_t inner = kids[i] < nd->total_ns ? kids[i] : nd->total_ns;
				self[nd->region] = sp_sub_sat(self[nd->region], inner > 0 ? inner : 0);
			}
	}
	for (size_t r = 0; r < nr; r++) {
		cumulative[r] = cumulative[r] > 0 ? cumulative[r] : 0;
		if (self)
			self[r] = self[r] > 0 ? self[r] : 0;
	}
	free(first);
	free(next);
	free(kids);
	free(open);
	return exact;
}
