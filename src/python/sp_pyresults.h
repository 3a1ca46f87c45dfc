/* sp_pyresults.h - profiles into Python (pyresults.c): the read API's
 * data. Include <Python.h> first. */
#ifndef SP_PYRESULTS_H
#define SP_PYRESULTS_H

#include "sp_profile.h"

/* p as the read API's data (what _read() returns for a file), its event
 * columns taken over where p owns them; NULL with an exception set. */
PyObject *sp_results_data(struct sp_profile *p);

/* _read, _nest, _mpi_info: the read API's module functions. */
extern PyMethodDef sp_results_methods[];

/* Its types made ready (module init); -1 with an exception. */
int sp_results_init(void);

#endif
