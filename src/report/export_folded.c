/* export_folded.c - folded stacks ('a;b;c self_ns' per distinct call
 * stack, merged over ranks) for flamegraph.pl and speedscope: the nesting
 * is nest.c's (the one rule, as the summary's call tree has it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "sp_grow.h"
#include "sp_keytab.h"
#include "sp_nest.h"
#include "sp_tree.h"

/* A distinct stack: its region (group) under its parent stack. */
struct fnode {
	int32_t parent;            /* -1: a root */
	int32_t group;
	__int128 self;             /* ns: its calls' durations minus their children's */
};

struct folded {
	struct fnode *nodes;
	size_t n, cap;
	struct sp_keytab ids;      /* (parent, group) -> node */
	const int32_t *gid;        /* the group of each region of the rank being added */
};

/* The node of group under parent, added if new; -1 on out of memory. */
static int32_t fnode_get(struct folded *f, int32_t parent, int32_t group)
{
	int added;
	int32_t id = sp_keytab_get(&f->ids, parent, (uint32_t)group, &added);
	if (id < 0 || !added)
		return id;
	if (SP_GROW(&f->nodes, &f->cap, f->n + 1) != 0)
		return -1;
	f->nodes[f->n++] = (struct fnode){parent, group, 0};
	return id;
}

/* The nesting's visitor: adds call c to its stack (tag: the stack's node),
 * its time to that node's and out of its parent's. */
static int fvisit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	struct folded *f = ctx;
	int32_t parent = (int32_t)parent_tag;
	int32_t id = fnode_get(f, parent, f->gid[c->region]);
	if (id < 0)
		return -1;
	__int128 d = (__int128)c->end - c->start;
	f->nodes[id].self += d;
	if (parent >= 0)
		f->nodes[parent].self -= d;
	*tag = id;
	return 0;
}

/* Writes "a;b;c self_ns" for every distinct stack, parents first. */
static enum sp_err fprint(struct exporter *x, const struct folded *f)
{
	int32_t *path = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < f->n; i++) {
		size_t depth = 0;
		for (int32_t j = (int32_t)i; j >= 0; j = f->nodes[j].parent) {
			if (SP_GROW(&path, &cap, depth + 1) != 0) {
				free(path);
				return sp_error_set(x->err, SP_ENOMEM, "out of memory");
			}
			path[depth++] = j;
		}
		while (depth--) {
			const char *name = sp_export_group_name(x, (size_t)f->nodes[path[depth]].group);
			for (const char *q = name; *q; q++)
				out_ch(x->o, *q == ';' ? ':' : *q == '\n' || *q == '\r' ? ' ' : *q);
			out_ch(x->o, depth ? ';' : ' ');
		}
		/* Siblings that overlap in one lane (threads recorded without
		 * --track-threads) can leave a parent less than nothing. */
		out_dec(x->o, f->nodes[i].self > 0 ? f->nodes[i].self : 0, 0);
		out_ch(x->o, '\n');
	}
	free(path);
	return x->o->err ? SP_EIO : SP_OK;
}

static void fbegin(void *ctx, const int32_t *gid, int64_t origin)
{
	(void)origin;
	((struct folded *)ctx)->gid = gid;
}

enum sp_err sp_export_folded(struct exporter *x)
{
	struct folded f = {0};
	enum sp_err rc = sp_export_walk_ranks(x, fvisit, &f, fbegin, NULL);
	if (rc == SP_OK)
		rc = fprint(x, &f);
	free(f.nodes);
	sp_keytab_free(&f.ids);
	return rc;
}

/* Folded stacks of aggregates, from the stored call trees (the stream does
 * not read trees): a path's value is its node's total minus its children's,
 * summed over the selected ranks; an unselected region's node lends its own
 * time to its nearest selected ancestor and its children move up to it. */
enum sp_err sp_export_folded_trees(struct exporter *x)
{
	struct sp_profile *p = NULL;
	enum sp_err rc = sp_report_read(x->path, SP_READ_SUMMARY, &p, x->err);
	struct folded f = {0};
	int32_t *map = NULL;
	if (rc != SP_OK)
		return rc;
	for (size_t r = 0; r < p->nranks && rc == SP_OK; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (!sp_select_rank(x->sel, rk->rank))
			continue;
		free(map);
		if (!(map = malloc((rk->ntree ? rk->ntree : 1) * sizeof *map))) {
			rc = sp_error_set(x->err, SP_ENOMEM, "out of memory");
			break;
		}
		for (size_t i = 0; i < rk->ntree; i++) {
			const struct sp_tree_node *t = &rk->tree[i];
			int32_t parent = t->parent >= 0 ? map[t->parent] : -1;
			const char *name = rk->regions[t->region].name;
			/* The region's group, through its name in the plan's join
			 * (this profile is a second read of the file). */
			int32_t group = sp_export_group_of(x, name);
			if (group < 0 || !sp_select_region(x->sel, name)) {
				map[i] = parent;
				if (parent >= 0)
					f.nodes[parent].self += t->total_ns;
			} else if ((map[i] = fnode_get(&f, parent, group)) < 0) {
				rc = sp_error_set(x->err, SP_ENOMEM, "out of memory");
				break;
			} else {
				f.nodes[map[i]].self += t->total_ns;
			}
			/* The time of a kept node's child is not its own. */
			if (parent >= 0)
				f.nodes[parent].self -= t->total_ns;
		}
	}
	if (rc == SP_OK)
		rc = fprint(x, &f);
	free(map);
	free(f.nodes);
	sp_keytab_free(&f.ids);
	sp_profile_free(p);
	return rc;
}

