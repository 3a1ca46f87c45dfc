/* sp_tracer.h - `run --recursive` and profile(recursive=True): the C hook
 * that records every call of the script's own Python functions in a
 * region named <module>.<qualname> (tracer.c, over one of two back ends:
 * the 3.11 profile hook or 3.12+ sys.monitoring). Include <Python.h>
 * first. */
#ifndef SP_TRACER_H
#define SP_TRACER_H

/* Prepares the hook (once, at module initialisation); -1 with an exception. */
int sp_tracer_init(void);

/* Marks a function's code as recorded by an explicit region, so the hook
 * does not count it twice. */
void sp_tracer_mark_explicit(PyObject *func);

/* Starts the hook in the calling thread unless it runs already; returns 1
 * when it started it, 0 when it was running, -1 with an exception set. */
int sp_tracer_start_thread(void);

/* sp_tracer_start_thread at a decorated call (profile(recursive=True), a
 * step of its generator or coroutine): the thread's lane is named first,
 * as that runs threading's Python code, which the hook would record. (Not
 * at a thread's start, where `run --recursive` starts it: threading does
 * not know the thread yet.) */
int sp_tracer_start_call(void);

/* Stops the hook in the calling thread, its open calls ended now. */
void sp_tracer_stop_thread(void);

/* Stops the hook in every thread, its open calls ended now (mode.c's
 * hook_stop_all: before the events are read or cleared). */
void sp_tracer_stop_all(void);

/* The hook threads start with, for sp_mode (mode.c's hook_mode). */
void sp_tracer_mode(void);

/* The hook records lanes from now on, in every thread (mode.c's
 * hook_lanes_on: lanes by default). */
void sp_tracer_lanes_on(void);

/* _tracer_configure, _tracer_start, _tracer_stop_all, _tracer_active and
 * (3.11) _thread_hook. */
extern PyMethodDef sp_tracer_methods[];

/* Whether run --recursive's hook is on (the session says): the script's
 * own sys.settrace/setprofile then gets one warning line a call. */
void sp_tracer_run_tracing(int on);

#endif
