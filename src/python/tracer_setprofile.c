/* tracer_setprofile.c - the --recursive hook's back end on CPython 3.11:
 * a C profile hook per thread (PyEval_SetProfile) whose object is the
 * thread's stack of open calls; threads started later get it through
 * threading.setprofile(_thread_hook). Compiled as part of tracer.c, which
 * includes it on 3.11 (tracer_monitoring.c from 3.12) and says what a back
 * end defines; compiled on its own (the Makefile compiles every file of
 * src/python) it is empty. */
#ifdef SP_TRACER_BACKEND

/* 3.11, read without function calls or reference counting: the frame's
 * code object, and the code object's extra slot (the layout of
 * Objects/codeobject.c's _PyCodeObjectExtra, unchanged since 3.6). Later
 * versions use only the documented and PyUnstable_ API. */
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

/* A thread's stack: the hook's object. */
typedef struct {
	PyObject_HEAD
	struct call_stack s;
} TracerState;

static void ts_dealloc(PyObject *self)
{
	PyMem_RawFree(((TracerState *)self)->s.calls);
	Py_TYPE(self)->tp_free(self);
}

static PyTypeObject TracerStateType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._TracerState",
	.tp_basicsize = sizeof(TracerState),
	.tp_dealloc = ts_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
};

/* The hook only dispatches to one of two small functions, so that each
 * saves just the registers it needs. */
static inline __attribute__((always_inline)) int on_call(TracerState *ts, PyFrameObject *frame, int lanes)
{
	PyCodeObject *co = frame_code(frame);
	void *x = code_cached(co);
	if (__builtin_expect(!x, 0)) {
		PyObject *globals = PyFrame_GetGlobals(frame);
		x = classify(co, globals, 1);
		Py_XDECREF(globals);
	}
	if (x != SKIP)
		push_call(&ts->s, x, frame, lanes);
	return 0;
}

static __attribute__((noinline)) int on_return(TracerState *ts, PyFrameObject *frame)
{
	pop_call(&ts->s, frame);
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

/* Lanes go on for the threads already traced too (asyncio's loop starting
 * turns task lanes on during the run: a thread left with `hook` would leave
 * its calls' lane slots unwritten); they go off only with every hook. */
void sp_tracer_mode(void)
{
	if (sp_mode.threads)
		sp_tracer_lanes_on();
	else
		active_hook = hook;
}

static int wait_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

static inline int is_ours(Py_tracefunc f)
{
	return f == hook || f == hook_lanes || f == wait_hook;
}

/* Whether the frame runs the program's main module: code "<module>" in
 * a namespace called __main__ (a script, -m's module through runpy, -c). */
static int runs_main(PyFrameObject *frame)
{
	PyCodeObject *co = frame_code(frame);
	if (PyUnicode_CompareWithASCIIString(co->co_name, "<module>") != 0)
		return 0;
	PyObject *globals = PyFrame_GetGlobals(frame);
	PyObject *name = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
	int yes = name && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__main__") == 0;
	Py_XDECREF(globals);
	return yes;
}

/* `run --recursive`'s hook in the thread that starts the run until the
 * program's main module starts: what the interpreter and the tool do
 * before it (importlib, runpy, the loader of the script) is not the
 * program's. Then the hook proper, from that call on. */
static int wait_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	if (what != PyTrace_CALL || !runs_main(frame))
		return 0;
	PyThreadState_Get()->c_profilefunc = active_hook;
	return active_hook(obj, frame, what, arg);
}

void sp_tracer_lanes_on(void)
{
	active_hook = hook_lanes;
	/* Under the GIL: no thread is inside the hook but the caller, which
	 * records its call with lanes (push_call). */
	for (PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Get()); t;
	     t = PyThreadState_Next(t))
		if (t->c_profilefunc == hook)
			t->c_profilefunc = hook_lanes;
}

static int backend_init(void)
{
	return PyType_Ready(&TracerStateType);
}

int sp_tracer_start_thread(void)
{
	PyThreadState *tstate = PyThreadState_Get();
	if (is_ours(tstate->c_profilefunc))
		return 0;
	TracerState *ts = PyObject_New(TracerState, &TracerStateType);
	if (!ts)
		return -1;
	if (stack_init(&ts->s) != 0) {
		ts->s.calls = NULL;
		Py_DECREF(ts);
		PyErr_NoMemory();
		return -1;
	}
	PyEval_SetProfile(active_hook, (PyObject *)ts);
	Py_DECREF(ts);   /* the thread state holds it */
	return 1;
}

void sp_tracer_stop_thread(void)
{
	PyThreadState *t = PyThreadState_Get();
	if (is_ours(t->c_profilefunc)) {
		close_open_calls(&((TracerState *)t->c_profileobj)->s, sp_clock_ns(), 1);
		PyEval_SetProfile(NULL, NULL);
	}
}

/* Threads started from now on get the hook (_thread_start's trampoline). */
static int threads_follow;

/* `run --recursive`: this thread's hook (waiting for the main module
 * when asked: wait_hook); threads started later get the hook through
 * threading.setprofile(_thread_hook) or _thread.start_new_thread's
 * trampoline (see _start_tracing). */
static int start_every_thread(int wait)
{
	int rc = sp_tracer_start_thread();
	if (rc < 0)
		return -1;
	if (rc == 1 && wait)
		PyThreadState_Get()->c_profilefunc = wait_hook;
	threads_follow = 1;
	return 0;
}

void sp_tracer_stop_all(void)
{
	threads_follow = 0;
	int64_t now = sp_clock_ns();
	PyThreadState *me = PyThreadState_Get();
	for (PyThreadState *t = PyInterpreterState_ThreadHead(me->interp); t; t = PyThreadState_Next(t)) {
		if (!is_ours(t->c_profilefunc))
			continue;
		close_open_calls(&((TracerState *)t->c_profileobj)->s, now, t == me);
		_PyEval_SetProfile(t, NULL, NULL);
	}
	PyErr_Clear();
}

static int this_thread_traced(void)
{
	return is_ours(PyThreadState_Get()->c_profilefunc);
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
/* The trampoline of a thread started through _thread_start: self is
 * (function, args, kwargs or NULL); the hook first, while the run traces. */
static PyObject *thread_trampoline(PyObject *self, PyObject *unused)
{
	if (threads_follow && sp_tracer_start_thread() < 0)
		PyErr_Clear();   /* the thread runs untraced */
	PyObject *kw = PyTuple_GET_ITEM(self, 2);
	return PyObject_Call(PyTuple_GET_ITEM(self, 0), PyTuple_GET_ITEM(self, 1), kw == Py_None ? NULL : kw);
}

static PyMethodDef trampoline_def = {"_thread_trampoline", thread_trampoline, METH_NOARGS, NULL};

/* _thread_start(original)(function, args, kwargs=None): _thread.start_new_thread
 * under run --recursive where threading is not imported yet (importing it
 * would run its code, and its _shutdown at exit, which plain python would
 * not): the new thread gets the hook before function runs. */
static PyObject *thread_start(PyObject *original, PyObject *const *args, Py_ssize_t nargs)
{
	/* What the original refuses, it refuses itself, in this thread (the
	 * trampoline would call with them in the new one). */
	if (nargs < 2 || nargs > 3 || !PyCallable_Check(args[0]) || !PyTuple_Check(args[1]) ||
	    (nargs == 3 && !PyDict_Check(args[2])))
		return PyObject_Vectorcall(original, args, (size_t)nargs, NULL);   /* its own error */
	PyObject *self = PyTuple_Pack(3, args[0], args[1], nargs == 3 ? args[2] : Py_None);
	PyObject *tramp = self ? PyCFunction_NewEx(&trampoline_def, self, NULL) : NULL;
	Py_XDECREF(self);
	PyObject *empty = tramp ? PyTuple_New(0) : NULL;
	PyObject *r = empty ? PyObject_CallFunctionObjArgs(original, tramp, empty, NULL) : NULL;
	Py_XDECREF(empty);
	Py_XDECREF(tramp);
	return r;
}

static PyMethodDef thread_start_def = {
	"start_new_thread", (PyCFunction)(void (*)(void))thread_start, METH_FASTCALL,
	"_thread.start_new_thread under scope-profiler run --recursive: the new thread is traced."};

static PyObject *tr_thread_start(PyObject *m, PyObject *original)
{
	return PyCFunction_NewEx(&thread_start_def, original, NULL);
}

/* _hide_our_hooks(): the profile hook (--recursive, profile(recursive=True))
 * and the line timing's trace function are C hooks of the thread, whose
 * objects sys.getprofile() and sys.gettrace() would hand the script, and
 * which sys.setprofile(None) or sys.settrace(None) would take away without
 * a word. Hidden here, so the script sees what python shows it: None where
 * only ours is, and setting None where only ours is changes nothing (a
 * debugger's `old = sys.gettrace(); ...; sys.settrace(old)` runs as under
 * python). A function of the script's own still replaces ours, as said
 * where that matters. Builtins of sys with no frame of their own (a trace
 * function never sees them) and the originals' signatures. From 3.12 the
 * hooks are sys.monitoring's, which these functions never see. */
static PyObject *real_get[2], *real_set[2];   /* [0]: trace, [1]: profile */

/* Whether function is _thread_hook (threading.setprofile hands it on). */
static int is_thread_hook(PyObject *function)
{
	return PyCFunction_Check(function) && PyCFunction_GET_FUNCTION(function) == (PyCFunction)tr_thread_hook;
}

static int ours(PyObject *obj)
{
	const char *n = Py_TYPE(obj)->tp_name;
	return strcmp(n, "scope_profiler._TracerState") == 0 || strcmp(n, "scope_profiler._LineState") == 0;
}

static PyObject *hidden_get(int k)
{
	PyObject *obj = PyObject_CallNoArgs(real_get[k]);
	if (obj && ours(obj))
		Py_SETREF(obj, Py_NewRef(Py_None));
	return obj;
}

static PyObject *hidden_set(int k, PyObject *function)
{
	if (function == Py_None || ours(function)) {
		PyObject *cur = PyObject_CallNoArgs(real_get[k]);
		if (!cur)
			return NULL;
		int only_ours = ours(cur);
		Py_DECREF(cur);
		if (only_ours)
			Py_RETURN_NONE;   /* the script had none to take away */
	}
	return PyObject_CallOneArg(real_set[k], function);
}

static PyObject *gettrace_hidden(PyObject *m, PyObject *unused)
{
	return hidden_get(0);
}

static PyObject *getprofile_hidden(PyObject *m, PyObject *unused)
{
	return hidden_get(1);
}

static PyObject *settrace_hidden(PyObject *m, PyObject *function)
{
	return hidden_set(0, function);
}

static PyObject *setprofile_hidden(PyObject *m, PyObject *function)
{
	return hidden_set(1, function);
}

static PyMethodDef hidden_defs[] = {
	{"gettrace", gettrace_hidden, METH_NOARGS,
	 "gettrace($module, /)\n--\n\nReturn the global debug tracing function set with sys.settrace."},
	{"getprofile", getprofile_hidden, METH_NOARGS,
	 "getprofile($module, /)\n--\n\nReturn the profiling function set with sys.setprofile."},
	{"settrace", settrace_hidden, METH_O,
	 "settrace($module, function, /)\n--\n\nSet the global debug tracing function."},
	{"setprofile", setprofile_hidden, METH_O,
	 "setprofile($module, function, /)\n--\n\nSet the profiling function."},
};

static PyObject *tr_hide_our_hooks(PyObject *m, PyObject *unused)
{
	PyObject **orig[4] = {&real_get[0], &real_get[1], &real_set[0], &real_set[1]};
	PyObject *sysname = PyUnicode_FromString("sys");
	if (!sysname)
		return NULL;
	for (size_t i = 0; i < 4; i++) {
		if (*orig[i])
			continue;   /* hidden already */
		PyObject *real = PySys_GetObject(hidden_defs[i].ml_name);   /* borrowed */
		PyObject *w = real ? PyCFunction_NewEx(&hidden_defs[i], NULL, sysname) : NULL;
		if (!w) {
			Py_DECREF(sysname);
			return real ? NULL : PyErr_Format(PyExc_RuntimeError, "sys.%s is gone", hidden_defs[i].ml_name);
		}
		*orig[i] = Py_NewRef(real);   /* held before sys lets it go */
		int rc = PySys_SetObject(hidden_defs[i].ml_name, w);
		Py_DECREF(w);
		if (rc != 0) {
			Py_DECREF(sysname);
			return NULL;
		}
	}
	Py_DECREF(sysname);
	Py_RETURN_NONE;
}

#define THREAD_HOOK_METHOD {"_thread_hook", tr_thread_hook, METH_VARARGS, NULL}, \
	{"_thread_start", tr_thread_start, METH_O, NULL}, \
	{"_hide_our_hooks", tr_hide_our_hooks, METH_NOARGS, NULL},

#endif
