/* svg.c - the charts' SVG writer: escaping, the document frame, labels and
 * the region palette (svg.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sp_json.h"
#include "svg.h"

/* Colours that stay apart on white and from each other, chosen for this
 * tool; dark enough for white text where a box holds a label. */
static const char *const palette[SP_SVG_NCOLOURS] = {
	"#3b75af", "#ef8636", "#519e3e", "#c53a32", "#8d69b8",
	"#84584e", "#d57dbe", "#7f7f7f", "#b5bd61", "#42bccd",
	"#1f4e79", "#b35806", "#2d6a2d", "#8c1d1d", "#5b3f8a",
	"#a0785a", "#c2477f", "#4d4d4d", "#8a8c2c", "#1b8a99",
};

const char *sp_svg_colour(const char *name)
{
	uint32_t h = 2166136261u;              /* FNV-1a */
	for (const unsigned char *q = (const unsigned char *)name; *q; q++)
		h = (h ^ *q) * 16777619u;
	return palette[h % SP_SVG_NCOLOURS];
}

const char *sp_svg_series_colour(size_t i)
{
	return palette[i % SP_SVG_NCOLOURS];
}

size_t sp_svg_chars(const char *s)
{
	size_t n = 0;
	uint32_t cp;
	for (const unsigned char *q = (const unsigned char *)s; *q; n++) {
		size_t len = sp_utf8_seq(q, &cp);
		q += len ? len : 1;
	}
	return n;
}

void sp_svg_text(FILE *out, const char *s, size_t max_chars)
{
	const unsigned char *q = (const unsigned char *)s;
	uint32_t cp;
	size_t n = 0;
	while (*q) {
		if (max_chars && n == max_chars) {
			fputs("\xe2\x80\xa6", out);    /* … */
			return;
		}
		size_t len = sp_utf8_seq(q, &cp);
		n++;
		if (!len) {
			fputs("\xef\xbf\xbd", out);    /* U+FFFD */
			q++;
			continue;
		}
		switch (cp) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		/* As references: an attribute value keeps them so (a raw one
		 * is read back as a space). */
		case '\t': fputs("&#9;", out); break;
		case '\n': fputs("&#10;", out); break;
		case '\r': fputs("&#13;", out); break;
		default:
			if (cp < 0x20 || cp == 0x7f || cp == 0xfffe ||
			    cp == 0xffff)
				fputs("\xef\xbf\xbd", out);
			else
				fwrite(q, 1, len, out);
		}
		q += len;
	}
	/* a string exactly max_chars long needs no ellipsis */
}

void sp_svg_text_mid(FILE *out, const char *s, size_t max_chars)
{
	size_t n = sp_svg_chars(s);
	if (!max_chars || n <= max_chars || max_chars < 8) {
		sp_svg_text(out, s, max_chars);
		return;
	}
	size_t head = (max_chars - 1) / 3, skip = n - (max_chars - 1 - head);
	sp_svg_text(out, s, head);             /* head characters and "…" */
	const unsigned char *q = (const unsigned char *)s;
	uint32_t cp;
	for (size_t i = 0; i < skip && *q; i++) {
		size_t len = sp_utf8_seq(q, &cp);
		q += len ? len : 1;
	}
	sp_svg_text(out, (const char *)q, 0);
}

void sp_svg_begin(FILE *out, int width, int height, const char *title)
{
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\""
		" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n<title>",
		width, height, width, height);
	sp_svg_text(out, title, 0);
	fprintf(out, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
}

void sp_svg_end(FILE *out)
{
	fputs("</svg>\n", out);
}

static void label(FILE *out, double x, double y, const char *anchor, const char *extra,
		  const char *s, size_t max_chars, int mid)
{
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
	if (anchor && strcmp(anchor, "start") != 0)
		fprintf(out, " text-anchor=\"%s\"", anchor);
	if (extra)
		fprintf(out, " %s", extra);
	fputc('>', out);
	(mid ? sp_svg_text_mid : sp_svg_text)(out, s, max_chars);
	fputs("</text>\n", out);
}

void sp_svg_label(FILE *out, double x, double y, const char *anchor, const char *extra,
		  const char *s, size_t max_chars)
{
	label(out, x, y, anchor, extra, s, max_chars, 0);
}

void sp_svg_label_mid(FILE *out, double x, double y, const char *anchor, const char *extra,
		      const char *s, size_t max_chars)
{
	label(out, x, y, anchor, extra, s, max_chars, 1);
}

double sp_svg_tick_step(double span, int ticks)
{
	if (!(span > 0) || !isfinite(span) || ticks < 1)
		return 1;
	double raw = span / ticks, p = pow(10, floor(log10(raw)));
	double m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

char *sp_svg_number(char *buf, size_t len, double v, double step)
{
	int dec = 0;
	if (step > 0 && step < 1)
		dec = (int)ceil(-log10(step) - 1e-9);
	if (dec > 9)
		dec = 9;
	if (fabs(v) < step * 1e-6)
		v = 0;                         /* no "-0" */
	snprintf(buf, len, "%.*f", dec, v);
	return buf;
}
