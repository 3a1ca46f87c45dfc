/* lanes.c - the lanes of --track-threads and --track-async: a number per
 * thread (in order of first use) and per asyncio task, with its name for
 * the file (sp_lane_names); with --track-async the `with` blocks open in
 * each task are kept on the task's own stack (sp_lane_blocks), so tasks
 * interleaved in one thread never close each other's calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "sp_blocks.h"
#include "sp_grow.h"
#include "sp_lanes.h"

static struct {
	int32_t next_lane;                /* threads and tasks share the numbering */
	PyObject *get_running_loop;       /* asyncio.events._get_running_loop */
	PyObject *current_tasks;          /* loop -> task, where asyncio keeps a dict */
	PyObject *current_task;           /* asyncio.current_task, where it keeps none */
	PyObject *task_lanes;             /* dict: task -> lane, until the task is done */
	PyObject *forget_task;            /* the done callback that drops a task's entry */
	struct sp_blocks *blocks;         /* indexed by lane */
	size_t n_lane_blocks;
	PyObject *running_loop_key;       /* "__asyncio_running_event_loop__" */
	PyTypeObject *loop_holder_type;   /* the checked holder type, or NULL */
} lanes;

_Thread_local int32_t sp_my_lane = -1;
PyObject *sp_lane_names;   /* list: lane -> "name (ident)" */

int32_t sp_lane_assign(void)
{
	/* The thread's name, for the file; never raises into the caller. */
	PyObject *type, *value, *tb, *name = NULL;
	PyErr_Fetch(&type, &value, &tb);
	/* threading is not imported here: a program that never loads it
	 * has only the main thread (lane 0, taken as the module loads). */
	PyObject *mod_name = PyUnicode_FromString("threading");
	PyObject *threading = mod_name ? PyImport_GetModule(mod_name) : NULL;
	Py_XDECREF(mod_name);
	PyObject *thread = threading ? PyObject_CallMethod(threading, "current_thread", NULL) : NULL;
	PyObject *tname = thread ? PyObject_GetAttrString(thread, "name") : NULL;
	if (tname)
		name = PyUnicode_FromFormat("%S", tname);
	else if (!threading && lanes.next_lane == 0)
		name = PyUnicode_FromString("MainThread");
	else
		name = PyUnicode_FromFormat("thread %lu", PyThread_get_thread_ident());
	/* The lane and its name's index, with no Python code in between: code
	 * that runs while the name is found may let another thread or task
	 * take a lane (and may have given this thread its lane already). */
	if (sp_my_lane < 0) {
		sp_my_lane = lanes.next_lane++;
		if (sp_lane_names)
			PyList_Append(sp_lane_names, name ? name : Py_None);
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

/* lanes.blocks: the open `with` blocks of each lane (a task, or a thread
 * outside any task), innermost last: tasks that interleave in one thread
 * each close their own call. Indexed by lane; used under the GIL, and no
 * Python code runs while an entry is pushed or popped. */

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
	PyObject *known = PyDict_GetItemWithError(lanes.task_lanes, task);
	if (known || PyErr_Occurred()) {
		Py_DECREF(name);
		return known ? (int32_t)PyLong_AsLong(known) : -1;
	}
	/* The lane and its name's index, with no Python code in between (as in
	 * sp_lane_assign: threads and tasks share the numbering). */
	PyObject *num = PyLong_FromLong(lanes.next_lane);
	int rc = num ? PyDict_SetItem(lanes.task_lanes, task, num) : -1;
	if (rc == 0 && PyList_Append(sp_lane_names, name) != 0) {
		PyDict_DelItem(lanes.task_lanes, task);
		rc = -1;
	}
	Py_XDECREF(num);
	Py_DECREF(name);
	if (rc != 0)
		return -1;
	int32_t lane = lanes.next_lane++;
	/* Forgotten when it is done, so that ended tasks are not kept alive. */
	PyObject *r = PyObject_CallMethod(task, "add_done_callback", "O", lanes.forget_task);
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

/* The thread's running loop or None (a new reference); NULL with an
 * exception. */
static inline PyObject *running_loop(void)
{
	PyObject *d = PyThreadState_GetDict();
	PyObject *h = d ? PyDict_GetItemWithError(d, lanes.running_loop_key) : NULL;
	if (h && Py_TYPE(h) == lanes.loop_holder_type)
		return Py_NewRef(((struct loop_holder *)h)->rl_loop);
	PyObject *loop = PyObject_Vectorcall(lanes.get_running_loop, NULL, 0, NULL);
	if (h && loop && loop != Py_None && !lanes.loop_holder_type &&
	    Py_TYPE(h)->tp_basicsize == sizeof(struct loop_holder) &&
	    strcmp(Py_TYPE(h)->tp_name, "_RunningLoopHolder") == 0 &&
	    ((struct loop_holder *)h)->rl_loop == loop)
		lanes.loop_holder_type = Py_TYPE(h);
	return loop;
}

/* The calling task's lane; outside any task (no running loop, or a plain
 * callback of the loop), the thread's. Never raises into the caller. */
int32_t sp_async_lane(void)
{
	PyObject *loop = running_loop();
	if (!loop || loop == Py_None) {
		Py_XDECREF(loop);
		PyErr_Clear();
		return sp_current_lane();
	}
	PyObject *task;
	if (lanes.current_tasks) {
		task = PyDict_GetItemWithError(lanes.current_tasks, loop);
		Py_XINCREF(task);
	} else {
		task = PyObject_CallOneArg(lanes.current_task, loop);
	}
	Py_DECREF(loop);
	if (!task || task == Py_None) {
		Py_XDECREF(task);
		PyErr_Clear();
		return sp_current_lane();
	}
	PyObject *known = PyDict_GetItemWithError(lanes.task_lanes, task);
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
	PyObject *known = PyDict_GetItemWithError(lanes.task_lanes, task);
	if (!known)
		return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
	long lane = PyLong_AsLong(known);
	if (lane >= 0 && (size_t)lane < lanes.n_lane_blocks)
		sp_blocks_free(&lanes.blocks[lane]);
	if (PyDict_DelItem(lanes.task_lanes, task) != 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef forget_task_def = {"_forget_task", forget_task_cb, METH_O, NULL};

/* Whether tasks._current_tasks (ct, a dict) is where asyncio keeps each loop's
 * running task: the C accelerator's own dict (CPython 3.7 to 3.13), or the
 * pure-Python one when current_task is the Python function. From 3.14 the
 * accelerator keeps the running task in the thread state and the module's
 * dict stays empty; there current_task() is asked. Never raises. */
static int tasks_dict_is_live(PyObject *tasks, PyObject *ct)
{
	int live = 0;
	PyObject *c_mod = PyImport_ImportModule("_asyncio");
	PyObject *c_ct = c_mod ? PyObject_GetAttrString(c_mod, "_current_tasks") : NULL;
	if (c_ct == ct) {
		live = 1;
	} else {
		PyErr_Clear();
		PyObject *fn = PyObject_GetAttrString(tasks, "current_task");
		PyObject *py_fn = fn ? PyObject_GetAttrString(tasks, "_py_current_task") : NULL;
		live = py_fn && fn == py_fn;
		Py_XDECREF(py_fn);
		Py_XDECREF(fn);
	}
	Py_XDECREF(c_ct);
	Py_XDECREF(c_mod);
	PyErr_Clear();
	return live;
}

/* Caches asyncio's functions (imports asyncio) the first time the mode is
 * chosen; -1 with an exception. */
int sp_async_init(void)
{
	if (lanes.get_running_loop)
		return 0;
	PyObject *events = PyImport_ImportModule("asyncio.events");
	PyObject *tasks = events ? PyImport_ImportModule("asyncio.tasks") : NULL;
	PyObject *loop_fn = tasks ? PyObject_GetAttrString(events, "_get_running_loop") : NULL;
	PyObject *ct = loop_fn ? PyObject_GetAttrString(tasks, "_current_tasks") : NULL;
	PyObject *ct_fn = NULL;
	if (ct && !(PyDict_CheckExact(ct) && tasks_dict_is_live(tasks, ct)))
		Py_CLEAR(ct);
	if (loop_fn && !ct) {
		PyErr_Clear();
		ct_fn = PyObject_GetAttrString(tasks, "current_task");
	}
	Py_XDECREF(tasks);
	Py_XDECREF(events);
	if (!loop_fn || (!ct && !ct_fn))
		goto fail;
	if (!lanes.task_lanes && !(lanes.task_lanes = PyDict_New()))
		goto fail;
	if (!lanes.running_loop_key &&
	    !(lanes.running_loop_key = PyUnicode_InternFromString("__asyncio_running_event_loop__")))
		goto fail;
	if (!lanes.forget_task && !(lanes.forget_task = PyCFunction_New(&forget_task_def, NULL)))
		goto fail;
	lanes.current_tasks = ct;
	lanes.current_task = ct_fn;
	lanes.get_running_loop = loop_fn;
	return 0;
fail:
	Py_XDECREF(loop_fn);
	Py_XDECREF(ct);
	Py_XDECREF(ct_fn);
	return -1;
}

static __attribute__((noinline, cold)) struct sp_blocks *lane_blocks_grow(int32_t lane)
{
	if ((size_t)lane >= lanes.n_lane_blocks) {
		size_t had = lanes.n_lane_blocks;
		if (SP_GROW(&lanes.blocks, &lanes.n_lane_blocks, (size_t)lane + 1) != 0)
			return NULL;
		memset(lanes.blocks + had, 0, (lanes.n_lane_blocks - had) * sizeof *lanes.blocks);
	}
	struct sp_blocks *s = &lanes.blocks[lane];
	return s->depth < s->cap || sp_blocks_grow(s) == 0 ? s : NULL;
}

struct sp_blocks *sp_lane_blocks(int32_t lane)
{
	if (__builtin_expect((size_t)lane < lanes.n_lane_blocks, 1)) {
		struct sp_blocks *s = &lanes.blocks[lane];
		if (__builtin_expect(s->depth < s->cap, 1))
			return s;
	}
	return lane_blocks_grow(lane);
}

struct sp_blocks *sp_lane_blocks_of(int32_t lane)
{
	return lane >= 0 && (size_t)lane < lanes.n_lane_blocks ? &lanes.blocks[lane] : NULL;
}

int sp_lanes_init(void)
{
	if (!sp_lane_names && !(sp_lane_names = PyList_New(0)))
		return -1;
	return 0;
}
