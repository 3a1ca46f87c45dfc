/* plot.c - the Gantt chart, the merging of sub-pixel calls, the shared time
 * axis and region_statistics.json of `scope-profiler plot` (sp_plot.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"
#include "sp_analysis.h"
#include "sp_clock.h"
#include "sp_json.h"
#include "sp_render.h"
#include "svg.h"

/* ---- merging ------------------------------------------------------------ */

static void put_bar(struct sp_plot_merge *m, const struct sp_plot_bar *b)
{
	m->bars++;
	if (b->calls > 1)
		m->merged += b->calls;
	if (m->emit)
		m->emit(m->ctx, b);
}

void sp_plot_merge_flush(struct sp_plot_merge *m)
{
	if (m->pending)
		put_bar(m, &m->p);
	m->pending = 0;
}

void sp_plot_merge_call(struct sp_plot_merge *m, double x0, double x1, size_t index)
{
	if (x1 - x0 >= m->colw) {
		sp_plot_merge_flush(m);
		put_bar(m, &(struct sp_plot_bar){x0, x1, index, 1});
		return;
	}
	if (m->pending && floor(m->p.x0 / m->colw) == floor(x0 / m->colw)) {
		m->p.calls++;
		if (x1 > m->p.x1)
			m->p.x1 = x1;
		return;
	}
	sp_plot_merge_flush(m);
	m->p = (struct sp_plot_bar){x0, x1, index, 1};
	m->pending = 1;
}

/* ---- the shared axis ---------------------------------------------------- */

int sp_plot_axis_init(struct sp_plot_axis *a, const struct sp_profile *p, const struct sp_select *sel,
		      double left, double width)
{
	/* The origin is the file's first region entry, whatever ranks are
	 * selected (as the read API's plot_* functions frame it), so charts
	 * of different ranks share it; the axis ends with the selected ranks. */
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		int64_t s = sp_rank_first_start(rk), e = sp_rank_last_end(rk);
		if (s == SP_NO_TIME || e == SP_NO_TIME)
			continue;
		t0 = s < t0 ? s : t0;
		if (sp_select_rank(sel, rk->rank))
			t1 = e > t1 ? e : t1;
	}
	if (t1 == INT64_MIN)
		return 0;
	int64_t span;
	if (__builtin_sub_overflow(t1, t0, &span))
		return -1;   /* every time drawn is within [t0, t1]: then all fit */
	a->t0 = t0;
	a->span = span > 0 ? span : 1;
	a->left = left;
	a->width = width;
	a->k = width / (double)a->span;
	return 1;
}

void sp_plot_axis_draw(FILE *out, const struct sp_plot_axis *a, double top, double y)
{
	double span_s = (double)a->span / 1e9, step = sp_svg_tick_step(span_s, 10);
	char num[64];
	fprintf(out, "<g stroke=\"#000000\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
		a->left, y, a->left + a->width, y, a->left, top, a->left, y);
	for (int i = 0; i <= SP_SVG_MAX_TICKS && i * step <= span_s * (1 + 1e-9); i++) {
		double x = a->left + i * step * 1e9 * a->k;
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
			x, y, x, y + 5);
		sp_svg_label(out, x, y + 17, "middle", NULL, sp_svg_number(num, sizeof num, i * step, step), 0);
	}
	sp_svg_label(out, a->left + a->width / 2, y + 36, "middle", NULL,
		     "time since the first region entry [s]", 0);
}

void sp_plot_more(FILE *out, double y, size_t more, const char *why)
{
	if (!more)
		return;
	char line[160];
	snprintf(line, sizeof line, "\xe2\x80\xa6 %zu more region%s, %s", more, more == 1 ? "" : "s", why);
	sp_svg_label(out, 12, y, "start", "class=\"more\" font-size=\"11\" fill=\"#555555\"", line, 0);
}

void sp_plot_csv_name(FILE *out, const char *s)
{
	struct sp_str b = {0};
	sp_csv_field(&b, s);
	if (b.p)
		fputs(b.p, out);
	sp_str_free(&b);
}

int sp_plot_has_events(const struct sp_profile *p, const struct sp_select *sel)
{
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (!sp_select_rank(sel, rk->rank))
			continue;
		for (size_t g = 0; g < rk->nregions; g++)
			if (rk->regions[g].starts && rk->regions[g].stats.num_calls > 0 &&
			    sp_select_region(sel, rk->regions[g].name))
				return 1;
	}
	return 0;
}

/* ---- the Gantt chart ---------------------------------------------------- */

static int lane_cmp(const void *a, const void *b)
{
	const struct sp_plot_lane *x = a, *y = b;
	if (x->rk != y->rk)
		return x->rk < y->rk ? -1 : 1;         /* the file's rank order */
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->rd->name, y->rd->name);
}

/* Lanes by region name, then their place (sp_plot_lanes_top's grouping). */
struct lane_ref {
	const char *name;
	size_t i;
	int64_t sum;                   /* the region's over its lanes */
};

static int ref_by_name(const void *a, const void *b)
{
	const struct lane_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->i < y->i ? -1 : x->i > y->i;
}

static int ref_by_sum(const void *a, const void *b)
{
	const struct lane_ref *x = a, *y = b;
	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	return ref_by_name(a, b);
}

long sp_plot_lanes_top(struct sp_plot_lane *l, size_t n, size_t max, size_t *more)
{
	*more = 0;
	if (n <= max)
		return (long)n;
	struct lane_ref *r = malloc(n * sizeof *r);
	unsigned char *keep = calloc(n, 1);
	if (!r || !keep) {
		free(r);
		free(keep);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		r[i] = (struct lane_ref){l[i].rd->name, i, 0};
	qsort(r, n, sizeof *r, ref_by_name);
	for (size_t a = 0, b; a < n; a = b) {
		int64_t sum = 0;
		for (b = a; b < n && strcmp(r[b].name, r[a].name) == 0; b++)
			sum = sp_add_sat(sum, l[r[b].i].total);
		for (size_t k = a; k < b; k++)
			r[k].sum = sum;
	}
	qsort(r, n, sizeof *r, ref_by_sum);
	size_t kept = 0;
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && strcmp(r[b].name, r[a].name) == 0; b++)
			;
		if (kept && kept + (b - a) > max) {
			(*more)++;
			continue;
		}
		kept += b - a;
		for (size_t k = a; k < b; k++)
			keep[r[k].i] = 1;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			l[k++] = l[i];
	free(r);
	free(keep);
	return (long)k;
}

enum sp_err sp_plot_lanes(const struct sp_plot_file *f, const struct sp_select *sel,
			  struct sp_plot_lane **out, size_t *n, struct sp_error *err)
{
	const struct sp_profile *p = f->p;
	size_t cap = 0, most = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		cap += p->ranks[r].nregions;
		most = p->ranks[r].nregions > most ? p->ranks[r].nregions : most;
	}
	struct sp_plot_lane *l = malloc((cap ? cap : 1) * sizeof *l);
	int64_t *cum = malloc((most ? most : 1) * sizeof *cum);
	if (!l || !cum) {
		free(l);
		free(cum);
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	size_t k = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (!sp_select_rank(sel, rk->rank))
			continue;
		if (sp_rank_region_times(rk, cum, NULL) < 0) {
			free(l);
			free(cum);
			return sp_error_set(err, SP_ENOMEM, "out of memory");
		}
		for (size_t g = 0; g < rk->nregions; g++) {
			const struct sp_region_data *rd = &rk->regions[g];
			if (rd->starts && rd->stats.num_calls > 0 && sp_select_region(sel, rd->name))
				l[k++] = (struct sp_plot_lane){rk, rd, cum[g]};
		}
	}
	free(cum);
	if (!k) {
		free(l);
		return sp_error_set(err, SP_EINVAL, "%s: no per-call events in the selected regions and ranks%s",
				    f->name, sp_plot_has_events(p, NULL) ? "" : " (aggregation mode?)");
	}
	qsort(l, k, sizeof *l, lane_cmp);
	*out = l;
	*n = k;
	return SP_OK;
}

/* The distinct region names of the lanes, in lane order (for the legend). */
static size_t legend_names(const struct sp_plot_lane *l, size_t n, const char **names)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < k && strcmp(names[j], l[i].rd->name) != 0)
			j++;
		if (j == k)
			names[k++] = l[i].rd->name;
	}
	return k;
}

double sp_plot_legend(FILE *out, const char *const *names, size_t n, const struct sp_plot_colours *colours,
		      double x, double y, double colw, int cols)
{
	fputs("<g class=\"legend\">\n", out);
	for (size_t i = 0; i < n; i++) {
		double lx = x + (double)(i % (size_t)cols) * colw, ly = y + (double)(i / (size_t)cols) * 18;
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, ly,
			sp_plot_colour(colours, names[i]));
		sp_svg_label_mid(out, lx + 16, ly + 10, "start", NULL, names[i], (size_t)(colw / 7.5));
	}
	fputs("</g>\n", out);
	return (double)((n + (size_t)cols - 1) / (size_t)cols) * 18;
}

#define G_LEFT 250
#define G_TOP 64
#define G_LANE 16

struct gantt_draw {
	FILE *out;
	const struct sp_plot_axis *a;
	double y;
};

static void gantt_bar(void *ctx, const struct sp_plot_bar *b)
{
	struct gantt_draw *g = ctx;
	double w = b->x1 - b->x0;
	fprintf(g->out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"12\"", g->a->left + b->x0, g->y,
		w < 0.5 ? 0.5 : w);
	if (b->calls > 1)
		fprintf(g->out, " sp:calls=\"%lld\"", (long long)b->calls);
	fputs("/>\n", g->out);
}

void sp_plot_gantt_lane(struct sp_plot_merge *m, const struct sp_plot_axis *a, const struct sp_region_data *rd)
{
	for (int64_t c = 0; c < rd->stats.num_calls; c++)
		sp_plot_merge_call(m, ((double)rd->starts[c] - (double)a->t0) * a->k,
				   ((double)rd->ends[c] - (double)a->t0) * a->k, (size_t)c);
	sp_plot_merge_flush(m);
}

static const char *merge_note(char *buf, size_t len, const struct sp_plot_info *in)
{
	if (!in->merged)
		return NULL;
	snprintf(buf, len, "%lld of %lld calls narrower than %g px are merged: one bar per lane and %g px column",
		 (long long)in->merged, (long long)in->calls, in->column_px, in->column_px);
	return buf;
}

/* The merging of the lanes' calls: columns as narrow as the budget allows
 * (~64 bytes a bar, ~200 a lane), and the counts it leaves. */
static struct sp_plot_info gantt_columns(const struct sp_plot_axis *a, const struct sp_plot_lane *l, size_t nl,
					 size_t budget)
{
	struct sp_plot_info in = {0};
	for (in.column_px = 1;; in.column_px *= 2) {
		struct sp_plot_merge m = {.colw = in.column_px};
		for (size_t i = 0; i < nl; i++)
			sp_plot_gantt_lane(&m, a, l[i].rd);
		in.bars = m.bars;
		in.merged = m.merged;
		if ((size_t)m.bars * 64 + nl * 200 <= budget || in.column_px >= a->width)
			break;
	}
	for (size_t i = 0; i < nl; i++)
		in.calls += l[i].rd->stats.num_calls;
	return in;
}

/* Each lane's label and bars (merged into columns of colw px), a line
 * between ranks. */
static void draw_lanes(FILE *svg, const struct sp_plot_axis *a, const struct sp_plot_lane *l, size_t nl,
		       double colw, const struct sp_plot_colours *colours, size_t more)
{
	sp_plot_more(svg, G_TOP + (double)nl * G_LANE + 11, more,
		     "lighter: not drawn here (--include chooses; gantt_data.csv has every call)");
	for (size_t i = 0; i < nl; i++) {
		double y = G_TOP + (double)i * G_LANE;
		if (i && l[i].rk != l[i - 1].rk)
			fprintf(svg, "<line x1=\"12\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#cccccc\"/>\n",
				y - 1, a->left + a->width, y - 1);
		fprintf(svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\" font-size=\"11\">%d \xc2\xb7 ",
			a->left - 6, y + 11, l[i].rk->rank);
		sp_svg_text_mid(svg, l[i].rd->name, 34);
		fprintf(svg, "</text>\n<g fill=\"%s\" sp:rank=\"%d\" sp:region=\"", sp_plot_colour(colours, l[i].rd->name),
			l[i].rk->rank);
		sp_svg_text(svg, l[i].rd->name, 0);
		fputs("\">\n", svg);
		struct gantt_draw g = {svg, a, y + 1};
		struct sp_plot_merge m = {.colw = colw, .emit = gantt_bar, .ctx = &g};
		sp_plot_gantt_lane(&m, a, l[i].rd);
		fputs("</g>\n", svg);
	}
}

/* gantt_data.csv: every call of the lanes, in seconds from the axis's origin. */
static void gantt_csv(FILE *csv, const struct sp_plot_axis *a, const struct sp_plot_lane *l, size_t nl)
{
	fputs("rank,region,start,end,duration\n", csv);
	for (size_t i = 0; i < nl; i++) {
		const struct sp_region_data *rd = l[i].rd;
		for (int64_t c = 0; c < rd->stats.num_calls; c++) {
			fprintf(csv, "%d,", l[i].rk->rank);
			sp_plot_csv_name(csv, rd->name);
			fputc(',', csv);
			sp_render_secs_exact(csv, sp_sub_sat(rd->starts[c], a->t0));
			fputc(',', csv);
			sp_render_secs_exact(csv, sp_sub_sat(rd->ends[c], a->t0));
			fputc(',', csv);
			sp_render_secs_exact(csv, rd->ends[c] - rd->starts[c]);
			fputc('\n', csv);
		}
	}
}

enum sp_err sp_plot_gantt(FILE *svg, FILE *csv, const struct sp_plot_file *f,
			  const struct sp_plot_opts *o, struct sp_plot_info *info, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->sel : NULL;
	int width = o && o->width ? o->width : SP_PLOT_WIDTH;
	size_t budget = o && o->max_bytes ? o->max_bytes : SP_PLOT_BUDGET;
	struct sp_plot_lane *l = NULL, *shown = NULL;
	const char **names = NULL;
	size_t nl = 0, more = 0;
	enum sp_err rc = sp_plot_lanes(f, sel, &l, &nl, err);
	if (rc != SP_OK)
		return rc;
	long ns = -1;
	if ((shown = malloc(nl * sizeof *shown))) {
		memcpy(shown, l, nl * sizeof *shown);
		ns = sp_plot_lanes_top(shown, nl, SP_PLOT_MAX_LANES, &more);
	}
	if (ns < 0) {
		free(shown);
		free(l);
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	struct sp_plot_axis a;
	if (sp_plot_axis_init(&a, f->p, sel, G_LEFT, width - G_LEFT - 30) < 0) {
		free(l);
		return sp_error_set(err, SP_EINVAL, "%s: its calls span more than 2^63 ns", f->name);
	}
	struct sp_plot_info in = gantt_columns(&a, shown, (size_t)ns, budget);
	struct sp_plot_colours own;
	const struct sp_plot_colours *colours = sp_plot_colours_for(o, f, 1, &own, err);
	if (!colours) {
		rc = SP_ENOMEM;
		goto out;
	}
	if (!(names = malloc(nl * sizeof *names))) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
		goto out;
	}
	size_t nn = legend_names(shown, (size_t)ns, names);
	int cols = width / 280 > 0 ? width / 280 : 1;
	double plot_h = (double)((size_t)ns + (more > 0)) * G_LANE, axis_y = G_TOP + plot_h + 4;
	double legend_y = axis_y + 52, height = legend_y + (double)((nn + (size_t)cols - 1) / (size_t)cols) * 18 + 10;
	char note[256], title[64];
	snprintf(title, sizeof title, "Gantt chart: %zu lane%s", nl, nl == 1 ? "" : "s");
	sp_svg_begin(svg, width, (int)ceil(height), title);
	fprintf(svg, "<g xmlns:sp=\"%s\">\n", SP_PLOT_NS);
	fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Gantt chart: ", svg);
	sp_svg_text(svg, f->name, 80);
	fputs("</text>\n", svg);
	if (merge_note(note, sizeof note, &in))
		sp_svg_label(svg, 12, 44, "start", "class=\"note\" fill=\"#555555\"", note, 0);
	sp_svg_label(svg, 12, G_TOP - 6, "start", "font-weight=\"bold\"", "rank / region", 0);
	draw_lanes(svg, &a, shown, (size_t)ns, in.column_px, colours, more);
	sp_plot_axis_draw(svg, &a, G_TOP, axis_y);
	sp_plot_legend(svg, names, nn, colours, 12, legend_y, 280, cols);
	fputs("</g>\n", svg);
	sp_svg_end(svg);
	if (csv)
		gantt_csv(csv, &a, l, nl);
	if (info)
		*info = in;
	if (ferror(svg) || (csv && ferror(csv)))
		rc = sp_error_set(err, SP_EIO, "writing the Gantt chart failed");
out:
	free(names);
	free(shown);
	free(l);
	return rc;
}

/* ---- region_statistics.json --------------------------------------------- */

enum sp_err sp_plot_statistics(FILE *out, const struct sp_plot_file *files, size_t n,
			       const struct sp_plot_opts *o, struct sp_error *err)
{
	struct sp_render_opts ro = {.select = o ? o->sel : NULL, .json = 1};
	fputs("{\"files\": [\n", out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(",\n", out);
		enum sp_err rc = sp_render_summary_opts(out, files[i].p, files[i].name, &ro, err);
		if (rc != SP_OK)
			return rc;
	}
	fputs("]}\n", out);
	return ferror(out) ? sp_error_set(err, SP_EIO, "writing region_statistics.json failed") : SP_OK;
}
