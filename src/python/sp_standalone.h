/* sp_standalone.h - the module imported by plain python (the extension
 * module `make module` builds with -DSP_EXTENSION, standalone.c): what
 * differs from the module built into the executable. In the executable
 * every function here keeps the executable's behaviour. Include
 * <Python.h> first. */
#ifndef SP_STANDALONE_H
#define SP_STANDALONE_H

#include <stddef.h>

#include "sp_session.h"

/* 1 in the extension module, 0 in the executable. */
int sp_standalone(void);

/* The extension's init, after the module is made: regions record nothing
 * until setup() (decorators still wrap, so setup() turns them on), and a
 * session left open at interpreter exit is finalized then. 0, or -1 with
 * an exception. The executable: 0, nothing done. */
int sp_standalone_init(PyObject *mod);

/* setup()'s settings s, before they are applied: what plain python cannot
 * do (run-only settings) is a RuntimeError naming `scope-profiler run`
 * (returns -1); a relative outfile becomes absolute (into buf[len]), so a
 * later chdir does not move the profile. 0 when s can be applied. */
int sp_standalone_settings(struct sp_settings *s, char *buf, size_t len);

/* Where a session writes its profile path: under an MPI launcher in plain
 * python (no merge across ranks there) each rank writes its own file,
 * path.rank<N> (into buf[len]); otherwise path itself. */
const char *sp_standalone_outfile(const char *path, char *buf, size_t len);

#endif
