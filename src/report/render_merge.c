/* render_merge.c - the summary's view of a profile: its ranks merged, the
 * regions by name (byname.c's join) into the table's rows, the call trees
 * by path into one tree (render_view.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_analysis.h"
#include "sp_render.h"
#include "render_int.h"
#include "render_view.h"

/* ---- merging ranks ------------------------------------------------------ */

/* The merged node of name id `name` under parent, appended to parent's
 * children if new; -1 when out of memory. The caller sized nodes[] for
 * every node of every rank. */
static int32_t mnode_get(struct view *v, int32_t parent, int32_t name)
{
	int added;
	int32_t id = sp_keytab_get(&v->node_ids, parent, (uint64_t)(uint32_t)name, &added);
	if (id < 0 || !added)
		return id;
	v->nnodes++;
	struct mnode *m = &v->nodes[id];
	*m = (struct mnode){ .name = v->names.names[name], .parent = parent,
			     .first = -1, .last = -1, .next = -1 };
	int32_t *first = parent < 0 ? &v->roots_first : &v->nodes[parent].first;
	int32_t *last = parent < 0 ? &v->roots_last : &v->nodes[parent].last;
	if (*last < 0)
		*first = id;
	else
		v->nodes[*last].next = id;
	*last = id;
	m->depth = parent < 0 ? 0 : v->nodes[parent].depth + 1;
	return id;
}

enum sp_err sp_rview_merge_trees(struct view *v, struct sp_error *err)
{
	const struct sp_profile *p = v->p;
	size_t total = 0, widest = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		size_t nt = p->ranks[r].ntree;
		if (nt > INT32_MAX - total)
			return sp_error_set(err, SP_ENOMEM, "call trees too large to merge");
		total += nt;
		widest = nt > widest ? nt : widest;
	}
	int32_t *map = malloc((widest ? widest : 1) * sizeof *map);
	v->nodes = malloc((total ? total : 1) * sizeof *v->nodes);
	if (!map || !v->nodes) {
		free(map);
		return sp_error_set(err, SP_ENOMEM, "out of memory merging %zu tree nodes", total);
	}
	for (size_t r = 0, base = 0; r < p->nranks; base += p->ranks[r++].nregions) {
		const struct sp_rank *rk = &p->ranks[r];
		if (rk->ntree && !rk->tree) {
			free(map);
			return sp_error_set(err, SP_EINVAL, "rank %d: call tree not built", rk->rank);
		}
		for (size_t i = 0; i < rk->ntree; i++) {
			const struct sp_tree_node *nd = &rk->tree[i];
			if (nd->region < 0 || (size_t)nd->region >= rk->nregions || nd->parent < -1 ||
			    (nd->parent >= 0 && (size_t)nd->parent >= i)) {
				free(map);
				return sp_error_set(err, SP_EINVAL, "rank %d: call tree node %zu is invalid",
						    rk->rank, i);
			}
			int32_t parent = nd->parent < 0 ? -1 : map[nd->parent];
			if (!v->keep[base + (size_t)nd->region]) {
				/* Dropped: its children hang on its nearest kept ancestor. */
				map[i] = parent;
				continue;
			}
			int32_t m = mnode_get(v, parent, v->names.id[base + (size_t)nd->region]);
			if (m < 0) {
				free(map);
				return sp_error_set(err, SP_ENOMEM, "out of memory merging %zu tree nodes",
						    total);
			}
			v->nodes[m].calls = sp_add_sat(v->nodes[m].calls, nd->calls);
			v->nodes[m].total = sp_add_sat(v->nodes[m].total, nd->total_ns);
			map[i] = m;
		}
	}
	free(map);
	/* Parents come first, so one pass gives every node its children's sum. */
	int maxdepth = 0;
	for (size_t i = 0; i < v->nnodes; i++) {
		if (v->nodes[i].parent >= 0) {
			struct mnode *pa = &v->nodes[v->nodes[i].parent];
			pa->child_total = sp_add_sat(pa->child_total, v->nodes[i].total);
		}
		maxdepth = v->nodes[i].depth > maxdepth ? v->nodes[i].depth : maxdepth;
	}
	v->last = calloc((size_t)maxdepth + 2, 1);
	if (!v->last)
		return sp_error_set(err, SP_ENOMEM, "out of memory merging %zu tree nodes", total);
	return SP_OK;
}

/* The row of region i of rank r, whose regions start at base. */
static struct frow *frow_of(struct view *v, size_t base, size_t i)
{
	return &v->rows[v->names.id[base + i]];
}

/* Table orders: the key, largest first (names: ascending), then first
 * appearance. */
static int order_cmp(const struct frow *x, const struct frow *y)
{
	return (x->order > y->order) - (x->order < y->order);
}

static int cmp_total(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return order_cmp(x, y);
}

static int cmp_calls(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return cmp_total(a, b);
}

static int cmp_mean(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	if (x->mean_ns != y->mean_ns)
		return x->mean_ns > y->mean_ns ? -1 : 1;
	return cmp_total(a, b);
}

static int cmp_max(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	if (x->max_ns != y->max_ns)
		return x->max_ns > y->max_ns ? -1 : 1;
	return cmp_total(a, b);
}

static int cmp_self(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return cmp_total(a, b);
}

static int cmp_name(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : order_cmp(x, y);
}

/* Folds the stats of one region entry into its merged row. */
static void frow_add_stats(struct frow *f, const struct sp_stats *st)
{
	if (st->num_calls <= 0)
		return;
	if (f->nparts == 0 || st->min_ns < f->min_ns)
		f->min_ns = st->min_ns;
	if (f->nparts == 0 || st->max_ns > f->max_ns)
		f->max_ns = st->max_ns;
	/* Pooled as Chan et al. pool two samples' moments: each entry's own
	 * squared deviations, and its mean's from the pool's (a sum of squares
	 * less the squared mean cancels for long calls: 1e12 ns calls lost
	 * their few hundred ns of spread). */
	long double n = (long double)st->num_calls, m = st->mean_ns, sd = st->std_ns;
	long double total = f->pn + n, delta = m - f->pmean;
	f->pm2 += n * sd * sd + delta * delta * f->pn * n / total;
	f->pmean += delta * n / total;
	f->pn = total;
	f->nparts++;
}

/* Mean and std over every call: exact from the one entry when there is one,
 * else pooled from the entries' sums of squares. */
static void frow_finish_stats(struct frow *f)
{
	if (f->calls <= 0) {
		f->mean_ns = f->std_ns = 0;
		return;
	}
	if (f->nparts == 1 && f->st) {
		f->mean_ns = f->st->mean_ns;
		f->std_ns = f->st->std_ns;
		return;
	}
	long double n = (long double)f->calls, mean = (long double)f->raw_total / n;
	long double var = f->pn > 0 ? f->pm2 / f->pn : 0;
	f->mean_ns = (double)mean;
	/* Aggregates keep no std (NaN): then the pooled one is unknown too. */
	f->std_ns = isnan((double)f->pm2) ? NAN : var > 0 ? (double)sqrtl(var) : 0.0;
}

/* Folds the regions of rank r (the first noted at v->keep[base]) into
 * their merged rows: calls and totals summed, the rank's total folded into
 * the per-rank extremes once per name; notes in v->keep which are
 * selected. Cannot fail: v->rows has a row for every name. */
static void merge_rank(struct view *v, size_t r, size_t base)
{
	const struct sp_rank *rk = &v->p->ranks[r];
	for (size_t i = 0; i < rk->nregions; i++) {
		const struct sp_region_data *rd = &rk->regions[i];
		struct frow *f = frow_of(v, base, i);
		v->keep[base + i] = (unsigned char)f->selected;
		if (!f->selected)
			continue;
		if (f->seen_rank != r) {
			f->seen_rank = r;
			f->cur_calls = f->cur_total = f->cur_raw = f->cur_self = 0;
		}
		if (!f->st && rd->stats.num_calls > 0)
			f->st = &rd->stats;
		frow_add_stats(f, &rd->stats);
		if (rd->value_kind) {
			f->value_kind = rd->value_kind;
			f->values_total = sp_add_sat(f->values_total, rd->values_total);
		}
		if (rd->peak_bytes > f->peak_bytes)
			f->peak_bytes = rd->peak_bytes;
		if (rd->gpu_waited) {
			f->gpu_waited = 1;
			f->gpu_wait_ns = sp_add_sat(f->gpu_wait_ns, rd->gpu_wait_ns);
		}
		f->cur_calls = sp_add_sat(f->cur_calls, rd->stats.num_calls);
		f->cur_total = sp_add_sat(f->cur_total, v->cum[base + i]);
		f->cur_raw = sp_add_sat(f->cur_raw, rd->stats.total_ns);
		f->cur_self = sp_add_sat(f->cur_self, v->self[base + i]);
		v->calls = sp_add_sat(v->calls, rd->stats.num_calls);
	}
	for (size_t i = 0; i < rk->nregions; i++) {
		struct frow *f = frow_of(v, base, i);
		if (f->seen_rank != r)
			continue;
		f->seen_rank = SIZE_MAX - 1;   /* folded */
		f->calls = sp_add_sat(f->calls, f->cur_calls);
		f->total = sp_add_sat(f->total, f->cur_total);
		f->raw_total = sp_add_sat(f->raw_total, f->cur_raw);
		f->self = sp_add_sat(f->self, f->cur_self);
		if (f->cur_calls <= 0)
			continue;
		if (f->present == 0 || f->cur_total < f->min_rank)
			f->min_rank = f->cur_total;
		if (f->present == 0 || f->cur_total > f->max_rank)
			f->max_rank = f->cur_total;
		f->present++;
	}
}

/* Per-rank totals for JSON into v->rank_totals (owned by v), indexed by
 * first appearance (order), while rows[] is still by name id;
 * SP_ENOMEM with err set on failure. */
static enum sp_err fill_rank_totals(struct view *v, struct sp_error *err)
{
	const struct sp_profile *p = v->p;
	size_t cells = v->nrows * (p->nranks ? p->nranks : 1);
	if (p->nranks && cells / p->nranks != v->nrows)
		return sp_error_set(err, SP_ENOMEM, "too many regions and ranks");
	v->rank_totals = calloc(cells ? cells : 1, sizeof *v->rank_totals);
	if (!v->rank_totals)
		return sp_error_set(err, SP_ENOMEM, "out of memory for %zu rank totals", cells);
	for (size_t r = 0, base = 0; r < p->nranks; base += p->ranks[r++].nregions)
		for (size_t i = 0; i < p->ranks[r].nregions; i++) {
			struct frow *f = frow_of(v, base, i);
			int64_t *cell = &v->rank_totals[f->order * p->nranks + r];
			*cell = sp_add_sat(*cell, v->cum[base + i]);
		}
	return SP_OK;
}

/* Keeps the selected rows of v, their stats finished, in the order asked
 * for. Cannot fail. */
static void finish_rows(struct view *v, enum sp_render_sort sort)
{
	size_t kept = 0;
	for (size_t i = 0; i < v->nrows; i++) {
		struct frow *f = &v->rows[i];
		if (!f->selected)
			continue;
		if (f->present < v->p->nranks)
			f->min_rank = 0;   /* absent ranks count as 0 s */
		frow_finish_stats(f);
		v->rows[kept++] = *f;
	}
	v->nrows = kept;
	static int (*const cmps[])(const void *, const void *) = {
		[SP_SORT_TOTAL] = cmp_total, [SP_SORT_CALLS] = cmp_calls, [SP_SORT_MEAN] = cmp_mean,
		[SP_SORT_MAX] = cmp_max, [SP_SORT_NAME] = cmp_name, [SP_SORT_SELF] = cmp_self,
	};
	qsort(v->rows, v->nrows, sizeof *v->rows,
	      (unsigned)sort < sizeof cmps / sizeof *cmps ? cmps[sort] : cmp_total);
}

/* Merges the regions of every rank by name into v->rows, keeping the
 * selected ones, in the order asked for; notes in v->keep which region of
 * each rank is selected; with want_ranks, fills v->rank_totals. */
enum sp_err sp_rview_merge_regions(struct view *v, enum sp_render_sort sort, int want_ranks,
				   struct sp_error *err)
{
	const struct sp_profile *p = v->p;
	size_t total = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		if (p->ranks[r].nregions > INT32_MAX - total)
			return sp_error_set(err, SP_ENOMEM, "too many regions to merge");
		total += p->ranks[r].nregions;
	}
	if (sp_byname_build(&v->names, &p, 1, NULL, err) != SP_OK)
		return SP_ENOMEM;
	v->rows = malloc((v->names.n ? v->names.n : 1) * sizeof *v->rows);
	v->keep = malloc(total ? total : 1);
	v->cum = malloc((total ? total : 1) * sizeof *v->cum);
	v->self = malloc((total ? total : 1) * sizeof *v->self);
	if (!v->rows || !v->keep || !v->cum || !v->self)
		return sp_error_set(err, SP_ENOMEM, "out of memory merging %zu regions", total);
	for (size_t k = 0; k < v->names.n; k++) {
		const char *name = v->names.names[k];
		v->rows[k] = (struct frow){ .name = name, .order = k, .seen_rank = SIZE_MAX,
					    .selected = sp_select_region(v->sel, name) };
	}
	v->nrows = v->names.n;
	size_t base = 0;
	/* Each region's total counting recursion once, and its self time,
	 * from each rank's call tree (computed in one place for every report). */
	for (size_t r = 0; r < p->nranks; base += p->ranks[r++].nregions) {
		int exact = sp_rank_region_times(&p->ranks[r], v->cum + base, v->self + base);
		if (exact < 0)
			return sp_error_set(err, SP_ENOMEM, "out of memory for the call tree's times");
		v->approx |= !exact;
	}
	base = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		merge_rank(v, r, base);
		base += p->ranks[r].nregions;
	}
	v->nall = v->nrows;
	enum sp_err rc = want_ranks ? fill_rank_totals(v, err) : SP_OK;
	if (rc == SP_OK)
		finish_rows(v, sort);
	return rc;
}

void sp_rview_free(struct view *v)
{
	free(v->nodes);
	free(v->rows);
	sp_byname_free(&v->names);
	sp_keytab_free(&v->node_ids);
	free(v->last);
	free(v->keep);
	free(v->cum);
	free(v->self);
	free(v->rank_totals);
	free(v->sub.ranks);
}
