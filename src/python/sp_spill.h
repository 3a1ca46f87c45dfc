/* sp_spill.h - the recording side of streaming (spill.c, over the store's
 * sp_stream.h): a region's full buffer is handed to the stream's writer
 * instead of growing, and every flush interval each region's partly filled
 * one; calls handed over while open get their end later (a late end). The
 * buffers stay within the memory budget whatever the run's length. Include
 * <Python.h> first. */
#ifndef SP_SPILL_H
#define SP_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "sp_region.h"

/* A call handed over while still open: its slot then, its start, its
 * place in the file, and what its value slot held (the memory mode's
 * tracer keeps the allocation counter at the call's start there). */
struct sp_late {
	uint64_t gen;
	ptrdiff_t slot;
	int64_t start;
	int64_t index;
	int64_t value0;
};

/* The default memory budget (run --memory-budget, setup(memory_budget=)). */
#define SP_SPILL_BUDGET ((size_t)64 << 20)

/* A new region's streaming state (none), and the same at a session reset
 * (inline: region.c needs nothing of spill.c). */
static inline void sp_spill_region_reset(RegionObject *r)
{
	r->stream_id = -1;
	r->streamed = 0;
	r->values_sum = 0;
	r->first_start = INT64_MIN;
	r->nlate = 0;
}

static inline void sp_spill_region_init(RegionObject *r)
{
	sp_spill_region_reset(r);
	r->late = NULL;
	r->late_cap = 0;
}

/* The session starts recording into path (its profile; under MPI the
 * rank's own file, its times put on rank 0's clock): streams to
 * path.partial when it can (the caller says when: a run's own process or
 * a child process of run --subprocesses, whose parent_pid its file names,
 * with events; the run's own process names children_dir, the folder they
 * stream into, NULL otherwise), within budget bytes of buffers (0: the default), flushing
 * every interval_ns (0: a second); `values`: calls carry a value each
 * (--memory, --mpi-calls), which the block size counts (24 bytes a call
 * instead of 16). Under --mpi-calls the intercepted functions' calls stream
 * too (handed over at each flush, and by the calling thread when its
 * function's buffer is full past a block).
 * Says nothing and streams nothing when it cannot; 0 either way, or -1
 * with an exception when memory runs out. */
int sp_spill_begin(const char *path, size_t budget, int64_t interval_ns, int compression, int64_t run_start_ns,
		   int values, int64_t parent_pid, const char *children_dir);

/* Whether this session streams (something was handed over): its end then
 * finishes the stream (sp_spill_end) instead of writing a file whole. */
int sp_spill_streamed(void);

/* The session ends without streaming (nothing was handed over, or no file
 * is written): the writer stops, nothing is written. */
void sp_spill_cancel(void);

/* A call of r handed over while open (gen and slot as the caller held
 * them) ends at t; nothing when it is no such call. */
void sp_spill_late_end(RegionObject *r, uint64_t gen, ptrdiff_t slot, int64_t t);

/* The same in the memory mode: the call's allocations (sp_mem_close,
 * from *alloc0, or, alloc0 NULL, from what its value slot held when it
 * was handed over; mark0 from its start) are patched in the file too,
 * and its region's peak and the outer calls' mark kept as at an end in
 * the buffer. */
void sp_spill_late_end_mem(RegionObject *r, uint64_t gen, ptrdiff_t slot, int64_t t, const int64_t *alloc0,
			   int64_t mark0);

/* The end of a streamed session (after the freeze): the writer stops, the
 * calls still open end at now, every region's remaining calls are written,
 * and rk's regions are filled from the regions' statistics, in stream
 * order (no events). 0, or -1 with an exception. */
int sp_spill_collect(struct sp_rank *rk, int64_t now);

/* Finishes the file as path with p (rk of sp_spill_collect, and the
 * metadata, line tables and LIKWID counters the caller added); says the
 * calls dropped because the writer fell behind. 0, or -1 with an OSError
 * set (OUT.partial then keeps every call written). */
int sp_spill_finish(const struct sp_profile *p, const char *path);

/* os.fork / os.forkpty under run (exitphase.c's wrappers): _enter before
 * the original, _leave after it returned, in the parent and the child. The
 * stream's threads, stopped for the fork by an os.register_at_fork hook,
 * start again in the parent at _leave, once Python counted the process's
 * threads (3.12+ warns when there are several). */
void sp_spill_fork_enter(void);
void sp_spill_fork_leave(void);

/* Under MPI, at the end of a session, before the ranks meet (the GIL
 * released): the ticker stops, so that nothing is handed over until the
 * end decides whether the job's calls streamed. */
void sp_spill_hold(void);

/* A session under MPI that cannot finish its file: the stream stops, its
 * partial file left as it is for the merge to recover. */
void sp_spill_leave(void);

/* The most calls the end of a streamed run reads back from its file (to
 * build the call tree): as many as half the budget holds. */
uint64_t sp_spill_readback_max(void);

/* Calls dropped so far because the writer was behind (also counted in
 * their regions' dropped events). */
uint64_t sp_spill_dropped(void);

/* Whether the last sp_spill_finish failed: the profile is then in the
 * partial file, and writing one elsewhere would hold less. */
int sp_spill_finish_failed(void);

/* After a failed sp_spill_finish whose stream had failed: the calls the
 * partial file's last flush does not hold (with those dropped); else 0. */
uint64_t sp_spill_lost(void);

#endif
