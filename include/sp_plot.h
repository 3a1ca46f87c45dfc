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

struct sp_plot_opts {
	const struct sp_select *sel;   /* regions and ranks to draw; NULL: all */
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
 * then by first entry), every call a bar in its region's colour, axes,
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
