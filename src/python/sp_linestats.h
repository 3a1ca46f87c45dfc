/* sp_linestats.h - a region's line timings while its session runs
 * (linestats.c). Include <Python.h> first. */
#ifndef SP_LINESTATS_H
#define SP_LINESTATS_H

/* The region methods get_stats() and print_stats(stream=None)
 * (linestats.c): the line timings of the functions timed under the region
 * in the session so far, as a namespace with timings {(filename, first
 * line, function): [(line, hits, ns), ...]} and unit 1e-9 (line_profiler's
 * shape), or printed as finalize() prints them. self is a region. */
PyObject *sp_region_get_stats(PyObject *self, PyObject *unused);
PyObject *sp_region_print_stats(PyObject *self, PyObject *args, PyObject *kw);

#endif
