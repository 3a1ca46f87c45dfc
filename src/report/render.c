/* render.c - the terminal summary of a profile: its opening lines, the region
 * table, the value tables, JSON and HTML (the merge over ranks:
 * render_merge.c; the call tree: render_tree.c; render_view.h between). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_analysis.h"
#include "sp_hosts.h"
#include "sp_json.h"
#include "sp_render.h"
#include "sp_table.h"
#include "render_int.h"
#include "render_view.h"
#include "svg.h"

/* ---- the region table --------------------------------------------------- */

/* The cells of a region table row into cells[FLAT_COLS] (bufs holding the
 * text): name, calls, then with one rank total, self, mean, min, max, std;
 * with several, each rank's mean total and self, the smallest and largest
 * rank total, the imbalance ("ranks k/n" when on k of them only, units
 * naming them: "processes" for the child processes of a run). */
enum { FLAT_COLS = 8, CELL = 48 };

static size_t flat_cells(const struct frow *f, size_t nranks, const char *units, char bufs[FLAT_COLS][CELL],
			 const char *cells[FLAT_COLS])
{
	cells[0] = f->name;
	snprintf(bufs[1], CELL, "%lld", (long long)f->calls);
	cells[1] = bufs[1];
	for (int k = 2; k < FLAT_COLS; k++)
		cells[k] = bufs[k];
	if (nranks > 1) {
		double x = sp_imbalance_of(f->max_rank, f->min_rank);
		sp_render_duration(bufs[2], CELL, (double)f->total / (double)nranks);
		sp_render_duration(bufs[3], CELL, (double)f->self / (double)nranks);
		sp_render_duration(bufs[4], CELL, (double)f->min_rank);
		sp_render_duration(bufs[5], CELL, (double)f->max_rank);
		if (f->present < nranks)
			snprintf(bufs[6], CELL, "%s %zu/%zu", units, f->present, nranks);
		else if (isfinite(x))
			snprintf(bufs[6], CELL, "%.2fx", x);
		else   /* a rank's total is 0 (inf, as diff says), or every rank's (-) */
			snprintf(bufs[6], CELL, "%s", isinf(x) ? "inf" : "-");
		return 7;
	}
	sp_render_duration(bufs[2], CELL, (double)f->total);
	sp_render_duration(bufs[3], CELL, (double)f->self);
	if (f->calls > 0) {
		sp_render_duration(bufs[4], CELL, f->mean_ns);
		sp_render_duration(bufs[5], CELL, (double)f->min_ns);
		sp_render_duration(bufs[6], CELL, (double)f->max_ns);
		sp_render_duration(bufs[7], CELL, f->std_ns);   /* "-" when NaN */
	} else {
		for (int k = 4; k < FLAT_COLS; k++)
			snprintf(bufs[k], CELL, "-");
	}
	return 8;
}

static void render_flat(FILE *out, const struct view *v)
{
	size_t nranks = v->p->nranks;
	int flagged = 0, need = 0;
	char bufs[FLAT_COLS][CELL];
	const char *cells[FLAT_COLS];
	static const char *const heads1[FLAT_COLS] = {"region", "calls", "total", "self", "mean",
						      "min", "max", "std"};
	static const char *const headsn[FLAT_COLS] = {"region", "calls", "mean/rank", "self/rank",
						      "min rank", "max rank", "imbalance", NULL};
	static const char *const headsp[FLAT_COLS] = {"region", "calls", "mean/process", "self/process",
						      "min process", "max process", "imbalance", NULL};
	int procs = sp_render_children(v->p) > 0;
	const char *units = procs ? "processes" : "ranks";
	const char *const *heads = nranks == 1 ? heads1 : procs ? headsp : headsn;
	size_t nc = nranks > 1 ? 7 : 8;
	/* Times are at least 7 columns wide ("12.3 ms"), numbers 5. */
	struct sp_table_col tc[FLAT_COLS];
	for (size_t k = 0; k < nc; k++)
		tc[k] = (struct sp_table_col){ k == 0 ? NULL : "  ", k ? SP_TABLE_RIGHT : SP_TABLE_NAME,
					       k == 0 ? 0 : k == 1 ? 5 : 7 };
	sp_table_fit(tc + 1, nc - 1, heads + 1);
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		int nw = sp_render_text_width(f->name);
		need = nw > need ? nw : need;
		flagged |= nranks > 1 && f->present < nranks;
		flat_cells(f, nranks, units, bufs, cells);
		sp_table_fit(tc + 1, nc - 1, cells + 1);
	}
	int rest = 0;
	for (size_t k = 1; k < nc; k++)
		rest += 2 + tc[k].w;
	tc[0].w = sp_render_name_width(need, rest);
	if (nranks > 1 && procs)
		fprintf(out, "Regions (%zu processes: calls summed; times are each process's total)\n",
			nranks);
	else if (nranks > 1)
		fprintf(out, "Regions (%zu ranks: calls summed; times are each rank's total)\n", nranks);
	else
		fputs("Regions\n", out);
	sp_table_row(out, tc, nc, heads, "\n");
	sp_render_rule(out, tc[0].w + rest);
	if (v->nrows == 0)
		fputs("(no regions)\n", out);
	for (size_t i = 0; i < v->rows_shown; i++) {
		flat_cells(&v->rows[i], nranks, units, bufs, cells);
		sp_table_row(out, tc, nc, cells, "\n");
	}
	if (flagged)
		fprintf(out, "%s k/%zu: recorded on k %s only; the others count as 0 s.\n", units,
			nranks, units);
	if (v->approx)
		fprintf(out, "note: a %s without a call tree: its totals are raw sums, a recursive region's "
			"nested calls counted again.\n", procs ? "process" : "rank");
}

/* ---- values: bytes allocated (run --memory) or moved (run --mpi-calls) --- */

/* What a side table of the shown rows that keep(row, arg) takes needs: how
 * many rows, the widest name, the calls column's width (at least 5). */
struct fit {
	size_t n;
	int name_width, calls_width;
};

static struct fit rows_fit(const struct view *v, int (*keep)(const struct frow *, int), int arg)
{
	struct fit fit = {0};
	int64_t maxcalls = 0;
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		if (!keep(f, arg))
			continue;
		int nw = sp_render_text_width(f->name);
		fit.name_width = nw > fit.name_width ? nw : fit.name_width;
		maxcalls = f->calls > maxcalls ? f->calls : maxcalls;
		fit.n++;
	}
	fit.calls_width = sp_render_digits(maxcalls) > 5 ? sp_render_digits(maxcalls) : 5;
	return fit;
}

/* A table of the shown rows that have values of kind (or, for
 * SP_VALUES_ALLOC_BYTES, a known peak), in the region table's order;
 * nothing when none has. */
static int has_values(const struct frow *f, int kind)
{
	return f->value_kind == kind || (kind == SP_VALUES_ALLOC_BYTES && f->peak_bytes > 0);
}

static void render_values(FILE *out, const struct view *v, int kind)
{
	int alloc = kind == SP_VALUES_ALLOC_BYTES;
	struct fit fit = rows_fit(v, has_values, kind);
	if (fit.n == 0)
		return;
	int cw = fit.calls_width;
	int rest = 2 + cw + 3 * (2 + 10);
	int w = sp_render_name_width(fit.name_width, rest);
	struct sp_table_col tc[5];
	const int cols_w[] = {w, cw, 10, 10, 10};
	for (size_t k = 0; k < 5; k++)
		tc[k] = (struct sp_table_col){ k ? "  " : NULL, k ? SP_TABLE_RIGHT : SP_TABLE_LEFT, cols_w[k] };
	fputc('\n', out);
	if (alloc)
		fputs("Allocations (bytes allocated during the calls, nested calls included)\n", out);
	else
		fputs("MPI calls (bytes sent or received: count × the datatype's size)\n", out);
	sp_table_row(out, tc, alloc ? 5 : 4, (const char *const[]){"region", "calls",
		     alloc ? "allocated" : "bytes", "per call", "peak live"}, "\n");
	sp_render_rule(out, w + rest - (alloc ? 0 : 12));
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		char calls[32], a[32] = "-", b[32] = "-", c[32] = "-";
		if (f->value_kind != kind && !(alloc && f->peak_bytes > 0))
			continue;
		snprintf(calls, sizeof calls, "%lld", (long long)f->calls);
		if (f->value_kind == kind) {
			sp_render_bytes(a, sizeof a, (double)f->values_total);
			if (f->calls > 0)
				sp_render_bytes(b, sizeof b, (double)f->values_total / (double)f->calls);
		}
		if (f->peak_bytes > 0)
			sp_render_bytes(c, sizeof c, (double)f->peak_bytes);
		sp_table_row(out, tc, alloc ? 5 : 4, (const char *const[]){f->name, calls, a, b, c}, "\n");
	}
}

/* ---- GPU wait (run --gpu) ------------------------------------------------ */

/* The shown rows timed with --gpu: each region's time and the part of it
 * its calls' exits waited for the device; nothing when none was. */
static int gpu_waited(const struct frow *f, int unused)
{
	(void)unused;
	return f->gpu_waited;
}

static void render_gpu(FILE *out, const struct view *v)
{
	struct fit fit = rows_fit(v, gpu_waited, 0);
	if (fit.n == 0)
		return;
	int cw = fit.calls_width;
	int rest = 2 + cw + 2 * (2 + SECS) + 2 + 6;
	int w = sp_render_name_width(fit.name_width, rest);
	struct sp_table_col tc[5];
	const int cols_w[] = {w, cw, SECS, SECS, 6};
	for (size_t k = 0; k < 5; k++)
		tc[k] = (struct sp_table_col){ k ? "  " : NULL, k ? SP_TABLE_RIGHT : SP_TABLE_LEFT, cols_w[k] };
	fputs("\nGPU wait (time the calls' exits waited for the device, inside their total)\n",
	      out);
	sp_table_row(out, tc, 5, (const char *const[]){"region", "calls", "total", "GPU wait", "%"}, "\n");
	sp_render_rule(out, w + rest);
	for (size_t i = 0; i < v->rows_shown; i++) {
		const struct frow *f = &v->rows[i];
		char calls[32], total[32], wait[32], pct[16] = "-";
		if (!f->gpu_waited)
			continue;
		snprintf(calls, sizeof calls, "%lld", (long long)f->calls);
		sp_render_duration(total, sizeof total, (double)f->raw_total);
		sp_render_duration(wait, sizeof wait, (double)f->gpu_wait_ns);
		if (f->raw_total > 0)
			snprintf(pct, sizeof pct, "%.1f", 100.0 * (double)f->gpu_wait_ns / (double)f->raw_total);
		sp_table_row(out, tc, 5, (const char *const[]){f->name, calls, total, wait, pct}, "\n");
	}
}

/* ---- JSON --------------------------------------------------------------- */

/* A number of seconds from nanoseconds, exact to the nanosecond; null when
 * not finite (never expected). */
static void json_secs(FILE *out, const char *key, double ns)
{
	if (isfinite(ns))
		fprintf(out, "\"%s\": %.9f", key, ns / 1e9);
	else
		fprintf(out, "\"%s\": null", key);
}

static const char *const sort_names[] = {
	[SP_SORT_TOTAL] = "total", [SP_SORT_CALLS] = "calls", [SP_SORT_MEAN] = "mean",
	[SP_SORT_MAX] = "max", [SP_SORT_NAME] = "name", [SP_SORT_SELF] = "self",
};

static void render_json(FILE *out, const struct view *v, const char *title, enum sp_render_sort sort,
			const struct sp_hosts *h)
{
	const struct sp_profile *p = v->p;
	size_t nranks = p->nranks;
	fputs("{\n  \"file\": ", out);
	sp_json_fputs(out, title ? title : "");
	fputs(",\n  \"ranks\": [", out);
	for (size_t r = 0; r < nranks; r++)
		fprintf(out, "%s%d", r ? ", " : "", p->ranks[r].rank);
	fputs("],\n  ", out);
	if (sp_render_children(p)) {
		/* run --subprocesses: which rank is which process */
		fputs("\"processes\": [", out);
		for (size_t r = 0; r < nranks; r++)
			fprintf(out, "%s{\"rank\": %d, \"pid\": %lld, \"parent_pid\": %lld}", r ? ", " : "",
				p->ranks[r].rank, (long long)p->ranks[r].pid, (long long)p->ranks[r].parent_pid);
		fputs("],\n  ", out);
	}
	if (h->known) {
		/* host -> its ranks, hosts in the order of their lowest rank */
		fputs("\"hosts\": {", out);
		for (size_t k = 0; k < h->ng; k++) {
			const struct sp_host_group *g = &h->g[k];
			const char *name = h->hr[g->first].host;
			fputs(k ? ", " : "", out);
			sp_json_fputs(out, name ? name : "?");
			fputs(": [", out);
			for (size_t i = 0; i < g->n; i++)
				fprintf(out, "%s%d", i ? ", " : "", h->hr[g->first + i].rank);
			fputc(']', out);
		}
		fputs("},\n  ", out);
	}
	json_secs(out, "run_span_s", (double)v->span);
	fprintf(out, ",\n  \"calls\": %lld,\n  \"sort\": \"%s\",\n  \"regions\": [",
		(long long)v->calls, (unsigned)sort < sizeof sort_names / sizeof *sort_names ? sort_names[sort] : "total");
	for (size_t i = 0; i < v->nrows; i++) {
		const struct frow *f = &v->rows[i];
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
		sp_json_fputs(out, f->name);
		fprintf(out, ", \"calls\": %lld, ", (long long)f->calls);
		json_secs(out, "total_s", (double)f->total);
		fputs(", ", out);
		json_secs(out, "self_s", (double)f->self);
		fputs(", ", out);
		json_secs(out, "raw_total_s", (double)f->raw_total);
		fputs(", ", out);
		json_secs(out, "mean_s", f->mean_ns);
		fputs(", ", out);
		json_secs(out, "min_s", (double)f->min_ns);
		fputs(", ", out);
		json_secs(out, "max_s", (double)f->max_ns);
		fputs(", ", out);
		json_secs(out, "std_s", f->std_ns);
		fprintf(out, ", \"ranks_present\": %zu, ", f->present);
		json_secs(out, "rank_total_min_s", (double)f->min_rank);
		fputs(", ", out);
		json_secs(out, "rank_total_mean_s", nranks ? (double)f->total / (double)nranks : 0.0);
		fputs(", ", out);
		json_secs(out, "rank_total_max_s", (double)f->max_rank);
		double imb = sp_imbalance_of(f->max_rank, f->min_rank);
		if (f->present == nranks && isfinite(imb))
			fprintf(out, ", \"imbalance\": %.6f", imb);
		else
			fputs(", \"imbalance\": null", out);
		if (f->value_kind)
			fprintf(out, ", \"%s\": %lld", sp_value_kind_name(f->value_kind),
				(long long)f->values_total);
		if (f->peak_bytes > 0)
			fprintf(out, ", \"peak_live_bytes\": %lld", (long long)f->peak_bytes);
		if (f->gpu_waited) {
			fputs(", ", out);
			json_secs(out, "gpu_wait_s", (double)f->gpu_wait_ns);
		}
		fputs(", \"rank_totals_s\": [", out);
		for (size_t r = 0; r < nranks; r++)
			fprintf(out, "%s%.9f", r ? ", " : "",
				(double)v->rank_totals[f->order * nranks + r] / 1e9);
		fputs("]}", out);
	}
	fputs(v->nrows ? "\n  ]\n}\n" : "]\n}\n", out);
}

/* ---- HTML ---------------------------------------------------------------- */

/* A <td> of seconds from nanoseconds, as the table prints them. */
static void html_secs(FILE *out, double ns)
{
	char buf[32];
	fprintf(out, "<td>%s</td>", isfinite(ns) ? sp_render_secs_trim(buf, sizeof buf, ns) : "-");
}

/* The JSON summary's numbers as one HTML <table class="stats">, a row per
 * region in table order (the first top of them when top > 0, then a row
 * saying how many more); names escaped (sp_svg_text). One rank: no per-rank
 * columns, which would repeat its total. */
static void render_html(FILE *out, const struct view *v, const char *title, int top)
{
	size_t nranks = v->p->nranks, shown = top > 0 && (size_t)top < v->nrows ? (size_t)top : v->nrows;
	fputs("<table class=\"stats\" data-file=\"", out);
	sp_svg_text(out, title ? title : "", 0);
	fputs("\">\n<caption>", out);
	sp_svg_text(out, title ? title : "", 0);
	int procs = sp_render_children(v->p) > 0;
	fprintf(out, " \xe2\x80\x94 %zu %s%s, %zu region%s, %lld call%s</caption>\n", nranks,
		procs ? "process" : "rank", nranks == 1 ? "" : procs ? "es" : "s", v->nrows, v->nrows == 1 ? "" : "s", (long long)v->calls,
		v->calls == 1 ? "" : "s");
	fputs("<thead><tr><th>region</th><th>calls</th><th>total [s]</th><th>mean [s]</th><th>min [s]</th>"
	      "<th>max [s]</th><th>std [s]</th>", out);
	if (nranks > 1 && procs)
		fputs("<th>min process [s]</th><th>mean/process [s]</th><th>max process [s]</th><th>imbalance</th>",
		      out);
	else if (nranks > 1)
		fputs("<th>min rank [s]</th><th>mean/rank [s]</th><th>max rank [s]</th><th>imbalance</th>", out);
	fputs("</tr></thead>\n<tbody>\n", out);
	for (size_t i = 0; i < shown; i++) {
		const struct frow *f = &v->rows[i];
		fputs("<tr><th scope=\"row\">", out);
		sp_svg_text(out, f->name, 0);
		fprintf(out, "</th><td>%lld</td>", (long long)f->calls);
		html_secs(out, (double)f->total);
		if (f->calls > 0) {
			html_secs(out, f->mean_ns);
			html_secs(out, (double)f->min_ns);
			html_secs(out, (double)f->max_ns);
			html_secs(out, f->std_ns);
		} else {
			fputs("<td>-</td><td>-</td><td>-</td><td>-</td>", out);
		}
		if (nranks == 1) {
			fputs("</tr>\n", out);
			continue;
		}
		html_secs(out, (double)f->min_rank);
		html_secs(out, nranks ? (double)f->total / (double)nranks : 0.0);
		html_secs(out, (double)f->max_rank);
		double imb = sp_imbalance_of(f->max_rank, f->min_rank);
		if (f->present < nranks)
			fprintf(out, "<td>%s %zu/%zu</td></tr>\n", procs ? "processes" : "ranks", f->present, nranks);
		else if (isfinite(imb))
			fprintf(out, "<td>%.2fx</td></tr>\n", imb);
		else
			fputs("<td>-</td></tr>\n", out);
	}
	if (shown < v->nrows)
		fprintf(out, "<tr class=\"more\"><th scope=\"row\">\xe2\x80\xa6 %zu more region%s</th>"
			"<td colspan=\"%d\">region_statistics.json has every one</td></tr>\n",
			v->nrows - shown, v->nrows - shown == 1 ? "" : "s", nranks > 1 ? 10 : 6);
	fputs("</tbody>\n</table>\n", out);
}

/* ---- the summary -------------------------------------------------------- */

/* Narrows sub, a shallow copy of p, to the ranks sel selects; sub->ranks is
 * then malloc'd and the caller's to free, also on failure. SP_ENOMEM, or
 * SP_EINVAL when no rank is selected, with err set. */
enum sp_err sp_rview_select(struct view *v, const struct sp_profile *p, const struct sp_select *sel,
			    struct sp_error *err)
{
	v->p = p;
	if (!sel || !sel->nranks)
		return SP_OK;
	v->sub = *p;
	v->sub.ranks = malloc((p->nranks ? p->nranks : 1) * sizeof *v->sub.ranks);
	if (!v->sub.ranks)
		return sp_error_set(err, SP_ENOMEM, "out of memory selecting ranks");
	v->sub.nranks = 0;
	for (size_t r = 0; r < p->nranks; r++)
		if (sp_select_rank(sel, p->ranks[r].rank))
			v->sub.ranks[v->sub.nranks++] = p->ranks[r];
	if (v->sub.nranks == 0)
		return sp_render_none_selected(err, NULL, p);
	v->p = &v->sub;
	return SP_OK;
}

/* The summary's opening lines: the title; ranks (on how many hosts),
 * regions, calls and run span; the hosts when host_list is set. */
static void put_title(FILE *out, const struct view *v, const char *title,
		      const struct sp_hosts *hosts, const char *host_list)
{
	char buf[32];
	size_t nchild = sp_render_children(v->p), nown = v->p->nranks - nchild;
	fputs("Profile: ", out);
	sp_render_text(out, title ? title : "(untitled)", INT32_MAX);
	if (nchild) {
		/* run --subprocesses: the groups are processes, not only ranks */
		if (nown == 0)   /* --ranks kept only children */
			fprintf(out, "\n%zu child process%s of the run", nchild, nchild == 1 ? "" : "es");
		else if (nown == 1)
			fprintf(out, "\n%zu processes (this run and %zu child process%s)", v->p->nranks,
				nchild, nchild == 1 ? "" : "es");
		else
			fprintf(out, "\n%zu processes (%zu ranks of this run and %zu child process%s)",
				v->p->nranks, nown, nchild, nchild == 1 ? "" : "es");
		if (host_list)
			fprintf(out, " on %s%zu host%s", hosts->unknown ? "at least " : "", hosts->known,
				hosts->known == 1 ? "" : "s");
		fputs(", ", out);
	} else if (host_list)
		fprintf(out, "\n%zu ranks on %s%zu host%s, ", v->p->nranks,
			hosts->unknown ? "at least " : "", hosts->known, hosts->known == 1 ? "" : "s");
	else
		fprintf(out, "\n%zu rank(s), ", v->p->nranks);
	fprintf(out, "%zu region%s, %lld call%s, run span %s\n", v->nrows, v->nrows == 1 ? "" : "s",
		(long long)v->calls, v->calls == 1 ? "" : "s", sp_render_duration(buf, sizeof buf, (double)v->span));
	if (host_list) {
		fputs("hosts: ", out);
		sp_render_text(out, host_list, 80 - 7);
		fputc('\n', out);
	}
}

/* A share of the run for a sentence: "0.4%", "<0.1%". */
static void share(char *buf, size_t len, int64_t ns, double denom)
{
	double pc = denom > 0 ? 100.0 * (double)ns / denom : 0.0;
	if (pc < 0.1)
		snprintf(buf, len, "<0.1%%");
	else
		snprintf(buf, len, "%.1f%%", pc);
}

/* The line under the summary saying what the limits left out, and how to
 * see it. */
static void left_out(FILE *out, const struct view *v, int parts, const char *hint)
{
	int tree = (parts & SP_RENDER_TREE) && v->tree_shown < v->nnodes;
	int rows = (parts & SP_RENDER_FLAT) && v->rows_shown < v->nrows;
	if (!tree && !rows)
		return;
	double denom = (double)v->span * (double)(v->p->nranks ? v->p->nranks : 1);
	char a[32], b[32];
	share(a, sizeof a, v->tree_cut, denom);
	share(b, sizeof b, v->rows_cut, denom);
	fputs("\nLeft out: ", out);
	if (tree)
		fprintf(out, "%zu of %zu call-tree entries (the largest %s of the run)%s",
			v->nnodes - v->tree_shown, v->nnodes, a, rows ? " and " : "");
	if (rows)
		fprintf(out, "%zu of %zu regions (the largest %s)", v->nrows - v->rows_shown,
			v->nrows, b);
	fprintf(out, "; %s shows every one.\n", hint);
}

/* Merges v->p's ranks as the options ask (the tree only when shown as
 * text) and marks what fits a screen: the table's first `top` rows, the
 * tree's heaviest entries. */
static enum sp_err build_view(struct view *v, int parts, int json, const struct sp_render_opts *o,
			      struct sp_error *err)
{
	enum sp_err rc = sp_rview_merge_regions(v, o ? o->sort : SP_SORT_TOTAL, json, err);
	if (rc == SP_OK && !json && (parts & SP_RENDER_TREE))
		rc = sp_rview_merge_trees(v, err);
	if (rc != SP_OK)
		return rc;
	int top = o && o->top ? o->top : SP_RENDER_TOP;
	int depth = o ? o->depth : 0;
	v->rows_shown = v->nrows;
	if (!json && top > 0 && v->nrows > (size_t)top) {
		v->rows_shown = (size_t)top;
		for (size_t i = v->rows_shown; i < v->nrows; i++)
			v->rows_cut = v->rows[i].total > v->rows_cut ? v->rows[i].total : v->rows_cut;
	}
	if (!json && (parts & SP_RENDER_TREE) && sp_rview_limit_tree(v, top, depth) != 0)
		return sp_error_set(err, SP_ENOMEM, "out of memory choosing what the tree shows");
	for (size_t r = 0; r < v->p->nranks; r++) {
		int64_t s = sp_rank_span(&v->p->ranks[r]);
		v->span = s > v->span ? s : v->span;
	}
	return SP_OK;
}

/* The text summary of the view of p: the opening lines, the parts asked
 * for, what was left out, the LIKWID counters. SP_ENOMEM with err set. */
static enum sp_err put_text(FILE *out, const struct view *v, const struct sp_profile *p, const char *title,
			    int parts, const struct sp_hosts *hosts, const char *more_hint,
			    struct sp_error *err)
{
	char *host_list = NULL;
	/* Several ranks: on how many hosts, and which ranks on which. */
	if (v->p->nranks > 1 && hosts->known && !(host_list = sp_profile_hosts(v->p)))
		return sp_error_set(err, SP_ENOMEM, "out of memory listing the hosts");
	put_title(out, v, title, hosts, host_list);
	free(host_list);
	sp_render_notes(out, v->p, p, v->sel, v->nrows, v->nall);
	if (parts & SP_RENDER_TREE) {
		fputc('\n', out);
		sp_rview_tree(out, v);
	}
	if (parts & SP_RENDER_FLAT) {
		fputc('\n', out);
		render_flat(out, v);
		render_values(out, v, SP_VALUES_ALLOC_BYTES);
		render_values(out, v, SP_VALUES_BYTES);
		render_gpu(out, v);
	}
	left_out(out, v, parts, more_hint);
	if ((parts & SP_RENDER_FLAT) && sp_render_likwid(out, v->p) != 0)
		return sp_error_set(err, SP_ENOMEM, "out of memory rendering the LIKWID counters");
	return SP_OK;
}

static enum sp_err summary(FILE *out, const struct sp_profile *p, const char *title, int parts,
			   const struct sp_render_opts *o, struct sp_error *err)
{
	const struct sp_select *sel = o ? o->select : NULL;
	int json = o && (o->json || o->html);
	struct view v = { .sel = sel, .roots_first = -1, .roots_last = -1 };
	struct sp_hosts hosts = {0};
	enum sp_err rc = sp_rview_select(&v, p, sel, err);
	if (rc != SP_OK)
		goto out;
	if ((rc = build_view(&v, parts, json, o, err)) != SP_OK)
		goto out;
	if (sp_hosts_group(v.p, &hosts) != 0) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory grouping ranks by host");
		goto out;
	}
	if (json && o->html)
		render_html(out, &v, title, o->top);
	else if (json)
		render_json(out, &v, title, o->sort, &hosts);
	else if ((rc = put_text(out, &v, p, title, parts, &hosts, o && o->more_hint ? o->more_hint : "--all",
				err)) != SP_OK)
		goto out;
	if (fflush(out) != 0 || ferror(out))
		rc = sp_error_set(err, SP_EIO, "writing the summary failed");
out:
	sp_rview_free(&v);
	sp_hosts_free(&hosts);
	return rc;
}

enum sp_err sp_render_summary(FILE *out, const struct sp_profile *p, const char *title,
			      int parts, struct sp_error *err)
{
	return summary(out, p, title, parts, NULL, err);
}

enum sp_err sp_render_summary_opts(FILE *out, const struct sp_profile *p, const char *title,
				   const struct sp_render_opts *opts, struct sp_error *err)
{
	int parts = opts && opts->parts ? opts->parts : SP_RENDER_ALL;
	return summary(out, p, title, parts, opts, err);
}
