/* sp_plot.h - the charts of `scope-profiler plot` as standalone SVG 1.1
 * documents (Gantt, flame, durations, speedup), the data behind each as CSV,
 * and region_statistics.json. Each chart is one call writing to a FILE *
 * (open_memstream(3) gives it as a string, e.g. for an HTML report).
 *
 * Times on the Gantt and flame charts are seconds from the file's first
 * region entry (of any rank, whatever ranks are selected), as the seed's
 * charts frame them (not the run start: a long startup would fill the chart
 * with empty space). So that any profile
 * plots in seconds and fits a file of a few MiB, calls narrower than a pixel
 * column are merged into one bar per lane and column; the chart says so in a
 * note line, and each merged bar carries the number of calls it holds in its
 * sp:calls attribute (namespace SP_PLOT_NS). */
#ifndef SP_PLOT_H
#define SP_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sp_error.h"
#include "sp_profile.h"
#include "sp_select.h"

/* The namespace of the charts' own attributes: sp:region and sp:rank on a
 * lane's group, sp:calls on a bar that holds several calls. */
#define SP_PLOT_NS "urn:scope-profiler:plot"

/* One profile to plot. */
struct sp_plot_file {
	const char *name;              /* as the charts and the JSON name it: its path */
	const struct sp_profile *p;    /* read with SP_READ_EVENTS */
};

struct sp_plot_colours;

struct sp_plot_opts {
	const struct sp_select *sel;   /* regions and ranks to draw; NULL: all */
	const struct sp_plot_colours *colours; /* the regions' colours, shared by every
					* chart of a plot; NULL: each chart ranks its
					* own files' regions (sp_plot_colours_build) */
	int width;                     /* pixels; 0: 1200 */
	size_t max_bytes;              /* a chart's budget; 0: 4.5 MiB. Columns widen
					* (1, 2, 4 ... px) until the bars fit it */
};

/* What a Gantt or flame chart drew. */
struct sp_plot_info {
	int64_t calls;                 /* calls drawn */
	int64_t bars;                  /* bars (boxes) written */
	int64_t merged;                /* calls that share a bar with others */
	double column_px;              /* the merging column's width */
};

/* 1 when some selected region of a selected rank of p has per-call events
 * (a file recorded in aggregation mode has none). */
int sp_plot_has_events(const struct sp_profile *p, const struct sp_select *sel);

/* The Gantt chart of f into svg: one lane per selected rank x region (by rank,
 * then heaviest total first; the lanes of the heaviest regions, at most
 * 40, and a line saying how many regions were left out),
 * every call a bar in its region's colour, axes,
 * legend, title. When csv is not NULL, writes "rank,region,start,end,duration"
 * and one line per call to it (seconds from the same origin). info may be
 * NULL. SP_EINVAL when no selected rank has events of a selected region (err
 * says which), SP_ENOMEM, SP_EIO when writing failed. */
enum sp_err sp_plot_gantt(FILE *svg, FILE *csv, const struct sp_plot_file *f,
			  const struct sp_plot_opts *o, struct sp_plot_info *info, struct sp_error *err);

/* The flame (icicle) chart of f: per selected rank (and thread lane), the
 * call stacks over time, depth downwards, nested by sp_nest.h's rule among
 * the selected regions; every box has a <title> (name, start, duration). csv:
 * "rank,depth,region,start,duration". Failures as sp_plot_gantt. */
enum sp_err sp_plot_flame(FILE *svg, FILE *csv, const struct sp_plot_file *f,
			  const struct sp_plot_opts *o, struct sp_plot_info *info, struct sp_error *err);

/* The merged (left-heavy) flame graph of f: the summary's call tree of the
 * selected ranks and regions (ranks merged by path), each entry a box as
 * wide as its total, the heaviest child leftmost, depth downwards; boxes
 * narrower than a threshold (0.5 px, wider until the chart fits its budget)
 * are left out with their subtrees and counted in a note. Every box has a
 * <title> (name, total, share, calls) and sp:calls. csv: "path,calls,total"
 * (path: the names joined by ';'), every entry. SP_EINVAL when there is no
 * call tree of a selected region; SP_ENOMEM, SP_EIO. */
enum sp_err sp_plot_flamegraph(FILE *svg, FILE *csv, const struct sp_plot_file *f,
			       const struct sp_plot_opts *o, struct sp_error *err);

enum sp_plot_metric {
	SP_PLOT_AVG, SP_PLOT_MIN, SP_PLOT_MAX, SP_PLOT_TOTAL, SP_PLOT_NMETRICS
};
/* "avg", "min", "max", "total": the names of --metrics and of the files. */
extern const char *const sp_plot_metric_names[SP_PLOT_NMETRICS];

/* The region durations of files[0..n) in one metric over the selected ranks'
 * calls (avg: per call; total: summed over ranks): one row per region,
 * heaviest total first, one bar per file side by side, a legend naming the
 * files. Aggregation-mode files work (their statistics suffice). csv (once,
 * for all metrics in `metrics`, a bit set of 1 << metric): "file,region,
 * metric,value". SP_EINVAL when no file has a selected region. */
enum sp_err sp_plot_durations(FILE *svg, const struct sp_plot_file *files, size_t n,
			      enum sp_plot_metric m, const struct sp_plot_opts *o, struct sp_error *err);
enum sp_err sp_plot_durations_csv(FILE *csv, const struct sp_plot_file *files, size_t n,
				  unsigned metrics, const struct sp_plot_opts *o, struct sp_error *err);

/* What a run's size is measured in, on the speedup chart's x axis. */
enum sp_plot_xfield {
	SP_PLOT_X_RANKS,               /* the file's number of ranks */
	SP_PLOT_X_OMP,                 /* /metadata omp_num_threads */
	SP_PLOT_X_CORES,               /* /metadata total_cores; else ranks x omp_num_threads,
					* else ranks */
};

/* Each file's x value into x[0..n) (NAN when its metadata lacks the field or
 * it is not a positive number); returns how many distinct values there are. */
size_t sp_plot_speedup_xs(const struct sp_plot_file *files, size_t n, enum sp_plot_xfield xf,
			  double *x);

/* Per region, the speedup of every run against the smallest (the first file
 * of the smallest x): its time (the slowest selected rank's total in the
 * region) over each run's, against x, with the ideal line x / x_min. csv:
 * "region,x,time,speedup". SP_EINVAL when fewer than two distinct x values
 * are known (err says so). */
enum sp_err sp_plot_speedup(FILE *svg, FILE *csv, const struct sp_plot_file *files, size_t n,
			    enum sp_plot_xfield xf, const struct sp_plot_opts *o, struct sp_error *err);

/* ---- the charts' data ------------------------------------------------------
 * What the SVG charts above draw, for any other drawing of them (the read
 * API's matplotlib charts, src/python/charts.c): one rule each for the
 * merging of narrow calls, the lanes, the time axis, the flame chart's rows
 * and the regions joined by name across ranks and files. */

/* A bar: x0..x1 on the axis (px from the plot's left edge); the calls it
 * holds (first is the index given with the first of them, and its calls
 * those given after it, up to calls of them). */
struct sp_plot_bar {
	double x0, x1;
	size_t first;
	int64_t calls;
};

/* One lane's merging. Calls come in start order. A call at least colw wide
 * is a bar of its own; narrower ones starting in the same column (x0 / colw)
 * one after the other share one bar, from the first one's start to the
 * latest end (colw 0: every call a bar). emit (when not NULL) gets each bar
 * once it is complete; bars and merged count them. */
struct sp_plot_merge {
	double colw;
	void (*emit)(void *ctx, const struct sp_plot_bar *b);
	void *ctx;
	int64_t bars, merged;
	int pending;
	struct sp_plot_bar p;
};

void sp_plot_merge_call(struct sp_plot_merge *m, double x0, double x1, size_t index);
/* Emits the bar still open; call at the end of each lane. */
void sp_plot_merge_flush(struct sp_plot_merge *m);

/* A lane of the Gantt chart and of report.html's timeline: one rank's
 * region. */
struct sp_plot_lane {
	const struct sp_rank *rk;
	const struct sp_region_data *rd;
	int64_t total;                 /* the region's total on the rank, as the
					* summary counts it (sp_rank_region_times) */
};

/* The lanes of f: selected ranks x selected regions with events, by rank,
 * then heaviest total on that rank first (then name); *out malloc'd.
 * SP_EINVAL when there are none (err names f), SP_ENOMEM. */
enum sp_err sp_plot_lanes(const struct sp_plot_file *f, const struct sp_select *sel,
			  struct sp_plot_lane **out, size_t *n, struct sp_error *err);

/* Keeps, of the lanes l[0..n) in their order, those of the heaviest regions
 * (their totals summed over the lanes' ranks) while they make at most max
 * lanes (the heaviest region's always); returns how many are kept, at the
 * front of l, and the regions left out in *more. -1 out of memory (l
 * unchanged). */
long sp_plot_lanes_top(struct sp_plot_lane *l, size_t n, size_t max, size_t *more);

/* The x axis and frame shared by the Gantt and flame charts. */
struct sp_plot_axis {
	int64_t t0, span;              /* ns: the file's first region entry, and on */
	double left, width;            /* the plot area, px */
	double k;                      /* px per ns */
};

/* t0 (the file's first entry, whatever ranks are selected) and span (to the
 * selected ranks' last end, whatever regions are): 1; 0 when no selected
 * rank has calls; -1 when the span passes 2^63 ns. */
int sp_plot_axis_init(struct sp_plot_axis *a, const struct sp_profile *p, const struct sp_select *sel,
		      double left, double width);

/* Merges the calls of a Gantt lane (rd's, in start order) on axis a into m,
 * each given its index in rd; the lane's last bar is flushed. */
void sp_plot_gantt_lane(struct sp_plot_merge *m, const struct sp_plot_axis *a, const struct sp_region_data *rd);

/* A call of the flame chart, as it is placed. */
struct sp_plot_fcall {
	int64_t start, end;
	uint64_t pos;                  /* the nesting walk's order */
	int32_t region;                /* index into its rank's regions */
	int32_t lane;
	uint32_t depth;                /* among the selected regions' calls */
	int32_t rank;                  /* index into p->ranks */
};

/* The calls of the selected regions of f's selected ranks, nested by
 * sp_nest.h's rule among themselves, by rank, lane, depth, then start (a
 * row of the chart after the other); *out malloc'd. SP_EINVAL when there
 * are none (err names f), SP_ENOMEM. */
enum sp_err sp_plot_flame_calls(const struct sp_plot_file *f, const struct sp_select *sel,
				struct sp_plot_fcall **out, size_t *n, struct sp_error *err);

/* Merges c[0..n) (sp_plot_flame_calls' order) on axis a into m row by row,
 * each call given its index in c: a box never spans two rows (rank, lane,
 * depth), but may hold calls of several regions. */
void sp_plot_flame_merge(struct sp_plot_merge *m, const struct sp_plot_axis *a,
			 const struct sp_plot_fcall *c, size_t n);

/* A region's figures in one file over the selected ranks that have calls.
 * Totals are the summary's (sp_rank_region_times: a recursive region's
 * nested calls not counted again); raw_total sums every call, for the mean
 * per call. */
struct sp_plot_value {
	int present;                   /* some selected rank has calls */
	int64_t calls, total, min, max;
	int64_t slowest;               /* the largest selected rank's total */
	int64_t raw_total;
};

/* One region across the files: the durations chart's row, the speedup
 * chart's line. */
struct sp_plot_row {
	const char *name;              /* borrowed from the files */
	struct sp_plot_value *v;       /* one per file */
	int64_t total;                 /* over the files: the order */
};

struct sp_plot_table {
	struct sp_plot_row *rows;      /* heaviest total first, then by name */
	size_t n;
	struct sp_plot_value *vals;
};

/* The selected regions with calls of the selected ranks of files[0..nf),
 * joined by name (byname.h). SP_EINVAL when there is none, SP_ENOMEM. */
enum sp_err sp_plot_table_build(struct sp_plot_table *t, const struct sp_plot_file *files, size_t nf,
				const struct sp_select *sel, struct sp_error *err);
void sp_plot_table_free(struct sp_plot_table *t);

/* The regions' colours: the heaviest SP_PLOT_NCOLOURS regions by total (the
 * summary's, over the files and selected ranks) get the palette's colours
 * in order, so that they all differ; any other region a colour by a hash of
 * its name. One map serves every chart and report.html's timeline, so a
 * region has one colour in them all. Names are borrowed from the table's
 * files. */
#define SP_PLOT_NCOLOURS 20
struct sp_plot_colours {
	const char *top[SP_PLOT_NCOLOURS];
	size_t n;
};

/* The map of t's first (heaviest) rows. */
void sp_plot_colours_of(struct sp_plot_colours *c, const struct sp_plot_table *t);

/* The map of files[0..nf) under sel (the table's regions); an empty map (every
 * colour hashed) when they have no selected region with calls. SP_ENOMEM
 * only. */
enum sp_err sp_plot_colours_build(struct sp_plot_colours *c, const struct sp_plot_file *files, size_t nf,
				  const struct sp_select *sel, struct sp_error *err);

/* The colour of region name, "#rrggbb". c NULL: hashed. */
const char *sp_plot_colour(const struct sp_plot_colours *c, const char *name);

/* The value of metric m in seconds (v present). */
double sp_plot_value_of(const struct sp_plot_value *v, enum sp_plot_metric m);

/* region_statistics.json: {"files": [...]}, each file's object being
 * `summary --json`'s (calls, total/mean/min/max/std seconds, per-rank
 * min/mean/max totals and imbalance per region). Failures as
 * sp_render_summary_opts. */
enum sp_err sp_plot_statistics(FILE *out, const struct sp_plot_file *files, size_t n,
			       const struct sp_plot_opts *o, struct sp_error *err);

/* One chart of a run, as report.html inlines it: its file name in DIR and
 * the SVG document the file holds (svg[0..len)). */
struct sp_plot_chart {
	const char *name;
	const char *svg;
	size_t len;
};

/* report.html: one self-contained page (nothing fetched: inline CSS, SVG and
 * script) with the charts[0..ncharts) inlined, each file's region statistics
 * as an HTML table (sp_render_opts.html), and an interactive timeline of
 * events' calls drawn by an inline script (one lane per selected rank x
 * region, zoom, pan, tooltips, a rank filter) from JSON embedded in the page.
 * So that the page stays a few MiB, calls narrower than a window of the
 * span are merged per lane (a few thousand windows at most, fewer when the
 * bars would exceed the budget), and the page says so. events NULL: no
 * timeline, and the page says why_not instead. info (may be NULL) gets what
 * the timeline drew (column_px: the merging window in ns). Failures as
 * sp_plot_gantt and sp_plot_statistics. */
enum sp_err sp_plot_report(FILE *out, const struct sp_plot_file *files, size_t n,
			   const struct sp_plot_file *events, const char *why_not,
			   const struct sp_plot_chart *charts, size_t ncharts,
			   const struct sp_plot_opts *o, struct sp_plot_info *info, struct sp_error *err);

#endif
