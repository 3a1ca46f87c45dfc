/* mpicalls.c - every MPI call the program makes, timed through MPI's
 * profiling interface (see sp_mpicalls.h for the rules).
 *
 * Each intercepted function NAME is one line of SP_MPICALLS (in
 * sp_mpicalls_list.h, with the bytes each call moves), which makes here:
 * the pointer to the library's PMPI_NAME, first pointing at a resolver
 * that looks it up (in the libmpi in use, as MPI_Finalize does in mpi.c)
 * and replaces itself, so every later call goes straight through; and NAME
 * itself, whose only check is one load and one predictable branch on
 * `recording` when the mode is off. This file holds that machinery, the
 * byte counts' helpers, the recording of a call and the hand-over of the
 * calls as regions. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_mpicalls.h"
#include "sp_recorder.h"

#ifdef SP_HAVE_MPI
#include <sched.h>
#include <sys/mman.h>
#include <mpi.h>

#include "sp_mpi.h"
#include "sp_mpicalls_list.h"

enum {
#define SP_ID(NAME, PARAMS, ARGS, BYTES) ID_##NAME,
	SP_MPICALLS(SP_ID)
#undef SP_ID
	NCALLS
};

static const char *const call_names[NCALLS] = {
#define SP_NAME(NAME, PARAMS, ARGS, BYTES) #NAME,
	SP_MPICALLS(SP_NAME)
#undef SP_NAME
};

/* Each function's bytes expression as text: "NONE" for those without a
 * `bytes` column (read once, when recording starts). */
static const char *const bytes_of[NCALLS] = {
#define SP_BYTES(NAME, PARAMS, ARGS, BYTES) #BYTES,
	SP_MPICALLS(SP_BYTES)
#undef SP_BYTES
};

/* One intercepted function's calls; the lock guards the buffer while
 * recording is on. Only the events are written per call (no running
 * statistics: the end of the session computes them from the events). */
struct call {
	atomic_flag lock;
	struct sp_buf buf;
};

static struct call calls[NCALLS];
static int recording;                  /* read by every wrapper: the mode's one branch */
static void (*on_full)(size_t fn, struct sp_buf *b);   /* streaming: a full buffer's hand-over */
static sp_mpicalls_lane_fn lane_of;    /* NULL: no lanes */

/* The library's functions, looked up by name in the libmpi in use. A name
 * that cannot be found (no libmpi is loaded, yet MPI is called) is said
 * once, through *said (one flag per name), and the call fails with
 * MPI_ERR_INTERN; it is looked up again at the next call (a library that
 * mpi4py loads later is found then). */
static void *library_symbol(const char *name, int *said)
{
	void *f = sp_mpi_symbol(name);
	if (!f && !__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "scope-profiler: %s not found in the MPI library\n", name);
	return f;
}

/* The helpers the byte counts use (never recorded). */
static int (*p_type_size)(MPI_Datatype, int *);
static int (*p_comm_size)(MPI_Comm, int *);
static int (*p_comm_rank)(MPI_Comm, int *);
static int (*p_test_inter)(MPI_Comm, int *);
static int (*p_remote_size)(MPI_Comm, int *);

static int64_t tsize(int64_t count, MPI_Datatype type)
{
	static int said;
	int size = 0;
	if (count <= 0)
		return 0;
	if (!p_type_size && !(*(void **)&p_type_size = library_symbol("PMPI_Type_size", &said)))
		return 0;
	if (p_type_size(type, &size) != MPI_SUCCESS || size < 0)
		return 0;
	return (int64_t)count * size;
}

static int64_t comm_size(MPI_Comm comm)
{
	static int said;
	int n = 0;
	if (!p_comm_size && !(*(void **)&p_comm_size = library_symbol("PMPI_Comm_size", &said)))
		return 0;
	return p_comm_size(comm, &n) == MPI_SUCCESS && n > 0 ? n : 0;
}

/* The ranks a call on comm exchanges with, the length of its per-peer
 * arrays (Alltoall's blocks, Alltoallv's counts): the communicator's size,
 * or an intercommunicator's remote group. (Reduce_scatter's recvcounts
 * and Reduce_scatter_block's blocks are per rank of the local group, which
 * scatters the result, on either kind.) */
static int64_t peers(MPI_Comm comm)
{
	static int said, said_remote;
	int inter = 0, n = 0;
	if (!p_test_inter &&
	    !(*(void **)&p_test_inter = library_symbol("PMPI_Comm_test_inter", &said)))
		return 0;
	if (p_test_inter(comm, &inter) != MPI_SUCCESS)
		return 0;
	if (!inter)
		return comm_size(comm);
	if (!p_remote_size &&
	    !(*(void **)&p_remote_size = library_symbol("PMPI_Comm_remote_size", &said_remote)))
		return 0;
	return p_remote_size(comm, &n) == MPI_SUCCESS && n > 0 ? n : 0;
}

static int comm_rank(MPI_Comm comm)
{
	static int said;
	int r = 0;
	if (!p_comm_rank && !(*(void **)&p_comm_rank = library_symbol("PMPI_Comm_rank", &said)))
		return 0;
	return p_comm_rank(comm, &r) == MPI_SUCCESS && r >= 0 ? r : 0;
}

/* The sum of counts[0 .. n) times the size of type. */
static int64_t vsize(const int *counts, int64_t n, MPI_Datatype type)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], type);
	return sum;
}

/* The sum of counts[i] times the size of types[i], i in [0, n). */
static int64_t wsize(const int *counts, const MPI_Datatype *types, int64_t n)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], types[i]);
	return sum;
}

/* After a buffer grew: its columns, once they are mappings of their own
 * (sp_recorder.h), in huge pages where the kernel offers them on request
 * (transparent huge pages on madvise): a page fault per 2 MiB of events
 * instead of per 4 KiB, which on a virtual machine was half the cost of
 * recording a call into fresh memory (make bench). Only here: a region's
 * columns elsewhere keep their 4 KiB pages and tight memory. Advice only. */
static void grew(struct sp_buf *b)
{
#ifdef MADV_HUGEPAGE
	if (!b->mapped)
		return;
	madvise(b->starts, b->cap * sizeof *b->starts, MADV_HUGEPAGE);
	madvise(b->ends, b->cap * sizeof *b->ends, MADV_HUGEPAGE);
	if (b->keep_lanes)
		madvise(b->lanes, b->cap * sizeof *b->lanes, MADV_HUGEPAGE);
	if (b->keep_values)
		madvise(b->values, b->cap * sizeof *b->values, MADV_HUGEPAGE);
#else
	(void)b;
#endif
}

static void lock(struct call *c)
{
	while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire))
		sched_yield();
}

static void unlock(struct call *c)
{
	atomic_flag_clear_explicit(&c->lock, memory_order_release);
}

/* One call of function id from t0 to t1, moving bytes (kept when the
 * function has a `bytes` column). */
static void record(int id, int64_t t0, int64_t t1, int64_t bytes)
{
	sp_mpicalls_lane_fn lane_fn = lane_of;
	/* The lane is found before the lock (a thread's first may take the
	 * GIL), and only while recording (not once the interpreter ends). */
	int32_t lane = lane_fn && __atomic_load_n(&recording, __ATOMIC_RELAXED) ? lane_fn() : 0;
	struct call *c = &calls[id];
	lock(c);
	if (__atomic_load_n(&recording, __ATOMIC_RELAXED)) {
		void (*full)(size_t, struct sp_buf *) = __atomic_load_n(&on_full, __ATOMIC_RELAXED);
		if (__builtin_expect(c->buf.n == c->buf.cap, 0) && full)
			full((size_t)id, &c->buf);
		size_t cap = c->buf.cap;
		ptrdiff_t slot = sp_buf_reserve(&c->buf);
		if (__builtin_expect(c->buf.cap != cap, 0))
			grew(&c->buf);
		if (slot >= 0) {
			c->buf.starts[slot] = t0;
			c->buf.ends[slot] = t1;
			if (c->buf.keep_lanes)
				c->buf.lanes[slot] = lane;
			if (c->buf.keep_values)
				c->buf.values[slot] = bytes;
		}
	}
	unlock(c);
}

/* FN, recorded as the region of function ID. */
#define SP_WRAP_AS(FN, ID, PARAMS, ARGS, BYTES)                                                   \
	static int resolve_##FN PARAMS;                                                           \
	static int(*p_##FN) PARAMS = resolve_##FN;                                                \
	static int resolve_##FN PARAMS                                                            \
	{                                                                                         \
		static int said;                                                                  \
		void *f = library_symbol("P" #FN, &said);                                         \
		if (!f)                                                                           \
			return MPI_ERR_INTERN;                                                    \
		__atomic_store_n((void **)&p_##FN, f, __ATOMIC_RELAXED);                          \
		return p_##FN ARGS;                                                               \
	}                                                                                         \
	int FN PARAMS                                                                             \
	{                                                                                         \
		if (__builtin_expect(!__atomic_load_n(&recording, __ATOMIC_RELAXED), 1))          \
			return p_##FN ARGS;                                                       \
		int64_t t0 = sp_clock_ns();                                                       \
		int rc = p_##FN ARGS;                                                             \
		int64_t t1 = sp_clock_ns();                                                       \
		int64_t b = BYTES;                                                                \
		(void)b;                                                                          \
		record(ID, t0, t1, rc == MPI_SUCCESS ? b : 0);                                    \
		return rc;                                                                        \
	}
#define SP_WRAP(NAME, PARAMS, ARGS, BYTES) SP_WRAP_AS(NAME, ID_##NAME, PARAMS, ARGS, BYTES)
SP_MPICALLS(SP_WRAP)
#undef SP_WRAP

#if MPI_VERSION >= 4
/* MPI 4's large-count forms (NAME_c: MPI_Count counts, MPI_Aint
 * displacements), which mpi4py 4 calls where the library has them (Open
 * MPI 6): recorded in the region of the plain function. */
static int64_t vsize_c(const MPI_Count *counts, int64_t n, MPI_Datatype type)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], type);
	return sum;
}

static int64_t wsize_c(const MPI_Count *counts, const MPI_Datatype *types, int64_t n)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], types[i]);
	return sum;
}

#define SP_WRAP_C(BASE, PARAMS, ARGS, BYTES) SP_WRAP_AS(BASE##_c, ID_##BASE, PARAMS, ARGS, BYTES)
SP_MPICALLS_C(SP_WRAP_C)
#undef SP_WRAP_C
#endif
#undef SP_WRAP_AS

int sp_mpicalls_built(void)
{
	return 1;
}

size_t sp_mpicalls_count(void)
{
	return NCALLS;
}

int sp_mpicalls_start(size_t cap, sp_mpicalls_lane_fn lane)
{
	sp_mpicalls_stop();
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		if (!c->buf.limit)
			sp_buf_init(&c->buf, cap);
		c->buf.limit = cap ? cap : 1;
		if (lane && sp_buf_keep_lanes(&c->buf) != 0)
			return -1;
		if (strcmp(bytes_of[i], "NONE") != 0 && sp_buf_keep_values(&c->buf, SP_VALUES_BYTES) != 0)
			return -1;
	}
	lane_of = lane;
	__atomic_store_n(&recording, 1, __ATOMIC_RELEASE);
	return 0;
}

void sp_mpicalls_stop(void)
{
	__atomic_store_n(&recording, 0, __ATOMIC_SEQ_CST);
	/* A call that passed the check before is recording now, or will find
	 * recording off under its lock. */
	for (int i = 0; i < NCALLS; i++) {
		lock(&calls[i]);
		unlock(&calls[i]);
	}
}

void sp_mpicalls_reset(void)
{
	sp_mpicalls_stop();
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		size_t cap = c->buf.limit;
		sp_buf_free(&c->buf);
		sp_buf_init(&c->buf, cap);
	}
}

/* The name of function fn's region: fn itself, unless the rank already
 * has a region of that name (the script's own, e.g. a region named
 * "MPI_Allreduce" around its allreduce): then "fn [mpi]", or "fn [mpi N]"
 * from N = 2 while that is taken too. NULL when out of memory. */
static char *region_name(const struct sp_rank *rk, const char *fn)
{
	if (!sp_rank_has_region(rk, fn))
		return strdup(fn);
	size_t len = strlen(fn) + 32;
	char *name = malloc(len);
	if (!name)
		return NULL;
	snprintf(name, len, "%s [mpi]", fn);
	for (unsigned long n = 2; sp_rank_has_region(rk, name); n++)
		snprintf(name, len, "%s [mpi %lu]", fn, n);
	return name;
}

long sp_mpicalls_add(struct sp_rank *rk)
{
	long added = 0;
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		rk->dropped += (int64_t)c->buf.dropped;
		if (c->buf.n == 0)         /* every call lost: counted in the rank's only */
			continue;
		char *name = region_name(rk, call_names[i]);
		if (!name)
			return -1;
		struct sp_region_data *rd = &rk->regions[rk->nregions];
		memset(rd, 0, sizeof *rd);
		rd->name = name;
		rk->nregions++;
		added++;
		rd->dropped = (int64_t)c->buf.dropped;
		rd->starts = c->buf.starts;
		rd->ends = c->buf.ends;
		rd->lanes = c->buf.keep_lanes ? c->buf.lanes : NULL;
		rd->owns_events = 0;
		rd->peak_bytes = SP_NO_PEAK;
		if (c->buf.keep_values) {
			int64_t sum = 0;
			rd->values = c->buf.values;
			rd->value_kind = c->buf.keep_values;
			for (size_t k = 0; k < c->buf.n; k++)
				sum = (int64_t)((uint64_t)sum + (uint64_t)rd->values[k]);
			rd->values_total = sum;
		}
		sp_stats_compute(&rd->stats, rd->starts, rd->ends, c->buf.n);
	}
	return added;
}

void sp_mpicalls_each(sp_mpicalls_hand_fn hand, void *ctx)
{
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		lock(c);
		if (c->buf.n || c->buf.dropped)
			hand(ctx, (size_t)i, call_names[i], &c->buf);
		unlock(c);
	}
}

void sp_mpicalls_on_full(void (*full)(size_t fn, struct sp_buf *b))
{
	__atomic_store_n(&on_full, full, __ATOMIC_RELEASE);
}

#else /* no MPI: nothing to intercept */

int sp_mpicalls_built(void)
{
	return 0;
}

size_t sp_mpicalls_count(void)
{
	return 0;
}

int sp_mpicalls_start(size_t cap, sp_mpicalls_lane_fn lane)
{
	(void)cap;
	(void)lane;
	return 0;
}

void sp_mpicalls_stop(void)
{
}

void sp_mpicalls_reset(void)
{
}

long sp_mpicalls_add(struct sp_rank *rk)
{
	(void)rk;
	return 0;
}

void sp_mpicalls_each(sp_mpicalls_hand_fn hand, void *ctx)
{
	(void)hand;
	(void)ctx;
}

void sp_mpicalls_on_full(void (*full)(size_t fn, struct sp_buf *b))
{
	(void)full;
}

#endif
