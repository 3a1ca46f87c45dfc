/* sp_pyregion.h - the region object of the built-in module, shared by the
 * module (pymodule.c) and the --recursive profile hook (tracer.c). Include
 * <Python.h> first. */
#ifndef SP_PYREGION_H
#define SP_PYREGION_H

#include <stddef.h>
#include <stdint.h>

#include "sp_recorder.h"

/* Aggregation mode: what a region keeps instead of events (aggregate.c). */
struct sp_agg {
	int64_t count, total;         /* summed from the tree by sp_agg_sum */
	int64_t min, max;
	int64_t self;                 /* total minus the time in regions inside */
	int64_t first, last;          /* earliest start, latest end */
	int32_t node_parent, node;    /* cache: its tree node under that parent */
};

typedef struct {
	PyObject_HEAD
	PyObject *name;               /* str, exact */
	struct sp_buf buf;
	struct sp_agg agg;
	uint64_t gen;                 /* bumped when the events are cleared */
	int holds_functions;          /* region(name, functions=[...]) in line mode */
} RegionObject;

/* Exits of a region whose call was entered in another thread (that call
 * stays open until the end of the run): how many, and the first region;
 * cleared with the events. */
extern size_t sp_unmatched_exits;
extern RegionObject *sp_unmatched_region;

/* Every region by name (a dict, in creation order); the module's. */
extern PyObject *sp_registry;

/* The end of a session, under the GIL, before its events are read: every
 * region and decorated function records nothing from now on, in every
 * thread (the --recursive hook stops everywhere), and calls still open in
 * any thread will not write their end (their regions' gen moves on); the
 * open calls' ends are then set by whoever reads the events. So the events
 * stay unchanged while the GIL is released to write them. setup() starts
 * recording again. */
void sp_session_freeze(void);

/* Set while a profile is written (the GIL released): then setup(),
 * finalize() and _reset() from another thread are refused, and
 * sp_session_busy() returns -1 with RuntimeError set; else 0. */
extern int sp_session_writing;
int sp_session_busy(void);

/* finalize() and the read API's data (pyresults.c). */
int sp_results_init(void);
extern PyMethodDef sp_results_methods[];

/* The region called name (a str), created on first use; a borrowed
 * reference (the registry keeps every region alive), or NULL with an
 * exception set. */
RegionObject *sp_region_lookup(PyObject *name);

/* --track-threads: the calling thread's lane (0 for the first thread that
 * asks, the main thread under `run`; then 1, 2, ... in order of first use). */
extern _Thread_local int32_t sp_my_lane;
int32_t sp_lane_assign(void);
static inline int32_t sp_current_lane(void)
{
	return sp_my_lane >= 0 ? sp_my_lane : sp_lane_assign();
}

/* Whether regions keep a lane per event (setup(track_threads=True), or
 * track_async=True: then a lane per asyncio task, pymodule.c). */
extern int sp_track_threads;

/* --recursive: the profile hook (tracer.c). */

/* Prepares the hook (once, at module initialisation); -1 with an exception. */
int sp_tracer_init(void);
/* Marks a function's code as recorded by an explicit region, so the hook
 * does not count it twice. */
void sp_tracer_mark_explicit(PyObject *func);
/* Starts the hook in the calling thread unless it runs already; returns 1
 * when it started it, 0 when it was running, -1 with an exception set. */
int sp_tracer_start_thread(void);
/* Chooses the hook that also records lanes (for threads started later). */
void sp_tracer_set_lanes(int on);
/* Stops the hook in the calling thread. */
void sp_tracer_stop_thread(void);
/* Stops the hook in every thread, discarding their stacks of open calls;
 * called before the regions' events are cleared. */
void sp_tracer_stop_all(void);

/* Module functions of the tracer, added to the module's method table. */
extern PyMethodDef sp_tracer_methods[];

#endif
