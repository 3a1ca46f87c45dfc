/* linetrace_settrace.c - line timing's back end on CPython 3.11: a C
 * trace function (PyEval_SetTrace) installed in a thread only while it is
 * held; it turns line events off in every other frame at its first event,
 * so code called from a chosen function pays only for its call events.
 * Compiled as part of linetrace.c, which includes it on 3.11
 * (linetrace_monitoring.c from 3.12) and says what a back end defines;
 * compiled on its own (the Makefile compiles every file of src/python) it
 * is empty. */
#ifdef SP_LINETRACE_BACKEND
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE

typedef struct {
	PyObject_HEAD
	struct frame_stack fs;
} LineState;

static void ls_dealloc(PyObject *self)
{
	free(((LineState *)self)->fs.stack);
	Py_TYPE(self)->tp_free(self);
}

static PyTypeObject LineStateType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._LineState",
	.tp_basicsize = sizeof(LineState),
	.tp_dealloc = ls_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
};

static int hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	struct frame_stack *fs = &((LineState *)obj)->fs;
	switch (what) {
	case PyTrace_LINE:
		frame_line(fs, frame, frame->f_lineno);
		return 0;
	case PyTrace_CALL: {
		struct table *t = code_table(frame->f_frame->f_code);
		if (t)
			frame_push(fs, t, frame);
		else
			frame->f_trace_lines = 0;   /* not chosen: no line events here */
		return 0;
	}
	case PyTrace_RETURN:
		frame_pop(fs, frame);
		return 0;
	default:
		return 0;
	}
}

int sp_linetrace_hold(void)
{
	if (holds++ > 0)
		return 0;
	PyThreadState *ts = PyThreadState_Get();
	if (ts->c_tracefunc == hook)
		return 0;
	if (ts->c_tracefunc) {
		/* A debugger or coverage tool traces this thread: leave it,
		 * and say once that its calls' lines are not timed (their
		 * count in the region is, which the table would contradict). */
		static int warned;
		if (!warned) {
			warned = 1;
			PySys_WriteStderr("scope-profiler: warning: a trace function of the script's "
					  "(sys.settrace: a debugger, coverage) traces a thread: the lines of "
					  "calls made under it are not timed (Python 3.11; 3.12 and later time "
					  "them)\n");
		}
		return 0;
	}
	LineState *ls = PyObject_New(LineState, &LineStateType);
	if (!ls) {
		holds--;
		return -1;
	}
	ls->fs = (struct frame_stack){0};
	PyEval_SetTrace(hook, (PyObject *)ls);
	Py_DECREF(ls);   /* the thread state holds it */
	return 0;
}

void sp_linetrace_release(void)
{
	if (holds <= 0 || --holds > 0)
		return;
	PyThreadState *ts = PyThreadState_Get();
	if (ts->c_tracefunc == hook)
		PyEval_SetTrace(NULL, NULL);
}

static int backend_init(void)
{
	return PyType_Ready(&LineStateType);
}

static int backend_choose(PyCodeObject *co)
{
	return 0;
}

#endif
