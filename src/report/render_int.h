/* render_int.h - what the renderer's files share (render.c, render_merge.c,
 * render_tree.c: the summary, whose view is render_view.h's; render_text.c:
 * text widths, padding, seconds). Private to src/report. */
#ifndef SP_RENDER_INT_H
#define SP_RENDER_INT_H

#include <stdint.h>
#include <stdio.h>

#include "sp_error.h"

/* A table is as narrow as its names allow; its name column may always grow to
 * NAME_CAP columns, and further only while the table stays within TABLE_CAP.
 * Longer labels are cut with an ellipsis. */
#define NAME_CAP 32
#define TABLE_CAP 100
#define SECS 9                         /* width of sp_render_seconds() */

/* Writes n spaces (none when n <= 0). */
void sp_render_pad(FILE *out, int n);

/* Writes a rule of n "─" and a newline. */
void sp_render_rule(FILE *out, int n);

/* sp_render_seconds without its leading padding, for use in a sentence;
 * points into buf. */
const char *sp_render_secs_trim(char *buf, size_t len, double ns);

/* The characters n takes in decimal, its sign included. */
int sp_render_digits(int64_t n);

/* Width of the name column: what the labels need, at least "region", within
 * the caps for a table whose other columns take rest. */
int sp_render_name_width(int need, int rest);

struct sp_profile;
struct sp_select;

/* The profile's rank numbers as a list in buf (",..." after the first 64),
 * for messages; returns buf. */
char *sp_render_rank_list(char *buf, size_t len, const struct sp_profile *p);

/* Child processes of the run (run --subprocesses) among p's ranks: those
 * with a parent_pid; 0 for every profile without them. */
size_t sp_render_children(const struct sp_profile *p);

/* SP_EINVAL with "[PATH: ]no rank selected: the profile has ranks 0-3"
 * (processes, for a run's child processes) in *err: a --ranks that picks
 * none of p's. path may be NULL. */
enum sp_err sp_render_none_selected(struct sp_error *err, const char *path, const struct sp_profile *p);

struct sp_rank;
/* A rank's label in per-rank rows and headings: "rank 3", or for a child
 * process of the run "process 3 (pid 1234)"; capitalised ("Rank 3",
 * "Process 3 (pid 1234)") when cap. Returns buf. */
char *sp_render_rank_label(char *buf, size_t len, const struct sp_rank *rk, int cap);

/* The summary's notes under its title: calls not recorded, the cores used
 * (several ranks with OpenMP), and what the selection sel kept (nrows of
 * nall regions; shown: the selected ranks of p). Cannot fail. */
void sp_render_notes(FILE *out, const struct sp_profile *shown, const struct sp_profile *p,
		     const struct sp_select *sel, size_t nrows, size_t nall);

/* The LIKWID counters of each rank that has them, after the summary's
 * tables (render_likwid.c); nothing without. 0, or -1 out of memory. */
int sp_render_likwid(FILE *out, const struct sp_profile *p);

#endif
