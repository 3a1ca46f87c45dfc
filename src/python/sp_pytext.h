/* sp_pytext.h - Python text as the profile stores it (text.c).
 * Include <Python.h> first. */
#ifndef SP_PYTEXT_H
#define SP_PYTEXT_H

/* s itself (a new reference) when UTF-8 can hold it, else a copy with each
 * character it cannot hold (a lone surrogate: what os.fsdecode makes of
 * bytes that are not UTF-8) written as a backslash escape ('\udcff').
 * NULL with an exception only when memory runs out. */
PyObject *sp_text_storable(PyObject *s);

/* The UTF-8 of sp_text_storable(s), malloc'd (the caller frees it); NULL
 * with a Python exception only when memory runs out. Never fails for a
 * str that UTF-8 cannot hold. */
char *sp_text_dup(PyObject *s);

#endif
