/* generator.c - the generator of a decorated generator function: a lean
 * iterator around the real one whose every resume (next(), send(), throw(),
 * and close() of a suspended generator, whoever drives it: a for loop,
 * list(), `yield from`) is one call of the region, entered and exited as a
 * `with` block of the region's current class (sp_region_enter_with), so it
 * nests and takes its lane as that block would; so is its cleanup when it
 * is collected suspended (tg_finalize), as cProfile counts them. Creating
 * the generator records nothing, nor does the time it is suspended, nor a
 * resume that runs no body code (a finished generator): a call is only
 * ever open while the body runs, so an abandoned generator leaves none.
 * The wrapper is no generator for inspect.isgenerator(); it is one for
 * collections.abc.Generator (it has __next__, send, throw and close), and
 * its gi_* attributes are the generator's. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "sp_generator.h"
#include "sp_lanes.h"
#include "sp_linetrace.h"
#include "sp_mode.h"
#include "sp_region.h"
#include "sp_tracer.h"

enum { TG_FRESH, TG_SUSPENDED, TG_DONE };

typedef struct {
	PyObject_HEAD
	PyObject *gen;          /* the generator (or its line-timed wrapper) */
	RegionObject *region;
	PyObject *weaklist;
	int recursive;          /* as ProfiledFunction's */
	int state;              /* TG_*: whether close() runs body code */
	int running;            /* a resume is under way (one from within it runs no body code) */
} TimedGen;

static struct {
	PyObject *send, *throw, *close;   /* interned method names */
} tg;

/* What one resume does to the generator; OP_FINALIZE: its own finalizer
 * (the cleanup of a collected one, python's words should it fail). */
enum tg_op { OP_NEXT, OP_SEND, OP_THROW, OP_CLOSE, OP_FINALIZE };

static PyObject *step_run(PyObject *gen, enum tg_op op, PyObject *arg)
{
	switch (op) {
	case OP_NEXT:
		return Py_TYPE(gen)->tp_iternext(gen);
	case OP_SEND:
		return PyObject_CallMethodOneArg(gen, tg.send, arg);
	case OP_THROW: {
		PyObject *fn = PyObject_GetAttr(gen, tg.throw);
		PyObject *res = fn ? PyObject_Call(fn, arg, NULL) : NULL;
		Py_XDECREF(fn);
		return res;
	}
	case OP_CLOSE:
		return PyObject_CallMethodNoArgs(gen, tg.close);
	case OP_FINALIZE:
		PyObject_CallFinalizer(gen);   /* once: it marks the generator finalized */
		return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
	}
	return NULL;
}

/* Its exit, with the resume's exception (if any) kept aside: the exits of
 * task lanes may run Python code. */
static PyObject *tg_exit(TimedGen *g, sp_region_exit_fn exit, PyObject *res)
{
	PyObject *none;
	if (res || !PyErr_Occurred()) {
		none = exit((PyObject *)g->region, NULL, 0);
	} else {
#if PY_VERSION_HEX >= 0x030C0000
		PyObject *exc = PyErr_GetRaisedException();
		none = exit((PyObject *)g->region, NULL, 0);
		if (none)
			PyErr_SetRaisedException(exc);
		else
			Py_DECREF(exc);
#else
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		none = exit((PyObject *)g->region, NULL, 0);
		if (none) {
			PyErr_Restore(type, value, tb);
		} else {
			Py_XDECREF(type);
			Py_XDECREF(value);
			Py_XDECREF(tb);
		}
#endif
	}
	if (!none) {
		Py_CLEAR(res);
		return NULL;
	}
	Py_DECREF(none);
	return res;
}

/* One resume, one call of the region; with profile(recursive=True) (or
 * recursive_profile) the --recursive hook runs under it, as under a call
 * of a decorated function. */
static PyObject *tg_resume(TimedGen *g, enum tg_op op, PyObject *arg)
{
	if (!g->gen) {   /* cleared by the collector (a reference cycle): finished */
		if (op != OP_NEXT)
			PyErr_SetNone(PyExc_StopIteration);
		return NULL;
	}
	/* No body code runs: a finished generator, a value sent to a fresh
	 * one, a resume from within its own (python raises): no call, as
	 * cProfile counts none. */
	if (g->state == TG_DONE || g->running || (op == OP_SEND && g->state == TG_FRESH && arg != Py_None))
		return step_run(g->gen, op, arg);
	int hook = 0;
	if (sp_mode_hooked(g->recursive) && !sp_mode.disabled && (hook = sp_tracer_start_call()) < 0)
		return NULL;
	PyObject *res = NULL;
	sp_region_exit_fn exit = sp_region_enter_with(g->region);
	if (exit) {
		g->running = 1;
		res = step_run(g->gen, op, arg);
		g->running = 0;
		/* NULL: it returned (StopIteration, or nothing set from
		 * __next__) or raised; either way it is finished. */
		g->state = res && op != OP_CLOSE && op != OP_FINALIZE ? TG_SUSPENDED : TG_DONE;
		res = tg_exit(g, exit, res);
	}
	if (hook)
		sp_tracer_stop_thread();
	return res;
}

static PyObject *tg_iternext(PyObject *self)
{
	return tg_resume((TimedGen *)self, OP_NEXT, NULL);
}

static PyObject *tg_send(PyObject *self, PyObject *value)
{
	return tg_resume((TimedGen *)self, OP_SEND, value);
}

static PyObject *tg_throw(PyObject *self, PyObject *args)
{
	return tg_resume((TimedGen *)self, OP_THROW, args);
}

/* close(): a call only when it runs the body's cleanup (a generator
 * suspended at a yield); a fresh or finished one is closed untimed. */
static PyObject *tg_close(PyObject *self, PyObject *unused)
{
	TimedGen *g = (TimedGen *)self;
	if (!g->gen)
		Py_RETURN_NONE;
	if (g->state != TG_SUSPENDED) {
		g->state = TG_DONE;
		return step_run(g->gen, OP_CLOSE, NULL);
	}
	return tg_resume(g, OP_CLOSE, NULL);
}

/* gi_frame, gi_running, gi_code, gi_suspended, __name__, ...: the
 * generator's. */
/* self's attribute name, else the one of what *target holds (NULL once
 * the collector cleared it: a reference cycle). The wrappers' getattro. */
static PyObject *forward_attr(PyObject *self, PyObject *name, PyObject *const *target)
{
	PyObject *v = PyObject_GenericGetAttr(self, name);
	if (v || !*target || !PyErr_ExceptionMatches(PyExc_AttributeError))
		return v;
	PyErr_Clear();
	return PyObject_GetAttr(*target, name);
}

static PyObject *tg_getattro(PyObject *self, PyObject *name)
{
	return forward_attr(self, name, &((TimedGen *)self)->gen);
}

static PyObject *tg_repr(PyObject *self)
{
	TimedGen *g = (TimedGen *)self;
	return PyUnicode_FromFormat("<profiled %R in region %R>", g->gen ? g->gen : Py_None, g->region->name);
}

static int tg_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((TimedGen *)self)->gen);
	return 0;
}

static int tg_clear(PyObject *self)
{
	Py_CLEAR(((TimedGen *)self)->gen);
	return 0;
}

/* Collected while suspended at a yield: its cleanup (the body's finally
 * blocks, as its own finalizer would run them) is one call, as an explicit
 * close() is and as cProfile counts it. */
static void tg_finalize(PyObject *self)
{
	TimedGen *g = (TimedGen *)self;
	/* A generator's own finalizer, run once, in the call (a line-timed
	 * wrapper's generator finalizes itself, untimed) */
	if (!g->gen || g->state != TG_SUSPENDED || !PyGen_Check(g->gen))
		return;
#if PY_VERSION_HEX >= 0x030C0000
	PyObject *exc = PyErr_GetRaisedException();
#else
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
#endif
	PyObject *res = tg_resume(g, OP_FINALIZE, NULL);
	if (res)
		Py_DECREF(res);
	else
		PyErr_WriteUnraisable(g->gen);
#if PY_VERSION_HEX >= 0x030C0000
	PyErr_SetRaisedException(exc);
#else
	PyErr_Restore(type, value, tb);
#endif
}

static void tg_dealloc(PyObject *self)
{
	TimedGen *g = (TimedGen *)self;
	if (PyObject_CallFinalizerFromDealloc(self) < 0)
		return;   /* resurrected by its cleanup */
	PyObject_GC_UnTrack(self);
	if (g->weaklist)
		PyObject_ClearWeakRefs(self);
	tg_clear(self);
	Py_CLEAR(g->region);
	PyObject_GC_Del(self);
}

static PyMethodDef tg_methods[] = {
	{"send", tg_send, METH_O, "send(value): resumes the generator with value (one call of the region)."},
	{"throw", tg_throw, METH_VARARGS, "throw(exc): raises exc in the generator (one call of the region)."},
	{"close", tg_close, METH_NOARGS, "close(): closes the generator (a call when it runs its cleanup)."},
	{NULL},
};

#define TIMED_GEN_TYPE(var, pyname, async) \
	static PyTypeObject var = { \
		PyVarObject_HEAD_INIT(NULL, 0) \
		.tp_name = "scope_profiler." pyname, \
		.tp_basicsize = sizeof(TimedGen), \
		.tp_dealloc = tg_dealloc, \
		.tp_finalize = tg_finalize, \
		.tp_as_async = async, \
		.tp_repr = tg_repr, \
		.tp_getattro = tg_getattro, \
		.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, \
		.tp_doc = "A decorated generator function's generator: each resume is one call of its region.", \
		.tp_traverse = tg_traverse, \
		.tp_clear = tg_clear, \
		.tp_weaklistoffset = offsetof(TimedGen, weaklist), \
		.tp_iter = PyObject_SelfIter, \
		.tp_iternext = tg_iternext, \
		.tp_methods = tg_methods, \
	}

/* An iterable coroutine (types.coroutine) can be awaited as well: its
 * await drives the wrapper, each step one call. */
static PyObject *tg_await(PyObject *self)
{
	return Py_NewRef(self);
}

static PyAsyncMethods tg_async = {.am_await = tg_await};

TIMED_GEN_TYPE(timed_gen_type, "TimedGenerator", NULL);
TIMED_GEN_TYPE(timed_coro_gen_type, "TimedIterableCoroutine", &tg_async);

PyObject *sp_timed_generator_new(RegionObject *region, PyObject *gen, int recursive, int awaitable)
{
	TimedGen *g = PyObject_GC_New(TimedGen, awaitable ? &timed_coro_gen_type : &timed_gen_type);
	if (!g) {
		Py_DECREF(gen);
		return NULL;
	}
	g->gen = gen;
	g->region = (RegionObject *)Py_NewRef((PyObject *)region);
	g->weaklist = NULL;
	g->recursive = recursive;
	g->state = TG_FRESH;
	g->running = 0;
	PyObject_GC_Track(g);
	return (PyObject *)g;
}

/* ---- the steps of an awaitable under the --recursive hook ----
 *
 * profile(recursive=True) on an `async def` function or an async
 * generator function: the region is timed by TimedAwait below (the
 * coroutine's whole run, each awaited step of the async generator), and
 * the hook records the calls of each step of the function's own code,
 * started as the step begins and stopped as it suspends, so that what
 * other tasks run while it waits is not under it. */
typedef struct {
	PyObject_HEAD
	PyObject *it;           /* the awaitable's iterator (its __await__()) */
} HookSteps;

static PyObject *hs_resume(HookSteps *h, enum tg_op op, PyObject *arg)
{
	if (!h->it) {
		if (op != OP_NEXT && op != OP_CLOSE)
			PyErr_SetNone(PyExc_StopIteration);
		return op == OP_CLOSE ? Py_NewRef(Py_None) : NULL;
	}
	int hook = 0;
	if (!sp_mode.disabled && (hook = sp_tracer_start_call()) < 0)
		return NULL;
	/* The hook's calls in the task's lane, the coroutine's region's: the
	 * thread's lane is the task's for the step (a nested step saves and
	 * puts back the same). */
	int32_t saved = sp_my_lane;
	sp_my_lane = sp_mode.track_async ? sp_async_lane() : saved;
	PyObject *res = step_run(h->it, op, arg);
	sp_my_lane = saved;
	if (hook)
		sp_tracer_stop_thread();
	return res;
}

static PyObject *hs_iternext(PyObject *self)
{
	return hs_resume((HookSteps *)self, OP_NEXT, NULL);
}

static PyObject *hs_send(PyObject *self, PyObject *value)
{
	return hs_resume((HookSteps *)self, OP_SEND, value);
}

static PyObject *hs_throw(PyObject *self, PyObject *args)
{
	return hs_resume((HookSteps *)self, OP_THROW, args);
}

static PyObject *hs_close(PyObject *self, PyObject *unused)
{
	return hs_resume((HookSteps *)self, OP_CLOSE, NULL);
}

static int hs_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((HookSteps *)self)->it);
	return 0;
}

static int hs_clear(PyObject *self)
{
	Py_CLEAR(((HookSteps *)self)->it);
	return 0;
}

static void hs_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	hs_clear(self);
	PyObject_GC_Del(self);
}

static PyMethodDef hs_methods[] = {
	{"send", hs_send, METH_O, "send(value): the awaitable's next step, under the hook."},
	{"throw", hs_throw, METH_VARARGS, "throw(exc): raises exc in the awaitable, under the hook."},
	{"close", hs_close, METH_NOARGS, "close(): closes the awaitable, under the hook."},
	{NULL},
};

static PyTypeObject hook_steps_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._HookSteps",
	.tp_basicsize = sizeof(HookSteps),
	.tp_dealloc = hs_dealloc,
	.tp_as_async = &tg_async,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "The steps of an awaitable, each under the --recursive hook.",
	.tp_traverse = hs_traverse,
	.tp_clear = hs_clear,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = hs_iternext,
	.tp_methods = hs_methods,
};

/* The iterator that awaiting awaitable steps through (a new reference), or
 * NULL with the TypeError an await raises. */
static PyObject *await_iter(PyObject *awaitable)
{
	PyAsyncMethods *am = Py_TYPE(awaitable)->tp_as_async;
	if (!am || !am->am_await) {
		PyErr_Format(PyExc_TypeError, "object %.100s can't be used in 'await' expression",
			     Py_TYPE(awaitable)->tp_name);
		return NULL;
	}
	return am->am_await(awaitable);
}

/* _hooked_steps(awaitable): the steps of awaitable, each under the
 * --recursive hook, to await in its place (the Python layer's
 * _timed_coroutine and TimedAwait, for recursive=True). */
static PyObject *hooked_steps(PyObject *m, PyObject *awaitable)
{
	PyObject *it = await_iter(awaitable);
	if (!it)
		return NULL;
	HookSteps *h = PyObject_GC_New(HookSteps, &hook_steps_type);
	if (!h) {
		Py_DECREF(it);
		return NULL;
	}
	h->it = it;
	PyObject_GC_Track(h);
	return (PyObject *)h;
}

/* ---- a decorated async generator function's generator ----
 *
 * TimedAwait stands for an awaitable (one step of an async generator: its
 * __anext__(), asend(), athrow(), aclose()) and is awaited in its place:
 * the region's call opens at its first step (_coroutine_enter: the call's
 * slot in the token, in its task's lane, so interleaved tasks never close
 * each other's) and ends when it returns or raises (_coroutine_exit). No
 * Python frame of the profiler is on the way: tracebacks are the
 * generator's own. */
static struct {
	PyObject *enter, *exit;   /* _coroutine_enter, _coroutine_exit (region_types.c) */
} ta;

typedef struct {
	PyObject_HEAD
	PyObject *aw;           /* the awaitable: attributes, and closed untimed before its start */
	PyObject *it;           /* what awaiting it steps through, once started */
	PyObject *region;
	PyObject *token;        /* _coroutine_enter's, while the call is open */
	PyObject *weaklist;
	int steps;              /* 0 as they are, 1 under the --recursive hook, 2 lines timed */
	int state;              /* TG_FRESH, TG_SUSPENDED (started), TG_DONE */
} TimedAwait;

static int ta_start(TimedAwait *a)
{
	PyObject *it = a->steps == 1 ? hooked_steps(NULL, a->aw)
		       : a->steps == 2 ? sp_linetrace_wrap_steps(await_iter(a->aw)) : await_iter(a->aw);
	if (!it)
		return -1;
	PyObject *token = PyObject_CallOneArg(ta.enter, a->region);
	if (!token) {
		Py_DECREF(it);
		return -1;
	}
	a->it = it;
	a->token = token;
	a->state = TG_SUSPENDED;
	return 0;
}

/* The call ends (the awaitable returned or raised), its exception kept. */
static void ta_end(TimedAwait *a)
{
	a->state = TG_DONE;
	if (!a->token)
		return;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyObject *argv[2] = {a->region, a->token};
	PyObject *r = PyObject_Vectorcall(ta.exit, argv, 2, NULL);
	if (r)
		Py_DECREF(r);
	else
		PyErr_WriteUnraisable(a->region);
	PyErr_Restore(type, value, tb);
	Py_CLEAR(a->token);
	Py_CLEAR(a->it);
}

static PySendResult ta_send(PyObject *self, PyObject *arg, PyObject **result)
{
	TimedAwait *a = (TimedAwait *)self;
	if (a->state == TG_DONE) {   /* as a finished step says */
		*result = NULL;
		PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited __anext__()/asend()");
		return PYGEN_ERROR;
	}
	if (a->state == TG_FRESH && ta_start(a) != 0) {
		*result = NULL;
		return PYGEN_ERROR;
	}
	PySendResult r = PyIter_Send(a->it, arg, result);
	if (r != PYGEN_NEXT)
		ta_end(a);
	return r;
}

/* StopIteration(value), as a method's return (value stolen). */
static PyObject *ta_stop(PyObject *value)
{
	PyObject *e = PyObject_CallOneArg(PyExc_StopIteration, value);
	Py_DECREF(value);
	if (e) {
		PyErr_SetObject(PyExc_StopIteration, e);
		Py_DECREF(e);
	}
	return NULL;
}

static PyObject *ta_iternext(PyObject *self)
{
	PyObject *res;
	switch (ta_send(self, Py_None, &res)) {
	case PYGEN_NEXT:
		return res;
	case PYGEN_RETURN:
		if (res == Py_None) {
			Py_DECREF(res);
			return NULL;
		}
		return ta_stop(res);
	default:
		return NULL;
	}
}

static PyObject *ta_send_method(PyObject *self, PyObject *value)
{
	PyObject *res;
	switch (ta_send(self, value, &res)) {
	case PYGEN_NEXT:
		return res;
	case PYGEN_RETURN:
		return ta_stop(res);
	default:
		return NULL;
	}
}

/* throw(): into a fresh or finished awaitable as it is (no body code of
 * it runs yet); into a started one as one of its steps. */
static PyObject *ta_throw(PyObject *self, PyObject *args)
{
	TimedAwait *a = (TimedAwait *)self;
	if (!a->aw) {   /* cleared (ta_clear) */
		PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited __anext__()/asend()");
		return NULL;
	}
	if (a->state != TG_SUSPENDED) {
		PyObject *res = step_run(a->aw, OP_THROW, args);
		if (!res)
			a->state = TG_DONE;   /* else it caught it and goes on (no call yet) */
		return res;
	}
	PyObject *res = step_run(a->it, OP_THROW, args);
	if (!res)
		ta_end(a);
	return res;
}

/* close(): a fresh one is closed untimed; a started one runs its cleanup
 * in the call, which then ends. */
static PyObject *ta_close(PyObject *self, PyObject *unused)
{
	TimedAwait *a = (TimedAwait *)self;
	if (a->state == TG_DONE)
		Py_RETURN_NONE;
	if (a->state == TG_FRESH) {
		a->state = TG_DONE;
		return step_run(a->aw, OP_CLOSE, NULL);
	}
	PyObject *res = step_run(a->it, OP_CLOSE, NULL);
	ta_end(a);
	return res;
}

/* Collected while suspended (a task destroyed pending): its cleanup runs
 * in the call, which ends, as close() does. */
static void ta_finalize(PyObject *self)
{
	TimedAwait *a = (TimedAwait *)self;
	if (a->state != TG_SUSPENDED)
		return;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyObject *res = ta_close(self, NULL);
	if (res)
		Py_DECREF(res);
	else
		PyErr_WriteUnraisable(a->aw);
	PyErr_Restore(type, value, tb);
}

static PyObject *ta_getattro(PyObject *self, PyObject *name)
{
	return forward_attr(self, name, &((TimedAwait *)self)->aw);   /* the step's own */
}

static PyObject *ta_repr(PyObject *self)
{
	TimedAwait *a = (TimedAwait *)self;
	return PyUnicode_FromFormat("<profiled %R in region %R>", a->aw ? a->aw : Py_None,
				    ((RegionObject *)a->region)->name);
}

static int ta_traverse(PyObject *self, visitproc visit, void *arg)
{
	TimedAwait *a = (TimedAwait *)self;
	Py_VISIT(a->aw);
	Py_VISIT(a->it);
	Py_VISIT(a->region);
	Py_VISIT(a->token);
	return 0;
}

/* Cleared by the collector (a reference cycle): finished, as a step that
 * ran to its end (nothing of it is left to run). */
static int ta_clear(PyObject *self)
{
	TimedAwait *a = (TimedAwait *)self;
	a->state = TG_DONE;
	Py_CLEAR(a->aw);
	Py_CLEAR(a->it);
	Py_CLEAR(a->token);
	return 0;
}

static void ta_dealloc(PyObject *self)
{
	if (PyObject_CallFinalizerFromDealloc(self) < 0)
		return;   /* resurrected by its cleanup */
	TimedAwait *a = (TimedAwait *)self;
	PyObject_GC_UnTrack(self);
	if (a->weaklist)
		PyObject_ClearWeakRefs(self);
	ta_clear(self);
	Py_CLEAR(a->region);
	PyObject_GC_Del(self);
}

static PyMethodDef ta_methods[] = {
	{"send", ta_send_method, METH_O, "send(value): the next step (the first opens the region's call)."},
	{"throw", ta_throw, METH_VARARGS, "throw(exc): raises exc in the awaitable."},
	{"close", ta_close, METH_NOARGS, "close(): closes the awaitable (a started one ends its call)."},
	{NULL},
};

static PyAsyncMethods ta_async = {.am_await = tg_await, .am_send = ta_send};

static PyTypeObject timed_await_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler.TimedStep",
	.tp_basicsize = sizeof(TimedAwait),
	.tp_dealloc = ta_dealloc,
	.tp_finalize = ta_finalize,
	.tp_as_async = &ta_async,
	.tp_repr = ta_repr,
	.tp_getattro = ta_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "A step of a decorated async generator function's generator: its run is one call of its "
		  "region.",
	.tp_traverse = ta_traverse,
	.tp_clear = ta_clear,
	.tp_weaklistoffset = offsetof(TimedAwait, weaklist),
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = ta_iternext,
	.tp_methods = ta_methods,
};

PyObject *sp_timed_await_new(RegionObject *region, PyObject *aw, int steps)
{
	TimedAwait *a = PyObject_GC_New(TimedAwait, &timed_await_type);
	if (!a) {
		Py_DECREF(aw);
		return NULL;
	}
	a->aw = aw;
	a->it = NULL;
	a->region = Py_NewRef((PyObject *)region);
	a->token = NULL;
	a->weaklist = NULL;
	a->steps = steps;
	a->state = TG_FRESH;
	PyObject_GC_Track(a);
	return (PyObject *)a;
}

/* The generator of a decorated async generator function: each awaited
 * step (__anext__, asend, athrow, and aclose of a started one) is one
 * call (a TimedAwait), from its first step to the item it yields or its
 * end; the time it is suspended at a yield is not counted, nor its
 * creation. */
typedef struct {
	PyObject_HEAD
	PyObject *agen;
	RegionObject *region;
	PyObject *weaklist;
	int steps;
	int started;
} TimedAsyncGen;

static PyObject *tag_step(TimedAsyncGen *g, PyObject *step)
{
	if (!step)
		return NULL;
	g->started = 1;
	return sp_timed_await_new(g->region, step, g->steps);
}

/* 1, with RuntimeError set, once the collector cleared g (a reference
 * cycle): nothing of it is left to step. */
static int tag_cleared(TimedAsyncGen *g)
{
	if (g->agen)
		return 0;
	PyErr_SetString(PyExc_RuntimeError, "the profiled asynchronous generator was collected");
	return 1;
}

static PyObject *tag_anext(PyObject *self)
{
	TimedAsyncGen *g = (TimedAsyncGen *)self;
	if (tag_cleared(g))
		return NULL;
	return tag_step(g, Py_TYPE(g->agen)->tp_as_async->am_anext(g->agen));
}

static PyObject *tag_asend(PyObject *self, PyObject *value)
{
	TimedAsyncGen *g = (TimedAsyncGen *)self;
	if (tag_cleared(g))
		return NULL;
	return tag_step(g, PyObject_CallMethod(g->agen, "asend", "O", value));
}

static PyObject *tag_athrow(PyObject *self, PyObject *args)
{
	TimedAsyncGen *g = (TimedAsyncGen *)self;
	if (tag_cleared(g))
		return NULL;
	PyObject *fn = PyObject_GetAttrString(g->agen, "athrow");
	PyObject *step = fn ? PyObject_Call(fn, args, NULL) : NULL;
	Py_XDECREF(fn);
	return tag_step(g, step);
}

/* A fresh or finished generator runs no body code to close: untimed. */
static PyObject *tag_aclose(PyObject *self, PyObject *unused)
{
	TimedAsyncGen *g = (TimedAsyncGen *)self;
	if (tag_cleared(g))
		return NULL;
	PyObject *frame = g->started ? PyObject_GetAttrString(g->agen, "ag_frame") : NULL;
	int live = frame && frame != Py_None;
	Py_XDECREF(frame);
	PyErr_Clear();
	PyObject *step = PyObject_CallMethod(g->agen, "aclose", NULL);
	return live ? tag_step(g, step) : step;
}

static PyObject *tag_getattro(PyObject *self, PyObject *name)
{
	return forward_attr(self, name, &((TimedAsyncGen *)self)->agen);   /* ag_frame, ag_code, ... */
}

static PyObject *tag_repr(PyObject *self)
{
	TimedAsyncGen *g = (TimedAsyncGen *)self;
	return PyUnicode_FromFormat("<profiled %R in region %R>", g->agen ? g->agen : Py_None, g->region->name);
}

static int tag_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((TimedAsyncGen *)self)->agen);
	return 0;
}

static int tag_clear(PyObject *self)
{
	Py_CLEAR(((TimedAsyncGen *)self)->agen);
	return 0;
}

static void tag_dealloc(PyObject *self)
{
	TimedAsyncGen *g = (TimedAsyncGen *)self;
	PyObject_GC_UnTrack(self);
	if (g->weaklist)
		PyObject_ClearWeakRefs(self);
	tag_clear(self);
	Py_CLEAR(g->region);
	PyObject_GC_Del(self);
}

static PyMethodDef tag_methods[] = {
	{"asend", tag_asend, METH_O, "asend(value): the next step with value (one call of the region)."},
	{"athrow", tag_athrow, METH_VARARGS, "athrow(exc): raises exc in the generator (one call of the region)."},
	{"aclose", tag_aclose, METH_NOARGS, "aclose(): closes the generator (a call when it runs its cleanup)."},
	{NULL},
};

static PyAsyncMethods tag_async = {.am_aiter = PyObject_SelfIter, .am_anext = tag_anext};

static PyTypeObject timed_async_gen_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler.TimedAsyncGenerator",
	.tp_basicsize = sizeof(TimedAsyncGen),
	.tp_dealloc = tag_dealloc,
	.tp_as_async = &tag_async,
	.tp_repr = tag_repr,
	.tp_getattro = tag_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "A decorated async generator function's generator: each awaited step is one call of its region.",
	.tp_traverse = tag_traverse,
	.tp_clear = tag_clear,
	.tp_weaklistoffset = offsetof(TimedAsyncGen, weaklist),
	.tp_methods = tag_methods,
};

PyObject *sp_timed_async_gen_new(RegionObject *region, PyObject *agen, int steps)
{
	TimedAsyncGen *g = PyObject_GC_New(TimedAsyncGen, &timed_async_gen_type);
	if (!g) {
		Py_DECREF(agen);
		return NULL;
	}
	g->agen = agen;
	g->region = (RegionObject *)Py_NewRef((PyObject *)region);
	g->weaklist = NULL;
	g->steps = steps;
	g->started = 0;
	PyObject_GC_Track(g);
	return (PyObject *)g;
}

PyMethodDef sp_generator_methods[] = {
	{"_hooked_steps", hooked_steps, METH_O, NULL},
	{NULL},
};

int sp_generator_bind(PyObject *mod)
{
	Py_XSETREF(ta.enter, PyObject_GetAttrString(mod, "_coroutine_enter"));
	Py_XSETREF(ta.exit, PyObject_GetAttrString(mod, "_coroutine_exit"));
	return ta.enter && ta.exit ? 0 : -1;
}

int sp_generator_init(void)
{
	if (PyType_Ready(&timed_gen_type) < 0 || PyType_Ready(&timed_coro_gen_type) < 0 ||
	    PyType_Ready(&hook_steps_type) < 0 || PyType_Ready(&timed_await_type) < 0 ||
	    PyType_Ready(&timed_async_gen_type) < 0)
		return -1;
	if (!tg.send && !(tg.send = PyUnicode_InternFromString("send")))
		return -1;
	if (!tg.throw && !(tg.throw = PyUnicode_InternFromString("throw")))
		return -1;
	if (!tg.close && !(tg.close = PyUnicode_InternFromString("close")))
		return -1;
	return 0;
}
