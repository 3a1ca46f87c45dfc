/* report_html.c - report.html of `scope-profiler plot` (sp_plot.h): one
 * self-contained page with the charts inlined, the region statistics as
 * HTML tables and an interactive timeline, drawn in the browser by
 * report_timeline.js (embedded at build time) from JSON in the page. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "plot_int.h"
#include "sp_json.h"
#include "sp_render.h"
#include "sp_timeline_js.h"
#include "svg.h"

/* The timeline's windows across the span: calls narrower than one that
 * start in the same one are merged into one bar per lane. Fewer (wider)
 * when the bars would not fit the budget. */
#define TL_WINDOWS 4096
#define TL_BUDGET ((size_t)3 << 20)    /* the timeline's JSON: 3 MiB */
#define TL_BAR_BYTES 28                /* "123456789012,123456789012,1," */

static const char css[] =
	"body{font-family:sans-serif;margin:16px 24px;color:#222}\n"
	"h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
	".note{color:#555;font-size:13px}\n"
	"table.stats{border-collapse:collapse;font-size:13px;margin-bottom:16px}\n"
	"table.stats caption{text-align:left;font-weight:bold;padding:4px 0}\n"
	"table.stats th,table.stats td{border:1px solid #ccc;padding:2px 8px}\n"
	"table.stats td{text-align:right;font-variant-numeric:tabular-nums}\n"
	"table.stats tbody th{text-align:left;font-weight:normal}\n"
	"#tl-controls{margin:8px 0}#tl-controls button{min-width:2.5em}\n"
	"#rank-filter{display:inline-block;margin-left:16px;padding:2px 8px}\n"
	"#rank-filter label{margin-right:8px}\n"
	"#timeline{display:flex;align-items:flex-start;border:1px solid #ccc;overflow:hidden}\n"
	"#tl-labels{flex:none;width:260px;font-size:12px}\n"
	".lane{height:18px;line-height:18px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;"
	"padding-left:4px}\n"
	".swatch{display:inline-block;width:10px;height:10px;margin-right:4px}\n"
	"#tl-canvas{cursor:grab;display:block}\n"
	"#tl-tip{position:absolute;background:#ffffe8;border:1px solid #888;padding:4px 8px;"
	"font-size:12px;pointer-events:none}\n"
	".chart svg{max-width:100%;height:auto;border:1px solid #eee}\n";

/* Copies src[0..len) to out with < > & as \u escapes: JSON that holds them
 * only inside strings stays the same JSON, and cannot end the <script>
 * element it sits in. */
static void script_safe(FILE *out, const char *src, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (src[i]) {
		case '<': fputs("\\u003c", out); break;
		case '>': fputs("\\u003e", out); break;
		case '&': fputs("\\u0026", out); break;
		default: fputc(src[i], out);
		}
	}
}

struct tl_emit {
	FILE *out;
	const struct sp_region_data *rd;
	int64_t t0;
	int first;
};

/* One bar: start and end in ns from t0 (a merged bar holds consecutive calls
 * first .. first + calls - 1, and ends at the latest of their ends), calls. */
static void tl_bar(void *ctx, const struct sp_plot_bar *b)
{
	struct tl_emit *e = ctx;
	int64_t end = e->rd->ends[b->first];
	for (int64_t c = 1; c < b->calls; c++)
		if (e->rd->ends[b->first + (size_t)c] > end)
			end = e->rd->ends[b->first + (size_t)c];
	fprintf(e->out, "%s%lld,%lld,%lld", e->first ? "" : ",", (long long)sp_sub_sat(e->rd->starts[b->first], e->t0),
		(long long)sp_sub_sat(end, e->t0), (long long)b->calls);
	e->first = 0;
}

/* The timeline's JSON into out; what it drew into in. */
static enum sp_err timeline_json(FILE *out, const struct sp_plot_file *f, const struct sp_plot_opts *o,
				 struct sp_plot_info *in, int *windows, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->sel : NULL;
	struct sp_plot_colours own;
	const struct sp_plot_colours *colours = sp_plot_colours_for(o, f, 1, &own, err);
	if (!colours)
		return SP_ENOMEM;
	struct sp_plot_lane *l = NULL;
	size_t nl = 0;
	size_t more = 0;
	enum sp_err rc = sp_plot_lanes(f, sel, &l, &nl, err);
	if (rc != SP_OK)
		return rc;
	long kept = sp_plot_lanes_top(l, nl, SP_PLOT_MAX_LANES, &more);
	if (kept < 0) {
		free(l);
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	nl = (size_t)kept;
	struct sp_plot_axis a;
	sp_plot_axis_init(&a, f->p, sel, 0, TL_WINDOWS);
	*in = (struct sp_plot_info){0};
	double colw;
	for (colw = 1;; colw *= 2) {
		struct sp_plot_merge m = {.colw = colw};
		for (size_t i = 0; i < nl; i++)
			sp_plot_gantt_lane(&m, &a, l[i].rd);
		in->bars = m.bars;
		in->merged = m.merged;
		if ((size_t)m.bars * TL_BAR_BYTES + nl * 100 <= TL_BUDGET || colw >= TL_WINDOWS)
			break;
	}
	for (size_t i = 0; i < nl; i++)
		in->calls += l[i].rd->stats.num_calls;
	in->column_px = colw / a.k;            /* the window, in ns */
	*windows = (int)(TL_WINDOWS / colw);
	fprintf(out, "{\"file\":");
	sp_json_fputs(out, f->name);
	fprintf(out, ",\"t0\":%lld,\"span\":%lld,\"window\":%.0f,\"calls\":%lld,\"bars\":%lld,\"merged\":%lld,"
		"\"more\":%zu,\"lanes\":[", (long long)a.t0, (long long)a.span, in->column_px, (long long)in->calls,
		(long long)in->bars, (long long)in->merged, more);
	for (size_t i = 0; i < nl; i++) {
		fprintf(out, "%s\n{\"rank\":%d,\"region\":", i ? "," : "", l[i].rk->rank);
		sp_json_fputs(out, l[i].rd->name);
		fprintf(out, ",\"colour\":\"%s\",\"bars\":[", sp_plot_colour(colours, l[i].rd->name));
		struct tl_emit e = {out, l[i].rd, a.t0, 1};
		struct sp_plot_merge m = {.colw = colw, .emit = tl_bar, .ctx = &e};
		sp_plot_gantt_lane(&m, &a, l[i].rd);
		fputs("]}", out);
	}
	fputs("]}", out);
	free(l);
	return SP_OK;
}

/* The page's timeline section. */
static enum sp_err timeline(FILE *out, const struct sp_plot_file *events, const char *why_not,
			    const struct sp_plot_opts *o, struct sp_plot_info *in, struct sp_error *err)
{
	fputs("<section id=\"timeline-section\">\n<h2>Timeline</h2>\n", out);
	if (!events) {
		fputs("<p class=\"note\" id=\"no-timeline\">No timeline: ", out);
		sp_svg_text(out, why_not ? why_not : "no file has per-call events", 0);
		fputs("</p>\n</section>\n", out);
		return SP_OK;
	}
	char *json = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&json, &len);
	if (!m)
		return sp_error_set(err, SP_ENOMEM, "out of memory for the timeline");
	int windows = TL_WINDOWS;
	enum sp_err rc = timeline_json(m, events, o, in, &windows, err);
	if (fclose(m) != 0 && rc == SP_OK)
		rc = sp_error_set(err, SP_ENOMEM, "out of memory for the timeline");
	if (rc != SP_OK) {
		free(json);
		return rc;
	}
	char secs[64];
	fputs("<p class=\"note\">", out);
	sp_svg_text(out, events->name, 0);
	fputs(": one lane per rank and region, time in seconds since the first region entry. "
	      "Zoom with the mouse wheel or the + and \xe2\x88\x92 buttons, drag to pan, hover a bar for its "
	      "region, rank, start and duration.</p>\n", out);
	sp_render_duration(secs, sizeof secs, in->column_px);
	fputs("<p class=\"note\" id=\"tl-merge\">", out);
	if (in->merged)
		fprintf(out, "So that the page stays small, calls shorter than %s that start in the same "
			"%s window of a lane are merged into one bar (at most %d windows per lane across "
			"the run): %lld of %lld calls are in merged bars; %lld bars in all. Zooming in does "
			"not split them; the tooltip of a merged bar says how many calls it holds, and "
			"gantt_data.csv (--export-data) has every call.", secs, secs,
			windows,
			(long long)in->merged, (long long)in->calls, (long long)in->bars);
	else
		fprintf(out, "Every one of the %lld calls is a bar of its own.", (long long)in->calls);
	fputs("</p>\n<div id=\"tl-controls\"><button type=\"button\" id=\"tl-zoom-in\" title=\"zoom in\">+</button> "
	      "<button type=\"button\" id=\"tl-zoom-out\" title=\"zoom out\">\xe2\x88\x92</button> "
	      "<button type=\"button\" id=\"tl-reset\">whole run</button>"
	      "<fieldset id=\"rank-filter\"><legend>ranks shown</legend></fieldset></div>\n"
	      "<div id=\"timeline\"><div id=\"tl-labels\"></div><canvas id=\"tl-canvas\" width=\"800\" "
	      "height=\"40\"></canvas></div>\n<div id=\"tl-tip\" hidden></div>\n"
	      "<script type=\"application/json\" id=\"sp-data\">", out);
	script_safe(out, json, len);
	free(json);
	fputs("</script>\n<script>\n", out);
	fwrite(report_timeline_js, 1, report_timeline_js_len, out);
	fputs("</script>\n</section>\n", out);
	return SP_OK;
}

/* An SVG document inlined: without its XML declaration, which HTML has no
 * use for. */
static void inline_svg(FILE *out, const char *svg, size_t len)
{
	if (len >= 5 && memcmp(svg, "<?xml", 5) == 0) {
		const char *end = memchr(svg, '>', len);
		size_t skip = end ? (size_t)(end - svg) + 1 : 0;
		svg += skip;
		len -= skip;
		while (len && (*svg == '\n' || *svg == '\r')) {
			svg++;
			len--;
		}
	}
	fwrite(svg, 1, len, out);
}

enum sp_err sp_plot_report(FILE *out, const struct sp_plot_file *files, size_t n,
			   const struct sp_plot_file *events, const char *why_not,
			   const struct sp_plot_chart *charts, size_t ncharts,
			   const struct sp_plot_opts *o, struct sp_plot_info *info, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->sel : NULL;
	struct sp_plot_info in = {0};
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", out);
	fputs("scope-profiler report: ", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", " : "", out);
		sp_svg_text(out, files[i].name, 0);
	}
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>scope-profiler report</h1>\n"
		"<p class=\"note\">", css);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", " : "", out);
		sp_svg_text(out, files[i].name, 0);
	}
	fputs("</p>\n", out);
	enum sp_err rc = timeline(out, events, why_not, o, &in, err);
	if (rc != SP_OK)
		return rc;
	fputs("<section id=\"statistics\">\n<h2>Region statistics</h2>\n", out);
	struct sp_render_opts ro = {.select = sel, .html = 1, .top = SP_PLOT_TOP_ROWS};
	for (size_t i = 0; i < n; i++)
		if ((rc = sp_render_summary_opts(out, files[i].p, files[i].name, &ro, err)) != SP_OK)
			return rc;
	size_t most = 0;
	for (size_t i = 0; i < n; i++)
		most = files[i].p->nranks > most ? files[i].p->nranks : most;
	fputs("<p class=\"note\">Times in seconds; a recursive region's total counts its outermost calls.", out);
	if (most > 1)
		fputs(" With several ranks (or processes), calls and totals are summed over them; min/mean/max "
		      "rank (process) are each one's total in the region, imbalance the largest over the "
		      "smallest; \"ranks k/n\" (\"processes k/n\"): recorded on k of n.", out);
	fputs("</p>\n</section>\n", out);
	fputs("<section id=\"charts\">\n", out);
	for (size_t i = 0; i < ncharts; i++) {
		fputs("<div class=\"chart\" data-chart=\"", out);
		sp_svg_text(out, charts[i].name, 0);
		fputs("\">\n<h2>", out);
		sp_svg_text(out, charts[i].name, 0);
		fputs("</h2>\n", out);
		inline_svg(out, charts[i].svg, charts[i].len);
		fputs("</div>\n", out);
	}
	fputs("</section>\n</body>\n</html>\n", out);
	if (info)
		*info = in;
	return ferror(out) ? sp_error_set(err, SP_EIO, "writing report.html failed") : SP_OK;
}
