/* sp_region_paths.h - the `with region:` paths of each recording mode
 * (region_paths.c): the __enter__ (METH_NOARGS) and __exit__
 * (METH_FASTCALL) of each region class (region_types.c). Include
 * <Python.h> first. */
#ifndef SP_REGION_PATHS_H
#define SP_REGION_PATHS_H

/* Time-only; with the thread's lane (--track-threads, or lanes by default
 * once a second thread records); with the call's allocations (--memory),
 * without and with lanes. */
PyObject *sp_enter_timed(PyObject *self, PyObject *unused);
PyObject *sp_enter_threads(PyObject *self, PyObject *unused);
PyObject *sp_enter_mem(PyObject *self, PyObject *unused);
PyObject *sp_enter_mem_threads(PyObject *self, PyObject *unused);
PyObject *sp_exit_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *sp_exit_mem(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* --track-async: the task's lane, the block on the task's own stack; with
 * the call's allocations too. */
PyObject *sp_enter_async(PyObject *self, PyObject *unused);
PyObject *sp_enter_async_mem(PyObject *self, PyObject *unused);
PyObject *sp_exit_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *sp_exit_async_mem(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* --line-profile, a region holding functions: the line hook held while
 * the block runs. */
PyObject *sp_enter_lines(PyObject *self, PyObject *unused);
PyObject *sp_exit_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* --likwid: each call also a LIKWID marker region. */
PyObject *sp_enter_likwid(PyObject *self, PyObject *unused);
PyObject *sp_exit_likwid(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* --nvtx: each call also an NVTX range, pushed and popped on the thread;
 * with --track-async, started and ended by id (sp_nvtx.h). */
PyObject *sp_enter_nvtx(PyObject *self, PyObject *unused);
PyObject *sp_exit_nvtx(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *sp_enter_async_nvtx(PyObject *self, PyObject *unused);
PyObject *sp_exit_async_nvtx(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* --gpu: the device synchronised at each call's entry and exit (sp_gpu.h). */
PyObject *sp_enter_gpu(PyObject *self, PyObject *unused);
PyObject *sp_exit_gpu(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Aggregation mode: the call counted in the call tree, no event. */
PyObject *sp_enter_agg(PyObject *self, PyObject *unused);
PyObject *sp_exit_agg(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Disabled: nothing (a region used after finalize() is said once). */
PyObject *sp_enter_disabled(PyObject *self, PyObject *unused);
PyObject *sp_exit_disabled(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The end of a session (after the freeze): the calling thread's `with`
 * blocks of the session still open get their allocations so far (the
 * memory mode). Their events keep SP_NO_TIME, for the caller to end with
 * every other call still open; those handed over to the stream open
 * (spill.c) end at now. */
void sp_regions_end_open(int64_t now);

/* The end of a session in --nvtx (before the freeze): the ranges of the
 * calling thread's `with` blocks of the session still open are popped, as
 * their calls end now; they will not pop at their exit. */
void sp_regions_nvtx_end_open(void);

/* The per-thread key that frees a thread's stack (module init); -1 with
 * an exception. */
int sp_region_paths_init(void);

#endif
