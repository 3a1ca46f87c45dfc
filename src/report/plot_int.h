/* plot_int.h - the merging of calls narrower than a pixel column, shared by
 * the Gantt and flame charts (plot.c, plot_flame.c). Private to src/report. */
#ifndef SP_PLOT_INT_H
#define SP_PLOT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sp_plot.h"

/* The defaults of struct sp_plot_opts. */
#define SP_PLOT_WIDTH 1200
#define SP_PLOT_BUDGET ((size_t)9 << 19)    /* 4.5 MiB */

/* A bar: x0..x1 in pixels from the plot's left edge; the calls it holds
 * (first is the index given with the first of them). */
struct sp_plot_bar {
	double x0, x1;
	size_t first;
	int64_t calls;
};

/* One lane's merging. Calls come in start order. A call at least colw wide
 * is a bar of its own; narrower ones starting in the same column (x0 / colw)
 * one after the other share one bar, from the first one's start to the
 * latest end. emit (when not NULL) gets each bar once it is complete; bars
 * and merged count them. */
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
};

/* The lanes of f: selected ranks x selected regions with events, by rank,
 * then by first entry; *out malloc'd. SP_EINVAL when there are none (err
 * names f), SP_ENOMEM. */
enum sp_err sp_plot_lanes(const struct sp_plot_file *f, const struct sp_select *sel,
			  struct sp_plot_lane **out, size_t *n, struct sp_error *err);

/* The x axis and frame shared by the Gantt and flame charts. */
struct sp_plot_axis {
	int64_t t0, span;              /* ns: the file's first region entry, and on */
	double left, width;            /* the plot area, px */
	double k;                      /* px per ns */
};

/* t0 (the file's first entry) and span (to the selected ranks' last end):
 * 1; 0 when no selected rank has calls; -1 when the span passes 2^63 ns. */
int sp_plot_axis_init(struct sp_plot_axis *a, const struct sp_profile *p, const struct sp_select *sel,
		      double left, double width);

/* Ticks, labels and the axis title under the plot area at y. */
void sp_plot_axis_draw(FILE *out, const struct sp_plot_axis *a, double top, double y);

/* ns as seconds with 9 decimals, exactly. */
void sp_plot_secs(FILE *out, int64_t ns);

/* Writes s as a CSV field. */
void sp_plot_csv_name(FILE *out, const char *s);

#endif
