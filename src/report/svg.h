/* svg.h - the small SVG 1.1 writer of the charts (plot.c): a standalone
 * document (xmlns, viewBox, width and height), XML-escaped text, the
 * region palette. Private to src/report. */
#ifndef SP_SVG_H
#define SP_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes s as XML character data or attribute text: & < > " ' as entities,
 * well-formed UTF-8 kept, each malformed byte as U+FFFD, control characters
 * other than tab and line feed (which XML 1.0 does not allow) as U+FFFD too.
 * At most max_chars characters (0: all), then "…" when s was longer. */
void sp_svg_text(FILE *out, const char *s, size_t max_chars);

/* sp_svg_text cut in the middle, as the summary cuts names: the first third
 * of max_chars, "…", then the end of s (a qualified name's last part tells
 * rows apart). max_chars below 8: cut at the end. */
void sp_svg_text_mid(FILE *out, const char *s, size_t max_chars);

/* The characters (code points, malformed bytes one each) of s. */
size_t sp_svg_chars(const char *s);

/* The XML declaration and the <svg> element, width x height pixels (also the
 * viewBox), with a white background, a default font and <title>title</title>. */
void sp_svg_begin(FILE *out, int width, int height, const char *title);

/* Closes the <svg> element. */
void sp_svg_end(FILE *out);

/* <text x y [anchor]>s</text>: anchor "start", "middle" or "end"; extra is
 * written inside the tag as it is (e.g. "font-size=\"11\""), or NULL. */
void sp_svg_label(FILE *out, double x, double y, const char *anchor, const char *extra,
		  const char *s, size_t max_chars);

/* The colour of a region beyond the heaviest SP_SVG_NCOLOURS (sp_plot_colour
 * gives those the palette in order): one of the palette chosen by a hash of
 * its name. "#rrggbb". */
#define SP_SVG_NCOLOURS 20
const char *sp_svg_colour(const char *name);

/* The colour of the i-th of several series (files), cycling the palette. */
const char *sp_svg_series_colour(size_t i);

/* The most ticks an axis loop draws, whatever its numbers (an infinite or
 * huge top must not loop for ever). */
#define SP_SVG_MAX_TICKS 200

/* sp_svg_label with s cut in the middle (sp_svg_text_mid). */
void sp_svg_label_mid(FILE *out, double x, double y, const char *anchor, const char *extra,
		      const char *s, size_t max_chars);

/* A "nice" tick step (1, 2 or 5 times a power of ten) for an axis of span
 * units with at most about `ticks` ticks; 1 when span <= 0. */
double sp_svg_tick_step(double span, int ticks);

/* A number as an axis label: the fewest decimals that show step's
 * precision ("0", "0.25", "1200"), into buf. Returns buf. */
char *sp_svg_number(char *buf, size_t len, double v, double step);

#endif
