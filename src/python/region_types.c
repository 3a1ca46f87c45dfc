/* region_types.c - the region classes of the built-in module, one per
 * recording mode (TimeOnly, Threads, Async, Memory*, Lines, Likwid,
 * Aggregate, Disabled), each with its own __enter__ and __exit__
 * (region_paths.c) so that they check nothing; the mode's changes switch
 * every region's class (sp_region_types_apply). Also the module functions
 * over regions: region(), get_region(), the decorator form region(func),
 * _profile_recursive, and the timing of a decorated coroutine
 * (_coroutine_enter, _coroutine_exit). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "sp_aggregate.h"
#include "sp_clock.h"
#include "sp_lanes.h"
#include "sp_linestats.h"
#include "sp_linetrace.h"
#include "sp_gpu.h"
#include "sp_mode.h"
#include "sp_nvtx.h"
#include "sp_pytext.h"
#include "sp_recorder.h"
#include "sp_region.h"
#include "sp_region_paths.h"
#include "sp_region_types.h"
#include "sp_spill.h"
#include "sp_wrapper.h"

static PyObject *region_repr(PyObject *self)
{
	RegionObject *r = (RegionObject *)self;
	return PyUnicode_FromFormat("<%s %R: %zu calls>", Py_TYPE(self)->tp_name, r->name, r->buf.n);
}

static void region_dealloc(PyObject *self)
{
	RegionObject *r = (RegionObject *)self;
	Py_XDECREF(r->name);
	sp_buf_free(&r->buf);
	free(r->late);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *region_get_name(PyObject *self, void *c)
{
	return Py_NewRef(((RegionObject *)self)->name);
}

static PyObject *region_get_num_calls(PyObject *self, void *c)
{
	RegionObject *r = (RegionObject *)self;
	if (r->agg.node >= 0)      /* it has counted calls in aggregation mode */
		sp_agg_sum();
	return PyLong_FromSize_t(r->buf.n + r->streamed + (size_t)r->agg.count + r->kept_calls);
}

static PyObject *region_get_capacity(PyObject *self, void *c)
{
	return PyLong_FromSize_t(((RegionObject *)self)->buf.cap);
}

static PyObject *region_get_dropped(PyObject *self, void *c)
{
	return PyLong_FromSize_t(((RegionObject *)self)->buf.dropped);
}

/* A numpy int64 array built from n int64 values (a copy). */
static PyObject *int64_numpy(const int64_t *v, size_t n)
{
	PyObject *np = PyImport_ImportModule("numpy");
	if (!np)
		return NULL;
	PyObject *bytes = PyBytes_FromStringAndSize((const char *)v, (Py_ssize_t)(n * sizeof *v));
	PyObject *arr = NULL;
	if (bytes) {
		PyObject *tmp = PyObject_CallMethod(np, "frombuffer", "Os", bytes, "int64");
		if (tmp) {
			arr = PyObject_CallMethod(tmp, "copy", NULL);
			Py_DECREF(tmp);
		}
	}
	Py_XDECREF(bytes);
	Py_DECREF(np);
	return arr;
}

/* Durations in ns of the completed calls, as a numpy int64 array. */
static PyObject *region_get_durations_numpy(PyObject *self, PyObject *unused)
{
	RegionObject *r = (RegionObject *)self;
	int64_t *d = PyMem_Malloc((r->buf.n ? r->buf.n : 1) * sizeof *d);
	if (!d)
		return PyErr_NoMemory();
	size_t k = 0;
	for (size_t i = 0; i < r->buf.n; i++)
		if (r->buf.ends[i] != SP_NO_TIME)
			d[k++] = r->buf.ends[i] - r->buf.starts[i];
	PyObject *arr = int64_numpy(d, k);
	PyMem_Free(d);
	return arr;
}

static PyObject *region_timestamps_numpy(PyObject *self, PyObject *unused, int ends)
{
	RegionObject *r = (RegionObject *)self;
	return int64_numpy(ends ? r->buf.ends : r->buf.starts, r->buf.n);
}

static PyObject *region_get_start_times_numpy(PyObject *self, PyObject *unused)
{
	return region_timestamps_numpy(self, unused, 0);
}

static PyObject *region_get_end_times_numpy(PyObject *self, PyObject *unused)
{
	return region_timestamps_numpy(self, unused, 1);
}

static PyGetSetDef region_getset[] = {
	{"name", region_get_name, NULL, "the region's name", NULL},
	{"num_calls", region_get_num_calls, NULL, "calls recorded in this session (after finalize(): "
	 "in the session it ended, until the next setup())", NULL},
	{"capacity", region_get_capacity, NULL, "the events it holds now without growing (from a few, doubling when full)", NULL},
	{"dropped", region_get_dropped, NULL, "calls lost because memory ran out", NULL},
	{NULL},
};

/* region(func): the decorator form. */
static PyObject *region_call_timed(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *func;
	if (kw && PyDict_GET_SIZE(kw)) {
		PyErr_SetString(PyExc_TypeError, "a region decorates one function: region(func)");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "O:region", &func))
		return NULL;
	return sp_wrapper_decorate((RegionObject *)self, func, 0);
}

/* Disabled: the function itself. With no session (idle), a wrapper that
 * calls through until setup() turns it on (decorating is not recording:
 * this check is no cost per call). */
static PyObject *region_call_disabled(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *func;
	if (!PyArg_ParseTuple(args, "O:region", &func))
		return NULL;
	if (sp_mode.idle && sp_wrapper_takes(func))
		return sp_wrapper_decorate((RegionObject *)self, func, 0);
	return Py_NewRef(func);
}

#define REGION_COMMON_METHODS \
	{"get_durations_numpy", region_get_durations_numpy, METH_NOARGS, \
	 "Durations in ns of the completed calls (numpy int64 array)."}, \
	{"get_start_times_numpy", region_get_start_times_numpy, METH_NOARGS, \
	 "Start timestamps in ns (numpy int64 array)."}, \
	{"get_end_times_numpy", region_get_end_times_numpy, METH_NOARGS, \
	 "End timestamps in ns (numpy int64 array; INT64_MIN while open)."}, \
	{"get_stats", sp_region_get_stats, METH_NOARGS, \
	 "Line timing: the region's timed lines so far (timings, unit)."}, \
	{"print_stats", (PyCFunction)(void (*)(void))sp_region_print_stats, METH_VARARGS | METH_KEYWORDS, \
	 "Line timing: prints the region's line tables (to stream, default sys.stdout)."}

/* The region classes differ only in __enter__/__exit__ and the decorator
 * call; they share the layout and this base, so setup() can switch an
 * object's class. The base has no methods and makes no objects (retire_exits
 * below says what it is for). */
PyTypeObject sp_RegionBaseType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._ProfileRegionBase",
	.tp_basicsize = sizeof(RegionObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "The common base of the region classes.",
};

#define REGION_CLASS(var, methods_var, pyname, enter, exit, call, doc) \
	static PyMethodDef methods_var[] = { \
		{"__enter__", enter, METH_NOARGS, NULL}, \
		{"__exit__", (PyCFunction)(void (*)(void))exit, METH_FASTCALL, NULL}, \
		REGION_COMMON_METHODS, \
		{NULL}, \
	}; \
	PyTypeObject var = { \
		PyVarObject_HEAD_INIT(NULL, 0) \
		.tp_name = "scope_profiler." pyname, \
		.tp_basicsize = sizeof(RegionObject), \
		.tp_dealloc = region_dealloc, \
		.tp_repr = region_repr, \
		.tp_call = call, \
		.tp_flags = Py_TPFLAGS_DEFAULT, \
		.tp_base = &sp_RegionBaseType, \
		.tp_doc = doc, \
		.tp_methods = methods_var, \
		.tp_getset = region_getset, \
	};

REGION_CLASS(sp_TimeOnlyRegionType, timed_methods, "TimeOnlyProfileRegion", sp_enter_timed,
	     sp_exit_timed, region_call_timed,
	     "A region that records the start and end of every call.")
REGION_CLASS(sp_ThreadsRegionType, threads_methods, "ThreadsProfileRegion", sp_enter_threads,
	     sp_exit_timed, region_call_timed,
	     "A region that records every call with the lane of its thread.")
REGION_CLASS(sp_MemoryRegionType, mem_methods, "MemoryProfileRegion", sp_enter_mem,
	     sp_exit_mem, region_call_timed,
	     "A region that records every call with the bytes allocated during it.")
REGION_CLASS(sp_MemoryThreadsRegionType, mem_threads_methods, "MemoryThreadsProfileRegion",
	     sp_enter_mem_threads, sp_exit_mem, region_call_timed,
	     "A region that records every call with its thread's lane and the bytes allocated during it.")
REGION_CLASS(sp_MemoryAsyncRegionType, mem_async_methods, "MemoryAsyncProfileRegion",
	     sp_enter_async_mem, sp_exit_async_mem, region_call_timed,
	     "A region that records every call with its task's lane and the bytes allocated during it.")
REGION_CLASS(sp_AsyncRegionType, async_methods, "AsyncProfileRegion", sp_enter_async,
	     sp_exit_async, region_call_timed,
	     "A region that records every call with the lane of its asyncio task (or thread).")
REGION_CLASS(sp_LinesRegionType, lines_methods, "LineProfileRegion", sp_enter_lines,
	     sp_exit_lines, region_call_timed,
	     "A region whose functions' lines are timed while it runs.")
REGION_CLASS(sp_AggregateRegionType, agg_methods, "AggregateProfileRegion", sp_enter_agg,
	     sp_exit_agg, region_call_timed,
	     "A region that keeps only its number of calls, total, min, max and self time.")
REGION_CLASS(sp_LikwidRegionType, likwid_methods, "LikwidProfileRegion", sp_enter_likwid,
	     sp_exit_likwid, region_call_timed,
	     "A region that records every call and makes it a LIKWID marker region.")
REGION_CLASS(sp_NvtxRegionType, nvtx_methods, "NvtxProfileRegion", sp_enter_nvtx,
	     sp_exit_nvtx, region_call_timed,
	     "A region that records every call and makes it an NVTX range of its thread.")
REGION_CLASS(sp_NvtxAsyncRegionType, nvtx_async_methods, "NvtxAsyncProfileRegion", sp_enter_async_nvtx,
	     sp_exit_async_nvtx, region_call_timed,
	     "A region that records every call with its task's lane and makes it an NVTX start/end range.")
REGION_CLASS(sp_GpuRegionType, gpu_methods, "GpuProfileRegion", sp_enter_gpu,
	     sp_exit_gpu, region_call_timed,
	     "A region whose calls synchronise the CUDA device at their entry and exit.")
REGION_CLASS(sp_DisabledRegionType, disabled_methods, "DisabledProfileRegion", sp_enter_disabled,
	     sp_exit_disabled, region_call_disabled,
	     "A region that records nothing; as a decorator it returns the function itself.")

static PyTypeObject *const region_classes[] = {
	&sp_TimeOnlyRegionType, &sp_DisabledRegionType, &sp_ThreadsRegionType,
	&sp_LinesRegionType, &sp_AggregateRegionType, &sp_AsyncRegionType,
	&sp_MemoryRegionType, &sp_MemoryThreadsRegionType, &sp_MemoryAsyncRegionType,
	&sp_LikwidRegionType, &sp_NvtxRegionType, &sp_NvtxAsyncRegionType, &sp_GpuRegionType,
};

/* A `with` block looks __exit__ up when it enters and calls it when it
 * leaves, and the region's class may be switched in between (setup() or
 * finalize() inside the block, or the end of the run while another thread
 * is inside one). Up to Python 3.13 the block keeps a bound method, which
 * calls the old class's function whatever the object's class is now. From
 * 3.14 it keeps the class's unbound method descriptor and the object, and
 * the call checks that the object is an instance of the descriptor's class:
 * a TypeError after a switch. So before a switch every class's __exit__
 * descriptor is retired: it becomes a method of the common base (the same
 * function, accepted on any region; the blocks holding it leave as on 3.13)
 * and the class gets a fresh one for the blocks entered afterwards. The
 * class's own descriptor is kept otherwise because the interpreter's fast
 * path for a method call needs the object's class to be exactly the
 * descriptor's (through the base, a `with` costs ~170 instructions more). */
#if PY_VERSION_HEX >= 0x030E0000
static void retire_exits(void)
{
	for (size_t i = 0; i < sizeof region_classes / sizeof region_classes[0]; i++) {
		PyTypeObject *t = region_classes[i];
		PyObject *old = PyDict_GetItemString(t->tp_dict, "__exit__");
		if (!old || !PyObject_TypeCheck(old, &PyMethodDescr_Type) || PyDescr_TYPE(old) != t)
			continue;
		Py_INCREF(old);
		PyMethodDef *m = t->tp_methods;
		while (strcmp(m->ml_name, "__exit__") != 0)
			m++;
		PyObject *fresh = PyDescr_NewMethod(t, m);
		if (fresh && PyDict_SetItemString(t->tp_dict, "__exit__", fresh) == 0)
			PyType_Modified(t);
		else
			PyErr_Clear();   /* out of memory: the class keeps the retired one */
		Py_XDECREF(fresh);
		PyDescr_TYPE(old) = (PyTypeObject *)Py_NewRef(&sp_RegionBaseType);
		Py_DECREF(t);
		Py_DECREF(old);
	}
}
#else
static void retire_exits(void)
{
}
#endif

static PyObject *check_name(PyObject *name)
{
	if (!PyUnicode_Check(name)) {
		PyErr_Format(PyExc_TypeError, "a region name must be a str, not %.100s",
			     Py_TYPE(name)->tp_name);
		return NULL;
	}
	return name;
}

static PyTypeObject *class_of(const RegionObject *r);

/* region(name, functions=[...]): in line mode, the functions' lines are
 * timed while the region runs; otherwise the list is only checked. */
static int region_add_functions(RegionObject *r, PyObject *functions)
{
	PyObject *seq = PySequence_Fast(functions, "region(functions=...) takes a list of functions");
	if (!seq)
		return -1;
	int rc = 0;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && rc == 0; i++) {
		PyObject *f = PySequence_Fast_GET_ITEM(seq, i);
		if (!PyCallable_Check(f)) {
			PyErr_Format(PyExc_TypeError, "region(functions=...): %.100s is not callable",
				     Py_TYPE(f)->tp_name);
			rc = -1;
		} else if (sp_mode.lines) {
			/* a decorated function (or a method of one): the one it wraps */
			PyObject *inner = sp_wrapper_function(PyMethod_Check(f) ? PyMethod_GET_FUNCTION(f) : f);
			rc = sp_linetrace_choose(inner ? inner : f, r->name);
		}
	}
	Py_DECREF(seq);
	if (rc == 0 && sp_mode.lines && !sp_mode.disabled) {
		r->holds_functions = 1;
		if (Py_TYPE(r) != class_of(r)) {
			retire_exits();
			Py_SET_TYPE(r, class_of(r));
		}
	}
	return rc;
}

/* region(name, functions=None): the region called `name`, created on first
 * use with the class the current setup chose. */
static PyObject *mod_region(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *name = NULL;
	if (nargs == 1 && !kwnames) {
		name = args[0];
	} else {
		static const char *const kwlist[] = {"name", "functions", NULL};
		PyObject *functions = Py_None;
		Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
		PyObject *argv[2] = {NULL, NULL};
		if (nargs > 2) {
			PyErr_Format(PyExc_TypeError, "region() takes at most 2 arguments (%zd given)", nargs);
			return NULL;
		}
		for (Py_ssize_t i = 0; i < nargs; i++)
			argv[i] = args[i];
		for (Py_ssize_t i = 0; i < nkw; i++) {
			PyObject *k = PyTuple_GET_ITEM(kwnames, i);
			int slot = -1;
			for (int j = 0; kwlist[j]; j++)
				if (PyUnicode_CompareWithASCIIString(k, kwlist[j]) == 0)
					slot = j;
			/* The earlier releases' spelling: region(region_name=...). */
			if (PyUnicode_CompareWithASCIIString(k, "region_name") == 0)
				slot = 0;
			if (slot < 0 || argv[slot]) {
				PyErr_Format(PyExc_TypeError, "region() got an unexpected or repeated argument %R", k);
				return NULL;
			}
			argv[slot] = args[nargs + i];
		}
		name = argv[0];
		functions = argv[1] ? argv[1] : Py_None;
		if (!name) {
			PyErr_SetString(PyExc_TypeError, "region() missing required argument 'name'");
			return NULL;
		}
		if (functions != Py_None) {
			if (!check_name(name))
				return NULL;
			RegionObject *r = sp_region_lookup(name);
			if (!r || region_add_functions(r, functions) != 0)
				return NULL;
			return Py_NewRef((PyObject *)r);
		}
	}
	if (!check_name(name))
		return NULL;
	return Py_XNewRef((PyObject *)sp_region_lookup(name));
}

/* _profile_recursive(region, func, recursive=True): profile(name,
 * recursive=True)(func); with recursive False, profile(name,
 * recursive=False)(func), which no recursive_profile makes recursive. */
static PyObject *mod_profile_recursive(PyObject *m, PyObject *args)
{
	PyObject *region, *func;
	int recursive = 1;
	if (!PyArg_ParseTuple(args, "OO|p:_profile_recursive", &region, &func, &recursive))
		return NULL;
	if (Py_TYPE(region) == &sp_DisabledRegionType && !(sp_mode.idle && sp_wrapper_takes(func)))
		return Py_NewRef(func);
	if (!recursive) {
		if (!PyObject_TypeCheck(region, &sp_RegionBaseType) || !sp_wrapper_takes(func)) {
			PyErr_SetString(PyExc_TypeError, "_profile_recursive(region, callable, False)");
			return NULL;
		}
		return sp_wrapper_decorate((RegionObject *)region, func, -1);
	}
	if (sp_mode.likwid) {
		/* As run --likwid --recursive: the nested calls would be regions
		 * of no LIKWID marker (wrapper.c times only the outer call). */
		PyErr_SetString(PyExc_ValueError, "profile(recursive=True) cannot be combined with --likwid "
				"(use_likwid): LIKWID marker regions wrap the calls of explicit regions");
		return NULL;
	}
	if (sp_mode.gpu) {
		/* As run --gpu --recursive: every nested call would wait for the device. */
		PyErr_SetString(PyExc_ValueError, "profile(recursive=True) cannot be combined with --gpu "
				"(use_gpu): the device is synchronised around explicit regions' calls");
		return NULL;
	}
	if ((Py_TYPE(region) != &sp_TimeOnlyRegionType && Py_TYPE(region) != &sp_ThreadsRegionType &&
	     Py_TYPE(region) != &sp_DisabledRegionType && Py_TYPE(region) != &sp_AggregateRegionType &&
	     Py_TYPE(region) != &sp_AsyncRegionType && Py_TYPE(region) != &sp_MemoryRegionType &&
	     Py_TYPE(region) != &sp_MemoryThreadsRegionType && Py_TYPE(region) != &sp_MemoryAsyncRegionType &&
	     Py_TYPE(region) != &sp_NvtxRegionType && Py_TYPE(region) != &sp_NvtxAsyncRegionType) ||
	    !sp_wrapper_takes(func)) {
		PyErr_SetString(PyExc_TypeError, "_profile_recursive(region, callable)");
		return NULL;
	}
	return sp_wrapper_decorate((RegionObject *)region, func, 1);
}

static PyObject *mod_get_region(PyObject *m, PyObject *name)
{
	if (!check_name(name))
		return NULL;
	PyObject *r = PyDict_GetItemWithError(sp_registry, name);   /* by its own name */
	if (r)
		return Py_NewRef(r);
	if (!PyErr_Occurred())
		PyErr_Format(PyExc_KeyError, "no region named %R", name);
	return NULL;
}

/* _coroutine_enter(region) and _coroutine_exit(region, token): around the
 * awaited run of a decorated `async def` function (generator.c). The
 * token carries the call's slot, so calls of interleaved tasks never close
 * each other's. A region of another class (aggregation) is entered through
 * its own __enter__ (token True); None: nothing was entered. */
static PyObject *mod_coroutine_enter(PyObject *m, PyObject *region)
{
	PyTypeObject *type = Py_TYPE(region);
	if (type == &sp_DisabledRegionType)
		Py_RETURN_NONE;
	/* --likwid: timed without a marker region too (scope-profiler-run(1)):
	 * the calls of a thread's tasks interleave, LIKWID's regions nest. */
	/* --gpu: the device synchronised around the run too, its range by id
	 * with --nvtx (sp_enter_gpu's, by token). */
	int gpu = type == &sp_GpuRegionType;
	int nvtx = type == &sp_NvtxRegionType || type == &sp_NvtxAsyncRegionType || (gpu && sp_mode.nvtx);
	if (type != &sp_TimeOnlyRegionType && type != &sp_ThreadsRegionType && type != &sp_AsyncRegionType &&
	    type != &sp_LinesRegionType && type != &sp_LikwidRegionType && !nvtx && !gpu) {
		PyObject *res = PyObject_CallMethod(region, "__enter__", NULL);
		if (!res)
			return NULL;
		Py_DECREF(res);
		Py_RETURN_TRUE;
	}
	RegionObject *r = (RegionObject *)region;
	if (gpu)
		sp_gpu_sync();
	if (!r->buf.keep_lanes)
		sp_mode_check_thread();   /* a thread other than lane 0's turns them on */
	int32_t lane = !r->buf.keep_lanes ? 0 : sp_mode.track_async ? sp_async_lane() : sp_current_lane();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (i < 0)
		Py_RETURN_NONE;
	if (r->buf.lanes)
		r->buf.lanes[i] = lane;
	r->buf.ends[i] = SP_NO_TIME;
	/* --nvtx: the run's range is started by id, its calls interleaving
	 * with other tasks' on the thread (sp_nvtx.h); the id goes in the token. */
	unsigned long long range = nvtx ? sp_nvtx_start(r->nvtx_name) : 0;
	r->buf.starts[i] = sp_clock_ns();
	PyObject *token = nvtx ? Py_BuildValue("(nKK)", i, (unsigned long long)r->gen, range)
		: Py_BuildValue("(nK)", i, (unsigned long long)r->gen);
	if (!token) {   /* out of memory: the call is lost, not left open */
		sp_region_end(r, (size_t)i, r->buf.starts[i]);
		if (nvtx)
			sp_nvtx_end(range);
	}
	return token;
}

static PyObject *mod_coroutine_exit(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "_coroutine_exit(region, token)");
		return NULL;
	}
	PyObject *region = args[0], *token = args[1];
	/* --gpu: the device's work ends before the call does (sp_exit_gpu). */
	int64_t wait = PyTuple_Check(token) && Py_IS_TYPE(region, &sp_GpuRegionType) ? sp_gpu_wait() : 0;
	int64_t t = sp_clock_ns();
	if (token == Py_None)
		Py_RETURN_NONE;
	if (token == Py_True) {
		PyObject *res = PyObject_CallMethod(region, "__exit__", "OOO", Py_None, Py_None, Py_None);
		Py_XDECREF(res);
		return res ? Py_NewRef(Py_None) : NULL;
	}
	Py_ssize_t slot;
	unsigned long long gen, range = 0;
	if (!PyObject_TypeCheck(region, &sp_RegionBaseType) || !PyTuple_Check(token) ||
	    !PyArg_ParseTuple(token, "nK|K", &slot, &gen, &range)) {
		PyErr_Clear();
		PyErr_SetString(PyExc_TypeError, "_coroutine_exit(region, token)");
		return NULL;
	}
	RegionObject *r = (RegionObject *)region;
	r->gpu_wait_ns += wait;
	/* gen differs when the session was finalized meanwhile; a call ends
	 * once (a token given back twice must not move its end). */
	if (slot >= 0 && (size_t)slot < r->buf.n && r->gen == gen && r->buf.ends[slot] == SP_NO_TIME)
		sp_region_end(r, (size_t)slot, t);
	else if (slot >= 0 && r->gen != gen)
		sp_spill_late_end(r, gen, slot, t);   /* handed over open (spill.c) */
	if (PyTuple_GET_SIZE(token) == 3)
		sp_nvtx_end(range);
	Py_RETURN_NONE;
}

PyMethodDef sp_region_types_methods[] = {
	{"region", (PyCFunction)(void (*)(void))mod_region, METH_FASTCALL | METH_KEYWORDS,
	 "region(name, functions=None)\n--\n\nThe region called `name` (also region_name=, the "
	 "earlier spelling): use it as `with region(name):` or as a decorator."},
	{"get_region", mod_get_region, METH_O,
	 "get_region(name)\n--\n\nThe existing region called `name` (KeyError if none)."},
	{"_profile_recursive", mod_profile_recursive, METH_VARARGS, NULL},
	{"_coroutine_enter", mod_coroutine_enter, METH_O, NULL},
	{"_coroutine_exit", (PyCFunction)(void (*)(void))mod_coroutine_exit, METH_FASTCALL, NULL},
	{NULL},
};

/* ------------------------------------------------------------------ */
/* The mode's changes (mode.c drives them)                             */

/* The class that records as sp_mode says. */
static PyTypeObject *class_of_mode(void)
{
	return sp_mode.disabled ? &sp_DisabledRegionType
		: sp_mode.aggregate ? &sp_AggregateRegionType
		: sp_mode.gpu ? &sp_GpuRegionType
		: sp_mode.nvtx ? (sp_mode.track_async ? &sp_NvtxAsyncRegionType : &sp_NvtxRegionType)
		: sp_mode.track_async ? (sp_mode.memory ? &sp_MemoryAsyncRegionType : &sp_AsyncRegionType)
		: sp_mode.likwid ? &sp_LikwidRegionType
		: sp_mode.memory ? (sp_mode.threads ? &sp_MemoryThreadsRegionType : &sp_MemoryRegionType)
		: sp_mode.threads ? &sp_ThreadsRegionType : &sp_TimeOnlyRegionType;
}

/* r's class in the mode: a region holding functions (region(name,
 * functions=[...])) times their lines in line mode. */
static PyTypeObject *class_of(const RegionObject *r)
{
	return r->holds_functions && sp_mode.lines ? &sp_LinesRegionType : class_of_mode();
}

int sp_region_types_apply(void)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	sp_regions_set_class(class_of_mode());
	retire_exits();
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (sp_region_fit(r) != 0)
			return -1;
		Py_SET_TYPE(v, class_of(r));
	}
	return 0;
}

void sp_region_types_freeze(void)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	if (sp_mode.nvtx)
		sp_regions_nvtx_end_open();
	sp_regions_set_class(&sp_DisabledRegionType);
	retire_exits();
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		Py_SET_TYPE(v, &sp_DisabledRegionType);
		((RegionObject *)v)->gen++;
	}
}

void sp_regions_keep_counts(int keep)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	if (keep)
		sp_agg_sum();
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		r->kept_calls = keep ? r->buf.n + r->streamed + (size_t)r->agg.count : 0;
	}
}

int sp_region_types_init(void)
{
	if (PyType_Ready(&sp_RegionBaseType) < 0)
		return -1;
	for (size_t i = 0; i < sizeof region_classes / sizeof region_classes[0]; i++)
		if (PyType_Ready(region_classes[i]) < 0)
			return -1;
	/* Until the first setup(), time-only (the extension module: none). */
	sp_regions_set_class(&sp_TimeOnlyRegionType);
	return 0;
}
