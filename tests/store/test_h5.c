/* test_h5.c - unit tests of the HDF5 file format: src/h5write.c and src/h5read.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_clock.h"
#include "sp_h5.h"

/* Fails the test with err's message unless the call returned SP_OK. */
#define assert_ok(call, err) do { \
	if ((call) != SP_OK) \
		fail_msg("%s", (err)->msg); \
} while (0)

static char dir[64];
static char pathbuf[4][512];

/* A path inside the test's temporary folder (four live at a time). */
static const char *tpath(const char *name)
{
	static int next;
	char *p = pathbuf[next++ % 4];
	snprintf(p, sizeof pathbuf[0], "%s/%s", dir, name);
	return p;
}

static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_h5.XXXXXX", tmp && *tmp ? tmp : "/tmp");  /* mkdtemp fills the X */
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			remove(tpath(e->d_name));
	if (d)
		closedir(d);
	return rmdir(dir);
}

/* Number of entries in the temporary folder. */
static int count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static void write_bytes(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static char *read_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	rewind(f);
	char *buf = malloc(*n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, *n, f), *n);
	fclose(f);
	return buf;
}

/* ---- a profile to write ---- */

static void add_region(struct sp_rank *rk, const char *name, const int64_t *se, size_t n)
{
	struct sp_region_data *rd = &rk->regions[rk->nregions++];
	rd->name = strdup(name);
	rd->starts = malloc((n ? n : 1) * sizeof(int64_t));
	rd->ends = malloc((n ? n : 1) * sizeof(int64_t));
	rd->owns_events = 1;
	for (size_t i = 0; i < n; i++) {
		rd->starts[i] = se[2 * i];
		rd->ends[i] = se[2 * i + 1];
	}
	sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
}

static void set_tree(struct sp_rank *rk, const struct sp_tree_node *nodes, size_t n)
{
	rk->tree = malloc((n ? n : 1) * sizeof *nodes);
	if (n)
		memcpy(rk->tree, nodes, n * sizeof *nodes);
	rk->ntree = n;
}

/* Appends a line table of n lines (copies) to rk. */
static void add_lines(struct sp_rank *rk, const char *function, const char *region,
		      const char *filename, int32_t first_line, size_t n, const int64_t *hits,
		      const int64_t *time_ns, const char *const *source)
{
	rk->lines = realloc(rk->lines, (rk->nlines + 1) * sizeof *rk->lines);
	struct sp_line_table *t = &rk->lines[rk->nlines++];
	*t = (struct sp_line_table){
		.function = strdup(function), .region = strdup(region), .filename = strdup(filename),
		.first_line = first_line, .n = n,
		.hits = malloc((n ? n : 1) * sizeof(int64_t)),
		.time_ns = malloc((n ? n : 1) * sizeof(int64_t)),
		.source = calloc(n ? n : 1, sizeof(char *)),
	};
	for (size_t i = 0; i < n; i++) {
		t->hits[i] = hits[i];
		t->time_ns[i] = time_ns[i];
		t->source[i] = strdup(source[i]);
	}
}

static struct sp_profile *make_profile(void)
{
	static const int64_t main_ev[] = {1000, 2000}, ab[] = {1010, 1100, 1200, 1300},
		xy[] = {1020, 1050}, sp[] = {1400, 1500}, pct[] = {1600, 1610}, de[] = {1700, 1800},
		dot[] = {1810, 1820}, dotdot[] = {1830, 1840}, lit[] = {1850, 1860},
		solve[] = {5, 10, 20, 40, 50, 90};
	static const struct sp_tree_node t0[] = {
		{-1, 0, 1, 1000}, {0, 1, 2, 190}, {1, 2, 1, 30}, {0, 4, 1, 100}, {0, 5, 1, 10},
		{0, 6, 1, 100}, {0, 7, 1, 10}, {0, 8, 1, 10}, {0, 9, 1, 10},
	};
	static const struct sp_tree_node t3[] = {{-1, 0, 3, 65}};
	struct sp_profile *p = calloc(1, sizeof *p);
	p->format_version = 1;
	p->nranks = 3;
	p->ranks = calloc(3, sizeof *p->ranks);

	struct sp_rank *r0 = &p->ranks[0];
	r0->rank = 0;
	r0->run_start_ns = 900;
	r0->run_end_ns = 2100;
	r0->pid = 4242;
	r0->hostname = strdup("node-ä1");
	r0->regions = calloc(10, sizeof *r0->regions);
	add_region(r0, "main", main_ev, 1);
	add_region(r0, "a/b", ab, 2);
	add_region(r0, "x.y", xy, 1);
	add_region(r0, "never called", NULL, 0);  /* skipped by the writer */
	add_region(r0, "with space", sp, 1);
	add_region(r0, "100%", pct, 1);
	add_region(r0, "löser/ß", de, 1);
	add_region(r0, ".", dot, 1);
	add_region(r0, "..", dotdot, 1);
	add_region(r0, "%2F", lit, 1);
	set_tree(r0, t0, sizeof t0 / sizeof t0[0]);
	static const char *const src0[] = {
		"def löse(n):", "    \"\"\"Grüße, 日本\"\"\"", "", "    for i in range(n):",
		"\tpass  # tab", "    return n",
	};
	static const int64_t hits0[] = {0, 1, 0, 11, 10, 1}, ns0[] = {0, 5, 0, 1100, 900, 7};
	add_lines(r0, "Solver.löse", "löser/ß", "/src/pkg/löser.py", 41, 6, hits0, ns0, src0);
	add_lines(r0, "never_run", "never_run", "", 0, 0, NULL, NULL, NULL);   /* empty table */

	struct sp_rank *r3 = &p->ranks[1];   /* nothing known about this run */
	r3->rank = 3;
	r3->run_start_ns = r3->run_end_ns = SP_NO_TIME;
	r3->clock_offset_ns = -1234567;      /* its clock is behind rank 0's */
	r3->regions = calloc(1, sizeof *r3->regions);
	add_region(r3, "solve", solve, 3);
	r3->regions[0].dropped = 40;         /* memory ran out after 3 calls */
	r3->dropped = 40 + 2;                /* and 2 calls of a region with none kept */
	set_tree(r3, t3, 1);
	static const char *const src3[] = {"def solve():", "    x = 1"};
	static const int64_t hits3[] = {0, 3}, ns3[] = {0, 65};
	add_lines(r3, "solve", "solve", "s.py", 1, 2, hits3, ns3, src3);

	struct sp_rank *r5 = &p->ranks[2];   /* a rank that recorded nothing */
	r5->rank = 5;
	r5->run_start_ns = r5->run_end_ns = SP_NO_TIME;
	r5->clock_offset_ns = INT64_C(987654321012);   /* more than 32 bits */
	set_tree(r5, NULL, 0);

	static const char *kv[][2] = {
		{"zeta", "first"}, {"command line", "python3 x.py --flag"}, {"alpha", "ü/%"},
		{"hostname", "node-ä1"},
	};
	p->nmeta = 4;
	p->meta = calloc(4, sizeof *p->meta);
	for (size_t i = 0; i < 4; i++)
		p->meta[i] = (struct sp_kv){strdup(kv[i][0]), strdup(kv[i][1])};
	return p;
}

static const struct sp_region_data *find_region(const struct sp_rank *rk, const char *name)
{
	for (size_t i = 0; i < rk->nregions; i++)
		if (strcmp(rk->regions[i].name, name) == 0)
			return &rk->regions[i];
	return NULL;
}

static void assert_same_lines(const struct sp_rank *a, const struct sp_rank *b)
{
	assert_int_equal(b->nlines, a->nlines);
	for (size_t k = 0; k < a->nlines; k++) {
		const struct sp_line_table *x = &a->lines[k], *y = &b->lines[k];
		assert_string_equal(y->function, x->function);
		assert_string_equal(y->region, x->region);
		assert_string_equal(y->filename, x->filename);
		assert_int_equal(y->first_line, x->first_line);
		assert_int_equal(y->n, x->n);
		assert_non_null(y->hits);
		assert_non_null(y->time_ns);
		assert_non_null(y->source);
		for (size_t i = 0; i < x->n; i++) {
			assert_true(y->hits[i] == x->hits[i]);
			assert_true(y->time_ns[i] == x->time_ns[i]);
			assert_string_equal(y->source[i], x->source[i]);
		}
	}
}

/* got must equal want, less want's regions without calls; events only when
 * with_events. */
static void assert_same(const struct sp_profile *want, const struct sp_profile *got, int with_events)
{
	assert_int_equal(got->format_version, 1);
	assert_int_equal(got->nranks, want->nranks);
	for (size_t r = 0; r < want->nranks; r++) {
		const struct sp_rank *a = &want->ranks[r], *b = &got->ranks[r];
		assert_int_equal(b->rank, a->rank);
		assert_true(b->run_start_ns == a->run_start_ns);
		assert_true(b->run_end_ns == a->run_end_ns);
		assert_true(b->pid == a->pid);
		assert_true(b->clock_offset_ns == a->clock_offset_ns);
		assert_true(b->dropped == a->dropped);
		if (a->hostname)
			assert_string_equal(b->hostname, a->hostname);
		else
			assert_null(b->hostname);
		size_t k = 0;
		for (size_t i = 0; i < a->nregions; i++) {
			const struct sp_region_data *x = &a->regions[i], *y;
			if (x->stats.num_calls == 0)
				continue;
			assert_true(k < b->nregions);
			y = &b->regions[k++];
			assert_string_equal(y->name, x->name);
			assert_memory_equal(&y->stats, &x->stats, sizeof x->stats);
			assert_true(y->dropped == x->dropped);
			if (with_events) {
				assert_non_null(y->starts);
				assert_memory_equal(y->starts, x->starts, x->stats.num_calls * sizeof(int64_t));
				assert_memory_equal(y->ends, x->ends, x->stats.num_calls * sizeof(int64_t));
			} else {
				assert_null(y->starts);
				assert_null(y->ends);
			}
		}
		assert_int_equal(b->nregions, k);
		assert_non_null(b->tree);
		assert_int_equal(b->ntree, a->ntree);
		for (size_t i = 0; i < a->ntree; i++) {
			assert_int_equal(b->tree[i].parent, a->tree[i].parent);
			assert_true(b->tree[i].calls == a->tree[i].calls);
			assert_true(b->tree[i].total_ns == a->tree[i].total_ns);
			assert_string_equal(b->regions[b->tree[i].region].name,
					    a->regions[a->tree[i].region].name);
		}
	}
	for (size_t r = 0; r < want->nranks; r++)
		assert_same_lines(&want->ranks[r], &got->ranks[r]);
	assert_int_equal(got->nmeta, want->nmeta);
	for (size_t i = 0; i < want->nmeta; i++) {
		assert_string_equal(got->meta[i].key, want->meta[i].key);
		assert_string_equal(got->meta[i].value, want->meta[i].value);
	}
}

/* ---- tests ---- */

static void check_escape(const char *name, const char *link)
{
	char *e = sp_h5_escape(name), *u = sp_h5_unescape(link);
	assert_string_equal(e, link);
	assert_string_equal(u, name);
	free(e);
	free(u);
}

static void check_unescape(const char *link, const char *name)
{
	char *u = sp_h5_unescape(link);
	assert_string_equal(u, name);
	free(u);
}

static void test_escape(void **state)
{
	(void)state;
	check_escape("plain", "plain");
	check_escape("a/b", "a%2Fb");
	check_escape("100%", "100%25");
	check_escape(".", "%2E");
	check_escape("..", "..");
	check_escape("x.y", "x.y");
	check_escape("with space", "with space");
	check_escape("löser/ß", "löser%2Fß");
	check_escape("%2F", "%252F");
	check_escape("/", "%2F");
	check_escape("", "");
	check_unescape("a%2fb", "a/b");
	check_unescape("%2e", ".");
	check_unescape("%41%4a", "AJ");
	check_unescape("%zz", "%zz");
	check_unescape("%2", "%2");
	check_unescape("%", "%");
	check_unescape("100%", "100%");
	check_unescape("%%2F", "%/");
	check_unescape("%00x", "%00x");
}

static void test_roundtrip(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("round.h5");
	assert_ok(sp_h5_write(p, path, &err), &err);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	assert_same(p, q, 1);
	assert_int_equal(q->ranks[2].nregions, 0);
	sp_profile_free(q);
	/* Writing what was read gives the same profile again. */
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	assert_ok(sp_h5_write(q, path, &err), &err);
	sp_profile_free(q);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	assert_same(p, q, 1);
	assert_int_equal(count_files(), 1);
	sp_profile_free(q);
	sp_profile_free(p);
	remove(path);
}

static void test_lanes_roundtrip(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("lanes.h5");
	struct sp_region_data *rd = &p->ranks[0].regions[0];
	rd->lanes = malloc((size_t)rd->stats.num_calls * sizeof *rd->lanes);
	for (int64_t i = 0; i < rd->stats.num_calls; i++)
		rd->lanes[i] = (int32_t)(i % 3);
	assert_ok(sp_h5_write(p, path, &err), &err);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	const struct sp_region_data *qd = &q->ranks[0].regions[0];
	assert_non_null(qd->lanes);
	for (int64_t i = 0; i < rd->stats.num_calls; i++)
		assert_int_equal(qd->lanes[i], i % 3);
	assert_null(q->ranks[0].regions[1].lanes);   /* only where recorded */
	sp_profile_free(q);
	sp_profile_free(p);
	remove(path);
}

static void test_summary_read(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("summary.h5");
	assert_ok(sp_h5_write(p, path, &err), &err);
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	assert_same(p, q, 0);
	assert_int_equal(q->ranks[0].nlines, 2);
	assert_int_equal(q->ranks[1].nlines, 1);
	assert_int_equal(q->ranks[2].nlines, 0);
	assert_null(q->ranks[2].lines);
	for (size_t r = 0; r < q->nranks; r++)
		for (size_t i = 0; i < q->ranks[r].nregions; i++)
			assert_null(q->ranks[r].regions[i].starts);
	assert_string_equal(sp_profile_meta(q, "command line"), "python3 x.py --flag");
	sp_profile_free(q);
	sp_profile_free(p);
	remove(path);
}

/* A version-1 file written without trees: the reader builds them. */
static void test_v1_without_tree(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("notree.h5");
	for (size_t r = 0; r < p->nranks; r++) {
		free(p->ranks[r].tree);
		p->ranks[r].tree = NULL;
		p->ranks[r].ntree = 0;
	}
	assert_ok(sp_h5_write(p, path, &err), &err);
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	const struct sp_rank *rk = &q->ranks[1];
	assert_non_null(rk->tree);
	assert_int_equal(rk->ntree, 1);
	assert_true(rk->tree[0].calls == 3 && rk->tree[0].total_ns == 65);
	assert_non_null(find_region(&q->ranks[0], "löser/ß")->starts);
	assert_non_null(q->ranks[0].tree);
	sp_profile_free(q);
	sp_profile_free(p);
	remove(path);
}

static void test_write_fails_cleanly(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	char missing[256];
	snprintf(missing, sizeof missing, "%s/no/such/folder/x.h5", dir);
	assert_int_equal(sp_h5_write(p, missing, &err), SP_EIO);
	assert_non_null(strstr(err.msg, "no/such/folder/x.h5':"));
	assert_non_null(strstr(err.msg, "No such file or directory"));
	assert_int_equal(count_files(), 0);

	/* A good file survives a later write that fails half-way. */
	const char *path = tpath("keep.h5");
	size_t n0, n1;
	assert_ok(sp_h5_write(p, path, &err), &err);
	char *before = read_bytes(path, &n0);
	p->ranks[0].tree[3].region = 3;      /* a region without calls */
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "keep.h5"));
	free(p->ranks[0].regions[3].name);
	p->ranks[0].regions[3].name = strdup("main");
	p->ranks[0].regions[3].stats.num_calls = 1;
	p->ranks[0].tree[3].region = 4;
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);   /* "main" twice */
	assert_non_null(strstr(err.msg, "two regions named 'main'"));
	char *after = read_bytes(path, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	assert_int_equal(count_files(), 1);
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	sp_profile_free(q);

	/* A folder is refused before anything is written; no temporary file. */
	const char *sub = tpath("sub.h5");
	assert_int_equal(mkdir(sub, 0700), 0);
	p->ranks[0].regions[3].stats.num_calls = 0;
	assert_int_equal(sp_h5_write(p, sub, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "sub.h5': it is a directory"));
	assert_int_equal(count_files(), 2);
	rmdir(sub);
	free(before);
	free(after);
	remove(path);
	sp_profile_free(p);
}

/* ---- the streaming writer ---- */

/* The temporary file of a write to path. */
static const char *tmp_of(const char *path)
{
	static char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	return tmp;
}

/* Appends key = value to p's metadata: what sp_h5_writer_meta adds. */
static void push_meta(struct sp_profile *p, const char *key, const char *value)
{
	p->meta = realloc(p->meta, (p->nmeta + 1) * sizeof *p->meta);
	assert_non_null(p->meta);
	p->meta[p->nmeta++] = (struct sp_kv){strdup(key), strdup(value)};
}

/* A profile written rank by rank, metadata added before, between and after
 * the ranks, reads back as written, whole or streamed. */
static void test_writer_roundtrip(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	struct sp_h5_writer *w = NULL;
	const char *path = tpath("ranks.h5");

	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_non_null(w);
	/* Everything goes to the temporary file until the commit. */
	assert_int_equal(access(tmp_of(path), F_OK), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_ok(sp_h5_writer_meta(w, "mpi ranks", "3", &err), &err);
	/* Ranks in any order: the reader sorts them. */
	assert_ok(sp_h5_writer_rank(w, &p->ranks[2], &err), &err);   /* rank 5 */
	assert_ok(sp_h5_writer_meta(w, "between", "ranks/ü", &err), &err);
	assert_ok(sp_h5_writer_rank(w, &p->ranks[0], &err), &err);   /* rank 0 */
	assert_ok(sp_h5_writer_rank(w, &p->ranks[1], &err), &err);   /* rank 3 */
	assert_ok(sp_h5_writer_meta(w, "last", "", &err), &err);
	assert_int_equal(count_files(), 1);
	assert_ok(sp_h5_writer_commit(w, &err), &err);
	assert_int_equal(count_files(), 1);
	assert_int_equal(access(tmp_of(path), F_OK), -1);
	push_meta(p, "mpi ranks", "3");
	push_meta(p, "between", "ranks/ü");
	push_meta(p, "last", "");

	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	assert_same(p, q, 1);
	assert_int_equal(q->nmeta, 7);
	assert_string_equal(sp_profile_meta(q, "between"), "ranks/ü");
	assert_true(q->ranks[0].clock_offset_ns == 0);
	assert_true(q->ranks[1].clock_offset_ns == -1234567);
	assert_true(q->ranks[2].clock_offset_ns == INT64_C(987654321012));
	sp_profile_free(q);
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	assert_same(p, q, 0);
	sp_profile_free(q);

	/* The streaming reader reads the offsets too. */
	struct sp_h5_stream *s = NULL;
	assert_ok(sp_h5_stream_open(path, &s, &err), &err);
	const struct sp_profile *sp = sp_h5_stream_profile(s);
	assert_int_equal(sp->nranks, 3);
	assert_true(sp->ranks[0].clock_offset_ns == 0);
	assert_true(sp->ranks[1].clock_offset_ns == -1234567);
	assert_true(sp->ranks[2].clock_offset_ns == INT64_C(987654321012));
	sp_h5_stream_close(s);

	/* The stored attribute is an int64 on every rank group. */
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t a = H5Aopen_by_name(f, "rank3", "clock_offset_ns", H5P_DEFAULT, H5P_DEFAULT);
	hid_t t = H5Aget_type(a);
	int64_t off = 0;
	assert_true(f >= 0 && a >= 0 && t >= 0);
	assert_true(H5Tequal(t, H5T_STD_I64LE) > 0);
	assert_true(H5Aread(a, H5T_NATIVE_INT64, &off) >= 0);
	assert_true(off == -1234567);
	H5Tclose(t);
	H5Aclose(a);
	H5Fclose(f);

	/* sp_h5_write of the same profile (metadata included) reads back the same. */
	const char *whole = tpath("whole.h5");
	assert_ok(sp_h5_write(p, whole, &err), &err);
	assert_ok(sp_h5_read(whole, SP_READ_EVENTS, &q, &err), &err);
	assert_same(p, q, 1);
	sp_profile_free(q);
	assert_int_equal(count_files(), 2);
	remove(whole);
	remove(path);
	sp_profile_free(p);
}

/* Abort removes the temporary file and leaves path as it was. */
static void test_writer_abort(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	struct sp_h5_writer *w = NULL;
	const char *path = tpath("aborted.h5");

	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_ok(sp_h5_writer_rank(w, &p->ranks[0], &err), &err);
	assert_int_equal(access(tmp_of(path), F_OK), 0);
	sp_h5_writer_abort(w);
	assert_int_equal(access(tmp_of(path), F_OK), -1);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(count_files(), 0);
	sp_h5_writer_abort(NULL);

	/* Right after open, and over an existing file. */
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	sp_h5_writer_abort(w);
	assert_int_equal(count_files(), 0);
	size_t n0, n1;
	assert_ok(sp_h5_write(p, path, &err), &err);
	char *before = read_bytes(path, &n0);
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	for (size_t r = 0; r < p->nranks; r++)
		assert_ok(sp_h5_writer_rank(w, &p->ranks[r], &err), &err);
	assert_ok(sp_h5_writer_meta(w, "extra", "1", &err), &err);
	sp_h5_writer_abort(w);
	char *after = read_bytes(path, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	assert_int_equal(count_files(), 1);
	free(before);
	free(after);
	remove(path);

	/* A failed open leaves nothing and no writer. */
	char missing[256];
	snprintf(missing, sizeof missing, "%s/no/such/folder/x.h5", dir);
	w = (struct sp_h5_writer *)&w;
	assert_int_equal(sp_h5_writer_open(missing, p, &w, &err), SP_EIO);
	assert_null(w);
	assert_non_null(strstr(err.msg, "no/such/folder/x.h5':"));
	assert_non_null(strstr(err.msg, "No such file or directory"));
	w = (struct sp_h5_writer *)&w;
	assert_int_equal(sp_h5_writer_open("", p, &w, &err), SP_EINVAL);
	assert_null(w);
	assert_int_equal(sp_h5_writer_open(path, NULL, &w, &err), SP_EINVAL);
	free(p->meta[1].value);
	p->meta[1].value = NULL;
	assert_int_equal(sp_h5_writer_open(path, p, &w, &err), SP_EINVAL);
	assert_null(w);
	assert_non_null(strstr(err.msg, "metadata entry 1 has no key or value"));
	assert_int_equal(count_files(), 0);
	sp_profile_free(p);
}

/* Expects every writer call after a failure to return that failure, and
 * the commit to leave the file at path (if any) as it was. */
static void expect_failed_commit(struct sp_h5_writer *w, const struct sp_profile *p, const char *path,
				 enum sp_err code, const char *needle)
{
	struct sp_error err = {0};
	assert_int_equal(sp_h5_writer_rank(w, &p->ranks[1], &err), code);
	assert_int_equal(err.code, code);
	assert_non_null(strstr(err.msg, needle));
	memset(&err, 0, sizeof err);
	assert_int_equal(sp_h5_writer_meta(w, "fine", "key", &err), code);
	assert_non_null(strstr(err.msg, needle));
	memset(&err, 0, sizeof err);
	assert_int_equal(sp_h5_writer_commit(w, &err), code);
	assert_int_equal(err.code, code);
	assert_non_null(strstr(err.msg, needle));
	assert_non_null(strstr(err.msg, path));
	assert_int_equal(access(tmp_of(path), F_OK), -1);
}

/* After a failed sp_h5_writer_rank or _meta, commit fails with that error,
 * writes nothing and keeps an existing file. */
static void test_writer_failure_commit(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	struct sp_h5_writer *w = NULL;
	const char *path = tpath("kept.h5"), *fresh = tpath("fresh.h5");
	size_t n0, n1;

	assert_ok(sp_h5_write(p, path, &err), &err);
	char *before = read_bytes(path, &n0);

	/* A rank twice. */
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_ok(sp_h5_writer_rank(w, &p->ranks[0], &err), &err);
	assert_int_equal(sp_h5_writer_rank(w, &p->ranks[0], &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "kept.h5': rank 0 appears twice"));
	expect_failed_commit(w, p, path, SP_EINVAL, "rank 0 appears twice");

	/* A rank that fails half-way: its events are not loaded. */
	struct sp_region_data *rd = &p->ranks[1].regions[0];
	int64_t *starts = rd->starts;
	rd->starts = NULL;
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_ok(sp_h5_writer_rank(w, &p->ranks[0], &err), &err);
	assert_int_equal(sp_h5_writer_rank(w, &p->ranks[1], &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "rank 3 region 'solve': events not loaded"));
	expect_failed_commit(w, p, path, SP_EINVAL, "events not loaded");

	/* With no file at path: none appears. */
	assert_ok(sp_h5_writer_open(fresh, p, &w, &err), &err);
	assert_int_equal(sp_h5_writer_rank(w, &p->ranks[1], &err), SP_EINVAL);
	expect_failed_commit(w, p, fresh, SP_EINVAL, "events not loaded");
	assert_int_equal(access(fresh, F_OK), -1);
	rd->starts = starts;

	/* A metadata key twice, then an empty key and a missing value. */
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_int_equal(sp_h5_writer_meta(w, "zeta", "again", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "cannot write metadata 'zeta'"));
	expect_failed_commit(w, p, path, SP_EINVAL, "cannot write metadata 'zeta'");
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_int_equal(sp_h5_writer_meta(w, "", "x", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "metadata entry has no key or value"));
	sp_h5_writer_abort(w);
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_int_equal(sp_h5_writer_meta(w, "k", NULL, &err), SP_EINVAL);
	expect_failed_commit(w, p, path, SP_EINVAL, "metadata entry has no key or value");

	/* sp_h5_write of a profile with a rank twice fails the same way. */
	p->ranks[1].rank = 0;
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "rank 0 appears twice"));
	p->ranks[1].rank = 3;

	char *after = read_bytes(path, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	assert_int_equal(count_files(), 1);

	/* No writer. */
	assert_int_equal(sp_h5_writer_rank(NULL, &p->ranks[0], &err), SP_EINVAL);
	assert_int_equal(sp_h5_writer_meta(NULL, "k", "v", &err), SP_EINVAL);
	assert_int_equal(sp_h5_writer_commit(NULL, &err), SP_EINVAL);
	free(before);
	free(after);
	remove(path);
	sp_profile_free(p);
}

static void expect_read(const char *path, enum sp_err code, const char *needle)
{
	struct sp_profile *q = (struct sp_profile *)&q;   /* must be reset */
	struct sp_error err = {0};
	for (int flags = 0; flags < 2; flags++) {
		assert_int_equal(sp_h5_read(path, flags, &q, &err), code);
		assert_int_equal(err.code, code);
		assert_null(q);
		assert_non_null(strstr(err.msg, path));
		if (!strstr(err.msg, needle))
			fail_msg("'%s' does not say '%s'", err.msg, needle);
		assert_null(strchr(err.msg, '\n'));
	}
}

static void test_read_errors(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	expect_read(tpath("missing.h5"), SP_ENOENT, "No such file or directory");
	write_bytes(tpath("empty.h5"), "", 0);
	expect_read(tpath("empty.h5"), SP_ENOTHDF5, "not an HDF5 file");
	write_bytes(tpath("text.h5"), "rank0/regions\nhello\n", 20);
	expect_read(tpath("text.h5"), SP_ENOTHDF5, "not an HDF5 file");
	expect_read(dir, SP_EIO, "is a directory");

	const char *good = tpath("good.h5");
	size_t n;
	assert_ok(sp_h5_write(p, good, &err), &err);
	char *bytes = read_bytes(good, &n);
	write_bytes(tpath("half.h5"), bytes, n / 2);
	expect_read(tpath("half.h5"), SP_ENOTHDF5, "truncated or damaged HDF5 file");
	/* Every truncation fails cleanly (no crash, no leak, no output). */
	for (size_t len = 1; len < n; len += 1 + len / 8) {
		struct sp_profile *q = NULL;
		write_bytes(tpath("cut.h5"), bytes, len);
		assert_int_not_equal(sp_h5_read(tpath("cut.h5"), SP_READ_EVENTS, &q, &err), SP_OK);
		assert_null(q);
	}

	hid_t f = H5Fcreate(tpath("norank.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t g = H5Gcreate2(f, "ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(g);
	g = H5Gcreate2(f, "metadata", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(g);
	H5Fclose(f);
	expect_read(tpath("norank.h5"), SP_ENOTPROF, "not a scope-profiler file (no rank groups)");
	free(bytes);
	sp_profile_free(p);
}

/* ---- the plain layout, as h5py users write it ---- */

static void plain_region(hid_t regions, const char *name, hid_t ftype, const double *se, size_t n,
			 size_t n_end)
{
	double s[8], e[8];
	for (size_t i = 0; i < n; i++) {
		s[i] = se[2 * i];
		e[i] = se[2 * i + 1];
	}
	hsize_t dims[2] = {n, n_end};
	hid_t g = H5Gcreate2(regions, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t sp = H5Screate_simple(1, dims, NULL), sp2 = H5Screate_simple(1, dims + 1, NULL);
	hid_t ds = H5Dcreate2(g, "start_times", ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t de = H5Dcreate2(g, "end_times", ftype, sp2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(g >= 0 && ds >= 0 && de >= 0);
	assert_true(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) >= 0);
	assert_true(H5Dwrite(de, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, e) >= 0);
	H5Dclose(ds);
	H5Dclose(de);
	H5Sclose(sp);
	H5Sclose(sp2);
	H5Gclose(g);
}

static hid_t plain_rank(hid_t f, const char *name)
{
	hid_t g = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t regions = H5Gcreate2(g, "regions", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(g);
	return regions;
}

static void test_plain_layout(void **state)
{
	(void)state;
	static const double outer[] = {100, 200, 300, 500}, inner[] = {110, 120, 130, 150, 310, 320},
		solve[] = {0, 0.2e9, 0.5e9, 0.75e9, 1e9, 1.2e9};
	const char *path = tpath("plain.h5");
	struct sp_profile *q = NULL;
	struct sp_error err = {0};

	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t g = H5Gcreate2(f, "notes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(g);
	hid_t rg = plain_rank(f, "rank10");
	plain_region(rg, "solve", H5T_STD_I64LE, solve, 3, 3);
	H5Gclose(rg);
	{       /* rank10's clock offset, as a 32-bit integer; rank2 has none */
		hid_t sp = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate_by_name(f, "rank10", "clock_offset_ns", H5T_STD_I32LE, sp,
					    H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		int32_t off = -750;
		assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &off) >= 0);
		H5Aclose(a);
		H5Sclose(sp);
	}
	rg = plain_rank(f, "rank2");
	plain_region(rg, "outer", H5T_STD_I32LE, outer, 2, 2);
	plain_region(rg, "inner", H5T_IEEE_F64LE, inner, 3, 3);
	plain_region(rg, "a%2Fb", H5T_STD_U16BE, outer, 2, 2);
	H5Gclose(rg);
	H5Fclose(f);

	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	assert_int_equal(q->format_version, 0);
	assert_int_equal(q->nmeta, 0);
	assert_int_equal(q->nranks, 2);
	assert_int_equal(q->ranks[0].rank, 2);
	assert_int_equal(q->ranks[1].rank, 10);
	assert_true(q->ranks[0].run_start_ns == SP_NO_TIME && q->ranks[0].pid == 0);
	assert_true(q->ranks[0].clock_offset_ns == 0);      /* absent */
	assert_true(q->ranks[1].clock_offset_ns == -750);
	/* By name: "a%2Fb" < "inner" < "outer"; the link name is unescaped. */
	const struct sp_rank *rk = &q->ranks[0];
	assert_int_equal(rk->nregions, 3);
	assert_string_equal(rk->regions[0].name, "a/b");
	assert_string_equal(rk->regions[1].name, "inner");
	assert_string_equal(rk->regions[2].name, "outer");
	const struct sp_stats *st = &rk->regions[1].stats;
	assert_true(st->num_calls == 3 && st->total_ns == 40 && st->min_ns == 10 && st->max_ns == 20);
	assert_true(st->first_start_ns == 110 && st->last_end_ns == 320);
	assert_int_equal(rk->regions[1].ends[1], 150);
	st = &q->ranks[1].regions[0].stats;
	assert_true(st->num_calls == 3 && st->total_ns == 650000000);
	assert_true(st->max_ns == 250000000);
	for (size_t r = 0; r < q->nranks; r++) {
		assert_non_null(q->ranks[r].tree);
		for (size_t i = 0; i < q->ranks[r].ntree; i++) {
			assert_true(q->ranks[r].tree[i].parent < (int32_t)i);
			assert_true(q->ranks[r].tree[i].region < (int32_t)q->ranks[r].nregions);
		}
	}
	assert_int_equal(q->ranks[1].ntree, 1);
	assert_true(q->ranks[1].tree[0].calls == 3);
	sp_profile_free(q);
	remove(path);
}

static void test_plain_corrupt(void **state)
{
	(void)state;
	static const double ok[] = {1, 2, 3, 4, 5, 6}, backwards[] = {1, 2, 5, 3};
	const char *path = tpath("bad.h5");
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t rg = plain_rank(f, "rank0");
	plain_region(rg, "solve", H5T_STD_I64LE, ok, 3, 2);
	H5Gclose(rg);
	H5Fclose(f);
	expect_read(path, SP_ECORRUPT, "rank0/regions/solve: start_times and end_times differ in length");

	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	rg = plain_rank(f, "rank0");
	plain_region(rg, "solve", H5T_STD_I64LE, backwards, 2, 2);
	H5Gclose(rg);
	H5Fclose(f);
	expect_read(path, SP_ECORRUPT, "call 1 ends before it starts");

	/* 2-D columns. */
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	rg = plain_rank(f, "rank0");
	hid_t g = H5Gcreate2(rg, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hsize_t dims[2] = {2, 2};
	int64_t v[4] = {1, 2, 3, 4};
	hid_t sp = H5Screate_simple(2, dims, NULL);
	for (int i = 0; i < 2; i++) {
		hid_t d = H5Dcreate2(g, i ? "end_times" : "start_times", H5T_STD_I64LE, sp, H5P_DEFAULT,
				     H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
		H5Dclose(d);
	}
	H5Sclose(sp);
	H5Gclose(g);
	H5Gclose(rg);
	H5Fclose(f);
	expect_read(path, SP_ECORRUPT, "rank0/regions/grid/start_times is not 1-D");

	/* A region group without its columns. */
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	rg = plain_rank(f, "rank0");
	H5Gclose(H5Gcreate2(rg, "empty", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	H5Gclose(rg);
	H5Fclose(f);
	expect_read(path, SP_ECORRUPT, "rank0/regions/empty has no start_times dataset");
	remove(path);
}

/* ---- line tables ---- */

/* The layout scope-profiler-format(5) documents: rank{N}/lines/{k}, tracked creation
 * order, fixed-length UTF-8 source as wide as the longest line + 1. */
static void test_lines_layout(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	const char *path = tpath("lines.h5");
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hid_t g = H5Gopen2(f, "rank0/lines", H5P_DEFAULT), gcpl = H5Gget_create_plist(g);
	unsigned crt = 0;
	assert_true(H5Pget_link_creation_order(gcpl, &crt) >= 0);
	assert_true(crt & H5P_CRT_ORDER_TRACKED);
	H5Pclose(gcpl);
	H5G_info_t info;
	assert_true(H5Gget_info(g, &info) >= 0);
	assert_int_equal(info.nlinks, 2);
	hid_t ds = H5Dopen2(g, "0/source", H5P_DEFAULT), t = H5Dget_type(ds);
	assert_int_equal(H5Tget_class(t), H5T_STRING);
	assert_int_equal(H5Tget_cset(t), H5T_CSET_UTF8);
	assert_int_equal(H5Tis_variable_str(t), 0);
	assert_int_equal(H5Tget_size(t), strlen("    \"\"\"Grüße, 日本\"\"\"") + 1);
	H5Tclose(t);
	H5Dclose(ds);
	int32_t first = 0;
	hid_t a = H5Aopen_by_name(g, "0", "first_line", H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_INT32, &first) >= 0);
	assert_int_equal(first, 41);
	H5Aclose(a);
	ds = H5Dopen2(g, "1/hits", H5P_DEFAULT);   /* the empty table */
	hid_t sp = H5Dget_space(ds);
	assert_int_equal(H5Sget_simple_extent_npoints(sp), 0);
	H5Sclose(sp);
	H5Dclose(ds);
	H5Gclose(g);
	assert_int_equal(H5Lexists(f, "rank5/lines", H5P_DEFAULT), 0);   /* no tables, no group */
	assert_int_equal(H5Fget_obj_count(f, H5F_OBJ_ALL), 1);
	H5Fclose(f);
	sp_profile_free(p);
	remove(path);
}

/* The writer refuses a table the reader would refuse, and leaves no file. */
static void test_lines_write_errors(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	const char *path = tpath("badlines.h5");
	struct sp_line_table *t = &p->ranks[0].lines[0];
	t->hits[3] = -1;
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "rank 0 line table 0: negative hits or time"));
	t->hits[3] = 11;
	t->first_line = -2;
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "line numbers out of range"));
	t->first_line = INT32_MAX - 4;                 /* 6 lines: the last is past INT32_MAX */
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	t->first_line = INT32_MAX - 5;                 /* the last is INT32_MAX: fine */
	assert_ok(sp_h5_write(p, path, &err), &err);
	remove(path);
	free(p->ranks[1].lines[0].function);
	p->ranks[1].lines[0].function = NULL;
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "rank 3 line table 0"));
	assert_int_equal(access(path, F_OK), -1);   /* nor its temporary file: */
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	assert_int_equal(access(tmp, F_OK), -1);
	sp_profile_free(p);
}

/* Writes a good profile to path, then lets damage() change its file f or its
 * first line table g. */
static void damaged(const char *path, void (*damage)(hid_t f, hid_t g))
{
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	assert_ok(sp_h5_write(p, path, &err), &err);
	sp_profile_free(p);
	hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t g = H5Gopen2(f, "rank0/lines/0", H5P_DEFAULT);
	assert_true(f >= 0 && g >= 0);
	damage(f, g);
	H5Gclose(g);
	assert_true(H5Fclose(f) >= 0);
}

static void i64_column(hid_t g, const char *name, const int64_t *v, size_t n)
{
	hsize_t dims[1] = {n};
	if (H5Lexists(g, name, H5P_DEFAULT) > 0)
		assert_true(H5Ldelete(g, name, H5P_DEFAULT) >= 0);
	hid_t sp = H5Screate_simple(1, dims, NULL);
	hid_t ds = H5Dcreate2(g, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(ds >= 0);
	assert_true(n == 0 || H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
	H5Dclose(ds);
	H5Sclose(sp);
}

static void no_function(hid_t f, hid_t g)
{
	assert_true(H5Adelete(g, "function") >= 0);
}

static void no_first_line(hid_t f, hid_t g)
{
	assert_true(H5Adelete(g, "first_line") >= 0);
}

static void no_source(hid_t f, hid_t g)
{
	assert_true(H5Ldelete(g, "source", H5P_DEFAULT) >= 0);
}

static void short_hits(hid_t f, hid_t g)
{
	static const int64_t v[5] = {0};
	i64_column(g, "hits", v, 5);
}

static void negative_time(hid_t f, hid_t g)
{
	static const int64_t v[6] = {0, 1, 0, -3, 1, 1};
	i64_column(g, "time_ns", v, 6);
}

static void negative_first_line(hid_t f, hid_t g)
{
	int32_t v = -1;
	hid_t a = H5Aopen(g, "first_line", H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &v) >= 0);
	H5Aclose(a);
}

static void numeric_function(hid_t f, hid_t g)
{
	int64_t v = 7;
	hid_t sp = H5Screate(H5S_SCALAR);
	assert_true(H5Adelete(g, "function") >= 0);
	hid_t a = H5Acreate2(g, "function", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
	H5Sclose(sp);
}

static void lines_not_a_group(hid_t f, hid_t g)
{
	static const int64_t v[1] = {1};
	hid_t rank = H5Gopen2(f, "rank0", H5P_DEFAULT);
	assert_true(rank >= 0 && H5Ldelete(rank, "lines", H5P_DEFAULT) >= 0);
	i64_column(rank, "lines", v, 1);
	H5Gclose(rank);
}

static void test_lines_corrupt(void **state)
{
	(void)state;
	const char *path = tpath("corrupt_lines.h5");
	static const struct {
		void (*damage)(hid_t, hid_t);
		const char *needle;
	} cases[] = {
		{no_function, "rank0/lines/0 has no 'function' attribute"},
		{no_first_line, "rank0/lines/0 has no 'first_line' attribute"},
		{numeric_function, "rank0/lines/0: bad 'function' attribute"},
		{no_source, "rank0/lines/0 has no source dataset"},
		{short_hits, "rank0/lines/0: hits, time_ns and source differ in length"},
		{negative_time, "rank0/lines/0: negative time at line 44"},
		{negative_first_line, "rank0/lines/0: first_line -1 out of range"},
		{lines_not_a_group, "rank0/lines is not a group"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		damaged(path, cases[i].damage);
		expect_read(path, SP_ECORRUPT, cases[i].needle);
	}
	remove(path);
}

/* h5py-style tables: variable-length strings, int32/float columns, links
 * named 0..10 without tracked creation order (read in numeric order). */
static void vlen_str_attr(hid_t g, const char *name, const char *value)
{
	hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hid_t a = H5Acreate2(g, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, t, &value) >= 0);
	H5Aclose(a);
	H5Sclose(sp);
	H5Tclose(t);
}

static void test_lines_vlen(void **state)
{
	(void)state;
	static const double outer[] = {100, 200};
	static const char *src[] = {"def f():", "    return 'ü'", NULL};
	static const int32_t hits[] = {0, 2, 1};
	static const double ns[] = {0, 40, 5};
	const char *path = tpath("vlen.h5");
	struct sp_profile *q = NULL;
	struct sp_error err = {0};
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t rg = plain_rank(f, "rank0");
	plain_region(rg, "outer", H5T_STD_I64LE, outer, 1, 1);
	H5Gclose(rg);
	hid_t lines = H5Gcreate2(f, "rank0/lines", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	for (int k = 10; k >= 0; k--) {
		char name[16], fn[16];
		snprintf(name, sizeof name, "%d", k);
		snprintf(fn, sizeof fn, "f%d", k);
		hid_t g = H5Gcreate2(lines, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		vlen_str_attr(g, "function", fn);
		vlen_str_attr(g, "region", "outer");
		vlen_str_attr(g, "filename", "/x/f.py");
		hid_t sp = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate2(g, "first_line", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
		int64_t first = 3 + k;
		H5Awrite(a, H5T_NATIVE_INT64, &first);
		H5Aclose(a);
		H5Sclose(sp);
		hsize_t dims[1] = {3};
		sp = H5Screate_simple(1, dims, NULL);
		hid_t st = H5Tcopy(H5T_C_S1);
		H5Tset_size(st, H5T_VARIABLE);
		H5Tset_cset(st, H5T_CSET_UTF8);
		hid_t d = H5Dcreate2(g, "source", st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		assert_true(H5Dwrite(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, src) >= 0);
		H5Dclose(d);
		H5Tclose(st);
		d = H5Dcreate2(g, "hits", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, hits);
		H5Dclose(d);
		d = H5Dcreate2(g, "time_ns", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ns);
		H5Dclose(d);
		H5Sclose(sp);
		H5Gclose(g);
	}
	H5Gclose(lines);
	H5Fclose(f);

	for (int flags = 0; flags < 2; flags++) {
		assert_ok(sp_h5_read(path, flags, &q, &err), &err);
		const struct sp_rank *rk = &q->ranks[0];
		assert_int_equal(rk->nlines, 11);
		for (size_t k = 0; k < 11; k++) {
			const struct sp_line_table *t = &rk->lines[k];
			char fn[16];
			snprintf(fn, sizeof fn, "f%zu", k);
			assert_string_equal(t->function, fn);
			assert_string_equal(t->region, "outer");
			assert_string_equal(t->filename, "/x/f.py");
			assert_int_equal(t->first_line, 3 + (int)k);
			assert_int_equal(t->n, 3);
			assert_string_equal(t->source[1], "    return 'ü'");
			assert_string_equal(t->source[2], "");
			assert_true(t->hits[1] == 2 && t->time_ns[1] == 40 && t->time_ns[2] == 5);
		}
		sp_profile_free(q);
	}
	remove(path);
}

/* ---- compression (p->compression) and aggregate regions ---- */

/* Appends to rk (its regions array grown) a region of n calls with jittered
 * timestamps, like a timestep loop's, and lanes when with_lanes. */
static void add_loop_region(struct sp_rank *rk, const char *name, size_t n, int with_lanes)
{
	rk->regions = realloc(rk->regions, (rk->nregions + 1) * sizeof *rk->regions);
	assert_non_null(rk->regions);
	struct sp_region_data *rd = &rk->regions[rk->nregions++];
	memset(rd, 0, sizeof *rd);
	rd->name = strdup(name);
	rd->starts = malloc(n * sizeof(int64_t));
	rd->ends = malloc(n * sizeof(int64_t));
	rd->lanes = with_lanes ? malloc(n * sizeof(int32_t)) : NULL;
	rd->owns_events = 1;
	uint64_t x = 88172645463325252u;
	int64_t t = INT64_C(1700000000000000000);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;   /* xorshift: deterministic jitter */
		rd->starts[i] = t;
		rd->ends[i] = t + 5000 + (int64_t)(x % 700);
		t = rd->ends[i] + 200 + (int64_t)((x >> 20) % 50);
		if (rd->lanes)
			rd->lanes[i] = (int32_t)(i % 2);
	}
	sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
}

/* The layout of rank{r}/regions/{link}/{column}: its chunk length (0 when
 * contiguous) and its deflate level (0 when none; shuffle must come first). */
static void column_layout(hid_t f, const char *dataset, hsize_t *chunk, int *level)
{
	hid_t ds = H5Dopen2(f, dataset, H5P_DEFAULT);
	assert_true(ds >= 0);
	hid_t dcpl = H5Dget_create_plist(ds);
	assert_true(dcpl >= 0);
	*chunk = 0;
	*level = 0;
	if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
		assert_int_equal(H5Pget_chunk(dcpl, 1, chunk), 1);
		assert_int_equal(H5Pget_nfilters(dcpl), 2);
		unsigned flags, cd[4];
		size_t ncd = 4;
		char fname[32];
		assert_int_equal(H5Pget_filter2(dcpl, 0, &flags, &ncd, cd, sizeof fname, fname, NULL),
				 H5Z_FILTER_SHUFFLE);
		ncd = 4;
		assert_int_equal(H5Pget_filter2(dcpl, 1, &flags, &ncd, cd, sizeof fname, fname, NULL),
				 H5Z_FILTER_DEFLATE);
		assert_true(ncd >= 1);
		*level = (int)cd[0];
	} else {
		assert_int_equal(H5Pget_layout(dcpl), H5D_CONTIGUOUS);
		assert_int_equal(H5Pget_nfilters(dcpl), 0);
	}
	H5Pclose(dcpl);
	H5Dclose(ds);
}

static off_t file_size(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* A compressed profile reads back exactly, whole, summary-only and streamed;
 * columns of 64 calls or more are chunked (at most 65536 elements, exactly
 * the column when shorter) with shuffle then deflate at the level asked for,
 * shorter ones stay contiguous; the file is a fraction of the plain one. */
static void test_compressed_roundtrip(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *plain = tpath("plain.h5"), *path = tpath("z.h5"), *again = tpath("z2.h5");
	int files = count_files();
	struct sp_rank *r3 = &p->ranks[1];
	add_loop_region(r3, "big", 150000, 1);    /* three chunks, the last one partial */
	add_loop_region(r3, "medium", 100, 0);    /* one chunk of exactly 100 */
	add_loop_region(r3, "small", 63, 0);      /* contiguous */

	assert_ok(sp_h5_write(p, plain, &err), &err);
	p->compression = 6;
	assert_ok(sp_h5_write(p, path, &err), &err);
	assert_ok(sp_h5_write(p, again, &err), &err);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	assert_same(p, q, 1);
	const struct sp_region_data *big = find_region(&q->ranks[1], "big");
	assert_non_null(big->lanes);
	assert_memory_equal(big->lanes, find_region(r3, "big")->lanes, 150000 * sizeof(int32_t));
	sp_profile_free(q);
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	assert_same(p, q, 0);
	sp_profile_free(q);

	/* The streaming reader, a slice across a chunk boundary. */
	struct sp_h5_stream *s = NULL;
	int64_t st[1000], en[1000];
	int32_t ln[1000];
	assert_ok(sp_h5_stream_open(path, &s, &err), &err);
	const struct sp_profile *sp = sp_h5_stream_profile(s);
	size_t gi = 0;
	while (strcmp(sp->ranks[1].regions[gi].name, "big") != 0)
		gi++;
	assert_ok(sp_h5_stream_read(s, 1, gi, 65000, 1000, st, en, ln, &err), &err);
	const struct sp_region_data *want = find_region(r3, "big");
	assert_memory_equal(st, want->starts + 65000, sizeof st);
	assert_memory_equal(en, want->ends + 65000, sizeof en);
	assert_memory_equal(ln, want->lanes + 65000, sizeof ln);
	sp_h5_stream_close(s);

	/* The layout, as any HDF5 reader sees it. */
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hsize_t chunk;
	int level;
	column_layout(f, "rank3/regions/big/start_times", &chunk, &level);
	assert_true(chunk == 65536 && level == 6);
	column_layout(f, "rank3/regions/big/end_times", &chunk, &level);
	assert_true(chunk == 65536 && level == 6);
	column_layout(f, "rank3/regions/big/lanes", &chunk, &level);
	assert_true(chunk == 65536 && level == 6);
	column_layout(f, "rank3/regions/medium/end_times", &chunk, &level);
	assert_true(chunk == 100 && level == 6);
	column_layout(f, "rank3/regions/small/start_times", &chunk, &level);
	assert_true(chunk == 0 && level == 0);
	column_layout(f, "rank3/tree/calls", &chunk, &level);
	assert_true(chunk == 0);
	H5Fclose(f);

	/* 150163 events: 16 bytes each plain, a fraction compressed. */
	off_t zsize = file_size(path), psize = file_size(plain);
	assert_true(psize > 150163 * 16);
	assert_true(zsize * 3 < psize);
	assert_true(file_size(again) == zsize);
	/* No clock in a plain file: the same profile gives the same bytes (a
	 * compressed one's superblock extension, for ISTORE_K, has times). */
	p->compression = 0;
	assert_ok(sp_h5_write(p, again, &err), &err);
	size_t na, nb;
	char *a = read_bytes(plain, &na), *b = read_bytes(again, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na);
	free(a);
	free(b);
	sp_profile_free(p);
	remove(plain);
	remove(path);
	remove(again);
	assert_int_equal(count_files(), files);
}

/* A level outside 0..9 is refused before any file is made; so is one for a
 * writer opened rank by rank. */
static void test_compression_level_refused(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	struct sp_h5_writer *w = (struct sp_h5_writer *)&err;
	const char *path = tpath("bad.h5");
	int files = count_files();
	p->compression = 10;
	assert_int_equal(sp_h5_write(p, path, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "compression level 10"));
	p->compression = -1;
	assert_int_equal(sp_h5_writer_open(path, p, &w, &err), SP_EINVAL);
	assert_null(w);
	assert_non_null(strstr(err.msg, "compression level -1"));
	assert_int_equal(count_files(), files);
	sp_profile_free(p);
}

/* An aggregate region (aggregation mode) is written as its summary
 * attributes plus self_ns and aggregate = 1, with no event columns. */
static void test_aggregate_region_written(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	const char *path = tpath("agg.h5");
	struct sp_rank *r3 = &p->ranks[1];
	r3->regions = realloc(r3->regions, 2 * sizeof *r3->regions);
	struct sp_region_data *rd = &r3->regions[r3->nregions++];
	memset(rd, 0, sizeof *rd);
	rd->name = strdup("agg/step");
	rd->aggregate = 1;
	rd->self_ns = 12345;
	rd->stats = (struct sp_stats){.num_calls = 1000000, .total_ns = 9000000, .min_ns = 7,
				      .max_ns = 90, .mean_ns = 9.0, .std_ns = 1.5,
				      .first_start_ns = 100, .last_end_ns = 10000100};
	for (int level = 0; level <= 4; level += 4) {
		p->compression = level;
		assert_ok(sp_h5_write(p, path, &err), &err);
		hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
		assert_true(f >= 0);
		hid_t g = H5Gopen2(f, "rank3/regions/agg%2Fstep", H5P_DEFAULT);
		assert_true(g >= 0);
		H5G_info_t info;
		assert_true(H5Gget_info(g, &info) >= 0);
		assert_int_equal(info.nlinks, 0);        /* no start_times, end_times, lanes */
		int64_t v;
		int32_t agg = 0;
		hid_t a = H5Aopen(g, "self_ns", H5P_DEFAULT);
		assert_true(a >= 0);
		hid_t t = H5Aget_type(a);
		assert_true(H5Tequal(t, H5T_STD_I64LE) > 0);
		H5Tclose(t);
		assert_true(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0 && v == 12345);
		H5Aclose(a);
		a = H5Aopen(g, "aggregate", H5P_DEFAULT);
		assert_true(a >= 0);
		t = H5Aget_type(a);
		assert_true(H5Tequal(t, H5T_STD_I32LE) > 0);
		H5Tclose(t);
		assert_true(H5Aread(a, H5T_NATIVE_INT32, &agg) >= 0 && agg == 1);
		H5Aclose(a);
		const char *i64[] = {"num_calls", "total_ns", "min_ns", "max_ns", "first_start_ns",
				     "last_end_ns"};
		const int64_t want[] = {1000000, 9000000, 7, 90, 100, 10000100};
		for (size_t i = 0; i < 6; i++) {
			a = H5Aopen(g, i64[i], H5P_DEFAULT);
			assert_true(a >= 0);
			assert_true(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
			assert_true(v == want[i]);
			H5Aclose(a);
		}
		double d;
		a = H5Aopen(g, "std_ns", H5P_DEFAULT);
		assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, &d) >= 0 && d == 1.5);
		H5Aclose(a);
		assert_true(H5Aexists(g, "name") > 0 && H5Aexists(g, "mean_ns") > 0);
		H5Gclose(g);
		/* A region with events has no such attributes. */
		g = H5Gopen2(f, "rank3/regions/solve", H5P_DEFAULT);
		assert_true(g >= 0);
		assert_int_equal(H5Aexists(g, "aggregate"), 0);
		assert_int_equal(H5Aexists(g, "self_ns"), 0);
		H5Gclose(g);
		H5Fclose(f);
	}
	sp_profile_free(p);
	remove(path);
}

/* ---- values that contradict each other ---- */

static void set_i64_attr(hid_t g, const char *name, int64_t v)
{
	hid_t a = H5Aopen(g, name, H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
}

/* Writes make_profile's file, then sets one summary attribute of rank 3's
 * "solve" (3 calls of 5, 20 and 40 ns: total 65) to v, or with name NULL
 * deletes its start_times. */
static void inconsistent(const char *path, const char *name, int64_t v)
{
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	assert_ok(sp_h5_write(p, path, &err), &err);
	sp_profile_free(p);
	hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t g = H5Gopen2(f, "rank3/regions/solve", H5P_DEFAULT);
	assert_true(f >= 0 && g >= 0);
	if (name)
		set_i64_attr(g, name, v);
	else
		assert_true(H5Ldelete(g, "start_times", H5P_DEFAULT) >= 0);
	H5Gclose(g);
	assert_true(H5Fclose(f) >= 0);
}

/* Every read (summary-only too, which reads no event) rejects a region whose
 * values contradict each other, naming the region and what is wrong. */
static void test_inconsistent_values(void **state)
{
	(void)state;
	const char *path = tpath("inconsistent.h5");
	static const struct {
		const char *attr;
		int64_t v;
		const char *says;
	} cases[] = {
		/* A count the columns do not hold: the summary-only read sees it
		 * in their extent, the full read in the events. */
		{"num_calls", INT64_C(1) << 62, "rank3/regions/solve: num_calls is 4611686018427387904 but "},
		{"num_calls", 4, "rank3/regions/solve: num_calls is 4 but "},
		{"num_calls", -1, "rank3/regions/solve: inconsistent summary: num_calls is negative"},
		{"min_ns", -5, "rank3/regions/solve: inconsistent summary: min_ns and max_ns are not"},
		{"max_ns", 4, "rank3/regions/solve: inconsistent summary: min_ns and max_ns are not"},
		{"total_ns", 39, "rank3/regions/solve: inconsistent summary: total_ns is not between"},
		{"total_ns", 121, "rank3/regions/solve: inconsistent summary: total_ns is not between"},
		{"total_ns", -65, "rank3/regions/solve: inconsistent summary: total_ns is not between"},
		{"last_end_ns", 0, "rank3/regions/solve: inconsistent summary: first_start_ns and last_end_ns"},
		{NULL, 0, "rank3/regions/solve has no start_times dataset"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		inconsistent(path, cases[i].attr, cases[i].v);
		struct sp_profile *q = NULL;
		struct sp_error err = {0};
		if (!cases[i].attr) {
			/* A summary needs no columns; a full read needs both. */
			assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
			sp_profile_free(q);
			q = NULL;
			assert_int_equal(sp_h5_read(path, SP_READ_EVENTS, &q, &err), SP_ECORRUPT);
			assert_non_null(strstr(err.msg, cases[i].says));
			assert_null(q);
			continue;
		}
		expect_read(path, SP_ECORRUPT, cases[i].says);
		struct sp_h5_stream *s = NULL;
		assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
		assert_null(s);
		assert_non_null(strstr(err.msg, "rank3/regions/solve"));
	}
	/* The file as written reads. */
	inconsistent(path, "num_calls", 3);
	struct sp_profile *q = NULL;
	struct sp_error err = {0};
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	sp_profile_free(q);
	remove(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_summary_read),
		cmocka_unit_test(test_inconsistent_values),
		cmocka_unit_test(test_lanes_roundtrip),
		cmocka_unit_test(test_v1_without_tree),
		cmocka_unit_test(test_write_fails_cleanly),
		cmocka_unit_test(test_writer_roundtrip),
		cmocka_unit_test(test_writer_abort),
		cmocka_unit_test(test_writer_failure_commit),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_plain_layout),
		cmocka_unit_test(test_plain_corrupt),
		cmocka_unit_test(test_lines_layout),
		cmocka_unit_test(test_lines_write_errors),
		cmocka_unit_test(test_lines_corrupt),
		cmocka_unit_test(test_lines_vlen),
		cmocka_unit_test(test_compressed_roundtrip),
		cmocka_unit_test(test_compression_level_refused),
		cmocka_unit_test(test_aggregate_region_written),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return cmocka_run_group_tests(tests, setup, teardown);
}
