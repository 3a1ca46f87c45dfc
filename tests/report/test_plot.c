/* test_plot.c - unit tests of the charts' SVG writer (svg.h: escaping,
 * truncation, the palette, axis numbers) and of the merging of calls
 * narrower than a pixel column (sp_plot.h), through sp_plot_gantt and
 * sp_plot_flame on profiles made here, and the charts' data the read API
 * draws (the flame chart's rows, the table of regions by name);
 * report.html's page (sp_plot_report): self-contained, names escaped, the
 * timeline's bars bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plot_int.h"
#include "sp_plot.h"
#include "sp_profile.h"
#include "svg.h"

/* What stmt wrote to mf, as a string (the caller frees it). */
#define CAPTURE(out, stmt) do { \
	size_t len_; \
	FILE *f_ = open_memstream(&(out), &len_); \
	assert_non_null(f_); \
	{ FILE *mf = f_; stmt; } \
	fclose(f_); \
} while (0)

static void expect_text(const char *in, size_t max, const char *want)
{
	char *s = NULL;
	CAPTURE(s, sp_svg_text(mf, in, max));
	assert_string_equal(s, want);
	free(s);
}

static void test_escaping(void **state)
{
	expect_text("a<b>&c\"d'e", 0, "a&lt;b&gt;&amp;c&quot;d&apos;e");
	expect_text("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80", 0, "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
	/* a malformed byte, a lone continuation byte, an overlong '/' */
	expect_text("x\xff" "y\x80z\xc0\xaf", 0,
		    "x\xef\xbf\xbdy\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd");
	/* control characters XML 1.0 does not allow; tab, newline and CR as
	 * references, which an attribute keeps (raw, they read back as spaces) */
	expect_text("a\x01" "b\x1b" "c\td\ne\rf", 0, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c&#9;d&#10;e&#13;f");
	expect_text("", 0, "");
}

static void test_truncation_counts_characters(void **state)
{
	expect_text("abcdef", 3, "abc\xe2\x80\xa6");
	expect_text("abc", 3, "abc");
	/* three characters, nine bytes: never cut inside one */
	expect_text("\xe2\x86\x92\xe2\x86\x92\xe2\x86\x92\xe2\x86\x92", 3,
		    "\xe2\x86\x92\xe2\x86\x92\xe2\x86\x92\xe2\x80\xa6");
	expect_text("<<<<", 2, "&lt;&lt;\xe2\x80\xa6");
	assert_int_equal(sp_svg_chars("a\xc3\xa9\xff"), 3);
}

static void test_document_frame(void **state)
{
	char *s = NULL;
	CAPTURE(s, (sp_svg_begin(mf, 300, 200, "t<1>"), sp_svg_end(mf)));
	assert_non_null(strstr(s, "xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(s, "width=\"300\" height=\"200\" viewBox=\"0 0 300 200\""));
	assert_non_null(strstr(s, "<title>t&lt;1&gt;</title>"));
	assert_true(strlen(s) > 8 && strcmp(s + strlen(s) - 7, "</svg>\n") == 0);
	free(s);
}

static void test_palette_is_by_name(void **state)
{
	assert_string_equal(sp_svg_colour("solve"), sp_svg_colour("solve"));
	int differ = 0;
	const char *names[] = {"a", "b", "c", "d", "e", "f"};
	for (size_t i = 1; i < 6; i++)
		differ |= strcmp(sp_svg_colour(names[0]), sp_svg_colour(names[i])) != 0;
	assert_true(differ);
	assert_int_equal(strlen(sp_svg_colour("x")), 7);
}

static void test_axis_numbers(void **state)
{
	char b[32];
	double st = sp_svg_tick_step(10, 10);
	assert_true(st == 1);
	st = sp_svg_tick_step(0.0024, 10);
	assert_true(st > 0.00024 - 1e-12 && st <= 0.0005 + 1e-12);
	assert_string_equal(sp_svg_number(b, sizeof b, 0.0005, 0.0005), "0.0005");
	assert_string_equal(sp_svg_number(b, sizeof b, 1200, 200), "1200");
	assert_string_equal(sp_svg_number(b, sizeof b, -1e-20, 0.1), "0.0");
	assert_true(sp_svg_tick_step(0, 10) == 1);
}

/* ---- merging ------------------------------------------------------------ */

struct got {
	struct sp_plot_bar b[16];
	size_t n;
};

static void collect(void *ctx, const struct sp_plot_bar *b)
{
	struct got *g = ctx;
	assert_true(g->n < 16);
	g->b[g->n++] = *b;
}

static void test_merge_narrow_calls_per_column(void **state)
{
	struct got g = {0};
	struct sp_plot_merge m = {.colw = 1, .emit = collect, .ctx = &g};
	/* three calls in column 0, one wide call, two in column 5, one in 6 */
	sp_plot_merge_call(&m, 0.1, 0.2, 0);
	sp_plot_merge_call(&m, 0.3, 0.5, 1);
	sp_plot_merge_call(&m, 0.6, 0.9, 2);
	sp_plot_merge_call(&m, 1.0, 4.5, 3);
	sp_plot_merge_call(&m, 5.1, 5.2, 4);
	sp_plot_merge_call(&m, 5.5, 5.6, 5);
	sp_plot_merge_call(&m, 6.0, 6.3, 6);
	sp_plot_merge_flush(&m);
	assert_int_equal(g.n, 4);
	assert_int_equal(m.bars, 4);
	assert_int_equal(g.b[0].calls, 3);
	assert_int_equal(g.b[0].first, 0);
	assert_true(g.b[0].x0 == 0.1 && g.b[0].x1 == 0.9);
	assert_int_equal(g.b[1].calls, 1);
	assert_int_equal(g.b[1].first, 3);
	assert_int_equal(g.b[2].calls, 2);
	assert_int_equal(g.b[2].first, 4);
	assert_true(g.b[2].x1 == 5.6);
	assert_int_equal(g.b[3].calls, 1);        /* alone in its column: not merged */
	assert_int_equal(m.merged, 5);
	/* a call at least a column wide is never merged, even in a busy column */
	struct got h = {0};
	struct sp_plot_merge w = {.colw = 4, .emit = collect, .ctx = &h};
	sp_plot_merge_call(&w, 0.0, 1.0, 0);
	sp_plot_merge_call(&w, 1.0, 5.0, 1);
	sp_plot_merge_call(&w, 5.0, 6.0, 2);      /* column 1 */
	sp_plot_merge_call(&w, 7.5, 7.9, 3);      /* column 1 */
	sp_plot_merge_call(&w, 8.0, 8.1, 4);      /* column 2 */
	sp_plot_merge_flush(&w);
	assert_int_equal(h.n, 4);
	assert_int_equal(h.b[0].calls, 1);
	assert_int_equal(h.b[1].calls, 1);
	assert_int_equal(h.b[2].calls, 2);
	assert_int_equal(h.b[3].calls, 1);
	/* flushing twice emits nothing more; an empty lane emits nothing */
	sp_plot_merge_flush(&w);
	assert_int_equal(h.n, 4);
}

/* ---- the charts over a made profile ------------------------------------- */

/* One rank, region "outer" with n calls of 10 us one after the other and,
 * inside each, "in<&>" of 1 us. */
static struct sp_profile *made(size_t n)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->nranks = 1;
	p->ranks = calloc(1, sizeof *p->ranks);
	struct sp_rank *rk = &p->ranks[0];
	rk->run_start_ns = rk->run_end_ns = INT64_MIN;
	rk->nregions = 2;
	rk->regions = calloc(2, sizeof *rk->regions);
	const char *names[] = {"outer", "in<&>"};
	for (size_t g = 0; g < 2; g++) {
		struct sp_region_data *rd = &rk->regions[g];
		rd->name = strdup(names[g]);
		rd->starts = malloc(n * sizeof *rd->starts);
		rd->ends = malloc(n * sizeof *rd->ends);
		rd->owns_events = 1;
		for (size_t i = 0; i < n; i++) {
			rd->starts[i] = 1000000 + (int64_t)i * 20000 + (g ? 2000 : 0);
			rd->ends[i] = rd->starts[i] + (g ? 1000 : 10000);
		}
		sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
	}
	return p;
}

/* The bars of the lanes from `from` on, up to the legend, and the calls
 * they hold. */
static void count_bars(const char *svg, const char *from, int64_t *bars, int64_t *calls)
{
	*bars = *calls = 0;
	const char *legend = strstr(svg, "class=\"legend\"");
	for (const char *q = strstr(svg, from); q && (q = strstr(q, "<rect x=")) && (!legend || q < legend); q++) {
		const char *end = strchr(q, '>');
		const char *c = strstr(q, "sp:calls=\"");
		(*bars)++;
		*calls += c && c < end ? strtoll(c + 10, NULL, 10) : 1;
	}
}

static void test_gantt_merges_and_counts_every_call(void **state)
{
	struct sp_profile *p = made(10);
	struct sp_plot_file f = {"made.h5", p};
	struct sp_plot_info in;
	struct sp_error err = {0};
	char *s = NULL;
	enum sp_err rc;
	CAPTURE(s, rc = sp_plot_gantt(mf, NULL, &f, NULL, &in, &err));
	assert_int_equal(rc, SP_OK);
	assert_int_equal(in.calls, 20);
	assert_int_equal(in.merged, 0);          /* 10 us of 200 us: wide enough */
	int64_t bars, calls;
	count_bars(s, "sp:region=\"outer\"", &bars, &calls);
	assert_int_equal(bars, 20);              /* outer's lane, then in<&>'s */
	assert_non_null(strstr(s, "sp:region=\"in&lt;&amp;&gt;\""));
	assert_null(strstr(s, "merged"));
	free(s);
	sp_profile_free(p);

	/* 100000 calls over 1150 px: merged, every call still counted */
	p = made(100000);
	f.p = p;
	CAPTURE(s, rc = sp_plot_gantt(mf, NULL, &f, NULL, &in, &err));
	assert_int_equal(rc, SP_OK);
	assert_int_equal(in.calls, 200000);
	assert_true(in.merged > 0 && in.bars < 2 * 1200 * 2);
	count_bars(s, "sp:region=\"outer\"", &bars, &calls);
	assert_int_equal(calls, 200000);
	assert_int_equal(bars, in.bars);
	assert_non_null(strstr(s, "merged"));
	free(s);

	/* a small budget widens the columns */
	struct sp_plot_opts o = {.max_bytes = 64 * 1024};
	CAPTURE(s, rc = sp_plot_gantt(mf, NULL, &f, &o, &in, &err));
	assert_int_equal(rc, SP_OK);
	assert_true(in.column_px > 1);
	assert_true(strlen(s) < 64 * 1024 + 8192);
	count_bars(s, "sp:region=\"outer\"", &bars, &calls);
	assert_int_equal(calls, 200000);
	free(s);
	sp_profile_free(p);
}

static void test_flame_nests_and_titles_every_box(void **state)
{
	struct sp_profile *p = made(4);
	struct sp_plot_file f = {"made.h5", p};
	struct sp_plot_info in;
	struct sp_error err = {0};
	char *s = NULL, *csv = NULL;
	enum sp_err rc;
	FILE *c = open_memstream(&csv, &(size_t){0});
	CAPTURE(s, rc = sp_plot_flame(mf, c, &f, NULL, &in, &err));
	fclose(c);
	assert_int_equal(rc, SP_OK);
	int64_t bars, calls;
	count_bars(s, "sp:rank=\"0\"", &bars, &calls);
	assert_int_equal(bars, 8);
	int titles = 0;
	for (const char *q = s; (q = strstr(q, "</title></rect>")); q++)
		titles++;
	assert_int_equal(titles, 8);
	/* outer at depth 0, in<&> at depth 1; the first call of each */
	assert_non_null(strstr(csv, "rank,depth,region,start,duration,lane\n0,0,outer,0.000000000,0.000010000,0\n"));
	assert_non_null(strstr(csv, "\n0,1,in<&>,0.000002000,0.000001000,0\n"));
	assert_non_null(strstr(s, "<title>in&lt;&amp;&gt;\nstart 0.000002000 s\nduration 0.000001000 s</title>"));
	free(s);
	free(csv);
	sp_profile_free(p);
}

/* ---- the charts' data (sp_plot.h), as the read API draws it ---------------- */

/* The flame chart's rows: made(4)'s "outer" calls at depth 0, "in<&>" at 1;
 * with one column over the whole axis, a row is one box however many
 * calls (and regions) it holds, and a box never spans two rows. */
static void test_flame_data_merges_row_by_row(void **state)
{
	struct sp_profile *p = made(4);
	struct sp_plot_file f = {"made.h5", p};
	struct sp_plot_fcall *c = NULL;
	struct sp_error err = {0};
	size_t n = 0;
	assert_int_equal(sp_plot_flame_calls(&f, NULL, &c, &n, &err), SP_OK);
	assert_int_equal(n, 8);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(c[i].depth, i < 4 ? 0 : 1);   /* rows in order, by start in each */
	assert_true(c[0].start < c[1].start && c[4].region == 1 && c[0].region == 0);
	struct sp_plot_axis a;
	assert_int_equal(sp_plot_axis_init(&a, p, NULL, 0, 1), 1);
	/* one column of 2 over the axis of 1 (70 us): every call is narrower */
	struct got g = {0};
	struct sp_plot_merge m = {.colw = 2, .emit = collect, .ctx = &g};
	sp_plot_flame_merge(&m, &a, c, n);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.b[0].first, 0);
	assert_int_equal(g.b[0].calls, 4);
	assert_int_equal(g.b[1].first, 4);
	assert_int_equal(g.b[1].calls, 4);
	/* the same calls with the inner ones given another region: still one
	 * box a row (several regions), never across depths */
	c[5].region = c[7].region = 0;
	g.n = 0;
	m = (struct sp_plot_merge){.colw = 2, .emit = collect, .ctx = &g};
	sp_plot_flame_merge(&m, &a, c, n);
	assert_int_equal(g.n, 2);
	assert_int_equal(m.merged, 8);
	/* colw 0: every call its own box */
	g.n = 0;
	m = (struct sp_plot_merge){.colw = 0, .emit = collect, .ctx = &g};
	sp_plot_flame_merge(&m, &a, c, n);
	assert_int_equal(g.n, 8);
	free(c);
	sp_profile_free(p);
}

/* The regions of several files joined by name, heaviest summed total
 * first: one row per name with each file's figures. */
static void test_table_joins_files_by_name(void **state)
{
	struct sp_profile *p = made(2), *q = made(3);
	struct sp_plot_file f[2] = {{"p.h5", p}, {"q.h5", q}};
	struct sp_plot_table t;
	struct sp_error err = {0};
	assert_int_equal(sp_plot_table_build(&t, f, 2, NULL, &err), SP_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.rows[0].name, "outer");
	assert_string_equal(t.rows[1].name, "in<&>");
	assert_true(t.rows[0].v[0].present && t.rows[0].v[1].present);
	assert_int_equal(t.rows[0].v[0].calls, 2);
	assert_int_equal(t.rows[0].v[1].calls, 3);
	assert_int_equal(t.rows[0].total, 50000);
	assert_int_equal(t.rows[0].v[1].slowest, 30000);
	assert_true(sp_plot_value_of(&t.rows[0].v[1], SP_PLOT_AVG) == 10000 / 1e9);
	assert_true(sp_plot_value_of(&t.rows[1].v[0], SP_PLOT_TOTAL) == 2000 / 1e9);
	sp_plot_table_free(&t);
	struct sp_select sel = {0};
	assert_int_equal(sp_select_include(&sel, "re:^nothing$", &err), SP_OK);
	assert_int_equal(sp_plot_table_build(&t, f, 2, &sel, &err), SP_EINVAL);
	assert_null(t.rows);
	sp_select_free(&sel);
	sp_profile_free(p);
	sp_profile_free(q);
}

/* ---- report.html -------------------------------------------------------- */

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *q = s; (q = strstr(q, what)); q++)
		n++;
	return n;
}

static void test_report_is_one_self_contained_escaped_page(void **state)
{
	struct sp_profile *p = made(10);
	free(p->ranks[0].regions[1].name);
	p->ranks[0].regions[1].name = strdup("in</script><!--&\"'");
	struct sp_plot_file f = {"made<1>.h5", p};
	static const char svg[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\">"
				  "<rect id=\"the-chart\"/></svg>\n";
	struct sp_plot_chart chart = {"gantt.svg", svg, sizeof svg - 1};
	struct sp_plot_info in;
	struct sp_error err = {0};
	char *s = NULL;
	enum sp_err rc;
	CAPTURE(s, rc = sp_plot_report(mf, &f, 1, &f, NULL, &chart, 1, NULL, &in, &err));
	assert_int_equal(rc, SP_OK);
	assert_int_equal(in.calls, 20);
	assert_int_equal(in.merged, 0);
	/* two script elements (the data, the timeline's code), nothing else ends one */
	assert_int_equal(count(s, "<script"), 2);
	assert_int_equal(count(s, "</script"), 2);
	assert_int_equal(count(s, "<!--"), 0);
	assert_null(strstr(s, "src="));
	assert_null(strstr(s, "href="));
	const char *data = strstr(s, "<script type=\"application/json\" id=\"sp-data\">");
	assert_non_null(data);
	data += strlen("<script type=\"application/json\" id=\"sp-data\">");
	const char *end = strstr(data, "</script>");
	assert_non_null(strstr(data, "\"region\":\"in\\u003c/script\\u003e\\u003c!--\\u0026\\\"'\""));
	assert_true(memchr(data, '<', (size_t)(end - data)) == NULL);
	/* the statistics table, names escaped */
	assert_non_null(strstr(s, "<th scope=\"row\">in&lt;/script&gt;&lt;!--&amp;&quot;&apos;</th><td>10</td>"));
	assert_non_null(strstr(s, "<caption>made&lt;1&gt;.h5"));
	/* the chart inlined without its XML declaration */
	assert_non_null(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect id=\"the-chart\"/></svg>"));
	assert_null(strstr(s, "<?xml"));
	assert_true(strlen(s) > 7 && strcmp(s + strlen(s) - 8, "</html>\n") == 0);
	free(s);

	/* no per-call events: no timeline, and why */
	CAPTURE(s, rc = sp_plot_report(mf, &f, 1, NULL, "x.h5: aggregation <mode>", NULL, 0, NULL, &in, &err));
	assert_int_equal(rc, SP_OK);
	assert_non_null(strstr(s, "No timeline: x.h5: aggregation &lt;mode&gt;"));
	assert_null(strstr(s, "<script"));
	assert_non_null(strstr(s, "<table class=\"stats\""));
	free(s);
	sp_profile_free(p);

	/* 100000 calls a lane: merged into at most a few thousand bars a lane */
	p = made(100000);
	f.p = p;
	CAPTURE(s, rc = sp_plot_report(mf, &f, 1, &f, NULL, NULL, 0, NULL, &in, &err));
	assert_int_equal(rc, SP_OK);
	assert_int_equal(in.calls, 200000);
	assert_true(in.merged > 0 && in.bars <= 2 * 2 * 4096);
	assert_true(strlen(s) < 1024 * 1024);
	int64_t calls = 0;
	/* each bar is start,end,calls: sum the calls */
	for (const char *q = strstr(s, "\"bars\":["); q; q = strstr(q, "\"bars\":[")) {
		q += 8;
		for (int k = 0; *q != ']'; k++) {
			char *e;
			long long v = strtoll(q, &e, 10);
			if (k % 3 == 2)
				calls += v;
			q = *e == ',' ? e + 1 : e;
		}
	}
	assert_int_equal(calls, 200000);
	assert_non_null(strstr(s, "200000 of 200000 calls are in merged bars"));
	free(s);
	sp_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_truncation_counts_characters),
		cmocka_unit_test(test_document_frame),
		cmocka_unit_test(test_palette_is_by_name),
		cmocka_unit_test(test_axis_numbers),
		cmocka_unit_test(test_merge_narrow_calls_per_column),
		cmocka_unit_test(test_gantt_merges_and_counts_every_call),
		cmocka_unit_test(test_flame_nests_and_titles_every_box),
		cmocka_unit_test(test_flame_data_merges_row_by_row),
		cmocka_unit_test(test_table_joins_files_by_name),
		cmocka_unit_test(test_report_is_one_self_contained_escaped_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
