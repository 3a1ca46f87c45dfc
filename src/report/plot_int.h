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

/* The defaults of struct sp_plot_opts. */
#define SP_PLOT_WIDTH 1200
#define SP_PLOT_BUDGET ((size_t)9 << 19)    /* 4.5 MiB */

/* Ticks, labels and the axis title under the plot area at y. */
void sp_plot_axis_draw(FILE *out, const struct sp_plot_axis *a, double top, double y);

/* ns as seconds with 9 decimals, exactly. */
void sp_plot_secs(FILE *out, int64_t ns);

/* Writes s as a CSV field. */
void sp_plot_csv_name(FILE *out, const char *s);

#endif
