/* pymodule.c - the built-in module `scope_profiler`: region objects, the
 * C decorator wrapper, and the session primitives its Python layer
 * (scope_profiler_py.py, embedded) builds ProfileManager on.
 *
 * Recording never runs Python code of ours: `with region:` calls the C
 * __enter__/__exit__ below, a decorated call goes through pf_call_timed()
 * (a decorated `async def` function's coroutine, through _timed_coroutine).
 * The mode is chosen at setup by swapping the region objects' type and the
 * wrappers' vectorcall pointer, so the recording path checks nothing. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_linetrace.h"
#include "sp_profile.h"
#include "sp_pymodule.h"
#include "sp_pyregion.h"
#include "sp_aggregate.h"
#include "sp_recorder.h"
#include "sp_pysrc.h"
#include "sp_pyshim.h"

/* ------------------------------------------------------------------ */
/* Region objects                                                      */



static PyTypeObject TimeOnlyRegionType;
static PyTypeObject ThreadsRegionType;
static PyTypeObject AsyncRegionType;
static PyTypeObject LinesRegionType;
static PyTypeObject DisabledRegionType;
static PyTypeObject AggregateRegionType;

/* Module state: one interpreter per process, so plain statics. */
PyObject *sp_registry;                /* dict: name -> RegionObject, creation order */
static size_t buffer_limit = SP_DEFAULT_BUFFER_LIMIT;
static PyTypeObject *region_type = &TimeOnlyRegionType;

/* The `with` blocks open in the calling thread, innermost last. Per thread,
 * so threads entering the same region at once each close their own call;
 * an exit closes the innermost open entry of its region (a generator may
 * exit a block that is not the innermost). */
struct open_entry {
	RegionObject *region;
	ptrdiff_t slot;               /* -1: dropped (out of memory) */
	uint64_t gen;                 /* the region's gen at entry */
};

static _Thread_local struct {
	struct open_entry *v;
	size_t depth, cap;
} open_blocks;

static pthread_key_t open_blocks_key;   /* frees a thread's stack at its exit */

static void open_blocks_free(void *v)
{
	free(v);
}

static __attribute__((noinline, cold)) int open_blocks_grow(void)
{
	size_t cap = open_blocks.cap ? open_blocks.cap * 2 : 16;
	struct open_entry *v = realloc(open_blocks.v, cap * sizeof *v);
	if (!v)
		return -1;
	if (v != open_blocks.v)
		pthread_setspecific(open_blocks_key, v);
	open_blocks.v = v;
	open_blocks.cap = cap;
	return 0;
}

/* `with region:` entry; `lanes` is a constant in each caller below, so
 * each compiles to its own branch-free path. */
static inline PyObject *region_enter(PyObject *self, int lanes)
{
	RegionObject *r = (RegionObject *)self;
	if (open_blocks.depth == open_blocks.cap && open_blocks_grow() != 0)
		return PyErr_NoMemory();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	open_blocks.v[open_blocks.depth++] = (struct open_entry){r, i, r->gen};
	if (i >= 0) {
		if (lanes)
			r->buf.lanes[i] = sp_current_lane();
		r->buf.ends[i] = SP_NO_TIME;
		r->buf.starts[i] = sp_clock_ns();
	}
	return Py_NewRef(self);
}

static PyObject *region_enter_timed(PyObject *self, PyObject *unused)
{
	return region_enter(self, 0);
}

/* --track-threads: also the lane of the calling thread. */
static PyObject *region_enter_threads(PyObject *self, PyObject *unused)
{
	return region_enter(self, 1);
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
static __attribute__((noinline)) void exit_below(RegionObject *r, int64_t t)
{
	for (size_t k = open_blocks.depth; k-- > 0;) {
		struct open_entry e = open_blocks.v[k];
		if (e.region != r)
			continue;
		memmove(&open_blocks.v[k], &open_blocks.v[k + 1],
			(open_blocks.depth - k - 1) * sizeof open_blocks.v[0]);
		open_blocks.depth--;
		if (e.slot >= 0 && r->gen == e.gen)
			r->buf.ends[e.slot] = t;
		return;
	}
	note_unmatched_exit(r);
}

static PyObject *region_exit_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	int64_t t = sp_clock_ns();
	RegionObject *r = (RegionObject *)self;
	size_t d = open_blocks.depth;
	if (d && open_blocks.v[d - 1].region == r) {
		struct open_entry *e = &open_blocks.v[d - 1];
		open_blocks.depth = d - 1;
		/* gen differs when the session was finalized inside the block. */
		if (e->slot >= 0 && r->gen == e->gen)
			r->buf.ends[e->slot] = t;
	} else {
		exit_below(r, t);
	}
	Py_RETURN_NONE;
}

/* --track-async (below): a lane per asyncio task. */
static int track_async_mode;
static PyObject *region_enter_async(PyObject *self, PyObject *unused);
static PyObject *region_exit_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* --line-profile, a region holding functions: the line hook runs in this
 * thread while the block does. Heavy anyway, so lanes are a branch here. */
static PyObject *region_enter_lines(PyObject *self, PyObject *unused)
{
	if (sp_linetrace_hold() != 0)
		return NULL;
	RegionObject *r = (RegionObject *)self;
	PyObject *res = track_async_mode ? region_enter_async(self, unused)
		: r->buf.keep_lanes ? region_enter_threads(self, unused)
					  : region_enter_timed(self, unused);
	if (!res)
		sp_linetrace_release();
	return res;
}

static PyObject *region_exit_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *res = track_async_mode ? region_exit_async(self, args, nargs)
					 : region_exit_timed(self, args, nargs);
	sp_linetrace_release();
	return res;
}

_Thread_local int32_t sp_my_lane = -1;
int sp_track_threads;
static int32_t next_lane;
static PyObject *lane_names;   /* list: lane -> "name (ident)" */

int32_t sp_lane_assign(void)
{
	/* The thread's name, for the file; never raises into the caller. */
	PyObject *type, *value, *tb, *name = NULL;
	PyErr_Fetch(&type, &value, &tb);
	PyObject *threading = PyImport_ImportModule("threading");
	PyObject *thread = threading ? PyObject_CallMethod(threading, "current_thread", NULL) : NULL;
	PyObject *tname = thread ? PyObject_GetAttrString(thread, "name") : NULL;
	if (tname)
		name = PyUnicode_FromFormat("%S", tname);
	else
		name = PyUnicode_FromFormat("thread %lu", PyThread_get_thread_ident());
	/* The lane and its name's index, with no Python code in between: code
	 * that runs while the name is found may let another thread or task
	 * take a lane (and may have given this thread its lane already). */
	if (sp_my_lane < 0) {
		sp_my_lane = next_lane++;
		if (lane_names)
			PyList_Append(lane_names, name ? name : Py_None);
	}
	Py_XDECREF(name);
	Py_XDECREF(tname);
	Py_XDECREF(thread);
	Py_XDECREF(threading);
	PyErr_Clear();
	PyErr_Restore(type, value, tb);
	return sp_my_lane;
}

/* ------------------------------------------------------------------ */
/* --track-async: a lane per asyncio task                              */

static PyObject *get_running_loop;   /* asyncio.events._get_running_loop */
static PyObject *current_tasks;      /* asyncio.tasks._current_tasks: loop -> task */
static PyObject *current_task;       /* asyncio.current_task, where that is no dict */
static PyObject *task_lanes;         /* dict: task -> lane, until the task is done */
static PyObject *forget_task;        /* the done callback that drops a task's entry */

/* The open `with` blocks of each lane (a task, or a thread outside any
 * task), innermost last: tasks that interleave in one thread each close
 * their own call. Indexed by lane; used under the GIL, and no Python code
 * runs while an entry is pushed or popped. */
struct lane_blocks {
	struct open_entry *v;
	size_t depth, cap;
};
static struct lane_blocks *lane_blocks;
static size_t n_lane_blocks;

/* A task seen for the first time: the next lane, named "Task-3 (worker)"
 * (the task's name, its coroutine's qualified name). -1 with an exception. */
static __attribute__((noinline, cold)) int32_t task_lane_new(PyObject *task)
{
	PyObject *name = NULL, *tname = PyObject_CallMethod(task, "get_name", NULL);
	PyObject *coro = tname ? PyObject_CallMethod(task, "get_coro", NULL) : NULL;
	PyObject *qual = coro ? PyObject_GetAttrString(coro, "__qualname__") : NULL;
	if (qual)
		name = PyUnicode_FromFormat("%S (%S)", tname, qual);
	else if (tname)
		name = PyUnicode_FromFormat("%S", tname);
	Py_XDECREF(qual);
	Py_XDECREF(coro);
	Py_XDECREF(tname);
	PyErr_Clear();
	if (!name && !(name = PyUnicode_FromFormat("task %R", task)))
		return -1;
	/* The code above may have given the task its lane already. */
	PyObject *known = PyDict_GetItemWithError(task_lanes, task);
	if (known || PyErr_Occurred()) {
		Py_DECREF(name);
		return known ? (int32_t)PyLong_AsLong(known) : -1;
	}
	/* The lane and its name's index, with no Python code in between (as in
	 * sp_lane_assign: threads and tasks share the numbering). */
	PyObject *num = PyLong_FromLong(next_lane);
	int rc = num ? PyDict_SetItem(task_lanes, task, num) : -1;
	if (rc == 0 && PyList_Append(lane_names, name) != 0) {
		PyDict_DelItem(task_lanes, task);
		rc = -1;
	}
	Py_XDECREF(num);
	Py_DECREF(name);
	if (rc != 0)
		return -1;
	int32_t lane = next_lane++;
	/* Forgotten when it is done, so that ended tasks are not kept alive. */
	PyObject *r = PyObject_CallMethod(task, "add_done_callback", "O", forget_task);
	Py_XDECREF(r);
	PyErr_Clear();
	return lane;
}

/* _asyncio (CPython 3.7 to 3.11) keeps a thread's running loop in a holder
 * in the thread-state dict. _get_running_loop() reads it, and also asks the
 * kernel for the pid at every call (~100 ns); so once a holder has proved
 * to have this layout (its loop is the one the function returns), its type
 * is read directly. Another layout or version: the function. */
struct loop_holder {
	PyObject_HEAD
	PyObject *rl_loop;
	pid_t rl_pid;
};
static PyObject *running_loop_key;       /* "__asyncio_running_event_loop__" */
static PyTypeObject *loop_holder_type;   /* the checked holder type, or NULL */

/* The thread's running loop or None (a new reference); NULL with an
 * exception. */
static inline PyObject *running_loop(void)
{
	PyObject *d = PyThreadState_GetDict();
	PyObject *h = d ? PyDict_GetItemWithError(d, running_loop_key) : NULL;
	if (h && Py_TYPE(h) == loop_holder_type)
		return Py_NewRef(((struct loop_holder *)h)->rl_loop);
	PyObject *loop = PyObject_Vectorcall(get_running_loop, NULL, 0, NULL);
	if (h && loop && loop != Py_None && !loop_holder_type &&
	    Py_TYPE(h)->tp_basicsize == sizeof(struct loop_holder) &&
	    strcmp(Py_TYPE(h)->tp_name, "_RunningLoopHolder") == 0 &&
	    ((struct loop_holder *)h)->rl_loop == loop)
		loop_holder_type = Py_TYPE(h);
	return loop;
}

/* The calling task's lane; outside any task (no running loop, or a plain
 * callback of the loop), the thread's. Never raises into the caller. */
static int32_t sp_async_lane(void)
{
	PyObject *loop = running_loop();
	if (!loop || loop == Py_None) {
		Py_XDECREF(loop);
		PyErr_Clear();
		return sp_current_lane();
	}
	PyObject *task;
	if (current_tasks) {
		task = PyDict_GetItemWithError(current_tasks, loop);
		Py_XINCREF(task);
	} else {
		task = PyObject_CallOneArg(current_task, loop);
	}
	Py_DECREF(loop);
	if (!task || task == Py_None) {
		Py_XDECREF(task);
		PyErr_Clear();
		return sp_current_lane();
	}
	PyObject *known = PyDict_GetItemWithError(task_lanes, task);
	int32_t lane = known ? (int32_t)PyLong_AsLong(known) : task_lane_new(task);
	Py_DECREF(task);
	if (lane < 0) {
		PyErr_Clear();
		return sp_current_lane();
	}
	return lane;
}

/* The done callback: the task's entry and its (empty) stack go. */
static PyObject *forget_task_cb(PyObject *unused, PyObject *task)
{
	PyObject *known = PyDict_GetItemWithError(task_lanes, task);
	if (!known)
		return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
	long lane = PyLong_AsLong(known);
	if (lane >= 0 && (size_t)lane < n_lane_blocks) {
		free(lane_blocks[lane].v);
		lane_blocks[lane] = (struct lane_blocks){NULL, 0, 0};
	}
	if (PyDict_DelItem(task_lanes, task) != 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef forget_task_def = {"_forget_task", forget_task_cb, METH_O, NULL};

/* Caches asyncio's functions (imports asyncio) the first time the mode is
 * chosen; -1 with an exception. */
static int async_init(void)
{
	if (get_running_loop)
		return 0;
	PyObject *events = PyImport_ImportModule("asyncio.events");
	PyObject *tasks = events ? PyImport_ImportModule("asyncio.tasks") : NULL;
	PyObject *loop_fn = tasks ? PyObject_GetAttrString(events, "_get_running_loop") : NULL;
	PyObject *ct = loop_fn ? PyObject_GetAttrString(tasks, "_current_tasks") : NULL;
	PyObject *ct_fn = NULL;
	if (ct && !PyDict_CheckExact(ct))
		Py_CLEAR(ct);
	if (loop_fn && !ct) {
		PyErr_Clear();
		ct_fn = PyObject_GetAttrString(tasks, "current_task");
	}
	Py_XDECREF(tasks);
	Py_XDECREF(events);
	if (!loop_fn || (!ct && !ct_fn))
		goto fail;
	if (!task_lanes && !(task_lanes = PyDict_New()))
		goto fail;
	if (!running_loop_key &&
	    !(running_loop_key = PyUnicode_InternFromString("__asyncio_running_event_loop__")))
		goto fail;
	if (!forget_task && !(forget_task = PyCFunction_New(&forget_task_def, NULL)))
		goto fail;
	current_tasks = ct;
	current_task = ct_fn;
	get_running_loop = loop_fn;
	return 0;
fail:
	Py_XDECREF(loop_fn);
	Py_XDECREF(ct);
	Py_XDECREF(ct_fn);
	return -1;
}

static __attribute__((noinline, cold)) struct lane_blocks *lane_blocks_grow(int32_t lane)
{
	if ((size_t)lane >= n_lane_blocks) {
		size_t n = n_lane_blocks ? n_lane_blocks : 16;
		while (n <= (size_t)lane)
			n *= 2;
		struct lane_blocks *v = realloc(lane_blocks, n * sizeof *v);
		if (!v)
			return NULL;
		memset(v + n_lane_blocks, 0, (n - n_lane_blocks) * sizeof *v);
		lane_blocks = v;
		n_lane_blocks = n;
	}
	struct lane_blocks *s = &lane_blocks[lane];
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct open_entry *e = realloc(s->v, cap * sizeof *e);
		if (!e)
			return NULL;
		s->v = e;
		s->cap = cap;
	}
	return s;
}

/* The lane's stack, with room for one more entry; NULL when out of memory. */
static inline struct lane_blocks *lane_blocks_at(int32_t lane)
{
	if (__builtin_expect((size_t)lane < n_lane_blocks, 1)) {
		struct lane_blocks *s = &lane_blocks[lane];
		if (__builtin_expect(s->depth < s->cap, 1))
			return s;
	}
	return lane_blocks_grow(lane);
}

/* --track-async: `with region:` records the task's lane and pushes the
 * entry on the task's own stack. */
static PyObject *region_enter_async(PyObject *self, PyObject *unused)
{
	RegionObject *r = (RegionObject *)self;
	int32_t lane = sp_async_lane();
	struct lane_blocks *s = lane_blocks_at(lane);
	if (!s)
		return PyErr_NoMemory();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	s->v[s->depth++] = (struct open_entry){r, i, r->gen};
	if (i >= 0) {
		if (r->buf.lanes)
			r->buf.lanes[i] = lane;
		r->buf.ends[i] = SP_NO_TIME;
		r->buf.starts[i] = sp_clock_ns();
	}
	return Py_NewRef(self);
}

/* Closes the innermost open entry of this region in the task's stack. */
static PyObject *region_exit_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	int64_t t = sp_clock_ns();
	RegionObject *r = (RegionObject *)self;
	int32_t lane = sp_async_lane();
	if ((size_t)lane < n_lane_blocks) {
		struct lane_blocks *s = &lane_blocks[lane];
		for (size_t k = s->depth; k-- > 0;) {
			struct open_entry e = s->v[k];
			if (e.region != r)
				continue;
			memmove(&s->v[k], &s->v[k + 1], (s->depth - k - 1) * sizeof s->v[0]);
			s->depth--;
			if (e.slot >= 0 && r->gen == e.gen)
				r->buf.ends[e.slot] = t;
			Py_RETURN_NONE;
		}
	}
	/* Entered before the mode was on: on the thread's stack, if anywhere. */
	exit_below(r, t);
	Py_RETURN_NONE;
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
	return Py_NewRef(self);
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
	return PyLong_FromSize_t(r->buf.n + (size_t)r->agg.count);
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
	{"num_calls", region_get_num_calls, NULL, "calls recorded in this session", NULL},
	{"capacity", region_get_capacity, NULL, "allocated event slots (doubles when full)", NULL},
	{"dropped", region_get_dropped, NULL, "calls lost because memory ran out", NULL},
	{NULL},
};

static PyObject *pf_new(RegionObject *region, PyObject *func, int recursive);

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
	return pf_new((RegionObject *)self, func, 0);
}

static PyObject *region_call_disabled(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *func;
	if (!PyArg_ParseTuple(args, "O:region", &func))
		return NULL;
	return Py_NewRef(func);
}

#define REGION_COMMON_METHODS \
	{"get_durations_numpy", region_get_durations_numpy, METH_NOARGS, \
	 "Durations in ns of the completed calls (numpy int64 array)."}, \
	{"get_start_times_numpy", region_get_start_times_numpy, METH_NOARGS, \
	 "Start timestamps in ns (numpy int64 array)."}, \
	{"get_end_times_numpy", region_get_end_times_numpy, METH_NOARGS, \
	 "End timestamps in ns (numpy int64 array; INT64_MIN while open)."}

/* The region classes differ only in __enter__/__exit__ and the decorator
 * call; they share the layout, so setup() can switch an object's class. */
#define REGION_CLASS(var, methods_var, pyname, enter, exit, call, doc) \
	static PyMethodDef methods_var[] = { \
		{"__enter__", enter, METH_NOARGS, NULL}, \
		{"__exit__", (PyCFunction)(void (*)(void))exit, METH_FASTCALL, NULL}, \
		REGION_COMMON_METHODS, \
		{NULL}, \
	}; \
	static PyTypeObject var = { \
		PyVarObject_HEAD_INIT(NULL, 0) \
		.tp_name = "scope_profiler." pyname, \
		.tp_basicsize = sizeof(RegionObject), \
		.tp_dealloc = region_dealloc, \
		.tp_repr = region_repr, \
		.tp_call = call, \
		.tp_flags = Py_TPFLAGS_DEFAULT, \
		.tp_doc = doc, \
		.tp_methods = methods_var, \
		.tp_getset = region_getset, \
	};

REGION_CLASS(TimeOnlyRegionType, timed_methods, "TimeOnlyProfileRegion", region_enter_timed,
	     region_exit_timed, region_call_timed,
	     "A region that records the start and end of every call.")
REGION_CLASS(ThreadsRegionType, threads_methods, "ThreadsProfileRegion", region_enter_threads,
	     region_exit_timed, region_call_timed,
	     "A region that records every call with the lane of its thread.")
REGION_CLASS(AsyncRegionType, async_methods, "AsyncProfileRegion", region_enter_async,
	     region_exit_async, region_call_timed,
	     "A region that records every call with the lane of its asyncio task (or thread).")
REGION_CLASS(LinesRegionType, lines_methods, "LineProfileRegion", region_enter_lines,
	     region_exit_lines, region_call_timed,
	     "A region whose functions' lines are timed while it runs.")
REGION_CLASS(AggregateRegionType, agg_methods, "AggregateProfileRegion", region_enter_agg,
	     region_exit_agg, region_call_timed,
	     "A region that keeps only its number of calls, total, min, max and self time.")
REGION_CLASS(DisabledRegionType, disabled_methods, "DisabledProfileRegion", region_enter_disabled,
	     region_exit_disabled, region_call_disabled,
	     "A region that records nothing; as a decorator it returns the function itself.")

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
	RegionObject *r = PyObject_New(RegionObject, region_type);
	if (!r)
		return NULL;
	r->name = Py_NewRef(name);
	sp_buf_init(&r->buf, buffer_limit);
	sp_agg_region_init(&r->agg);
	if (sp_track_threads && sp_buf_keep_lanes(&r->buf) != 0) {
		Py_DECREF(r);
		return PyErr_NoMemory();
	}
	r->gen = 0;
	if (PyDict_SetItem(sp_registry, name, (PyObject *)r) != 0) {
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

static int lines_mode;   /* setup(use_line_profiler=True) */

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
		} else if (lines_mode) {
			rc = sp_linetrace_choose(f, r->name);
		}
	}
	Py_DECREF(seq);
	if (rc == 0 && lines_mode && Py_TYPE(r) != &DisabledRegionType) {
		r->holds_functions = 1;
		Py_SET_TYPE(r, &LinesRegionType);
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

/* _profile_recursive(region, func): profile(name, recursive=True)(func). */
static PyObject *mod_profile_recursive(PyObject *m, PyObject *args)
{
	PyObject *region, *func;
	if (!PyArg_ParseTuple(args, "OO:_profile_recursive", &region, &func))
		return NULL;
	if (Py_TYPE(region) == &DisabledRegionType)
		return Py_NewRef(func);
	if ((Py_TYPE(region) != &TimeOnlyRegionType && Py_TYPE(region) != &ThreadsRegionType &&
	     Py_TYPE(region) != &AsyncRegionType) ||
	    !PyCallable_Check(func)) {
		PyErr_SetString(PyExc_TypeError, "_profile_recursive(region, callable)");
		return NULL;
	}
	return pf_new((RegionObject *)region, func, 1);
}

static PyObject *mod_get_region(PyObject *m, PyObject *name)
{
	if (!check_name(name))
		return NULL;
	PyObject *r = PyDict_GetItemWithError(sp_registry, name);
	if (r)
		return Py_NewRef(r);
	if (!PyErr_Occurred())
		PyErr_Format(PyExc_KeyError, "no region named %R", name);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The decorator wrapper                                               */

typedef struct ProfiledFunction {
	PyObject_HEAD
	vectorcallfunc vectorcall;
	PyObject *func;
	RegionObject *region;
	PyObject *dict;
	PyObject *weaklist;
	int recursive;                          /* profile(recursive=True) */
	int is_coro;                            /* wraps an `async def` function */
	struct ProfiledFunction *prev, *next;   /* all live wrappers */
} ProfiledFunction;

static PyTypeObject ProfiledFunctionType;
static ProfiledFunction *wrappers;

/* The recording call; `lanes` is a constant in each caller below, so each
 * compiles to its own branch-free path: 1 the thread's lane, 2 the task's
 * (--track-async; found first, as it may run Python code). */
static inline PyObject *pf_record(PyObject *self, PyObject *const *args, size_t nargsf,
				  PyObject *kwnames, int lanes)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	RegionObject *r = pf->region;
	int32_t task_lane = lanes == 2 ? sp_async_lane() : 0;
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (i < 0)
		return PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	uint64_t gen = r->gen;
	if (lanes)
		r->buf.lanes[i] = lanes == 2 ? task_lane : sp_current_lane();
	r->buf.ends[i] = SP_NO_TIME;
	r->buf.starts[i] = sp_clock_ns();
	PyObject *res = PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	int64_t t = sp_clock_ns();
	/* The session may have been finalized during the call; then the slot
	 * is no longer ours. */
	if (r->gen == gen)
		r->buf.ends[i] = t;
	return res;
}

static PyObject *pf_call_timed(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 0);
}

static PyObject *pf_call_threads(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 1);
}

static PyObject *pf_call_async(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	return pf_record(self, args, nargsf, kwnames, 2);
}

static PyObject *timed_coroutine;   /* _timed_coroutine of the Python layer */

/* An `async def` function: its call only creates the coroutine, so the
 * region is timed by _timed_coroutine (the Python layer), a coroutine that
 * awaits this one between _coroutine_enter and _coroutine_exit below. */
static PyObject *pf_call_coro(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	ProfiledFunction *pf = (ProfiledFunction *)self;
	PyObject *coro = PyObject_Vectorcall(pf->func, args, nargsf, kwnames);
	if (coro && lines_mode)
		coro = sp_linetrace_wrap_result(pf->func, coro);
	if (!coro || !Py_TYPE(coro)->tp_as_async || !Py_TYPE(coro)->tp_as_async->am_await)
		return coro;
	PyObject *argv[2] = {(PyObject *)pf->region, coro};
	PyObject *res = PyObject_Vectorcall(timed_coroutine, argv, 2, NULL);
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
	return PyObject_Vectorcall(((ProfiledFunction *)self)->func, args, nargsf, kwnames);
}

/* profile(recursive=True): the --recursive hook records every call made
 * under this one, in this thread. */
static PyObject *pf_call_recursive(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	int started = sp_tracer_start_thread();
	if (started < 0)
		return NULL;
	PyObject *res = pf_record(self, args, nargsf, kwnames, sp_track_threads);
	if (started)
		sp_tracer_stop_thread();
	return res;
}

/* --line-profile: the function's lines are timed while it runs. */
static PyObject *pf_call_lines(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	if (sp_linetrace_hold() != 0)
		return NULL;
	PyObject *res = pf_record(self, args, nargsf, kwnames, track_async_mode ? 2 : sp_track_threads);
	sp_linetrace_release();
	return sp_linetrace_wrap_result(((ProfiledFunction *)self)->func, res);
}

static int profiling_disabled;
static int recursive_all;   /* setup(recursive_profile=True) */
static int aggregate_mode;  /* setup(aggregation_mode=True) */

static vectorcallfunc pf_choose_call(const ProfiledFunction *pf)
{
	if (profiling_disabled)
		return pf_call_disabled;
	if (pf->is_coro)
		return pf_call_coro;
	if (pf->recursive || recursive_all)
		return pf_call_recursive;
	if (lines_mode)
		return pf_call_lines;
	if (aggregate_mode)
		return pf_call_agg;
	if (track_async_mode)
		return pf_call_async;
	return sp_track_threads ? pf_call_threads : pf_call_timed;
}

/* Whether calling func gives a coroutine to time until it ends: an `async
 * def` function or method, a wrapper of one; other callables (partial
 * objects, ...) as inspect.iscoroutinefunction() sees them. */
static int is_coroutine_function(PyObject *func)
{
	PyObject *f = PyMethod_Check(func) ? PyMethod_GET_FUNCTION(func) : func;
	if (PyFunction_Check(f))
		return (((PyCodeObject *)PyFunction_GET_CODE(f))->co_flags & CO_COROUTINE) != 0;
	if (Py_TYPE(f) == &ProfiledFunctionType)
		return ((ProfiledFunction *)f)->is_coro;
	if (PyCFunction_Check(f) || PyType_Check(f))
		return 0;
	PyObject *inspect = PyImport_ImportModule("inspect");
	PyObject *res = inspect ? PyObject_CallMethod(inspect, "iscoroutinefunction", "O", func) : NULL;
	int yes = res ? PyObject_IsTrue(res) : 0;
	Py_XDECREF(res);
	Py_XDECREF(inspect);
	PyErr_Clear();
	return yes > 0;
}

static PyObject *pf_new(RegionObject *region, PyObject *func, int recursive)
{
	if (lines_mode && !recursive && sp_linetrace_choose(func, region->name) != 0)
		return NULL;
	int is_coro = is_coroutine_function(func);
	ProfiledFunction *pf = PyObject_GC_New(ProfiledFunction, &ProfiledFunctionType);
	if (!pf)
		return NULL;
	pf->recursive = recursive;
	pf->is_coro = is_coro;
	pf->vectorcall = pf_choose_call(pf);
	sp_tracer_mark_explicit(func);
	pf->func = Py_NewRef(func);
	pf->region = (RegionObject *)Py_NewRef((PyObject *)region);
	pf->dict = NULL;
	pf->weaklist = NULL;
	pf->prev = NULL;
	pf->next = wrappers;
	if (wrappers)
		wrappers->prev = pf;
	wrappers = pf;
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
	else if (wrappers == pf)
		wrappers = pf->next;
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

static PyTypeObject ProfiledFunctionType = {
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
/* Session primitives                                                  */

/* _configure(disabled, buffer_limit, recursive, threads): choose the region
 * class and the wrapper call for every region and wrapper, existing and
 * future. Lanes, once on, stay on until the session's events are reset. */
static PyObject *mod_configure(PyObject *m, PyObject *args)
{
	int disabled, recursive, threads, lines, aggregate = 0, track_async = 0;
	Py_ssize_t limit;
	if (!PyArg_ParseTuple(args, "pnppp|pp:_configure", &disabled, &limit, &recursive, &threads, &lines,
			      &aggregate, &track_async) || sp_session_busy())
		return NULL;
	if (limit < 1) {
		PyErr_SetString(PyExc_ValueError, "buffer_limit must be a positive integer");
		return NULL;
	}
	if ((size_t)limit > sp_buf_max_cap()) {
		PyErr_Format(PyExc_ValueError, "buffer_limit=%zd: that many events take 16 bytes each, "
			     "more than this machine's memory (at most %zu)", limit, sp_buf_max_cap());
		return NULL;
	}
	if (track_async && !disabled && async_init() != 0)
		return NULL;
	buffer_limit = (size_t)limit;
	sp_track_threads = sp_track_threads || threads || track_async;
	region_type = disabled ? &DisabledRegionType
		: aggregate ? &AggregateRegionType
		: track_async ? &AsyncRegionType
		: sp_track_threads ? &ThreadsRegionType : &TimeOnlyRegionType;
	profiling_disabled = disabled;
	aggregate_mode = aggregate && !disabled;
	track_async_mode = track_async && !disabled;
	recursive_all = recursive;
	lines_mode = lines && !disabled;
	sp_tracer_set_lanes(sp_track_threads);
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (sp_track_threads && sp_buf_keep_lanes(&r->buf) != 0)
			return PyErr_NoMemory();
		Py_SET_TYPE(v, r->holds_functions && lines_mode ? &LinesRegionType : region_type);
		r->buf.initial_cap = buffer_limit;
		if (r->buf.n == 0 && r->buf.cap != buffer_limit)
			sp_buf_free(&r->buf);
	}
	/* Line mode re-wraps what was decorated before it was asked for. */
	for (ProfiledFunction *pf = wrappers; pf; pf = pf->next) {
		if (lines_mode && !pf->recursive && sp_linetrace_choose(pf->func, pf->region->name) != 0)
			return NULL;
		pf->vectorcall = pf_choose_call(pf);
	}
	Py_RETURN_NONE;
}

int sp_session_writing;

/* setup(), finalize() and the reset after it, from another thread while a
 * profile is written without the GIL, would change the events under the
 * writer: refused. Returns -1 with RuntimeError set then. */
int sp_session_busy(void)
{
	if (!sp_session_writing)
		return 0;
	PyErr_SetString(PyExc_RuntimeError, "scope_profiler: the profile is being written (finalize() "
			"in another thread); the session cannot change until it is done");
	return -1;
}

void sp_session_freeze(void)
{
	sp_tracer_stop_all();
	region_type = &DisabledRegionType;
	profiling_disabled = 1;
	aggregate_mode = track_async_mode = lines_mode = 0;
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		Py_SET_TYPE(v, &DisabledRegionType);
		((RegionObject *)v)->gen++;
	}
	for (ProfiledFunction *pf = wrappers; pf; pf = pf->next)
		pf->vectorcall = pf_call_disabled;
}

/* _reset(): forget every recorded event (the regions stay registered). */
static PyObject *mod_reset(PyObject *m, PyObject *unused)
{
	if (sp_session_busy())
		return NULL;
	/* The hook's open calls point into the buffers cleared below. */
	sp_tracer_stop_all();
	sp_track_threads = 0;
	sp_linetrace_reset();
	sp_agg_reset();
	sp_unmatched_exits = 0;
	sp_unmatched_region = NULL;
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (r->buf.cap != buffer_limit || r->buf.keep_lanes)
			sp_buf_free(&r->buf);
		sp_buf_clear(&r->buf);
		sp_agg_region_init(&r->agg);
		r->buf.initial_cap = buffer_limit;
		r->gen++;
	}
	Py_RETURN_NONE;
}

int sp_run_write_failed;

static PyObject *mod_mark_write_failed(PyObject *m, PyObject *unused)
{
	sp_run_write_failed = 1;
	Py_RETURN_NONE;
}

/* _coroutine_enter(region) and _coroutine_exit(region, token): around the
 * awaited run of a decorated `async def` function (_timed_coroutine). The
 * token carries the call's slot, so calls of interleaved tasks never close
 * each other's. A region of another class (aggregation) is entered through
 * its own __enter__ (token True); None: nothing was entered. */
static PyObject *mod_coroutine_enter(PyObject *m, PyObject *region)
{
	PyTypeObject *type = Py_TYPE(region);
	if (type == &DisabledRegionType)
		Py_RETURN_NONE;
	if (type != &TimeOnlyRegionType && type != &ThreadsRegionType && type != &AsyncRegionType &&
	    type != &LinesRegionType) {
		PyObject *res = PyObject_CallMethod(region, "__enter__", NULL);
		if (!res)
			return NULL;
		Py_DECREF(res);
		Py_RETURN_TRUE;
	}
	RegionObject *r = (RegionObject *)region;
	int32_t lane = !r->buf.keep_lanes ? 0 : track_async_mode ? sp_async_lane() : sp_current_lane();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (i < 0)
		Py_RETURN_NONE;
	if (r->buf.lanes)
		r->buf.lanes[i] = lane;
	r->buf.ends[i] = SP_NO_TIME;
	r->buf.starts[i] = sp_clock_ns();
	PyObject *token = Py_BuildValue("(nK)", i, (unsigned long long)r->gen);
	if (!token)   /* out of memory: the call is lost, not left open */
		r->buf.ends[i] = r->buf.starts[i];
	return token;
}

static PyObject *mod_coroutine_exit(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	int64_t t = sp_clock_ns();
	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "_coroutine_exit(region, token)");
		return NULL;
	}
	PyObject *region = args[0], *token = args[1];
	if (token == Py_None)
		Py_RETURN_NONE;
	if (token == Py_True) {
		PyObject *res = PyObject_CallMethod(region, "__exit__", "OOO", Py_None, Py_None, Py_None);
		Py_XDECREF(res);
		return res ? Py_NewRef(Py_None) : NULL;
	}
	Py_ssize_t slot;
	unsigned long long gen;
	if (Py_TYPE(region)->tp_dealloc != region_dealloc || !PyTuple_Check(token) ||
	    !PyArg_ParseTuple(token, "nK", &slot, &gen)) {
		PyErr_Clear();
		PyErr_SetString(PyExc_TypeError, "_coroutine_exit(region, token)");
		return NULL;
	}
	RegionObject *r = (RegionObject *)region;
	/* gen differs when the session was finalized meanwhile. */
	if (slot >= 0 && (size_t)slot < r->buf.n && r->gen == gen)
		r->buf.ends[slot] = t;
	Py_RETURN_NONE;
}

static PyObject *mod_clock_ns(PyObject *m, PyObject *unused)
{
	return PyLong_FromLongLong(sp_clock_ns());
}

static PyMethodDef module_methods[] = {
	{"region", (PyCFunction)(void (*)(void))mod_region, METH_FASTCALL | METH_KEYWORDS,
	 "region(name, functions=None)\n--\n\nThe region called `name`: use it as "
	 "`with region(name):` or as a decorator."},
	{"get_region", mod_get_region, METH_O,
	 "get_region(name)\n--\n\nThe existing region called `name` (KeyError if none)."},
	{"_configure", mod_configure, METH_VARARGS, NULL},
	{"_profile_recursive", mod_profile_recursive, METH_VARARGS, NULL},
	{"_reset", mod_reset, METH_NOARGS, NULL},
	{"_mark_write_failed", mod_mark_write_failed, METH_NOARGS, NULL},
	{"_clock_ns", mod_clock_ns, METH_NOARGS,
	 "The profiler's clock in ns (same as time.perf_counter_ns())."},
	{"_coroutine_enter", mod_coroutine_enter, METH_O, NULL},
	{"_coroutine_exit", (PyCFunction)(void (*)(void))mod_coroutine_exit, METH_FASTCALL, NULL},
	{NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "scope_profiler",
	.m_doc = "scope-profiler: nanosecond timing regions for Python, recorded in C.",
	.m_size = -1,
	.m_methods = module_methods,
};

/* Runs the embedded Python layer in the module's namespace. */
static int run_python_layer(PyObject *mod)
{
	PyObject *d = PyModule_GetDict(mod);
	if (PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) != 0)
		return -1;
	PyObject *src = PyUnicode_DecodeUTF8((const char *)scope_profiler_py_py,
					     (Py_ssize_t)scope_profiler_py_py_len, "strict");
	if (!src)
		return -1;
	PyObject *fname = PyUnicode_FromString("<scope_profiler>");
	const char *text = PyUnicode_AsUTF8(src);
	PyObject *code = (fname && text)
		? Py_CompileStringObject(text, fname, Py_file_input, NULL, -1) : NULL;
	Py_XDECREF(fname);
	Py_DECREF(src);
	if (!code)
		return -1;
	PyObject *r = PyEval_EvalCode(code, d, d);
	Py_DECREF(code);
	if (!r)
		return -1;
	Py_DECREF(r);
	return 0;
}

static PyObject *module_init(void)
{
	if (PyType_Ready(&TimeOnlyRegionType) < 0 || PyType_Ready(&DisabledRegionType) < 0 ||
	    PyType_Ready(&ThreadsRegionType) < 0 || PyType_Ready(&LinesRegionType) < 0 ||
	    PyType_Ready(&AggregateRegionType) < 0 || PyType_Ready(&ProfiledFunctionType) < 0)
		return NULL;
	if (PyType_Ready(&AsyncRegionType) < 0)
		return NULL;
	PyObject *mod = PyModule_Create(&module_def);
	if (!mod)
		return NULL;
	if (!sp_registry) {
		if (!(sp_registry = PyDict_New()))
			goto fail;
		if (pthread_key_create(&open_blocks_key, open_blocks_free) != 0) {
			PyErr_SetString(PyExc_RuntimeError, "cannot create a thread-specific key");
			goto fail;
		}
	}
	if (!lane_names && !(lane_names = PyList_New(0)))
		goto fail;
	if (PyModule_AddObjectRef(mod, "TimeOnlyProfileRegion", (PyObject *)&TimeOnlyRegionType) < 0 ||
	    PyModule_AddObjectRef(mod, "DisabledProfileRegion", (PyObject *)&DisabledRegionType) < 0 ||
	    PyModule_AddObjectRef(mod, "ProfiledFunction", (PyObject *)&ProfiledFunctionType) < 0 ||
	    PyModule_AddStringConstant(mod, "__version__", SP_VERSION) < 0 ||
	    PyModule_AddObjectRef(mod, "ThreadsProfileRegion", (PyObject *)&ThreadsRegionType) < 0 ||
	    PyModule_AddObjectRef(mod, "LineProfileRegion", (PyObject *)&LinesRegionType) < 0 ||
	    PyModule_AddObjectRef(mod, "AggregateProfileRegion", (PyObject *)&AggregateRegionType) < 0 ||
	    PyModule_AddObjectRef(mod, "_lane_names", lane_names) < 0 ||
	    PyModule_AddObjectRef(mod, "_registry", sp_registry) < 0 ||
	    PyModule_AddObject(mod, "_shim_source",
			       PyUnicode_DecodeUTF8((const char *)scope_profiler_shim_py,
						    (Py_ssize_t)scope_profiler_shim_py_len, "strict")) < 0)
		goto fail;
	if (PyModule_AddObjectRef(mod, "AsyncProfileRegion", (PyObject *)&AsyncRegionType) < 0)
		goto fail;
	if (sp_tracer_init() != 0 || sp_linetrace_init() != 0 || sp_results_init() != 0 ||
	    PyModule_AddFunctions(mod, sp_tracer_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_results_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_exitphase_methods) != 0)
		goto fail;
	if (run_python_layer(mod) != 0)
		goto fail;
	/* Decorated `async def` functions are timed through it (pf_call_coro). */
	Py_XSETREF(timed_coroutine, PyObject_GetAttrString(mod, "_timed_coroutine"));
	if (!timed_coroutine)
		goto fail;
	/* The importing thread (the main thread under `run`) is lane 0. */
	sp_current_lane();
	return mod;
fail:
	Py_DECREF(mod);
	return NULL;
}

int sp_pymodule_register(void)
{
	return PyImport_AppendInittab("scope_profiler", module_init);
}
