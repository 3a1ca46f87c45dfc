/* test_render.c - unit tests of the terminal summary (sp_render_summary). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_tree.h"
#include "sp_analysis.h"
#include "sp_hosts.h"
#include "sp_render.h"

#define MS 1000000LL
#define S 1000000000LL

static struct sp_profile *profile_new(size_t nranks)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->nranks = nranks;
	p->ranks = calloc(nranks ? nranks : 1, sizeof *p->ranks);
	assert_non_null(p->ranks);
	for (size_t r = 0; r < nranks; r++) {
		p->ranks[r].rank = (int)r;
		p->ranks[r].run_start_ns = p->ranks[r].run_end_ns = SP_NO_TIME;
	}
	return p;
}

/* The index of region `name` on rank rk, added if new. */
static size_t region(struct sp_rank *rk, const char *name)
{
	for (size_t i = 0; i < rk->nregions; i++)
		if (strcmp(rk->regions[i].name, name) == 0)
			return i;
	rk->regions = realloc(rk->regions, (rk->nregions + 1) * sizeof *rk->regions);
	assert_non_null(rk->regions);
	struct sp_region_data *rd = &rk->regions[rk->nregions];
	memset(rd, 0, sizeof *rd);
	rd->name = strdup(name);
	rd->owns_events = 1;
	return rk->nregions++;
}

static void event(struct sp_rank *rk, const char *name, int64_t start, int64_t end)
{
	size_t i = region(rk, name);   /* may move rk->regions */
	struct sp_region_data *rd = &rk->regions[i];
	size_t n = (size_t)rd->stats.num_calls;
	rd->starts = realloc(rd->starts, (n + 1) * sizeof *rd->starts);
	rd->ends = realloc(rd->ends, (n + 1) * sizeof *rd->ends);
	assert_true(rd->starts && rd->ends);
	rd->starts[n] = start;
	rd->ends[n] = end;
	rd->stats.num_calls++;
}

/* Stats and trees on every rank, as the reader hands them over. */
static void finish(struct sp_profile *p)
{
	for (size_t r = 0; r < p->nranks; r++) {
		struct sp_rank *rk = &p->ranks[r];
		for (size_t i = 0; i < rk->nregions; i++) {
			struct sp_region_data *rd = &rk->regions[i];
			sp_stats_compute(&rd->stats, rd->starts, rd->ends, (size_t)rd->stats.num_calls);
		}
		assert_int_equal(sp_tree_build(rk, NULL), SP_OK);
	}
}

/* Renders p into a string; SP_TEST_SHOW=1 prints it too. */
/* The summary of p as o asks, as a string the caller frees. */
static char *render_opts(const struct sp_profile *p, const struct sp_render_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct sp_error err = { 0 };
	assert_int_equal(sp_render_summary_opts(f, p, "test.h5", o, &err), SP_OK);
	assert_int_equal(fclose(f), 0);
	if (getenv("SP_TEST_SHOW"))   /* to look at what the tests check */
		fputs(buf, stdout);
	return buf;
}

static char *render(const struct sp_profile *p, int parts)
{
	/* Every entry: these tests look at whole trees (test_render_opts.c
	 * tests the limits). */
	struct sp_render_opts o = { .parts = parts, .top = -1 };
	return render_opts(p, &o);
}

/* Display columns of the first line of s (the test names are one column per
 * code point). */
static int columns(const char *s)
{
	int w = 0;
	for (; *s && *s != '\n'; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* A copy of the line of out that starts with prefix, or NULL. */
static char *line_starting(const char *out, const char *prefix)
{
	static char line[1024];
	for (const char *l = out; *l; l = strchr(l, '\n') + 1) {
		size_t n = strcspn(l, "\n");
		if (strncmp(l, prefix, strlen(prefix)) == 0 && n < sizeof line) {
			memcpy(line, l, n);
			line[n] = '\0';
			return line;
		}
		if (!l[n])
			break;
	}
	return NULL;
}

/* The line after the one starting with prefix. */
static char *line_after(const char *out, const char *prefix)
{
	char *l = line_starting(out, prefix);
	assert_non_null(l);
	const char *at = strstr(out, l);
	return line_starting(at + strlen(l) + 1, "");
}

static int max_columns(const char *out)
{
	int m = 0;
	for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		m = columns(l) > m ? columns(l) : m;
	return m;
}

/* Within each table (from the header to the next blank line), every row is
 * exactly as wide as the rule under the header: the columns line up. */
static void assert_aligned(const char *out)
{
	const char *l = out;
	while ((l = strstr(l, "\n─")) != NULL) {
		l++;
		int w = columns(l);
		const char *row = l;
		while (*row && *row != '\n')
			row++;
		for (row++; *row && *row != '\n' && strncmp(row, "ranks k/", 8) != 0;
		     row += strcspn(row, "\n") + 1) {
			if (strncmp(row, "(no ", 4) == 0)
				continue;
			assert_int_equal(columns(row), w);
		}
	}
}

/* A duration as the summary prints it, between blanks ("  12.3 ms"). */
static char *secs(double ns)
{
	static char buf[4][40];
	static int k;
	char d[32];
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], " %s", sp_render_duration(d, sizeof d, ns));
	return buf[k];
}

/* Seed 003's loop: setup, 6 timesteps of assemble + solve, 2 checkpoints. */
static struct sp_profile *seed_profile(int64_t *own)
{
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	int64_t children = 0, parent = 0;
	event(rk, "setup", 1959806, 12039456);
	int64_t t = 12221036;
	for (int step = 0; step < 6; step++) {
		int64_t a0 = t + 2000, a1 = a0 + 2068768, s0 = a1 + 1000, s1 = s0 + 2068768 + MS * step;
		event(rk, "timestep", t, s1 + 2000);
		event(rk, "assemble", a0, a1);
		event(rk, "solve", s0, s1);
		parent += s1 + 2000 - t;
		children += (a1 - a0) + (s1 - s0);
		t = s1 + 5000;
		if (step % 3 == 2) {
			event(rk, "checkpoint", t, t + 4069000);
			t += 4070000;
		}
	}
	finish(p);
	*own = parent - children;
	return p;
}

static void test_bytes(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(sp_render_bytes(b, sizeof b, 0), "     0 B  ");
	assert_string_equal(sp_render_bytes(b, sizeof b, 1023), "  1023 B  ");
	assert_string_equal(sp_render_bytes(b, sizeof b, 1024), "  1.00 KiB");
	assert_string_equal(sp_render_bytes(b, sizeof b, 1536), "  1.50 KiB");
	assert_string_equal(sp_render_bytes(b, sizeof b, 100.0 * 1024 * 1024), " 100.0 MiB");
	assert_string_equal(sp_render_bytes(b, sizeof b, 1048575), "  1.00 MiB");   /* not 1024.0 KiB */
	assert_string_equal(sp_render_bytes(b, sizeof b, -2048), " -2.00 KiB");
	assert_string_equal(sp_render_bytes(b, sizeof b, 9.3e18), "  8.07 EiB");
}

static void test_seconds(void **state)
{
	(void)state;
	char buf[32];
	assert_string_equal(sp_render_seconds(buf, sizeof buf, 2191000), " 0.002191");
	assert_string_equal(sp_render_seconds(buf, sizeof buf, 12345678000.0), "12.345678");
	assert_string_equal(sp_render_seconds(buf, sizeof buf, 999.5e9), "999.500000");
	assert_string_equal(sp_render_seconds(buf, sizeof buf, 12345.7e9), "  12345.7");
	assert_string_equal(sp_render_seconds(buf, sizeof buf, 999.9999996e9), "   1000.0");
	assert_string_equal(sp_render_seconds(buf, sizeof buf, 0), " 0.000000");
}

static void test_seed_tree(void **state)
{
	(void)state;
	int64_t own;
	struct sp_profile *p = seed_profile(&own);
	char *out = render(p, SP_RENDER_ALL);
	assert_true(strncmp(out, "Profile: test.h5\n", 17) == 0);
	char *l = line_starting(out, "1 rank(s), 5 regions, 21 calls, run span ");
	assert_non_null(l);
	char want[96];
	snprintf(want, sizeof want, "1 rank(s), 5 regions, 21 calls, run span%s",
		 secs((double)sp_rank_span(&p->ranks[0])));
	assert_string_equal(l, want);
	assert_non_null(line_starting(out, "Call tree"));
	l = line_starting(out, "region");
	assert_non_null(strstr(l, "calls"));
	assert_non_null(strstr(l, "total"));
	assert_null(strstr(l, "[s]"));
	assert_non_null(strstr(l, "% run"));
	assert_non_null(line_starting(out, "setup  "));
	assert_null(line_starting(out, "setup (1x)"));
	assert_non_null(line_starting(out, "timestep (6x) "));
	/* The (own) row is the first child, with the self time and no calls. */
	l = line_after(out, "timestep (6x)");
	assert_non_null(l);
	assert_true(strncmp(l, "├─ (own) ", strlen("├─ (own) ")) == 0);
	/* Nothing but blanks between the label and the time: no call count. */
	const char *t = strstr(l, secs((double)own));
	assert_non_null(t);
	for (const char *c = l + strlen("├─ (own)"); c < t; c++)
		assert_int_equal(*c, ' ');
	assert_non_null(line_starting(out, "├─ assemble (6x) "));
	assert_non_null(line_starting(out, "└─ solve (6x) "));
	assert_non_null(line_starting(out, "checkpoint (2x) "));
	/* Leaves have no (own) row. */
	assert_int_equal(strstr(strstr(out, "(own)") + 1, "(own)") != NULL, 0);
	assert_true(max_columns(out) <= 80);
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* The flat table: sorted by total, one-rank columns, std of the solve. */
static void test_seed_flat(void **state)
{
	(void)state;
	int64_t own;
	struct sp_profile *p = seed_profile(&own);
	char *out = render(p, SP_RENDER_FLAT);
	assert_null(strstr(out, "Call tree"));
	assert_non_null(line_starting(out, "Regions"));
	char *l = line_after(out, "Regions");
	assert_non_null(strstr(l, "total"));
	assert_non_null(strstr(l, "self"));
	assert_non_null(strstr(l, "mean"));
	assert_non_null(strstr(l, "std"));
	assert_null(strstr(l, "[s]"));
	const char *order[] = { "timestep ", "solve ", "assemble ", "setup ", "checkpoint " };
	const char *at = strstr(out, "\n─");
	for (int i = 0; i < 5; i++) {
		at = strchr(at + 1, '\n') + 1;
		assert_true(strncmp(at, order[i], strlen(order[i])) == 0);
	}
	const struct sp_stats *st = &p->ranks[0].regions[region(&p->ranks[0], "solve")].stats;
	l = line_starting(out, "solve ");
	assert_non_null(strstr(l, secs(st->std_ns)));
	assert_non_null(strstr(l, secs((double)st->max_ns)));
	/* self: a leaf's is its total; timestep's is its (own) time. */
	char row[160];
	snprintf(row, sizeof row, "%s %s", secs((double)st->total_ns), secs((double)st->total_ns));
	assert_non_null(strstr(l, row));
	const struct sp_stats *ts = &p->ranks[0].regions[region(&p->ranks[0], "timestep")].stats;
	snprintf(row, sizeof row, "%s %s", secs((double)ts->total_ns), secs((double)own));
	assert_non_null(strstr(line_starting(out, "timestep "), row));
	assert_true(max_columns(out) <= 80);
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* Seed 003's two-rank file: rank 1 is 1.6 times slower. */
static void test_two_rank_imbalance(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(2);
	const int64_t starts[] = { 0, 500 * MS, 1000 * MS };
	const int64_t durs[] = { 200 * MS, 250 * MS, 200 * MS };
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 3; i++)
			event(&p->ranks[r], "solve", starts[i], starts[i] + durs[i] * (r ? 16 : 10) / 10);
	finish(p);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "2 rank(s), 1 region, 6 calls, run span 1.32 s"));
	char *l = line_starting(out, "Regions");
	assert_non_null(strstr(l, "2 ranks"));
	l = line_after(out, "Regions");
	assert_non_null(strstr(l, "mean/rank"));
	assert_non_null(strstr(l, "self/rank"));
	assert_non_null(strstr(l, "imbalance"));
	l = line_starting(out, "solve  ");
	assert_non_null(l);
	assert_non_null(strstr(l, " 845 ms     845 ms"));   /* mean total and self per rank */
	assert_non_null(strstr(l, " 650 ms"));
	assert_non_null(strstr(l, " 1.04 s"));
	assert_non_null(strstr(l, "1.60x"));
	/* The tree sums the ranks and says so. */
	assert_non_null(strstr(line_starting(out, "Call tree"), "sum of 2 ranks"));
	l = line_starting(out, "solve (6x)");
	assert_non_null(l);
	assert_non_null(strstr(l, " 1.69 s"));
	assert_non_null(strstr(l, "64.0"));   /* 1.69 s of 2 x 1.32 s */
	assert_true(max_columns(out) <= 80);
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* Sets region name's values on rk: kind, total and peak (the columns are
 * not needed for the summary). */
static void set_values(struct sp_rank *rk, const char *name, int kind, int64_t total, int64_t peak)
{
	struct sp_region_data *rd = &rk->regions[region(rk, name)];
	rd->value_kind = kind;
	rd->values_total = total;
	rd->peak_bytes = peak;
}

/* Bytes allocated (run --memory) and moved (run --mpi-calls): a table each
 * after the region table, summed over ranks with binary units, the peak the
 * highest rank's; the JSON carries the exact numbers. */
static void test_values_tables(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(2);
	for (int r = 0; r < 2; r++) {
		event(&p->ranks[r], "solve", 0, 900 * MS);
		event(&p->ranks[r], "MPI_Allreduce", 100 * MS, 200 * MS);
		event(&p->ranks[r], "MPI_Allreduce", 300 * MS, 400 * MS);
		event(&p->ranks[r], "io", 950 * MS, 990 * MS);
	}
	finish(p);
	set_values(&p->ranks[0], "solve", SP_VALUES_ALLOC_BYTES, 3 << 20, 5 << 20);
	set_values(&p->ranks[1], "solve", SP_VALUES_ALLOC_BYTES, 1 << 20, 7 << 20);
	set_values(&p->ranks[0], "MPI_Allreduce", SP_VALUES_BYTES, 800, 0);
	set_values(&p->ranks[1], "MPI_Allreduce", SP_VALUES_BYTES, 800, 0);
	set_values(&p->ranks[1], "io", 0, 0, 2048);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "Allocations"));
	assert_non_null(strstr(line_after(out, "Allocations"), "peak live"));
	char *l = line_starting(out, "solve  ");
	assert_non_null(l);
	l = strstr(out, "Allocations");
	char *solve = line_starting(l, "solve ");
	assert_non_null(solve);
	assert_non_null(strstr(solve, "  4.00 MiB"));   /* 3 + 1 MiB over both ranks */
	assert_non_null(strstr(solve, "  2.00 MiB"));   /* per call: 2 calls */
	assert_non_null(strstr(solve, "  7.00 MiB"));   /* rank 1's peak */
	char *io = line_starting(l, "io ");
	assert_non_null(io);
	assert_non_null(strstr(io, "  2.00 KiB"));
	/* not in the allocations table: first named under the MPI table's title */
	assert_true(strstr(l, "MPI_Allreduce") > strstr(l, "MPI calls"));
	l = strstr(out, "MPI calls");
	assert_non_null(l);
	char *mpi = line_starting(l, "MPI_Allreduce ");
	assert_non_null(mpi);
	assert_non_null(strstr(mpi, "  1.56 KiB"));
	assert_non_null(strstr(mpi, "    400 B"));
	assert_true(max_columns(out) <= 80);
	free(out);

	char *buf = render_opts(p, &(struct sp_render_opts){ .json = 1 });
	assert_non_null(strstr(buf, "\"alloc_bytes\": 4194304, \"peak_live_bytes\": 7340032"));
	assert_non_null(strstr(buf, "\"bytes\": 1600"));
	assert_non_null(strstr(buf, "\"peak_live_bytes\": 2048"));
	free(buf);
	sp_profile_free(p);

	/* None: no tables. */
	p = profile_new(1);
	event(&p->ranks[0], "solve", 0, 10);
	finish(p);
	out = render(p, SP_RENDER_ALL);
	assert_null(strstr(out, "Allocations"));
	assert_null(strstr(out, "MPI calls"));
	free(out);
	sp_profile_free(p);
}

/* Trees merge by path across ranks; a region missing on a rank is flagged. */
static void test_ranks_merge_and_missing(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(4);
	for (int r = 0; r < 4; r++) {
		struct sp_rank *rk = &p->ranks[r];
		event(rk, "step", 0, 100 * MS);
		event(rk, "halo", 10 * MS, 20 * MS);
		if (r != 2)
			event(rk, "io", 30 * MS, 40 * MS + r * MS);
		if (r == 3)   /* io at a different path on one rank */
			event(rk, "io", 200 * MS, 210 * MS);
	}
	finish(p);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "step (4x) "));
	assert_non_null(line_starting(out, "├─ halo (4x) "));
	assert_non_null(line_starting(out, "└─ io (3x) "));
	assert_non_null(line_starting(out, "io  "));   /* the root one, 1 call */
	char *l = line_starting(strstr(out, "Regions"), "io ");
	assert_non_null(strstr(l, "ranks 3/4"));
	assert_non_null(strstr(l, " 0 ns"));   /* min rank: the missing one */
	l = line_starting(strstr(out, "Regions"), "halo ");
	assert_non_null(strstr(l, "1.00x"));
	assert_non_null(line_starting(out, "ranks k/4:"));
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* Connectors: ├─ for all but the last child, └─ for the last, │ below an
 * ancestor that has later siblings. */
static void test_connectors(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	event(rk, "a", 0, 100);
	event(rk, "b", 10, 50);
	event(rk, "c", 20, 30);
	event(rk, "d", 30, 40);
	event(rk, "e", 60, 90);
	event(rk, "f", 200, 300);
	finish(p);
	char *out = render(p, SP_RENDER_TREE);
	const char *rows[] = { "a ", "├─ (own) ", "├─ b ", "│  ├─ (own) ", "│  ├─ c ", "│  └─ d ",
			       "└─ e ", "f " };
	const char *at = strstr(out, "\n─");
	assert_non_null(at);
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		at = strchr(at + 1, '\n') + 1;
		assert_true(strncmp(at, rows[i], strlen(rows[i])) == 0);
	}
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* Long names widen the name column up to a cap, then lose their middle,
 * keeping their start and their end (the function's name). */
static void test_long_names(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	char name[201];
	memset(name, 'n', 200);
	name[200] = '\0';
	memcpy(name, "pkg.module.", 11);
	memcpy(name + 200 - 12, ".exec_module", 12);
	event(rk, "main", 0, 10 * S);
	event(rk, name, 1 * S, 2 * S);
	event(rk, name, 3 * S, 4 * S);
	event(rk, "pkg.module.Solver.a_rather_long_method_name", 5 * S, 6 * S);
	finish(p);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(strstr(out, "…"));
	assert_null(strstr(out, name));
	/* The cut keeps the start, the end and the call count. */
	assert_non_null(strstr(out, "n…nnn"));
	assert_non_null(strstr(out, "n.exec_module (2x) "));
	assert_non_null(line_starting(out, "├─ pkg.module.nn"));
	assert_non_null(line_starting(strstr(out, "Regions"), "pkg.module.n…"));
	assert_non_null(line_starting(strstr(out, "Regions"), "pkg.module.S….a_rather_long_method_name "));
	assert_non_null(strstr(strstr(out, "Regions"), "n.exec_module "));
	assert_non_null(line_starting(out, "└─ pkg.module.Solver.a_rather_long_method_name "));
	assert_true(max_columns(out) > 80);
	assert_true(max_columns(out) <= 100);
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* A 100-deep recursion: the prefix is cut on its left, the name stays. */
static void test_deep_tree(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	for (int64_t i = 0; i < 100; i++)
		event(&p->ranks[0], "mod.recurse", 10 * i, 10000 - 10 * i);
	finish(p);
	char *out = render(p, SP_RENDER_TREE);
	assert_null(strstr(out, "Regions"));
	assert_true(max_columns(out) <= 100);
	assert_non_null(strstr(out, "…"));
	/* Every node row still shows its name. */
	int rows = 0;
	for (const char *l = strstr(out, "mod.recurse"); l; l = strstr(l + 1, "mod.recurse"))
		rows++;
	assert_int_equal(rows, 100);
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* The recorded run gives the span and the % run; names with odd bytes are
 * shown safely and keep the columns aligned. */
static void test_span_and_odd_names(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	rk->run_start_ns = 0;
	rk->run_end_ns = 4 * S;
	event(rk, "résumé", 1 * S, 2 * S);
	event(rk, "tab\there", 2 * S, 2 * S + 500 * MS);
	event(rk, "bad\xff", 3 * S, 3 * S + 1);
	finish(p);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "1 rank(s), 3 regions, 3 calls, run span 4.00 s"));
	char *l = line_starting(out, "résumé ");
	assert_non_null(l);
	assert_non_null(strstr(l, "25.0"));
	assert_non_null(line_starting(out, "tab?here "));
	assert_non_null(line_starting(out, "bad? "));
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

static void test_empty(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	region(&p->ranks[0], "never");
	finish(p);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "1 rank(s), 1 region, 0 calls, run span 0 ns"));
	assert_non_null(line_starting(out, "(no calls recorded)"));
	assert_non_null(line_starting(out, "never "));
	free(out);
	sp_profile_free(p);

	p = profile_new(0);
	out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "0 rank(s), 0 regions, 0 calls"));
	assert_non_null(line_starting(out, "(no regions)"));
	free(out);
	sp_profile_free(p);
}

static void test_write_error(void **state)
{
	(void)state;
	FILE *f = fopen("/dev/full", "w");
	if (!f)
		skip();
	int64_t own;
	struct sp_profile *p = seed_profile(&own);
	struct sp_error err = { 0 };
	assert_int_equal(sp_render_summary(f, p, "x", SP_RENDER_ALL, &err), SP_EIO);
	assert_int_equal(err.code, SP_EIO);
	fclose(f);
	sp_profile_free(p);
}

/* Sets the host names of p's ranks: one entry per rank, NULL for none. */
static void set_hosts(struct sp_profile *p, const char *const *hosts)
{
	for (size_t r = 0; r < p->nranks; r++)
		p->ranks[r].hostname = hosts[r] ? strdup(hosts[r]) : NULL;
}

static void assert_hosts(const struct sp_profile *p, const char *want)
{
	char *got = sp_profile_hosts(p);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* Which ranks ran where: hosts in the order of their lowest rank. */
static void test_hosts(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(8);
	set_hosts(p, (const char *const[]){ "A", "A", "A", "A", "B", "B", "B", "B" });
	assert_hosts(p, "A: 0-3; B: 4-7");
	sp_profile_free(p);

	p = profile_new(4);   /* interleaved */
	set_hosts(p, (const char *const[]){ "A", "B", "A", "B" });
	assert_hosts(p, "A: 0,2; B: 1,3");
	sp_profile_free(p);

	p = profile_new(5);   /* by lowest rank, not by name */
	set_hosts(p, (const char *const[]){ "zeta", "alpha", "zeta", "zeta", "alpha" });
	assert_hosts(p, "zeta: 0,2,3; alpha: 1,4");
	sp_profile_free(p);

	p = profile_new(6);   /* missing and empty host names: "?" */
	set_hosts(p, (const char *const[]){ NULL, "A", "", "A", "B", NULL });
	assert_hosts(p, "?: 0,2,5; A: 1,3; B: 4");
	sp_profile_free(p);

	p = profile_new(3);   /* none known */
	assert_hosts(p, "?: 0-2");
	sp_profile_free(p);

	p = profile_new(0);
	assert_hosts(p, "");
	sp_profile_free(p);

	p = profile_new(4);   /* rank numbers with gaps, negative and large ones */
	const int nums[] = { -3, 7, 8, 2147483647 };
	for (int r = 0; r < 4; r++)
		p->ranks[r].rank = nums[r];
	set_hosts(p, (const char *const[]){ "h1", "h2", "h1", "h2" });
	assert_hosts(p, "h1: -3,8; h2: 7,2147483647");
	sp_profile_free(p);

	/* Never cut, however long: 1000 ranks alternating between two hosts. */
	p = profile_new(1000);
	for (size_t r = 0; r < 1000; r++)
		p->ranks[r].hostname = strdup(r % 2 ? "odd" : "even");
	char *want = malloc(8000), *at = want;
	at += sprintf(at, "even: 0");
	for (int r = 2; r < 1000; r += 2)
		at += sprintf(at, ",%d", r);
	at += sprintf(at, "; odd: 1");
	for (int r = 3; r < 1000; r += 2)
		at += sprintf(at, ",%d", r);
	assert_hosts(p, want);
	free(want);
	sp_profile_free(p);
}

/* Several ranks: on how many hosts, which ranks where, the cores. */
static void test_hosts_header(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(8);
	for (int r = 0; r < 8; r++)
		event(&p->ranks[r], "solve", 0, (r + 1) * 100 * MS);
	finish(p);
	set_hosts(p, (const char *const[]){ "nodeA", "nodeA", "nodeA", "nodeA", "nodeB", "nodeB",
					    "nodeB", "nodeB" });
	p->meta = calloc(2, sizeof *p->meta);
	assert_non_null(p->meta);
	p->meta[0] = (struct sp_kv){ strdup("mpi_size"), strdup("8"), SP_KV_FIXED };
	p->meta[1] = (struct sp_kv){ strdup("omp_num_threads"), strdup("2"), SP_KV_FIXED };
	p->nmeta = 2;
	char *out = render(p, SP_RENDER_FLAT);
	assert_non_null(line_starting(out, "8 ranks on 2 hosts, 1 region, 8 calls, run span "));
	char *l = line_starting(out, "hosts: ");
	assert_non_null(l);
	assert_string_equal(l, "hosts: nodeA: 0-3; nodeB: 4-7");
	l = line_after(out, "hosts: ");
	assert_string_equal(l, "cores: 8 ranks × 2 OpenMP threads = 16");
	assert_true(max_columns(out) <= 80);
	free(out);
	/* No host names: the counts as before and no hosts line; the cores
	 * line needs a positive number. */
	for (int r = 0; r < 8; r++) {
		free(p->ranks[r].hostname);
		p->ranks[r].hostname = NULL;
	}
	free(p->meta[1].value);
	p->meta[1].value = strdup("");
	out = render(p, SP_RENDER_FLAT);
	assert_non_null(line_starting(out, "8 rank(s), 1 region, 8 calls, run span "));
	assert_null(strstr(out, "hosts:"));
	assert_null(strstr(out, "cores:"));
	free(out);
	sp_profile_free(p);
}

/* Durations in the unit that keeps them below 1000, three digits. */
static void test_durations(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(sp_render_duration(b, sizeof b, 0), "0 ns");
	assert_string_equal(sp_render_duration(b, sizeof b, 472), "472 ns");
	assert_string_equal(sp_render_duration(b, sizeof b, 999.4), "999 ns");
	assert_string_equal(sp_render_duration(b, sizeof b, 999.6), "1.00 µs");   /* not 1000 ns */
	assert_string_equal(sp_render_duration(b, sizeof b, 472000), "472 µs");
	assert_string_equal(sp_render_duration(b, sizeof b, 12.3e6), "12.3 ms");
	assert_string_equal(sp_render_duration(b, sizeof b, 99.96e6), "100 ms");
	assert_string_equal(sp_render_duration(b, sizeof b, 1.2e9), "1.20 s");
	assert_string_equal(sp_render_duration(b, sizeof b, 3600e9), "3600 s");
	assert_string_equal(sp_render_duration(b, sizeof b, -2.5e6), "-2.50 ms");
	assert_string_equal(sp_render_duration(b, sizeof b, NAN), "-");
	assert_int_equal(sp_render_text_width(sp_render_duration(b, sizeof b, 12.3e3)), 7);
}

/* A partial profile's line: from the time origin (the run's start, else
 * the first call) to the last flush; nothing for a finished profile. */
static void test_partial_line(void **state)
{
	(void)state;
	char b[256];
	struct sp_profile *p = profile_new(1);
	assert_int_equal(sp_render_partial(b, sizeof b, p, "x.h5"), 0);
	assert_string_equal(b, "");
	p->partial = 1;
	p->partial_until_ns = 5 * S;
	assert_int_equal(sp_render_partial(b, sizeof b, p, "x.h5.partial"), 1);
	assert_string_equal(b, "x.h5.partial: incomplete profile (a run still going, or killed): no call "
			       "recorded yet");
	event(&p->ranks[0], "solve", 2 * S, 3 * S);
	finish(p);
	sp_render_partial(b, sizeof b, p, "x.h5.partial");
	assert_string_equal(b, "x.h5.partial: incomplete profile (a run still going, or killed): calls up to "
			       "3.00 s after its start");
	p->ranks[0].run_start_ns = S - 12 * MS;
	sp_render_partial(b, sizeof b, p, "x.h5.partial");
	assert_non_null(strstr(b, "calls up to 4.01 s after its start"));
	p->partial_until_ns = 0;       /* a flush before the start: 0 s */
	sp_render_partial(b, sizeof b, p, "x.h5.partial");
	assert_non_null(strstr(b, "calls up to 0 ns after its start"));
	sp_profile_free(p);
}

/* Names lose their middle: start and end (the function name) stay. */
static void test_text_mid(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *name = "importlib._bootstrap_external._LoaderBasics.exec_module";
	assert_int_equal(sp_render_text_mid(f, name, 43), 43);
	fputc('|', f);
	assert_int_equal(sp_render_text_mid(f, "short.name", 43), 10);
	fputc('|', f);
	assert_int_equal(sp_render_text_mid(f, "résumé.überlänge.funktion", 12), 12);
	fputc('|', f);
	assert_int_equal(sp_render_text_mid(f, name, 6), 6);   /* too narrow: cut at the end */
	fclose(f);
	assert_string_equal(buf, "importlib._boo…al._LoaderBasics.exec_module|short.name|"
				 "rés…funktion|impor…");
	free(buf);
}

/* 1000 sub-microsecond calls: mean, min and max in ns, never 0. */
static void test_short_calls(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	for (int64_t i = 0; i < 1000; i++)
		event(&p->ranks[0], "tiny", 1000 * i, 1000 * i + 300 + i % 3 * 100);
	finish(p);
	char *out = render(p, SP_RENDER_FLAT);
	char *l = line_starting(out, "tiny ");
	assert_non_null(l);
	assert_null(strstr(l, "0.000000"));
	assert_non_null(strstr(l, " 400 ns "));   /* mean */
	assert_non_null(strstr(l, " 300 ns "));   /* min */
	assert_non_null(strstr(l, " 500 ns "));   /* max */
	assert_non_null(strstr(l, " 400 µs "));   /* total, self */
	assert_aligned(out);
	free(out);
	sp_profile_free(p);
}

/* A recursive region's total counts its outermost calls once; self and
 * --sort self; the JSON keeps the raw sum beside them. */
static void test_recursive_totals(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	event(rk, "main", 0, 100 * MS);
	for (int64_t d = 0; d < 10; d++)   /* fib nested 10 deep: 80 ms outermost */
		event(rk, "fib", 10 * MS + d * MS, 90 * MS - d * MS);
	event(rk, "work", 91 * MS, 99 * MS);
	finish(p);
	char *out = render(p, SP_RENDER_FLAT);
	char *l = line_starting(out, "fib ");
	assert_non_null(l);
	assert_non_null(strstr(l, "   10  80.0 ms  80.0 ms "));   /* calls, total, self */
	l = line_starting(out, "main ");
	assert_non_null(strstr(l, " 100 ms  12.0 ms "));
	/* The order by total: main, fib, work; by self: fib, main, work. */
	assert_true(strstr(out, "\nmain ") < strstr(out, "\nfib "));
	free(out);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct sp_error err = { 0 };
	struct sp_render_opts o = { .parts = SP_RENDER_FLAT, .sort = SP_SORT_SELF };
	assert_int_equal(sp_render_summary_opts(f, p, "t.h5", &o, &err), SP_OK);
	fclose(f);
	assert_true(strstr(buf, "\nfib ") < strstr(buf, "\nmain "));
	assert_true(strstr(buf, "\nmain ") < strstr(buf, "\nwork "));
	free(buf);
	f = open_memstream(&buf, &len);
	o = (struct sp_render_opts){ .json = 1, .sort = SP_SORT_SELF };
	assert_int_equal(sp_render_summary_opts(f, p, "t.h5", &o, &err), SP_OK);
	fclose(f);
	assert_non_null(strstr(buf, "\"sort\": \"self\""));
	/* raw: 80 + 78 + ... + 62 ms = 710 ms */
	assert_non_null(strstr(buf, "{\"name\": \"fib\", \"calls\": 10, \"total_s\": 0.080000000, "
				    "\"self_s\": 0.080000000, \"raw_total_s\": 0.710000000, \"mean_s\": 0.071000000"));
	assert_non_null(strstr(buf, "\"rank_totals_s\": [0.080000000]"));
	free(buf);
	/* A rank without a tree: raw sums, said in a note. */
	free(rk->tree);
	rk->tree = NULL;
	rk->ntree = 0;
	out = render(p, SP_RENDER_FLAT);
	assert_non_null(strstr(line_starting(out, "fib "), " 710 ms "));
	assert_non_null(line_starting(out, "note: a rank without a call tree"));
	free(out);
	/* Its tree section says how to get the tree, not that there are no calls. */
	out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "(not built at the end of the run: `scope-profiler summary FILE` builds it)"));
	assert_null(strstr(out, "(no calls recorded)"));
	free(out);
	sp_profile_free(p);
}

/* A profile with child processes of the run (run --subprocesses): the
 * header counts processes, the dropped calls name the process, the JSON
 * lists each rank's pid and parent; without children nothing changes. */
static void test_child_processes(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(3);
	for (int r = 0; r < 3; r++) {
		p->ranks[r].pid = r ? 4000 + r : 100;
		event(&p->ranks[r], "main", 0, (r + 1) * S);
	}
	event(&p->ranks[1], "io", 0, S / 2);   /* on one process only */
	p->ranks[1].parent_pid = 100;
	p->ranks[2].parent_pid = 4001;          /* a grandchild */
	p->ranks[2].regions[0].dropped = 5;
	p->ranks[2].dropped = 5;
	finish(p);
	char *out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "3 processes (this run and 2 child processes), 2 regions, 4 calls"));
	assert_null(strstr(out, "rank"));   /* the table's columns and notes too */
	assert_non_null(strstr(out, "Regions (3 processes: "));
	assert_non_null(strstr(line_after(out, "Regions"), "mean/process"));
	assert_non_null(strstr(line_starting(strstr(out, "Regions"), "io "), "processes 1/3"));
	assert_non_null(line_starting(out, "processes k/3: recorded on k processes only"));
	assert_non_null(line_starting(out, "Call tree (sum of 3 processes; "));
	assert_non_null(strstr(out, "(main on process 2 (pid 4002): 5)"));
	free(out);

	struct sp_render_opts json = { .json = 1 };
	char *buf = render_opts(p, &json);
	assert_non_null(strstr(buf, "\"ranks\": [0, 1, 2],\n  \"processes\": [{\"rank\": 0, \"pid\": 100, "
				    "\"parent_pid\": 0}, {\"rank\": 1, \"pid\": 4001, \"parent_pid\": 100}, "
				    "{\"rank\": 2, \"pid\": 4002, \"parent_pid\": 4001}],\n"));
	free(buf);

	/* The same ranks as MPI ranks: the output of before. */
	p->ranks[1].parent_pid = p->ranks[2].parent_pid = 0;
	out = render(p, SP_RENDER_ALL);
	assert_non_null(line_starting(out, "3 rank(s), 2 regions, 4 calls"));
	assert_null(strstr(out, "process"));
	assert_non_null(strstr(line_starting(strstr(out, "Regions"), "io "), "ranks 1/3"));
	assert_non_null(strstr(out, "(main on rank 2: 5)"));
	free(out);
	buf = render_opts(p, &json);
	assert_null(strstr(buf, "processes"));
	assert_null(strstr(buf, "pid"));
	free(buf);
	sp_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_partial_line),
		cmocka_unit_test(test_text_mid),
		cmocka_unit_test(test_short_calls),
		cmocka_unit_test(test_recursive_totals),
		cmocka_unit_test(test_seed_tree),
		cmocka_unit_test(test_seed_flat),
		cmocka_unit_test(test_two_rank_imbalance),
		cmocka_unit_test(test_ranks_merge_and_missing),
		cmocka_unit_test(test_connectors),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_deep_tree),
		cmocka_unit_test(test_span_and_odd_names),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_hosts_header),
		cmocka_unit_test(test_values_tables),
		cmocka_unit_test(test_child_processes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
