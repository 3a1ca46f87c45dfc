/* render_tree.c - the summary's call tree: the merged tree (render_merge.c)
 * limited to fit a screen, printed with its prefixes and (own) rows. */
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
int sp_rview_limit_tree(struct view *v, int top, int depth)
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

/* The columns the shown rows' labels need (the widest, with its tree
 * prefix and " (Nx)"); the duration column's width into *dw, the most
 * calls of a row into *maxcalls. */
static int64_t label_need(const struct view *v, int *dw_out, int64_t *maxcalls_out)
{
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
	*dw_out = dw;
	*maxcalls_out = maxcalls;
	return need;
}

/* Whether the run recorded more than one lane (thread or task): the
 * /metadata "lanes" attribute ("0=MainThread; 1=worker") names a second;
 * a file without it may have had several. */
static int several_lanes(const struct sp_profile *p)
{
	const char *lanes = sp_profile_meta(p, "lanes");
	if (!lanes)
		return 1;
	for (const char *sep = strstr(lanes, "; "); sep; sep = strstr(sep + 2, "; ")) {
		const char *d = sep + 2;
		while (*d >= '0' && *d <= '9')
			d++;
		if (d > sep + 2 && *d == '=')
			return 1;
	}
	return 0;
}

void sp_rview_tree(FILE *out, const struct view *v)
{
	size_t nranks = v->p->nranks;
	int64_t maxcalls;
	int dw;
	int64_t need = label_need(v, &dw, &maxcalls);
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
	/* Else calls of one thread that overlapped without nesting (a region
	 * left before one entered inside it), each a root. */
	int threads = several_lanes(v->p);
	/* Calls that overlapped without nesting where the roots did not pass
	 * the span: a call's children can add up past it (its own time 0). */
	int crossed = 0;
	for (size_t r = 0; r < nranks; r++)
		crossed |= v->p->ranks[r].tree_overlaps > 0;

	if (nranks > 1)
		fprintf(out, "Call tree (sum of %zu %s; %% run is of %zu × run span%s)\n", nranks,
			sp_render_children(v->p) ? "processes" : "ranks", nranks,
			!overlap ? (crossed ? "; calls overlapped without nesting" : "")
			: threads ? "; threads' times add up too" : "; overlapping calls' times add up too");
	else if (overlap && threads)
		fputs("Call tree (threads ran at once: their times add up, so % run passes 100)\n", out);
	else if (overlap)
		fputs("Call tree (calls overlapped without nesting: their times add up, so % run passes 100)\n", out);
	else if (crossed)
		fputs("Call tree (calls overlapped without nesting: a call's children can add up past it)\n", out);
	else
		fputs("Call tree\n", out);
	fprintf(out, "%-*s  %*s  %*s  %6s\n", w, "region", cw, "calls", dw, "total", "% run");
	sp_render_rule(out, tw);
	if (v->nnodes == 0)
		fputs(v->approx ? "(not built at the end of the run: `scope-profiler summary FILE` builds it)\n" : "(no calls recorded)\n",
		      out);
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

