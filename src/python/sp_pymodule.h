/* sp_pymodule.h - the built-in Python module `scope_profiler` (module.c).
 * Include <Python.h> first. */
#ifndef SP_PYMODULE_H
#define SP_PYMODULE_H

/* Registers the module with PyImport_AppendInittab; call before
 * Py_Initialize. Returns 0, or -1 when the table could not be extended. */
int sp_pymodule_register(void);

#endif
