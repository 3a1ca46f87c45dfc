/* test_pack.c - unit tests of sp_rank_pack() / sp_rank_unpack(): one rank's
 * profile as one flat buffer, as sent to rank 0 under MPI. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_error.h"
#include "sp_pack.h"
#include "sp_profile.h"

/* ---------------------------------------------------------------- fixture */

/* Appends a region with n events (start, end pairs in se); lanes when given. */
static void add_region(struct sp_rank *rk, const char *name, const int64_t *se, size_t n,
		       const int32_t *lanes)
{
	rk->regions = realloc(rk->regions, (rk->nregions + 1) * sizeof *rk->regions);
	assert_non_null(rk->regions);
	struct sp_region_data *rd = &rk->regions[rk->nregions++];
	memset(rd, 0, sizeof *rd);
	rd->name = strdup(name);
	rd->starts = malloc((n ? n : 1) * sizeof(int64_t));
	rd->ends = malloc((n ? n : 1) * sizeof(int64_t));
	assert_true(rd->name && rd->starts && rd->ends);
	rd->owns_events = 1;
	for (size_t i = 0; i < n; i++) {
		rd->starts[i] = se[2 * i];
		rd->ends[i] = se[2 * i + 1];
	}
	if (lanes) {
		rd->lanes = malloc((n ? n : 1) * sizeof(int32_t));
		assert_non_null(rd->lanes);
		memcpy(rd->lanes, lanes, n * sizeof(int32_t));
	}
	sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
}

/* Appends a line table of n lines (copies); source NULL keeps it NULL. */
static void add_lines(struct sp_rank *rk, const char *function, const char *region,
		      const char *filename, int32_t first_line, size_t n, const int64_t *hits,
		      const int64_t *time_ns, const char *const *source)
{
	rk->lines = realloc(rk->lines, (rk->nlines + 1) * sizeof *rk->lines);
	assert_non_null(rk->lines);
	struct sp_line_table *t = &rk->lines[rk->nlines++];
	*t = (struct sp_line_table){
		.function = strdup(function), .region = strdup(region), .filename = strdup(filename),
		.first_line = first_line, .n = n,
		.hits = malloc((n ? n : 1) * sizeof(int64_t)),
		.time_ns = malloc((n ? n : 1) * sizeof(int64_t)),
		.source = source ? calloc(n ? n : 1, sizeof(char *)) : NULL,
	};
	for (size_t i = 0; i < n; i++) {
		t->hits[i] = hits[i];
		t->time_ns[i] = time_ns[i];
		if (source)
			t->source[i] = source[i] ? strdup(source[i]) : NULL;
	}
}

/* Appends a LIKWID table of nthreads x nevents counters (copies). */
static void add_likwid(struct sp_rank *rk, const char *region, size_t nthreads, size_t nevents,
		       const double *events, const int64_t *count, const double *time)
{
	rk->likwid = realloc(rk->likwid, (rk->nlikwid + 1) * sizeof *rk->likwid);
	assert_non_null(rk->likwid);
	struct sp_likwid_region *t = &rk->likwid[rk->nlikwid++];
	*t = (struct sp_likwid_region){
		.region = strdup(region), .nthreads = nthreads, .nevents = nevents,
		.events = malloc((nthreads && nevents ? nthreads * nevents : 1) * sizeof(double)),
		.count = malloc(nthreads * sizeof(int64_t)), .time = malloc(nthreads * sizeof(double)),
	};
	assert_true(t->region && t->events && t->count && t->time);
	if (nthreads && nevents)
		memcpy(t->events, events, nthreads * nevents * sizeof(double));
	memcpy(t->count, count, nthreads * sizeof(int64_t));
	memcpy(t->time, time, nthreads * sizeof(double));
}

/* A rank with a bit of everything: a hostname, regions with and without
 * calls, lanes, a column longer than the packer's block of 8 (block + tail),
 * a call tree, line tables with sources, without any, one empty. */
static void make_rank(struct sp_rank *rk)
{
	static const int64_t main_ev[] = {1000, 9000};
	static const int64_t ab[] = {1100, 1200, 1300, 1500, 1600, 1650};
	static const int32_t ab_lanes[] = {0, 1, 2};
	static const struct sp_tree_node tree[] = {
		{-1, 0, 1, 8000}, {0, 1, 3, 350}, {0, 3, 11, 1100}, {2, 1, 1, 5},
	};
	static const char *const src0[] = {"def löse(n):", "", "    return 'ü'\t# tab"};
	static const char *const src_gap[] = {"x = 1", NULL};
	static const int64_t hits0[] = {0, 7, 3}, ns0[] = {0, 700, 301};
	static const int64_t hits1[] = {1, 2}, ns1[] = {10, 20};
	int64_t loop[2 * 11];

	memset(rk, 0, sizeof *rk);
	rk->rank = 7;
	rk->run_start_ns = 900;
	rk->run_end_ns = 9900;
	rk->pid = 4242;
	rk->parent_pid = 4000;
	rk->hostname = strdup("node-ä1");
	rk->clock_offset_ns = -123;
	add_region(rk, "main", main_ev, 1, NULL);
	add_region(rk, "a/b", ab, 3, ab_lanes);
	add_region(rk, "never called", NULL, 0, NULL);
	for (size_t i = 0; i < 11; i++) {
		loop[2 * i] = 2000 + 100 * (int64_t)i;
		loop[2 * i + 1] = loop[2 * i] + 50 + (int64_t)i;
	}
	add_region(rk, "löser/ß", loop, 11, NULL);
	/* Values (run --memory) in one region, MPI bytes in another, a peak
	 * of live bytes in a third without values. */
	static const int64_t ab_alloc[] = {512, 0, INT64_MAX};
	rk->regions[1].value_kind = SP_VALUES_ALLOC_BYTES;
	rk->regions[1].values = malloc(sizeof ab_alloc);
	assert_non_null(rk->regions[1].values);
	memcpy(rk->regions[1].values, ab_alloc, sizeof ab_alloc);
	rk->regions[1].values_total = -1;   /* not recomputed: carried as it is */
	rk->regions[1].peak_bytes = 1 << 20;
	rk->regions[3].value_kind = SP_VALUES_BYTES;
	rk->regions[3].values = malloc(11 * sizeof(int64_t));
	assert_non_null(rk->regions[3].values);
	for (size_t i = 0; i < 11; i++)
		rk->regions[3].values[i] = 8 * (int64_t)i;
	rk->regions[3].values_total = 440;
	rk->regions[0].peak_bytes = 77;
	/* run --gpu: a wait in one region, a wait of 0 in another. */
	rk->regions[1].gpu_waited = 1;
	rk->regions[1].gpu_wait_ns = 123456789;
	rk->regions[2].gpu_waited = 1;
	/* Calls lost to memory: in one region, and in all the rank's. */
	rk->regions[1].dropped = 5;
	rk->dropped = 5 + 17;
	rk->ntree = sizeof tree / sizeof tree[0];
	rk->tree_overlaps = 3;   /* calls that overlapped without nesting */
	rk->tree = malloc(sizeof tree);
	assert_non_null(rk->tree);
	memcpy(rk->tree, tree, sizeof tree);
	add_lines(rk, "Solver.löse", "löser/ß", "/src/pkg/löser.py", 41, 3, hits0, ns0, src0);
	add_lines(rk, "never_run", "never_run", "", 0, 0, NULL, NULL, NULL);
	add_lines(rk, "no_source", "main", "m.py", -5, 2, hits1, ns1, NULL);
	add_lines(rk, "gap", "main", "m.py", 1, 2, hits1, ns1, src_gap);
	/* LIKWID counters: two threads of three events, one thread of none. */
	static const double lw_ev[] = {1.5, 2e12, 3, 4, 5, 6.25}, lw_time[] = {0.5, 0.25};
	static const int64_t lw_count[] = {1, 2};
	add_likwid(rk, "main", 2, 3, lw_ev, lw_count, lw_time);
	add_likwid(rk, "löser/ß", 1, 0, NULL, lw_count, lw_time);
	/* LIKWID's derived metrics of "main": three rows (LIKWID's threads)
	 * of two, one not a number. */
	static const double lw_metrics[] = {0.5, 2001, 0.25, NAN, 1e-9, 7};
	struct sp_likwid_region *m = &rk->likwid[0];
	m->nmrows = 3;
	m->nmetrics = 2;
	assert_non_null(m->metrics = malloc(sizeof lw_metrics));
	memcpy(m->metrics, lw_metrics, sizeof lw_metrics);
}

static int64_t shifted(int64_t t, int64_t shift)
{
	return t == SP_NO_TIME ? t : (int64_t)((uint64_t)t - (uint64_t)shift);
}

/* got must be want with every timestamp less shift; events only when
 * with_events. */
static void assert_same(const struct sp_rank *want, const struct sp_rank *got, int with_events,
			int64_t shift)
{
	assert_int_equal(got->rank, want->rank);
	assert_true(got->run_start_ns == shifted(want->run_start_ns, shift));
	assert_true(got->run_end_ns == shifted(want->run_end_ns, shift));
	assert_true(got->pid == want->pid);
	assert_true(got->parent_pid == want->parent_pid);
	assert_true(got->clock_offset_ns == want->clock_offset_ns);
	assert_true(got->dropped == want->dropped);
	assert_true(got->tree_overlaps == want->tree_overlaps);
	if (want->hostname)
		assert_string_equal(got->hostname, want->hostname);
	else
		assert_null(got->hostname);

	assert_int_equal(got->nregions, want->nregions);
	for (size_t r = 0; r < want->nregions; r++) {
		const struct sp_region_data *x = &want->regions[r], *y = &got->regions[r];
		struct sp_stats st = x->stats;
		st.first_start_ns = shifted(st.first_start_ns, shift);
		st.last_end_ns = shifted(st.last_end_ns, shift);
		assert_string_equal(y->name, x->name);
		assert_memory_equal(&y->stats, &st, sizeof st);
		assert_true(y->dropped == x->dropped);
		assert_int_equal(y->value_kind, x->value_kind);
		assert_true(y->values_total == x->values_total);
		assert_true(y->peak_bytes == x->peak_bytes);
		assert_int_equal(y->gpu_waited, x->gpu_waited);
		assert_true(y->gpu_wait_ns == x->gpu_wait_ns);
		if (!with_events) {
			assert_null(y->starts);
			assert_null(y->ends);
			assert_null(y->lanes);
			assert_null(y->values);
			continue;
		}
		if (x->value_kind) {
			assert_non_null(y->values);
			assert_memory_equal(y->values, x->values, (size_t)x->stats.num_calls * sizeof *x->values);
		} else {
			assert_null(y->values);
		}
		assert_non_null(y->starts);
		assert_non_null(y->ends);
		for (int64_t i = 0; i < x->stats.num_calls; i++) {
			assert_true(y->starts[i] == shifted(x->starts[i], shift));
			assert_true(y->ends[i] == shifted(x->ends[i], shift));
		}
		if (x->lanes) {
			assert_non_null(y->lanes);
			for (int64_t i = 0; i < x->stats.num_calls; i++)
				assert_int_equal(y->lanes[i], x->lanes[i]);
		} else {
			assert_null(y->lanes);
		}
	}

	assert_int_equal(got->ntree, want->ntree);
	if (want->tree) {
		assert_non_null(got->tree);
		if (want->ntree)
			assert_memory_equal(got->tree, want->tree, want->ntree * sizeof *want->tree);
	} else {
		assert_null(got->tree);
	}

	assert_int_equal(got->nlines, want->nlines);
	for (size_t k = 0; k < want->nlines; k++) {
		const struct sp_line_table *x = &want->lines[k], *y = &got->lines[k];
		assert_string_equal(y->function, x->function);
		assert_string_equal(y->region, x->region);
		assert_string_equal(y->filename, x->filename);
		assert_int_equal(y->first_line, x->first_line);
		assert_int_equal(y->n, x->n);
		assert_non_null(y->hits);
		assert_non_null(y->time_ns);
		assert_non_null(y->source);   /* always: "" where the source was unknown */
		for (size_t i = 0; i < x->n; i++) {
			assert_true(y->hits[i] == x->hits[i]);
			assert_true(y->time_ns[i] == x->time_ns[i]);
			const char *line = x->source && x->source[i] ? x->source[i] : "";
			assert_string_equal(y->source[i], line);
		}
	}

	assert_int_equal(got->nlikwid, want->nlikwid);
	for (size_t k = 0; k < want->nlikwid; k++) {
		const struct sp_likwid_region *x = &want->likwid[k], *y = &got->likwid[k];
		assert_string_equal(y->region, x->region);
		assert_int_equal(y->nthreads, x->nthreads);
		assert_int_equal(y->nevents, x->nevents);
		if (x->nthreads && x->nevents)
			assert_memory_equal(y->events, x->events, x->nthreads * x->nevents * sizeof(double));
		assert_memory_equal(y->count, x->count, x->nthreads * sizeof(int64_t));
		assert_memory_equal(y->time, x->time, x->nthreads * sizeof(double));
		assert_int_equal(y->nmetrics, x->nmetrics);
		assert_int_equal(y->nmrows, x->nmetrics ? x->nmrows : 0);
		if (x->nmetrics)   /* NaN included, bit for bit */
			assert_memory_equal(y->metrics, x->metrics, x->nmrows * x->nmetrics * sizeof(double));
		else
			assert_null(y->metrics);
	}
}

static int is_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* Packs rk into a fresh buffer of exactly its length (so that ASan sees any
 * read past its end). */
static void *pack(const struct sp_rank *rk, int with_events, int64_t shift, size_t *len)
{
	struct sp_error err = {0};
	void *buf = NULL;
	assert_int_equal(sp_rank_pack(rk, with_events, shift, &buf, len, &err), SP_OK);
	assert_non_null(buf);
	assert_true(*len >= 8 && *len % 8 == 0);
	return buf;
}

/* Whether p lies within [buf, buf + len]. */
static int inside(const void *p, const void *buf, size_t len)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)buf;
	return a >= b && a <= b + len;
}

/* ------------------------------------------------------------------ tests */

/* Everything round-trips; the event columns point into the buffer. */
static void test_roundtrip_events(void **state)
{
	(void)state;
	struct sp_rank rk, got;
	struct sp_error err = {0};
	size_t len;
	make_rank(&rk);
	void *buf = pack(&rk, 1, 0, &len);
	assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
	assert_same(&rk, &got, 1, 0);
	for (size_t r = 0; r < got.nregions; r++) {
		const struct sp_region_data *rd = &got.regions[r];
		assert_int_equal(rd->owns_events, 0);
		assert_true(inside(rd->starts, buf, len) && inside(rd->ends, buf, len));
		assert_int_equal((uintptr_t)rd->starts % 8, 0);
		assert_int_equal((uintptr_t)rd->ends % 8, 0);
		if (rd->lanes) {
			assert_true(inside(rd->lanes, buf, len));
			assert_int_equal((uintptr_t)rd->lanes % 8, 0);
		}
	}
	/* The buffer is a pure function of the rank. */
	size_t len2;
	void *buf2 = pack(&rk, 1, 0, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(buf2, buf, len);
	free(buf2);
	sp_rank_clear(&got);
	free(buf);
	sp_rank_clear(&rk);
}

/* No hostname and no tree (tree == NULL) come back as such; an empty tree
 * (tree != NULL, ntree 0) comes back non-NULL. */
static void test_hostname_and_tree_absent(void **state)
{
	(void)state;
	struct sp_rank rk, got;
	struct sp_error err = {0};
	size_t len;
	make_rank(&rk);
	free(rk.hostname);
	rk.hostname = NULL;
	free(rk.tree);
	rk.tree = NULL;
	rk.ntree = 0;
	void *buf = pack(&rk, 1, 0, &len);
	assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
	assert_null(got.hostname);
	assert_null(got.tree);
	assert_same(&rk, &got, 1, 0);
	sp_rank_clear(&got);
	free(buf);

	rk.hostname = strdup("");
	rk.tree = malloc(sizeof *rk.tree);   /* an empty tree that is not NULL */
	buf = pack(&rk, 0, 0, &len);
	assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
	assert_string_equal(got.hostname, "");
	assert_non_null(got.tree);
	assert_int_equal(got.ntree, 0);
	assert_same(&rk, &got, 0, 0);
	sp_rank_clear(&got);
	free(buf);
	sp_rank_clear(&rk);
}

/* shift comes off every timestamp (run, stats, events, in the packer's
 * blocks and its tail); SP_NO_TIME stays SP_NO_TIME wherever it is; a
 * negative shift and wrapping values too. */
static void test_shift(void **state)
{
	(void)state;
	const int64_t shifts[] = {500, -1000000007, INT64_MAX, 1};
	for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
		struct sp_rank rk, got;
		struct sp_error err = {0};
		size_t len;
		int64_t shift = shifts[s];
		make_rank(&rk);
		rk.run_end_ns = SP_NO_TIME;
		/* SP_NO_TIME inside a block of 8 and in the tail of the long column. */
		struct sp_region_data *rd = &rk.regions[3];
		rd->starts[2] = SP_NO_TIME;
		rd->ends[9] = SP_NO_TIME;
		rd->starts[10] = INT64_MIN + 1;   /* wraps, but is not SP_NO_TIME */
		rd->stats.first_start_ns = SP_NO_TIME;
		void *buf = pack(&rk, 1, shift, &len);
		assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
		assert_same(&rk, &got, 1, shift);
		assert_true(got.run_start_ns == shifted(900, shift));
		assert_true(got.run_end_ns == SP_NO_TIME);
		const struct sp_region_data *gd = &got.regions[3];
		assert_true(gd->starts[2] == SP_NO_TIME);
		assert_true(gd->ends[9] == SP_NO_TIME);
		assert_true(gd->stats.first_start_ns == SP_NO_TIME);
		assert_true(gd->starts[0] == shifted(2000, shift));
		assert_true(gd->ends[10] == shifted(2000 + 1000 + 60, shift));
		assert_true(got.regions[2].stats.first_start_ns == SP_NO_TIME);   /* no calls */
		assert_true(got.regions[2].stats.last_end_ns == SP_NO_TIME);
		assert_true(got.regions[0].stats.last_end_ns == shifted(9000, shift));
		/* The caller's rank is not touched. */
		assert_true(rk.regions[0].starts[0] == 1000 && rk.run_start_ns == 900);
		sp_rank_clear(&got);
		free(buf);
		sp_rank_clear(&rk);
	}
}

/* A long column: every value shifted, across many blocks. */
static void test_shift_long_column(void **state)
{
	(void)state;
	struct sp_rank rk = {0}, got;
	struct sp_error err = {0};
	size_t n = 1003, len;
	int64_t *se = malloc(2 * n * sizeof *se);
	int32_t *lanes = malloc(n * sizeof *lanes);
	assert_true(se && lanes);
	for (size_t i = 0; i < n; i++) {
		se[2 * i] = 1000000 + 37 * (int64_t)i;
		se[2 * i + 1] = se[2 * i] + (int64_t)(i % 13);
		lanes[i] = (int32_t)(i % 5);
	}
	rk.run_start_ns = rk.run_end_ns = SP_NO_TIME;
	add_region(&rk, "hot", se, n, lanes);
	void *buf = pack(&rk, 1, 999999, &len);
	assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
	assert_same(&rk, &got, 1, 999999);
	assert_true(got.regions[0].starts[n - 1] == 1 + 37 * (int64_t)(n - 1));
	sp_rank_clear(&got);
	free(buf);
	free(se);
	free(lanes);
	sp_rank_clear(&rk);
}

/* Without events: no columns (even where the rank has none loaded), stats
 * still there and shifted. */
static void test_without_events(void **state)
{
	(void)state;
	struct sp_rank rk, got;
	struct sp_error err = {0};
	size_t len, len_ev;
	make_rank(&rk);
	void *with = pack(&rk, 1, 0, &len_ev);
	free(with);
	/* A summary-only rank: calls but no columns packs fine without events. */
	struct sp_region_data *rd = &rk.regions[1];
	free(rd->starts);
	free(rd->ends);
	free(rd->lanes);
	free(rd->values);
	rd->starts = rd->ends = NULL;
	rd->lanes = NULL;
	rd->values = NULL;
	void *buf = pack(&rk, 0, 100, &len);
	assert_true(len < len_ev);
	assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
	assert_same(&rk, &got, 0, 100);
	assert_true(got.regions[1].stats.num_calls == 3);
	assert_true(got.regions[1].stats.first_start_ns == 1100 - 100);
	sp_rank_clear(&got);
	free(buf);
	sp_rank_clear(&rk);
}

/* A rank that recorded nothing. */
static void test_empty_rank(void **state)
{
	(void)state;
	struct sp_rank rk = {0}, got;
	struct sp_error err = {0};
	size_t len;
	rk.rank = 3;
	rk.run_start_ns = rk.run_end_ns = SP_NO_TIME;
	for (int ev = 0; ev < 2; ev++) {
		void *buf = pack(&rk, ev, 77, &len);
		memset(&got, 0xA5, sizeof got);   /* unpack zeroes it first */
		assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
		assert_int_equal(got.rank, 3);
		assert_true(got.run_start_ns == SP_NO_TIME && got.run_end_ns == SP_NO_TIME);
		assert_true(got.pid == 0 && got.parent_pid == 0 && got.clock_offset_ns == 0);
		assert_null(got.hostname);
		assert_int_equal(got.nregions, 0);
		assert_null(got.regions);
		assert_int_equal(got.ntree, 0);
		assert_null(got.tree);
		assert_int_equal(got.nlines, 0);
		assert_null(got.lines);
		sp_rank_clear(&got);
		free(buf);
	}
}

/* A buffer that is not 8-byte aligned: the columns are copied (and freed by
 * sp_rank_clear: LeakSanitizer checks). */
static void test_misaligned(void **state)
{
	(void)state;
	struct sp_rank rk, got;
	struct sp_error err = {0};
	size_t len;
	make_rank(&rk);
	unsigned char *buf = pack(&rk, 1, 42, &len);
	unsigned char *big = realloc(buf, len + 1);
	assert_non_null(big);
	memmove(big + 1, big, len);
	assert_int_equal(sp_rank_unpack(big + 1, len, &got, &err), SP_OK);
	assert_same(&rk, &got, 1, 42);
	for (size_t r = 0; r < got.nregions; r++) {
		const struct sp_region_data *rd = &got.regions[r];
		assert_int_equal(rd->owns_events, 1);
		assert_false(inside(rd->starts, big, len + 1));
		assert_false(inside(rd->ends, big, len + 1));
		assert_int_equal((uintptr_t)rd->starts % 8, 0);
	}
	memset(big, 0, len + 1);   /* the copies do not depend on the buffer */
	assert_true(got.regions[3].starts[10] == 3000 - 42);
	assert_int_equal(got.regions[1].lanes[2], 2);
	sp_rank_clear(&got);
	free(big);
	sp_rank_clear(&rk);
}

/* What sp_rank_pack refuses. */
static void test_pack_errors(void **state)
{
	(void)state;
	struct sp_rank rk;
	struct sp_error err = {0};
	void *buf = (void *)&err;
	size_t len = 99;

	make_rank(&rk);
	struct sp_region_data *rd = &rk.regions[1];
	int64_t *starts = rd->starts;
	rd->starts = NULL;   /* calls but no columns, with events */
	assert_int_equal(sp_rank_pack(&rk, 1, 0, &buf, &len, &err), SP_EINVAL);
	assert_null(buf);
	assert_int_equal(len, 0);
	assert_non_null(strstr(err.msg, "a/b"));
	rd->starts = starts;

	rk.tree[2].parent = 2;   /* not before itself */
	assert_int_equal(sp_rank_pack(&rk, 0, 0, &buf, &len, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "tree node 2"));
	rk.tree[2].parent = 0;
	rk.tree[3].region = 4;   /* no such region */
	assert_int_equal(sp_rank_pack(&rk, 0, 0, &buf, &len, &err), SP_EINVAL);
	rk.tree[3].region = 1;

	rd->stats.num_calls = -1;
	assert_int_equal(sp_rank_pack(&rk, 0, 0, &buf, &len, &err), SP_EINVAL);
	rd->stats.num_calls = 3;

	char *fn = rk.lines[0].function;
	rk.lines[0].function = NULL;
	assert_int_equal(sp_rank_pack(&rk, 0, 0, &buf, &len, &err), SP_EINVAL);
	rk.lines[0].function = fn;

	assert_int_equal(sp_rank_pack(&rk, 1, 0, &buf, &len, &err), SP_OK);   /* all restored */
	free(buf);
	sp_rank_clear(&rk);
}

/* Unpacks a copy of buf with byte i replaced (or len changed); expects
 * SP_ECORRUPT with a "damaged rank buffer" message and an empty rank. */
static void expect_corrupt(const unsigned char *buf, size_t len, const char *why)
{
	struct sp_rank got;
	struct sp_error err = {0};
	unsigned char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, buf, len);
	if (sp_rank_unpack(copy, len, &got, &err) != SP_ECORRUPT) {
		print_error("expected SP_ECORRUPT: %s\n", why);
		fail();
	}
	assert_non_null(strstr(err.msg, "damaged rank buffer"));
	assert_true(is_zero(&got, sizeof got));
	free(copy);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Locates needle in hay; its offset. */
static size_t find(const unsigned char *hay, size_t n, const void *needle, size_t m)
{
	void *at = memmem(hay, n, needle, m);
	assert_non_null(at);
	return (size_t)((const unsigned char *)at - hay);
}

/* Specific damage gives specific refusals. */
static void test_unpack_errors(void **state)
{
	(void)state;
	struct sp_rank rk, got;
	struct sp_error err = {0};
	size_t len;
	make_rank(&rk);
	unsigned char *buf = pack(&rk, 1, 0, &len), *b = malloc(len + 8);
	assert_non_null(b);

	memcpy(b, buf, len);
	b[0] ^= 1;
	expect_corrupt(b, len, "magic");
	memcpy(b, buf, len);
	b[4] ^= 1;
	expect_corrupt(b, len, "version");
	memcpy(b, buf, len);
	put64(b + 8, len + 8);
	expect_corrupt(b, len, "length field too long");
	memcpy(b, buf, len);
	memset(b + len, 0, 8);
	put64(b + 8, len + 8);
	expect_corrupt(b, len + 8, "trailing bytes");
	memcpy(b, buf, len);
	put64(b + 16, 8);
	expect_corrupt(b, len, "unknown flag");
	expect_corrupt(b, 0, "empty");

	/* A tree node whose parent is itself, or whose region is out of range. */
	size_t t = find(buf, len, &rk.tree[2], sizeof rk.tree[2]);
	memcpy(b, buf, len);
	int32_t bad = 2;
	memcpy(b + t, &bad, 4);
	expect_corrupt(b, len, "tree parent");
	memcpy(b, buf, len);
	bad = 4;
	memcpy(b + t + 4, &bad, 4);
	expect_corrupt(b, len, "tree region");

	/* A string without its NUL; a string length past the end. */
	size_t s = find(buf, len, "node-ä1", 8);
	memcpy(b, buf, len);
	b[s + strlen("node-ä1")] = 'x';
	expect_corrupt(b, len, "unterminated hostname");
	memcpy(b, buf, len);
	put64(b + s - 8, len);
	expect_corrupt(b, len, "hostname length");
	memcpy(b, buf, len);
	b[s + 2] = 0;   /* an embedded NUL */
	expect_corrupt(b, len, "embedded NUL");

	/* A negative count of calls lost (the rank's, after its clock offset). */
	memcpy(b, buf, len);
	put64(b + 72, UINT64_MAX);
	expect_corrupt(b, len, "negative dropped");

	/* A negative count of calls that overlapped (after nlines). */
	memcpy(b, buf, len);
	put64(b + 104, UINT64_MAX);
	expect_corrupt(b, len, "negative overlap");

	/* Counts larger than the buffer can hold. */
	for (size_t f = 80; f <= 96; f += 8) {   /* nregions, ntree, nlines */
		memcpy(b, buf, len);
		put64(b + f, (uint64_t)1 << 60);
		expect_corrupt(b, len, "huge count");
		memcpy(b, buf, len);
		put64(b + f, UINT64_MAX);
		expect_corrupt(b, len, "huge count");
	}

	/* A region's num_calls beyond its columns (the stats follow its name). */
	size_t r = find(buf, len, "löser/ß", strlen("löser/ß") + 1);
	size_t calls = (r + strlen("löser/ß") + 1 + 7) / 8 * 8;
	int64_t nc;
	memcpy(&nc, buf + calls, 8);
	assert_true(nc == 11);
	memcpy(b, buf, len);
	put64(b + calls, (uint64_t)1 << 62);
	expect_corrupt(b, len, "num_calls");
	memcpy(b, buf, len);
	put64(b + calls, UINT64_MAX);
	expect_corrupt(b, len, "negative num_calls");

	/* LIKWID values the file's reader refuses (h5read_likwid.c): an event
	 * not finite, a negative count, a negative or infinite time. The
	 * table "main": its events, then its counts, then its times. */
	const struct sp_likwid_region *lt = &rk.likwid[0];
	size_t ev = find(buf, len, lt->events, 6 * sizeof(double));
	assert_memory_equal(buf + ev + 48, lt->count, 2 * sizeof(int64_t));
	assert_memory_equal(buf + ev + 64, lt->time, 2 * sizeof(double));
	const struct {
		size_t at;
		double d;
		int64_t i;
		int is_int;
	} lwbad[] = {{ev + 40, NAN, 0, 0}, {ev, -INFINITY, 0, 0}, {ev + 56, 0, -1, 1},
		     {ev + 64, -0.5, 0, 0}, {ev + 72, INFINITY, 0, 0}, {ev + 72, NAN, 0, 0}};
	for (size_t k = 0; k < sizeof lwbad / sizeof lwbad[0]; k++) {
		memcpy(b, buf, len);
		if (lwbad[k].is_int)
			memcpy(b + lwbad[k].at, &lwbad[k].i, 8);
		else
			memcpy(b + lwbad[k].at, &lwbad[k].d, 8);
		expect_corrupt(b, len, "LIKWID value");
	}
	/* An infinite metric (the writer's side stores NaN for no value). */
	size_t mt = find(buf, len, lt->metrics, 6 * sizeof(double));
	memcpy(b, buf, len);
	double inf = INFINITY;
	memcpy(b + mt + 8, &inf, 8);
	expect_corrupt(b, len, "LIKWID metric");
	/* Negative events are readable values, as for the file's reader. */
	memcpy(b, buf, len);
	double neg = -3;
	memcpy(b + ev + 16, &neg, 8);
	assert_int_equal(sp_rank_unpack(b, len, &got, &err), SP_OK);
	sp_rank_clear(&got);

	/* Sanity: the original still unpacks. */
	assert_int_equal(sp_rank_unpack(buf, len, &got, &err), SP_OK);
	sp_rank_clear(&got);
	assert_int_equal(sp_rank_unpack(NULL, 0, &got, &err), SP_EINVAL);
	free(b);
	free(buf);
	sp_rank_clear(&rk);
}

/* Unpacks a damaged copy (exactly len bytes, at offset `mis` from an 8-byte
 * boundary): SP_OK with a rank whose every part is readable, or SP_ECORRUPT /
 * SP_ENOMEM with an empty rank. ASan catches any read outside the copy and
 * LeakSanitizer anything not freed. Returns the code. */
static enum sp_err try_damaged(const unsigned char *bytes, size_t len, size_t mis)
{
	struct sp_rank got;
	struct sp_error err = {0};
	unsigned char *mem = malloc(len + mis ? len + mis : 1);
	assert_non_null(mem);
	if (len)
		memcpy(mem + mis, bytes, len);
	enum sp_err rc = sp_rank_unpack(mem + mis, len, &got, &err);
	if (rc == SP_OK) {
		/* Touch everything, as a writer would. */
		volatile uint64_t sink = 0;   /* unsigned: wraps */
		if (got.hostname)
			sink += strlen(got.hostname);
		for (size_t r = 0; r < got.nregions; r++) {
			const struct sp_region_data *rd = &got.regions[r];
			sink += strlen(rd->name);
			assert_true(rd->stats.num_calls >= 0);
			for (int64_t i = 0; rd->starts && i < rd->stats.num_calls; i++)
				sink += (uint64_t)rd->starts[i] + (uint64_t)rd->ends[i] +
					(uint64_t)(rd->lanes ? rd->lanes[i] : 0);
		}
		for (size_t i = 0; i < got.ntree; i++) {
			assert_true(got.tree[i].parent >= -1 && got.tree[i].parent < (int32_t)i);
			assert_true(got.tree[i].region >= 0 && (size_t)got.tree[i].region < got.nregions);
		}
		for (size_t k = 0; k < got.nlines; k++) {
			const struct sp_line_table *t = &got.lines[k];
			sink += strlen(t->function) + strlen(t->region) + strlen(t->filename);
			for (size_t i = 0; i < t->n; i++)
				sink += (uint64_t)t->hits[i] + (uint64_t)t->time_ns[i] + strlen(t->source[i]);
		}
		(void)sink;
		sp_rank_clear(&got);
	} else {
		assert_true(rc == SP_ECORRUPT || rc == SP_ENOMEM);
		assert_true(is_zero(&got, sizeof got));
		assert_true(err.code == rc && err.msg[0] != '\0');
	}
	free(mem);
	return rc;
}

/* Truncation at every length, every byte flipped, and PRNG damage: never a
 * crash, an out-of-bounds read or a leak. */
static void test_damage(void **state)
{
	(void)state;
	struct sp_rank rk;
	size_t len;
	make_rank(&rk);
	for (int ev = 0; ev < 2; ev++) {
		unsigned char *buf = pack(&rk, ev, 12345, &len), *b = malloc(len);
		assert_non_null(b);
		size_t ok = 0;

		/* Every prefix, as received, and with its length field patched to
		 * match so that parsing goes past the header. */
		for (size_t n = 0; n < len; n++) {
			assert_int_equal(try_damaged(buf, n, 0), SP_ECORRUPT);
			memcpy(b, buf, n);
			if (n >= 16)
				put64(b + 8, n);
			assert_int_equal(try_damaged(b, n, n % 3), SP_ECORRUPT);
		}
		/* Every byte flipped, aligned and not. */
		for (size_t i = 0; i < len; i++) {
			memcpy(b, buf, len);
			b[i] ^= 0xFF;
			ok += try_damaged(b, len, 0) == SP_OK;
			ok += try_damaged(b, len, 1 + i % 7) == SP_OK;
		}
		/* Deterministic PRNG: 1 to 4 bytes set to random values, often
		 * small numbers in a length's low byte. */
		uint64_t x = 0x9E3779B97F4A7C15u;
		for (int k = 0; k < 4000; k++) {
			memcpy(b, buf, len);
			for (int m = 0; m <= k % 4; m++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				size_t at = (size_t)(x % len);
				b[at] = (unsigned char)(k & 1 ? x >> 32 : (x >> 32) % 8);
			}
			ok += try_damaged(b, len, (size_t)k % 8) == SP_OK;
		}
		/* Damage to event values, lanes, padding, stats and line counts
		 * is not detectable: some damaged buffers must still unpack. */
		assert_true(ok > 0);
		assert_int_equal(try_damaged(buf, len, 0), SP_OK);
		free(b);
		free(buf);
	}
	sp_rank_clear(&rk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_events),
		cmocka_unit_test(test_hostname_and_tree_absent),
		cmocka_unit_test(test_shift),
		cmocka_unit_test(test_shift_long_column),
		cmocka_unit_test(test_without_events),
		cmocka_unit_test(test_empty_rank),
		cmocka_unit_test(test_misaligned),
		cmocka_unit_test(test_pack_errors),
		cmocka_unit_test(test_unpack_errors),
		cmocka_unit_test(test_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
