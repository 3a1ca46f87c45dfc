/* sp_wrapper.h - the decorator wrapper (wrapper.c): a decorated function
 * is a ProfiledFunction whose call records into a region, chosen from the
 * mode. Include <Python.h> first. */
#ifndef SP_WRAPPER_H
#define SP_WRAPPER_H

#include "sp_region.h"

extern PyTypeObject sp_ProfiledFunctionType;

/* A wrapper of func recording into region: recursive 1 runs the
 * --recursive hook under each call (profile(recursive=True)), -1 never
 * (profile(recursive=False) given: it wins over recursive_profile), 0 as
 * recursive_profile says; a new reference, or NULL with an exception. */
PyObject *sp_wrapper_new(RegionObject *region, PyObject *func, int recursive);

/* What a region's decorator makes of what it decorates: a callable's
 * wrapper (sp_wrapper_new), a classmethod or staticmethod of its
 * function's wrapper (a decorator above @classmethod); else a TypeError
 * naming what it got. A new reference, or NULL. */
PyObject *sp_wrapper_decorate(RegionObject *region, PyObject *func, int recursive);
/* The function a decorated function wraps (borrowed), or NULL when obj is
 * no decorated function. */
PyObject *sp_wrapper_function(PyObject *obj);

/* Whether the decorator can take func (sp_wrapper_decorate). */
int sp_wrapper_takes(PyObject *func);

/* Every decorated function's call chosen again from sp_mode (line mode
 * times the lines of what was decorated before it was asked for): mode.c's
 * wrappers_apply; -1 with an exception. */
int sp_wrappers_apply(void);
/* The same, the call only, running no Python code (lanes by default). */
void sp_wrappers_choose(void);
/* Every decorated function calls through, recording nothing. */
void sp_wrappers_freeze(void);

/* Whether a live decorated function was made with profile(recursive=True). */
int sp_wrappers_recursive(void);

/* Module init: the type (and the generator wrapper's); -1 with an
 * exception. Then, once the Python layer ran, its _timed_coroutine and
 * _TimedAsyncGenerator. */
int sp_wrapper_init(void);
int sp_wrapper_bind(PyObject *mod);

#endif
