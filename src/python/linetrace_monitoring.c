/* linetrace_monitoring.c - line timing's back end on CPython 3.12 and
 * later: sys.monitoring events of the chosen code objects only
 * (set_local_events), under a tool id of our own, so other code pays
 * nothing; they count while the thread holds the hook. Exceptions leaving
 * a frame (PY_UNWIND) and throw() into a generator (PY_THROW) are global
 * events, rare and cheap. Compiled as part of linetrace.c, which includes
 * it from 3.12 (linetrace_settrace.c on 3.11) and says what a back end
 * defines; compiled on its own (the Makefile compiles every file of
 * src/python) it is empty. */
#ifdef SP_LINETRACE_BACKEND
#include <pthread.h>

static _Thread_local struct frame_stack thread_frames;
static int line_tool = -1;
static long local_events;
static pthread_key_t frames_key;       /* frees a thread's stack at its exit */

static void frames_free(void *p)
{
	free(p);
}

/* PY_START, PY_RESUME (local) and PY_THROW (global). */
static PyObject *cb_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct table *t;
	if (holds > 0 && (t = code_table((PyCodeObject *)args[0]))) {
		struct frame_stack *fs = &thread_frames;
		void *before = fs->stack;
		frame_push(fs, t, args[0]);
		if (fs->stack != before)
			pthread_setspecific(frames_key, fs->stack);
	}
	Py_RETURN_NONE;
}

/* LINE: (code, line). */
static PyObject *cb_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct frame_stack *fs = &thread_frames;
	if (fs->depth)
		frame_line(fs, args[0], PyLong_AsLong(args[1]));
	Py_RETURN_NONE;
}

/* JUMP: (code, from, to). A jump back to an earlier place of the same line
 * starts that line again, as the interpreter's own line tracing counts it
 * (a loop written on one line); other jumps are never line events. */
static PyObject *cb_jump(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyCodeObject *co = (PyCodeObject *)args[0];
	long from = PyLong_AsLong(args[1]), to = PyLong_AsLong(args[2]);
	if (to >= from)
		return Py_NewRef(sp_mon_disable);
	int to_line = PyCode_Addr2Line(co, (int)to);
	if (to_line != PyCode_Addr2Line(co, (int)from))
		return Py_NewRef(sp_mon_disable);   /* a LINE event comes */
	struct frame_stack *fs = &thread_frames;
	if (fs->depth)
		frame_line(fs, co, to_line);
	Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD (local) and PY_UNWIND (global). */
static PyObject *cb_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct frame_stack *fs = &thread_frames;
	if (fs->depth)
		frame_pop(fs, args[0]);
	Py_RETURN_NONE;
}

static PyMethodDef cb_defs[] = {
	{"_on_line_start", (PyCFunction)(void (*)(void))cb_start, METH_FASTCALL, NULL},
	{"_on_line", (PyCFunction)(void (*)(void))cb_line, METH_FASTCALL, NULL},
	{"_on_line_jump", (PyCFunction)(void (*)(void))cb_jump, METH_FASTCALL, NULL},
	{"_on_line_end", (PyCFunction)(void (*)(void))cb_end, METH_FASTCALL, NULL},
};

int sp_linetrace_hold(void)
{
	holds++;
	return 0;
}

void sp_linetrace_release(void)
{
	if (holds <= 0 || --holds > 0)
		return;
	thread_frames.depth = 0;   /* frames still open are not timed further */
}

static int backend_init(void)
{
	if (pthread_key_create(&frames_key, frames_free) != 0) {
		PyErr_SetString(PyExc_RuntimeError, "could not prepare line timing's thread state");
		return -1;
	}
	return 0;
}

/* Our tool (once), then the chosen code's local events. */
static int backend_choose(PyCodeObject *co)
{
	if (line_tool < 0) {
		int tool = sp_mon_claim("scope-profiler --line-profile");
		if (tool < 0)
			return -1;
		long global = sp_mon_events("PY_UNWIND|PY_THROW");
		local_events = sp_mon_events("PY_START|PY_RESUME|PY_RETURN|PY_YIELD|LINE|JUMP");
		if (global < 0 || local_events < 0 ||
		    sp_mon_register(tool, "PY_START|PY_RESUME|PY_THROW", &cb_defs[0]) != 0 ||
		    sp_mon_register(tool, "LINE", &cb_defs[1]) != 0 ||
		    sp_mon_register(tool, "JUMP", &cb_defs[2]) != 0 ||
		    sp_mon_register(tool, "PY_RETURN|PY_YIELD|PY_UNWIND", &cb_defs[3]) != 0 ||
		    sp_mon_set_events(tool, global) != 0)
			return -1;
		line_tool = tool;
	}
	return sp_mon_set_local_events(line_tool, (PyObject *)co, local_events);
}

#endif
