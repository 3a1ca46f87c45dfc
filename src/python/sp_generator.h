/* sp_generator.h - the generator of a decorated generator function
 * (generator.c). Include <Python.h> first. */
#ifndef SP_GENERATOR_H
#define SP_GENERATOR_H

#include "sp_region.h"

/* gen (a reference stolen, released on failure) wrapped so that each
 * resume (next, send, throw, and close() of a suspended one) is one call
 * of region, and nothing else is (creation, the time suspended, garbage
 * collection); recursive as the wrapper's (sp_wrapper_new); awaitable 1
 * for an iterable coroutine (types.coroutine), whose wrapper can be
 * awaited too. A new reference, or NULL with an exception. */
PyObject *sp_timed_generator_new(RegionObject *region, PyObject *gen, int recursive, int awaitable);

/* _hooked_steps(awaitable), for the module's table. */
extern PyMethodDef sp_generator_methods[];

/* Module init: its types; -1 with an exception. */
int sp_generator_init(void);

#endif
