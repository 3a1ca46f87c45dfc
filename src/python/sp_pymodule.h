/* sp_pymodule.h - the built-in Python module `scope_profiler`. Include
 * <Python.h> first. */
#ifndef SP_PYMODULE_H
#define SP_PYMODULE_H

/* Registers the module with PyImport_AppendInittab; call before
 * Py_Initialize. Returns 0, or -1 when the table could not be extended. */
int sp_pymodule_register(void);

/* Set when `run` could not write the profile where it was asked to. */
extern int sp_run_write_failed;

/* The run's atexit callback, _run_exit (exitphase.c): from there on SIGINT
 * and SIGTERM are remembered, not raised in Python. */
extern PyMethodDef sp_exitphase_methods[];

/* SIGINT or SIGTERM when one arrived while the run ended, else 0. */
int sp_run_exit_signal(void);

#endif
