/* diff.c - two profiles compared region by region from their summary
 * statistics (sp_diff.h): the merge over ranks, the change, the bound, and
 * the table and JSON that show them. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_analysis.h"
#include "sp_hosts.h"
#include "sp_session.h"
#include "sp_diff.h"
#include "byname.h"
#include "diff_int.h"
#include "render_int.h"
#include "sp_json.h"
#include "sp_render.h"
#include "sp_table.h"

#define TABLE_CAP 100                  /* columns the table aims to fit */
#define NAME_MIN 16                    /* the name column is never cut below this */

/* Folds file fi's regions of name k of the join (one per selected rank)
 * into s: calls and totals summed, the slowest and fastest rank, the
 * fastest call. cum: each region's total, by its place in the join. */
static void fold_name(struct sp_diff_side *s, const struct sp_diff_file *f, size_t fi,
		      const struct sp_byname *b, size_t k, const int64_t *cum)
{
	const struct sp_profile *p = f->p;
	for (size_t q = b->first[k]; q < b->first[k + 1]; q++) {
		const struct sp_byname_ref *ref = &b->refs[q];
		if (ref->file != fi)
			continue;
		const struct sp_stats *st = &p->ranks[ref->ri].regions[ref->gi].stats;
		int64_t rank_total = cum[b->base[b->rank0[fi] + ref->ri] + ref->gi];
		if (st->num_calls > 0 && (s->fastest_call == 0 || st->min_ns < s->fastest_call))
			s->fastest_call = st->min_ns;
		s->raw_total = sp_add_sat(s->raw_total, st->total_ns);
		s->calls = sp_add_sat(s->calls, st->num_calls);
		s->total = sp_add_sat(s->total, rank_total);
		if (st->num_calls > 0) {
			if (s->present == 0 || rank_total > s->slowest)
				s->slowest_rank = p->ranks[ref->ri].rank;
			s->slowest = s->present == 0 || rank_total > s->slowest ? rank_total : s->slowest;
			s->fastest = s->present == 0 || rank_total < s->fastest ? rank_total : s->fastest;
			s->present++;
		}
	}
	if (s->present < f->nranks)
		s->fastest = 0;   /* absent ranks count as 0 s, as in summary */
	s->per_rank = (double)s->total / (double)f->nranks;
	s->imbalance = sp_imbalance_of(s->slowest, s->fastest);
}

/* Notes f's selected ranks and its span, and fills cum (by the join's
 * place of each region, file fi) with each selected region's total
 * counting a recursive region once, as summary's does
 * (sp_rank_region_times). Returns SP_OK, SP_EINVAL when no rank is
 * selected or SP_ENOMEM, err saying which. */
static enum sp_err collect(struct sp_diff_file *f, size_t fi, const struct sp_byname *b, int64_t *cum,
			   const struct sp_select *sel, struct sp_error *err)
{
	const struct sp_profile *p = f->p;
	f->ranks = malloc((p->nranks ? p->nranks : 1) * sizeof *f->ranks);
	if (!f->ranks)
		return sp_error_set(err, SP_ENOMEM, "%s: out of memory", f->path);
	for (size_t r = 0; r < p->nranks; r++) {
		if (!sp_select_rank(sel, p->ranks[r].rank))
			continue;
		f->ranks[f->nranks++] = p->ranks[r].rank;
		int64_t s = sp_rank_span(&p->ranks[r]);
		f->span = s > f->span ? s : f->span;
		if (sp_rank_region_times(&p->ranks[r], cum + b->base[b->rank0[fi] + r], NULL) < 0)
			return sp_error_set(err, SP_ENOMEM, "%s: out of memory", f->path);
	}
	if (f->nranks == 0)
		return sp_render_none_selected(err, f->path, p);
	return SP_OK;
}

/* Growth of b over a in percent; NAN when a is not positive. */
static double growth(double a, double b)
{
	return a > 0 ? (b - a) / a * 100.0 : NAN;
}

/* The rows: one per selected name of the join b, each file's side (NULL
 * where the file lacks the name) in f[0].regions / f[1].regions. Returns
 * the number of rows, or SIZE_MAX when out of memory. */
static size_t join(struct sp_diff_file *f, const struct sp_byname *b, const int64_t *cum,
		   const struct sp_select *sel, struct sp_diff_row **out)
{
	struct sp_diff_row *rows = malloc((b->n ? b->n : 1) * sizeof *rows);
	f[0].regions = malloc((b->n ? b->n : 1) * sizeof *f[0].regions);
	f[1].regions = malloc((b->n ? b->n : 1) * sizeof *f[1].regions);
	size_t n = 0;
	if (!rows || !f[0].regions || !f[1].regions) {
		free(rows);
		return SIZE_MAX;
	}
	for (size_t k = 0; k < b->n; k++) {
		const char *name = b->names[k];
		if (!sp_select_region(sel, name))
			continue;
		struct sp_diff_row *d = &rows[n++];
		*d = (struct sp_diff_row){ .name = name, .pct = NAN, .ratio = NAN, .slow_pct = NAN,
					   .p = NAN, .fast_pct = NAN, .growth = NAN };
		struct sp_diff_side *side[2] = { NULL, NULL };
		for (size_t fi = 0; fi < 2; fi++)
			if (b->refs[b->first[k]].file == fi || b->refs[b->first[k + 1] - 1].file == fi) {
				side[fi] = &f[fi].regions[f[fi].n++];
				*side[fi] = (struct sp_diff_side){ .name = name };
				fold_name(side[fi], &f[fi], fi, b, k, cum);
			}
		d->a = side[0];
		d->b = side[1];
		double va = d->a ? d->a->per_rank : 0, vb = d->b ? d->b->per_rank : 0;
		d->change = vb - va;
		if (d->a && d->b) {
			d->pct = growth(va, vb);
			d->ratio = va > 0 ? vb / va : NAN;
			d->slow_pct = growth((double)d->a->slowest, (double)d->b->slowest);
		}
	}
	*out = rows;
	return n;
}

static int by_change(const void *x, const void *y)
{
	const struct sp_diff_row *a = x, *b = y;
	double ca = fabs(a->change), cb = fabs(b->change);
	if (ca != cb)
		return ca > cb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int by_name(const void *x, const void *y)
{
	const struct sp_diff_row *a = x, *b = y;
	return strcmp(a->name, b->name);
}

/* ---- formatting --------------------------------------------------------- */

static char *signed_secs(char *buf, double ns)
{
	double s = ns / 1e9;
	snprintf(buf, CELL, fabs(s) < 999.9999995 ? "%+.6f" : "%+.1f", s);
	return buf;
}

/* Columns of the table: a group label over one or more sub-columns. */
enum { C_CALLS_A, C_CALLS_B, C_V1_A, C_V1_B, C_V2_A, C_V2_B, C_CHANGE, C_PCT, C_RATIO, C_SLOW,
       C_IMB_A, C_IMB_B, NCOLS };

struct col {
	int group;                     /* columns of one group are 1 space apart */
	const char *head;
};

static const struct col cols[NCOLS] = {
	[C_CALLS_A] = {0, "A"}, [C_CALLS_B] = {0, "B"}, [C_V1_A] = {1, "A"}, [C_V1_B] = {1, "B"},
	[C_V2_A] = {2, "A"},    [C_V2_B] = {2, "B"},    [C_CHANGE] = {3, "[s]"},
	[C_PCT] = {3, "%"},     [C_RATIO] = {4, "B/A"}, [C_SLOW] = {5, "slowest %"},
	[C_IMB_A] = {6, "A"},   [C_IMB_B] = {6, "B"},
};

/* An imbalance cell: "1.60x", "inf", or "-" when not defined. */
static char *imbalance_cell(char *buf, const struct sp_diff_side *s)
{
	double v = s->imbalance;
	if (isnan(v))
		snprintf(buf, CELL, "-");
	else if (isinf(v))
		snprintf(buf, CELL, "inf");
	else
		snprintf(buf, CELL, v < 1000 ? "%.2fx" : "%.3gx", v);
	return buf;
}

/* Fills the cells of one row. */
static void row_cells(char (*c)[CELL], const struct sp_diff_row *d, int several)
{
	const struct sp_diff_side *a = d->a, *b = d->b;
	for (int k = 0; k < NCOLS; k++)
		strcpy(c[k], "-");
	if (a) {
		snprintf(c[C_CALLS_A], CELL, "%lld", (long long)a->calls);
		sp_diff_secs(c[C_V1_A], a->per_rank);
		if (several) {
			sp_diff_secs(c[C_V2_A], (double)a->slowest);
			imbalance_cell(c[C_IMB_A], a);
		} else if (a->calls > 0)
			sp_diff_secs(c[C_V2_A], (double)a->raw_total / (double)a->calls);
	}
	if (b) {
		snprintf(c[C_CALLS_B], CELL, "%lld", (long long)b->calls);
		sp_diff_secs(c[C_V1_B], b->per_rank);
		if (several) {
			sp_diff_secs(c[C_V2_B], (double)b->slowest);
			imbalance_cell(c[C_IMB_B], b);
		} else if (b->calls > 0)
			sp_diff_secs(c[C_V2_B], (double)b->raw_total / (double)b->calls);
	}
	if (a && b) {
		signed_secs(c[C_CHANGE], d->change);
		sp_diff_percent(c[C_PCT], d->pct);
		if (!isnan(d->ratio))
			snprintf(c[C_RATIO], CELL, d->ratio < 1000 ? "%.2fx" : "%.3gx", d->ratio);
		sp_diff_percent(c[C_SLOW], d->slow_pct);
	} else {
		strcpy(c[C_CHANGE], a ? "only in A" : "only in B");
	}
}

static void pad(FILE *out, int n)
{
	for (; n > 0; n--)
		putc(' ', out);
}

/* Writes a name in exactly w columns. One too wide loses its middle, not its
 * end: "__main__.Mesh.refine_cells" and "__main__.Mesh.refine_edges" must
 * stay apart. */
static void put_name(FILE *out, const char *s, int w)
{
	pad(out, w - sp_render_text_mid(out, s, w));
}

static void file_line(FILE *out, const char *label, const struct sp_diff_file *f)
{
	char list[96], buf[CELL];
	fprintf(out, "%s: ", label);
	sp_render_text(out, f->path, 200);
	if (f->p && sp_render_children(f->p))   /* run --subprocesses: its processes */
		fprintf(out, " (%zu process%s", f->nranks, f->nranks == 1 ? "" : "es");
	else
		fprintf(out, " (%zu rank%s", f->nranks, f->nranks == 1 ? "" : "s");
	if (f->nranks > 1)
		fprintf(out, " %s", sp_rank_list(list, sizeof list, f->ranks, f->nranks));
	fprintf(out, ", run span %s s)\n", sp_diff_secs(buf, (double)f->span));
}

/* The table's layout: its columns, their widths and headings, the group
 * labels over them, the name column's width (nw) and the whole width (tw). */
struct layout {
	const char *const *groups;
	int ncols, nw, tw;
	int w[NCOLS];
	struct sp_table_col tc[NCOLS];
	const char *heads[NCOLS];
};

/* several, for the layout: 0 (one rank each), 1 (ranks) or this (a run's
 * processes, the columns and their legend named so). */
#define SEVERAL_PROCESSES 2

/* Fits the columns of L to their headings and to the cells of the n rows,
 * each group at least as wide as its label, and the name column to the
 * widest name within TABLE_CAP. Cannot fail. */
static void fit_table(struct layout *L, const struct sp_diff_row *rows, size_t n,
		      char (*cells)[NCOLS][CELL], int several)
{
	static const char *const groups_one[] = {"calls", "total [s]", "mean [s]", "change", "", ""};
	static const char *const groups_many[] = {"calls", "total/rank [s]", "slowest [s]", "change",
						  "", "", "imbalance"};
	static const char *const groups_procs[] = {"calls", "total/process [s]", "slowest [s]", "change",
						   "", "", "imbalance"};
	const char *text[NCOLS];
	int ncols = L->ncols = several ? NCOLS : C_SLOW, *w = L->w, need = 6;
	struct sp_table_col *tc = L->tc;
	L->groups = several == SEVERAL_PROCESSES ? groups_procs : several ? groups_many : groups_one;
	for (int k = 0; k < ncols; k++) {
		tc[k] = (struct sp_table_col){ k && cols[k].group == cols[k - 1].group ? " " : "  ",
					       SP_TABLE_RIGHT, 0 };
		L->heads[k] = cols[k].head;
	}
	sp_table_fit(tc, (size_t)ncols, L->heads);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < ncols; k++)
			text[k] = cells[i][k];
		sp_table_fit(tc, (size_t)ncols, text);
		int nw = sp_render_text_width(rows[i].name);
		need = nw > need ? nw : need;
	}
	for (int k = 0; k < ncols; k++)
		w[k] = tc[k].w;
	/* Each group at least as wide as its label: widen its last column. */
	int rest = 0;
	for (int k = 0; k < ncols;) {
		int g = cols[k].group, span = 0, first = k;
		for (; k < ncols && cols[k].group == g; k++)
			span += w[k] + (k > first);
		int lw = (int)strlen(L->groups[g]);
		if (lw > span)
			w[k - 1] += lw - span;
		tc[k - 1].w = w[k - 1];
		rest += 2 + (span > lw ? span : lw);
	}
	int cap = TABLE_CAP - rest > NAME_MIN ? TABLE_CAP - rest : NAME_MIN;
	L->nw = need < cap ? need : cap;
	L->tw = L->nw + rest;
}

/* The lines above the table: both files, what the columns mean, the order. */
static void put_preamble(FILE *out, const struct sp_diff_file *fa, const struct sp_diff_file *fb,
			 int several, int by_name_order)
{
	file_line(out, "A", fa);
	file_line(out, "B", fb);
	if (several == SEVERAL_PROCESSES)
		fputs("total/process: the mean over processes of each one's total (the change is of\n"
		      "it); slowest: the largest process's total; imbalance: slowest / fastest\n"
		      "process's total, a process without the region counting as 0 s (inf; - when all\n"
		      "are 0)\n", out);
	else if (several)
		fputs("total/rank: the mean over ranks of each rank's total (the change is of it);\n"
		      "slowest: the largest rank's total; imbalance: slowest / fastest rank's total,\n"
		      "a rank without the region counting as 0 s (inf; - when all are 0)\n", out);
	fprintf(out, "change = B - A; %s\n\n",
		by_name_order ? "sorted by name" : "largest change first");
}

/* Group labels, centred over their columns; no trailing blanks. */
static void put_group_labels(FILE *out, const struct layout *L)
{
	int col = 0, at = L->nw;
	for (int k = 0; k < L->ncols;) {
		int g = cols[k].group, span = 0, first = k;
		for (; k < L->ncols && cols[k].group == g; k++)
			span += L->w[k] + (k > first);
		int lw = (int)strlen(L->groups[g]), left = (span - lw + 1) / 2;
		if (lw) {
			pad(out, at + 2 + left - col);
			fputs(L->groups[g], out);
			col = at + 2 + left + lw;
		}
		at += 2 + span;
	}
	fputc('\n', out);
}

/* The closing line: how many regions are in both files (slower, faster)
 * and in one only. */
static void put_counts(FILE *out, const struct sp_diff_row *rows, size_t n)
{
	size_t both = 0, slower = 0, faster = 0, only_a = 0, only_b = 0;
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].a)
			only_b++;
		else if (!rows[i].b)
			only_a++;
		else {
			both++;
			slower += rows[i].change > 0;
			faster += rows[i].change < 0;
		}
	}
	fprintf(out, "\n%zu region%s in both (%zu slower, %zu faster), %zu only in A, %zu only in B\n",
		both, both == 1 ? "" : "s", slower, faster, only_a, only_b);
}

static void render_table(FILE *out, const struct sp_diff_file *fa, const struct sp_diff_file *fb,
			 const struct sp_diff_row *rows, size_t n, char (*cells)[NCOLS][CELL], int several,
			 int by_name_order)
{
	struct layout L;
	const char *text[NCOLS];
	fit_table(&L, rows, n, cells, several);
	put_preamble(out, fa, fb, several, by_name_order);
	put_group_labels(out, &L);
	fprintf(out, "%-*s", L.nw, "region");
	sp_table_row(out, L.tc, (size_t)L.ncols, L.heads, "\n");
	for (int i = 0; i < L.tw; i++)
		fputs("─", out);
	fputc('\n', out);
	if (n == 0)
		fputs("(no regions)\n", out);
	for (size_t i = 0; i < n; i++) {
		put_name(out, rows[i].name, L.nw);
		for (int k = 0; k < L.ncols; k++)
			text[k] = cells[i][k];
		sp_table_row(out, L.tc, (size_t)L.ncols, text, "\n");
	}
	put_counts(out, rows, n);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_num(FILE *out, const char *key, double v, const char *fmt)
{
	fprintf(out, "\"%s\": ", key);
	if (isfinite(v))
		fprintf(out, fmt, v);
	else
		fputs("null", out);
}

static void json_file(FILE *out, const char *key, const struct sp_diff_file *f)
{
	fprintf(out, "  \"%s\": {\"file\": ", key);
	sp_json_fputs(out, f->path);
	fputs(", \"ranks\": [", out);
	for (size_t r = 0; r < f->nranks; r++)
		fprintf(out, "%s%d", r ? ", " : "", f->ranks[r]);
	fputs("], ", out);
	json_num(out, "run_span_s", (double)f->span / 1e9, "%.9f");
	fputs("},\n", out);
}

static void json_side(FILE *out, const char *key, const struct sp_diff_side *s)
{
	fprintf(out, ", \"%s\": ", key);
	if (!s) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"calls\": %lld, ", (long long)s->calls);
	json_num(out, "total_s", (double)s->total / 1e9, "%.9f");
	fputs(", ", out);
	json_num(out, "mean_s", s->calls > 0 ? (double)s->raw_total / (double)s->calls / 1e9 : 0.0,
		 "%.9f");
	fputs(", ", out);
	json_num(out, "total_per_rank_s", s->per_rank / 1e9, "%.9f");
	fputs(", ", out);
	json_num(out, "slowest_rank_total_s", (double)s->slowest / 1e9, "%.9f");
	fputs(", ", out);
	json_num(out, "fastest_rank_total_s", (double)s->fastest / 1e9, "%.9f");
	fputs(", ", out);
	json_num(out, "imbalance", s->imbalance, "%.6f");
	fprintf(out, ", \"ranks_present\": %zu}", s->present);
}

static void render_json(FILE *out, const struct sp_diff_file *fa, const struct sp_diff_file *fb,
			const struct sp_diff_row *rows, size_t n, int by_name_order, double bound,
			int64_t min_time)
{
	fputs("{\n", out);
	json_file(out, "a", fa);
	json_file(out, "b", fb);
	fprintf(out, "  \"sort\": \"%s\",\n  ", by_name_order ? "name" : "change");
	json_num(out, "fail_above_pct", bound, "%g");
	fputs(",\n  ", out);
	json_num(out, "min_time_s", isnan(bound) ? NAN : (double)min_time / 1e9, "%.9f");
	fputs(",\n  \"regions\": [", out);
	for (size_t i = 0; i < n; i++) {
		const struct sp_diff_row *d = &rows[i];
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
		sp_json_fputs(out, d->name);
		fprintf(out, ", \"in\": \"%s\"", !d->a ? "b" : !d->b ? "a" : "both");
		json_side(out, "a", d->a);
		json_side(out, "b", d->b);
		fputs(", ", out);
		json_num(out, "change_s", d->change / 1e9, "%.9f");
		fputs(", ", out);
		json_num(out, "change_pct", d->pct, "%.6f");
		fputs(", ", out);
		json_num(out, "ratio", d->ratio, "%.6f");
		fputs(", ", out);
		json_num(out, "slowest_change_pct", d->slow_pct, "%.6f");
		fprintf(out, ", \"above_bound\": %s", d->above ? "true" : "false");
		sp_diff_json_verdict(out, d);
		fputs("}", out);
	}
	fputs(n ? "\n  ]\n}\n" : "]\n}\n", out);
}

/* Parses "10", "2.5" or "10%" into *pct; -1 when it is not a non-negative
 * number. */
int sp_diff_parse_percent(const char *s, double *pct)
{
	char *end;
	double v;
	if (sp_parse_decimal(s, &v, &end) != 0 || v < 0)
		return -1;
	if (*end == '%')
		end++;
	if (*end)
		return -1;
	*pct = v;
	return 0;
}

/* ---- the comparison ----------------------------------------------------- */

enum sp_err sp_diff_compare(struct sp_diff *d, const struct sp_profile *a, const char *path_a,
			    const struct sp_profile *b, const char *path_b, const struct sp_select *sel,
			    int by_name_order, double bound, int64_t min_time, struct sp_error *err)
{
	static const struct sp_select all;
	enum sp_err rc;
	*d = (struct sp_diff){ .by_name = by_name_order, .bound = bound };
	d->f[0] = (struct sp_diff_file){ .path = path_a, .p = a };
	d->f[1] = (struct sp_diff_file){ .path = path_b, .p = b };
	if (!sel)
		sel = &all;
	/* The regions of both files joined by name, once. */
	const struct sp_profile *files[2] = { a, b };
	struct sp_byname names;
	int64_t *cum = NULL;
	if ((rc = sp_byname_build(&names, files, 2, sel, err)) != SP_OK)
		return rc;
	size_t places = 0;
	for (int k = 0; k < 2; k++)
		for (size_t r = 0; r < files[k]->nranks; r++)
			places += files[k]->ranks[r].nregions;   /* fits: the join counted them */
	if (!(cum = malloc((places ? places : 1) * sizeof *cum)))
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
	for (int k = 0; k < 2 && rc == SP_OK; k++)
		rc = collect(&d->f[k], (size_t)k, &names, cum, sel, err);
	if (rc == SP_OK && (d->n = join(d->f, &names, cum, sel, &d->rows)) == SIZE_MAX) {
		d->n = 0;
		rc = sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	free(cum);
	sp_byname_free(&names);
	if (rc != SP_OK)
		return rc;
	qsort(d->rows, d->n, sizeof *d->rows, by_name_order ? by_name : by_change);
	d->several = d->f[0].nranks > 1 || d->f[1].nranks > 1;
	d->min_time = min_time >= 0 ? min_time : sp_diff_default_floor(d->f[0].span, d->f[1].span);
	sp_diff_mark(d);
	return SP_OK;
}

void sp_diff_free(struct sp_diff *d)
{
	free(d->rows);
	for (int k = 0; k < 2; k++) {
		free(d->f[k].regions);
		free(d->f[k].ranks);
	}
	*d = (struct sp_diff){ .bound = NAN };
}

enum sp_err sp_diff_render(FILE *out, const struct sp_diff *d, int json, struct sp_error *err)
{
	if (json) {
		render_json(out, &d->f[0], &d->f[1], d->rows, d->n, d->by_name, d->bound, d->min_time);
		return SP_OK;
	}
	char (*cells)[NCOLS][CELL] = malloc((d->n ? d->n : 1) * sizeof *cells);
	if (!cells)
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	for (size_t i = 0; i < d->n; i++)
		row_cells(cells[i], &d->rows[i], d->several);
	/* Both files a run's processes (run --subprocesses): named so. */
	int several = d->several && d->f[0].p && d->f[1].p && sp_render_children(d->f[0].p) &&
		      sp_render_children(d->f[1].p) ? SEVERAL_PROCESSES : d->several;
	render_table(out, &d->f[0], &d->f[1], d->rows, d->n, cells, several, d->by_name);
	free(cells);
	sp_diff_put_gate(out, d);
	return SP_OK;
}

char *sp_diff_worst_line(const struct sp_diff *d, char *buf, size_t len)
{
	const struct sp_diff_row *w = d->worst;
	if (!w)
		return NULL;
	char name[96], a[CELL], b[CELL], pct[CELL];
	int slow = w->by_slowest && w->slow_pct != w->pct;
	double va = slow ? (double)w->a->slowest : w->a->per_rank;
	double vb = slow ? (double)w->b->slowest : w->b->per_rank;
	char fp[CELL];
	if (w->tested) {
		snprintf(buf, len, "'%s'%s grew by %s in its fastest calls (p %s%.3f; total %s s -> %s s), "
			 "more than --fail-above %g%%; %zu region%s above the bound",
			 sp_diff_plain(name, sizeof name, w->name), slow ? " (slowest rank)" : "",
			 sp_diff_percent(fp, w->fast_pct) + 1,
			 w->p < 0.001 ? "< " : "= ", w->p < 0.001 ? 0.001 : w->p, sp_diff_secs(a, va),
			 sp_diff_secs(b, vb), d->bound, d->nabove, d->nabove == 1 ? "" : "s");
		return buf;
	}
	snprintf(buf, len, "'%s'%s grew by %s (%s s -> %s s), more than --fail-above %g%%; "
		 "%zu region%s above the bound", sp_diff_plain(name, sizeof name, w->name),
		 slow ? " (slowest rank)" : d->several ? " (total/rank)" : "",
		 sp_diff_percent(pct, w->growth) + 1, sp_diff_secs(a, va), sp_diff_secs(b, vb), d->bound,
		 d->nabove, d->nabove == 1 ? "" : "s");
	return buf;
}
