/* wrapper.c - the decorator wrapper of the built-in module: a decorated
 * function is a ProfiledFunction whose vectorcall pointer is the recording
 * call of the current mode (chosen once, at setup, by sp_wrappers_apply), so
 * a call checks nothing. What a call is depends on the function's kind,
 * read once from its code's flags when it is decorated: a decorated `async
 * def` function is timed from its coroutine's first step to its end
 * (_timed_coroutine of the Python layer, around _coroutine_enter and
 * _coroutine_exit of region_types.c); a generator function's generator has each resume
 * timed, an async generator function's each awaited step (generator.c);
 * creating either records nothing. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "sp_aggregate.h"
#include "sp_clock.h"
#include "sp_generator.h"
#include "sp_gpu.h"
#include "sp_spill.h"
#include "sp_lanes.h"
#include "sp_likwid.h"
#include "sp_linetrace.h"
#include "sp_memory.h"
#include "sp_mode.h"
#include "sp_nvtx.h"
#include "sp_recorder.h"
#include "sp_region.h"
#include "sp_tracer.h"
#include "sp_wrapper.h"

typedef struct ProfiledFunction {
	PyObject_HEAD
	vectorcallfunc vectorcall;
	PyObject *func;
	RegionObject *region;
	PyObject *dict;
	PyObject *weaklist;
	int recursive;                          /* profile(recursive=True) 1; recursive=False
						 * given -1 (wins over recursive_profile); 0 */
	int kind;                               /* KIND_*: what its calls return */
	struct ProfiledFunction *prev, *next;   /* all live wrap.list */
} ProfiledFunction;

/* The kinds of function, from their code's flags (function_kind). */
enum {
	KIND_PLAIN,
	KIND_CORO,          /* `async def`: a coroutine, timed until it ends */
	KIND_GEN,           /* a generator: each resume timed */
	KIND_ITER_CORO,     /* types.coroutine generator: as KIND_GEN, and awaitable */
	KIND_ASYNC_GEN,     /* an async generator: each awaited step timed */
};

static struct {
	ProfiledFunction *list;       /* every live wrapper, for the mode's changes */
	PyObject *timed_coroutine;    /* _timed_coroutine of the Python layer */
} wrap;

/* The recording call; `lanes` and `mem` are constants in each caller
 * below, so each compiles to its own branch-free path: lanes 1 the thread's
 * lane, 2 the task's (--track-async; found first, as it may run Python
 * code); mem: the call's allocations (sp_memory.h); gpu: the device
 * synchronised before the start and the end (sp_gpu.h). */
static PyObject *pf_call_threads(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);
static PyObject *pf_call_mem_threads(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static inline __attribute__((always_inline)) PyObject *pf_record(PyObject *self, PyObject *const *args, size_t nargsf,
				  PyObject *kwnames, int lanes, int mem, int gpu)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	RegionObject *r = pf->region;
	/* The lane first: a thread's first one runs Python, which may let
	 * another thread run; from the slot on, nothing does until the start
	 * is read, so starts are in slot order (the end of the run takes the
	 * first slot's as the earliest). */
	int32_t lane = lanes == 2 ? sp_async_lane() : lanes ? sp_current_lane() : 0;
	/* Another thread than lane 0's turns the lanes on (as in region_paths.c). */
	if (!lanes && sp_mode_check_thread())
		return (mem ? pf_call_mem_threads : pf_call_threads)(self, args, nargsf, kwnames);
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (i < 0)
		return PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	uint64_t gen = r->gen;
	if (lanes)
		r->buf.lanes[i] = lane;
	r->buf.ends[i] = SP_NO_TIME;
	int64_t mark0 = 0, alloc0 = 0;
	if (mem) {
		r->buf.values[i] = 0;   /* a call still open at the end */
		mark0 = sp_mem_open();
		alloc0 = sp_mem_allocated();
	}
	if (gpu)
		sp_gpu_sync();
	r->buf.starts[i] = sp_clock_ns();
	PyObject *res = PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	if (gpu)
		r->gpu_wait_ns += sp_gpu_wait();
	int64_t t = sp_clock_ns();
	/* The session may have been finalized during the call; then the slot
	 * is no longer ours. */
	if (r->gen == gen) {
		if (mem)
			sp_region_mem_close(r, (size_t)i, alloc0, mark0);
		sp_region_end(r, (size_t)i, t);
	} else if (mem) {
		sp_spill_late_end_mem(r, gen, i, t, &alloc0, mark0);   /* or handed over open (spill.c) */
	} else {
		sp_spill_late_end(r, gen, i, t);   /* or handed over open (spill.c) */
	}
	return res;
}

static PyObject *pf_call_timed(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 0, 0, 0);
}

static PyObject *pf_call_threads(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 1, 0, 0);
}

/* --memory, without and with lanes. */
static PyObject *pf_call_mem(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 0, 1, 0);
}

static PyObject *pf_call_mem_threads(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 1, 1, 0);
}

static PyObject *pf_call_mem_async(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 2, 1, 0);
}

static PyObject *pf_call_async(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 2, 0, 0);
}

/* The function's coroutine, held for _timed_coroutine until its first step
 * takes it (calling the holder): if that never comes (the call's coroutine
 * closed before it started, or dropped, which warns as never awaited by
 * itself, named as the function's), the function's coroutine is closed
 * with the holder, so that it does not warn too (plain python: no warning
 * after close(), one when dropped). */
typedef struct {
	PyObject_HEAD
	vectorcallfunc vectorcall;
	PyObject *coro;
} PendingCoro;

static PyObject *pending_take(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)args;
	(void)nargsf;
	(void)kwnames;
	PendingCoro *p = (PendingCoro *)self;
	PyObject *coro = p->coro;
	p->coro = NULL;
	return coro ? coro : Py_NewRef(Py_None);
}

static void pending_dealloc(PyObject *self)
{
	PendingCoro *p = (PendingCoro *)self;
	PyObject_GC_UnTrack(self);
	if (p->coro) {
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		PyObject *r = PyObject_CallMethod(p->coro, "close", NULL);
		if (!r)
			PyErr_WriteUnraisable(p->coro);
		Py_XDECREF(r);
		PyErr_Restore(type, value, tb);
		Py_CLEAR(p->coro);
	}
	PyObject_GC_Del(self);
}

static int pending_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((PendingCoro *)self)->coro);
	return 0;
}

static int pending_clear(PyObject *self)
{
	Py_CLEAR(((PendingCoro *)self)->coro);
	return 0;
}

static PyTypeObject PendingCoroType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._PendingCoroutine",
	.tp_basicsize = sizeof(PendingCoro),
	.tp_dealloc = pending_dealloc,
	.tp_vectorcall_offset = offsetof(PendingCoro, vectorcall),
	.tp_call = PyVectorcall_Call,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
	.tp_doc = "A decorated coroutine function's coroutine until its timed run takes it.",
	.tp_traverse = pending_traverse,
	.tp_clear = pending_clear,
};

/* An `async def` function: its call only creates the coroutine, so the
 * region is timed by _timed_coroutine (the Python layer), a coroutine that
 * awaits this one between _coroutine_enter and _coroutine_exit below. */
static PyObject *pf_call_coro(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	PyObject *coro = PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	if (coro && sp_mode.lines)
		coro = sp_linetrace_wrap_result(coro);
	if (!coro || !Py_TYPE(coro)->tp_as_async || !Py_TYPE(coro)->tp_as_async->am_await)
		return coro;
	PendingCoro *pending = PyObject_GC_New(PendingCoro, &PendingCoroType);
	if (!pending) {
		Py_DECREF(coro);
		return NULL;
	}
	pending->vectorcall = pending_take;
	pending->coro = Py_NewRef(coro);
	PyObject_GC_Track(pending);
	PyObject *argv[3] = {(PyObject *)pf->region, (PyObject *)pending, sp_mode_hooked(pf->recursive) ? Py_True : Py_False};
	PyObject *res = PyObject_Vectorcall(wrap.timed_coroutine, argv, 3, NULL);
	Py_DECREF(pending);
	/* Named as the function's coroutine (never-awaited warnings, task lanes). */
	PyObject *name = res ? PyObject_GetAttrString(coro, "__name__") : NULL;
	PyObject *qual = name ? PyObject_GetAttrString(coro, "__qualname__") : NULL;
	if (!qual || PyObject_SetAttrString(res, "__name__", name) != 0 ||
	    PyObject_SetAttrString(res, "__qualname__", qual) != 0)
		PyErr_Clear();
	Py_XDECREF(qual);
	Py_XDECREF(name);
	Py_DECREF(coro);
	return res;
}

/* A generator function: the call only creates the generator, which is
 * wrapped so that each of its resumes is a call (generator.c), in every
 * mode; line timing holds the line hook around each resume too. */
static PyObject *pf_call_gen(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	PyObject *gen = PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	if (gen && sp_mode.lines)
		gen = sp_linetrace_wrap_result(gen);
	if (!gen || !PyIter_Check(gen))
		return gen;
	return sp_timed_generator_new(pf->region, gen, pf->recursive, pf->kind == KIND_ITER_CORO);
}

/* An async generator function: each awaited step of its generator is a
 * call, as a coroutine's run is (generator.c). */
static PyObject *pf_call_async_gen(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	PyObject *agen = PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	if (!agen || !PyAsyncGen_CheckExact(agen))
		return agen;
	/* How its steps run: 0 as they are, 1 under the --recursive hook, 2
	 * with their lines timed. */
	return sp_timed_async_gen_new(pf->region, agen, sp_mode_hooked(pf->recursive) ? 1 : sp_mode.lines ? 2 : 0);
}

/* Aggregation mode: the call's start stays on the C stack; only the
 * thread's current node changes while it runs. */
static PyObject *pf_call_agg(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	RegionObject *r = ((ProfiledFunction *)self)->region;
	struct sp_agg_stack *s = &sp_agg_stack;
	if (__builtin_expect(s->cap == 0, 0) && sp_agg_grow() != 0)
		return NULL;
	int32_t parent = s->cur;
	int32_t node = sp_agg_node_of(r, parent);
	if (__builtin_expect(node < 0, 0))
		return NULL;
	uint64_t gen = r->gen;
	s->cur = node;
	int64_t start = sp_clock_ns();
	PyObject *res = PyObject_Vectorcall(((ProfiledFunction *)self)->func, args, nargsf, kwnames);
	int64_t t = sp_clock_ns();
	/* A reset during the call (finalize) made node meaningless. */
	if (__builtin_expect(r->gen == gen, 1)) {
		s->cur = parent;
		sp_agg_count(r, node, start, t);
	}
	return res;
}

static PyObject *pf_call_disabled(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	if (__builtin_expect(sp_mode.finished, 0))
		sp_mode_used_after_finalize_slow(((ProfiledFunction *)self)->region->name);
	return PyObject_Vectorcall(((ProfiledFunction *)self)->func, args, nargsf, kwnames);
}

/* profile(recursive=True): the --recursive hook records every call made
 * under this one, in this thread. */
static PyObject *pf_call_recursive(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	int started = sp_tracer_start_call();
	if (started < 0)
		return NULL;
	PyObject *res = sp_mode.aggregate ? pf_call_agg(self, args, nargsf, kwnames)
		: sp_mode.memory ? pf_record(self, args, nargsf, kwnames, sp_mode.threads, 1, 0)
		: pf_record(self, args, nargsf, kwnames, sp_mode.threads, 0, 0);
	if (started)
		sp_tracer_stop_thread();
	return res;
}

/* --line-profile: the function's lines are timed while it runs. */
static PyObject *pf_call_lines(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	if (sp_linetrace_hold() != 0)
		return NULL;
	PyObject *res = pf_record(self, args, nargsf, kwnames, sp_mode.track_async ? 2 : sp_mode.threads, 0, 0);
	sp_linetrace_release();
	return sp_linetrace_wrap_result(res);
}

/* --likwid: the call is also a LIKWID marker region (sp_likwid.h). */
static PyObject *pf_call_likwid(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	RegionObject *r = ((ProfiledFunction *)self)->region;
	const char *tag = PyUnicode_AsUTF8(r->name);
	if (!tag)
		return NULL;
	sp_likwid_enter(r->likwid_id, tag);
	PyObject *res = pf_record(self, args, nargsf, kwnames, sp_mode.threads, 0, 0);
	sp_likwid_leave(r->likwid_id, tag);
	return res;
}

/* --nvtx: the call is also an NVTX range (sp_nvtx.h) around its recorded
 * interval: pushed and popped on the thread, or with --track-async (lanes
 * 2) started and ended by id (a task's calls do not nest on its thread);
 * lanes a constant in each caller, as in pf_record. */
static inline __attribute__((always_inline)) PyObject *pf_nvtx(PyObject *self, PyObject *const *args,
								 size_t nargsf, PyObject *kwnames, int lanes)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	PyObject *res;
	if (lanes == 2) {
		uint64_t range = sp_nvtx_start(pf->region->nvtx_name);
		res = pf_record(self, args, nargsf, kwnames, 2, 0, 0);
		sp_nvtx_end(range);
	} else {
		unsigned epoch = sp_nvtx_push(pf->region->nvtx_name);
		res = pf_record(self, args, nargsf, kwnames, lanes, 0, 0);
		sp_nvtx_pop_from(epoch);
	}
	return res;
}

static PyObject *pf_call_nvtx_timed(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_nvtx(self, args, nargsf, kwnames, 0);
}

static PyObject *pf_call_nvtx_threads(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_nvtx(self, args, nargsf, kwnames, 1);
}

static PyObject *pf_call_nvtx_async(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_nvtx(self, args, nargsf, kwnames, 2);
}

/* profile(recursive=True) or --recursive: the hook records the calls made
 * inside, each a range of its own. */
static PyObject *pf_call_nvtx(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	int started = sp_tracer_start_call();
	if (started < 0)
		return NULL;
	PyObject *res = sp_mode.track_async ? pf_nvtx(self, args, nargsf, kwnames, 2)
		: sp_mode.threads ? pf_nvtx(self, args, nargsf, kwnames, 1)
		: pf_nvtx(self, args, nargsf, kwnames, 0);
	if (started)
		sp_tracer_stop_thread();
	return res;
}

/* --gpu: the device synchronised around the call (sp_gpu.h); with --nvtx
 * its range too. */
static PyObject *pf_call_gpu(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	int nvtx = sp_mode.nvtx;
	if (!sp_mode.threads)
		sp_mode_check_thread();   /* a thread other than lane 0's turns them on */
	unsigned epoch = nvtx ? sp_nvtx_push(pf->region->nvtx_name) : 0;
	PyObject *res = sp_mode.threads ? pf_record(self, args, nargsf, kwnames, 1, 0, 1)
		: pf_record(self, args, nargsf, kwnames, 0, 0, 1);
	if (nvtx)
		sp_nvtx_pop_from(epoch);
	return res;
}

static vectorcallfunc pf_choose_call(const ProfiledFunction *pf)
{
	if (sp_mode.disabled)
		return pf_call_disabled;
	switch (pf->kind) {
	case KIND_CORO:
		return pf_call_coro;
	case KIND_GEN:
	case KIND_ITER_CORO:
		return pf_call_gen;
	case KIND_ASYNC_GEN:
		return pf_call_async_gen;
	}
	if (sp_mode.likwid)
		return pf_call_likwid;
	if (sp_mode.gpu)
		return pf_call_gpu;
	if (sp_mode.nvtx && sp_mode_hooked(pf->recursive))
		return pf_call_nvtx;
	if (sp_mode.nvtx)
		return sp_mode.track_async ? pf_call_nvtx_async
			: sp_mode.threads ? pf_call_nvtx_threads : pf_call_nvtx_timed;
	if (sp_mode_hooked(pf->recursive))
		return pf_call_recursive;
	if (sp_mode.lines)
		return pf_call_lines;
	if (sp_mode.aggregate)
		return pf_call_agg;
	if (sp_mode.track_async)
		return sp_mode.memory ? pf_call_mem_async : pf_call_async;
	if (sp_mode.memory)
		return sp_mode.threads ? pf_call_mem_threads : pf_call_mem;
	return sp_mode.threads ? pf_call_threads : pf_call_timed;
}

/* What calling func gives (KIND_*), once, when it is decorated: from the
 * flags of the code of a function or method, the kind of a wrapper; other
 * callables (partial objects, ...) as inspect sees them. */
static int function_kind(PyObject *func)
{
	PyObject *f = PyMethod_Check(func) ? PyMethod_GET_FUNCTION(func) : func;
	if (PyFunction_Check(f)) {
		int flags = ((PyCodeObject *)PyFunction_GET_CODE(f))->co_flags;
		return flags & CO_COROUTINE ? KIND_CORO
			: flags & CO_ASYNC_GENERATOR ? KIND_ASYNC_GEN
			: flags & CO_ITERABLE_COROUTINE ? KIND_ITER_CORO
			: flags & CO_GENERATOR ? KIND_GEN : KIND_PLAIN;
	}
	if (Py_TYPE(f) == &sp_ProfiledFunctionType)
		return ((ProfiledFunction *)f)->kind;
	if (PyCFunction_Check(f) || PyType_Check(f))
		return KIND_PLAIN;
	static const struct { const char *test; int kind; } tests[] = {
		{"iscoroutinefunction", KIND_CORO},
		{"isasyncgenfunction", KIND_ASYNC_GEN},
		{"isgeneratorfunction", KIND_GEN},
	};
	int kind = KIND_PLAIN;
	PyObject *inspect = PyImport_ImportModule("inspect");
	for (size_t i = 0; inspect && kind == KIND_PLAIN && i < sizeof tests / sizeof tests[0]; i++) {
		PyObject *res = PyObject_CallMethod(inspect, tests[i].test, "O", func);
		if (res && PyObject_IsTrue(res) > 0)
			kind = tests[i].kind;
		Py_XDECREF(res);
	}
	Py_XDECREF(inspect);
	PyErr_Clear();
	return kind;
}

int sp_wrapper_takes(PyObject *func)
{
	return PyCallable_Check(func) || PyObject_TypeCheck(func, &PyClassMethod_Type) ||
	       PyObject_TypeCheck(func, &PyStaticMethod_Type);
}

PyObject *sp_wrapper_decorate(RegionObject *region, PyObject *func, int recursive)
{
	int cm = PyObject_TypeCheck(func, &PyClassMethod_Type);
	if (cm || PyObject_TypeCheck(func, &PyStaticMethod_Type)) {
		PyObject *inner = PyObject_GetAttrString(func, "__func__");
		PyObject *w = inner ? sp_wrapper_decorate(region, inner, recursive) : NULL;
		PyObject *res = w ? (cm ? PyClassMethod_New(w) : PyStaticMethod_New(w)) : NULL;
		Py_XDECREF(w);
		Py_XDECREF(inner);
		return res;
	}
	if (!PyCallable_Check(func)) {
		PyErr_Format(PyExc_TypeError, "a region decorates a callable, not %.100s", Py_TYPE(func)->tp_name);
		return NULL;
	}
	return sp_wrapper_new(region, func, recursive);
}

/* Line timing on and a profile(recursive=True) function: it records its
 * callees, its lines are not timed (the hook's cost in every callee would
 * be in them). Said once. */
static void lines_not_timed(RegionObject *region)
{
	static int said;
	if (said)
		return;
	said = 1;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PySys_FormatStderr("scope-profiler: warning: line timing: the lines of %R are not timed: "
			   "it is profile(recursive=True), which records every call under it\n", region->name);
	PyErr_Restore(type, value, tb);
}

PyObject *sp_wrapper_new(RegionObject *region, PyObject *func, int recursive)
{
	if (sp_mode.lines && recursive <= 0 && sp_linetrace_choose(func, region->name) != 0)
		return NULL;
	if (sp_mode.lines && recursive > 0)
		lines_not_timed(region);
	int kind = function_kind(func);
	ProfiledFunction *pf = PyObject_GC_New(ProfiledFunction, &sp_ProfiledFunctionType);
	if (!pf)
		return NULL;
	pf->recursive = recursive;
	pf->kind = kind;
	pf->vectorcall = pf_choose_call(pf);
	sp_tracer_mark_explicit(func);
	pf->func = Py_NewRef(func);
	pf->region = (RegionObject *)Py_NewRef((PyObject *)region);
	pf->dict = NULL;
	pf->weaklist = NULL;
	pf->prev = NULL;
	pf->next = wrap.list;
	if (wrap.list)
		wrap.list->prev = pf;
	wrap.list = pf;
	PyObject_GC_Track(pf);
	return (PyObject *)pf;
}

static int pf_traverse(PyObject *self, visitproc visit, void *arg)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	Py_VISIT(pf->func);
	Py_VISIT(pf->dict);
	return 0;
}

static int pf_clear(PyObject *self)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	Py_CLEAR(pf->func);
	Py_CLEAR(pf->dict);
	return 0;
}

static void pf_dealloc(PyObject *self)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	PyObject_GC_UnTrack(self);
	if (pf->weaklist)
		PyObject_ClearWeakRefs(self);
	if (pf->prev)
		pf->prev->next = pf->next;
	else if (wrap.list == pf)
		wrap.list = pf->next;
	if (pf->next)
		pf->next->prev = pf->prev;
	pf_clear(self);
	Py_CLEAR(pf->region);
	PyObject_GC_Del(self);
}

static PyObject *pf_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
	if (obj == NULL || obj == Py_None)
		return Py_NewRef(self);
	return PyMethod_New(self, obj);
}

/* Attributes the wrapper does not have (__code__, __defaults__, ...) are
 * the wrapped function's. */
static PyObject *pf_getattro(PyObject *self, PyObject *name)
{
	PyObject *v = PyObject_GenericGetAttr(self, name);
	if (v || !PyErr_ExceptionMatches(PyExc_AttributeError))
		return v;
	PyErr_Clear();
	return PyObject_GetAttr(((ProfiledFunction *)self)->func, name);
}

static PyObject *pf_repr(PyObject *self)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	return PyUnicode_FromFormat("<profiled %R in region %R>", pf->func, pf->region->name);
}

static PyObject *pf_get_wrapped(PyObject *self, void *c)
{
	return Py_NewRef(((ProfiledFunction *)self)->func);
}

static PyObject *pf_get_region(PyObject *self, void *c)
{
	return Py_NewRef((PyObject *)((ProfiledFunction *)self)->region);
}

/* __name__, __qualname__, __doc__, __module__: the function's, unless set
 * on the wrapper (functools.wraps-style). */
static PyObject *pf_get_forwarded(PyObject *self, void *c)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	if (pf->dict) {
		PyObject *v = PyDict_GetItemString(pf->dict, (const char *)c);
		if (v)
			return Py_NewRef(v);
	}
	return PyObject_GetAttrString(pf->func, (const char *)c);
}

static int pf_set_forwarded(PyObject *self, PyObject *value, void *c)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	if (!pf->dict && !(pf->dict = PyDict_New()))
		return -1;
	if (value)
		return PyDict_SetItemString(pf->dict, (const char *)c, value);
	return PyDict_DelItemString(pf->dict, (const char *)c);
}

/* Pickled by reference, like the function it wraps: its module and
 * qualified name (multiprocessing sends decorated functions this way). */
static PyObject *pf_reduce(PyObject *self, PyObject *unused)
{
	return pf_get_forwarded(self, "__qualname__");
}

static PyMethodDef pf_methods[] = {
	{"__reduce__", pf_reduce, METH_NOARGS, NULL},
	{NULL},
};

static PyGetSetDef pf_getset[] = {
	{"__wrapped__", pf_get_wrapped, NULL, "the wrapped function", NULL},
	{"region", pf_get_region, NULL, "the region this function records into", NULL},
	{"__name__", pf_get_forwarded, pf_set_forwarded, NULL, "__name__"},
	{"__qualname__", pf_get_forwarded, pf_set_forwarded, NULL, "__qualname__"},
	{"__doc__", pf_get_forwarded, pf_set_forwarded, NULL, "__doc__"},
	{"__module__", pf_get_forwarded, pf_set_forwarded, NULL, "__module__"},
	{"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
	{NULL},
};

PyTypeObject sp_ProfiledFunctionType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler.ProfiledFunction",
	.tp_basicsize = sizeof(ProfiledFunction),
	.tp_dealloc = pf_dealloc,
	.tp_vectorcall_offset = offsetof(ProfiledFunction, vectorcall),
	.tp_repr = pf_repr,
	.tp_call = PyVectorcall_Call,
	.tp_getattro = pf_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
		    Py_TPFLAGS_METHOD_DESCRIPTOR,
	.tp_doc = "A function whose calls are recorded in a region.",
	.tp_traverse = pf_traverse,
	.tp_clear = pf_clear,
	.tp_weaklistoffset = offsetof(ProfiledFunction, weaklist),
	.tp_methods = pf_methods,
	.tp_getset = pf_getset,
	.tp_descr_get = pf_descr_get,
	.tp_dictoffset = offsetof(ProfiledFunction, dict),
};

/* ------------------------------------------------------------------ */
/* The mode's changes, made by the session                             */

int sp_wrappers_apply(void)
{
	for (ProfiledFunction *pf = wrap.list; pf; pf = pf->next) {
		if (sp_mode.lines && pf->recursive <= 0 && sp_linetrace_choose(pf->func, pf->region->name) != 0)
			return -1;
		if (sp_mode.lines && pf->recursive > 0)
			lines_not_timed(pf->region);
		pf->vectorcall = pf_choose_call(pf);
	}
	return 0;
}

void sp_wrappers_choose(void)
{
	for (ProfiledFunction *pf = wrap.list; pf; pf = pf->next)
		pf->vectorcall = pf_choose_call(pf);
}

int sp_wrappers_recursive(void)
{
	for (ProfiledFunction *pf = wrap.list; pf; pf = pf->next)
		if (pf->recursive > 0)
			return 1;
	return 0;
}

void sp_wrappers_freeze(void)
{
	for (ProfiledFunction *pf = wrap.list; pf; pf = pf->next)
		pf->vectorcall = pf_call_disabled;
}

int sp_wrapper_init(void)
{
	if (PyType_Ready(&sp_ProfiledFunctionType) < 0 || PyType_Ready(&PendingCoroType) < 0)
		return -1;
	return sp_generator_init();
}

/* Decorated `async def` functions are timed through _timed_coroutine
 * (pf_call_coro), a coroutine of the Python layer (so that theirs is one
 * for inspect.iscoroutine, as under the pure-Python package); async
 * generator functions' generators through generator.c, around the
 * module's _coroutine_enter and _coroutine_exit. */
int sp_wrapper_bind(PyObject *mod)
{
	Py_XSETREF(wrap.timed_coroutine, PyObject_GetAttrString(mod, "_timed_coroutine"));
	return wrap.timed_coroutine && sp_generator_bind(mod) == 0 ? 0 : -1;
}

PyObject *sp_wrapper_function(PyObject *obj)
{
	return Py_IS_TYPE(obj, &sp_ProfiledFunctionType) ? ((ProfiledFunction *)obj)->func : NULL;
}
