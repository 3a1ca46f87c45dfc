/* test_h5read_v3.c - reading format version 3, a streamed profile
 * (src/store/h5read_v3.c, the stream's version 3 in h5stream.c): finished
 * and partial files built with the HDF5 C API as the contract lays them
 * out (tests/store/h5_v3.h), each region's calls gathered in call order
 * from its blocks; a partial file cut to its consistent prefix, its open
 * calls ended at its last flush; a file left open for SWMR writing (by a
 * child process that exits without closing it, as a killed run does, or
 * one still writing) read all the same; and every damaged file refused
 * with one line. */
#include <signal.h>
#include <sys/wait.h>

#include "h5_fixtures.h"

#define V3_CHECK(cond) assert_true(cond)
#include "h5_v3.h"

/* Region name's calls in the profile read (events loaded). */
static const struct sp_region_data *region_of(const struct sp_profile *p, const char *name)
{
	const struct sp_region_data *rd = find_region(&p->ranks[0], name);
	if (!rd)
		fail_msg("no region '%s'", name);
	return rd;
}

static void assert_calls(const struct sp_region_data *rd, size_t n, const int64_t *se)
{
	assert_int_equal(rd->stats.num_calls, n);
	assert_non_null(rd->starts);
	for (size_t i = 0; i < n; i++) {
		if (rd->starts[i] != se[2 * i] || rd->ends[i] != se[2 * i + 1])
			fail_msg("%s: call %zu is %lld..%lld, not %lld..%lld", rd->name, i, (long long)rd->starts[i],
				 (long long)rd->ends[i], (long long)se[2 * i], (long long)se[2 * i + 1]);
	}
}

static const int64_t solve_calls[] = {1100, 1200, 1300, 1400, 1700, 1800, 1900, 2000, 2100, 2200};
static const int64_t io_calls[] = {1500, 1600, 2300, 2400};

/* A finished file: the table's stats, every region's calls gathered from
 * its blocks in call order, lanes; a summary read loads the events too
 * (no tree is stored) and sp_report_read builds the tree. */
static void test_finished(void **state)
{
	(void)state;
	struct v3_file f = v3_good(1);
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	const char *path = tpath("finished.h5");
	v3_write(path, &f, 0);
	for (int flags = 0; flags < 2; flags++) {
		assert_ok(sp_h5_read(path, flags, &p, &err), &err);
		assert_int_equal(p->format_version, 3);
		assert_int_equal(p->partial, 0);
		assert_int_equal(p->nranks, 1);
		const struct sp_rank *rk = &p->ranks[0];
		assert_true(rk->run_start_ns == 1000 && rk->run_end_ns == 9000 && rk->pid == 4242);
		assert_int_equal(rk->nregions, 3);
		assert_string_equal(rk->regions[0].name, "main");
		assert_null(rk->tree);
		assert_calls(region_of(p, "solve"), 5, solve_calls);
		assert_calls(region_of(p, "io/write"), 2, io_calls);
		assert_calls(region_of(p, "main"), 1, (const int64_t[]){1050, 2800});
		const int32_t lanes[5] = {0, 1, 0, 1, 1};
		assert_memory_equal(region_of(p, "solve")->lanes, lanes, sizeof lanes);
		assert_true(region_of(p, "solve")->stats.total_ns == 500);
		assert_string_equal(sp_profile_meta(p, "total_cores"), "1");
		sp_profile_free(p);
	}
	assert_ok(sp_report_read(path, SP_READ_SUMMARY, &p, &err), &err);
	assert_non_null(p->ranks[0].tree);
	assert_int_equal(p->ranks[0].tree[0].region, 0);     /* main holds the rest */
	sp_profile_free(p);
}

/* A partial file: stats from the events, the call open at the last flush
 * ending then (or at its start when that is later), regions without calls
 * left out, the profile marked partial up to the last flush. */
static void test_partial(void **state)
{
	(void)state;
	struct v3_file f = v3_good(0);
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	const char *path = tpath("run.h5.partial");
	f.names[3] = "never";          /* a name without calls yet */
	f.nnames = 4;
	v3_write(path, &f, 0);
	for (int flags = 0; flags < 2; flags++) {
		assert_ok(sp_h5_read(path, flags, &p, &err), &err);
		assert_int_equal(p->format_version, 3);
		assert_int_equal(p->partial, 1);
		assert_true(p->partial_until_ns == 2600);
		assert_int_equal(p->nmeta, 0);
		const struct sp_rank *rk = &p->ranks[0];
		assert_true(rk->run_end_ns == SP_NO_TIME);
		assert_int_equal(rk->nregions, 3);
		assert_calls(region_of(p, "main"), 1, (const int64_t[]){1050, 2600});
		assert_calls(region_of(p, "solve"), 5, solve_calls);
		const struct sp_stats *st = &region_of(p, "solve")->stats;
		assert_true(st->total_ns == 500 && st->min_ns == 100 && st->first_start_ns == 1100 &&
			    st->last_end_ns == 2200);
		assert_true(region_of(p, "main")->stats.max_ns == 1550);
		assert_null(find_region(rk, "never"));
		sp_profile_free(p);
	}
	/* Flushed before the open call started: it ends where it starts. */
	f.flushed_ns = 1000;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_calls(region_of(p, "main"), 1, (const int64_t[]){1050, 1050});
	sp_profile_free(p);
}

/* What a reader of a live file may see, SWMR ordering nothing between
 * datasets: the columns of different lengths, blocks past them or naming
 * a region whose name is not there yet, lanes and values not filled yet.
 * Each is cut to the consistent prefix, never refused. */
static void test_partial_prefix(void **state)
{
	(void)state;
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	const char *path = tpath("cut.h5.partial");
	struct v3_file f = v3_good(0);
	/* end_times one call short: the last block (io's second call) goes;
	 * lanes shorter than both columns: absent. */
	f.nends = 7;
	f.nlanes = 6;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_calls(region_of(p, "io/write"), 1, io_calls);
	assert_calls(region_of(p, "solve"), 5, solve_calls);
	assert_null(region_of(p, "solve")->lanes);
	sp_profile_free(p);
	/* start_times four short: the blocks from the one holding call 4 on go
	 * (main's among them: it has no call left and is left out). */
	f = v3_good(0);
	f.nstarts = 4;
	f.nlanes = 4;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(p->ranks[0].nregions, 2);
	assert_calls(region_of(p, "solve"), 2, solve_calls);
	assert_calls(region_of(p, "io/write"), 1, io_calls);
	assert_null(find_region(&p->ranks[0], "main"));
	assert_non_null(region_of(p, "solve")->lanes);
	sp_profile_free(p);
	/* The last name cut short: the blocks from the first naming it on go. */
	f = v3_good(0);
	f.names_cut = 3;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(p->ranks[0].nregions, 1);
	assert_calls(region_of(p, "solve"), 2, solve_calls);
	sp_profile_free(p);
	/* block_calls longer than block_region, and the other way round. */
	f = v3_good(0);
	f.nregion = 2;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(p->ranks[0].nregions, 2);
	sp_profile_free(p);
	/* Values: every region has them once alloc_bytes holds every call. */
	f = v3_good(0);
	f.nalloc = 8;
	for (int i = 0; i < 8; i++)
		f.alloc[i] = 10 * (i + 1);
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	const struct sp_region_data *io = region_of(p, "io/write");
	assert_int_equal(io->value_kind, SP_VALUES_ALLOC_BYTES);
	assert_true(io->values[0] == 30 && io->values[1] == 80 && io->values_total == 110);
	sp_profile_free(p);
	f.nalloc = 7;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(region_of(p, "io/write")->value_kind, 0);
	assert_null(region_of(p, "io/write")->values);
	sp_profile_free(p);
	/* Nothing flushed yet but the names: an empty profile, still partial. */
	f = v3_good(0);
	f.nregion = f.ncalls = f.nstarts = f.nends = f.nlanes = 0;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(p->partial, 1);
	assert_int_equal(p->ranks[0].nregions, 0);
	sp_profile_free(p);
}

/* Values in a finished file: the table's value_kind, checked against
 * values_total. */
static void test_finished_values(void **state)
{
	(void)state;
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	const char *path = tpath("values.h5");
	struct v3_file f = v3_good(1);
	f.nalloc = 8;
	for (int i = 0; i < 8; i++)
		f.alloc[i] = i;
	v3_write(path, &f, 0);
	assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
	const struct sp_region_data *io = region_of(p, "io/write");
	assert_int_equal(io->value_kind, SP_VALUES_ALLOC_BYTES);
	assert_true(io->values[0] == 2 && io->values[1] == 7 && io->values_total == 9);
	sp_profile_free(p);
	f.nalloc = 7;                  /* a finished file's columns hold every call */
	v3_write(path, &f, 0);
	expect_read(path, SP_ECORRUPT, "holds 7 calls");
}

/* The damage of test_damaged, case by case. */
static const struct {
	int finished;
	const char *says;
} damage[] = {
	{1, "block 2 names region 7 of 3"},
	{0, "block 2 has region -1"},
	{1, "block 2 has region -1"},
	{0, "block 1 has calls -5"},
	{1, "block 1 has calls -5"},
	{1, "block 5 ends past the 8 calls"},
	{1, "block_region holds 6 blocks, block_calls 5"},
	{1, "start_times and end_times differ in length"},
	{1, "lanes holds 5 calls, start_times 8"},
	{1, "has no block_calls dataset"},
	{0, "has no block_region dataset"},
	{1, "rank0/regions/solve: its blocks hold 5 calls, num_calls says 6"},
	{1, "the blocks hold 7 calls, start_times 8"},
	{1, "rank0/regions/solve: call 0 ends before it starts"},
	{0, "rank0/stream has no flushed_ns dataset"},
	{0, "rank0/stream: empty flushed_ns"},
	{0, "rank0 has two regions named 'solve'"},
	{0, "durations overflow 64 bits"},
};

static void spoil(struct v3_file *x, size_t i)
{
	switch (i) {
	case 0: x->region[2] = 7; break;
	case 1: case 2: x->region[2] = -1; break;
	case 3: case 4: x->calls[1] = -5; break;
	case 5: x->calls[5] = 3; break;
	case 6: x->ncalls = 5; break;
	case 7: x->nends = 7; break;
	case 8: x->nlanes = 5; break;
	case 9: x->ncalls = -1; break;
	case 10: x->nregion = -1; break;
	case 11:
		x->set_num_calls = 1;
		x->num_calls[0] = 1;
		x->num_calls[1] = 6;
		x->num_calls[2] = 3;
		break;
	case 12: x->ncalls = x->nregion = 5; break;
	case 13: break;                /* the table's stats as written; see below */
	case 14: x->nflushed = -1; break;
	case 15: x->nflushed = 0; break;
	case 16: x->names[2] = "solve"; break;
	case 17:
		x->starts[0] = INT64_MIN + 1;
		x->ends[0] = INT64_MAX;
		break;
	}
}

/* A damaged file is one line, whichever way it is read. */
static void test_damaged(void **state)
{
	(void)state;
	const char *path = tpath("bad.h5");
	struct v3_file f;
	for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
		f = v3_good(damage[i].finished);
		spoil(&f, i);
		v3_write(path, &f, 0);
		if (i == 13)
			set_element(path, "rank0/events/end_times", 0, 1000);
		expect_read(path, SP_ECORRUPT, damage[i].says);
		struct sp_h5_stream *s = (struct sp_h5_stream *)&s;
		struct sp_error err = {0};
		if (i == 13)
			continue;      /* found when the calls are read */
		assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
		assert_null(s);
		if (!strstr(err.msg, damage[i].says))
			fail_msg("stream: '%s' does not say '%s'", err.msg, damage[i].says);
	}
	/* A rank with neither a table nor a stream group. */
	f = v3_good(0);
	v3_write(path, &f, 0);
	hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	assert_true(h >= 0 && H5Ldelete(h, "rank0/stream", H5P_DEFAULT) >= 0);
	H5Fclose(h);
	expect_read(path, SP_ECORRUPT, "rank0 has neither a regions table nor a stream group");
}

/* The stream reads a region's calls across its blocks, any slice of them,
 * as the full read has them; a partial file's stats computed at open. */
static void test_stream(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *path = tpath("stream.h5");
	for (int finished = 0; finished < 2; finished++) {
		struct v3_file f = v3_good(finished);
		f.nalloc = 8;
		for (int i = 0; i < 8; i++)
			f.alloc[i] = 100 + i;
		v3_write(path, &f, 0);
		struct sp_profile *p = NULL;
		struct sp_h5_stream *s = NULL;
		assert_ok(sp_h5_read(path, SP_READ_EVENTS, &p, &err), &err);
		assert_ok(sp_h5_stream_open(path, &s, &err), &err);
		const struct sp_profile *q = sp_h5_stream_profile(s);
		assert_int_equal(q->partial, !finished);
		assert_int_equal(q->ranks[0].nregions, p->ranks[0].nregions);
		for (size_t g = 0; g < p->ranks[0].nregions; g++) {
			const struct sp_region_data *a = &p->ranks[0].regions[g], *b = &q->ranks[0].regions[g];
			size_t n = (size_t)a->stats.num_calls;
			assert_string_equal(b->name, a->name);
			assert_true(b->stats.num_calls == a->stats.num_calls && b->stats.total_ns == a->stats.total_ns &&
				    b->stats.first_start_ns == a->stats.first_start_ns &&
				    b->stats.last_end_ns == a->stats.last_end_ns && b->stats.max_ns == a->stats.max_ns);
			assert_true(b->values_total == a->values_total);
			assert_null(b->starts);
			for (size_t first = 0; first < n; first++)
				for (size_t k = 1; first + k <= n; k++) {
					int64_t st[8], en[8], v[8];
					int32_t ln[8];
					assert_ok(sp_h5_stream_read(s, 0, g, first, k, st, en, ln, &err), &err);
					assert_memory_equal(st, a->starts + first, k * sizeof *st);
					assert_memory_equal(en, a->ends + first, k * sizeof *en);
					assert_memory_equal(ln, a->lanes + first, k * sizeof *ln);
					assert_ok(sp_h5_stream_values(s, 0, g, first, k, v, &err), &err);
					assert_memory_equal(v, a->values + first, k * sizeof *v);
				}
			int64_t st[8], en[8];
			assert_int_equal(sp_h5_stream_read(s, 0, g, 0, n + 1, st, en, NULL, &err), SP_EINVAL);
		}
		sp_h5_stream_close(s);
		sp_profile_free(p);
		assert_int_equal(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
	}
}

/* A file left open for SWMR writing, as a run killed with SIGKILL leaves
 * it (a child writes, flushes and exits without closing), and one still
 * being written (the child waits): a plain open fails, the reader opens it
 * for reading while written. */
static void test_swmr(void **state)
{
	(void)state;
	const char *path = tpath("swmr.h5.partial");
	struct sp_error err = {0};
	for (int live = 0; live < 2; live++) {
		int go[2], done[2];
		assert_int_equal(pipe(go), 0);
		assert_int_equal(pipe(done), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct v3_file f = v3_good(0);
			char c = 0;
			close(go[0]);
			close(done[1]);
			v3_write(path, &f, 1);
			if (write(go[1], &c, 1) != 1)
				_exit(1);
			if (live && read(done[0], &c, 1) < 0)
				_exit(1);
			_exit(0);      /* the file never closed: a killed run's */
		}
		char c;
		close(go[1]);
		close(done[0]);
		assert_int_equal(read(go[0], &c, 1), 1);
		if (!live)
			assert_int_equal(waitpid(pid, NULL, 0), pid);
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		assert_true(H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) < 0);
		struct sp_profile *p = NULL;
		assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &p, &err), &err);
		assert_int_equal(p->partial, 1);
		assert_calls(region_of(p, "main"), 1, (const int64_t[]){1050, 2600});
		assert_calls(region_of(p, "solve"), 5, solve_calls);
		sp_profile_free(p);
		struct sp_h5_stream *s = NULL;
		assert_ok(sp_h5_stream_open(path, &s, &err), &err);
		assert_int_equal(sp_h5_stream_profile(s)->partial, 1);
		sp_h5_stream_close(s);
		close(go[0]);
		close(done[1]);            /* the live writer exits */
		if (live)
			assert_int_equal(waitpid(pid, NULL, 0), pid);
		assert_int_equal(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finished),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_partial_prefix),
		cmocka_unit_test(test_finished_values),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_swmr),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
