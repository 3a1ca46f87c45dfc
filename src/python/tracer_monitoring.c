/* tracer_monitoring.c - the --recursive hook's back end on CPython 3.12
 * and later: sys.monitoring (PEP 669) callbacks of a tool id of our own, so
 * cProfile, coverage and debuggers keep theirs; a code object that is not
 * traced turns its events off at its first call. Compiled as part of
 * tracer.c, which includes it from 3.12 (tracer_setprofile.c on 3.11) and
 * says what a back end defines; compiled on its own (the Makefile compiles
 * every file of src/python) it is empty. */
#ifdef SP_TRACER_BACKEND
#include <pthread.h>

static inline void *code_cached(PyCodeObject *co)
{
	void *x = NULL;
	sp_code_get_extra((PyObject *)co, extra_index, &x);
	return x;
}

/* A thread's stack, found through a thread-local pointer; every stack is
 * also in a list (under the lock, which thread exits take without the GIL)
 * so that sp_tracer_stop_all can end every thread's open calls. */
struct tstack {
	struct call_stack s;
	int active;                    /* this thread records */
	struct tstack *next;
};

static _Thread_local struct tstack *me;

static struct {
	int tool;                      /* our sys.monitoring tool id, or -1 */
	int events_on;                 /* our events are set */
	int every_thread;              /* `run --recursive`: threads record from their first call */
	struct tstack *all;
	pthread_mutex_t lock;
	pthread_key_t key;             /* frees a thread's stack when it exits */
} mon = {.tool = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static void thread_exit(void *p)
{
	struct tstack *t = p;
	pthread_mutex_lock(&mon.lock);
	for (struct tstack **at = &mon.all; *at; at = &(*at)->next)
		if (*at == t) {
			*at = t->next;
			break;
		}
	pthread_mutex_unlock(&mon.lock);
	PyMem_RawFree(t->s.calls);
	PyMem_RawFree(t);
}

/* A forked child has one thread; the lock may have been held by another. */
static void after_fork(void)
{
	pthread_mutex_init(&mon.lock, NULL);
}

static int backend_init(void)
{
	if (pthread_key_create(&mon.key, thread_exit) != 0 || pthread_atfork(NULL, NULL, after_fork) != 0) {
		PyErr_SetString(PyExc_RuntimeError, "could not prepare the profile hook's thread state");
		return -1;
	}
	return 0;
}

/* The calling thread's stack, made on its first traced call. */
static __attribute__((noinline, cold)) struct tstack *my_stack(void)
{
	if (me)
		return me;
	struct tstack *t = PyMem_RawCalloc(1, sizeof *t);
	if (!t || stack_init(&t->s) != 0) {
		PyMem_RawFree(t);
		return NULL;
	}
	pthread_setspecific(mon.key, t);
	pthread_mutex_lock(&mon.lock);
	t->next = mon.all;
	mon.all = t;
	pthread_mutex_unlock(&mon.lock);
	return me = t;
}

/* A call starts (PY_START, PY_RESUME, PY_THROW). Returns 1 when its code
 * is not traced. */
static inline int enter(PyCodeObject *co)
{
	void *x = code_cached(co);
	if (x == SKIP)
		return 1;
	struct tstack *t = me;
	if (__builtin_expect(!t || !t->active, 0)) {
		/* Threads that do not record, unless every thread does: the
		 * events stay on once a profile(recursive=True) call ran. Code
		 * not traced turns its events off as in a call; the script's
		 * own gets no region until a call records it (before: an empty
		 * region, in get_all_regions(), for each function the program
		 * ran outside the call). */
		if (!mon.every_thread || !(t = my_stack())) {
			if (!x)
				x = classify(co, PyEval_GetGlobals(), 0);
			return x == SKIP;
		}
		t->active = 1;
	}
	if (__builtin_expect((uintptr_t)x <= (uintptr_t)TRACED_LATER, 0)) {
		x = classify(co, PyEval_GetGlobals(), 1);   /* the frame that starts */
		if (x == SKIP)
			return 1;
	}
	push_call(&t->s, x, co, sp_mode.threads);
	return 0;
}

/* A call ends (PY_RETURN, PY_YIELD, PY_UNWIND). Returns 1 when it was not
 * one of ours. */
static inline int leave(PyCodeObject *co)
{
	struct tstack *t = me;
	return t ? pop_call(&t->s, co) : 1;
}

/* Each callback gets the code object first. Those of local events return
 * DISABLE for code that is not traced, so it runs without them. */
static PyObject *cb_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (enter((PyCodeObject *)args[0]))
		return Py_NewRef(sp_mon_disable);
	Py_RETURN_NONE;
}

static PyObject *cb_throw(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	enter((PyCodeObject *)args[0]);
	Py_RETURN_NONE;
}

static PyObject *cb_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (leave((PyCodeObject *)args[0]) && code_cached((PyCodeObject *)args[0]) == SKIP)
		return Py_NewRef(sp_mon_disable);
	Py_RETURN_NONE;
}

static PyObject *cb_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	leave((PyCodeObject *)args[0]);
	Py_RETURN_NONE;
}

static PyObject *cb_start_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

static PyMethodDef cb_defs[] = {
	{"_on_start", (PyCFunction)(void (*)(void))cb_start, METH_FASTCALL, NULL},
	{"_on_throw", (PyCFunction)(void (*)(void))cb_throw, METH_FASTCALL, NULL},
	{"_on_return", (PyCFunction)(void (*)(void))cb_return, METH_FASTCALL, NULL},
	{"_on_unwind", (PyCFunction)(void (*)(void))cb_unwind, METH_FASTCALL, NULL},
	{"_on_start_wait", (PyCFunction)(void (*)(void))cb_start_wait, METH_FASTCALL, NULL},
};

/* `run --recursive`'s start callback until the program's main module
 * starts (code "<module>" run in a namespace called __main__: the script,
 * -m's module through runpy, -c): what the interpreter and the tool do
 * before it is not the program's. Then the start callback proper, from
 * that call on. */
static PyObject *cb_start_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyCodeObject *co = (PyCodeObject *)args[0];
	if (PyUnicode_CompareWithASCIIString(co->co_name, "<module>") != 0)
		Py_RETURN_NONE;
	PyObject *globals = PyEval_GetGlobals();   /* borrowed: the frame that starts */
	PyObject *name = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
	if (!name || !PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "__main__") != 0)
		Py_RETURN_NONE;
	if (sp_mon_register(mon.tool, "PY_START|PY_RESUME", &cb_defs[0]) != 0)
		PyErr_Clear();
	return cb_start(self, args, nargs);
}

#define TRACER_EVENTS "PY_START|PY_RESUME|PY_THROW|PY_RETURN|PY_YIELD|PY_UNWIND"

/* Our tool id and callbacks (once), then our events. */
static int events_on(void)
{
	if (mon.events_on)
		return 0;
	if (mon.tool < 0) {
		int tool = sp_mon_claim("scope-profiler --recursive");
		if (tool < 0)
			return -1;
		if (sp_mon_register(tool, "PY_START|PY_RESUME", &cb_defs[0]) != 0 ||
		    sp_mon_register(tool, "PY_THROW", &cb_defs[1]) != 0 ||
		    sp_mon_register(tool, "PY_RETURN|PY_YIELD", &cb_defs[2]) != 0 ||
		    sp_mon_register(tool, "PY_UNWIND", &cb_defs[3]) != 0)
			return -1;
		mon.tool = tool;
	}
	long ev = sp_mon_events(TRACER_EVENTS);
	if (ev < 0 || sp_mon_set_events(mon.tool, ev) != 0)
		return -1;
	mon.events_on = 1;
	return 0;
}

/* Every call reads sp_mode.threads. */
void sp_tracer_lanes_on(void)
{
}

void sp_tracer_mode(void)
{
}

int sp_tracer_start_thread(void)
{
	if (me && me->active)
		return 0;
	if (events_on() != 0)
		return -1;
	struct tstack *t = my_stack();
	if (!t) {
		PyErr_NoMemory();
		return -1;
	}
	t->active = 1;
	return 1;
}

void sp_tracer_stop_thread(void)
{
	struct tstack *t = me;
	if (t && t->active) {
		close_open_calls(&t->s, sp_clock_ns(), 1);
		t->active = 0;
	}
}

/* `run --recursive`: every thread records from its first call. */
static int start_every_thread(int wait)
{
	if (sp_tracer_start_thread() < 0 ||
	    (wait && sp_mon_register(mon.tool, "PY_START|PY_RESUME", &cb_defs[4]) != 0))
		return -1;
	mon.every_thread = 1;
	return 0;
}

void sp_tracer_stop_all(void)
{
	int64_t now = sp_clock_ns();
	mon.every_thread = 0;
	pthread_mutex_lock(&mon.lock);
	for (struct tstack *t = mon.all; t; t = t->next) {
		close_open_calls(&t->s, now, t == me);
		t->active = 0;
	}
	pthread_mutex_unlock(&mon.lock);
	if (mon.events_on && sp_mon_set_events(mon.tool, 0) == 0)
		mon.events_on = 0;
	PyErr_Clear();
}

static int this_thread_traced(void)
{
	return me && me->active;
}
#define THREAD_HOOK_METHOD

/* No per-thread hook of ours to hand to threading.setprofile here. */
static int is_thread_hook(PyObject *function)
{
	return 0;
}

#endif
