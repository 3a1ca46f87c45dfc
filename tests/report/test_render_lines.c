/* test_render_lines.c - unit tests of the per-line tables (sp_render_lines). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_render.h"

static struct sp_profile *profile_new(size_t nranks, const int *numbers)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->nranks = nranks;
	p->ranks = calloc(nranks ? nranks : 1, sizeof *p->ranks);
	assert_non_null(p->ranks);
	for (size_t r = 0; r < nranks; r++) {
		p->ranks[r].rank = numbers ? numbers[r] : (int)r;
		p->ranks[r].run_start_ns = p->ranks[r].run_end_ns = SP_NO_TIME;
	}
	return p;
}

/* Appends a line table of n lines to rk (copies of everything given). */
static struct sp_line_table *add_table(struct sp_rank *rk, const char *function, const char *region,
				       const char *filename, int32_t first_line, size_t n,
				       const int64_t *hits, const int64_t *time_ns,
				       const char *const *source)
{
	rk->lines = realloc(rk->lines, (rk->nlines + 1) * sizeof *rk->lines);
	assert_non_null(rk->lines);
	struct sp_line_table *t = &rk->lines[rk->nlines++];
	*t = (struct sp_line_table){
		.function = strdup(function), .region = strdup(region), .filename = strdup(filename),
		.first_line = first_line, .n = n,
		.hits = malloc((n ? n : 1) * sizeof *t->hits),
		.time_ns = malloc((n ? n : 1) * sizeof *t->time_ns),
		.source = calloc(n ? n : 1, sizeof *t->source),
	};
	assert_true(t->function && t->region && t->filename && t->hits && t->time_ns && t->source);
	for (size_t i = 0; i < n; i++) {
		t->hits[i] = hits[i];
		t->time_ns[i] = time_ns[i];
		t->source[i] = strdup(source[i]);
	}
	return t;
}

/* What sp_render_lines prints for p, and its return code. */
static char *render(const struct sp_profile *p, enum sp_err want, struct sp_error *err)
{
	FILE *out = tmpfile();
	assert_non_null(out);
	assert_int_equal(sp_render_lines(out, p, "line.h5", err), want);
	long len = ftell(out);
	assert_true(len >= 0);
	char *text = malloc((size_t)len + 1);
	assert_non_null(text);
	rewind(out);
	assert_int_equal(fread(text, 1, (size_t)len, out), (size_t)len);
	text[len] = '\0';
	assert_int_equal(fclose(out), 0);
	return text;
}

/* Terminal columns of bytes of output: a code point is one column, except
 * the CJK ideographs used here (U+3000..U+9FFF, lead bytes 0xe3..0xe9): two. */
static size_t columns(const char *s, size_t bytes)
{
	size_t n = 0;
	for (size_t i = 0; i < bytes; i++) {
		unsigned char c = (unsigned char)s[i];
		n += (c & 0xc0) != 0x80;
		n += c >= 0xe3 && c <= 0xe9;
	}
	return n;
}

/* Every line of text is at most cap columns; returns the widest. */
static size_t widest_line(const char *text, size_t cap)
{
	size_t widest = 0;
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		size_t w = columns(s, len);
		if (w > cap)
			fail_msg("line of %zu columns: %.*s", w, (int)len, s);
		widest = w > widest ? w : widest;
		s += len + (nl != NULL);
	}
	return widest;
}

/* The seed page's example: hot_function of line_demo.py. */
static const char *const demo_src[] = {
	"@sp.profile(\"hot_function\")", "def hot_function(n):", "    total = 0.0",
	"    for i in range(n):", "        total += i**0.5", "    time.sleep(0.001)",
	"    return total",
};
static const int64_t demo_hits[] = {0, 0, 1, 20001, 20000, 1, 1};
static const int64_t demo_ns[] = {0, 0, 782, 2690250, 3552990, 1066700, 1733};

static void add_demo(struct sp_rank *rk)
{
	add_table(rk, "hot_function", "hot_function", "/home/u/line_demo.py", 7, 7, demo_hits,
		  demo_ns, demo_src);
}

static void test_seed_example(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1, NULL);
	struct sp_error err = {0};
	add_demo(&p->ranks[0]);
	char *text = render(p, SP_OK, &err);
	assert_string_equal(text,
		"Line profile: line.h5\n"
		"Timer unit: 1e-06 s\n"
		"\n"
		"Rank 0 | hot_function | hot_function (line_demo.py:7)\n"
		"Total time: 7.31 ms\n"
		"╭──────┬───────┬───────────┬──────────────┬────────┬─────────────────────╮\n"
		"│ line │ hits  │ time [µs] │ per hit [µs] │ % time │ source              │\n"
		"├──────┼───────┼───────────┼──────────────┼────────┼─────────────────────┤\n"
		"│ 9    │ 1     │ 0.8       │ 0.8          │ 0.01   │ total = 0.0         │\n"
		"│ 10   │ 20001 │ 2690.2    │ 0.1          │ 36.79  │ for i in range(n):  │\n"
		"│ 11   │ 20000 │ 3553.0    │ 0.2          │ 48.59  │     total += i**0.5 │\n"
		"│ 12   │ 1     │ 1066.7    │ 1066.7       │ 14.59  │ time.sleep(0.001)   │\n"
		"│ 13   │ 1     │ 1.7       │ 1.7          │ 0.02   │ return total        │\n"
		"╰──────┴───────┴───────────┴──────────────┴────────┴─────────────────────╯\n");
	free(text);
	sp_profile_free(p);
}

/* Lines without hits between executed ones show their number and source
 * only; those before the first and after the last hit are not shown. */
static void test_blank_rows(void **state)
{
	(void)state;
	static const char *const src[] = {
		"def f(x):", "    if x:", "        # a comment", "", "        y = 1", "    return y",
		"", "# after",
	};
	static const int64_t hits[] = {0, 2, 0, 0, 2, 2, 0, 0}, ns[] = {0, 100, 0, 0, 300, 600, 0, 0};
	struct sp_profile *p = profile_new(1, NULL);
	struct sp_error err = {0};
	add_table(&p->ranks[0], "f", "f", "m.py", 1, 8, hits, ns, src);
	char *text = render(p, SP_OK, &err);
	assert_string_equal(text,
		"Line profile: line.h5\n"
		"Timer unit: 1e-06 s\n"
		"\n"
		"Rank 0 | f | f (m.py:1)\n"
		"Total time: 1.00 µs\n"
		"╭──────┬──────┬───────────┬──────────────┬────────┬─────────────────╮\n"
		"│ line │ hits │ time [µs] │ per hit [µs] │ % time │ source          │\n"
		"├──────┼──────┼───────────┼──────────────┼────────┼─────────────────┤\n"
		"│ 2    │ 2    │ 0.1       │ 0.1          │ 10.00  │ if x:           │\n"
		"│ 3    │      │           │              │        │     # a comment │\n"
		"│ 4    │      │           │              │        │                 │\n"
		"│ 5    │ 2    │ 0.3       │ 0.1          │ 30.00  │     y = 1       │\n"
		"│ 6    │ 2    │ 0.6       │ 0.3          │ 60.00  │ return y        │\n"
		"╰──────┴──────┴───────────┴──────────────┴────────┴─────────────────╯\n");
	free(text);
	sp_profile_free(p);
}

/* Tabs expand to every 8th column; blank lines do not count for the
 * common indentation; a trailing newline is dropped. */
static void test_dedent_tabs(void **state)
{
	(void)state;
	static const char *const src[] = {
		"\tdef g():", "\t\tx = 1\n", "  \t", "\t\treturn\tx",
	};
	static const int64_t hits[] = {1, 1, 0, 1}, ns[] = {1, 1, 0, 2};
	struct sp_profile *p = profile_new(1, NULL);
	struct sp_error err = {0};
	add_table(&p->ranks[0], "C.g", "g", "t.py", 10, 4, hits, ns, src);
	char *text = render(p, SP_OK, &err);
	assert_non_null(strstr(text, "Rank 0 | g | C.g (t.py:10)\n"));
	assert_non_null(strstr(text, "│ 10   │ 1    │ 0.0       │ 0.0          │ 25.00  │ def g():          │\n"));
	assert_non_null(strstr(text, "│ 11   │ 1    │ 0.0       │ 0.0          │ 25.00  │         x = 1     │\n"));
	assert_non_null(strstr(text, "│ 12   │      │           │              │        │                   │\n"));
	assert_non_null(strstr(text, "│ 13   │ 1    │ 0.0       │ 0.0          │ 50.00  │         return  x │\n"));
	assert_null(strchr(text, '\t'));
	free(text);
	sp_profile_free(p);
}

/* Microseconds with one decimal (the timer unit), per-hit division, % of the table's own total, "-" when
 * the table took no time. */
static void test_numbers(void **state)
{
	(void)state;
	static const char *const src[] = {"a", "b", "c"};
	static const int64_t hits[] = {3, 1000000, 7}, ns[] = {123456789012LL, 1, 0};
	static const int64_t zhits[] = {5}, zns[] = {0};
	struct sp_profile *p = profile_new(1, NULL);
	struct sp_error err = {0};
	add_table(&p->ranks[0], "big", "big", "n.py", 1, 3, hits, ns, src);
	add_table(&p->ranks[0], "zero", "zero", "n.py", 20, 1, zhits, zns, src);
	char *text = render(p, SP_OK, &err);
	assert_non_null(strstr(text, "│ 1    │ 3       │ 123456789.0 │ 41152263.0   │ 100.00 │ a      │\n"));
	assert_non_null(strstr(text, "│ 2    │ 1000000 │ 0.0         │ 0.0          │ 0.00   │ b      │\n"));
	assert_non_null(strstr(text, "│ 3    │ 7       │ 0.0         │ 0.0          │ 0.00   │ c      │\n"));
	assert_non_null(strstr(text, "│ 20   │ 5    │ 0.0       │ 0.0          │ -      │ a      │\n"));
	/* A blank line between the two tables, none at the end. */
	assert_non_null(strstr(text, "╯\n\nRank 0 | zero | zero (n.py:20)\nTotal time: 0 ns\n╭"));
	assert_int_equal(text[strlen(text) - 1], '\n');
	assert_int_not_equal(text[strlen(text) - 2], '\n');
	free(text);
	sp_profile_free(p);
}

/* Long source lines are cut with "…" so the table fits 100 columns; so are
 * long headings. Wide characters are counted as two columns. */
static void test_truncation(void **state)
{
	(void)state;
	char long_line[400], name[300];
	memset(long_line, 'x', sizeof long_line - 1);
	long_line[sizeof long_line - 1] = '\0';
	memcpy(long_line, "    y = ", 8);
	memset(name, 'f', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	const char *src[] = {"    z = 'ü日本'", long_line};
	static const int64_t hits[] = {1, 1}, ns[] = {10, 20};
	struct sp_profile *p = profile_new(1, NULL);
	struct sp_error err = {0};
	add_table(&p->ranks[0], name, name, "/very/long/path/to/some/module_with_a_long_name.py",
		  123, 2, hits, ns, src);
	char *text = render(p, SP_OK, &err);
	assert_int_equal(widest_line(text, 100), 100);
	assert_non_null(strstr(text, "│ y = xxx"));
	assert_non_null(strstr(text, "x… │\n"));
	/* The heading keeps its file and line, cut names get an ellipsis. */
	assert_non_null(strstr(text, "f… | fff"));
	assert_non_null(strstr(text, "(module_with_a_long_name.py:123)\n"));
	/* Rows stay aligned with the wide characters: "日本" takes four columns. */
	assert_non_null(strstr(text, "│ z = 'ü日本'"));
	for (const char *s = strstr(text, "╭"); *s;) {
		const char *nl = strchr(s, '\n');
		assert_int_equal(columns(s, (size_t)(nl - s)), 100);
		s = nl + 1;
	}
	free(text);
	sp_profile_free(p);
}

/* No rank has a table: nothing printed, a distinct code, a message saying
 * how to record line timings. */
static void test_no_tables(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(2, NULL);
	struct sp_error err = {0};
	char *text = render(p, SP_ENOTPROF, &err);
	assert_string_equal(text, "");
	assert_string_equal(err.msg, "no line timings in line.h5 (record them with: scope-profiler "
				     "run --line-profile)");
	free(text);
	sp_profile_free(p);
}

/* Tables of two ranks in rank order; a table without lines or without hits
 * says so. */
static void test_two_ranks(void **state)
{
	(void)state;
	static const int numbers[] = {0, 3};
	static const char *const src[] = {"def h():", "    pass"};
	static const int64_t hits[] = {0, 4}, ns[] = {0, 40}, none[] = {0, 0};
	struct sp_profile *p = profile_new(2, numbers);
	struct sp_error err = {0};
	add_table(&p->ranks[0], "h", "hr", "a/b.py", 1, 2, hits, ns, src);
	add_table(&p->ranks[0], "unused", "unused", "a/b.py", 5, 2, none, none, src);
	add_table(&p->ranks[1], "h", "hr", "a/b.py", 1, 2, hits, ns, src);
	add_table(&p->ranks[1], "empty", "empty", "", 0, 0, NULL, NULL, NULL);
	char *text = render(p, SP_OK, &err);
	const char *r0 = strstr(text, "\n\nRank 0 | hr | h (b.py:1)\nTotal time: 40 ns\n╭");
	const char *u = strstr(text, "\n\nRank 0 | unused | unused (b.py:5)\n(no line executed)\n\n");
	const char *r3 = strstr(text, "\n\nRank 3 | hr | h (b.py:1)\nTotal time: 40 ns\n╭");
	const char *e = strstr(text, "\n\nRank 3 | empty | empty (:0)\n(no line executed)\n");
	assert_true(r0 && u && r3 && e);
	assert_true(r0 < u && u < r3 && r3 < e);
	assert_non_null(strstr(r3, "│ 2    │ 4    │ 0.0       │ 0.0          │ 100.00 │ pass   │\n"));
	assert_string_equal(e + strlen("\n\nRank 3 | empty | empty (:0)\n(no line executed)\n"), "");
	free(text);
	sp_profile_free(p);
}

static void test_write_error(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new(1, NULL);
	struct sp_error err = {0};
	add_demo(&p->ranks[0]);
	FILE *full = fopen("/dev/full", "w");
	if (!full)
		skip();
	assert_int_equal(sp_render_lines(full, p, "x.h5", &err), SP_EIO);
	assert_non_null(strstr(err.msg, "writing"));
	fclose(full);
	/* A table without its columns is refused before anything is printed. */
	free(p->ranks[0].lines[0].hits);
	p->ranks[0].lines[0].hits = NULL;
	char *text = render(p, SP_EINVAL, &err);
	assert_string_equal(text, "");
	free(text);
	sp_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_example),
		cmocka_unit_test(test_blank_rows),
		cmocka_unit_test(test_dedent_tabs),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_no_tables),
		cmocka_unit_test(test_two_ranks),
		cmocka_unit_test(test_write_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
