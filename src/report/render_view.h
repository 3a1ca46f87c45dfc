/* render_view.h - what the summary's files share (render.c the tables,
 * JSON, HTML and the summary itself; render_merge.c the merge of the ranks
 * into one view; render_tree.c the call tree): the view of a profile merged
 * over its ranks. Inside the report layer only. */
#ifndef SP_RENDER_VIEW_H
#define SP_RENDER_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sp_keytab.h"
#include "sp_render.h"
#include "sp_select.h"
#include "byname.h"

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
	long double pn, pmean, pm2;    /* the entries' calls pooled: count, mean, and
					* sum of squared deviations (for std_ns) */
	size_t nparts;                 /* (rank, region) entries with calls folded in */
	size_t present;                /* ranks where it has calls */
	size_t order;                  /* first appearance, to break ties */
	size_t seen_rank;              /* bookkeeping while merging */
	int64_t cur_calls, cur_total, cur_raw, cur_self;
	int selected;                  /* kept by the selection */
	int value_kind;                /* its values' kind (sp_profile.h), on any rank */
	int64_t values_total;          /* summed over ranks */
	int64_t peak_bytes;            /* the highest over ranks; <= 0: not known */
	int gpu_waited;                /* run --gpu on some rank: gpu_wait_ns is known */
	int64_t gpu_wait_ns;           /* summed over ranks */
};

struct view {
	const struct sp_profile *p;    /* the selected ranks only */
	struct sp_profile sub;         /* p's ranks when a selection made them (owned) */
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

/* Points v->p at p's ranks that sel selects (all when sel names none).
 * SP_EINVAL when it selects none (err says which ranks p has), SP_ENOMEM. */
enum sp_err sp_rview_select(struct view *v, const struct sp_profile *p, const struct sp_select *sel,
			    struct sp_error *err);

/* Merges the regions of every rank of v->p by name into v->rows, keeping
 * the selected ones, in the order asked for; notes in v->keep which region
 * of each rank is selected; with want_ranks, fills v->rank_totals.
 * SP_ENOMEM with err set on failure. */
enum sp_err sp_rview_merge_regions(struct view *v, enum sp_render_sort sort, int want_ranks,
				   struct sp_error *err);

/* Merges the ranks' call trees by path into v->nodes (after
 * sp_rview_merge_regions: unselected regions' nodes are dropped, their
 * children moving up). SP_EINVAL for a malformed tree, SP_ENOMEM. */
enum sp_err sp_rview_merge_trees(struct view *v, struct sp_error *err);

/* Marks what the tree shows under a limit: its `top` heaviest entries
 * with their ancestors, no deeper than `depth` (0: any). Returns 0, or -1
 * when out of memory. */
int sp_rview_limit_tree(struct view *v, int top, int depth);

/* Frees what the view holds (not v->p). */
void sp_rview_free(struct view *v);

/* Prints the merged call tree. */
void sp_rview_tree(FILE *out, const struct view *v);

#endif
