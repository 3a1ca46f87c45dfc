/* test_render_opts.c - unit tests of the summary's options (sort, selection,
 * JSON) and of the JSON string and rank list helpers. */
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
#include "sp_json.h"
#include "sp_render.h"

#define MS 1000000LL
#define SEC (1000 * MS)

static struct sp_profile *profile_new(size_t nranks)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->nranks = nranks;
	p->ranks = calloc(nranks, sizeof *p->ranks);
	assert_non_null(p->ranks);
	for (size_t r = 0; r < nranks; r++) {
		p->ranks[r].rank = (int)r;
		p->ranks[r].run_start_ns = p->ranks[r].run_end_ns = SP_NO_TIME;
	}
	return p;
}

static void event(struct sp_rank *rk, const char *name, int64_t start, int64_t end)
{
	size_t i = 0;
	while (i < rk->nregions && strcmp(rk->regions[i].name, name) != 0)
		i++;
	if (i == rk->nregions) {
		rk->regions = realloc(rk->regions, (i + 1) * sizeof *rk->regions);
		assert_non_null(rk->regions);
		memset(&rk->regions[i], 0, sizeof rk->regions[i]);
		rk->regions[i].name = strdup(name);
		rk->regions[i].owns_events = 1;
		rk->nregions++;
	}
	struct sp_region_data *rd = &rk->regions[i];
	size_t n = (size_t)rd->stats.num_calls;
	rd->starts = realloc(rd->starts, (n + 1) * sizeof *rd->starts);
	rd->ends = realloc(rd->ends, (n + 1) * sizeof *rd->ends);
	assert_true(rd->starts && rd->ends);
	rd->starts[n] = start;
	rd->ends[n] = end;
	rd->stats.num_calls++;
}

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

static char *render(const struct sp_profile *p, const struct sp_render_opts *o, enum sp_err want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct sp_error err = {0};
	assert_int_equal(sp_render_summary_opts(f, p, "t.h5", o, &err), want);
	assert_int_equal(fclose(f), 0);
	if (getenv("SP_TEST_SHOW"))
		fputs(buf, stdout);
	if (want != SP_OK) {
		free(buf);
		return strdup(err.msg);
	}
	return buf;
}

/* The first line of out that starts with prefix, or NULL. */
static const char *line(const char *out, const char *prefix)
{
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, prefix, strlen(prefix)) == 0)
			return l;
	return NULL;
}

/* Under a limit: the heaviest entries with their callers, the others of a
 * list summed in its closing row, a light (own) row joining it, the table
 * cut, and the last line counting what was left out. */
static void test_limits(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	event(rk, "main", 0, 100 * SEC);
	event(rk, "a", 1, 10 * SEC);      /* main's own: 1 ns */
	event(rk, "b", 10 * SEC, 70 * SEC);
	event(rk, "b.inner", 11 * SEC, 60 * SEC);
	event(rk, "c", 70 * SEC, 75 * SEC);
	event(rk, "d", 75 * SEC, 100 * SEC);
	finish(p);
	char *out = render(p, &(struct sp_render_opts){ .parts = SP_RENDER_ALL, .top = 3 }, SP_OK);
	/* main 100, b 60, b.inner 49 are the 3 heaviest; a 10, c 5, d 25 are
	 * left out of main's list: "… (own) + 3 more", 40 s and 1 ns. */
	assert_non_null(line(out, "main "));
	assert_non_null(line(out, "├─ b "));
	assert_non_null(line(out, "│  ├─ (own) "));
	assert_non_null(line(out, "│  └─ b.inner "));
	const char *more = line(out, "└─ … (own) + 3 more ");
	assert_non_null(more);
	const char *forty = strstr(more, " 40.0 s ");
	assert_true(forty && forty < strchr(more, '\n'));
	assert_null(strstr(out, "─ a "));
	assert_null(strstr(out, "─ d "));
	/* The table: its 3 first rows by total. */
	assert_non_null(line(out, "main "));
	assert_null(line(out, "c "));
	assert_non_null(strstr(out, "\nLeft out: 3 of 6 call-tree entries (the largest 25.0% of the run) "
				    "and 3 of 6 regions (the largest 25.0%); --all shows every one.\n"));
	free(out);
	/* --depth 1: main alone (a row whose children are all left out is
	 * not opened: its total says it all). */
	out = render(p, &(struct sp_render_opts){ .parts = SP_RENDER_TREE, .top = -1, .depth = 1,
						       .more_hint = "`summary --all x.h5`" }, SP_OK);
	assert_non_null(line(out, "main "));
	assert_null(strstr(out, "─ "));
	assert_non_null(strstr(out, "Left out: 5 of 6 call-tree entries (the largest 60.0% of the "
				    "run); `summary --all x.h5` shows every one.\n"));
	free(out);
	/* Roots left out: one closing row at the top level, wide enough. */
	struct sp_profile *q = profile_new(1);
	event(&q->ranks[0], "a", 0, 60 * SEC);
	event(&q->ranks[0], "b", 60 * SEC, 90 * SEC);
	event(&q->ranks[0], "c", 90 * SEC, 100 * SEC);
	finish(q);
	char *o2 = render(q, &(struct sp_render_opts){ .parts = SP_RENDER_TREE, .top = 1 }, SP_OK);
	assert_non_null(line(o2, "a "));
	more = line(o2, "… 2 more ");
	assert_non_null(more);
	forty = strstr(more, " 40.0 s ");
	assert_true(forty && forty < strchr(more, '\n'));
	free(o2);
	sp_profile_free(q);
	/* Without lanes, threads' overlapping calls can make a child heavier
	 * than its parent: what fits is still shown (main, when main/work
	 * with its parent does not fit in 1). */
	q = profile_new(1);
	event(&q->ranks[0], "main", 0, 6 * SEC);
	event(&q->ranks[0], "work", 1 * SEC, 5 * SEC);
	event(&q->ranks[0], "work", 2 * SEC, 5900 * MS);
	event(&q->ranks[0], "work", 3 * SEC, 5950 * MS);
	finish(q);
	o2 = render(q, &(struct sp_render_opts){ .parts = SP_RENDER_TREE, .top = 1 }, SP_OK);
	assert_non_null(line(o2, "main "));
	assert_non_null(strstr(o2, "Left out: 1 of 2 call-tree entries"));
	free(o2);
	o2 = render(q, &(struct sp_render_opts){ .parts = SP_RENDER_TREE, .top = 2 }, SP_OK);
	assert_non_null(line(o2, "└─ work (3x) "));
	assert_null(strstr(o2, "Left out"));
	free(o2);
	sp_profile_free(q);
	/* No limit reached: the output has no trace of one. */
	out = render(p, &(struct sp_render_opts){ .parts = SP_RENDER_ALL, .top = 6 }, SP_OK);
	assert_null(strstr(out, "more"));
	assert_null(strstr(out, "Left out"));
	assert_non_null(line(out, "├─ (own) "));
	free(out);
	sp_profile_free(p);
}

/* Recursion a -> b -> a with b left out: the inner a hangs on the outer a,
 * and b's own time shows in the outer a's (own) row. */
static void test_dropped_node_reattaches(void **state)
{
	struct sp_profile *p = profile_new(1);
	struct sp_rank *rk = &p->ranks[0];
	event(rk, "a", 0, 100 * MS);
	event(rk, "b", 10 * MS, 60 * MS);
	event(rk, "a", 20 * MS, 40 * MS);
	event(rk, "c", 70 * MS, 80 * MS);
	finish(p);
	struct sp_select sel = {0};
	assert_int_equal(sp_select_exclude(&sel, "b", NULL), SP_OK);
	struct sp_render_opts o = { .parts = SP_RENDER_TREE, .select = &sel };
	char *out = render(p, &o, SP_OK);
	assert_null(strstr(out, "b "));
	assert_non_null(line(out, "a  "));            /* the outer a, a root */
	assert_non_null(line(out, "├─ (own)"));
	const char *own = line(out, "├─ (own)");
	assert_non_null(strstr(own, " 70.0 ms "));       /* 100 - 20 (inner a) - 10 (c) */
	assert_non_null(line(out, "├─ a "));
	assert_non_null(line(out, "└─ c "));
	assert_non_null(line(out, "Selection: 2 of 3 regions"));
	free(out);
	sp_select_free(&sel);
	sp_profile_free(p);
}

static void test_sort_and_pooled_stats(void **state)
{
	struct sp_profile *p = profile_new(2);
	/* x: rank 0 two calls of 10 ms, rank 1 one call of 40 ms.
	 * y: rank 0 five calls of 5 ms. */
	event(&p->ranks[0], "x", 0, 10 * MS);
	event(&p->ranks[0], "x", 20 * MS, 30 * MS);
	event(&p->ranks[1], "x", 0, 40 * MS);
	for (int i = 0; i < 5; i++)
		event(&p->ranks[0], "y", (40 + 10 * i) * MS, (45 + 10 * i) * MS);
	finish(p);
	struct sp_render_opts o = { .json = 1 };
	char *out = render(p, &o, SP_OK);
	/* x: 3 calls, total 60 ms, mean 20 ms, min 10, max 40, std sqrt(200) ms. */
	const char *x = strstr(out, "{\"name\": \"x\"");
	assert_non_null(x);
	assert_non_null(strstr(x, "\"calls\": 3, \"total_s\": 0.060000000, \"self_s\": 0.060000000, "
				  "\"raw_total_s\": 0.060000000, \"mean_s\": 0.020000000, "
				  "\"min_s\": 0.010000000, \"max_s\": 0.040000000, \"std_s\": 0.014142136"));
	assert_non_null(strstr(x, "\"imbalance\": 2.000000, \"rank_totals_s\": [0.020000000, "
				  "0.040000000]"));
	const char *y = strstr(out, "{\"name\": \"y\"");
	assert_non_null(y);
	assert_true(x < y);                              /* total: x 60 ms, y 25 ms */
	assert_non_null(strstr(y, "\"imbalance\": null"));
	free(out);
	o.sort = SP_SORT_CALLS;
	out = render(p, &o, SP_OK);
	assert_true(strstr(out, "\"name\": \"y\"") < strstr(out, "\"name\": \"x\""));
	assert_non_null(strstr(out, "\"sort\": \"calls\""));
	free(out);
	o = (struct sp_render_opts){ .parts = SP_RENDER_FLAT, .sort = SP_SORT_NAME };
	out = render(p, &o, SP_OK);
	assert_true(strstr(out, "\nx ") < strstr(out, "\ny "));
	free(out);
	sp_profile_free(p);
}

static void test_ranks_selection(void **state)
{
	struct sp_profile *p = profile_new(3);
	for (int r = 0; r < 3; r++)
		event(&p->ranks[r], "x", 0, (r + 1) * 10 * MS);
	finish(p);
	struct sp_select sel = {0};
	assert_int_equal(sp_select_ranks(&sel, "1-2", NULL), SP_OK);
	struct sp_render_opts o = { .select = &sel, .json = 1 };
	char *out = render(p, &o, SP_OK);
	assert_non_null(strstr(out, "\"ranks\": [1, 2]"));
	assert_non_null(strstr(out, "\"rank_totals_s\": [0.020000000, 0.030000000]"));
	free(out);
	o.json = 0;
	out = render(p, &o, SP_OK);
	assert_non_null(line(out, "2 rank(s), 1 region, 2 calls"));
	assert_non_null(line(out, "Selection: 1 of 1 region; ranks 1,2 of 3"));
	free(out);
	sp_select_free(&sel);
	assert_int_equal(sp_select_ranks(&sel, "5-9", NULL), SP_OK);
	out = render(p, &o, SP_EINVAL);
	assert_string_equal(out, "no rank selected: the profile has ranks 0-2");
	free(out);
	sp_select_free(&sel);
	sp_profile_free(p);
}

static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	sp_json_fputs(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_json_string(void **state)
{
	struct { const char *in, *out; } cases[] = {
		{"plain", "\"plain\""},
		{"q\"b\\s", "\"q\\\"b\\\\s\""},
		{"t\tn\nr\r\x01\x1f", "\"t\\tn\\nr\\r\\u0001\\u001f\""},
		{"Ω 漢 😀 \x7f", "\"Ω 漢 😀 \x7f\""},
		{"bad\xff" "x\xc3", "\"bad\\ufffdx\\ufffd\""},
		{"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},     /* a surrogate */
		{"", "\"\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = json_of(cases[i].in);
		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void test_rank_list(void **state)
{
	char buf[64];
	assert_string_equal(sp_rank_list(buf, sizeof buf, (int[]){0, 1, 2, 3, 5}, 5), "0-3,5");
	assert_string_equal(sp_rank_list(buf, sizeof buf, (int[]){0, 1}, 2), "0,1");
	assert_string_equal(sp_rank_list(buf, sizeof buf, (int[]){7}, 1), "7");
	assert_string_equal(sp_rank_list(buf, sizeof buf, NULL, 0), "");
	assert_string_equal(sp_rank_list(buf, sizeof buf, (int[]){1, 3, 4, 5, 9, 10}, 6),
			    "1,3-5,9,10");
	assert_string_equal(sp_rank_list(buf, sizeof buf, (int[]){2147483646, 2147483647}, 2),
			    "2147483646,2147483647");
	int many[40];
	for (int i = 0; i < 40; i++)
		many[i] = 2 * i;
	sp_rank_list(buf, 20, many, 40);
	assert_true(strlen(buf) < 20);
	assert_non_null(strstr(buf, "..."));
	assert_true(strncmp(buf, "0,2,4,", 6) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dropped_node_reattaches),
		cmocka_unit_test(test_sort_and_pooled_stats),
		cmocka_unit_test(test_ranks_selection),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_rank_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
