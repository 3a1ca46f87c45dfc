/* test_stream.c - a run's calls streamed to OUT.partial (src/store/stream.c,
 * stream_file.c; format version 3): what a reader of the partial file sees
 * while the stream runs, calls handed over open and patched, a value column
 * (run --memory) going on with its first block, the finished file, a full
 * queue refusing, a cancelled stream leaving nothing. */

#include "h5_fixtures.h"
#include "sp_stream.h"

static struct sp_stream_config config(const char *path, size_t queue)
{
	return (struct sp_stream_config){
		.path = path, .rank = 0, .pid = 42, .run_start_ns = 1000, .hostname = "node1",
		.compression = 0, .queue_bytes = queue, .interval_ns = 3600 * SP_STREAM_INTERVAL_NS,
	};
}

/* A 1-D int64 (or int32, widened) dataset of an open file, whole. */
static int64_t *column(hid_t f, const char *name, size_t *n)
{
	hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
	assert_true(ds >= 0);
	hid_t sp = H5Dget_space(ds);
	*n = (size_t)H5Sget_simple_extent_npoints(sp);
	int64_t *v = calloc(*n ? *n : 1, sizeof *v);
	assert_non_null(v);
	if (*n)
		assert_true(H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
	H5Sclose(sp);
	H5Dclose(ds);
	return v;
}

static hid_t open_swmr(const char *path)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
	H5Pclose(fapl);
	return f;
}

static void test_partial_then_finished(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *out = tpath("s.h5");
	char partial[600];
	snprintf(partial, sizeof partial, "%s.partial", out);
	struct sp_stream_config c = config(out, 1 << 20);
	assert_ok(sp_stream_start(&c, &err), &err);
	assert_true(sp_stream_on());
	/* Region 0 (outer) has one call still open; region 1 (inner) two. */
	const int64_t s0[] = {1100}, e0[] = {SP_NO_TIME};
	const int64_t s1[] = {1200, 1400}, e1[] = {1300, 1500};
	const int32_t l1[] = {0, 1};
	assert_int_equal(sp_stream_name(0, "outer"), 0);
	assert_int_equal(sp_stream_block(0, 1, s0, e0, NULL, 0, NULL), 0);
	assert_int_equal(sp_stream_name(1, "in/ner"), 0);
	assert_int_equal(sp_stream_block(1, 2, s1, e1, l1, 0, NULL), 1);
	sp_stream_flush(1600);
	/* The writer takes the flush soon: a reader then sees all three calls. */
	size_t n = 0;
	for (int i = 0; i < 12000 && n < 3; i++) {   /* up to a minute on a loaded machine */
		usleep(5000);
		hid_t f = open_swmr(partial);
		if (f < 0)
			continue;
		/* Opened while the writer sets the file up: not there yet. */
		if (H5Lexists(f, "rank0", H5P_DEFAULT) <= 0 || H5Lexists(f, "rank0/events", H5P_DEFAULT) <= 0 ||
		    H5Lexists(f, "rank0/events/block_calls", H5P_DEFAULT) <= 0) {
			H5Fclose(f);
			continue;
		}
		size_t k;
		int64_t *calls = column(f, "rank0/events/block_calls", &k);
		int64_t sum = 0;
		for (size_t j = 0; j < k; j++)
			sum += calls[j];
		n = (size_t)sum;
		free(calls);
		H5Fclose(f);
	}
	assert_int_equal(n, 3);
	/* The open call ends later: a patch, written with the next flush. */
	assert_int_equal(sp_stream_patch(0, 1700, 0, 0), 0);
	assert_int_equal(sp_stream_calls(), 3);

	/* Finished: one rank, its regions in id order with their statistics. */
	struct sp_profile *p = calloc(1, sizeof *p);
	p->format_version = 3;
	p->nranks = 1;
	p->ranks = calloc(1, sizeof *p->ranks);
	struct sp_rank *rk = &p->ranks[0];
	rk->run_start_ns = 1000;
	rk->run_end_ns = 1800;
	rk->regions = calloc(2, sizeof *rk->regions);
	rk->nregions = 2;
	rk->regions[0].name = strdup("outer");
	sp_stats_compute(&rk->regions[0].stats, (int64_t[]){1100}, (int64_t[]){1700}, 1);
	rk->regions[1].name = strdup("in/ner");
	sp_stats_compute(&rk->regions[1].stats, s1, e1, 2);
	assert_ok(sp_stream_finish(p, NULL, &err), &err);
	assert_false(sp_stream_on());
	assert_int_equal(access(partial, F_OK), -1);
	hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	int32_t version = 0;
	hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
	assert_true(H5Aread(a, H5T_NATIVE_INT32, &version) >= 0);
	H5Aclose(a);
	assert_int_equal(version, 3);
	assert_int_equal(H5Lexists(f, "rank0/stream", H5P_DEFAULT), 0);
	assert_int_equal(H5Lexists(f, "metadata", H5P_DEFAULT), 1);
	int64_t *ends = column(f, "rank0/events/end_times", &n);
	assert_int_equal(n, 3);
	assert_int_equal(ends[0], 1700);      /* patched */
	assert_int_equal(ends[2], 1500);
	int64_t *lanes = column(f, "rank0/events/lanes", &n);
	assert_int_equal(n, 3);
	assert_int_equal(lanes[0], 0);         /* before any lane: 0 */
	assert_int_equal(lanes[2], 1);
	int64_t *calls = column(f, "rank0/regions/num_calls", &n);
	assert_int_equal(n, 2);
	assert_int_equal(calls[0], 1);
	assert_int_equal(calls[1], 2);
	assert_int_equal(H5Lexists(f, "rank0/regions/first_event", H5P_DEFAULT), 0);
	H5Fclose(f);
	free(ends);
	free(lanes);
	free(calls);
	sp_profile_free(p);
	remove(out);
}

/* A value column goes on with the first block that has values (the calls
 * before get 0), blocks without values get 0 too, an open call's value is
 * patched with its end; a block larger than the stage is written straight
 * with its values. */
static void test_values_column(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *out = tpath("v.h5");
	struct sp_stream_config c = config(out, 8 << 20);
	assert_ok(sp_stream_start(&c, &err), &err);
	enum { BIG = 70000 };
	int64_t *bs = malloc(BIG * sizeof *bs), *be = malloc(BIG * sizeof *be), *bv = malloc(BIG * sizeof *bv);
	assert_true(bs && be && bv);
	for (int i = 0; i < BIG; i++) {
		bs[i] = 3000 + i;
		be[i] = 3001 + i;
		bv[i] = i % 7;
	}
	const int64_t s0[] = {1100, 1200}, e0[] = {1150, 1250};
	const int64_t s1[] = {1300, 1400}, e1[] = {SP_NO_TIME, 1450}, v1[] = {0, 40};
	assert_int_equal(sp_stream_name(0, "plain"), 0);
	assert_int_equal(sp_stream_block(0, 2, s0, e0, NULL, 0, NULL), 0);
	assert_int_equal(sp_stream_name(1, "mem"), 0);
	assert_int_equal(sp_stream_block(1, 2, s1, e1, NULL, SP_VALUES_ALLOC_BYTES, v1), 2);
	assert_int_equal(sp_stream_block(0, 1, s0, e0, NULL, 0, NULL), 4);
	assert_int_equal(sp_stream_block(1, BIG, bs, be, NULL, SP_VALUES_ALLOC_BYTES, bv), 5);
	assert_int_equal(sp_stream_patch(2, 2900, SP_VALUES_ALLOC_BYTES, 777), 0);
	assert_ok(sp_stream_close(&err), &err);
	char partial[600];
	snprintf(partial, sizeof partial, "%s.partial", out);
	hid_t f = open_swmr(partial);
	assert_true(f >= 0);
	size_t n, nb;
	int64_t *v = column(f, "rank0/events/alloc_bytes", &n);
	int64_t *ends = column(f, "rank0/events/end_times", &nb);
	assert_int_equal(n, 5 + BIG);
	assert_int_equal(nb, 5 + BIG);
	const int64_t want[5] = {0, 0, 777, 40, 0};
	for (int i = 0; i < 5; i++)
		assert_int_equal(v[i], want[i]);
	assert_int_equal(ends[2], 2900);
	for (int i = 0; i < BIG; i++)
		assert_int_equal(v[5 + i], i % 7);
	free(column(f, "rank0/events/bytes", &n));
	assert_int_equal(n, 0);   /* the other kind stays empty */
	H5Fclose(f);
	free(v);
	free(ends);
	free(bs);
	free(be);
	free(bv);
	sp_stream_cancel();
	assert_int_equal(count_files(), 0);
}

static void test_full_queue_refuses_and_counts(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *out = tpath("q.h5");
	/* A writer slower than this test (the tests' slow disk: it pauses 10 s
	 * before each record), and a queue of 256 bytes: an empty queue takes
	 * any block, one that holds a block refuses the next. */
	setenv("SCOPE_PROFILER_TEST_SLOW_WRITER_US", "10000000", 1);
	struct sp_stream_config c = config(out, 256);
	assert_ok(sp_stream_start(&c, &err), &err);
	unsetenv("SCOPE_PROFILER_TEST_SLOW_WRITER_US");
	int64_t s[64], e[64];
	for (int i = 0; i < 64; i++)
		s[i] = e[i] = 2000 + i;
	assert_int_equal(sp_stream_room(64, 0, 0), 1);
	assert_int_equal(sp_stream_block(0, 64, s, e, NULL, 0, NULL), 0);
	assert_int_equal(sp_stream_room(64, 0, 0), 0);
	assert_int_equal(sp_stream_block(0, 64, s, e, NULL, 0, NULL), -1);
	assert_int_equal(sp_stream_refused(), 64);
	assert_true(sp_stream_handed());
	sp_stream_cancel();
	assert_false(sp_stream_on());
	assert_int_equal(count_files(), 0);
}

static void test_cancel_removes_the_partial_file(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *out = tpath("c.h5");
	struct sp_stream_config c = config(out, 1 << 20);
	assert_ok(sp_stream_start(&c, &err), &err);
	int64_t s[] = {1}, e[] = {2};
	assert_int_equal(sp_stream_name(0, "r"), 0);
	assert_int_equal(sp_stream_block(0, 1, s, e, NULL, 0, NULL), 0);
	assert_ok(sp_stream_close(&err), &err);
	char partial[600];
	snprintf(partial, sizeof partial, "%s.partial", out);
	assert_int_equal(access(partial, F_OK), 0);
	sp_stream_cancel();
	assert_int_equal(count_files(), 0);
}

static void test_a_device_as_partial_is_refused(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *out = tpath("d.h5");
	char partial[600];
	snprintf(partial, sizeof partial, "%s.partial", out);
	assert_int_equal(mkdir(partial, 0700), 0);
	struct sp_stream_config c = config(out, 1 << 20);
	assert_int_equal(sp_stream_start(&c, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_false(sp_stream_on());
	rmdir(partial);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partial_then_finished),
		cmocka_unit_test(test_values_column),
		cmocka_unit_test(test_full_queue_refuses_and_counts),
		cmocka_unit_test(test_cancel_removes_the_partial_file),
		cmocka_unit_test(test_a_device_as_partial_is_refused),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return cmocka_run_group_tests_name("stream", tests, setup, teardown);
}
