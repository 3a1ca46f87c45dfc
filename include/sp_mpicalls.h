/* sp_mpicalls.h - run --mpi-calls / setup(profile_mpi_calls=True): every MPI
 * call the program makes is a region named by the MPI function.
 *
 * The executable defines MPI_Send, MPI_Barrier, ... (src/store/mpicalls.c)
 * and exports them, so they win over libmpi's for mpi4py and every C
 * extension (MPI's profiling interface). Each calls the library's PMPI_
 * function, looked up once by name in the libmpi in use; while recording
 * is on it also times the call and records it, with the bytes it moves,
 * into a buffer of its own (struct sp_buf), which the end of a session
 * hands over as an ordinary region. Our own MPI use (clock sync, the final
 * gather) calls PMPI_ directly and is never recorded.
 *
 * Threads. The wrappers run on whatever thread calls MPI, with or without
 * the GIL (mpi4py releases it around blocking calls). The rule: a call is
 * recorded once it has returned, in one short critical section on its
 * function's own spinlock (reserve a slot, write start, end, lane, bytes,
 * add to the stats); nothing else touches a buffer while recording is on,
 * but a stream's hand-over (sp_mpicalls_each, sp_mpicalls_on_full) under
 * that same lock.
 * sp_mpicalls_stop() turns recording off and then passes through every
 * lock, so after it returns the buffers no longer change (a call that
 * returns later finds recording off under the lock and is not recorded).
 * A call still blocked in MPI when the session ends is not recorded.
 *
 * No MPI types here: the python layer includes this. */
#ifndef SP_MPICALLS_H
#define SP_MPICALLS_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"
#include "sp_recorder.h"

/* The lane of the calling thread (--track-threads); may be called without
 * the GIL. */
typedef int32_t (*sp_mpicalls_lane_fn)(void);

/* 1 when this executable intercepts MPI calls (built with MPI). */
int sp_mpicalls_built(void);

/* Starts recording: each function's first event capacity is cap (its
 * columns double from there); lane NULL: no lanes column, else a lane per
 * call from lane(). Returns 0, or -1 when out of memory (recording off). */
int sp_mpicalls_start(size_t cap, sp_mpicalls_lane_fn lane);

/* Stops recording (see Threads above); the events stay. */
void sp_mpicalls_stop(void);

/* Forgets every recorded call (after sp_mpicalls_stop); frees the columns. */
void sp_mpicalls_reset(void);

/* How many functions are intercepted: the most regions sp_mpicalls_add
 * appends. */
size_t sp_mpicalls_count(void);

/* Appends one region per intercepted function with recorded calls to rk
 * (room for sp_mpicalls_count() more allocated by the caller), named by
 * the function ("MPI_Allreduce"), events borrowed (owns_events 0), stats
 * computed, calls lost to memory in dropped (also added to rk->dropped).
 * Call after sp_mpicalls_stop. Returns how many it appended, or -1 when
 * out of memory (those appended so far stay rk's). */
long sp_mpicalls_add(struct sp_rank *rk);

/* Streaming (spill.c). hand(ctx, fn, name, b) for each intercepted
 * function fn (0 .. sp_mpicalls_count() - 1, named name) whose buffer
 * holds calls or counts calls lost, under the function's lock: hand takes
 * the calls it can (emptying b). */
typedef void (*sp_mpicalls_hand_fn)(void *ctx, size_t fn, const char *name, struct sp_buf *b);
void sp_mpicalls_each(sp_mpicalls_hand_fn hand, void *ctx);

/* full(fn, b) is called by a call that finds its function's buffer b full,
 * before it grows (under the function's lock, in any thread, with or
 * without the GIL): it may empty b. NULL: none. */
void sp_mpicalls_on_full(void (*full)(size_t fn, struct sp_buf *b));

#endif
