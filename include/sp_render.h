/* sp_render.h - terminal renderings of a profile: the call tree, the flat
 * region table and the per-line tables. Plain UTF-8 text, fitted to 80
 * columns where names allow (line tables: 100). */
#ifndef SP_RENDER_H
#define SP_RENDER_H

#include <stdio.h>

#include "sp_profile.h"

enum sp_render_parts {
	SP_RENDER_TREE = 1,
	SP_RENDER_FLAT = 2,
	SP_RENDER_ALL = 3,
};

/* Prints the summary of p (which must have stats and trees on every rank) to
 * out: a header line naming `title` (usually the file path), then the parts
 * asked for. Returns SP_EIO when writing to out failed. */
enum sp_err sp_render_summary(FILE *out, const struct sp_profile *p, const char *title,
			      int parts, struct sp_error *err);

/* Prints the per-line tables of p (every rank's line tables), one table per
 * function and rank: line, hits, time [s], per hit [s], % time, source,
 * under a header line naming `title`. Returns SP_ENOTPROF, printing nothing,
 * when no rank has a line table (err->msg then says so in one line and how to
 * record them); SP_EINVAL for a table without its columns; SP_ENOMEM; SP_EIO
 * when writing to out failed. */
enum sp_err sp_render_lines(FILE *out, const struct sp_profile *p, const char *title,
			    struct sp_error *err);

/* Formats a duration in nanoseconds as seconds into buf (9 visible chars,
 * e.g. " 0.002191", "12.345678", "  12345.7"). Returns buf. */
char *sp_render_seconds(char *buf, size_t len, double ns);

/* Terminal columns of the UTF-8 text s: East Asian wide characters count 2,
 * combining marks 0; malformed bytes and control characters (tabs included)
 * count 1, as the '?' they are printed as. */
int sp_render_text_width(const char *s);

/* Writes s in at most maxw columns, cut with "…" when wider, malformed bytes
 * and control characters as '?'. Returns the columns written (no padding). */
int sp_render_text(FILE *out, const char *s, int maxw);

#endif
