/* exitphase.c - the end of `scope-profiler run`: from the moment the
 * profile is about to be written, SIGINT and SIGTERM no longer unwind
 * Python code (where they would abort the write with a traceback); they are
 * remembered, the profile is completed, and `run` then ends as the signal
 * asks: killed by SIGINT (a shell's 130), or status 143 for SIGTERM, as
 * during the script. A second such signal while the profile is being
 * written abandons it at once: the previous file stays where it was. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sp_outpath.h"
#include "sp_pymodule.h"
#include "sp_pysession.h"

static volatile sig_atomic_t exit_signal;   /* the first one received, or 0 */

static void on_exit_signal(int sig)
{
	if (exit_signal) {
		/* Again: leave now, without the temporary file; the output
		 * path keeps what it had. */
		sp_outpath_cleanup_tmp();
		if (sig == SIGINT) {
			/* Killed by SIGINT, as python ends on Ctrl-C; the
			 * handler's own mask holds it back until unblocked. */
			sigset_t set;
			sigemptyset(&set);
			sigaddset(&set, SIGINT);
			signal(SIGINT, SIG_DFL);
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			raise(SIGINT);
		}
		_exit(128 + sig);
	}
	exit_signal = sig;
	static const char msg[] = "scope-profiler: run: finishing the profile; "
				  "interrupt again to abandon it\n";
	ssize_t unused = write(STDERR_FILENO, msg, sizeof msg - 1);
	(void)unused;
}

int sp_run_exit_signal(void)
{
	return exit_signal;
}

/* _note_exit_signal(signum): the run's Python SIGTERM handler says it ran,
 * so that the status is 143 even where Python's shutdown (waiting for
 * threads, other atexit callbacks) swallows its SystemExit. */
static PyObject *note_exit_signal(PyObject *m, PyObject *arg)
{
	long sig = PyLong_AsLong(arg);
	if (sig == -1 && PyErr_Occurred())
		return NULL;
	if (!exit_signal && (sig == SIGINT || sig == SIGTERM))
		exit_signal = (int)sig;
	Py_RETURN_NONE;
}

/* _run_exit(): the run's atexit callback, in C so that no signal handler
 * of Python's can run between the script's end and the handlers below;
 * then the session ends (sp_session_end_run: write, print, clean up). */
static PyObject *run_exit(PyObject *m, PyObject *unused)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_exit_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A signal that arrived just before, its Python handler not yet run:
	 * Python's KeyboardInterrupt for SIGINT (the run's SIGTERM handler
	 * notes itself). */
	if (PyErr_CheckSignals() < 0) {
		if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) && !exit_signal)
			exit_signal = SIGINT;
		PyErr_Clear();
	}
	sp_session_end_run();
	Py_RETURN_NONE;
}

PyMethodDef sp_exitphase_methods[] = {
	{"_run_exit", run_exit, METH_NOARGS, NULL},
	{"_note_exit_signal", note_exit_signal, METH_O, NULL},
	{NULL},
};
