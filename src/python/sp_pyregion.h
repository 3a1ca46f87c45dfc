/* sp_pyregion.h - the recording side of the built-in module, shared by its
 * files: the region object and its classes (regions.c), lanes (lanes.c), the
 * decorator wrapper (wrapper.c), the recording mode the session chooses
 * (session.c) and the --recursive profile hook (tracer.c). Include
 * <Python.h> first. */
#ifndef SP_PYREGION_H
#define SP_PYREGION_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"
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
	struct sp_stats_acc acc;      /* the completed calls' stats (sp_region_end) */
	uint64_t gen;                 /* bumped when the events are cleared */
	int holds_functions;          /* region(name, functions=[...]) in line mode */
	int32_t index;                /* the end of a session: its place in the rank's regions, or -1 */
	int64_t peak_bytes;           /* run --memory: the peak of live bytes while open; -1: none */
	int32_t likwid_id;            /* --likwid: its number with sp_likwid_register, or -1 */
	size_t kept_calls;            /* after finalize(): the calls the session recorded */
} RegionObject;

/* A call of r in event slot `slot` ends at t: its end written and counted
 * in the region's stats, which the end of the run then takes as they are.
 * Every end goes through here; the end of the run computes the stats from
 * the events when the counts disagree. */
static inline void sp_region_end(RegionObject *r, size_t slot, int64_t t)
{
	r->buf.ends[slot] = t;
	sp_stats_acc_add(&r->acc, t - r->buf.starts[slot], t);
}

/* The region classes (regions.c). They share RegionObject's layout, so the
 * session switches an object's class when it changes the mode. */
extern PyTypeObject sp_TimeOnlyRegionType, sp_ThreadsRegionType, sp_AsyncRegionType,
	sp_LinesRegionType, sp_DisabledRegionType, sp_AggregateRegionType,
	sp_MemoryRegionType, sp_MemoryThreadsRegionType, sp_MemoryAsyncRegionType,
	sp_LikwidRegionType;
extern PyTypeObject sp_ProfiledFunctionType;

/* The recording mode, chosen by the session at setup (sp_mode_apply in
 * session.c) and read by the recording paths, which check nothing else:
 * the region classes and the wrappers' call functions are picked from it
 * once. The one piece of state the files of the module share. */
struct sp_recmode {
	PyTypeObject *region_type;    /* the class of every region */
	size_t buffer_limit;          /* the capacity regions double up to from a few events */
	int disabled;                 /* deactivate_profiling */
	int idle;                     /* with disabled: no session (before setup(), after
				       * finalize()); decorating still wraps, so that the
				       * next setup() turns the wrapper on */
	int recursive_all;            /* recursive_profile: every wrapper runs the hook */
	int aggregate;                /* aggregation_mode */
	int track_async;              /* a lane per asyncio task */
	int threads;                  /* events keep a lane (threads or async) */
	int lines;                    /* use_line_profiler */
	int memory;                   /* use_memray: allocations per call (sp_memory.h) */
	int likwid;                   /* use_likwid: LIKWID marker regions (sp_likwid.h);
				       * kept through the freeze, for the end of the session */
	int finished;                 /* with idle: finalize() ended a session and no
				       * region has been used since (then one warning) */
	int auto_lanes;               /* lanes go on when a thread other than lane 0's
				       * records (sp_lanes_auto_on) */
};
extern struct sp_recmode sp_mode;

/* A region used after finalize(): one warning until the next setup()
 * (sp_mode.finished cleared). Never raises. */
void sp_region_used_after_finalize(RegionObject *r);

/* One open `with` block: its region, its event slot (-1: dropped, out of
 * memory) and the region's gen at entry. */
struct sp_open_entry {
	RegionObject *region;
	ptrdiff_t slot;
	uint64_t gen;
};

/* The memory mode's counters at an open block's entry (sp_memory.h), in an
 * array beside the entries that only the memory paths touch: the other
 * modes keep their 32-byte entries. */
struct sp_open_mem {
	int64_t alloc0, mark0;
};

/* An exit whose entry is not the innermost of the thread's open blocks:
 * closes it at t wherever it is, or counts an unmatched exit (regions.c). */
void sp_region_exit_below(RegionObject *r, int64_t t);

/* One call of r around work that runs synchronously in the calling thread
 * (a resume of a decorated generator, generator.c): entered as a `with`
 * block of r's current class, so it nests and takes its lane as that block
 * would. Returns the class's exit, to be
 * called once (args ignored) when the work is done, even if the class
 * changes meanwhile (as a `with` block keeps its __exit__); NULL with an
 * exception when nothing was entered. */
typedef PyObject *(*sp_region_exit_fn)(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
sp_region_exit_fn sp_region_enter_with(RegionObject *r);

/* The end of a session (after the freeze): the calling thread's `with`
 * blocks of the session still open get their allocations so far (the
 * memory mode). Their events keep SP_NO_TIME, for the caller to end with
 * every other call still open. */
void sp_regions_end_open(void);

/* Every region takes the class of the current mode (sp_mode) and its
 * capacity; lanes kept when sp_mode.threads. 0, or -1 with MemoryError. */
int sp_regions_apply(void);
/* Every region to the disabled class, its gen moved on (sp_session_freeze). */
void sp_regions_freeze(void);
/* Forgets every recorded event; the regions stay registered. */
void sp_regions_reset(void);
/* keep 1 (finalize(), before the events go): each region's num_calls goes
 * on reading the calls the session recorded, until keep 0 (the next
 * session, _reset()) forgets them. */
void sp_regions_keep_counts(int keep);
/* Creates the registry and the per-thread key (module init); -1 with an
 * exception. */
int sp_regions_init(void);

/* Every decorated function's call chosen again from sp_mode (line mode
 * re-wraps what was decorated before it was asked for); -1 with an
 * exception. */
int sp_wrappers_apply(void);
/* Whether a live decorated function was made with profile(recursive=True). */
int sp_wrappers_recursive(void);
/* Every decorated function's call chosen again from sp_mode, and nothing
 * else (sp_lanes_auto_on). */
void sp_wrappers_choose(void);
/* Every decorated function calls through, recording nothing. */
void sp_wrappers_freeze(void);
/* A wrapper of func recording into region: recursive 1 runs the
 * --recursive hook under each call (profile(recursive=True)), -1 never
 * (profile(recursive=False) given: it wins over recursive_profile), 0 as
 * recursive_profile says; a new reference, or NULL with an exception. */
PyObject *sp_wrapper_new(RegionObject *region, PyObject *func, int recursive);
/* The generator of a decorated generator function (generator.c): gen (a
 * reference stolen, released on failure) wrapped so that each resume
 * (next, send, throw, and close() of a suspended one) is one call of
 * region, and nothing else is (creation, the time suspended, garbage
 * collection); recursive as the wrapper's (sp_wrapper_new); awaitable 1
 * for an iterable coroutine (types.coroutine), whose wrapper can be
 * awaited too. A new reference, or NULL with an exception. */
PyObject *sp_timed_generator_new(RegionObject *region, PyObject *gen, int recursive, int awaitable);
/* Module init: its types; -1 with an exception. */
int sp_generator_init(void);
/* Module init: the type, and _timed_coroutine and _TimedAsyncGenerator of the Python layer. */
int sp_wrapper_init(void);
int sp_wrapper_bind(PyObject *mod);

/* --track-async (lanes.c): the calling task's lane, or the thread's outside
 * any task; never raises. */
int32_t sp_async_lane(void);
/* Imports asyncio's functions the first time the mode is chosen; -1 with
 * an exception. */
int sp_async_init(void);
PyObject *sp_region_enter_async(PyObject *self, PyObject *unused);
PyObject *sp_region_exit_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* The same with the call's allocations (the memory mode, sp_memory.h). */
PyObject *sp_region_enter_async_mem(PyObject *self, PyObject *unused);
PyObject *sp_region_exit_async_mem(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* The lanes' names, in lane order ("MainThread", "Task-3 (worker)"); the
 * module's _lane_names. Created at module init (sp_lanes_init). */
extern PyObject *sp_lane_names;
int sp_lanes_init(void);

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
void sp_session_set_writing(int on);
int sp_session_busy(void);

/* The read API's data (pyresults.c); the rendered summary of p (or its line
 * tables, with lines set: "" when there are none) as a str; p as the read
 * API's data. Both NULL with an exception set. */
int sp_results_init(void);
extern PyMethodDef sp_results_methods[];
PyObject *sp_results_render(const struct sp_profile *p, const char *title, int lines);
PyObject *sp_results_data(struct sp_profile *p);

/* The module functions of regions.c and wrapper.c. */
extern PyMethodDef sp_region_methods[];
extern PyMethodDef sp_wrapper_methods[];

/* The region called name (a str), created on first use; a borrowed
 * reference (the registry keeps every region alive), or NULL with an
 * exception set. */
RegionObject *sp_region_lookup(PyObject *name);

/* --track-threads: the calling thread's lane (0 for the first thread that
 * asks, the main thread under `run`; then 1, 2, ... in order of first use). */
extern _Thread_local int32_t sp_my_lane;
int32_t sp_lane_assign(void);
/* Lanes by default: a recording mode without lanes (time-only, memory,
 * lines, LIKWID) turns them on when a thread other than lane 0's (the
 * thread that imported the module) records, so that calls of different
 * threads never nest in each other; until then one thread recorded, and
 * its events take lane 0. Every region keeps a lanes column from now on
 * (its events so far in lane 0) and takes the lanes class, the wrappers
 * and the --recursive hook (every thread's) record lanes. Called on a
 * recording path's slow path (sp_lanes_check), before its slot is
 * reserved; runs no Python code. 0, or -1 when lanes stay off (not asked
 * for, or out of memory; no exception set). */
int sp_lanes_auto_on(void);
static inline int32_t sp_current_lane(void)
{
	return sp_my_lane >= 0 ? sp_my_lane : sp_lane_assign();
}

/* First on a recording path without lanes, before its event slot is
 * reserved: a thread other than lane 0's turns the lanes on (the slow
 * path, sp_lanes_auto_on). 1 when it did: the caller records this call
 * with lanes. */
static inline int sp_lanes_check(void)
{
	return __builtin_expect(sp_my_lane != 0, 0) && sp_lanes_auto_on() == 0;
}

/* --recursive: the profile hook (tracer.c). */

/* Prepares the hook (once, at module initialisation); -1 with an exception. */
int sp_tracer_init(void);
/* Marks a function's code as recorded by an explicit region, so the hook
 * does not count it twice. */
void sp_tracer_mark_explicit(PyObject *func);
/* Starts the hook in the calling thread unless it runs already; returns 1
 * when it started it, 0 when it was running, -1 with an exception set. */
int sp_tracer_start_thread(void);
/* The hook's recording mode: with each call's lane (--track-threads), or
 * counted in the aggregation mode's call tree (--aggregate). */
void sp_tracer_set_mode(int lanes, int aggregate);
/* The memory mode: each call's allocations too (sp_memory.h). */
void sp_tracer_set_memory(int on);
/* The hook records lanes from now on, in every thread (sp_lanes_auto_on);
 * the live tree's mode is the caller's to set. */
void sp_tracer_lanes_on(void);
/* Stops the hook in the calling thread. */
void sp_tracer_stop_thread(void);
/* Stops the hook in every thread, discarding their stacks of open calls;
 * called before the regions' events are cleared. */
void sp_tracer_stop_all(void);

/* Module functions of the tracer, added to the module's method table. */
extern PyMethodDef sp_tracer_methods[];

#endif
