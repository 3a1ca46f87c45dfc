/* plot_flamegraph.c - the merged (left-heavy) flame graph of `scope-profiler
 * plot`: the summary's call tree (its ranks merged by path, render_merge.c)
 * drawn as boxes as wide as each entry's total, the heaviest child leftmost
 * at every level, depth downwards as in the flame chart. Where the flame
 * chart shows when, this shows where the time went, whatever the run's
 * length or number of calls: one box per distinct call path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"
#include "render_view.h"
#include "svg.h"

#define G_LEFT 12
#define G_TOP 64
#define G_ROW 16

/* A node's children, heaviest first (ties: first seen first). */
static int heavier(const void *a, const void *b, void *ctx)
{
	const struct mnode *n = ctx;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	if (n[x].total != n[y].total)
		return n[x].total > n[y].total ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct layout {
	const struct view *v;
	int32_t *order;                /* per node, its children in drawing order */
	int32_t *kids;                 /* offsets into order: node i's are kids[i]..kids[i + 1] */
	double *x;                     /* per node: its left edge, px from the plot's left */
	double scale;                  /* px per ns */
	double min_px;                 /* boxes narrower are left out, with their subtrees */
	size_t drawn, left_out;
	int depths;
};

/* Children in drawing order, roots last (index nnodes). 0, or -1 out of memory. */
static int sort_children(struct layout *l)
{
	const struct view *v = l->v;
	size_t n = v->nnodes;
	l->kids = calloc(n + 2, sizeof *l->kids);
	l->order = malloc((n ? n : 1) * sizeof *l->order);
	l->x = malloc((n ? n : 1) * sizeof *l->x);
	if (!l->kids || !l->order || !l->x)
		return -1;
	/* Counting sort by parent (roots under n), then each family by weight. */
	for (size_t i = 0; i < n; i++)
		l->kids[(v->nodes[i].parent < 0 ? n : (size_t)v->nodes[i].parent) + 1]++;
	for (size_t i = 0; i <= n; i++)
		l->kids[i + 1] += l->kids[i];
	int32_t *fill = malloc((n + 1) * sizeof *fill);
	if (!fill)
		return -1;
	for (size_t i = 0; i <= n; i++)
		fill[i] = l->kids[i];
	for (size_t i = 0; i < n; i++)
		l->order[fill[v->nodes[i].parent < 0 ? n : (size_t)v->nodes[i].parent]++] = (int32_t)i;
	free(fill);
	for (size_t i = 0; i <= n; i++)
		qsort_r(l->order + l->kids[i], (size_t)(l->kids[i + 1] - l->kids[i]), sizeof *l->order,
			heavier, v->nodes);
	return 0;
}

/* Places the children of parent (n: the roots) from its left edge. */
static void place_children(struct layout *l, size_t parent)
{
	const struct view *v = l->v;
	double x = parent == v->nnodes ? 0 : l->x[parent];
	for (int32_t k = l->kids[parent]; k < l->kids[parent + 1]; k++) {
		const struct mnode *m = &v->nodes[l->order[k]];
		double w = (double)m->total * l->scale;
		if (w < l->min_px) {
			l->left_out++;
			continue;
		}
		l->x[l->order[k]] = x;
		x += w;
		l->drawn++;
		l->depths = m->depth + 1 > l->depths ? m->depth + 1 : l->depths;
	}
}

/* Every box's place at l->min_px, and what is drawn and left out (a box
 * left out takes its subtree with it). Parents come before their children
 * in nodes[], so one pass in that order places everything. */
static void place(struct layout *l)
{
	size_t n = l->v->nnodes;
	l->drawn = l->left_out = 0;
	l->depths = 0;
	for (size_t i = 0; i < n; i++)
		l->x[i] = -1;              /* not drawn */
	place_children(l, n);
	for (size_t i = 0; i < n; i++)
		if (l->x[i] >= 0)
			place_children(l, i);
}

/* The names of the colour map that have a box drawn, in its order. */
static size_t legend_names(const struct layout *l, const struct sp_plot_colours *c, const char **names)
{
	size_t nn = 0;
	for (size_t k = 0; k < c->n; k++)
		for (size_t i = 0; i < l->v->nnodes; i++)
			if (l->x[i] >= 0 && strcmp(l->v->nodes[i].name, c->top[k]) == 0) {
				names[nn++] = c->top[k];
				break;
			}
	return nn;
}

static void put_box(FILE *svg, const struct layout *l, int32_t i, double whole, const struct sp_plot_colours *c)
{
	const struct mnode *m = &l->v->nodes[i];
	double w = (double)m->total * l->scale, y = G_TOP + (double)m->depth * G_ROW;
	char dur[32];
	fprintf(svg, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" sp:calls=\"%lld\"><title>",
		G_LEFT + l->x[i], y, w < 0.5 ? 0.5 : w, G_ROW - 2, sp_plot_colour(c, m->name), (long long)m->calls);
	sp_svg_text(svg, m->name, 0);
	fprintf(svg, "\n%s, %.1f%% of the profile, %lld call%s</title></rect>\n",
		sp_render_duration(dur, sizeof dur, (double)m->total), whole > 0 ? 100.0 * (double)m->total / whole : 0.0,
		(long long)m->calls, m->calls == 1 ? "" : "s");
	/* A label wherever two characters fit (~7 px each), cut in the middle
	 * as the summary cuts names. */
	if (w >= 20)
		sp_svg_label_mid(svg, G_LEFT + l->x[i] + 3, y + 11, "start", "font-size=\"11\" fill=\"#ffffff\"",
				 m->name, (size_t)((w - 6) / 7));
}

/* flamegraph_data.csv: every merged entry, parents first: its path (names
 * joined by ';', a ';' in a name written ':', as folded stacks are), calls
 * and total seconds. */
static int put_csv(FILE *csv, const struct view *v)
{
	int32_t *path = malloc((v->nnodes ? v->nnodes : 1) * sizeof *path);
	if (!path)
		return -1;
	fputs("path,calls,total\n", csv);
	for (size_t i = 0; i < v->nnodes; i++) {
		size_t d = 0;
		for (int32_t a = (int32_t)i; a >= 0; a = v->nodes[a].parent)
			path[d++] = a;
		char *joined = NULL;
		size_t len = 0;
		FILE *s = open_memstream(&joined, &len);
		if (!s) {
			free(path);
			return -1;
		}
		while (d-- > 0) {
			for (const char *c = v->nodes[path[d]].name; *c; c++)
				fputc(*c == ';' ? ':' : *c, s);
			if (d)
				fputc(';', s);
		}
		if (fclose(s) != 0) {
			free(joined);
			free(path);
			return -1;
		}
		sp_plot_csv_name(csv, joined);
		free(joined);
		fprintf(csv, ",%lld,", (long long)v->nodes[i].calls);
		sp_render_secs_exact(csv, v->nodes[i].total);
		fputc('\n', csv);
	}
	free(path);
	return 0;
}

enum sp_err sp_plot_flamegraph(FILE *svg, FILE *csv, const struct sp_plot_file *f,
			       const struct sp_plot_opts *o, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->sel : NULL;
	int width = o && o->width ? o->width : SP_PLOT_WIDTH;
	size_t budget = o && o->max_bytes ? o->max_bytes : SP_PLOT_BUDGET;
	struct view v = { .sel = sel, .roots_first = -1, .roots_last = -1 };
	struct layout l = { .v = &v };
	enum sp_err rc = sp_rview_select(&v, f->p, sel, err);
	if (rc == SP_OK)
		rc = sp_rview_merge_regions(&v, SP_SORT_TOTAL, 0, err);
	if (rc == SP_OK)
		rc = sp_rview_merge_trees(&v, err);
	if (rc != SP_OK)
		goto out;
	if (v.nnodes == 0) {
		rc = sp_error_set(err, SP_EINVAL, "%s: no call tree of a selected region", f->name);
		goto out;
	}
	if (sort_children(&l) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
		goto out;
	}
	double whole = 0, area = width - 2 * G_LEFT;
	for (int32_t k = l.kids[v.nnodes]; k < l.kids[v.nnodes + 1]; k++)
		whole += (double)v.nodes[l.order[k]].total;
	l.scale = whole > 0 ? area / whole : 0;
	/* The narrowest box drawn: 0.5 px, wider until the boxes (~170 bytes
	 * and a name each) fit the chart's budget. */
	size_t names = 0;
	for (size_t i = 0; i < v.nnodes; i++)
		names += strlen(v.nodes[i].name);
	double per_box = 170 + (double)names / (double)v.nnodes;
	for (l.min_px = 0.5;; l.min_px *= 2) {
		place(&l);
		if ((double)l.drawn * per_box <= (double)budget || l.min_px >= area)
			break;
	}
	struct sp_plot_colours own;
	const struct sp_plot_colours *colours = sp_plot_colours_for(o, f, 1, &own, err);
	if (!colours) {
		rc = SP_ENOMEM;
		goto out;
	}
	const char *legend[SP_PLOT_NCOLOURS];
	size_t nn = legend_names(&l, colours, legend);
	int cols = width / 280 > 0 ? width / 280 : 1;
	double legend_y = G_TOP + (double)l.depths * G_ROW + 24;
	double height = legend_y + (double)((nn + (size_t)cols - 1) / (size_t)cols) * 18 + 10;
	char note[256], dur[32];
	sp_svg_begin(svg, width, (int)ceil(height), "Flame graph: where the time went, call paths merged");
	fprintf(svg, "<g xmlns:sp=\"%s\">\n", SP_PLOT_NS);
	fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Flame graph: ", svg);
	sp_svg_text(svg, f->name, 80);
	fputs("</text>\n", svg);
	snprintf(note, sizeof note, "each call path once, as wide as its total (%s%s in all), heaviest first; "
		 "depth grows downwards", sp_render_duration(dur, sizeof dur, whole),
		 v.p->nranks > 1 ? " over the ranks" : "");
	if (l.left_out)
		snprintf(note + strlen(note), sizeof note - strlen(note), "; %zu narrower than %g px left out with what they call",
			 l.left_out, l.min_px);
	sp_svg_label(svg, 12, 44, "start", "class=\"note\" fill=\"#555555\"", note, 0);
	for (size_t i = 0; i < v.nnodes; i++)
		if (l.x[i] >= 0)
			put_box(svg, &l, (int32_t)i, whole, colours);
	sp_plot_legend(svg, legend, nn, colours, 12, legend_y, 280, cols);
	fputs("</g>\n", svg);
	sp_svg_end(svg);
	if (csv && put_csv(csv, &v) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
		goto out;
	}
	if (ferror(svg) || (csv && ferror(csv)))
		rc = sp_error_set(err, SP_EIO, "writing the flame graph failed");
out:
	free(l.kids);
	free(l.order);
	free(l.x);
	sp_rview_free(&v);
	return rc;
}
