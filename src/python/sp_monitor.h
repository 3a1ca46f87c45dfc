/* sp_monitor.h - PEP 669 (sys.monitoring, CPython 3.12 and later): the tool
 * ids the --recursive hook and line timing take, and their callbacks.
 * Python has no C API to register a tool, so these go through the
 * sys.monitoring functions, once per setting; the callbacks themselves are C
 * functions that the interpreter calls directly. Also what differs between
 * 3.11 and later for the hooks' per-code slots. Include <Python.h> first. */
#ifndef SP_MONITOR_H
#define SP_MONITOR_H

#if PY_VERSION_HEX >= 0x030C0000
#define SP_MONITORING 1

/* sys.monitoring.DISABLE: a callback returns it (a new reference) to turn
 * the event off at that place in that code object. Set by sp_mon_claim. */
extern PyObject *sp_mon_disable;

/* Claims a free tool id for name, leaving the ids of debuggers (0), coverage
 * (1), profilers such as cProfile (2) and optimizers (5) to them. Returns the
 * id, or -1 with a RuntimeError naming the tools that hold the ids. */
int sp_mon_claim(const char *name);

/* The event set of a "|"-separated list of sys.monitoring.events names
 * ("PY_START|PY_RETURN"); -1 with an exception when one is unknown. */
long sp_mon_events(const char *names);

/* Registers def (METH_FASTCALL) as tool's callback for each event named in
 * names. 0, or -1 with an exception. */
int sp_mon_register(int tool, const char *names, PyMethodDef *def);

/* sys.monitoring.set_events / set_local_events. 0, or -1 with an exception. */
int sp_mon_set_events(int tool, long events);
int sp_mon_set_local_events(int tool, PyObject *code, long events);

#endif

/* Per-code-object slots (co_extra) under the name each version documents:
 * the private spellings on 3.11, PyUnstable_ from 3.12. */
#ifdef SP_MONITORING
#define sp_code_get_extra PyUnstable_Code_GetExtra
#define sp_code_set_extra PyUnstable_Code_SetExtra
#else
#define sp_code_get_extra _PyCode_GetExtra
#define sp_code_set_extra _PyCode_SetExtra
#endif

/* A code-object slot of its own for `what`: its index, or -1 with a
 * RuntimeError naming what needed it. */
Py_ssize_t sp_code_extra_index(const char *what);

#endif
