/* sp_linetrace.h - per-line timing of chosen functions (--line-profile),
 * from a C trace hook that runs only while a chosen function runs. Include
 * <Python.h> first. */
#ifndef SP_LINETRACE_H
#define SP_LINETRACE_H

#include "sp_profile.h"

/* Prepares the hook once; -1 with an exception set. */
int sp_linetrace_init(void);

/* Chooses a Python function for line timing under region (a str); other
 * callables are ignored. Returns 0, or -1 with an exception set. */
int sp_linetrace_choose(PyObject *func, PyObject *region);

/* The calling thread's hook runs from the first hold to the last release
 * (a chosen function's call, or a `with` region holding chosen functions).
 * Holds nest. hold returns 0, or -1 with an exception set. */
int sp_linetrace_hold(void);
void sp_linetrace_release(void);

/* A chosen generator function's call returns a generator that runs later:
 * wraps a generator or coroutine of a chosen function's code so that each
 * next()/send()/throw() holds the hook. Other results pass through. Takes
 * res's reference; NULL in, NULL out. */
PyObject *sp_linetrace_wrap_result(PyObject *res);

/* The steps of an awaitable's iterator it (its reference taken), each
 * under a hold (generator.c's TimedAwait: an async generator's steps are
 * awaitables of their own, not coroutines); NULL in, NULL out. */
PyObject *sp_linetrace_wrap_steps(PyObject *it);

/* Zeroes every count (the functions stay chosen). */
void sp_linetrace_reset(void);

/* Adds a line table to rk for every chosen function with hits (that the
 * region named only chose; NULL: any), its source from linecache; a
 * function chosen by several regions has one table, its region "a, b".
 * Returns 0, or -1 with an exception set. */
int sp_linetrace_collect(struct sp_rank *rk, PyObject *only);

#endif
