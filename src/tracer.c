/* tracer.c - `run --recursive` and profile(recursive=True): a C profile hook
 * (PyEval_SetProfile) that records every call of every Python function in a
 * region named <module>.<qualname>.
 *
 * Per call it does what cProfile's hook does at the least: the region comes
 * from the code object's extra slot (decided once per code object: traced
 * or not, and which region), the thread's stack of open calls lives in the
 * hook's own object, and a call costs one clock read and two stores; in
 * steady state nothing is allocated, hashed or formatted. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fnmatch.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_pyregion.h"

/* The value in a code object's extra slot for "not traced". */
#define SKIP ((void *)&skip_marker)
static char skip_marker;

static Py_ssize_t extra_index = -1;

/* What to trace; fixed before the first code object is classified. */
static struct {
	int all;                 /* also the stdlib and installed packages */
	PyObject *include;       /* tuple of glob str, or empty */
	PyObject *exclude;       /* tuple of glob str */
	PyObject *foreign;       /* tuple of path prefixes that are not own code */
} cfg;

struct open_call {
	RegionObject *region;
	ptrdiff_t slot;
	uint64_t gen;
};

/* A thread's stack of traced calls still open: the hook's object. */
typedef struct {
	PyObject_HEAD
	struct open_call *calls;
	size_t depth, cap;
} TracerState;

static void ts_dealloc(PyObject *self)
{
	PyMem_Free(((TracerState *)self)->calls);
	Py_TYPE(self)->tp_free(self);
}

static PyTypeObject TracerStateType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._TracerState",
	.tp_basicsize = sizeof(TracerState),
	.tp_dealloc = ts_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
};

static int ts_grow(TracerState *ts)
{
	size_t cap = ts->cap ? ts->cap * 2 : 64;
	if (cap > PY_SSIZE_T_MAX / sizeof *ts->calls)
		return -1;
	struct open_call *c = PyMem_Realloc(ts->calls, cap * sizeof *c);
	if (!c)
		return -1;
	ts->calls = c;
	ts->cap = cap;
	return 0;
}

static int glob_any(PyObject *globs, const char *name)
{
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(globs); i++) {
		const char *g = PyUnicode_AsUTF8(PyTuple_GET_ITEM(globs, i));
		if (g && fnmatch(g, name, 0) == 0)
			return 1;
	}
	return 0;
}

static int is_foreign(const char *filename)
{
	if (filename[0] == '<')      /* frozen modules, <string>, <stdin>, our layer */
		return 1;
	if (strstr(filename, "/site-packages/") || strstr(filename, "/dist-packages/"))
		return 1;
	for (Py_ssize_t i = 0; cfg.foreign && i < PyTuple_GET_SIZE(cfg.foreign); i++) {
		const char *p = PyUnicode_AsUTF8(PyTuple_GET_ITEM(cfg.foreign, i));
		if (p && *p && strncmp(filename, p, strlen(p)) == 0)
			return 1;
	}
	return 0;
}

/* The slow path, once per code object: traced or not, and its region. Never
 * raises: on any failure the code is simply not traced. */
static void *classify(PyCodeObject *co, PyFrameObject *frame)
{
	void *result = SKIP;
	PyObject *globals = NULL, *name = NULL, *exc_type, *exc_value, *exc_tb;
	PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	const char *filename = PyUnicode_AsUTF8(co->co_filename);
	if (!filename || strcmp(filename, "<scope_profiler>") == 0)
		goto out;   /* never the profiler's own Python layer */
	if (!cfg.all && is_foreign(filename))
		goto out;
	globals = PyFrame_GetGlobals(frame);
	PyObject *module = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
	if (module && PyUnicode_Check(module))
		name = PyUnicode_FromFormat("%U.%U", module, co->co_qualname);
	else
		name = PyUnicode_FromFormat("%U", co->co_qualname);
	const char *u = name ? PyUnicode_AsUTF8(name) : NULL;
	if (!u)
		goto out;
	if (PyTuple_GET_SIZE(cfg.include) && !glob_any(cfg.include, u))
		goto out;
	if (glob_any(cfg.exclude, u))
		goto out;
	RegionObject *r = sp_region_lookup(name);
	if (r)
		result = r;
out:
	PyErr_Clear();
	Py_XDECREF(globals);
	Py_XDECREF(name);
	_PyCode_SetExtra((PyObject *)co, extra_index, result);
	PyErr_Clear();
	PyErr_Restore(exc_type, exc_value, exc_tb);
	return result;
}

static inline void *code_region(PyFrameObject *frame, int classify_new)
{
	PyCodeObject *co = PyFrame_GetCode(frame);
	void *x = NULL;
	_PyCode_GetExtra((PyObject *)co, extra_index, &x);
	if (!x && classify_new)
		x = classify(co, frame);
	Py_DECREF(co);
	return x;
}

static int hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	TracerState *ts = (TracerState *)obj;
	if (what == PyTrace_CALL) {
		void *x = code_region(frame, 1);
		if (x == SKIP)
			return 0;
		RegionObject *r = x;
		if (ts->depth == ts->cap && ts_grow(ts) != 0) {
			r->buf.dropped++;
			return 0;
		}
		ptrdiff_t i = sp_buf_reserve(&r->buf);
		struct open_call *c = &ts->calls[ts->depth++];
		c->region = r;
		c->slot = i;
		c->gen = r->gen;
		if (i >= 0) {
			r->buf.ends[i] = SP_NO_TIME;
			r->buf.starts[i] = sp_clock_ns();
		}
	} else if (what == PyTrace_RETURN) {
		int64_t t = sp_clock_ns();
		if (!ts->depth)
			return 0;
		void *x = code_region(frame, 0);
		struct open_call *c = &ts->calls[ts->depth - 1];
		/* A frame that was running before the hook started has no
		 * entry: leave the stack alone. */
		if ((void *)c->region != x)
			return 0;
		ts->depth--;
		if (c->slot >= 0 && c->region->gen == c->gen)
			c->region->buf.ends[c->slot] = t;
	}
	return 0;
}

int sp_tracer_init(void)
{
	if (extra_index >= 0)
		return 0;
	if (PyType_Ready(&TracerStateType) < 0)
		return -1;
	extra_index = _PyEval_RequestCodeExtraIndex(NULL);
	if (extra_index < 0) {
		PyErr_SetString(PyExc_RuntimeError, "no free code-object extra slot for the profile hook");
		return -1;
	}
	cfg.include = PyTuple_New(0);
	cfg.exclude = PyTuple_New(0);
	cfg.foreign = PyTuple_New(0);
	return cfg.include && cfg.exclude && cfg.foreign ? 0 : -1;
}

void sp_tracer_mark_explicit(PyObject *func)
{
	if (extra_index >= 0 && PyFunction_Check(func))
		_PyCode_SetExtra(PyFunction_GET_CODE(func), extra_index, SKIP);
}

int sp_tracer_start_thread(void)
{
	PyThreadState *tstate = PyThreadState_Get();
	if (tstate->c_profilefunc == hook)
		return 0;
	PyObject *ts = (PyObject *)PyObject_New(TracerState, &TracerStateType);
	if (!ts)
		return -1;
	((TracerState *)ts)->calls = NULL;
	((TracerState *)ts)->depth = ((TracerState *)ts)->cap = 0;
	PyEval_SetProfile(hook, ts);
	Py_DECREF(ts);   /* the thread state holds it */
	return 1;
}

void sp_tracer_stop_thread(void)
{
	if (PyThreadState_Get()->c_profilefunc == hook)
		PyEval_SetProfile(NULL, NULL);
}

/* _tracer_configure(all, include, exclude, foreign) */
static PyObject *tr_configure(PyObject *m, PyObject *args)
{
	int all;
	PyObject *inc, *exc, *foreign;
	if (!PyArg_ParseTuple(args, "pO!O!O!:_tracer_configure", &all, &PyTuple_Type, &inc,
			      &PyTuple_Type, &exc, &PyTuple_Type, &foreign))
		return NULL;
	cfg.all = all;
	Py_SETREF(cfg.include, Py_NewRef(inc));
	Py_SETREF(cfg.exclude, Py_NewRef(exc));
	Py_SETREF(cfg.foreign, Py_NewRef(foreign));
	Py_RETURN_NONE;
}

static PyObject *tr_start(PyObject *m, PyObject *unused)
{
	if (sp_tracer_start_thread() < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* Stops the hook in every thread of the interpreter. */
static PyObject *tr_stop_all(PyObject *m, PyObject *unused)
{
	PyThreadState *me = PyThreadState_Get();
	for (PyThreadState *t = PyInterpreterState_ThreadHead(me->interp); t; t = PyThreadState_Next(t))
		if (t->c_profilefunc == hook)
			_PyEval_SetProfile(t, NULL, NULL);
	PyErr_Clear();
	Py_RETURN_NONE;
}

/* threading.setprofile(_thread_hook): a new thread calls it for its first
 * event through Python's trampoline; it swaps in the C hook for the rest
 * of the thread and records this first call itself. */
static PyObject *tr_thread_hook(PyObject *m, PyObject *args)
{
	PyObject *frame, *event, *arg;
	if (!PyArg_ParseTuple(args, "OOO", &frame, &event, &arg))
		return NULL;
	if (sp_tracer_start_thread() < 0)
		return NULL;
	PyThreadState *tstate = PyThreadState_Get();
	if (PyFrame_Check(frame) && PyUnicode_Check(event) &&
	    PyUnicode_CompareWithASCIIString(event, "call") == 0)
		hook(tstate->c_profileobj, (PyFrameObject *)frame, PyTrace_CALL, NULL);
	Py_RETURN_NONE;
}

static PyObject *tr_active(PyObject *m, PyObject *unused)
{
	return PyBool_FromLong(PyThreadState_Get()->c_profilefunc == hook);
}

PyMethodDef sp_tracer_methods[] = {
	{"_tracer_configure", tr_configure, METH_VARARGS, NULL},
	{"_tracer_start", tr_start, METH_NOARGS, NULL},
	{"_tracer_stop_all", tr_stop_all, METH_NOARGS, NULL},
	{"_tracer_active", tr_active, METH_NOARGS, NULL},
	{"_thread_hook", tr_thread_hook, METH_VARARGS, NULL},
	{NULL},
};
