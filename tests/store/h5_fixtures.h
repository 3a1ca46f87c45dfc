/* h5_fixtures.h - what the HDF5 unit tests share (tests/store/test_h5*.c):
 * a temporary folder per test program, a profile to write, comparisons of
 * what was written with what was read, expect_read, and the plain layout
 * h5py users write. Each test program uses part of it. */
#ifndef H5_FIXTURES_H
#define H5_FIXTURES_H

#pragma GCC diagnostic ignored "-Wunused-function"

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
#include "sp_tree.h"


/* Fails the test with err's message unless the call returned SP_OK. */
#define assert_ok(call, err) do { \
	if ((call) != SP_OK) \
		fail_msg("%s", (err)->msg); \
} while (0)

static char dir[64];
static char pathbuf[4][512];

/* The format version the profiles of make_profile are written in: each
 * test program runs its tests for version 2, then those that apply to both
 * again for version 1 (which the reader still reads). */
static int fmt_version = 2;

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
	p->format_version = fmt_version;
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
		p->meta[i] = (struct sp_kv){strdup(kv[i][0]), strdup(kv[i][1]), SP_KV_FIXED};
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
	assert_int_equal(got->format_version, fmt_version);
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


/* Sets element row of the 1-D dataset at path in file (converted from an
 * int64): how the tests damage a version 2 table. */
static void set_element(const char *file, const char *dataset, hsize_t row, int64_t v)
{
	hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
	assert_true(f >= 0 && d >= 0);
	hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, (hsize_t[]){1}, NULL);
	assert_true(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &row, NULL, (hsize_t[]){1}, NULL) >= 0);
	assert_true(H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &v) >= 0);
	H5Sclose(ms);
	H5Sclose(fs);
	H5Dclose(d);
	assert_true(H5Fclose(f) >= 0);
}

/* Replaces the dataset at path in file by an int64 one of n zeros (n 0:
 * removes it). */
static void replace_dataset(const char *file, const char *dataset, hsize_t n)
{
	hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
	assert_true(f >= 0 && H5Ldelete(f, dataset, H5P_DEFAULT) >= 0);
	if (n) {
		int64_t *zero = calloc(n, sizeof *zero);
		hid_t sp = H5Screate_simple(1, &n, NULL);
		hid_t d = H5Dcreate2(f, dataset, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		assert_true(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, zero) >= 0);
		H5Dclose(d);
		H5Sclose(sp);
		free(zero);
	}
	assert_true(H5Fclose(f) >= 0);
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


#endif
