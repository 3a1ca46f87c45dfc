/* h5_v3.h - format version 3 files (a streamed profile, man 5
 * scope-profiler-format) written with the HDF5 C API as the contract lays
 * them out, finished or partial, consistent or not, for the reader's tests
 * (tests/store/test_h5read_v3.c) and the fuzz seeds (tests/fuzz/
 * fuzz_seeds.c). The includer defines V3_CHECK(cond), which must not
 * return when cond is false. Nothing here checks what it writes: a test
 * describes a damaged file as easily as a good one. */
#ifndef H5_V3_H
#define H5_V3_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "sp_profile.h"

#define V3_MAX 64

/* One rank0 of a version 3 file. Counts of -1 leave a dataset out. */
struct v3_file {
	int finished;                  /* regions table + metadata; else group stream */
	const char *names[8];          /* region id k: names[k] (finished: the table's rows) */
	size_t nnames;
	int names_cut;                 /* partial: the names' last bytes left off */
	int32_t region[V3_MAX];        /* block_region */
	int64_t calls[V3_MAX];         /* block_calls */
	long nregion, ncalls;          /* their lengths */
	int64_t starts[V3_MAX], ends[V3_MAX];
	long nstarts, nends;
	int32_t lanes[V3_MAX];
	long nlanes;
	int64_t alloc[V3_MAX];         /* alloc_bytes */
	long nalloc;
	int64_t flushed_ns;            /* partial: stream/flushed_ns */
	long nflushed;                 /* its length */
	/* finished: num_calls of row k when not -1 (else the blocks' calls) */
	int64_t num_calls[8];
	int set_num_calls;
};

/* Creation properties without modification times (H5Pset_obj_track_times):
 * the same file, byte for byte, every time (the fuzz test's mutants). */
static hid_t v3_plist(hid_t cls)
{
	hid_t pl = H5Pcreate(cls);
	V3_CHECK(pl >= 0 && H5Pset_obj_track_times(pl, 0) >= 0);
	return pl;
}

static hid_t v3_group(hid_t loc, const char *name)
{
	hid_t gcpl = v3_plist(H5P_GROUP_CREATE);
	hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
	V3_CHECK(g >= 0);
	H5Pclose(gcpl);
	return g;
}

/* A 1-D dataset of n elements (n == -1: none), chunked and extendible as
 * the streaming writer makes them. */
static void v3_column(hid_t g, const char *name, hid_t ftype, hid_t mtype, long n, const void *data)
{
	if (n < 0)
		return;
	hsize_t dims = (hsize_t)n, maxd = H5S_UNLIMITED, chunk = 16;
	hid_t sp = H5Screate_simple(1, &dims, &maxd), dcpl = v3_plist(H5P_DATASET_CREATE);
	V3_CHECK(sp >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0);
	hid_t d = H5Dcreate2(g, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	V3_CHECK(d >= 0);
	if (n > 0)
		V3_CHECK(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
}

/* A contiguous 1-D dataset of n elements (the finished file's table). */
static void v3_table_column(hid_t g, const char *name, hid_t ftype, hid_t mtype, size_t n, const void *data)
{
	hsize_t dims = (hsize_t)n;
	hid_t sp = H5Screate_simple(1, &dims, NULL), dcpl = v3_plist(H5P_DATASET_CREATE);
	hid_t d = H5Dcreate2(g, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	V3_CHECK(d >= 0);
	if (n)
		V3_CHECK(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
}

static void v3_attr_i64(hid_t loc, const char *name, int64_t v)
{
	hid_t sp = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(loc, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
	V3_CHECK(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
	H5Sclose(sp);
}

/* The finished file's regions table: row k = region id k, its stats from
 * its blocks' calls. */
static void v3_table(hid_t rank, const struct v3_file *f)
{
	size_t n = f->nnames, width = 1;
	int64_t i64[7][8] = {{0}};
	double f64[2][8] = {{0}};
	int8_t agg[8] = {0};
	char fixed[8 * 32] = {0};
	for (size_t k = 0; k < n; k++) {
		int64_t s[V3_MAX], e[V3_MAX];
		size_t m = 0, at = 0;
		for (long b = 0; b < f->nregion && b < f->ncalls; b++) {
			for (int64_t c = 0; c < f->calls[b]; c++, at++)
				if ((size_t)f->region[b] == k && at < V3_MAX) {
					s[m] = f->starts[at];
					e[m++] = f->ends[at];
				}
		}
		struct sp_stats st;
		sp_stats_compute(&st, s, e, m);
		int64_t row[7] = {f->set_num_calls ? f->num_calls[k] : st.num_calls, st.total_ns, st.min_ns,
				  st.max_ns, st.first_start_ns, st.last_end_ns, 0};
		for (int c = 0; c < 7; c++)
			i64[c][k] = row[c];
		f64[0][k] = st.mean_ns;
		f64[1][k] = st.std_ns;
		strncpy(fixed + 32 * k, f->names[k], 31);
		if (strlen(f->names[k]) > width)
			width = strlen(f->names[k]);
	}
	static const char *const inames[7] = {"num_calls", "total_ns", "min_ns", "max_ns", "first_start_ns",
					      "last_end_ns", "dropped_events"};
	hid_t t = v3_group(rank, "regions");
	hid_t st = H5Tcopy(H5T_C_S1);
	V3_CHECK(H5Tset_size(st, 32) >= 0 && H5Tset_cset(st, H5T_CSET_UTF8) >= 0);
	v3_table_column(t, "name", st, st, n, fixed);
	H5Tclose(st);
	for (int c = 0; c < 7; c++)
		v3_table_column(t, inames[c], H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64[c]);
	v3_table_column(t, "self_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64[6]);
	v3_table_column(t, "mean_ns", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, f64[0]);
	v3_table_column(t, "std_ns", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, f64[1]);
	v3_table_column(t, "aggregate", H5T_STD_I8LE, H5T_NATIVE_INT8, n, agg);
	if (f->nalloc > 0) {
		int8_t kind[8];
		int64_t total[8] = {0};
		for (size_t k = 0; k < n; k++)
			kind[k] = 1;
		for (long b = 0, at = 0; b < f->nregion && b < f->ncalls; b++)
			for (int64_t c = 0; c < f->calls[b]; c++, at++)
				if (at < f->nalloc && f->region[b] >= 0 && (size_t)f->region[b] < n)
					total[f->region[b]] += f->alloc[at];
		v3_table_column(t, "value_kind", H5T_STD_I8LE, H5T_NATIVE_INT8, n, kind);
		v3_table_column(t, "values_total", H5T_STD_I64LE, H5T_NATIVE_INT64, n, total);
	}
	H5Gclose(t);
}

/* Creates the file's groups and datasets in the open file h. */
static void v3_fill(hid_t h, const struct v3_file *f)
{
	hid_t sp = H5Screate(H5S_SCALAR), st = H5Tcopy(H5T_C_S1);
	V3_CHECK(H5Tset_size(st, 15) >= 0);
	hid_t a = H5Acreate2(h, "format", st, sp, H5P_DEFAULT, H5P_DEFAULT);
	V3_CHECK(a >= 0 && H5Awrite(a, st, "scope-profiler") >= 0);
	H5Aclose(a);
	H5Tclose(st);
	a = H5Acreate2(h, "format_version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
	V3_CHECK(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &(int32_t){3}) >= 0);
	H5Aclose(a);
	H5Sclose(sp);
	hid_t r = v3_group(h, "rank0");
	v3_attr_i64(r, "run_start_time", 1000);
	v3_attr_i64(r, "pid", 4242);
	v3_attr_i64(r, "clock_offset_ns", 0);
	hid_t ev = v3_group(r, "events");
	v3_column(ev, "start_times", H5T_STD_I64LE, H5T_NATIVE_INT64, f->nstarts, f->starts);
	v3_column(ev, "end_times", H5T_STD_I64LE, H5T_NATIVE_INT64, f->nends, f->ends);
	v3_column(ev, "lanes", H5T_STD_I32LE, H5T_NATIVE_INT32, f->nlanes, f->lanes);
	v3_column(ev, "alloc_bytes", H5T_STD_I64LE, H5T_NATIVE_INT64, f->nalloc, f->alloc);
	v3_column(ev, "block_region", H5T_STD_I32LE, H5T_NATIVE_INT32, f->nregion, f->region);
	v3_column(ev, "block_calls", H5T_STD_I64LE, H5T_NATIVE_INT64, f->ncalls, f->calls);
	H5Gclose(ev);
	if (f->finished) {
		v3_attr_i64(r, "run_end_time", 9000);
		v3_table(r, f);
		hid_t m = v3_group(h, "metadata");
		v3_attr_i64(m, "total_cores", 1);
		H5Gclose(m);
	} else {
		unsigned char bytes[8 * 32];
		long nb = 0;
		for (size_t k = 0; k < f->nnames; k++) {
			size_t len = strlen(f->names[k]) + 1;
			memcpy(bytes + nb, f->names[k], len);
			nb += (long)len;
		}
		if (f->names_cut)
			nb -= f->names_cut;
		hid_t sg = v3_group(r, "stream");
		v3_column(sg, "names", H5T_STD_U8LE, H5T_NATIVE_UCHAR, nb, bytes);
		int64_t fl[2] = {f->flushed_ns, f->flushed_ns};
		v3_column(sg, "flushed_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, f->nflushed, fl);
		H5Gclose(sg);
	}
	H5Gclose(r);
}

/* Creates path with HDF5's 1.10 file format (what SWMR needs) and fills
 * it; with swmr, starts SWMR writing and flushes, and returns the open
 * file (a child process then leaves it so, as a killed run does);
 * otherwise closes it and returns -1. */
static hid_t v3_write(const char *path, const struct v3_file *f, int swmr)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	V3_CHECK(fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0);
	hid_t h = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	V3_CHECK(h >= 0);
	H5Pclose(fapl);
	v3_fill(h, f);
	if (!swmr) {
		V3_CHECK(H5Fclose(h) >= 0);
		return -1;
	}
	V3_CHECK(H5Fstart_swmr_write(h) >= 0 && H5Fflush(h, H5F_SCOPE_GLOBAL) >= 0);
	return h;
}

/* A good file: regions "main" (id 0: one call, open in a partial file),
 * "solve" (id 1: five calls in three blocks) and "io/write" (id 2: two
 * calls in two), eight calls in six blocks, with lanes. */
static struct v3_file v3_good(int finished)
{
	struct v3_file f = {.finished = finished, .names = {"main", "solve", "io/write"}, .nnames = 3,
			    .region = {1, 2, 1, 0, 1, 2}, .calls = {2, 1, 2, 1, 1, 1}, .nregion = 6, .ncalls = 6,
			    .starts = {1100, 1300, 1500, 1700, 1900, 1050, 2100, 2300},
			    .ends = {1200, 1400, 1600, 1800, 2000, 2800, 2200, 2400},
			    .nstarts = 8, .nends = 8, .lanes = {0, 1, 0, 0, 1, 0, 1, 0}, .nlanes = 8,
			    .nalloc = -1, .flushed_ns = 2600, .nflushed = 1};
	if (!finished)
		f.ends[5] = INT64_MIN;         /* main: still open at the last flush */
	return f;
}

#endif
