/* render_likwid.c - the summary's LIKWID table (run --likwid): per rank, a
 * row per marker region with its calls and time as LIKWID counted them and
 * each event, summed over the threads that ran it; the event names are
 * /metadata's likwid_event_names ("event k" where they are unknown). Then,
 * where the file has them, LIKWID's derived metrics: a row per region and
 * metric, the value of its one thread or the min, mean and max over its
 * threads (LIKWID computed them with its group's formulas; nothing is
 * recomputed here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"
#include "sp_profile.h"
#include "sp_render.h"
#include "sp_table.h"

/* The k-th name of list, the names separated by sep, into buf; "what k"
 * when absent. */
static const char *nth_name(char *buf, size_t len, const char *list, char sep, size_t k, const char *what)
{
	const char seps[2] = {sep, '\0'};
	for (size_t i = 0; list && *list; i++) {
		size_t n = strcspn(list, seps);
		if (i == k && n) {
			snprintf(buf, len, "%.*s", (int)n, list);
			return buf;
		}
		list += n + (list[n] == sep);
	}
	snprintf(buf, len, "%s %zu", what, k);
	return buf;
}

static int render_rank(FILE *out, const struct sp_rank *rk, const char *names, int several)
{
	char label[64];
	size_t nev = 0;
	for (size_t i = 0; i < rk->nlikwid; i++)
		nev = rk->likwid[i].nevents > nev ? rk->likwid[i].nevents : nev;
	size_t nc = 4 + nev;
	struct sp_table_col *cols = calloc(nc, sizeof *cols);
	char **cells = calloc(nc, sizeof *cells), **head = calloc(nc, sizeof *head);
	int rc = -1;
	if (!cols || !cells || !head)
		goto out;
	for (size_t c = 0; c < nc; c++) {
		cols[c] = (struct sp_table_col){c ? "  " : NULL, c ? SP_TABLE_RIGHT : SP_TABLE_LEFT, c ? 0 : 6};
		if (!(cells[c] = malloc(64)) || !(head[c] = malloc(64)))
			goto out;
	}
	snprintf(head[0], 64, "region");
	snprintf(head[1], 64, "threads");
	snprintf(head[2], 64, "calls");
	snprintf(head[3], 64, "time [s]");
	for (size_t k = 0; k < nev; k++)
		nth_name(head[4 + k], 64, names, ',', k, "event");
	sp_table_fit(cols, nc, (const char *const *)head);
	/* Two passes: the widths, then the rows. */
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			int tw = 0;
			for (size_t c = 0; c < nc; c++)
				tw += cols[c].w + (c ? 2 : 0);
			if (several)
				fprintf(out, "\nLIKWID counters, %s (summed over threads)\n",
					sp_render_rank_label(label, sizeof label, rk, 0));
			else
				fputs("\nLIKWID counters (summed over threads)\n", out);
			sp_table_row(out, cols, nc, (const char *const *)head, "\n");
			sp_render_rule(out, tw);
		}
		for (size_t i = 0; i < rk->nlikwid; i++) {
			const struct sp_likwid_region *t = &rk->likwid[i];
			long long calls = 0;
			double time = 0;
			for (size_t th = 0; th < t->nthreads; th++) {
				calls += t->count[th];
				time += t->time[th];
			}
			snprintf(cells[1], 64, "%zu", t->nthreads);
			snprintf(cells[2], 64, "%lld", calls);
			snprintf(cells[3], 64, "%.6f", time);
			for (size_t k = 0; k < nev; k++) {
				double sum = 0;
				for (size_t th = 0; th < t->nthreads && k < t->nevents; th++)
					sum += t->events[th * t->nevents + k];
				if (k < t->nevents)
					snprintf(cells[4 + k], 64, "%.6g", sum);
				else
					snprintf(cells[4 + k], 64, "-");
			}
			char *name = cells[0];
			cells[0] = t->region;
			if (pass)
				sp_table_row(out, cols, nc, (const char *const *)cells, "\n");
			else
				sp_table_fit(cols, nc, (const char *const *)cells);
			cells[0] = name;
		}
		if (!pass && cols[0].w > NAME_CAP)
			cols[0].w = NAME_CAP;
	}
	rc = 0;
out:
	for (size_t c = 0; c < nc; c++) {
		if (cells)
			free(cells[c]);
		if (head)
			free(head[c]);
	}
	free(cells);
	free(head);
	free(cols);
	return rc;
}

static void metric_cell(char *buf, size_t len, double v)
{
	if (isfinite(v))
		snprintf(buf, len, "%.6g", v);
	else
		snprintf(buf, len, "-");
}

static int render_metrics(FILE *out, const struct sp_rank *rk, const char *names, int several)
{
	char label[64];
	int spread = 0, any = 0;
	for (size_t i = 0; i < rk->nlikwid; i++) {
		any |= rk->likwid[i].nmetrics > 0;
		spread |= rk->likwid[i].nmetrics > 0 && rk->likwid[i].nmrows > 1;
	}
	if (!any)
		return 0;
	enum { NC = 5 };
	size_t nc = spread ? 5 : 3;
	struct sp_table_col cols[NC];
	char cells[NC][96], head_name[NC][16];
	const char *row[NC], *head[NC];
	for (size_t c = 0; c < nc; c++)
		cols[c] = (struct sp_table_col){c ? "  " : NULL, c >= 2 ? SP_TABLE_RIGHT : SP_TABLE_LEFT,
						c ? 0 : 6};
	snprintf(head_name[0], 16, "region");
	snprintf(head_name[1], 16, "metric");
	snprintf(head_name[2], 16, spread ? "min" : "value");
	snprintf(head_name[3], 16, "mean");
	snprintf(head_name[4], 16, "max");
	for (size_t c = 0; c < nc; c++)
		head[c] = head_name[c];
	sp_table_fit(cols, nc, head);
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			int tw = 0;
			for (size_t c = 0; c < nc; c++)
				tw += cols[c].w + (c ? 2 : 0);
			const char *how = spread ? "; min, mean and max over threads" : "";
			if (several)
				fprintf(out, "\nLIKWID metrics, %s (LIKWID's formulas%s)\n",
					sp_render_rank_label(label, sizeof label, rk, 0), how);
			else
				fprintf(out, "\nLIKWID metrics (LIKWID's formulas%s)\n", how);
			sp_table_row(out, cols, nc, head, "\n");
			sp_render_rule(out, tw);
		}
		for (size_t i = 0; i < rk->nlikwid; i++) {
			const struct sp_likwid_region *t = &rk->likwid[i];
			for (size_t m = 0; m < t->nmetrics; m++) {
				double lo = INFINITY, hi = -INFINITY, sum = 0;
				size_t n = 0;
				for (size_t th = 0; th < t->nmrows; th++) {
					double v = t->metrics[th * t->nmetrics + m];
					if (!isfinite(v))
						continue;
					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
					sum += v;
					n++;
				}
				row[0] = m ? "" : t->region;
				row[1] = nth_name(cells[1], sizeof cells[1], names, '\n', m, "metric");
				metric_cell(cells[2], sizeof cells[2], n ? lo : NAN);
				metric_cell(cells[3], sizeof cells[3], n ? sum / (double)n : NAN);
				metric_cell(cells[4], sizeof cells[4], n ? hi : NAN);
				if (!spread)   /* one thread: its value */
					metric_cell(cells[2], sizeof cells[2], n ? hi : NAN);
				for (size_t c = 2; c < nc; c++)
					row[c] = cells[c];
				if (pass)
					sp_table_row(out, cols, nc, row, "\n");
				else
					sp_table_fit(cols, nc, row);
			}
		}
		if (!pass && cols[0].w > NAME_CAP)
			cols[0].w = NAME_CAP;
	}
	return 0;
}

int sp_render_likwid(FILE *out, const struct sp_profile *p)
{
	const char *names = sp_profile_meta(p, "likwid_event_names");
	const char *mnames = sp_profile_meta(p, "likwid_metric_names");
	for (size_t r = 0; r < p->nranks; r++)
		if (p->ranks[r].nlikwid && (render_rank(out, &p->ranks[r], names, p->nranks > 1) != 0 ||
					    render_metrics(out, &p->ranks[r], mnames, p->nranks > 1) != 0))
			return -1;
	return 0;
}
