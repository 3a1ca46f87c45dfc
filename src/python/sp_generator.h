/* sp_generator.h - the generator of a decorated generator function
 * (generator.c). Include <Python.h> first. */
#ifndef SP_GENERATOR_H
#define SP_GENERATOR_H

#include "sp_region.h"

/* gen (a reference stolen, released on failure) wrapped so that each
 * resume (next, send, throw, and close() of a suspended one, or its
 * collection) that runs body code is one call of region, and nothing else
 * is (creation, the time suspended); recursive as the wrapper's
 * (sp_wrapper_new); awaitable 1 for an iterable coroutine
 * (types.coroutine), whose wrapper can be awaited too. A new reference,
 * or NULL with an exception. */
PyObject *sp_timed_generator_new(RegionObject *region, PyObject *gen, int recursive, int awaitable);

/* aw (an async generator's step; stolen) wrapped to be awaited in its
 * place: its run, from its first step to its end, is one call of region
 * (in its task's lane); steps 0: as they are, 1: each under the
 * --recursive hook, 2: each with its lines timed. A new reference, or NULL
 * with an exception. */
PyObject *sp_timed_await_new(RegionObject *region, PyObject *aw, int steps);

/* agen (an async generator; stolen) wrapped so that each awaited step
 * (__anext__, asend, athrow, aclose of a started one) is a
 * sp_timed_await_new of its own. */
PyObject *sp_timed_async_gen_new(RegionObject *region, PyObject *agen, int steps);

/* The module's _coroutine_enter and _coroutine_exit, which open and end
 * those calls (region_types.c); 0, or -1 with an exception. */
int sp_generator_bind(PyObject *mod);

/* _hooked_steps(awaitable), for the module's table. */
extern PyMethodDef sp_generator_methods[];

/* Module init: its types; -1 with an exception. */
int sp_generator_init(void);

#endif
