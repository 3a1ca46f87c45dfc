/* sp_shim.h - `run`'s folder for the script's Python subprocesses: the
 * no-op scope_profiler they import, the marks of those that did, the
 * profiles of --subprocesses' children (shim.c). Include <Python.h> first. */
#ifndef SP_SHIM_H
#define SP_SHIM_H

/* The end of the run (session.c, after the profile, the exit signals
 * held), in the process that made the folder: one line counts the child
 * processes that imported scope_profiler (their marks), against the merged
 * ones under --subprocesses (merged >= 0), and one the merged ones that
 * did not finish their profile (recovered of them, from their last
 * flush); then the folder goes. Imports nothing, never raises. */
void sp_shim_end(Py_ssize_t merged, Py_ssize_t recovered);

/* A fork of the run that is not profiled and had no region when it was
 * made (_shim_mark_when_used(False)): its mark waits for its first region,
 * which sp_shim_mark_now() then leaves (region.c). */
extern int sp_shim_unmarked;
void sp_shim_mark_now(void);

/* _shim_offer(subprocesses), _shim_mark() and _shim_mark_when_used(any_region),
 * for the module's table. */
extern PyMethodDef sp_shim_methods[];

#endif
