/* plot_charts.c - the charts of `scope-profiler plot` across files: region
 * durations per metric and the speedup against the smallest run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"
#include "byname.h"
#include "sp_analysis.h"
#include "sp_clock.h"
#include "svg.h"

const char *const sp_plot_metric_names[SP_PLOT_NMETRICS] = {"avg", "min", "max", "total"};

static const char *const metric_titles[SP_PLOT_NMETRICS] = {
	"mean time per call [s]", "shortest call [s]", "longest call [s]", "total time, all ranks [s]",
};

/* ---- one table of regions x files --------------------------------------- */

static int row_cmp(const void *a, const void *b)
{
	const struct sp_plot_row *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

void sp_plot_table_free(struct sp_plot_table *t)
{
	free(t->rows);
	free(t->vals);
	*t = (struct sp_plot_table){0};
}

/* Folds one region's stats into its file's value v of row; cum is its
 * total as the summary counts it (a recursive region once). The mean stays
 * the calls' own: the raw sum over the calls. */
static void value_add(struct sp_plot_row *row, struct sp_plot_value *v, const struct sp_stats *st, int64_t cum)
{
	if (!v->present)
		*v = (struct sp_plot_value){1, 0, 0, st->min_ns, st->max_ns, 0, 0};
	v->calls += st->num_calls;
	v->total = sp_add_sat(v->total, cum);
	v->raw_total = sp_add_sat(v->raw_total, st->total_ns);
	v->min = st->min_ns < v->min ? st->min_ns : v->min;
	v->max = st->max_ns > v->max ? st->max_ns : v->max;
	v->slowest = cum > v->slowest ? cum : v->slowest;
	row->total = sp_add_sat(row->total, cum);
}

/* Every region's total as the summary counts it (sp_rank_region_times), in
 * b->id's order: cum[b->base[b->rank0[f] + r] + i]. NULL out of memory. */
static int64_t *region_totals(const struct sp_byname *b, const struct sp_profile *const *files, size_t nf)
{
	size_t n = 0;
	for (size_t f = 0; f < nf; f++)
		for (size_t r = 0; r < files[f]->nranks; r++)
			n += files[f]->ranks[r].nregions;
	int64_t *cum = malloc((n ? n : 1) * sizeof *cum);
	for (size_t f = 0; cum && f < nf; f++)
		for (size_t r = 0; r < files[f]->nranks; r++)
			if (sp_rank_region_times(&files[f]->ranks[r], cum + b->base[b->rank0[f] + r], NULL) < 0) {
				free(cum);
				return NULL;
			}
	return cum;
}

/* The selected regions with calls of the selected ranks of every file,
 * merged by name (byname.c's join), heaviest first. SP_EINVAL when there is
 * none. */
enum sp_err sp_plot_table_build(struct sp_plot_table *t, const struct sp_plot_file *f, size_t nf,
				const struct sp_select *sel, struct sp_error *err)
{
	const struct sp_profile **files = malloc((nf ? nf : 1) * sizeof *files);
	struct sp_byname b = {0};
	*t = (struct sp_plot_table){0};
	if (!files)
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	for (size_t i = 0; i < nf; i++)
		files[i] = f[i].p;
	int64_t *cum = NULL;
	enum sp_err rc = sp_byname_build(&b, files, nf, sel, err);
	if (rc == SP_OK && (!(t->rows = calloc(b.n ? b.n : 1, sizeof *t->rows)) ||
			    !(t->vals = calloc((b.n ? b.n : 1) * nf, sizeof *t->vals)) ||
			    !(cum = region_totals(&b, files, nf))))
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
	for (size_t k = 0; rc == SP_OK && k < b.n; k++) {
		struct sp_plot_row *row = &t->rows[t->n];
		*row = (struct sp_plot_row){b.names[k], t->vals + t->n * nf, 0};
		if (!sp_select_region(sel, b.names[k]))
			continue;
		int any = 0;
		for (size_t q = b.first[k]; q < b.first[k + 1]; q++) {
			const struct sp_byname_ref *r = &b.refs[q];
			const struct sp_stats *st = &files[r->file]->ranks[r->ri].regions[r->gi].stats;
			if (st->num_calls > 0) {
				value_add(row, &row->v[r->file], st, cum[b.base[b.rank0[r->file] + r->ri] + r->gi]);
				any = 1;
			}
		}
		t->n += any;                   /* a row only where some region has calls */
	}
	if (rc == SP_OK && t->n == 0)
		rc = sp_error_set(err, SP_EINVAL, "no selected region has calls in any file");
	sp_byname_free(&b);
	free(files);
	free(cum);
	if (rc != SP_OK) {
		sp_plot_table_free(t);
		return rc;
	}
	qsort(t->rows, t->n, sizeof *t->rows, row_cmp);
	return SP_OK;
}

_Static_assert(SP_PLOT_NCOLOURS == SP_SVG_NCOLOURS, "the heaviest regions take the palette's colours");

void sp_plot_colours_of(struct sp_plot_colours *c, const struct sp_plot_table *t)
{
	c->n = t->n < SP_PLOT_NCOLOURS ? t->n : SP_PLOT_NCOLOURS;
	for (size_t i = 0; i < c->n; i++)
		c->top[i] = t->rows[i].name;
}

enum sp_err sp_plot_colours_build(struct sp_plot_colours *c, const struct sp_plot_file *files, size_t nf,
				  const struct sp_select *sel, struct sp_error *err)
{
	struct sp_plot_table t;
	struct sp_error ignored;
	enum sp_err rc = sp_plot_table_build(&t, files, nf, sel, &ignored);
	c->n = 0;
	if (rc == SP_ENOMEM)
		return sp_error_set(err, SP_ENOMEM, "%s", ignored.msg);
	if (rc == SP_OK)
		sp_plot_colours_of(c, &t);
	sp_plot_table_free(&t);
	return SP_OK;
}

const struct sp_plot_colours *sp_plot_colours_for(const struct sp_plot_opts *o, const struct sp_plot_file *files,
						  size_t n, struct sp_plot_colours *own, struct sp_error *err)
{
	if (o && o->colours)
		return o->colours;
	return sp_plot_colours_build(own, files, n, o ? o->sel : NULL, err) == SP_OK ? own : NULL;
}

const char *sp_plot_colour(const struct sp_plot_colours *c, const char *name)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (strcmp(c->top[i], name) == 0)
			return sp_svg_series_colour(i);
	return sp_svg_colour(name);
}

double sp_plot_value_of(const struct sp_plot_value *v, enum sp_plot_metric m)
{
	switch (m) {
	case SP_PLOT_AVG: return (double)v->raw_total / (double)v->calls / 1e9;
	case SP_PLOT_MIN: return (double)v->min / 1e9;
	case SP_PLOT_MAX: return (double)v->max / 1e9;
	default: return (double)v->total / 1e9;
	}
}

/* ---- durations ---------------------------------------------------------- */

#define D_LEFT 260
#define D_BAR 12

/* The legend of the files' colours, cols to a line. */
static void durations_legend(FILE *svg, const struct sp_plot_file *files, size_t n, int cols)
{
	fputs("<g class=\"legend\">\n", svg);
	for (size_t i = 0; i < n; i++) {
		double lx = 12 + (double)(i % (size_t)cols) * 300, ly = 40 + (double)(i / (size_t)cols) * 18;
		fprintf(svg, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, ly,
			sp_svg_series_colour(i));
		sp_svg_label(svg, lx + 16, ly + 10, "start", NULL, files[i].name, 38);
	}
	fputs("</g>\n", svg);
}

/* One region's row at y (row_h high): its label, a bar per file having it
 * (axis_max seconds take pw pixels). */
static void durations_row(FILE *svg, const struct sp_plot_file *files, size_t n, const struct sp_plot_row *row,
			  enum sp_plot_metric m, double y, double row_h, double axis_max, double pw,
			  const struct sp_plot_colours *c)
{
	sp_svg_label_mid(svg, D_LEFT - 6, y + row_h / 2 + 2, "end", "font-size=\"11\"", row->name, 36);
	fputs("<g sp:region=\"", svg);
	sp_svg_text(svg, row->name, 0);
	fputs("\">\n", svg);
	for (size_t i = 0; i < n; i++) {
		if (!row->v[i].present)
			continue;
		double v = sp_plot_value_of(&row->v[i], m), w = v / axis_max * pw;
		fprintf(svg, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>",
			(double)D_LEFT, y + 4 + (double)i * D_BAR, w, D_BAR - 1,
			n > 1 ? sp_svg_series_colour(i) : sp_plot_colour(c, row->name));
		sp_svg_text(svg, row->name, 0);
		fputs(" \xe2\x80\x94 ", svg);
		sp_svg_text(svg, files[i].name, 0);
		fprintf(svg, ": %.9f s</title></rect>\n", v);
	}
	fputs("</g>\n", svg);
}

enum sp_err sp_plot_durations(FILE *svg, const struct sp_plot_file *files, size_t n,
			      enum sp_plot_metric m, const struct sp_plot_opts *o, struct sp_error *err)
{
	struct sp_plot_table t = {0};
	int width = o && o->width ? o->width : SP_PLOT_WIDTH;
	enum sp_err rc = sp_plot_table_build(&t, files, n, o ? o->sel : NULL, err);
	if (rc != SP_OK)
		return rc;
	struct sp_plot_colours own;
	const struct sp_plot_colours *c = o && o->colours ? o->colours : &own;
	sp_plot_colours_of(&own, &t);
	/* The heaviest rows (by total) up to SP_PLOT_MAX_ROWS, then one line. */
	size_t shown = t.n < SP_PLOT_MAX_ROWS ? t.n : SP_PLOT_MAX_ROWS, more = t.n - shown;
	double vmax = 0;
	for (size_t r = 0; r < shown; r++)
		for (size_t i = 0; i < n; i++)
			if (t.rows[r].v[i].present && sp_plot_value_of(&t.rows[r].v[i], m) > vmax)
				vmax = sp_plot_value_of(&t.rows[r].v[i], m);
	double step = sp_svg_tick_step(vmax, 8), axis_max = vmax > 0 ? ceil(vmax / step - 1e-9) * step : 1;
	if (axis_max <= 0)
		axis_max = step;
	int cols = width / 300 > 0 ? width / 300 : 1;
	double legend_h = n > 1 ? (double)((n + (size_t)cols - 1) / (size_t)cols) * 18 + 8 : 0;
	double top = 56 + legend_h, row_h = (double)n * D_BAR + 8;
	double left = D_LEFT, pw = width - D_LEFT - 40, axis_y = top + (double)shown * row_h + (more ? 18 : 0) + 4;
	double height = axis_y + 48;
	char title[128], num[64];
	snprintf(title, sizeof title, "Region durations: %s", metric_titles[m]);
	sp_svg_begin(svg, width, (int)ceil(height), title);
	fprintf(svg, "<g xmlns:sp=\"%s\">\n", SP_PLOT_NS);
	sp_svg_label(svg, 12, 24, "start", "font-size=\"16\" font-weight=\"bold\"", title, 0);
	if (n > 1)
		durations_legend(svg, files, n, cols);
	for (size_t r = 0; r < shown; r++)
		durations_row(svg, files, n, &t.rows[r], m, top + (double)r * row_h, row_h, axis_max, pw, c);
	sp_plot_more(svg, top + (double)shown * row_h + 13, more,
		     "of smaller totals (durations_data.csv has every one)");
	fprintf(svg, "<g stroke=\"#000000\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
		left, axis_y, left + pw, axis_y, left, top, left, axis_y);
	for (int i = 0; i <= SP_SVG_MAX_TICKS && i * step <= axis_max * (1 + 1e-9); i++) {
		double x = left + i * step / axis_max * pw;
		fprintf(svg, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
			x, axis_y, x, axis_y + 5);
		sp_svg_label(svg, x, axis_y + 17, "middle", NULL, sp_svg_number(num, sizeof num, i * step, step), 0);
	}
	sp_svg_label(svg, left + pw / 2, axis_y + 36, "middle", NULL, metric_titles[m], 0);
	sp_svg_label(svg, 12, top - 6 < 50 ? 50 : top - 6, "start", "font-weight=\"bold\"", "region", 0);
	fputs("</g>\n", svg);
	sp_svg_end(svg);
	sp_plot_table_free(&t);
	return ferror(svg) ? sp_error_set(err, SP_EIO, "writing the durations chart failed") : SP_OK;
}

enum sp_err sp_plot_durations_csv(FILE *csv, const struct sp_plot_file *files, size_t n,
				  unsigned metrics, const struct sp_plot_opts *o, struct sp_error *err)
{
	struct sp_plot_table t = {0};
	enum sp_err rc = sp_plot_table_build(&t, files, n, o ? o->sel : NULL, err);
	if (rc != SP_OK)
		return rc;
	fputs("file,region,metric,value\n", csv);
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < t.n; r++)
			for (int m = 0; m < SP_PLOT_NMETRICS; m++) {
				const struct sp_plot_value *v = &t.rows[r].v[i];
				if (!v->present || !(metrics & 1u << m))
					continue;
				sp_plot_csv_name(csv, files[i].name);
				fputc(',', csv);
				sp_plot_csv_name(csv, t.rows[r].name);
				fprintf(csv, ",%s,%.9f\n", sp_plot_metric_names[m], sp_plot_value_of(v, (enum sp_plot_metric)m));
			}
	sp_plot_table_free(&t);
	return ferror(csv) ? sp_error_set(err, SP_EIO, "writing durations_data.csv failed") : SP_OK;
}

/* ---- speedup ------------------------------------------------------------ */

/* A whole number from 1 to 10^7 under metadata key (ranks, threads, cores),
 * or NAN. */
static double meta_num(const struct sp_profile *p, const char *key)
{
	const char *s = sp_profile_meta(p, key);
	char *end;
	if (!s)
		return NAN;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	while (*end == ' ')
		end++;
	return end != s && !*end && errno == 0 && v >= 1 && v <= 10000000 ? (double)v : NAN;
}

size_t sp_plot_speedup_xs(const struct sp_plot_file *files, size_t n, enum sp_plot_xfield xf, double *x)
{
	size_t distinct = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sp_profile *p = files[i].p;
		double ranks = (double)p->nranks;
		switch (xf) {
		case SP_PLOT_X_RANKS:
			x[i] = ranks > 0 ? ranks : NAN;
			break;
		case SP_PLOT_X_OMP:
			x[i] = meta_num(p, "omp_num_threads");
			break;
		case SP_PLOT_X_CORES:
			x[i] = meta_num(p, "total_cores");
			if (isnan(x[i]))
				x[i] = ranks * (isnan(meta_num(p, "omp_num_threads")) ? 1 : meta_num(p, "omp_num_threads"));
			break;
		}
		if (isnan(x[i]))
			continue;
		size_t j = 0;
		while (j < i && x[j] != x[i])
			j++;
		distinct += j == i;
	}
	return distinct;
}

#define S_LEFT 80
#define S_TOP 56
#define S_H 420

/* The speedup chart's frame: x from 0 to xtop, speedup from 0 to ytop, on
 * pw x ph pixels; the ticks' steps. */
struct sframe {
	double xtop, ytop, xstep, ystep, pw, ph;
};

static double sx(const struct sframe *f, double v)
{
	return S_LEFT + v / f->xtop * f->pw;
}

static double sy(const struct sframe *f, double v)
{
	return S_TOP + f->ph - v / f->ytop * f->ph;
}

/* The indices of the runs with an x value into order, by x (then file
 * order); returns how many. */
static size_t speedup_order(const double *x, size_t n, size_t *order)
{
	size_t nr = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i])) {
			size_t j = nr++;
			while (j > 0 && x[order[j - 1]] > x[i]) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = i;
		}
	return nr;
}

/* The largest speedup of any region against run base, at least smax. */
static double speedup_max(const struct sp_plot_table *t, size_t base, const size_t *order, size_t nr, double smax)
{
	for (size_t r = 0; r < t->n; r++) {
		const struct sp_plot_value *b = &t->rows[r].v[base];
		if (!b->present || b->slowest <= 0)
			continue;
		for (size_t j = 0; j < nr; j++) {
			const struct sp_plot_value *v = &t->rows[r].v[order[j]];
			if (v->present && v->slowest > 0 && (double)b->slowest / (double)v->slowest > smax)
				smax = (double)b->slowest / (double)v->slowest;
		}
	}
	return smax;
}

/* The axes, their ticks and titles, and the ideal line x / xmin with its
 * legend entry at (lx, ly). */
static void speedup_axes(FILE *svg, const struct sframe *f, const char *xname, double xmin, double xmax,
			 double lx, double ly)
{
	char num[64];
	fprintf(svg, "<g stroke=\"#000000\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
		sx(f, 0), sy(f, 0), sx(f, f->xtop), sy(f, 0), sx(f, 0), sy(f, 0), sx(f, 0), sy(f, f->ytop));
	for (int i = 0; i <= SP_SVG_MAX_TICKS && i * f->xstep <= f->xtop * (1 + 1e-9); i++) {
		fprintf(svg, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
			sx(f, i * f->xstep), sy(f, 0), sx(f, i * f->xstep), sy(f, 0) + 5);
		sp_svg_label(svg, sx(f, i * f->xstep), sy(f, 0) + 17, "middle", NULL,
			     sp_svg_number(num, sizeof num, i * f->xstep, f->xstep), 0);
	}
	for (int i = 0; i <= SP_SVG_MAX_TICKS && i * f->ystep <= f->ytop * (1 + 1e-9); i++) {
		fprintf(svg, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
			sx(f, 0) - 5, sy(f, i * f->ystep), sx(f, 0), sy(f, i * f->ystep));
		sp_svg_label(svg, sx(f, 0) - 8, sy(f, i * f->ystep) + 4, "end", NULL,
			     sp_svg_number(num, sizeof num, i * f->ystep, f->ystep), 0);
	}
	sp_svg_label(svg, sx(f, f->xtop / 2), sy(f, 0) + 36, "middle", NULL, xname, 0);
	fprintf(svg, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">"
		"speedup (time of the smallest run / time)</text>\n", sy(f, f->ytop / 2), sy(f, f->ytop / 2));
	fprintf(svg, "<polyline class=\"ideal\" points=\"%.1f,%.1f %.1f,%.1f\" fill=\"none\" stroke=\"#000000\""
		" stroke-dasharray=\"6,4\"/>\n", sx(f, xmin), sy(f, 1.0), sx(f, xmax), sy(f, xmax / xmin));
	fprintf(svg, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\" "
		"stroke-dasharray=\"6,4\"/>\n", lx, ly + 6, lx + 24, ly + 6);
	sp_svg_label(svg, lx + 30, ly + 10, "start", NULL, "ideal", 0);
}

/* One region's line and points (and CSV rows) against run base, over the
 * nr runs in order; its legend entry at (lx, ly). */
static void speedup_row(FILE *svg, FILE *csv, const struct sframe *f, const struct sp_plot_row *row, size_t base,
			const size_t *order, size_t nr, const double *x, double lx, double ly, const char *colour)
{
	const struct sp_plot_value *b = &row->v[base];
	fputs("<g sp:region=\"", svg);
	sp_svg_text(svg, row->name, 0);
	fprintf(svg, "\" fill=\"%s\" stroke=\"%s\">\n<polyline fill=\"none\" points=\"", colour, colour);
	for (size_t j = 0, k = 0; j < nr; j++) {
		const struct sp_plot_value *v = &row->v[order[j]];
		if (v->present && v->slowest > 0)
			fprintf(svg, "%s%.1f,%.1f", k++ ? " " : "", sx(f, x[order[j]]),
				sy(f, (double)b->slowest / (double)v->slowest));
	}
	fputs("\"/>\n", svg);
	for (size_t j = 0; j < nr; j++) {
		const struct sp_plot_value *v = &row->v[order[j]];
		if (!v->present || v->slowest <= 0)
			continue;
		double s = (double)b->slowest / (double)v->slowest;
		fprintf(svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>", sx(f, x[order[j]]), sy(f, s));
		sp_svg_text(svg, row->name, 0);
		fprintf(svg, " at %g: %.3fx</title></circle>\n", x[order[j]], s);
		if (csv) {
			sp_plot_csv_name(csv, row->name);
			fprintf(csv, ",%g,", x[order[j]]);
			sp_render_secs_exact(csv, v->slowest);
			fprintf(csv, ",%.6f\n", s);
		}
	}
	fputs("</g>\n", svg);
	fprintf(svg, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx + 6, ly, colour);
	sp_svg_label(svg, lx + 30, ly + 10, "start", NULL, row->name, 30);
}

enum sp_err sp_plot_speedup(FILE *svg, FILE *csv, const struct sp_plot_file *files, size_t n,
			    enum sp_plot_xfield xf, const struct sp_plot_opts *o, struct sp_error *err)
{
	static const char *const xnames[] = {"ranks", "OpenMP threads (omp_num_threads)",
					     "cores (total_cores)"};
	int width = o && o->width ? o->width : SP_PLOT_WIDTH;
	double *x = malloc((n ? n : 1) * sizeof *x);
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	struct sp_plot_table t = {0};
	enum sp_err rc = SP_OK;
	if (!x || !order) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
		goto out;
	}
	if (sp_plot_speedup_xs(files, n, xf, x) < 2) {
		rc = sp_error_set(err, SP_EINVAL, "no speedup chart: the files have fewer than two distinct "
				  "numbers of %s", xnames[xf]);
		goto out;
	}
	if ((rc = sp_plot_table_build(&t, files, n, o ? o->sel : NULL, err)) != SP_OK)
		goto out;
	struct sp_plot_colours own;
	const struct sp_plot_colours *c = o && o->colours ? o->colours : &own;
	sp_plot_colours_of(&own, &t);
	size_t nr = speedup_order(x, n, order), base = order[0];
	double xmin = x[base], xmax = x[order[nr - 1]];
	double smax = speedup_max(&t, base, order, nr, xmax / xmin);
	struct sframe f = { .pw = width - S_LEFT - 300, .ph = S_H };
	f.xstep = sp_svg_tick_step(xmax, 10);
	f.xtop = ceil(xmax / f.xstep - 1e-9) * f.xstep;
	f.ystep = sp_svg_tick_step(smax, 8);
	f.ytop = ceil(smax / f.ystep - 1e-9) * f.ystep;
	size_t shown = 0;
	for (size_t r = 0; r < t.n; r++)
		shown += t.rows[r].v[base].present && t.rows[r].v[base].slowest > 0;
	double height = S_TOP + f.ph + 60, legend_end = S_TOP + 18 * (double)(shown + 1) + 10;
	sp_svg_begin(svg, width, (int)(legend_end > height ? legend_end : height), "Speedup against the smallest run");
	fprintf(svg, "<g xmlns:sp=\"%s\">\n", SP_PLOT_NS);
	fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Speedup against ", svg);
	sp_svg_text(svg, files[base].name, 60);
	fputs("</text>\n", svg);
	double ly = S_TOP, lx = S_LEFT + f.pw + 30;
	speedup_axes(svg, &f, xnames[xf], xmin, xmax, lx, ly);
	if (csv)
		fputs("region,x,time,speedup\n", csv);
	for (size_t r = 0; r < t.n; r++) {
		const struct sp_plot_value *b = &t.rows[r].v[base];
		if (!b->present || b->slowest <= 0)
			continue;
		ly += 18;
		speedup_row(svg, csv, &f, &t.rows[r], base, order, nr, x, lx, ly, sp_plot_colour(c, t.rows[r].name));
	}
	fputs("</g>\n", svg);
	sp_svg_end(svg);
	if (ferror(svg) || (csv && ferror(csv)))
		rc = sp_error_set(err, SP_EIO, "writing the speedup chart failed");
out:
	sp_plot_table_free(&t);
	free(x);
	free(order);
	return rc;
}
