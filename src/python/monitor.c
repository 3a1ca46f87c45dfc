/* monitor.c - the sys.monitoring tools of CPython 3.12 and later (see
 * sp_monitor.h), and the per-code slots the hooks of every version use. On
 * 3.11 the hooks are PyEval_SetProfile and PyEval_SetTrace. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "sp_monitor.h"

Py_ssize_t sp_code_extra_index(const char *what)
{
#ifdef SP_MONITORING
	Py_ssize_t i = PyUnstable_Eval_RequestCodeExtraIndex(NULL);
#else
	Py_ssize_t i = _PyEval_RequestCodeExtraIndex(NULL);
#endif
	if (i < 0)
		PyErr_Format(PyExc_RuntimeError, "no free code-object extra slot for %s", what);
	return i;
}

#ifdef SP_MONITORING

#include <string.h>

PyObject *sp_mon_disable;

/* sys.monitoring, a borrowed reference; NULL with an exception. */
static PyObject *monitoring(void)
{
	PyObject *m = PySys_GetObject("monitoring");
	if (!m)
		PyErr_SetString(PyExc_RuntimeError, "sys.monitoring is missing");
	return m;
}

/* The ids no well-known kind of tool is assigned (PEP 669 gives 0 to
 * debuggers, 1 to coverage, 2 to profilers, 5 to optimizers). */
static const int free_ids[] = {3, 4};

int sp_mon_claim(const char *name)
{
	PyObject *mon = monitoring();
	if (!mon)
		return -1;
	if (!sp_mon_disable && !(sp_mon_disable = PyObject_GetAttrString(mon, "DISABLE")))
		return -1;
	char held[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < sizeof free_ids / sizeof *free_ids; i++) {
		int id = free_ids[i];
		PyObject *owner = PyObject_CallMethod(mon, "get_tool", "i", id);
		if (!owner)
			return -1;
		if (owner == Py_None) {
			Py_DECREF(owner);
			PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", id, name);
			if (!r)
				return -1;
			Py_DECREF(r);
			return id;
		}
		const char *u = PyUnicode_Check(owner) ? PyUnicode_AsUTF8(owner) : NULL;
		PyErr_Clear();
		int n = snprintf(held + len, sizeof held - len, "%s%d (%s)", len ? ", " : "", id,
				 u ? u : "?");
		if (n > 0 && (size_t)n < sizeof held - len)
			len += (size_t)n;
		Py_DECREF(owner);
	}
	PyErr_Format(PyExc_RuntimeError,
		     "%s needs a free sys.monitoring tool id, and the ids it may take are in use: %s",
		     name, held);
	return -1;
}

long sp_mon_events(const char *names)
{
	PyObject *mon = monitoring();
	PyObject *events = mon ? PyObject_GetAttrString(mon, "events") : NULL;
	if (!events)
		return -1;
	long set = 0;
	for (const char *p = names; *p;) {
		size_t n = strcspn(p, "|");
		char name[32];
		if (n == 0 || n >= sizeof name) {
			Py_DECREF(events);
			PyErr_Format(PyExc_ValueError, "bad sys.monitoring event list: %s", names);
			return -1;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		PyObject *v = PyObject_GetAttrString(events, name);
		long bit = v ? PyLong_AsLong(v) : -1;
		Py_XDECREF(v);
		if (bit < 0) {
			Py_DECREF(events);
			return -1;
		}
		set |= bit;
		p += n + (p[n] == '|');
	}
	Py_DECREF(events);
	return set;
}

int sp_mon_register(int tool, const char *names, PyMethodDef *def)
{
	PyObject *mon = monitoring();
	if (!mon)
		return -1;
	PyObject *fn = PyCFunction_New(def, NULL);
	if (!fn)
		return -1;
	int rc = 0;
	for (const char *p = names; *p && rc == 0;) {
		size_t n = strcspn(p, "|");
		char name[32];
		snprintf(name, sizeof name, "%.*s", (int)n, p);
		long ev = sp_mon_events(name);
		PyObject *r = ev < 0 ? NULL : PyObject_CallMethod(mon, "register_callback", "ilO", tool, ev, fn);
		if (!r)
			rc = -1;
		Py_XDECREF(r);
		p += n + (p[n] == '|');
	}
	Py_DECREF(fn);
	return rc;
}

int sp_mon_set_events(int tool, long events)
{
	PyObject *mon = monitoring();
	PyObject *r = mon ? PyObject_CallMethod(mon, "set_events", "il", tool, events) : NULL;
	Py_XDECREF(r);
	return r ? 0 : -1;
}

int sp_mon_set_local_events(int tool, PyObject *code, long events)
{
	PyObject *mon = monitoring();
	PyObject *r = mon ? PyObject_CallMethod(mon, "set_local_events", "iOl", tool, code, events) : NULL;
	Py_XDECREF(r);
	return r ? 0 : -1;
}

#endif
