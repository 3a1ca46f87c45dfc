/* regions.c - the region objects of the built-in module: `with region:`
 * and region(func), one class per recording mode (TimeOnly, Threads, Async,
 * Lines, Aggregate, Disabled), switched by the session at setup so that
 * __enter__/__exit__ check nothing; the registry of regions by name.
 * Lanes are in lanes.c, the decorator wrapper in wrapper.c. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_likwid.h"
#include "sp_linetrace.h"
#include "sp_memory.h"
#include "sp_pymodule.h"
#include "sp_pyregion.h"
#include "sp_pytext.h"
#include "sp_aggregate.h"
#include "sp_recorder.h"

struct sp_recmode sp_mode = {
	.region_type = &sp_TimeOnlyRegionType,
	.buffer_limit = SP_DEFAULT_BUFFER_LIMIT,
};

PyObject *sp_registry;                /* dict: name -> RegionObject, creation order */

/* The `with` blocks open in the calling thread, innermost last. Per thread,
 * so threads entering the same region at once each close their own call;
 * an exit closes the innermost open entry of its region (a generator may
 * exit a block that is not the innermost). */
static _Thread_local struct {
	struct sp_open_entry *v;
	struct sp_open_mem *m;          /* beside v, in the same allocation */
	size_t depth, cap;
} open_blocks;

static pthread_key_t open_blocks_key;   /* frees a thread's stack at its exit; made at module init */

static void open_blocks_free(void *v)
{
	free(v);
}

/* Twice the room: one allocation holds v[cap] and then m[cap]. */
static __attribute__((noinline, cold)) int open_blocks_grow(void)
{
	size_t cap = open_blocks.cap ? 2 * open_blocks.cap : 16;
	size_t each = sizeof open_blocks.v[0] + sizeof open_blocks.m[0];
	if (cap > SIZE_MAX / each)
		return -1;
	struct sp_open_entry *v = malloc(cap * each);
	if (!v)
		return -1;
	struct sp_open_mem *m = (struct sp_open_mem *)(v + cap);
	if (open_blocks.depth) {
		memcpy(v, open_blocks.v, open_blocks.depth * sizeof v[0]);
		memcpy(m, open_blocks.m, open_blocks.depth * sizeof m[0]);
	}
	free(open_blocks.v);
	pthread_setspecific(open_blocks_key, v);
	open_blocks.v = v;
	open_blocks.m = m;
	open_blocks.cap = cap;
	return 0;
}

static PyObject *region_enter_threads(PyObject *self, PyObject *unused);
static PyObject *region_enter_mem_threads(PyObject *self, PyObject *unused);

/* `with region:` entry; `lanes` and `mem` (the memory mode: the call's
 * allocations, sp_memory.h) are constants in each caller below, so each
 * compiles to its own branch-free path. */
static inline PyObject *region_enter(PyObject *self, int lanes, int mem)
{
	RegionObject *r = (RegionObject *)self;
	/* The lane first (as in pf_record): starts stay in slot order. */
	int32_t lane = lanes ? sp_current_lane() : 0;
	/* Another thread than lane 0's turns the lanes on, and this call is
	 * then recorded with its lane. */
	if (!lanes && sp_lanes_check())
		return mem ? region_enter_mem_threads(self, NULL) : region_enter_threads(self, NULL);
	if (open_blocks.depth == open_blocks.cap && open_blocks_grow() != 0)
		return PyErr_NoMemory();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	struct sp_open_entry *e = &open_blocks.v[open_blocks.depth++];
	*e = (struct sp_open_entry){r, i, r->gen};
	if (i >= 0) {
		if (lanes)
			r->buf.lanes[i] = lane;
		r->buf.ends[i] = SP_NO_TIME;
		if (mem) {
			r->buf.values[i] = 0;   /* a call still open at the end */
			struct sp_open_mem *em = &open_blocks.m[open_blocks.depth - 1];
			em->mark0 = sp_mem_open();
			em->alloc0 = sp_mem_allocated();
		}
		r->buf.starts[i] = sp_clock_ns();
	}
	return Py_NewRef(self);
}

static PyObject *region_enter_timed(PyObject *self, PyObject *unused)
{
	return region_enter(self, 0, 0);
}

/* --track-threads: also the lane of the calling thread. */
static PyObject *region_enter_threads(PyObject *self, PyObject *unused)
{
	return region_enter(self, 1, 0);
}

/* --memory, without and with lanes. */
static PyObject *region_enter_mem(PyObject *self, PyObject *unused)
{
	return region_enter(self, 0, 1);
}

static PyObject *region_enter_mem_threads(PyObject *self, PyObject *unused)
{
	return region_enter(self, 1, 1);
}

size_t sp_unmatched_exits;
RegionObject *sp_unmatched_region;

/* An exit with no entry in this thread: entered in another session (then
 * nothing of the region is open, and there is nothing to close) or in
 * another thread, whose call stays open until the end of the run. That is
 * counted, to be said at the end (sp_pyregion.h). A region's last calls
 * are searched for one still open, a bounded search on a rare path. */
static __attribute__((noinline, cold)) void note_unmatched_exit(RegionObject *r)
{
	size_t n = r->buf.n, lo = n > 4096 ? n - 4096 : 0;
	for (size_t i = n; i-- > lo;)
		if (r->buf.ends[i] == SP_NO_TIME) {
			if (!sp_unmatched_exits++)
				sp_unmatched_region = r;
			return;
		}
}

/* An exit whose entry is not the innermost: find it, close the gap. */
__attribute__((noinline)) void sp_region_exit_below(RegionObject *r, int64_t t)
{
	for (size_t k = open_blocks.depth; k-- > 0;) {
		struct sp_open_entry e = open_blocks.v[k];
		if (e.region != r)
			continue;
		struct sp_open_mem em = open_blocks.m[k];
		memmove(&open_blocks.v[k], &open_blocks.v[k + 1],
			(open_blocks.depth - k - 1) * sizeof open_blocks.v[0]);
		/* The counters move only where a memory mode was ever on. */
		if (sp_mem.installed)
			memmove(&open_blocks.m[k], &open_blocks.m[k + 1],
				(open_blocks.depth - k - 1) * sizeof open_blocks.m[0]);
		open_blocks.depth--;
		if (e.slot >= 0 && r->gen == e.gen) {
			if (r->buf.keep_values == SP_VALUES_ALLOC_BYTES && sp_mode.memory)
				sp_mem_close(r, (size_t)e.slot, em.alloc0, em.mark0);
			sp_region_end(r, (size_t)e.slot, t);
		}
		return;
	}
	note_unmatched_exit(r);
}

/* Whether the calling thread's open block e is a call of this session still
 * open at its end: the session's freeze moved its region's gen on once. */
static int open_at_end(const struct sp_open_entry *e)
{
	const RegionObject *r = e->region;
	return e->slot >= 0 && e->gen + 1 == r->gen && (size_t)e->slot < r->buf.n &&
	       r->buf.ends[e->slot] == SP_NO_TIME;
}

void sp_regions_end_open(void)
{
	if (!sp_mem.installed)
		return;
	for (size_t k = open_blocks.depth; k-- > 0;) {
		const struct sp_open_entry *e = &open_blocks.v[k];
		if (open_at_end(e) && e->region->buf.keep_values == SP_VALUES_ALLOC_BYTES)
			sp_mem_close(e->region, (size_t)e->slot, open_blocks.m[k].alloc0, open_blocks.m[k].mark0);
	}
}

static inline PyObject *region_exit(PyObject *self, int mem)
{
	int64_t t = sp_clock_ns();
	RegionObject *r = (RegionObject *)self;
	size_t d = open_blocks.depth;
	if (d && open_blocks.v[d - 1].region == r) {
		struct sp_open_entry *e = &open_blocks.v[d - 1];
		open_blocks.depth = d - 1;
		/* gen differs when the session was finalized inside the block. */
		if (e->slot >= 0 && r->gen == e->gen) {
			if (mem)
				sp_mem_close(r, (size_t)e->slot, open_blocks.m[d - 1].alloc0, open_blocks.m[d - 1].mark0);
			sp_region_end(r, (size_t)e->slot, t);
		}
	} else {
		sp_region_exit_below(r, t);
	}
	Py_RETURN_NONE;
}

static PyObject *region_exit_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return region_exit(self, 0);
}

static PyObject *region_exit_mem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return region_exit(self, 1);
}

/* --line-profile, a region holding functions: the line hook runs in this
 * thread while the block does. Heavy anyway, so lanes are a branch here. */
static PyObject *region_enter_lines(PyObject *self, PyObject *unused)
{
	if (sp_linetrace_hold() != 0)
		return NULL;
	RegionObject *r = (RegionObject *)self;
	PyObject *res = sp_mode.track_async ? sp_region_enter_async(self, unused)
		: r->buf.keep_lanes ? region_enter_threads(self, unused)
					  : region_enter_timed(self, unused);
	if (!res)
		sp_linetrace_release();
	return res;
}

static PyObject *region_exit_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *res = sp_mode.track_async ? sp_region_exit_async(self, args, nargs)
					 : region_exit_timed(self, args, nargs);
	sp_linetrace_release();
	return res;
}

/* --likwid: each call is also a LIKWID marker region (sp_likwid.h), inside
 * the recorded interval; lanes as the mode says (a branch here: the
 * library's calls cost far more). */
static PyObject *region_enter_likwid(PyObject *self, PyObject *unused)
{
	const char *tag = PyUnicode_AsUTF8(((RegionObject *)self)->name);
	if (!tag)
		return NULL;
	PyObject *res = sp_mode.threads ? region_enter_threads(self, unused) : region_enter_timed(self, unused);
	if (res)
		sp_likwid_enter(((RegionObject *)self)->likwid_id, tag);
	return res;
}

static PyObject *region_exit_likwid(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	const char *tag = PyUnicode_AsUTF8(((RegionObject *)self)->name);
	if (tag)
		sp_likwid_leave(((RegionObject *)self)->likwid_id, tag);
	else
		PyErr_Clear();   /* its entry could not start it either */
	return region_exit_timed(self, args, nargs);
}

/* A region of the --likwid mode: registered with LIKWID once (by name). */
static int likwid_register(RegionObject *r)
{
	if (r->likwid_id >= 0)
		return 0;
	const char *tag = PyUnicode_AsUTF8(r->name);
	if (!tag)
		return -1;
	if ((r->likwid_id = sp_likwid_register(tag)) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* Aggregation mode: count the call, keep no event (sp_aggregate.h). */
static PyObject *region_enter_agg(PyObject *self, PyObject *unused)
{
	if (sp_agg_push((RegionObject *)self) != 0)
		return NULL;
	return Py_NewRef(self);
}

static PyObject *region_exit_agg(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	sp_agg_pop((RegionObject *)self);
	Py_RETURN_NONE;
}

static PyObject *region_enter_disabled(PyObject *self, PyObject *unused)
{
	if (__builtin_expect(sp_mode.finished, 0))
		sp_region_used_after_finalize((RegionObject *)self);
	return Py_NewRef(self);
}

__attribute__((cold)) void sp_region_used_after_finalize(RegionObject *r)
{
	sp_mode.finished = 0;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PySys_FormatStderr("scope-profiler: warning: region %R used after finalize(): calls after "
			   "finalize() are not recorded (setup() starts a new session)\n", r->name);
	PyErr_Restore(type, value, tb);
}

static PyObject *region_exit_disabled(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	Py_RETURN_NONE;
}

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
	return PyLong_FromSize_t(r->buf.n + (size_t)r->agg.count + r->kept_calls);
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
	if (!PyCallable_Check(func)) {
		PyErr_Format(PyExc_TypeError, "a region decorates a callable, not %.100s",
			     Py_TYPE(func)->tp_name);
		return NULL;
	}
	return sp_wrapper_new((RegionObject *)self, func, 0);
}

/* Disabled: the function itself. With no session (idle), a wrapper that
 * calls through until setup() turns it on (decorating is not recording:
 * this check is no cost per call). */
static PyObject *region_call_disabled(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *func;
	if (!PyArg_ParseTuple(args, "O:region", &func))
		return NULL;
	if (sp_mode.idle && PyCallable_Check(func))
		return sp_wrapper_new((RegionObject *)self, func, 0);
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
static PyTypeObject region_base_type = {
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
		.tp_base = &region_base_type, \
		.tp_doc = doc, \
		.tp_methods = methods_var, \
		.tp_getset = region_getset, \
	};

REGION_CLASS(sp_TimeOnlyRegionType, timed_methods, "TimeOnlyProfileRegion", region_enter_timed,
	     region_exit_timed, region_call_timed,
	     "A region that records the start and end of every call.")
REGION_CLASS(sp_ThreadsRegionType, threads_methods, "ThreadsProfileRegion", region_enter_threads,
	     region_exit_timed, region_call_timed,
	     "A region that records every call with the lane of its thread.")
REGION_CLASS(sp_MemoryRegionType, mem_methods, "MemoryProfileRegion", region_enter_mem,
	     region_exit_mem, region_call_timed,
	     "A region that records every call with the bytes allocated during it.")
REGION_CLASS(sp_MemoryThreadsRegionType, mem_threads_methods, "MemoryThreadsProfileRegion",
	     region_enter_mem_threads, region_exit_mem, region_call_timed,
	     "A region that records every call with its thread's lane and the bytes allocated during it.")
REGION_CLASS(sp_MemoryAsyncRegionType, mem_async_methods, "MemoryAsyncProfileRegion",
	     sp_region_enter_async_mem, sp_region_exit_async_mem, region_call_timed,
	     "A region that records every call with its task's lane and the bytes allocated during it.")
REGION_CLASS(sp_AsyncRegionType, async_methods, "AsyncProfileRegion", sp_region_enter_async,
	     sp_region_exit_async, region_call_timed,
	     "A region that records every call with the lane of its asyncio task (or thread).")
REGION_CLASS(sp_LinesRegionType, lines_methods, "LineProfileRegion", region_enter_lines,
	     region_exit_lines, region_call_timed,
	     "A region whose functions' lines are timed while it runs.")
REGION_CLASS(sp_AggregateRegionType, agg_methods, "AggregateProfileRegion", region_enter_agg,
	     region_exit_agg, region_call_timed,
	     "A region that keeps only its number of calls, total, min, max and self time.")
REGION_CLASS(sp_LikwidRegionType, likwid_methods, "LikwidProfileRegion", region_enter_likwid,
	     region_exit_likwid, region_call_timed,
	     "A region that records every call and makes it a LIKWID marker region.")
REGION_CLASS(sp_DisabledRegionType, disabled_methods, "DisabledProfileRegion", region_enter_disabled,
	     region_exit_disabled, region_call_disabled,
	     "A region that records nothing; as a decorator it returns the function itself.")

sp_region_exit_fn sp_region_enter_with(RegionObject *r)
{
	/* Every region is of a REGION_CLASS: __enter__ first, __exit__ next. */
	const PyMethodDef *m = Py_TYPE(r)->tp_methods;
	PyObject *res = m[0].ml_meth((PyObject *)r, NULL);
	if (!res)
		return NULL;
	Py_DECREF(res);
	return (sp_region_exit_fn)(void (*)(void))m[1].ml_meth;
}

static PyTypeObject *const region_classes[] = {
	&sp_TimeOnlyRegionType, &sp_DisabledRegionType, &sp_ThreadsRegionType,
	&sp_LinesRegionType, &sp_AggregateRegionType, &sp_AsyncRegionType,
	&sp_MemoryRegionType, &sp_MemoryThreadsRegionType, &sp_MemoryAsyncRegionType,
	&sp_LikwidRegionType,
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
		PyDescr_TYPE(old) = (PyTypeObject *)Py_NewRef(&region_base_type);
		Py_DECREF(t);
		Py_DECREF(old);
	}
}
#else
static void retire_exits(void)
{
}
#endif

static PyObject *region_create(PyObject *name)
{
	Py_ssize_t len = PyUnicode_GetLength(name);
	if (len < 0)
		return NULL;
	if (len == 0) {
		PyErr_SetString(PyExc_ValueError, "a region name must not be empty");
		return NULL;
	}
	if (PyUnicode_FindChar(name, 0, 0, len, 1) >= 0) {
		PyErr_SetString(PyExc_ValueError, "a region name must not contain NUL characters");
		return NULL;
	}
	/* A name UTF-8 cannot hold (a lone surrogate) would fail the file at
	 * the end of the run: the region goes by its escaped form, said once. */
	PyObject *stored = sp_text_storable(name);
	if (!stored)
		return NULL;
	if (stored != name) {
		PyObject *known = PyDict_GetItemWithError(sp_registry, stored);
		if (known || PyErr_Occurred()) {
			Py_DECREF(stored);
			return Py_XNewRef(known);
		}
		PySys_FormatStderr("scope-profiler: warning: the region name %R is not valid text "
				   "(UTF-8 cannot hold it); it is recorded as %R\n", name, stored);
	}
	RegionObject *r = PyObject_New(RegionObject, sp_mode.region_type);
	if (!r) {
		Py_DECREF(stored);
		return NULL;
	}
	r->name = stored;
	sp_buf_init(&r->buf, sp_mode.buffer_limit);
	sp_agg_region_init(&r->agg);
	sp_stats_acc_init(&r->acc);
	r->index = -1;
	r->likwid_id = -1;
	r->kept_calls = 0;
	r->peak_bytes = SP_NO_PEAK;
	if ((sp_mode.threads && sp_buf_keep_lanes(&r->buf) != 0) ||
	    (sp_mode.memory && sp_buf_keep_values(&r->buf, SP_VALUES_ALLOC_BYTES) != 0)) {
		Py_DECREF(r);
		return PyErr_NoMemory();
	}
	r->gen = 0;
	if ((sp_mode.likwid && likwid_register(r) != 0) ||
	    PyDict_SetItem(sp_registry, r->name, (PyObject *)r) != 0) {
		Py_DECREF(r);
		return NULL;
	}
	return (PyObject *)r;
}

static PyObject *check_name(PyObject *name)
{
	if (!PyUnicode_Check(name)) {
		PyErr_Format(PyExc_TypeError, "a region name must be a str, not %.100s",
			     Py_TYPE(name)->tp_name);
		return NULL;
	}
	return name;
}

RegionObject *sp_region_lookup(PyObject *name)
{
	PyObject *r = PyDict_GetItemWithError(sp_registry, name);
	if (r)
		return (RegionObject *)r;
	if (PyErr_Occurred())
		return NULL;
	r = region_create(name);
	Py_XDECREF(r);   /* the sp_registry holds it */
	return (RegionObject *)r;
}

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
			rc = sp_linetrace_choose(f, r->name);
		}
	}
	Py_DECREF(seq);
	if (rc == 0 && sp_mode.lines && Py_TYPE(r) != &sp_DisabledRegionType) {
		r->holds_functions = 1;
		if (Py_TYPE(r) != &sp_LinesRegionType)
			retire_exits();
		Py_SET_TYPE(r, &sp_LinesRegionType);
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
	PyObject *r = PyDict_GetItemWithError(sp_registry, name);
	if (r)
		return Py_NewRef(r);
	if (PyErr_Occurred())
		return NULL;
	return region_create(name);
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
	if (Py_TYPE(region) == &sp_DisabledRegionType && !(sp_mode.idle && PyCallable_Check(func)))
		return Py_NewRef(func);
	if (!recursive) {
		if (!PyObject_TypeCheck(region, &region_base_type) || !PyCallable_Check(func)) {
			PyErr_SetString(PyExc_TypeError, "_profile_recursive(region, callable, False)");
			return NULL;
		}
		return sp_wrapper_new((RegionObject *)region, func, -1);
	}
	if (sp_mode.likwid) {
		/* As run --likwid --recursive: the nested calls would be regions
		 * of no LIKWID marker (wrapper.c times only the outer call). */
		PyErr_SetString(PyExc_ValueError, "profile(recursive=True) cannot be combined with --likwid "
				"(use_likwid): LIKWID marker regions wrap the calls of explicit regions");
		return NULL;
	}
	if ((Py_TYPE(region) != &sp_TimeOnlyRegionType && Py_TYPE(region) != &sp_ThreadsRegionType &&
	     Py_TYPE(region) != &sp_DisabledRegionType &&
	     Py_TYPE(region) != &sp_AsyncRegionType && Py_TYPE(region) != &sp_MemoryRegionType &&
	     Py_TYPE(region) != &sp_MemoryThreadsRegionType && Py_TYPE(region) != &sp_MemoryAsyncRegionType) ||
	    !PyCallable_Check(func)) {
		PyErr_SetString(PyExc_TypeError, "_profile_recursive(region, callable)");
		return NULL;
	}
	return sp_wrapper_new((RegionObject *)region, func, 1);
}

static PyObject *mod_get_region(PyObject *m, PyObject *name)
{
	if (!check_name(name))
		return NULL;
	PyObject *stored = sp_text_storable(name);   /* as region_create keys it */
	PyObject *r = stored ? PyDict_GetItemWithError(sp_registry, stored) : NULL;
	Py_XDECREF(stored);
	if (r)
		return Py_NewRef(r);
	if (!PyErr_Occurred())
		PyErr_Format(PyExc_KeyError, "no region named %R", name);
	return NULL;
}

PyMethodDef sp_region_methods[] = {
	{"region", (PyCFunction)(void (*)(void))mod_region, METH_FASTCALL | METH_KEYWORDS,
	 "region(name, functions=None)\n--\n\nThe region called `name` (also region_name=, the "
	 "earlier spelling): use it as `with region(name):` or as a decorator."},
	{"get_region", mod_get_region, METH_O,
	 "get_region(name)\n--\n\nThe existing region called `name` (KeyError if none)."},
	{"_profile_recursive", mod_profile_recursive, METH_VARARGS, NULL},
	{NULL},
};

/* ------------------------------------------------------------------ */
/* The mode's changes, made by the session                             */

int sp_regions_apply(void)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	retire_exits();
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		/* An empty buffer past the new limit is freed first (it
		 * grows again from a few events): freeing forgets which
		 * columns it keeps, set just below. */
		r->buf.limit = sp_mode.buffer_limit;
		if (r->buf.n == 0 && r->buf.cap > sp_mode.buffer_limit)
			sp_buf_free(&r->buf);
		if ((sp_mode.threads && sp_buf_keep_lanes(&r->buf) != 0) ||
		    (sp_mode.memory && sp_buf_keep_values(&r->buf, SP_VALUES_ALLOC_BYTES) != 0)) {
			PyErr_NoMemory();
			return -1;
		}
		if (sp_mode.likwid && likwid_register(r) != 0)
			return -1;
		Py_SET_TYPE(v, r->holds_functions && sp_mode.lines ? &sp_LinesRegionType : sp_mode.region_type);
	}
	return 0;
}

void sp_regions_freeze(void)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	retire_exits();
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		Py_SET_TYPE(v, &sp_DisabledRegionType);
		((RegionObject *)v)->gen++;
	}
}

void sp_regions_reset(void)
{
	sp_unmatched_exits = 0;
	sp_unmatched_region = NULL;
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (r->buf.cap > sp_mode.buffer_limit || r->buf.keep_lanes || r->buf.keep_values)
			sp_buf_free(&r->buf);
		sp_buf_clear(&r->buf);
		r->peak_bytes = SP_NO_PEAK;
		sp_agg_region_init(&r->agg);
		sp_stats_acc_init(&r->acc);
		r->buf.limit = sp_mode.buffer_limit;
		r->gen++;
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
		r->kept_calls = keep ? r->buf.n + (size_t)r->agg.count : 0;
	}
}

int sp_regions_init(void)
{
	if (PyType_Ready(&region_base_type) < 0)
		return -1;
	for (size_t i = 0; i < sizeof region_classes / sizeof region_classes[0]; i++)
		if (PyType_Ready(region_classes[i]) < 0)
			return -1;
	if (sp_registry)
		return 0;
	if (!(sp_registry = PyDict_New()))
		return -1;
	if (pthread_key_create(&open_blocks_key, open_blocks_free) != 0) {
		PyErr_SetString(PyExc_RuntimeError, "cannot create a thread-specific key");
		return -1;
	}
	return 0;
}
