/* render.c - the terminal summary of a profile: call tree and region table. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_analysis.h"
#include "sp_hosts.h"
#include "sp_json.h"
#include "sp_keytab.h"
#include "sp_render.h"
#include "sp_table.h"
#include "byname.h"
#include "render_int.h"
#include "svg.h"


/* A node of the call tree merged over ranks by path. */
struct mnode {
	const char *name;              /* borrowed from the profile */
	int32_t parent, first, last, next;
	int depth;
	int64_t calls, total, child_total;
	/* Under a limit (limit_tree): children left out and their total, and
	 * whether this node is left out itself. */
	int32_t hidden;
	int64_t hidden_total;
	unsigned char cut;
};

/* A region merged over ranks by name. */
struct frow {
	const char *name;
	const struct sp_stats *st;     /* its stats on the first rank having it */
	int64_t calls;                 /* summed over ranks */
	int64_t total;                 /* summed over ranks, a recursive region counted once */
	int64_t raw_total;             /* the plain sum of its calls' durations */
	int64_t self;                  /* self time (less the calls nested directly in it) */
	int64_t min_rank, max_rank;    /* per-rank totals over the ranks having it */
	int64_t min_ns, max_ns;        /* shortest and longest call, over ranks */
	double mean_ns, std_ns;        /* over every call of every rank */
	long double sumsq;             /* sum of squared durations, for std_ns */
	size_t nparts;                 /* (rank, region) entries with calls folded in */
	size_t present;                /* ranks where it has calls */
	size_t order;                  /* first appearance, to break ties */
	size_t seen_rank;              /* bookkeeping while merging */
	int64_t cur_calls, cur_total, cur_raw, cur_self;
	int selected;                  /* kept by the selection */
	int value_kind;                /* its values' kind (sp_profile.h), on any rank */
	int64_t values_total;          /* summed over ranks */
	int64_t peak_bytes;            /* the highest over ranks; <= 0: not known */
};

struct view {
	const struct sp_profile *p;    /* the selected ranks only */
	const struct sp_select *sel;
	unsigned char *keep;           /* per region of each rank, in order: selected */
	int64_t *cum, *self;           /* per region of each rank: sp_rank_region_times */
	int approx;                    /* some rank had no tree: raw sums stand for totals */
	size_t nall;                   /* region names before the selection */
	int64_t *rank_totals;          /* JSON only: [order * nranks + rank index] */
	struct mnode *nodes;
	size_t nnodes;
	int32_t roots_first, roots_last;
	struct frow *rows;
	size_t nrows;
	unsigned char *last;           /* per depth: is the row the last sibling */
	struct sp_byname names;        /* the regions by name: rows[k] is name k until
					* finish_rows */
	struct sp_keytab node_ids;     /* (merged parent, name) -> merged node */
	int64_t span, calls;
	/* Under a limit: roots left out (their count and total), tree nodes
	 * and table rows shown, and the heaviest total left out of each. */
	int32_t roots_hidden;
	int64_t roots_hidden_total;
	size_t tree_shown, rows_shown;
	int64_t tree_cut, rows_cut;
};


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
	*m = (struct mnode){ .name = sp_byname_name(&v->names, &v->p, (size_t)name), .parent = parent,
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

static enum sp_err merge_trees(struct view *v, struct sp_error *err)
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
	long double n = (long double)st->num_calls, m = st->mean_ns, sd = st->std_ns;
	f->sumsq += n * (sd * sd + m * m);
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
	long double var = f->sumsq / n - mean * mean;
	f->mean_ns = (double)mean;
	/* Aggregates keep no std (NaN): then the pooled one is unknown too. */
	f->std_ns = isnan((double)f->sumsq) ? NAN : var > 0 ? (double)sqrtl(var) : 0.0;
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
static enum sp_err merge_regions(struct view *v, enum sp_render_sort sort, int want_ranks,
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
		const char *name = sp_byname_name(&v->names, &p, k);
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

/* ---- the call tree ------------------------------------------------------ */

/* One column of a tree prefix: at row depth d the prefix has 3 * d columns,
 * the ancestors' continuation lines and then the row's own connector. */
static const char *prefix_cell(const unsigned char *last, int d, int own, int col)
{
	int k = col / 3 + 1, j = col % 3;
	if (k < d)
		return j == 0 && !last[k] ? "│" : " ";
	if (j == 1)
		return "─";
	if (j == 2)
		return " ";
	return !own && last[d] ? "└" : "├";
}

/* Writes a tree label in exactly w columns: the prefix, then the name cut
 * on its right when too wide (keeping the " (Nx)" suffix). When the tree is
 * too deep for its column, indentation wraps every `wrap` levels: the deeper
 * rows start again from the left behind a "…". */
static void put_label(FILE *out, int w, const unsigned char *last, int d, int own, int wrap,
		      const char *name, const char *suffix)
{
	int hidden = wrap && d > wrap ? (d - 1) / wrap * wrap : 0, used = 0;
	if (hidden) {
		fputs("…", out);
		used++;
	}
	for (int col = 3 * hidden; col < 3 * d; col++, used++)
		fputs(prefix_cell(last, d, own, col), out);
	int room = w - used, sw = (int)strlen(suffix), tw = sp_render_text_width(name) + sw;
	if (tw <= room || room >= sw + 2) {
		used += sp_render_text_mid(out, name, room - sw);
		fputs(suffix, out);
		used += sw;
	} else {
		used += sp_render_text_mid(out, name, room);
	}
	sp_render_pad(out, w - used);
}

/* A row of the tree: a node (calls set), its (own) row (own set), or the
 * "… N more" row closing a list some of whose entries were left out (name
 * set, calls 0, own 0). */
static void tree_row(FILE *out, int w, int cw, int dw, const unsigned char *last, int d, int own,
		     int wrap, const char *name, int64_t calls, int64_t ns, double denom)
{
	char suffix[32] = "", cbuf[32] = "", sbuf[32], pbuf[32] = "-";
	if (!own && calls > 0) {
		snprintf(cbuf, sizeof cbuf, "%lld", (long long)calls);
		if (calls > 1)
			snprintf(suffix, sizeof suffix, " (%lldx)", (long long)calls);
	}
	if (denom > 0)
		snprintf(pbuf, sizeof pbuf, "%.1f", 100.0 * (double)ns / denom);
	put_label(out, w, last, d, own, wrap, own ? "(own)" : name, suffix);
	fprintf(out, "  %*s  ", cw, cbuf);
	sp_render_duration(sbuf, sizeof sbuf, (double)ns);
	sp_render_pad(out, dw - sp_render_text_width(sbuf));
	fprintf(out, "%s  %6s\n", sbuf, pbuf);
}

static int cmp_heavier(const void *a, const void *b, void *ctx)
{
	const struct mnode *n = ctx;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	if (n[x].total != n[y].total)
		return n[x].total > n[y].total ? -1 : 1;
	return (x > y) - (x < y);      /* the first to start wins a tie */
}

/* Keeps the `top` heaviest nodes of the tree (0: every one) no deeper than
 * `depth` levels (0: any), with their ancestors: heaviest first, each that
 * still fits with the ancestors it needs (without lanes, overlapping
 * threads can make a child heavier than its parent). Relinks the kept
 * nodes (children in their order) and counts what each kept parent lost in
 * its hidden fields. Returns -1 when out of memory. */
static int limit_tree(struct view *v, int top, int depth)
{
	size_t n = v->nnodes, cap = top > 0 ? (size_t)top : SIZE_MAX;
	v->tree_shown = n;
	if (n == 0 || (cap >= n && depth <= 0))
		return 0;
	int32_t *order = malloc(n * sizeof *order);
	if (!order)
		return -1;
	for (size_t i = 0; i < n; i++)
		v->nodes[i].cut = 1;
	size_t m = 0, shown = 0;
	for (size_t i = 0; i < n; i++)
		if (depth <= 0 || v->nodes[i].depth < depth)
			order[m++] = (int32_t)i;
	qsort_r(order, m, sizeof *order, cmp_heavier, v->nodes);
	for (size_t k = 0; k < m && shown < cap; k++) {
		size_t need = 0;
		for (int32_t a = order[k]; a >= 0 && v->nodes[a].cut; a = v->nodes[a].parent)
			need++;
		if (need > cap - shown)
			continue;
		for (int32_t a = order[k]; a >= 0 && v->nodes[a].cut; a = v->nodes[a].parent)
			v->nodes[a].cut = 0;
		shown += need;
	}
	v->tree_shown = shown;
	v->tree_cut = 0;
	for (size_t i = 0; i < n; i++)
		if (v->nodes[i].cut && v->nodes[i].total > v->tree_cut)
			v->tree_cut = v->nodes[i].total;
	/* Relink: parents come first, so children are met in their order. */
	for (size_t i = 0; i < n; i++)
		v->nodes[i].first = v->nodes[i].last = -1;
	v->roots_first = v->roots_last = -1;
	for (size_t i = 0; i < n; i++) {
		struct mnode *c = &v->nodes[i];
		int32_t pa = c->parent;
		if (c->cut) {
			if (pa < 0) {
				v->roots_hidden++;
				v->roots_hidden_total = sp_add_sat(v->roots_hidden_total, c->total);
			} else if (!v->nodes[pa].cut) {
				v->nodes[pa].hidden++;
				v->nodes[pa].hidden_total = sp_add_sat(v->nodes[pa].hidden_total, c->total);
			}
			continue;
		}
		c->next = -1;
		int32_t *first = pa < 0 ? &v->roots_first : &v->nodes[pa].first;
		int32_t *last = pa < 0 ? &v->roots_last : &v->nodes[pa].last;
		if (*last < 0)
			*first = (int32_t)i;
		else
			v->nodes[*last].next = (int32_t)i;
		*last = (int32_t)i;
	}
	free(order);
	return 0;
}

static int64_t own_ns(const struct mnode *m)
{
	/* A damaged file's totals may be anything: no overflow here. */
	int64_t own;
	if (__builtin_sub_overflow(m->total, m->child_total, &own))
		return m->child_total < 0 ? INT64_MAX : 0;
	return own > 0 ? own : 0;
}

/* Under a limit a node's (own) row shows only when it is as heavy as
 * what was kept, or when nothing else closes its list; else its time
 * goes to the closing "… N more" row. */
static int own_shown(const struct view *v, const struct mnode *m)
{
	return v->tree_shown == v->nnodes || m->hidden == 0 || own_ns(m) >= v->tree_cut;
}

/* The wider of w and the columns ns takes as a duration. */
static int dur_width(int64_t ns, int w)
{
	char buf[32];
	int dw = sp_render_text_width(sp_render_duration(buf, sizeof buf, (double)ns));
	return dw > w ? dw : w;
}

static void render_tree(FILE *out, const struct view *v)
{
	size_t nranks = v->p->nranks;
	int64_t maxcalls = 0, need = 0;
	int dw = dur_width(v->roots_hidden_total, 7);
	for (size_t i = 0; i < v->nnodes; i++) {
		const struct mnode *m = &v->nodes[i];
		char suffix[32] = "";
		if (m->cut)
			continue;
		dw = dur_width(m->total, dw);
		if (m->hidden)
			dw = dur_width(sp_add_sat(m->hidden_total, own_ns(m)), dw);
		if (m->calls > 1)
			snprintf(suffix, sizeof suffix, " (%lldx)", (long long)m->calls);
		int64_t lw = 3 * (int64_t)m->depth + sp_render_text_width(m->name) + (int64_t)strlen(suffix);
		if (m->first >= 0 && 3 * (int64_t)m->depth + 8 > lw)
			lw = 3 * (int64_t)m->depth + 8;   /* its "├─ (own)" row */
		if (m->first >= 0 && m->hidden > 0 && 3 * (int64_t)m->depth + 28 > lw)
			lw = 3 * (int64_t)m->depth + 28;  /* its "└─ … (own) + N more" row */
		need = lw > need ? lw : need;
		maxcalls = m->calls > maxcalls ? m->calls : maxcalls;
	}
	if (v->roots_hidden > 0 && need < 20)
		need = 20;                             /* the roots' "… N more" row */
	unsigned char *last = v->last;
	int cw = sp_render_digits(maxcalls) > 5 ? sp_render_digits(maxcalls) : 5;
	int w = sp_render_name_width(need > INT32_MAX / 2 ? INT32_MAX / 2 : (int)need, cw + 2 + 2 + dw + 2 + 6);
	int tw = w + 2 + cw + 2 + dw + 2 + 6;
	/* When labels must be cut, keep at least half the column for the text. */
	int wrap = need > w ? (w / 2) / 3 : 0;
	/* % run: share of the run span, of every rank's together when summed. */
	double denom = (double)v->span * (double)(nranks ? nranks : 1);
	/* Threads (or tasks) that ran at once: their outermost calls, each in
	 * its own lane, add up past the run span, as ranks' do. */
	int64_t roots = 0;
	for (size_t n = 0; n < v->nnodes; n++)
		if (v->nodes[n].parent < 0)
			roots = sp_add_sat(roots, v->nodes[n].total);
	int overlap = (double)roots > denom * 1.001;

	if (nranks > 1)
		fprintf(out, "Call tree (sum of %zu %s; %% run is of %zu × run span%s)\n", nranks,
			sp_render_children(v->p) ? "processes" : "ranks", nranks,
			overlap ? "; threads' times add up too" : "");
	else if (overlap)
		fputs("Call tree (threads ran at once: their times add up, so % run passes 100)\n", out);
	else
		fputs("Call tree\n", out);
	fprintf(out, "%-*s  %*s  %*s  %6s\n", w, "region", cw, "calls", dw, "total", "% run");
	sp_render_rule(out, tw);
	if (v->nnodes == 0)
		fputs("(no calls recorded)\n", out);
	char more[48];
	/* Depth first, without recursion: recursive profiles can be deep. A
	 * list with entries left out ends in a "… N more" row holding their
	 * total. */
	int32_t i = v->nnodes ? v->roots_first : -1;
	while (i >= 0) {
		const struct mnode *m = &v->nodes[i];
		int32_t lost = m->parent < 0 ? v->roots_hidden : v->nodes[m->parent].hidden;
		last[m->depth] = m->next < 0 && lost == 0;
		tree_row(out, w, cw, dw, last, m->depth, 0, wrap, m->name, m->calls, m->total, denom);
		if (m->first >= 0) {
			if (own_shown(v, m))
				tree_row(out, w, cw, dw, last, m->depth + 1, 1, wrap, NULL, 0, own_ns(m), denom);
			i = m->first;
			continue;
		}
		while (i >= 0 && v->nodes[i].next < 0) {
			int32_t pa = v->nodes[i].parent;
			int32_t h = pa < 0 ? v->roots_hidden : v->nodes[pa].hidden;
			if (h > 0) {
				int d = v->nodes[i].depth, own = pa >= 0 && !own_shown(v, &v->nodes[pa]);
				int64_t ns = pa < 0 ? v->roots_hidden_total : v->nodes[pa].hidden_total;
				last[d] = 1;
				snprintf(more, sizeof more, "… %s%ld more", own ? "(own) + " : "", (long)h);
				tree_row(out, w, cw, dw, last, d, 0, wrap, more, 0,
					 own ? sp_add_sat(ns, own_ns(&v->nodes[pa])) : ns, denom);
			}
			i = pa;
		}
		if (i >= 0)
			i = v->nodes[i].next;
	}
}

/* ---- the region table --------------------------------------------------- */

/* The cells of a region table row into cells[FLAT_COLS] (bufs holding the
 * text): name, calls, then with one rank total, self, mean, min, max, std;
 * with several, each rank's mean total and self, the smallest and largest
 * rank total, the imbalance. */
enum { FLAT_COLS = 8, CELL = 48 };

static size_t flat_cells(const struct frow *f, size_t nranks, char bufs[FLAT_COLS][CELL],
			 const char *cells[FLAT_COLS])
{
	cells[0] = f->name;
	snprintf(bufs[1], CELL, "%lld", (long long)f->calls);
	cells[1] = bufs[1];
	for (int k = 2; k < FLAT_COLS; k++)
		cells[k] = bufs[k];
	if (nranks > 1) {
		double x = sp_imbalance_of(f->max_rank, f->min_rank);
		sp_render_duration(bufs[2], CELL, (double)f->total / (double)nranks);
		sp_render_duration(bufs[3], CELL, (double)f->self / (double)nranks);
		sp_render_duration(bufs[4], CELL, (double)f->min_rank);
		sp_render_duration(bufs[5], CELL, (double)f->max_rank);
		if (f->present < nranks)
			snprintf(bufs[6], CELL, "ranks %zu/%zu", f->present, nranks);
		else if (isfinite(x))
			snprintf(bufs[6], CELL, "%.2fx", x);
		else
			snprintf(bufs[6], CELL, "-");
		return 7;
	}
	sp_render_duration(bufs[2], CELL, (double)f->total);
	sp_render_duration(bufs[3], CELL, (double)f->self);
	if (f->calls > 0) {
		sp_render_duration(bufs[4], CELL, f->mean_ns);
		sp_render_duration(bufs[5], CELL, (double)f->min_ns);
		sp_render_duration(bufs[6], CELL, (double)f->max_ns);
		sp_render_duration(bufs[7], CELL, f->std_ns);   /* "-" when NaN */
	} else {
		for (int k = 4; k < FLAT_COLS; k++)
			snprintf(bufs[k], CELL, "-");
	}
	return 8;
}

static void render_flat(FILE *out, const struct view *v)
{
	size_t nranks = v->p->nranks;
	int flagged = 0, need = 0;
	char bufs[FLAT_COLS][CELL];
	const char *cells[FLAT_COLS];
	static const char *const heads1[FLAT_COLS] = {"region", "calls", "total", "self", "mean",
						      "min", "max", "std"};
	static const char *const headsn[FLAT_COLS] = {"region", "calls", "mean/rank", "self/rank",
						      "min rank", "max rank", "imbalance", NULL};
	const char *const *heads = nranks > 1 ? headsn : heads1;
	size_t nc = nranks > 1 ? 7 : 8;
	/* Times are at least 7 columns wide ("12.3 ms"), numbers 5. */
	struct sp_table_col tc[FLAT_COLS];
	for (size_t k = 0; k < nc; k++)
		tc[k] = (struct sp_table_col){ k == 0 ? NULL : "  ", k ? SP_TABLE_RIGHT : SP_TABLE_NAME,
					       k == 0 ? 0 : k == 1 ? 5 : 7 };
	sp_table_fit(tc + 1, nc - 1, heads + 1);
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		int nw = sp_render_text_width(f->name);
		need = nw > need ? nw : need;
		flagged |= nranks > 1 && f->present < nranks;
		flat_cells(f, nranks, bufs, cells);
		sp_table_fit(tc + 1, nc - 1, cells + 1);
	}
	int rest = 0;
	for (size_t k = 1; k < nc; k++)
		rest += 2 + tc[k].w;
	tc[0].w = sp_render_name_width(need, rest);
	if (nranks > 1 && sp_render_children(v->p))
		fprintf(out, "Regions (%zu processes: calls summed; times are each process's total)\n",
			nranks);
	else if (nranks > 1)
		fprintf(out, "Regions (%zu ranks: calls summed; times are each rank's total)\n", nranks);
	else
		fputs("Regions\n", out);
	sp_table_row(out, tc, nc, heads, "\n");
	sp_render_rule(out, tc[0].w + rest);
	if (v->nrows == 0)
		fputs("(no regions)\n", out);
	for (size_t i = 0; i < v->rows_shown; i++) {
		flat_cells(&v->rows[i], nranks, bufs, cells);
		sp_table_row(out, tc, nc, cells, "\n");
	}
	if (flagged)
		fprintf(out, "ranks k/%zu: recorded on k ranks only; the others count as 0 s.\n",
			nranks);
	if (v->approx)
		fputs("note: a rank without a call tree: its totals are raw sums, a recursive region's "
		      "nested calls counted again.\n", out);
}

/* ---- values: bytes allocated (run --memory) or moved (run --mpi-calls) --- */

/* A table of the shown rows that have values of kind (or, for
 * SP_VALUES_ALLOC_BYTES, a known peak), in the region table's order;
 * nothing when none has. */
static void render_values(FILE *out, const struct view *v, int kind)
{
	int alloc = kind == SP_VALUES_ALLOC_BYTES, need = 0;
	int64_t maxcalls = 0;
	size_t n = 0;
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		if (f->value_kind != kind && !(alloc && f->peak_bytes > 0))
			continue;
		int nw = sp_render_text_width(f->name);
		need = nw > need ? nw : need;
		maxcalls = f->calls > maxcalls ? f->calls : maxcalls;
		n++;
	}
	if (n == 0)
		return;
	int cw = sp_render_digits(maxcalls) > 5 ? sp_render_digits(maxcalls) : 5;
	int rest = 2 + cw + 3 * (2 + 10);
	int w = sp_render_name_width(need, rest);
	struct sp_table_col tc[5];
	const int cols_w[] = {w, cw, 10, 10, 10};
	for (size_t k = 0; k < 5; k++)
		tc[k] = (struct sp_table_col){ k ? "  " : NULL, k ? SP_TABLE_RIGHT : SP_TABLE_LEFT, cols_w[k] };
	fputc('\n', out);
	if (alloc)
		fputs("Allocations (bytes allocated during the calls, nested calls included)\n", out);
	else
		fputs("MPI calls (bytes sent or received: count × the datatype's size)\n", out);
	sp_table_row(out, tc, alloc ? 5 : 4, (const char *const[]){"region", "calls",
		     alloc ? "allocated" : "bytes", "per call", "peak live"}, "\n");
	sp_render_rule(out, w + rest - (alloc ? 0 : 12));
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		char calls[32], a[32] = "-", b[32] = "-", c[32] = "-";
		if (f->value_kind != kind && !(alloc && f->peak_bytes > 0))
			continue;
		snprintf(calls, sizeof calls, "%lld", (long long)f->calls);
		if (f->value_kind == kind) {
			sp_render_bytes(a, sizeof a, (double)f->values_total);
			if (f->calls > 0)
				sp_render_bytes(b, sizeof b, (double)f->values_total / (double)f->calls);
		}
		if (f->peak_bytes > 0)
			sp_render_bytes(c, sizeof c, (double)f->peak_bytes);
		sp_table_row(out, tc, alloc ? 5 : 4, (const char *const[]){f->name, calls, a, b, c}, "\n");
	}
}

/* ---- JSON --------------------------------------------------------------- */

/* A number of seconds from nanoseconds, exact to the nanosecond; null when
 * not finite (never expected). */
static void json_secs(FILE *out, const char *key, double ns)
{
	if (isfinite(ns))
		fprintf(out, "\"%s\": %.9f", key, ns / 1e9);
	else
		fprintf(out, "\"%s\": null", key);
}

static const char *const sort_names[] = {
	[SP_SORT_TOTAL] = "total", [SP_SORT_CALLS] = "calls", [SP_SORT_MEAN] = "mean",
	[SP_SORT_MAX] = "max", [SP_SORT_NAME] = "name", [SP_SORT_SELF] = "self",
};

static void render_json(FILE *out, const struct view *v, const char *title, enum sp_render_sort sort,
			const struct sp_hosts *h)
{
	const struct sp_profile *p = v->p;
	size_t nranks = p->nranks;
	fputs("{\n  \"file\": ", out);
	sp_json_fputs(out, title ? title : "");
	fputs(",\n  \"ranks\": [", out);
	for (size_t r = 0; r < nranks; r++)
		fprintf(out, "%s%d", r ? ", " : "", p->ranks[r].rank);
	fputs("],\n  ", out);
	if (sp_render_children(p)) {
		/* run --subprocesses: which rank is which process */
		fputs("\"processes\": [", out);
		for (size_t r = 0; r < nranks; r++)
			fprintf(out, "%s{\"rank\": %d, \"pid\": %lld, \"parent_pid\": %lld}", r ? ", " : "",
				p->ranks[r].rank, (long long)p->ranks[r].pid, (long long)p->ranks[r].parent_pid);
		fputs("],\n  ", out);
	}
	if (h->known) {
		/* host -> its ranks, hosts in the order of their lowest rank */
		fputs("\"hosts\": {", out);
		for (size_t k = 0; k < h->ng; k++) {
			const struct sp_host_group *g = &h->g[k];
			const char *name = h->hr[g->first].host;
			fputs(k ? ", " : "", out);
			sp_json_fputs(out, name ? name : "?");
			fputs(": [", out);
			for (size_t i = 0; i < g->n; i++)
				fprintf(out, "%s%d", i ? ", " : "", h->hr[g->first + i].rank);
			fputc(']', out);
		}
		fputs("},\n  ", out);
	}
	json_secs(out, "run_span_s", (double)v->span);
	fprintf(out, ",\n  \"calls\": %lld,\n  \"sort\": \"%s\",\n  \"regions\": [",
		(long long)v->calls, (unsigned)sort < sizeof sort_names / sizeof *sort_names ? sort_names[sort] : "total");
	for (size_t i = 0; i < v->nrows; i++) {
		const struct frow *f = &v->rows[i];
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
		sp_json_fputs(out, f->name);
		fprintf(out, ", \"calls\": %lld, ", (long long)f->calls);
		json_secs(out, "total_s", (double)f->total);
		fputs(", ", out);
		json_secs(out, "self_s", (double)f->self);
		fputs(", ", out);
		json_secs(out, "raw_total_s", (double)f->raw_total);
		fputs(", ", out);
		json_secs(out, "mean_s", f->mean_ns);
		fputs(", ", out);
		json_secs(out, "min_s", (double)f->min_ns);
		fputs(", ", out);
		json_secs(out, "max_s", (double)f->max_ns);
		fputs(", ", out);
		json_secs(out, "std_s", f->std_ns);
		fprintf(out, ", \"ranks_present\": %zu, ", f->present);
		json_secs(out, "rank_total_min_s", (double)f->min_rank);
		fputs(", ", out);
		json_secs(out, "rank_total_mean_s", nranks ? (double)f->total / (double)nranks : 0.0);
		fputs(", ", out);
		json_secs(out, "rank_total_max_s", (double)f->max_rank);
		double imb = sp_imbalance_of(f->max_rank, f->min_rank);
		if (f->present == nranks && isfinite(imb))
			fprintf(out, ", \"imbalance\": %.6f", imb);
		else
			fputs(", \"imbalance\": null", out);
		if (f->value_kind)
			fprintf(out, ", \"%s\": %lld", sp_value_kind_name(f->value_kind),
				(long long)f->values_total);
		if (f->peak_bytes > 0)
			fprintf(out, ", \"peak_live_bytes\": %lld", (long long)f->peak_bytes);
		fputs(", \"rank_totals_s\": [", out);
		for (size_t r = 0; r < nranks; r++)
			fprintf(out, "%s%.9f", r ? ", " : "",
				(double)v->rank_totals[f->order * nranks + r] / 1e9);
		fputs("]}", out);
	}
	fputs(v->nrows ? "\n  ]\n}\n" : "]\n}\n", out);
}

/* ---- HTML ---------------------------------------------------------------- */

/* A <td> of seconds from nanoseconds, as the table prints them. */
static void html_secs(FILE *out, double ns)
{
	char buf[32];
	fprintf(out, "<td>%s</td>", isfinite(ns) ? sp_render_secs_trim(buf, sizeof buf, ns) : "-");
}

/* The JSON summary's numbers as one HTML <table class="stats">, a row per
 * region in table order; names escaped (sp_svg_text). */
static void render_html(FILE *out, const struct view *v, const char *title)
{
	size_t nranks = v->p->nranks;
	fputs("<table class=\"stats\" data-file=\"", out);
	sp_svg_text(out, title ? title : "", 0);
	fputs("\">\n<caption>", out);
	sp_svg_text(out, title ? title : "", 0);
	int procs = sp_render_children(v->p) > 0;
	fprintf(out, " \xe2\x80\x94 %zu %s%s, %zu region%s, %lld call%s</caption>\n", nranks,
		procs ? "process" : "rank", nranks == 1 ? "" : procs ? "es" : "s", v->nrows, v->nrows == 1 ? "" : "s", (long long)v->calls,
		v->calls == 1 ? "" : "s");
	fputs("<thead><tr><th>region</th><th>calls</th><th>total [s]</th><th>mean [s]</th><th>min [s]</th>"
	      "<th>max [s]</th><th>std [s]</th><th>min rank [s]</th><th>mean/rank [s]</th>"
	      "<th>max rank [s]</th><th>imbalance</th></tr></thead>\n<tbody>\n", out);
	for (size_t i = 0; i < v->nrows; i++) {
		const struct frow *f = &v->rows[i];
		fputs("<tr><th scope=\"row\">", out);
		sp_svg_text(out, f->name, 0);
		fprintf(out, "</th><td>%lld</td>", (long long)f->calls);
		html_secs(out, (double)f->total);
		if (f->calls > 0) {
			html_secs(out, f->mean_ns);
			html_secs(out, (double)f->min_ns);
			html_secs(out, (double)f->max_ns);
			html_secs(out, f->std_ns);
		} else {
			fputs("<td>-</td><td>-</td><td>-</td><td>-</td>", out);
		}
		html_secs(out, (double)f->min_rank);
		html_secs(out, nranks ? (double)f->total / (double)nranks : 0.0);
		html_secs(out, (double)f->max_rank);
		double imb = sp_imbalance_of(f->max_rank, f->min_rank);
		if (f->present < nranks)
			fprintf(out, "<td>ranks %zu/%zu</td></tr>\n", f->present, nranks);
		else if (isfinite(imb))
			fprintf(out, "<td>%.2fx</td></tr>\n", imb);
		else
			fputs("<td>-</td></tr>\n", out);
	}
	fputs("</tbody>\n</table>\n", out);
}

/* ---- the summary -------------------------------------------------------- */

/* Narrows sub, a shallow copy of p, to the ranks sel selects; sub->ranks is
 * then malloc'd and the caller's to free, also on failure. SP_ENOMEM, or
 * SP_EINVAL when no rank is selected, with err set. */
static enum sp_err select_ranks(const struct sp_profile *p, const struct sp_select *sel,
				struct sp_profile *sub, struct sp_error *err)
{
	char list[128];
	sub->ranks = malloc((p->nranks ? p->nranks : 1) * sizeof *sub->ranks);
	if (!sub->ranks)
		return sp_error_set(err, SP_ENOMEM, "out of memory selecting ranks");
	sub->nranks = 0;
	for (size_t r = 0; r < p->nranks; r++)
		if (sp_select_rank(sel, p->ranks[r].rank))
			sub->ranks[sub->nranks++] = p->ranks[r];
	if (sub->nranks == 0)
		return sp_error_set(err, SP_EINVAL, "no rank selected: the profile has rank%s %s",
				    p->nranks == 1 ? "" : "s", sp_render_rank_list(list, sizeof list, p));
	return SP_OK;
}

/* The summary's opening lines: the title; ranks (on how many hosts),
 * regions, calls and run span; the hosts when host_list is set. */
static void put_title(FILE *out, const struct view *v, const char *title,
		      const struct sp_hosts *hosts, const char *host_list)
{
	char buf[32];
	size_t nchild = sp_render_children(v->p), nown = v->p->nranks - nchild;
	fputs("Profile: ", out);
	sp_render_text(out, title ? title : "(untitled)", INT32_MAX);
	if (nchild) {
		/* run --subprocesses: the groups are processes, not only ranks */
		if (nown == 0)   /* --ranks kept only children */
			fprintf(out, "\n%zu child process%s of the run", nchild, nchild == 1 ? "" : "es");
		else if (nown == 1)
			fprintf(out, "\n%zu processes (this run and %zu child process%s)", v->p->nranks,
				nchild, nchild == 1 ? "" : "es");
		else
			fprintf(out, "\n%zu processes (%zu ranks of this run and %zu child process%s)",
				v->p->nranks, nown, nchild, nchild == 1 ? "" : "es");
		if (host_list)
			fprintf(out, " on %s%zu host%s", hosts->unknown ? "at least " : "", hosts->known,
				hosts->known == 1 ? "" : "s");
		fputs(", ", out);
	} else if (host_list)
		fprintf(out, "\n%zu ranks on %s%zu host%s, ", v->p->nranks,
			hosts->unknown ? "at least " : "", hosts->known, hosts->known == 1 ? "" : "s");
	else
		fprintf(out, "\n%zu rank(s), ", v->p->nranks);
	fprintf(out, "%zu region%s, %lld call%s, run span %s\n", v->nrows, v->nrows == 1 ? "" : "s",
		(long long)v->calls, v->calls == 1 ? "" : "s", sp_render_duration(buf, sizeof buf, (double)v->span));
	if (host_list) {
		fputs("hosts: ", out);
		sp_render_text(out, host_list, 80 - 7);
		fputc('\n', out);
	}
}

/* A share of the run for a sentence: "0.4%", "<0.1%". */
static void share(char *buf, size_t len, int64_t ns, double denom)
{
	double pc = denom > 0 ? 100.0 * (double)ns / denom : 0.0;
	if (pc < 0.1)
		snprintf(buf, len, "<0.1%%");
	else
		snprintf(buf, len, "%.1f%%", pc);
}

/* The line under the summary saying what the limits left out, and how to
 * see it. */
static void left_out(FILE *out, const struct view *v, int parts, const char *hint)
{
	int tree = (parts & SP_RENDER_TREE) && v->tree_shown < v->nnodes;
	int rows = (parts & SP_RENDER_FLAT) && v->rows_shown < v->nrows;
	if (!tree && !rows)
		return;
	double denom = (double)v->span * (double)(v->p->nranks ? v->p->nranks : 1);
	char a[32], b[32];
	share(a, sizeof a, v->tree_cut, denom);
	share(b, sizeof b, v->rows_cut, denom);
	fputs("\nLeft out: ", out);
	if (tree)
		fprintf(out, "%zu of %zu call-tree entries (the largest %s of the run)%s",
			v->nnodes - v->tree_shown, v->nnodes, a, rows ? " and " : "");
	if (rows)
		fprintf(out, "%zu of %zu regions (the largest %s)", v->nrows - v->rows_shown,
			v->nrows, b);
	fprintf(out, "; %s shows every one.\n", hint);
}

static enum sp_err summary(FILE *out, const struct sp_profile *p, const char *title, int parts,
			   const struct sp_render_opts *o, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->select : NULL;
	enum sp_render_sort sort = o ? o->sort : SP_SORT_TOTAL;
	int json = o && (o->json || o->html);
	struct sp_profile sub = *p;
	struct view v = { .p = p, .sel = sel, .roots_first = -1, .roots_last = -1 };
	struct sp_hosts hosts = {0};
	char *host_list = NULL;
	enum sp_err rc = SP_OK;
	sub.ranks = NULL;
	if (sel && sel->nranks) {
		if ((rc = select_ranks(p, sel, &sub, err)) != SP_OK)
			goto out;
		v.p = &sub;
	}
	rc = merge_regions(&v, sort, json, err);
	if (rc == SP_OK && !json && (parts & SP_RENDER_TREE))
		rc = merge_trees(&v, err);
	if (rc != SP_OK)
		goto out;
	/* The limits: the heaviest entries only, so any profile fits a screen. */
	int top = o && o->top ? o->top : SP_RENDER_TOP;
	int depth = o ? o->depth : 0;
	v.rows_shown = v.nrows;
	if (!json && top > 0 && v.nrows > (size_t)top) {
		v.rows_shown = (size_t)top;
		for (size_t i = v.rows_shown; i < v.nrows; i++)
			v.rows_cut = v.rows[i].total > v.rows_cut ? v.rows[i].total : v.rows_cut;
	}
	if (!json && (parts & SP_RENDER_TREE) && limit_tree(&v, top, depth) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory choosing what the tree shows");
		goto out;
	}
	for (size_t r = 0; r < v.p->nranks; r++) {
		int64_t s = sp_rank_span(&v.p->ranks[r]);
		v.span = s > v.span ? s : v.span;
	}
	if (sp_hosts_group(v.p, &hosts) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory grouping ranks by host");
		goto out;
	}
	if (json) {
		if (o->html)
			render_html(out, &v, title);
		else
			render_json(out, &v, title, sort, &hosts);
		goto flush;
	}
	/* Several ranks: on how many hosts, and which ranks on which. */
	if (v.p->nranks > 1 && hosts.known) {
		host_list = sp_profile_hosts(v.p);
		if (!host_list) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory listing the hosts");
			goto out;
		}
	}
	put_title(out, &v, title, &hosts, host_list);
	sp_render_notes(out, v.p, p, sel, v.nrows, v.nall);
	if (parts & SP_RENDER_TREE) {
		fputc('\n', out);
		render_tree(out, &v);
	}
	if (parts & SP_RENDER_FLAT) {
		fputc('\n', out);
		render_flat(out, &v);
		render_values(out, &v, SP_VALUES_ALLOC_BYTES);
		render_values(out, &v, SP_VALUES_BYTES);
	}
	left_out(out, &v, parts, o && o->more_hint ? o->more_hint : "--all");
	if ((parts & SP_RENDER_FLAT) && sp_render_likwid(out, v.p) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory rendering the LIKWID counters");
		goto out;
	}
flush:
	if (fflush(out) != 0 || ferror(out))
		rc = sp_error_set(err, SP_EIO, "writing the summary failed");
out:
	free(sub.ranks);
	free(v.nodes);
	free(v.rows);
	sp_byname_free(&v.names);
	sp_keytab_free(&v.node_ids);
	free(v.last);
	free(v.keep);
	free(v.cum);
	free(v.self);
	free(v.rank_totals);
	sp_hosts_free(&hosts);
	free(host_list);
	return rc;
}

enum sp_err sp_render_summary(FILE *out, const struct sp_profile *p, const char *title,
			      int parts, struct sp_error *err)
{
	return summary(out, p, title, parts, NULL, err);
}

enum sp_err sp_render_summary_opts(FILE *out, const struct sp_profile *p, const char *title,
				   const struct sp_render_opts *opts, struct sp_error *err)
{
	int parts = opts && opts->parts ? opts->parts : SP_RENDER_ALL;
	return summary(out, p, title, parts, opts, err);
}
