/* sp_render.h - terminal renderings of a profile: the call tree and the flat
 * region table. Plain UTF-8 text, fitted to 80 columns where names allow. */
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
 * function and rank: line, hits, time [s], per hit [s], % time, source;
 * or one line saying the profile has no line timings. Returns SP_EIO when
 * writing failed. */
enum sp_err sp_render_lines(FILE *out, const struct sp_profile *p, const char *title,
			    struct sp_error *err);

/* Formats a duration in nanoseconds as seconds into buf (9 visible chars,
 * e.g. " 0.002191", "12.345678", "  12345.7"). Returns buf. */
char *sp_render_seconds(char *buf, size_t len, double ns);

#endif
