/* plot_flame.c - the flame (icicle) chart of `scope-profiler plot`: each
 * selected rank's call stacks over time, depth downwards, nested by the one
 * rule of sp_nest.h among the selected regions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"
#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_nest.h"
#include "svg.h"

#define F_LEFT 120
#define F_TOP 64
#define F_ROW 16
#define F_GAP 24

struct fwalk {
	struct sp_plot_fcall *c;
	size_t n, cap;
	int32_t rank;
	const int32_t *gi;             /* column -> region index */
};

static int fvisit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	struct fwalk *w = ctx;
	if (SP_GROW(&w->c, &w->cap, w->n + 1) != 0)
		return -1;
	uint32_t depth = c->depth > UINT32_MAX ? UINT32_MAX : (uint32_t)c->depth;
	w->c[w->n++] = (struct sp_plot_fcall){c->start, c->end, c->pos, w->gi[c->region], c->lane, depth,
					      w->rank};
	*tag = 0;
	return 0;
}

/* By rank, lane, depth, then the walk's order (start order in a lane). */
static int fcall_cmp(const void *a, const void *b)
{
	const struct sp_plot_fcall *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A block: one rank's lane, rows 0..depths-1, calls c[first .. first + n). */
struct block {
	size_t first, n;
	uint32_t depths;
	int many_lanes;                /* the rank has several lanes: say which */
};

struct fdraw {
	FILE *out;
	const struct sp_plot_axis *a;
	const struct sp_profile *p;
	const struct sp_plot_fcall *c; /* the block's calls */
	double top;                    /* its first row's y */
	const struct sp_plot_colours *colours;
};

static void flame_box(void *ctx, const struct sp_plot_bar *b)
{
	struct fdraw *d = ctx;
	const struct sp_plot_fcall *c = &d->c[b->first];
	const struct sp_rank *rk = &d->p->ranks[c->rank];
	const char *name = rk->regions[c->region].name;
	double w = b->x1 - b->x0, y = d->top + (double)c->depth * F_ROW;
	if (w < 0.5)
		w = 0.5;
	/* A merged box holds the calls after c in the row: one region's keep
	 * its colour, a mix is grey. */
	int64_t end = c->end;
	int mixed = 0;
	for (int64_t i = 1; i < b->calls; i++) {
		end = c[i].end > end ? c[i].end : end;
		mixed |= c[i].region != c->region;
	}
	fprintf(d->out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"",
		d->a->left + b->x0, y, w, F_ROW - 2, mixed ? "#a0a0a0" : sp_plot_colour(d->colours, name));
	if (b->calls > 1)
		fprintf(d->out, " sp:calls=\"%lld\"><title>%lld calls narrower than a column%s, the first ",
			(long long)b->calls, (long long)b->calls, mixed ? " (several regions)" : "");
	else
		fputs("><title>", d->out);
	sp_svg_text(d->out, name, 0);
	fputs("\nstart ", d->out);
	sp_render_secs_exact(d->out, sp_sub_sat(c->start, d->a->t0));
	fputs(" s\nduration ", d->out);
	sp_render_secs_exact(d->out, sp_sub_sat(end, c->start));
	fputs(" s</title></rect>\n", d->out);
	/* A label wherever two characters fit (one and "…"): ~7 px each; where
	 * the qualified name does not fit, its last part (the function). */
	if (b->calls == 1 && w >= 20) {
		size_t chars = (size_t)((w - 6) / 7);
		const char *dot = strrchr(name, '.');
		const char *shown = sp_svg_chars(name) > chars && dot && dot[1] ? dot + 1 : name;
		sp_svg_label(d->out, d->a->left + b->x0 + 3, y + 11, "start",
			     "font-size=\"11\" fill=\"#ffffff\"", shown, chars);
	}
}

void sp_plot_flame_merge(struct sp_plot_merge *m, const struct sp_plot_axis *a,
			 const struct sp_plot_fcall *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i && (c[i].depth != c[i - 1].depth || c[i].lane != c[i - 1].lane || c[i].rank != c[i - 1].rank))
			sp_plot_merge_flush(m);
		sp_plot_merge_call(m, ((double)c[i].start - (double)a->t0) * a->k,
				   ((double)c[i].end - (double)a->t0) * a->k, i);
	}
	sp_plot_merge_flush(m);
}

/* Walks the selected ranks' nesting into w (sorted). */
static enum sp_err collect(const struct sp_plot_file *f, const struct sp_select *sel, struct fwalk *w,
			   struct sp_error *err)
{
	const struct sp_profile *p = f->p;
	struct sp_nest_column *cols = NULL;
	int32_t *gi = NULL;
	enum sp_err rc = SP_OK;
	for (size_t r = 0; r < p->nranks && rc == SP_OK; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (!sp_select_rank(sel, rk->rank))
			continue;
		free(cols);
		free(gi);
		cols = malloc((rk->nregions ? rk->nregions : 1) * sizeof *cols);
		gi = malloc((rk->nregions ? rk->nregions : 1) * sizeof *gi);
		if (!cols || !gi) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory");
			break;
		}
		size_t nc = 0;
		for (size_t g = 0; g < rk->nregions; g++) {
			const struct sp_region_data *rd = &rk->regions[g];
			if (!rd->starts || rd->stats.num_calls <= 0 || !sp_select_region(sel, rd->name))
				continue;
			cols[nc] = (struct sp_nest_column){rd->starts, rd->ends, rd->lanes, (size_t)rd->stats.num_calls};
			gi[nc++] = (int32_t)g;
		}
		w->rank = (int32_t)r;
		w->gi = gi;
		if (nc && sp_nest_walk(cols, nc, 0, fvisit, w, err) != SP_OK)
			rc = sp_error_set(err, SP_ENOMEM, "rank %d: out of memory for the call stacks", rk->rank);
	}
	free(cols);
	free(gi);
	if (rc == SP_OK && w->n)
		qsort(w->c, w->n, sizeof *w->c, fcall_cmp);
	if (rc == SP_OK && !w->n)
		rc = sp_error_set(err, SP_EINVAL, "%s: no per-call events in the selected regions and ranks%s",
				  f->name, sp_plot_has_events(p, NULL) ? "" : " (aggregation mode?)");
	return rc;
}

enum sp_err sp_plot_flame_calls(const struct sp_plot_file *f, const struct sp_select *sel,
				struct sp_plot_fcall **out, size_t *n, struct sp_error *err)
{
	struct fwalk w = {0};
	enum sp_err rc = collect(f, sel, &w, err);
	if (rc != SP_OK) {
		free(w.c);
		return rc;
	}
	*out = w.c;
	*n = w.n;
	return SP_OK;
}

/* The blocks of the sorted calls c[0..n), into *out (malloc'd) and *nb:
 * one per rank and lane, as deep as its calls. 0, or -1 out of memory. */
static int make_blocks(const struct sp_plot_fcall *c, size_t n, struct block **out, size_t *nb)
{
	struct block *blocks = NULL;
	size_t k = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		if (!k || c[i].rank != c[i - 1].rank || c[i].lane != c[i - 1].lane) {
			if (SP_GROW(&blocks, &cap, k + 1) != 0) {
				free(blocks);
				return -1;
			}
			blocks[k++] = (struct block){i, 0, 0, 0};
		}
		struct block *b = &blocks[k - 1];
		b->n++;
		if (c[i].depth + 1 > b->depths)
			b->depths = c[i].depth + 1;
	}
	for (size_t i = 0; i < k; i++) {
		int prev = i && c[blocks[i - 1].first].rank == c[blocks[i].first].rank;
		int next = i + 1 < k && c[blocks[i + 1].first].rank == c[blocks[i].first].rank;
		blocks[i].many_lanes = prev || next || c[blocks[i].first].lane != 0;
	}
	*out = blocks;
	*nb = k;
	return 0;
}

/* The merging of the calls c[0..n): columns as narrow as the budget allows
 * (a box and its title, ~130 bytes and its name), and the counts it leaves. */
static struct sp_plot_info flame_columns(const struct sp_plot_axis *a, const struct sp_profile *p,
					 const struct sp_plot_fcall *c, size_t n, size_t budget)
{
	struct sp_plot_info in = {.calls = (int64_t)n};
	size_t names = 0, samples = 0;
	for (size_t i = 0; i < n; i += 1 + n / 1024, samples++)
		names += strlen(p->ranks[c[i].rank].regions[c[i].region].name);
	double per_box = 130 + (double)names / (double)(samples ? samples : 1);
	for (in.column_px = 1;; in.column_px *= 2) {
		struct sp_plot_merge m = {.colw = in.column_px};
		sp_plot_flame_merge(&m, a, c, n);
		in.bars = m.bars;
		in.merged = m.merged;
		if ((double)m.bars * per_box <= (double)budget || in.column_px >= a->width)
			break;
	}
	return in;
}

/* Each block's label and boxes (merged into columns of colw px), from
 * F_TOP down. */
static void draw_blocks(FILE *svg, const struct sp_plot_axis *a, const struct sp_profile *p,
			const struct sp_plot_fcall *c, const struct block *blocks, size_t nb, double colw,
			const struct sp_plot_colours *colours)
{
	double y = F_TOP;
	for (size_t i = 0; i < nb; i++) {
		const struct sp_plot_fcall *c0 = &c[blocks[i].first];
		char label[64];
		if (blocks[i].many_lanes)
			snprintf(label, sizeof label, "rank %d, thread %d", p->ranks[c0->rank].rank, (int)c0->lane);
		else
			snprintf(label, sizeof label, "rank %d", p->ranks[c0->rank].rank);
		y += F_GAP;
		sp_svg_label(svg, a->left - 8, y + 11, "end", "font-weight=\"bold\"", label, 0);
		fprintf(svg, "<g sp:rank=\"%d\">\n", p->ranks[c0->rank].rank);
		struct fdraw d = {svg, a, p, c0, y, colours};
		struct sp_plot_merge m = {.colw = colw, .emit = flame_box, .ctx = &d};
		sp_plot_flame_merge(&m, a, d.c, blocks[i].n);
		fputs("</g>\n", svg);
		y += (double)blocks[i].depths * F_ROW;
	}
}

/* flame_data.csv: every call c[0..n), in seconds from the axis's origin,
 * with its lane (thread or task: calls of two lanes may overlap). */
static void flame_csv(FILE *csv, const struct sp_plot_axis *a, const struct sp_profile *p,
		      const struct sp_plot_fcall *c, size_t n)
{
	fputs("rank,depth,region,start,duration,lane\n", csv);
	for (size_t i = 0; i < n; i++) {
		const struct sp_rank *rk = &p->ranks[c[i].rank];
		fprintf(csv, "%d,%u,", rk->rank, (unsigned)c[i].depth);
		sp_plot_csv_name(csv, rk->regions[c[i].region].name);
		fputc(',', csv);
		sp_render_secs_exact(csv, sp_sub_sat(c[i].start, a->t0));
		fputc(',', csv);
		sp_render_secs_exact(csv, c[i].end - c[i].start);
		fprintf(csv, ",%d\n", (int)c[i].lane);
	}
}

/* The legend's names: the regions of the colour map c that have calls in
 * c[0..n), in its order, into names (*nn of them), and how many other
 * regions have calls into *others. 0, or -1 out of memory. */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int legend_names(const struct sp_profile *p, const struct sp_plot_fcall *calls,
			size_t n, const struct sp_plot_colours *c, const char **names, size_t *nn, size_t *others)
{
	size_t total = 0;
	for (size_t r = 0; r < p->nranks; r++)
		total += p->ranks[r].nregions;
	size_t *base = malloc((p->nranks ? p->nranks : 1) * sizeof *base);
	unsigned char *used = calloc(total ? total : 1, 1);
	if (!base || !used) {
		free(base);
		free(used);
		return -1;
	}
	for (size_t r = 0, at = 0; r < p->nranks; at += p->ranks[r++].nregions)
		base[r] = at;
	for (size_t i = 0; i < n; i++)
		used[base[calls[i].rank] + (size_t)calls[i].region] = 1;
	*nn = 0;
	for (size_t k = 0; k < c->n; k++) {
		int seen = 0;
		for (size_t r = 0; r < p->nranks && !seen; r++)
			for (size_t g = 0; g < p->ranks[r].nregions && !seen; g++)
				seen = used[base[r] + g] && strcmp(p->ranks[r].regions[g].name, c->top[k]) == 0;
		if (seen)
			names[(*nn)++] = c->top[k];
	}
	/* The other names with calls: the distinct ones, less those above. */
	const char **all = malloc((total ? total : 1) * sizeof *all);
	size_t na = 0, distinct = 0;
	if (!all) {
		free(base);
		free(used);
		return -1;
	}
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t g = 0; g < p->ranks[r].nregions; g++)
			if (used[base[r] + g])
				all[na++] = p->ranks[r].regions[g].name;
	qsort(all, na, sizeof *all, name_cmp);
	for (size_t i = 0; i < na; i++)
		distinct += i == 0 || strcmp(all[i], all[i - 1]) != 0;
	*others = distinct - *nn;
	free(all);
	free(base);
	free(used);
	return 0;
}

enum sp_err sp_plot_flame(FILE *svg, FILE *csv, const struct sp_plot_file *f,
			  const struct sp_plot_opts *o, struct sp_plot_info *info, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->sel : NULL;
	int width = o && o->width ? o->width : SP_PLOT_WIDTH;
	size_t budget = o && o->max_bytes ? o->max_bytes : SP_PLOT_BUDGET;
	const struct sp_profile *p = f->p;
	struct fwalk w = {0};
	struct block *blocks = NULL;
	size_t nb = 0;
	enum sp_err rc = collect(f, sel, &w, err);
	if (rc != SP_OK)
		goto out;
	if (make_blocks(w.c, w.n, &blocks, &nb) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
		goto out;
	}
	struct sp_plot_axis a;
	if (sp_plot_axis_init(&a, p, sel, F_LEFT, width - F_LEFT - 30) < 0) {
		rc = sp_error_set(err, SP_EINVAL, "%s: its calls span more than 2^63 ns", f->name);
		goto out;
	}
	struct sp_plot_info in = flame_columns(&a, p, w.c, w.n, budget);
	struct sp_plot_colours own;
	const struct sp_plot_colours *colours = sp_plot_colours_for(o, f, 1, &own, err);
	if (!colours) {
		rc = SP_ENOMEM;
		goto out;
	}
	char note[256];
	double height = F_TOP;
	for (size_t i = 0; i < nb; i++)
		height += F_GAP + (double)blocks[i].depths * F_ROW;
	double axis_y = height + 4;
	const char *names[SP_PLOT_NCOLOURS];
	size_t nn = 0, others = 0;
	if (legend_names(p, w.c, w.n, colours, names, &nn, &others) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
		goto out;
	}
	int cols = width / 280 > 0 ? width / 280 : 1;
	double legend_y = axis_y + 52;
	height = legend_y + (double)((nn + (size_t)cols - 1) / (size_t)cols) * 18 + (others ? 18 : 0) + 10;
	sp_svg_begin(svg, width, (int)ceil(height), "Flame chart: call stacks over time");
	fprintf(svg, "<g xmlns:sp=\"%s\">\n", SP_PLOT_NS);
	fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Flame chart: ", svg);
	sp_svg_text(svg, f->name, 80);
	fputs("</text>\n", svg);
	if (in.merged) {
		snprintf(note, sizeof note, "%lld of %lld calls narrower than %g px are merged: one box per depth "
			 "and %g px column (grey: several regions)", (long long)in.merged, (long long)in.calls, in.column_px,
			 in.column_px);
		sp_svg_label(svg, 12, 44, "start", "class=\"note\" fill=\"#555555\"", note, 0);
	} else {
		sp_svg_label(svg, 12, 44, "start", "fill=\"#555555\"",
			     "depth grows downwards; hover a box for its name, start and duration", 0);
	}
	draw_blocks(svg, &a, p, w.c, blocks, nb, in.column_px, colours);
	sp_plot_axis_draw(svg, &a, F_TOP, axis_y);
	double lh = sp_plot_legend(svg, names, nn, colours, 12, legend_y, 280, cols);
	if (others) {
		snprintf(note, sizeof note, "and %zu more region%s in colours of their names' hash; grey: a box "
			 "of calls of several regions", others, others == 1 ? "" : "s");
		sp_svg_label(svg, 12, legend_y + lh + 10, "start", "class=\"more\" fill=\"#555555\"", note, 0);
	}
	fputs("</g>\n", svg);
	sp_svg_end(svg);
	if (csv)
		flame_csv(csv, &a, p, w.c, w.n);
	if (info)
		*info = in;
	if (ferror(svg) || (csv && ferror(csv)))
		rc = sp_error_set(err, SP_EIO, "writing the flame chart failed");
out:
	free(blocks);
	free(w.c);
	return rc;
}
