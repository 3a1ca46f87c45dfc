/* plot_int.h - what the SVG charts share (plot.c, plot_flame.c,
 * plot_charts.c, report_html.c): their defaults, the axis's drawing, numbers
 * and CSV fields. Private to src/report; the charts' data (the merging of
 * calls, the lanes, the axis, the tables) are sp_plot.h's. */
#ifndef SP_PLOT_INT_H
#define SP_PLOT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sp_plot.h"
#include "sp_render.h"              /* the time formats */

/* The defaults of struct sp_plot_opts. */
#define SP_PLOT_WIDTH 1200
#define SP_PLOT_BUDGET ((size_t)9 << 19)    /* 4.5 MiB */
/* So that a profile of thousands of regions gives pictures a screen or two
 * high: the Gantt chart's and the timeline's lanes, and the durations
 * charts' rows, are the heaviest regions' (by the summary's total), up to
 * these many, and one more line says how many were left out;
 * report.html's statistics table likewise. The CSVs and
 * region_statistics.json keep every one. */
#define SP_PLOT_MAX_LANES 40
#define SP_PLOT_MAX_ROWS 40
#define SP_PLOT_TOP_ROWS 100

/* Ticks, labels and the axis title under the plot area at y. */
void sp_plot_axis_draw(FILE *out, const struct sp_plot_axis *a, double top, double y);

/* The colours a chart of files[0..n) draws with: o's shared map, else one
 * built into *own from those files (sp_plot_colours_build). NULL out of
 * memory (err set). */
const struct sp_plot_colours *sp_plot_colours_for(const struct sp_plot_opts *o, const struct sp_plot_file *files,
						  size_t n, struct sp_plot_colours *own, struct sp_error *err);

/* A legend of names[0..n) in their colours at y, `cols` per row of colw px
 * from x, names cut in the middle; returns its height. */
double sp_plot_legend(FILE *out, const char *const *names, size_t n, const struct sp_plot_colours *colours,
		      double x, double y, double colw, int cols);

/* "... N more region(s), " then why, at y under a chart that left them
 * out (nothing when more is 0). */
void sp_plot_more(FILE *out, double y, size_t more, const char *why);

/* Writes s as a CSV field. */
void sp_plot_csv_name(FILE *out, const char *s);

#endif
