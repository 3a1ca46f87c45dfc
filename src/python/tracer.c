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

#include <string.h>

#include "sp_clock.h"
#include "sp_filter.h"
#include "sp_pyregion.h"

/* The value in a code object's cache slot for "not traced" (no object
 * lives at address 1). */
#define SKIP ((void *)1)

/* Each code object's region (or SKIP) lives in its co_extra slot, so it
 * dies with the code object and an address is never mistaken for another
 * code's. */
static Py_ssize_t extra_index = -1;

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
/* 3.11, read without function calls or reference counting: the frame's
 * code object, and the code object's extra slot (the layout of
 * Objects/codeobject.c's _PyCodeObjectExtra, unchanged since 3.6). */
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
struct code_extra {
	Py_ssize_t size;
	void *extras[1];
};

static inline PyCodeObject *frame_code(PyFrameObject *f)
{
	return f->f_frame->f_code;
}

static inline void *code_cached(PyCodeObject *co)
{
	const struct code_extra *e = co->co_extra;
	return e && extra_index < e->size ? e->extras[extra_index] : NULL;
}
#else
static inline PyCodeObject *frame_code(PyFrameObject *f)
{
	PyCodeObject *co = PyFrame_GetCode(f);
	Py_DECREF(co);   /* the frame keeps it alive */
	return co;
}

static inline void *code_cached(PyCodeObject *co)
{
	void *x = NULL;
	_PyCode_GetExtra((PyObject *)co, extra_index, &x);
	return x;
}
#endif

/* What to trace; set before the first code object is classified. */
static struct sp_filter filter;

/* Slots are valid until the regions are reset, which stops the hook in
 * every thread first (sp_tracer_stop_all), discarding these stacks. */
/* Where a call goes when its region's buffer cannot grow: one slot,
 * overwritten, never written to a file (it is in no registry). */
static int64_t scratch_starts[1], scratch_ends[1];
static int32_t scratch_lanes[1];
static RegionObject scratch = {
	.buf = {.starts = scratch_starts, .ends = scratch_ends, .lanes = scratch_lanes,
		.n = 1, .cap = 1, .initial_cap = 1},
};

struct open_call {
	PyFrameObject *frame;    /* identity only, never dereferenced */
	RegionObject *region;
	ptrdiff_t slot;
};

/* A thread's stack of traced calls still open: the hook's object. */
typedef struct {
	PyObject_HEAD
	/* calls[0] is a sentinel whose frame is NULL, so the return path needs
	 * no emptiness check; top points at the innermost open call. */
	struct open_call *calls, *top, *end;
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

static __attribute__((noinline, cold)) int ts_grow(TracerState *ts)
{
	size_t used = (size_t)(ts->top - ts->calls), cap = (size_t)(ts->end - ts->calls) * 2;
	if (cap > PY_SSIZE_T_MAX / sizeof *ts->calls)
		return -1;
	struct open_call *c = PyMem_Realloc(ts->calls, cap * sizeof *c);
	if (!c)
		return -1;
	ts->calls = c;
	ts->top = c + used;
	ts->end = c + cap - 1;
	return 0;
}

static void cache_put(PyCodeObject *co, void *value)
{
	if (_PyCode_SetExtra((PyObject *)co, extra_index, value) != 0)
		PyErr_Clear();   /* out of memory: classified again next time */
}

/* The slow path, once per code object: traced or not, and its region. Never
 * raises: on any failure the code is simply not traced. */
static __attribute__((noinline, cold)) void *classify(PyCodeObject *co, PyFrameObject *frame)
{
	void *result = SKIP;
	PyObject *globals = NULL, *name = NULL, *exc_type, *exc_value, *exc_tb;
	PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	const char *filename = PyUnicode_AsUTF8(co->co_filename);
	if (!filename || strcmp(filename, "<scope_profiler>") == 0)
		goto out;   /* never the profiler's own Python layer */
	if (!sp_filter_own_code(&filter, filename))
		goto out;
	globals = PyFrame_GetGlobals(frame);
	PyObject *module = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
	if (module && PyUnicode_Check(module))
		name = PyUnicode_FromFormat("%U.%U", module, co->co_qualname);
	else
		name = PyUnicode_FromFormat("%U", co->co_qualname);
	const char *u = name ? PyUnicode_AsUTF8(name) : NULL;
	if (!u || !sp_filter_name(&filter, u))
		goto out;
	RegionObject *r = sp_region_lookup(name);
	if (r)
		result = r;
out:
	Py_XDECREF(globals);
	Py_XDECREF(name);
	cache_put(co, result);
	PyErr_Clear();
	PyErr_Restore(exc_type, exc_value, exc_tb);
	return result;
}

/* The hook only dispatches to one of two small functions, so that each
 * saves just the registers it needs. A call: its region from the code
 * object's cache slot, a slot in the region, the start time. */
static inline int on_call(TracerState *ts, PyFrameObject *frame, int lanes)
{
	PyCodeObject *co = frame_code(frame);
	void *x = code_cached(co);
	if (__builtin_expect(!x, 0))
		x = classify(co, frame);
	if (x == SKIP)
		return 0;
	RegionObject *r = x;
	if (__builtin_expect(ts->top == ts->end, 0) && ts_grow(ts) != 0) {
		r->buf.dropped++;
		return 0;
	}
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (__builtin_expect(i < 0, 0)) {
		/* Out of memory (counted in dropped): the call goes to a
		 * scratch slot, so the return path needs no check. */
		r = &scratch;
		i = 0;
	}
	struct open_call *c = ++ts->top;
	c->frame = frame;
	c->region = r;
	c->slot = i;
	if (lanes)
		r->buf.lanes[i] = sp_current_lane();
	/* The end is written at the return, or by sp_tracer_stop_all. */
	r->buf.starts[i] = sp_clock_ns();
	return 0;
}

static __attribute__((noinline)) int on_return(TracerState *ts, PyFrameObject *frame)
{
	/* The frame object lives as long as the frame runs, so the open call
	 * on top is this frame's exactly when the pointers match; untraced
	 * frames and frames that were running before the hook started have
	 * no entry. No lookup on this path. */
	struct open_call *c = ts->top;
	if (c->frame != frame)
		return 0;
	ts->top = c - 1;
	c->region->buf.ends[c->slot] = sp_clock_ns();
	return 0;
}

static __attribute__((noinline)) int on_call_plain(TracerState *ts, PyFrameObject *frame)
{
	return on_call(ts, frame, 0);
}

static __attribute__((noinline)) int on_call_lanes(TracerState *ts, PyFrameObject *frame)
{
	return on_call(ts, frame, 1);
}

static int hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	if (what == PyTrace_CALL)
		return on_call_plain((TracerState *)obj, frame);
	if (what == PyTrace_RETURN)
		return on_return((TracerState *)obj, frame);
	return 0;
}

/* --track-threads: the same, with the thread's lane per call. */
static int hook_lanes(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	if (what == PyTrace_CALL)
		return on_call_lanes((TracerState *)obj, frame);
	if (what == PyTrace_RETURN)
		return on_return((TracerState *)obj, frame);
	return 0;
}

/* The hook new threads get; chosen at setup. */
static Py_tracefunc active_hook = hook;

void sp_tracer_set_lanes(int on)
{
	active_hook = on ? hook_lanes : hook;
}

static inline int is_ours(Py_tracefunc f)
{
	return f == hook || f == hook_lanes;
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
	return 0;
}

void sp_tracer_mark_explicit(PyObject *func)
{
	if (extra_index >= 0 && PyFunction_Check(func))
		cache_put((PyCodeObject *)PyFunction_GET_CODE(func), SKIP);
}

int sp_tracer_start_thread(void)
{
	PyThreadState *tstate = PyThreadState_Get();
	if (is_ours(tstate->c_profilefunc))
		return 0;
	PyObject *ts = (PyObject *)PyObject_New(TracerState, &TracerStateType);
	if (!ts)
		return -1;
	struct open_call *calls = PyMem_Calloc(64, sizeof *calls);
	if (!calls) {
		Py_DECREF(ts);
		PyErr_NoMemory();
		return -1;
	}
	((TracerState *)ts)->calls = ((TracerState *)ts)->top = calls;   /* the sentinel */
	((TracerState *)ts)->end = calls + 63;
	PyEval_SetProfile(active_hook, ts);
	Py_DECREF(ts);   /* the thread state holds it */
	return 1;
}

/* Calls still open on a thread's stack end now (they were entered and will
 * not be seen returning); the stack is emptied. */
static void close_open_calls(TracerState *ts, int64_t now)
{
	for (struct open_call *c = ts->calls + 1; c <= ts->top; c++)
		c->region->buf.ends[c->slot] = now;
	ts->top = ts->calls;
}

void sp_tracer_stop_thread(void)
{
	PyThreadState *t = PyThreadState_Get();
	if (is_ours(t->c_profilefunc)) {
		close_open_calls((TracerState *)t->c_profileobj, sp_clock_ns());
		PyEval_SetProfile(NULL, NULL);
	}
}

/* A tuple of str as a malloc'd array of malloc'd UTF-8 strings. */
static int str_list(PyObject *tuple, char ***out, size_t *n)
{
	Py_ssize_t len = PyTuple_GET_SIZE(tuple);
	char **v = calloc(len ? (size_t)len : 1, sizeof *v);
	if (!v) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		const char *u = PyUnicode_Check(PyTuple_GET_ITEM(tuple, i))
			? PyUnicode_AsUTF8(PyTuple_GET_ITEM(tuple, i)) : NULL;
		if (!u || !(v[i] = strdup(u))) {
			for (Py_ssize_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "filters must be tuples of str");
			return -1;
		}
	}
	*out = v;
	*n = (size_t)len;
	return 0;
}

/* _tracer_configure(all, include, exclude, foreign): the filter for code
 * objects not yet seen. */
static PyObject *tr_configure(PyObject *m, PyObject *args)
{
	int all;
	PyObject *inc, *exc, *foreign;
	if (!PyArg_ParseTuple(args, "pO!O!O!:_tracer_configure", &all, &PyTuple_Type, &inc,
			      &PyTuple_Type, &exc, &PyTuple_Type, &foreign))
		return NULL;
	struct sp_filter f = {.all = all};
	if (str_list(inc, &f.include, &f.ninclude) != 0 || str_list(exc, &f.exclude, &f.nexclude) != 0 ||
	    str_list(foreign, &f.foreign, &f.nforeign) != 0) {
		sp_filter_clear(&f);
		return NULL;
	}
	sp_filter_clear(&filter);
	filter = f;
	Py_RETURN_NONE;
}

static PyObject *tr_start(PyObject *m, PyObject *unused)
{
	if (sp_tracer_start_thread() < 0)
		return NULL;
	Py_RETURN_NONE;
}

void sp_tracer_stop_all(void)
{
	int64_t now = sp_clock_ns();
	PyThreadState *me = PyThreadState_Get();
	for (PyThreadState *t = PyInterpreterState_ThreadHead(me->interp); t; t = PyThreadState_Next(t)) {
		if (!is_ours(t->c_profilefunc))
			continue;
		close_open_calls((TracerState *)t->c_profileobj, now);
		_PyEval_SetProfile(t, NULL, NULL);
	}
	PyErr_Clear();
}

static PyObject *tr_stop_all(PyObject *m, PyObject *unused)
{
	sp_tracer_stop_all();
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
		tstate->c_profilefunc(tstate->c_profileobj, (PyFrameObject *)frame, PyTrace_CALL, NULL);
	Py_RETURN_NONE;
}

static PyObject *tr_active(PyObject *m, PyObject *unused)
{
	return PyBool_FromLong(is_ours(PyThreadState_Get()->c_profilefunc));
}

PyMethodDef sp_tracer_methods[] = {
	{"_tracer_configure", tr_configure, METH_VARARGS, NULL},
	{"_tracer_start", tr_start, METH_NOARGS, NULL},
	{"_tracer_stop_all", tr_stop_all, METH_NOARGS, NULL},
	{"_tracer_active", tr_active, METH_NOARGS, NULL},
	{"_thread_hook", tr_thread_hook, METH_VARARGS, NULL},
	{NULL},
};
