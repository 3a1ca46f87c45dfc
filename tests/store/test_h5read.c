/* test_h5read.c - the HDF5 reader (src/store/h5read*.c): round trips,
 * summary reads, files without trees, what is refused and why (the
 * damaged-file checks of h5read_check.c), the plain layout, summaries
 * that contradict themselves; format version 2, and version 1 again. */
#include "h5_fixtures.h"

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
	/* Version 1: only where recorded; version 2 has one lanes column per
	 * rank, lane 0 for the calls of regions without lanes. */
	const struct sp_region_data *other = &q->ranks[0].regions[1];
	if (fmt_version == 1) {
		assert_null(other->lanes);
	} else {
		assert_non_null(other->lanes);
		for (int64_t i = 0; i < other->stats.num_calls; i++)
			assert_int_equal(other->lanes[i], 0);
		assert_null(q->ranks[1].regions[0].lanes);   /* a rank without lanes */
	}
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

/* A file written without trees: the reader returns what the file holds
 * (no tree, the events), and sp_report_read builds the trees from them. */
static void test_without_tree(void **state)
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
	for (size_t r = 0; r < q->nranks; r++)
		assert_null(q->ranks[r].tree);
	assert_non_null(find_region(&q->ranks[0], "löser/ß")->starts);
	sp_profile_free(q);
	q = NULL;
	assert_ok(sp_report_read(path, SP_READ_SUMMARY, &q, &err), &err);
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

/* Open descriptors of this process. */
static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* The superblock is looked for where HDF5 looks (0, 512, 1024, ...), as
 * H5Fis_hdf5 did before the reader found it in its own scan; the file the
 * checks read directly is closed again on every path. */
static void test_signature_where_hdf5_looks(void **state)
{
	(void)state;
	static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	int fds = count_fds();

	/* A user block of 512 bytes: found, an HDF5 file, not a profile. */
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
	H5Pset_userblock(fcpl, 512);
	hid_t f = H5Fcreate(tpath("ub.h5"), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
	H5Gclose(H5Gcreate2(f, "ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	H5Fclose(f);
	H5Pclose(fcpl);
	expect_read(tpath("ub.h5"), SP_ENOTPROF, "no rank groups");

	/* A good profile after 100 bytes: no signature where HDF5 looks. */
	char good[600];
	size_t n;
	snprintf(good, sizeof good, "%s", tpath("good.h5"));
	assert_ok(sp_h5_write(p, good, &err), &err);
	char *bytes = read_bytes(good, &n), *shifted = calloc(1, n + 100);
	assert_non_null(shifted);
	memcpy(shifted + 100, bytes, n);
	write_bytes(tpath("shifted.h5"), shifted, n + 100);
	expect_read(tpath("shifted.h5"), SP_ENOTHDF5, "not an HDF5 file");
	/* The signature alone is an HDF5 file, truncated; less is none. */
	write_bytes(tpath("sig8.h5"), sig, 8);
	expect_read(tpath("sig8.h5"), SP_ENOTHDF5, "truncated or damaged HDF5 file");
	write_bytes(tpath("sig7.h5"), sig, 7);
	expect_read(tpath("sig7.h5"), SP_ENOTHDF5, "not an HDF5 file");
	/* Junk, then the signature at 512 cut short. */
	memset(shifted, 'x', 512);
	memcpy(shifted + 512, sig, 8);
	write_bytes(tpath("cut512.h5"), shifted, 515);
	expect_read(tpath("cut512.h5"), SP_ENOTHDF5, "not an HDF5 file");

	/* Reads, good and failed, full and streamed, leave no descriptor. */
	struct sp_profile *q = NULL;
	assert_ok(sp_h5_read(good, SP_READ_EVENTS, &q, &err), &err);
	sp_profile_free(q);
	struct sp_h5_stream *st = NULL;
	assert_ok(sp_h5_stream_open(good, &st, &err), &err);
	sp_h5_stream_close(st);
	write_bytes(tpath("half.h5"), bytes, n / 2);
	assert_int_not_equal(sp_h5_stream_open(tpath("half.h5"), &st, &err), SP_OK);
	assert_int_not_equal(sp_h5_read(tpath("half.h5"), 0, &q, &err), SP_OK);
	assert_int_equal(count_fds(), fds);
	free(shifted);
	free(bytes);
	sp_profile_free(p);
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

	assert_ok(sp_report_read(path, SP_READ_SUMMARY, &q, &err), &err);
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

/* ---- values that contradict each other ---- */

static void set_i64_attr(hid_t g, const char *name, int64_t v)
{
	hid_t a = H5Aopen(g, name, H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
}

/* Writes make_profile's file, then sets one summary value of rank 3's
 * "solve" (3 calls of 5, 20 and 40 ns: total 65; version 2: row 0 of its
 * table) to v, or with name NULL deletes its start_times. */
static void inconsistent(const char *path, const char *name, int64_t v)
{
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	char at[64];
	assert_ok(sp_h5_write(p, path, &err), &err);
	sp_profile_free(p);
	if (fmt_version == 2) {
		if (!name) {
			replace_dataset(path, "rank3/events/start_times", 0);
			return;
		}
		snprintf(at, sizeof at, "rank3/regions/%s", name);
		set_element(path, at, 0, v);
		return;
	}
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
 * values contradict each other, naming the region (or the columns) and what
 * is wrong. */
static void test_inconsistent_values(void **state)
{
	(void)state;
	const char *path = tpath("inconsistent.h5");
	static const struct {
		const char *attr;
		int64_t v;
		const char *says, *says_v2;   /* NULL: as version 1 */
	} cases[] = {
		/* A count the columns do not hold: the summary-only read sees it
		 * in their extent, the full read in the events. */
		{"num_calls", INT64_C(1) << 62, "rank3/regions/solve: num_calls is 4611686018427387904 but ",
		 "rank3/events: start_times holds 3 calls, the regions 4611686018427387904"},
		{"num_calls", 4, "rank3/regions/solve: num_calls is 4 but ",
		 "rank3/events: start_times holds 3 calls, the regions 4"},
		{"num_calls", -1, "rank3/regions/solve: inconsistent summary: num_calls is negative", NULL},
		{"min_ns", -5, "rank3/regions/solve: inconsistent summary: min_ns and max_ns are not", NULL},
		{"max_ns", 4, "rank3/regions/solve: inconsistent summary: min_ns and max_ns are not", NULL},
		{"total_ns", 39, "rank3/regions/solve: inconsistent summary: total_ns is not between", NULL},
		{"total_ns", 121, "rank3/regions/solve: inconsistent summary: total_ns is not between", NULL},
		{"total_ns", -65, "rank3/regions/solve: inconsistent summary: total_ns is not between", NULL},
		{"last_end_ns", 0, "rank3/regions/solve: inconsistent summary: first_start_ns and last_end_ns",
		 NULL},
		{NULL, 0, "rank3/regions/solve has no start_times dataset",
		 "rank3/events has no start_times dataset"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *says = fmt_version == 2 && cases[i].says_v2 ? cases[i].says_v2 : cases[i].says;
		inconsistent(path, cases[i].attr, cases[i].v);
		struct sp_profile *q = NULL;
		struct sp_error err = {0};
		if (!cases[i].attr && fmt_version == 1) {
			/* A summary needs no columns; a full read needs both. */
			assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
			sp_profile_free(q);
			q = NULL;
			assert_int_equal(sp_h5_read(path, SP_READ_EVENTS, &q, &err), SP_ECORRUPT);
			assert_non_null(strstr(err.msg, says));
			assert_null(q);
			continue;
		}
		expect_read(path, SP_ECORRUPT, says);
		struct sp_h5_stream *s = NULL;
		assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
		assert_null(s);
		assert_non_null(strstr(err.msg, fmt_version == 2 ? says : "rank3/regions/solve"));
	}
	/* The file as written reads. */
	inconsistent(path, "num_calls", 3);
	struct sp_profile *q = NULL;
	struct sp_error err = {0};
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	sp_profile_free(q);
	remove(path);
}

/* Version 2: a table whose rows disagree with each other or with the event
 * columns, or that lacks a column or a group, is refused by every reader,
 * saying where. */
static void test_damaged_table(void **state)
{
	(void)state;
	const char *path = tpath("table.h5");
	static const struct {
		const char *dataset;
		hsize_t row;
		int64_t v;
		const char *says;
	} cases[] = {
		{"rank0/regions/first_event", 1, 2, "rank0/regions/a/b: first_event is 2, but the rows before it hold 1 calls"},
		{"rank0/regions/first_event", 0, -1, "rank0/regions/main: first_event is -1"},
		{"rank0/regions/aggregate", 2, 2, "rank0/regions/x.y: aggregate is 2, not 0 or 1"},
		{"rank0/regions/dropped_events", 3, -4, "rank0/regions/with space: negative dropped_events"},
		{"rank0/tree/region", 2, 9, "rank0/tree: node 2 names no region of this rank"},
		{"rank0/tree/region", 0, -1, "rank0/tree: node 0 names no region of this rank"},
		{"rank0/tree/parent", 1, 1, "rank0/tree: node 1 has a bad parent 1"},
	};
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_ok(sp_h5_write(p, path, &err), &err);
		set_element(path, cases[i].dataset, cases[i].row, cases[i].v);
		expect_read(path, SP_ECORRUPT, cases[i].says);
		if (strstr(cases[i].dataset, "tree"))
			continue;              /* the stream reads no tree */
		struct sp_h5_stream *s = NULL;
		assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
		assert_non_null(strstr(err.msg, cases[i].says));
	}
	/* Columns missing, or of another length than the names. */
	static const struct {
		const char *dataset;
		hsize_t n;
		const char *says;
	} gone[] = {
		{"rank0/regions/mean_ns", 0, "rank0/regions has no mean_ns dataset"},
		{"rank0/regions/std_ns", 4, "rank0/regions: std_ns holds 4 rows, name 9"},
		{"rank0/regions/name", 0, "rank0/regions has no name dataset"},
		{"rank0/events/lanes", 3, "rank0/events: lanes holds 3 calls, the regions 10"},
		{"rank0/events/end_times", 12, "rank0/events: end_times holds 12 calls, the regions 10"},
	};
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
		assert_ok(sp_h5_write(p, path, &err), &err);
		if (strstr(gone[i].dataset, "lanes")) {
			/* a lanes column where there was none */
			hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
			hsize_t n = 3;
			hid_t sp = H5Screate_simple(1, &n, NULL);
			int32_t zero[3] = {0};
			hid_t d = H5Dcreate2(f, gone[i].dataset, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT,
					     H5P_DEFAULT);
			assert_true(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, zero) >= 0);
			H5Dclose(d);
			H5Sclose(sp);
			H5Fclose(f);
		} else {
			replace_dataset(path, gone[i].dataset, gone[i].n);
		}
		expect_read(path, SP_ECORRUPT, gone[i].says);
		struct sp_h5_stream *s = NULL;
		assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
		assert_non_null(strstr(err.msg, gone[i].says));
	}
	/* Groups missing. */
	const char *groups[][2] = {{"rank3/events", "rank3 has no events group"},
				   {"rank3/regions", "rank3 has no regions group"}};
	for (size_t i = 0; i < 2; i++) {
		assert_ok(sp_h5_write(p, path, &err), &err);
		hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
		assert_true(f >= 0 && H5Ldelete(f, groups[i][0], H5P_DEFAULT) >= 0);
		H5Fclose(f);
		expect_read(path, SP_ECORRUPT, groups[i][1]);
	}
	/* A file of a later version is refused by name. */
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &(int32_t){4}) >= 0);
	H5Aclose(a);
	H5Fclose(f);
	expect_read(path, SP_ENOTPROF, "format version 4 is not supported (1 to 3 are)");
	/* The file as written reads. */
	assert_ok(sp_h5_write(p, path, &err), &err);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
	sp_profile_free(q);
	sp_profile_free(p);
	remove(path);
}

int main(void)
{
	const struct CMUnitTest both[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_summary_read),
		cmocka_unit_test(test_inconsistent_values),
		cmocka_unit_test(test_lanes_roundtrip),
		cmocka_unit_test(test_without_tree),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_signature_where_hdf5_looks),
	};
	const struct CMUnitTest once[] = {
		cmocka_unit_test(test_damaged_table),
		cmocka_unit_test(test_plain_layout),
		cmocka_unit_test(test_plain_corrupt),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	int rc = cmocka_run_group_tests_name("format version 2", both, setup, teardown);
	rc |= cmocka_run_group_tests_name("format version 2 only, and other layouts", once, setup, teardown);
	fmt_version = 1;
	rc |= cmocka_run_group_tests_name("format version 1", both, setup, teardown);
	return rc;
}
