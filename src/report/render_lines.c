/* render_lines.c - the per-line tables of --line-profile: hits, time and source
 * per line, kernprof's way: one timer unit for every table (said once at the
 * top), each function's total time, whole source lines where the width
 * allows. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sp_json.h"
#include "sp_render.h"
#include "sp_table.h"
#include "render_int.h"

#define TABLE_CAP 100                  /* columns a table (and a heading) may take by default */
#define UNIT_NS 1000.0                 /* the timer unit of the time columns: 1 µs */
#define TAB 8                          /* tab stops in source lines */
#define SRC_MIN 6                      /* the source column: never narrower than "source" */
#define NCOLS 6
#define CELL 32                        /* room for one formatted number */

static const char *const headers[NCOLS] = {
	"line", "hits", "time [µs]", "per hit [µs]", "% time", "source",
};

/* A table being laid out: the shown rows, the columns' widths, the dedent. */
struct layout {
	const struct sp_line_table *t;
	size_t first, last;            /* shown rows: first..last hit line; first > last: none */
	size_t indent;                 /* common leading blanks of the shown rows */
	double total;                  /* the table's time, ns */
	int w[NCOLS];                  /* content widths */
	int cap;                       /* the columns the table may take */
	char *buf;                     /* scratch for one expanded source line */
};

/* Bytes a source line may need once its tabs are expanded, with the NUL. */
static size_t expanded_size(const char *s)
{
	size_t n = 1;
	for (; *s; s++)
		n += *s == '\t' ? TAB : 1;
	return n;
}

/* Copies source line s into buf (expanded_size(s) bytes) with tabs expanded
 * to the next multiple of TAB columns (a column is a character here) and any
 * trailing "\r" or "\n" dropped. Returns the number of leading blanks, or
 * SIZE_MAX for a blank line. */
static size_t expand(char *buf, const char *s)
{
	size_t col = 0;
	char *o = buf;
	for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
		if (*q == '\t') {
			do {
				*o++ = ' ';
			} while (++col % TAB);
		} else {
			*o++ = (char)*q;
			col += (*q & 0xc0) != 0x80;
		}
	}
	while (o > buf && (o[-1] == '\n' || o[-1] == '\r'))
		o--;
	*o = '\0';
	size_t lead = strspn(buf, " ");
	return buf[lead] ? lead : SIZE_MAX;
}

/* The source of shown row i, expanded and dedented, in l->buf. */
static const char *row_source(struct layout *l, size_t i)
{
	const char *s = l->t->source[i] ? l->t->source[i] : "";
	if (expand(l->buf, s) == SIZE_MAX)
		return "";
	return l->buf + l->indent;
}

/* The numeric cells of row i (empty for a line without hits). */
static void row_cells(const struct layout *l, size_t i, char cells[NCOLS - 1][CELL])
{
	const struct sp_line_table *t = l->t;
	snprintf(cells[0], CELL, "%lld", (long long)t->first_line + (long long)i);
	if (t->hits[i] <= 0) {
		for (int c = 1; c < NCOLS - 1; c++)
			cells[c][0] = '\0';
		return;
	}
	double ns = (double)t->time_ns[i];
	snprintf(cells[1], CELL, "%lld", (long long)t->hits[i]);
	snprintf(cells[2], CELL, "%.1f", ns / UNIT_NS);
	snprintf(cells[3], CELL, "%.1f", ns / (double)t->hits[i] / UNIT_NS);
	if (l->total > 0)
		snprintf(cells[4], CELL, "%.2f", 100.0 * ns / l->total);
	else
		snprintf(cells[4], CELL, "-");
}

/* Finds the shown rows, the dedent and the widths of table t; buf must hold
 * any of its lines expanded. */
static void layout_table(struct layout *l, const struct sp_line_table *t, char *buf, int cap)
{
	*l = (struct layout){.t = t, .first = 1, .last = 0, .indent = SIZE_MAX, .buf = buf, .cap = cap};
	for (size_t i = 0; i < t->n; i++) {
		l->total += (double)t->time_ns[i];
		if (t->hits[i] > 0) {
			if (l->first > l->last)
				l->first = i;
			l->last = i;
		}
	}
	for (int c = 0; c < NCOLS; c++)
		l->w[c] = sp_render_text_width(headers[c]);
	if (l->first > l->last)
		return;
	for (size_t i = l->first; i <= l->last; i++) {
		size_t lead = expand(buf, t->source[i] ? t->source[i] : "");
		l->indent = lead < l->indent ? lead : l->indent;
	}
	if (l->indent == SIZE_MAX)
		l->indent = 0;                 /* every shown line is blank */
	int others = 1;                        /* the left border */
	for (size_t i = l->first; i <= l->last; i++) {
		char cells[NCOLS - 1][CELL];
		row_cells(l, i, cells);
		for (int c = 0; c < NCOLS - 1; c++) {
			int cw = (int)strlen(cells[c]);
			l->w[c] = cw > l->w[c] ? cw : l->w[c];
		}
		int sw = sp_render_text_width(row_source(l, i));
		l->w[NCOLS - 1] = sw > l->w[NCOLS - 1] ? sw : l->w[NCOLS - 1];
	}
	/* The source column takes what the numbers leave of the width. */
	for (int c = 0; c < NCOLS - 1; c++)
		others += l->w[c] + 3;
	int room = cap - others - 3;
	room = room > SRC_MIN ? room : SRC_MIN;
	l->w[NCOLS - 1] = l->w[NCOLS - 1] < room ? l->w[NCOLS - 1] : room;
}

/* Shares room columns among k texts of widths w[] (replaced by what each
 * gets): a text narrower than its share keeps its width, and what it leaves
 * goes to the others. */
static void fair_share(int *w, int k, int room)
{
	unsigned done = 0;
	int rest = k;
	while (rest > 0) {
		int share = room / rest, changed = 0;
		for (int i = 0; i < k; i++)
			if (!(done & 1u << i) && w[i] <= share) {
				room -= w[i];
				rest--;
				done |= 1u << i;
				changed = 1;
			}
		if (!changed) {
			for (int i = 0; i < k; i++)
				if (!(done & 1u << i))
					w[i] = share;
			return;
		}
	}
}

/* "Rank <r> | <region> | <function> (<basename>:<first_line>)" ("Process
 * <r> (pid <pid>) | ..." for a child process of the run), the three texts
 * cut so that the heading fits TABLE_CAP columns. */
static void heading(FILE *out, const struct sp_rank *rk, const struct sp_line_table *t, int cap)
{
	const char *file = t->filename ? t->filename : "", *base = strrchr(file, '/');
	const char *text[3] = {t->region ? t->region : "", t->function ? t->function : "",
			       base && base[1] ? base + 1 : file};
	char head[64], label[48], tail[32];
	int hl = snprintf(head, sizeof head, "%s | ", sp_render_rank_label(label, sizeof label, rk, 1));
	int tl = snprintf(tail, sizeof tail, ":%d)", (int)t->first_line);
	int w[3], room = cap - hl - 3 - 2 - tl;
	for (int i = 0; i < 3; i++)
		w[i] = sp_render_text_width(text[i]);
	fair_share(w, 3, room > 3 * 8 ? room : 3 * 8);
	fputs(head, out);
	sp_render_text(out, text[0], w[0]);
	fputs(" | ", out);
	sp_render_text(out, text[1], w[1]);
	fputs(" (", out);
	sp_render_text(out, text[2], w[2]);
	fprintf(out, "%s\n", tail);
}

static void border(FILE *out, const struct layout *l, const char *left, const char *mid,
		   const char *right)
{
	fputs(left, out);
	for (int c = 0; c < NCOLS; c++) {
		for (int k = 0; k < l->w[c] + 2; k++)
			fputs("─", out);
		fputs(c < NCOLS - 1 ? mid : right, out);
	}
	putc('\n', out);
}

/* One row: each cell left-aligned between one blank on either side. */
static void row(FILE *out, const struct layout *l, const char *const cells[NCOLS])
{
	struct sp_table_col cols[NCOLS];
	for (int c = 0; c < NCOLS; c++)
		cols[c] = (struct sp_table_col){ c ? " │ " : "│ ", SP_TABLE_LEFT, l->w[c] };
	sp_table_row(out, cols, NCOLS, cells, " │\n");
}

static void render_table(FILE *out, const struct sp_rank *rk, struct layout *l)
{
	char total[32];
	heading(out, rk, l->t, l->cap < TABLE_CAP ? l->cap : TABLE_CAP);
	if (l->first > l->last) {
		fputs("(no line executed)\n", out);
		return;
	}
	fprintf(out, "Total time: %s\n", sp_render_duration(total, sizeof total, l->total));
	border(out, l, "╭", "┬", "╮");
	row(out, l, headers);
	border(out, l, "├", "┼", "┤");
	for (size_t i = l->first; i <= l->last; i++) {
		char cells[NCOLS - 1][CELL];
		row_cells(l, i, cells);
		const char *const text[NCOLS] = {cells[0], cells[1], cells[2], cells[3], cells[4],
						 row_source(l, i)};
		row(out, l, text);
	}
	border(out, l, "╰", "┴", "╯");
}

/* Prints every rank's line tables, in rank order and then table order.
 * Returns SP_ENOTPROF (nothing printed, err says how to record line timings)
 * when no rank has a table, SP_EINVAL for a table without its columns,
 * SP_ENOMEM (nothing printed) when out of memory, SP_EIO when writing to out
 * failed. Tabs in source lines expand to every 8th column before the common
 * indentation of the shown rows is removed. */
enum sp_err sp_render_lines(FILE *out, const struct sp_profile *p, const char *title,
			    struct sp_error *err)
{
	return sp_render_lines_opts(out, p, title, NULL, err);
}

/* Table k of rank rk is shown under sel. */
static int shown(const struct sp_select *sel, const struct sp_rank *rk, const struct sp_line_table *t)
{
	return sp_select_rank(sel, rk->rank) && sp_select_region(sel, t->function ? t->function : "");
}

static void json_table(FILE *out, const struct sp_rank *rk, const struct sp_line_table *t)
{
	int64_t total = 0;
	for (size_t i = 0; i < t->n; i++)
		total += t->time_ns[i];
	fprintf(out, "{\"rank\": %d, \"region\": ", rk->rank);
	sp_json_fputs(out, t->region ? t->region : "");
	fputs(", \"function\": ", out);
	sp_json_fputs(out, t->function ? t->function : "");
	fputs(", \"filename\": ", out);
	sp_json_fputs(out, t->filename ? t->filename : "");
	fprintf(out, ", \"first_line\": %lld, \"total_s\": ", (long long)t->first_line);
	sp_render_secs_exact(out, total);
	fputs(", \"lines\": [", out);
	for (size_t i = 0; i < t->n; i++) {
		fprintf(out, "%s\n  {\"line\": %lld, \"hits\": %lld, \"time_s\": ", i ? "," : "",
			(long long)t->first_line + (long long)i, (long long)t->hits[i]);
		sp_render_secs_exact(out, t->time_ns[i]);
		fputs(", \"per_hit_s\": ", out);
		if (t->hits[i] > 0)
			fprintf(out, "%.9f", (double)t->time_ns[i] / (double)t->hits[i] / 1e9);
		else
			fputs("null", out);
		fputs(", \"source\": ", out);
		sp_json_fputs(out, t->source[i] ? t->source[i] : "");
		fputc('}', out);
	}
	fputs("]}", out);
}

int sp_render_lines_width(int fd)
{
	const char *c = getenv("COLUMNS");
	char *end;
	long v = c ? strtol(c, &end, 10) : 0;
	if (c && end != c && !*end && v > 0)
		return v < 40 ? 40 : v > 100000 ? 100000 : (int)v;
	struct winsize ws;
	if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col < 40 ? 40 : ws.ws_col;
	return -1;
}

enum sp_err sp_render_lines_opts(FILE *out, const struct sp_profile *p, const char *title,
				 const struct sp_render_lines_opts *o, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->select : NULL;
	int cap = !o || !o->width ? TABLE_CAP : o->width < 0 ? INT32_MAX / 2 : o->width;
	size_t ntables = 0, nshown = 0, bufsize = 1;
	title = title ? title : "(untitled)";
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (rk->nlines && !rk->lines)
			return sp_error_set(err, SP_EINVAL, "rank %d: line tables missing", rk->rank);
		for (size_t k = 0; k < rk->nlines; k++) {
			const struct sp_line_table *t = &rk->lines[k];
			if (t->n && (!t->hits || !t->time_ns || !t->source))
				return sp_error_set(err, SP_EINVAL, "rank %d line table %zu: columns missing",
						    rk->rank, k);
			for (size_t i = 0; i < t->n; i++) {
				size_t need = t->source[i] ? expanded_size(t->source[i]) : 1;
				bufsize = need > bufsize ? need : bufsize;
			}
			nshown += shown(sel, rk, t);
		}
		ntables += rk->nlines;
	}
	if (ntables == 0)
		return sp_error_set(err, SP_ENOTPROF,
				    "no line timings in %s (record them with: scope-profiler run --line-profile)",
				    title);
	if (nshown == 0)
		return sp_error_set(err, SP_ENOTPROF, "no line table of %s is selected (%zu in all)", title,
				    ntables);
	if (o && o->json) {
		size_t k = 0;
		fputs("{\"file\": ", out);
		sp_json_fputs(out, title);
		fputs(", \"timer_unit_s\": 1e-09, \"tables\": [", out);
		for (size_t r = 0; r < p->nranks; r++)
			for (size_t j = 0; j < p->ranks[r].nlines; j++)
				if (shown(sel, &p->ranks[r], &p->ranks[r].lines[j])) {
					fputs(k++ ? ",\n" : "\n", out);
					json_table(out, &p->ranks[r], &p->ranks[r].lines[j]);
				}
		fputs("\n]}\n", out);
		if (fflush(out) != 0 || ferror(out))
			return sp_error_set(err, SP_EIO, "writing the line tables failed");
		return SP_OK;
	}
	char *buf = malloc(bufsize);
	if (!buf)
		return sp_error_set(err, SP_ENOMEM, "out of memory for a source line of %zu bytes", bufsize);

	fputs("Line profile: ", out);
	sp_render_text(out, title, INT32_MAX);
	fputs("\nTimer unit: 1e-06 s\n", out);
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		for (size_t k = 0; k < rk->nlines; k++) {
			struct layout l;
			if (!shown(sel, rk, &rk->lines[k]))
				continue;
			layout_table(&l, &rk->lines[k], buf, cap);
			fputc('\n', out);
			render_table(out, rk, &l);
		}
	}
	free(buf);
	if (fflush(out) != 0 || ferror(out))
		return sp_error_set(err, SP_EIO, "writing the line tables failed");
	return SP_OK;
}
