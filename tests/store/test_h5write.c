/* test_h5write.c - the HDF5 writer (src/store/h5write*.c):
 * failures that leave nothing behind, the streaming writer, line tables
 * refused, compression and aggregate regions, format version 2's layout
 * (and version 1's, still written when asked for). */
#include "h5_fixtures.h"

/* ---- tests ---- */

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
	p->meta[p->nmeta++] = (struct sp_kv){strdup(key), strdup(value), SP_KV_FIXED};
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
	assert_ok(sp_h5_writer_meta(w, "mpi ranks", "3", SP_KV_FIXED, &err), &err);
	/* Ranks in any order: the reader sorts them. */
	assert_ok(sp_h5_writer_rank(w, &p->ranks[2], &err), &err);   /* rank 5 */
	assert_ok(sp_h5_writer_meta(w, "between", "ranks/ü", SP_KV_FIXED, &err), &err);
	assert_ok(sp_h5_writer_rank(w, &p->ranks[0], &err), &err);   /* rank 0 */
	assert_ok(sp_h5_writer_rank(w, &p->ranks[1], &err), &err);   /* rank 3 */
	assert_ok(sp_h5_writer_meta(w, "last", "", SP_KV_FIXED, &err), &err);
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
	assert_ok(sp_h5_writer_meta(w, "extra", "1", SP_KV_FIXED, &err), &err);
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
	assert_int_equal(sp_h5_writer_meta(w, "fine", "key", SP_KV_FIXED, &err), code);
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
	assert_int_equal(sp_h5_writer_meta(w, "zeta", "again", SP_KV_FIXED, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "cannot write metadata 'zeta'"));
	expect_failed_commit(w, p, path, SP_EINVAL, "cannot write metadata 'zeta'");
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_int_equal(sp_h5_writer_meta(w, "", "x", SP_KV_FIXED, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "metadata entry has no key or value"));
	sp_h5_writer_abort(w);
	assert_ok(sp_h5_writer_open(path, p, &w, &err), &err);
	assert_int_equal(sp_h5_writer_meta(w, "k", NULL, SP_KV_FIXED, &err), SP_EINVAL);
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
	assert_int_equal(sp_h5_writer_meta(NULL, "k", "v", SP_KV_FIXED, &err), SP_EINVAL);
	assert_int_equal(sp_h5_writer_commit(NULL, &err), SP_EINVAL);
	free(before);
	free(after);
	remove(path);
	sp_profile_free(p);
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
	if (fmt_version == 2) {
		/* Rank 3's columns: 3 + 150000 + 100 + 63 calls, chunks of 65536. */
		static const char *const cols[] = {"start_times", "end_times", "lanes"};
		char at[64];
		for (int c = 0; c < 3; c++) {
			snprintf(at, sizeof at, "rank3/events/%s", cols[c]);
			column_layout(f, at, &chunk, &level);
			assert_true(chunk == 65536 && level == 6);
		}
		column_layout(f, "rank0/events/start_times", &chunk, &level);   /* 10 calls */
		assert_true(chunk == 0 && level == 0);
		column_layout(f, "rank3/regions/num_calls", &chunk, &level);
		assert_true(chunk == 0);
	} else {
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
	}
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

/* Version 1: an aggregate region (aggregation mode) is written as its
 * summary attributes plus self_ns and aggregate = 1, with no event columns. */
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

/* ---- format version 2's layout ---- */

/* Reads the whole 1-D dataset at path of f as int64 into a malloc'd array
 * of *n elements. */
static int64_t *read_i64(hid_t f, const char *path, hsize_t *n)
{
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	assert_true(d >= 0);
	hid_t sp = H5Dget_space(d);
	assert_int_equal(H5Sget_simple_extent_dims(sp, n, NULL), 1);
	int64_t *v = malloc((*n ? *n : 1) * sizeof *v);
	assert_true(*n == 0 || H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
	H5Sclose(sp);
	H5Dclose(d);
	return v;
}

/* The name column of rank group g of f: n strings of one fixed width. */
static char *read_names(hid_t f, const char *path, hsize_t *n, size_t *width)
{
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	assert_true(d >= 0);
	hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
	assert_int_equal(H5Tget_class(t), H5T_STRING);
	assert_int_equal(H5Tis_variable_str(t), 0);
	assert_int_equal(H5Tget_cset(t), H5T_CSET_UTF8);
	*width = H5Tget_size(t);
	assert_int_equal(H5Sget_simple_extent_dims(sp, n, NULL), 1);
	char *v = calloc(*n ? *n : 1, *width);
	assert_true(*n == 0 || H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
	H5Tclose(t);
	H5Sclose(sp);
	H5Dclose(d);
	return v;
}

/* What a plain HDF5 reader finds: per rank, a table with a row per region
 * that has calls (in the rank's order, exact names, its summary and its
 * first call in the event columns), the events of every row one after the
 * other, lanes for every call once a region has them (0 where it had
 * none), the tree's regions by row. */
static void test_layout_v2(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	const char *path = tpath("layout.h5");
	struct sp_rank *r0 = &p->ranks[0];
	struct sp_region_data *ab = &r0->regions[1];    /* "a/b", 2 calls, row 1 */
	ab->lanes = malloc(2 * sizeof *ab->lanes);
	ab->lanes[0] = 4;
	ab->lanes[1] = 7;
	r0->regions[2].dropped = 9;
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	int32_t version = 0;
	hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
	assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_INT32, &version) >= 0 && version == 2);
	H5Aclose(a);

	hsize_t n, ne, nl, nf;
	size_t width;
	char *names = read_names(f, "rank0/regions/name", &n, &width);
	int64_t *calls = read_i64(f, "rank0/regions/num_calls", &nf);
	int64_t *first = read_i64(f, "rank0/regions/first_event", &nf);
	int64_t *total = read_i64(f, "rank0/regions/total_ns", &nf);
	int64_t *dropped = read_i64(f, "rank0/regions/dropped_events", &nf);
	int64_t *agg = read_i64(f, "rank0/regions/aggregate", &nf);
	int64_t *starts = read_i64(f, "rank0/events/start_times", &ne);
	int64_t *ends = read_i64(f, "rank0/events/end_times", &ne);
	int64_t *lanes = read_i64(f, "rank0/events/lanes", &nl);
	assert_int_equal(n, 9);                        /* "never called" has no row */
	assert_int_equal(nf, 9);
	assert_int_equal(ne, 10);
	assert_int_equal(nl, 10);
	assert_int_equal(width, strlen("with space") + 1);   /* the longest, in bytes */
	size_t row = 0;
	int64_t at = 0;
	for (size_t i = 0; i < r0->nregions; i++) {
		const struct sp_region_data *rd = &r0->regions[i];
		if (rd->stats.num_calls == 0)
			continue;
		assert_string_equal(names + row * width, rd->name);
		assert_true(calls[row] == rd->stats.num_calls && total[row] == rd->stats.total_ns);
		assert_true(dropped[row] == rd->dropped && agg[row] == 0);
		assert_true(first[row] == at);
		for (int64_t c = 0; c < rd->stats.num_calls; c++) {
			assert_true(starts[at + c] == rd->starts[c] && ends[at + c] == rd->ends[c]);
			assert_true(lanes[at + c] == (rd->lanes ? rd->lanes[c] : 0));
		}
		at += rd->stats.num_calls;
		row++;
	}
	/* The tree by row: node 1 is "a/b" (row 1), node 3 "with space" (row 3). */
	int64_t *tree_region = read_i64(f, "rank0/tree/region", &n);
	assert_int_equal(n, r0->ntree);
	assert_true(tree_region[1] == 1 && tree_region[3] == 3 && tree_region[4] == 4);
	/* Rank 5 recorded nothing: empty columns, all there. */
	free(read_i64(f, "rank5/regions/num_calls", &n));
	assert_int_equal(n, 0);
	free(read_i64(f, "rank5/events/end_times", &n));
	assert_int_equal(n, 0);
	assert_int_equal(H5Lexists(f, "rank3/events/lanes", H5P_DEFAULT), 0);
	H5Fclose(f);
	int64_t *arrays[] = {calls, first, total, dropped, agg, starts, ends, lanes, tree_region};
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
		free(arrays[i]);
	free(names);
	sp_profile_free(p);
	remove(path);
}

/* Version 2: an aggregate region (aggregation mode) is a row with its
 * summary, aggregate 1 and its self_ns, and no calls in the event columns
 * (the next row's first event is its own). */
static void test_aggregate_row_v2(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("aggrow.h5");
	struct sp_rank *r3 = &p->ranks[1];
	r3->regions = realloc(r3->regions, 3 * sizeof *r3->regions);
	struct sp_region_data *rd = &r3->regions[r3->nregions];
	memmove(rd, r3->regions, sizeof *rd);          /* solve goes second */
	memset(r3->regions, 0, sizeof *rd);
	r3->nregions++;
	r3->tree[0].region = 1;
	rd = &r3->regions[0];
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
		hsize_t n;
		int64_t *agg = read_i64(f, "rank3/regions/aggregate", &n);
		int64_t *self = read_i64(f, "rank3/regions/self_ns", &n);
		int64_t *first = read_i64(f, "rank3/regions/first_event", &n);
		int64_t *calls = read_i64(f, "rank3/regions/num_calls", &n);
		free(read_i64(f, "rank3/events/start_times", &n));
		assert_int_equal(n, 3);                 /* solve's calls only */
		assert_true(agg[0] == 1 && agg[1] == 0 && self[0] == 12345 && self[1] == 0);
		assert_true(first[0] == 0 && first[1] == 0 && calls[0] == 1000000);
		free(agg);
		free(self);
		free(first);
		free(calls);
		H5Fclose(f);
		assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
		const struct sp_region_data *got = find_region(&q->ranks[1], "agg/step");
		assert_true(got->aggregate && got->self_ns == 12345 && !got->starts);
		assert_memory_equal(&got->stats, &rd->stats, sizeof rd->stats);
		assert_memory_equal(find_region(&q->ranks[1], "solve")->ends, r3->regions[1].ends,
				    3 * sizeof(int64_t));
		sp_profile_free(q);
	}
	sp_profile_free(p);
	remove(path);
}

/* Names whose fixed-length column would be too large (a very long name
 * among many) are written as variable-length strings, and read back. */
static void test_long_names(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("long.h5");
	struct sp_region_data *rd = &p->ranks[0].regions[2];
	size_t len = (size_t)1 << 20;          /* 1 MiB x 9 rows: over 8 MiB fixed */
	free(rd->name);
	rd->name = malloc(len + 1);
	memset(rd->name, 'x', len);
	rd->name[len] = '\0';
	rd->name[len - 1] = 'y';
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t d = H5Dopen2(f, "rank0/regions/name", H5P_DEFAULT), t = H5Dget_type(d);
	assert_true(H5Tis_variable_str(t) > 0);
	H5Tclose(t);
	H5Dclose(d);
	H5Fclose(f);
	for (int flags = 0; flags < 2; flags++) {
		assert_ok(sp_h5_read(path, flags, &q, &err), &err);
		assert_same(p, q, flags);
		sp_profile_free(q);
	}
	sp_profile_free(p);
	remove(path);
}

/* Many regions, whose events pass through the writer's buffers (8192 calls
 * uncompressed, 65536 compressed) and the reader's (65536) many at a time,
 * between two that do not fit one,
 * plain and compressed: every call back where it was. */
static void test_many_regions(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("many.h5");
	struct sp_rank *r5 = &p->ranks[2];
	char name[32];
	add_loop_region(r5, "first big", 70000, 1);
	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof name, "r%03d", i);
		add_loop_region(r5, name, 1 + (size_t)(i * 7) % 300, i % 2);
	}
	add_loop_region(r5, "last big", 65536, 0);
	free(r5->tree);
	r5->tree = NULL;
	assert_ok(sp_tree_build(r5, &err), &err);
	for (int level = 0; level <= 1; level++) {
		p->compression = level;
		assert_ok(sp_h5_write(p, path, &err), &err);
		assert_ok(sp_h5_read(path, SP_READ_EVENTS, &q, &err), &err);
		assert_same(p, q, 1);
		const struct sp_rank *got = &q->ranks[2];
		for (size_t i = 0; i < got->nregions; i++) {
			const struct sp_region_data *x = &r5->regions[i], *y = &got->regions[i];
			if (x->lanes)
				assert_memory_equal(y->lanes, x->lanes, (size_t)x->stats.num_calls * sizeof(int32_t));
			else if (fmt_version == 1)
				assert_null(y->lanes);
		}
		sp_profile_free(q);
		/* Streamed, a slice across the end of one region's calls. */
		struct sp_h5_stream *s = NULL;
		int64_t st[50], en[50];
		assert_ok(sp_h5_stream_open(path, &s, &err), &err);
		for (size_t gi = 0; gi < r5->nregions; gi += 97) {
			const struct sp_region_data *x = &r5->regions[gi];
			size_t k = x->stats.num_calls < 50 ? (size_t)x->stats.num_calls : 50;
			uint64_t from = (uint64_t)x->stats.num_calls - k;
			assert_ok(sp_h5_stream_read(s, 2, gi, from, k, st, en, NULL, &err), &err);
			assert_memory_equal(st, x->starts + from, k * sizeof *st);
			assert_memory_equal(en, x->ends + from, k * sizeof *en);
		}
		sp_h5_stream_close(s);
	}
	sp_profile_free(p);
	remove(path);
}

/* Per-call values (run --memory's alloc_bytes, run --mpi-calls' bytes)
 * and peaks: each kind its own column of group events (0 for the calls of
 * regions without), the kind, total and peak in the regions table; read
 * back whole, summary-only (kind, total and peak without the columns), in
 * both the direct and the buffered paths, plain and compressed. */
static void test_values_v2(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("values.h5");
	struct sp_rank *r3 = &p->ranks[1];
	add_loop_region(r3, "big", 150000, 0);
	add_loop_region(r3, "mpi", 40, 0);
	add_loop_region(r3, "plain", 30, 0);
	struct sp_region_data *big = &r3->regions[r3->nregions - 3], *mpi = big + 1, *plain = big + 2;
	big->value_kind = SP_VALUES_ALLOC_BYTES;
	big->values = malloc(150000 * sizeof(int64_t));
	assert_non_null(big->values);
	big->values_total = 0;                 /* their sum: a whole read checks it */
	for (size_t i = 0; i < 150000; i++)
		big->values_total += big->values[i] = (int64_t)(i * 37 % 1000);
	big->peak_bytes = 5 << 20;
	mpi->value_kind = SP_VALUES_BYTES;
	mpi->values = malloc(40 * sizeof(int64_t));
	assert_non_null(mpi->values);
	for (size_t i = 0; i < 40; i++)
		mpi->values[i] = 8 * (int64_t)i;
	mpi->values_total = 6240;
	plain->peak_bytes = 4096;
	/* run --gpu: the wait column, -1 in the rows not timed so. */
	big->gpu_waited = 1;
	big->gpu_wait_ns = 987654321;
	mpi->gpu_waited = 1;
	for (int level = 0; level <= 6; level += 6) {
		p->compression = level;
		assert_ok(sp_h5_write(p, path, &err), &err);
		for (int whole = 1; whole >= 0; whole--) {
			assert_ok(sp_h5_read(path, whole ? SP_READ_EVENTS : SP_READ_SUMMARY, &q, &err), &err);
			const struct sp_rank *g = &q->ranks[1];
			for (size_t i = 0; i < r3->nregions; i++) {
				const struct sp_region_data *x = &r3->regions[i];
				const struct sp_region_data *y = find_region(g, x->name);
				if (x->stats.num_calls == 0)
					continue;
				assert_non_null(y);
				assert_int_equal(y->value_kind, x->value_kind);
				assert_true(y->values_total == (x->value_kind ? x->values_total : 0));
				assert_true((y->peak_bytes > 0 ? y->peak_bytes : 0) == (x->peak_bytes > 0 ? x->peak_bytes : 0));
				assert_int_equal(y->gpu_waited, x->gpu_waited);
				assert_true(y->gpu_wait_ns == x->gpu_wait_ns);
				if (!whole || !x->value_kind) {
					assert_null(y->values);
					continue;
				}
				assert_non_null(y->values);
				assert_memory_equal(y->values, x->values,
						    (size_t)x->stats.num_calls * sizeof *x->values);
			}
			sp_profile_free(q);
			q = NULL;
		}
	}
	/* As any HDF5 reader sees it: both columns as long as the events,
	 * the table's kinds and peaks (-1: not known). */
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hsize_t ne, na, nb, nk, np;
	free(read_i64(f, "rank3/events/start_times", &ne));
	int64_t *alloc = read_i64(f, "rank3/events/alloc_bytes", &na);
	int64_t *bytes = read_i64(f, "rank3/events/bytes", &nb);
	int64_t *kind = read_i64(f, "rank3/regions/value_kind", &nk);
	int64_t *peak = read_i64(f, "rank3/regions/peak_live_bytes", &np);
	assert_true(na == ne && nb == ne && nk == np);
	assert_true(kind[nk - 3] == 1 && kind[nk - 2] == 2 && kind[nk - 1] == 0 && kind[0] == 0);
	assert_true(peak[np - 3] == 5 << 20 && peak[np - 2] == -1 && peak[np - 1] == 4096);
	assert_true(alloc[ne - 70 - 150000 + 1] == 37 && alloc[ne - 1] == 0);
	assert_true(bytes[ne - 31] == 8 * 39 && bytes[ne - 70 - 1] == 0);
	/* Rank 0 has no values and no peaks: no such columns. */
	assert_int_equal(H5Lexists(f, "rank0/events/alloc_bytes", H5P_DEFAULT), 0);
	assert_int_equal(H5Lexists(f, "rank0/regions/value_kind", H5P_DEFAULT), 0);
	assert_int_equal(H5Lexists(f, "rank0/regions/peak_live_bytes", H5P_DEFAULT), 0);
	H5Fclose(f);
	free(alloc);
	free(bytes);
	free(kind);
	free(peak);
	sp_profile_free(p);
	remove(path);
}

/* Version 2: the regions table's cumulative_ns, each row's total counting a
 * recursive region once, from the rank's tree; read back; older files
 * without it read as unknown (0); one above its total_ns is refused. */
static void test_cumulative_v2(void **state)
{
	(void)state;
	static const int64_t rec[] = {0, 100, 10, 90, 20, 30}, leaf[] = {40, 50};
	struct sp_profile *p = calloc(1, sizeof *p);
	struct sp_error err = {0};
	const char *path = tpath("cumulative.h5");
	p->format_version = 2;
	p->nranks = 1;
	p->ranks = calloc(1, sizeof *p->ranks);
	struct sp_rank *rk = &p->ranks[0];
	rk->run_start_ns = 0;
	rk->run_end_ns = 200;
	rk->regions = calloc(2, sizeof *rk->regions);
	add_region(rk, "rec", rec, 3);
	add_region(rk, "leaf", leaf, 1);
	assert_ok(sp_tree_build(rk, &err), &err);
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hsize_t n;
	int64_t *cum = read_i64(f, "rank0/regions/cumulative_ns", &n);
	int64_t *total = read_i64(f, "rank0/regions/total_ns", &n);
	H5Fclose(f);
	assert_int_equal(n, 2);
	assert_int_equal(total[0], 100 + 80 + 10);
	assert_int_equal(cum[0], 100);
	assert_int_equal(cum[1], 10);
	free(cum);
	free(total);
	for (int flags = 0; flags < 2; flags++) {
		struct sp_profile *q = NULL;
		assert_ok(sp_h5_read(path, flags, &q, &err), &err);
		assert_int_equal(q->ranks[0].regions[0].cumulative_ns, 100);
		assert_int_equal(q->ranks[0].regions[1].cumulative_ns, 10);
		sp_profile_free(q);
	}
	set_element(path, "rank0/regions/cumulative_ns", 0, 191);
	expect_read(path, SP_ECORRUPT, "cumulative_ns 191 is not between 0 and total_ns 190");
	replace_dataset(path, "rank0/regions/cumulative_ns", 0);   /* a file from before */
	struct sp_profile *q = NULL;
	assert_ok(sp_h5_read(path, 0, &q, &err), &err);
	assert_int_equal(q->ranks[0].regions[0].cumulative_ns, 0);
	int64_t c[2];
	assert_int_equal(sp_rank_region_times(&q->ranks[0], c, NULL), 1);   /* from the tree */
	assert_int_equal(c[0], 100);
	sp_profile_free(q);
	sp_profile_free(p);
	remove(path);
}

/* Metadata of each type: a fixed-length string (what h5py reads as bytes),
 * a variable-length one (read as str) and an integer, stored as such and
 * read back with their types; an integer that is not one is refused. */
static void test_meta_types(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile(), *q = NULL;
	struct sp_error err = {0};
	const char *path = tpath("meta_types.h5");
	size_t n0 = p->nmeta;
	push_meta(p, "fixed", "a");
	push_meta(p, "user", "ü-user");
	p->meta[p->nmeta - 1].type = SP_KV_TEXT;
	push_meta(p, "total_cores", "-12");
	p->meta[p->nmeta - 1].type = SP_KV_INT;
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), g = H5Gopen2(f, "metadata", H5P_DEFAULT);
	hid_t a = H5Aopen(g, "user", H5P_DEFAULT), t = H5Aget_type(a);
	assert_true(H5Tis_variable_str(t) > 0);
	assert_int_equal(H5Tget_cset(t), H5T_CSET_UTF8);
	H5Tclose(t);
	H5Aclose(a);
	a = H5Aopen(g, "fixed", H5P_DEFAULT);
	t = H5Aget_type(a);
	assert_int_equal(H5Tis_variable_str(t), 0);
	H5Tclose(t);
	H5Aclose(a);
	int64_t v = 0;
	a = H5Aopen(g, "total_cores", H5P_DEFAULT);
	t = H5Aget_type(a);
	assert_int_equal(H5Tget_class(t), H5T_INTEGER);
	assert_true(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
	assert_true(v == -12);
	H5Tclose(t);
	H5Aclose(a);
	H5Gclose(g);
	H5Fclose(f);
	assert_ok(sp_h5_read(path, SP_READ_SUMMARY, &q, &err), &err);
	assert_int_equal(q->nmeta, n0 + 3);
	static const struct { const char *key, *value; enum sp_kv_type type; } want[] = {
		{"fixed", "a", SP_KV_FIXED}, {"user", "ü-user", SP_KV_TEXT}, {"total_cores", "-12", SP_KV_INT},
	};
	for (size_t i = 0; i < 3; i++) {
		const struct sp_kv *kv = &q->meta[n0 + i];
		assert_string_equal(kv->key, want[i].key);
		assert_string_equal(kv->value, want[i].value);
		assert_int_equal(kv->type, want[i].type);
	}
	sp_profile_free(q);
	/* An integer attribute whose text is no integer: the write fails. */
	free(p->meta[p->nmeta - 1].value);
	p->meta[p->nmeta - 1].value = strdup("12 cores");
	assert_int_not_equal(sp_h5_write(p, path, &err), SP_OK);
	sp_profile_free(p);
	remove(path);
}

int main(void)
{
	const struct CMUnitTest both[] = {
		cmocka_unit_test(test_write_fails_cleanly),
		cmocka_unit_test(test_writer_roundtrip),
		cmocka_unit_test(test_writer_abort),
		cmocka_unit_test(test_writer_failure_commit),
		cmocka_unit_test(test_lines_write_errors),
		cmocka_unit_test(test_compressed_roundtrip),
		cmocka_unit_test(test_compression_level_refused),
		cmocka_unit_test(test_many_regions),
	};
	const struct CMUnitTest v2[] = {
		cmocka_unit_test(test_layout_v2),
		cmocka_unit_test(test_aggregate_row_v2),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_values_v2),
		cmocka_unit_test(test_cumulative_v2),
		cmocka_unit_test(test_meta_types),
	};
	const struct CMUnitTest v1[] = {
		cmocka_unit_test(test_aggregate_region_written),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	int rc = cmocka_run_group_tests_name("format version 2", both, setup, teardown);
	rc |= cmocka_run_group_tests_name("format version 2 only", v2, setup, teardown);
	fmt_version = 1;
	rc |= cmocka_run_group_tests_name("format version 1", both, setup, teardown);
	rc |= cmocka_run_group_tests_name("format version 1 only", v1, setup, teardown);
	return rc;
}
