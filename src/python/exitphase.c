/* exitphase.c - how `scope-profiler run` ends, whatever ends it.
 *
 * The exit signals: SIGINT (Python's KeyboardInterrupt), and SIGTERM,
 * SIGHUP (the terminal or ssh session is gone), SIGXCPU (RLIMIT_CPU, a
 * batch system's CPU limit), SIGUSR1 and SIGUSR2 (SGE's -notify, Slurm's
 * --signal), SIGALRM, SIGVTALRM and SIGPROF (a script's own hard time
 * limit: signal.alarm() or setitimer() with no handler), which the run turns into SystemExit(128 + signal) where the
 * script has no handler of its own, so that the profile is written as at
 * sys.exit. From the moment the profile is about to be written, they no
 * longer unwind Python code (where they would abort the write with a
 * traceback): they are remembered, the profile is completed, and `run`
 * then ends as the signal asks (killed by SIGINT, a shell's 130; status
 * 128 + signal for the others). A second one while the profile is being
 * written abandons it at once: the previous file stays where it was.
 *
 * Python swallows an exception raised in its own shutdown (an atexit
 * callback of the script's, the wait for threads): such a signal is noted
 * all the same (the run's sys.unraisablehook watch), so the status is the
 * signal's, as during the script; a KeyboardInterrupt that code raised
 * there (no SIGINT came: on_sigint) is python's, ignored. Nor does
 * _thread.interrupt_main() reach the run's handler of a signal the script
 * left at SIG_DFL: python does nothing then.
 *
 * os.exec*() replaces the process: the profile is written first (the
 * run's os.execv / os.execve, through which every os.exec* function goes).
 * os._exit() writes the run's profile first, and in a profiled child
 * process (run --subprocesses) the child's. os.fork() and os.forkpty() pause the profile's
 * stream around the fork (sp_spill.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sp_exitphase.h"
#include "sp_finalize.h"
#include "sp_likwid.h"
#include "sp_merge.h"
#include "sp_mpi.h"
#include "sp_outpath.h"
#include "sp_pysession.h"
#include "sp_spill.h"
#include "sp_stream.h"

static const int exit_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2,
				    SIGALRM, SIGVTALRM, SIGPROF};
#define NSIGNALS (sizeof exit_signals / sizeof exit_signals[0])

static volatile sig_atomic_t exit_signal;   /* the first one received, or 0 */
static pthread_t main_thread;               /* the process's (a fork's: its forking thread) */
static volatile sig_atomic_t child_signal;  /* a profiled child's (below), or 0 */
static volatile sig_atomic_t child_writing; /* the child writes its profile (its end) */
static volatile sig_atomic_t sigint_real;   /* a SIGINT was received (on_sigint): not
					     * a KeyboardInterrupt that code raised */
static void (*python_c_handler)(int);       /* Python's own C handler, as _run_watch or
					     * _child_signals found it (one for every signal) */
static int run_signals;   /* this process is the run: its exit signals are run_watch's */
static int launched_rank = -1;   /* the run's MPI rank under a launcher, else -1 */
static int run_ending;    /* run_signal_end writes the profile: no new process from here */
static void child_signal_end(void);
static void run_signal_end(int sig);
static void watch_late(void);
static void die_by(int sig);
/* "scope-profiler: run: child process PID" then what (async-signal-safe). */
static void child_says(const char *what)
{
	static const char head[] = "scope-profiler: run: child process ";
	char pid[24], *p = pid + sizeof pid;
	unsigned long v = (unsigned long)getpid();
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	ssize_t unused_rc = write(STDERR_FILENO, head, sizeof head - 1);
	unused_rc = write(STDERR_FILENO, p, (size_t)(pid + sizeof pid - p));
	unused_rc = write(STDERR_FILENO, what, strlen(what));
	(void)unused_rc;
}

static void child_ticks_set(long ms);
static void on_child_signal(int sig);

/* Blocks the exit signals in the calling thread; the mask it had into *before. */
static void hold_exit_signals(sigset_t *before)
{
	sigset_t held;
	sigemptyset(&held);
	for (size_t i = 0; i < NSIGNALS; i++)
		sigaddset(&held, exit_signals[i]);
	pthread_sigmask(SIG_BLOCK, &held, before);
}

static ptrdiff_t signal_index(long sig)
{
	for (size_t i = 0; i < NSIGNALS; i++)
		if (exit_signals[i] == sig)
			return (ptrdiff_t)i;
	return -1;
}

/* The exit signal that ends the run (and that the end's merge of its
 * children knows of). Async-signal-safe. */
static struct timespec exit_signal_at;   /* when exit_signal came (CLOCK_MONOTONIC) */

static void note_exit_signal(int sig)
{
	clock_gettime(CLOCK_MONOTONIC, &exit_signal_at);
	exit_signal = sig;
	sp_final_note_signal(sig);
}

/* SIGXCPU (the kernel's, every CPU second past RLIMIT_CPU's soft limit)
 * and the timers' signals (an interval timer's repeats): no one's request
 * to stop at once. */
static int repeats_by_itself(int sig)
{
	return sig == SIGXCPU || sig == SIGALRM || sig == SIGVTALRM || sig == SIGPROF;
}

/* The same signal again within a second of the first is the same request:
 * GNU timeout sends it to the run and then to its process group, a batch
 * system to every process of the job; so is a repeat of one that repeats by
 * itself, whenever it comes. Not Ctrl-C, which a terminal sends once: again,
 * it abandons the write. Async-signal-safe. */
static int same_request_as(int sig, int first, const struct timespec *first_at)
{
	struct timespec now;
	if (sig == first && repeats_by_itself(sig))
		return 1;
	if (sig != first || sig == SIGINT || clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		return 0;
	long long ms = (long long)(now.tv_sec - first_at->tv_sec) * 1000 +
		       (now.tv_nsec - first_at->tv_nsec) / 1000000;
	return ms >= 0 && ms < 1000;
}

static int same_request(int sig)
{
	return same_request_as(sig, exit_signal, &exit_signal_at);
}

/* What a second signal says as it abandons the end (run_exit writes it
 * before the end begins: a signal handler only writes it out): where the
 * streamed calls stay, when the stream has made that file by then. */
static char abandon_msg[PATH_MAX + 160];
static size_t abandon_len;
static char abandon_partial[PATH_MAX];
static const char abandon_none[] = "scope-profiler: run: abandoned: no profile written\n";
/* An MPI rank's stream ends in a finished file of its own (OUT.rankN),
 * before the ranks meet to merge: abandoned after that, the file holds
 * the rank's calls (the stream removed any earlier one when it began). */
static char abandon_rank_msg[2 * PATH_MAX + 160];
static size_t abandon_rank_len;
static char abandon_rank_file[PATH_MAX];

static void on_exit_signal(int sig)
{
	if (exit_signal && same_request(sig))
		return;
	if (exit_signal) {
		/* Again: leave now, without the temporary file; the output
		 * path keeps what it had. */
		sp_outpath_cleanup_tmp();
		if (abandon_len) {
			/* Its file put in place already (the end was removing the
			 * rank files, or printing): said so, never "no profile". */
			const char *done = sp_outpath_committed();
			if (done && access(done, F_OK) == 0 &&
			    !(abandon_rank_len && strcmp(done, abandon_rank_file) == 0)) {
				static const char head[] = "scope-profiler: run: abandoned after the profile was written to ";
				ssize_t unused = write(STDERR_FILENO, head, sizeof head - 1);
				unused = write(STDERR_FILENO, done, strlen(done));
				unused = write(STDERR_FILENO, "\n", 1);
				(void)unused;
				die_by(sig);
			}
			int streamed = abandon_partial[0] && access(abandon_partial, F_OK) == 0;
			int finished = !streamed && abandon_rank_len && access(abandon_rank_file, F_OK) == 0;
			ssize_t unused = streamed ? write(STDERR_FILENO, abandon_msg, abandon_len)
					 : finished ? write(STDERR_FILENO, abandon_rank_msg, abandon_rank_len)
						  : write(STDERR_FILENO, abandon_none, sizeof abandon_none - 1);
			(void)unused;
		}
		/* Killed by the signal, as python is; the handler's own mask
		 * holds it back until unblocked. */
		die_by(sig);
	}
	note_exit_signal(sig);
	static const char msg[] = "scope-profiler: run: finishing the profile; "
				  "interrupt again to abandon it\n";
	ssize_t unused = write(STDERR_FILENO, msg, sizeof msg - 1);
	(void)unused;
}

int sp_run_exit_signal_last(void)
{
	/* Held while read: one arriving between the read and the return
	 * would otherwise be noted (and announced) but not obeyed. */
	sigset_t before, pending;
	hold_exit_signals(&before);
	int sig = exit_signal;
	/* Pending, not blocked by the script itself (python ends with that
	 * one never delivered) */
	if (!sig && sigpending(&pending) == 0)
		for (size_t i = 0; i < NSIGNALS && !sig; i++)
			if (sigismember(&pending, exit_signals[i]) && !sigismember(&before, exit_signals[i]))
				sig = exit_signals[i];
	for (size_t i = 0; i < NSIGNALS; i++) {
		struct sigaction old;
		if (sigaction(exit_signals[i], NULL, &old) == 0 && old.sa_handler == on_exit_signal)
			signal(exit_signals[i], SIG_DFL);
	}
	/* A pending one is answered by the caller: it stays held. */
	if (!sig)
		pthread_sigmask(SIG_SETMASK, &before, NULL);
	return sig;
}

/* ---- the script sees the exit signals as plain python shows them ----
 *
 * Where the run (or a profiled child) put its handler in place of SIG_DFL,
 * signal.getsignal() and signal.signal()'s return say SIG_DFL, as under
 * plain python: a script or library that chains to the handler it found
 * when it is callable (PyTorch Lightning's SLURM requeue at SIGUSR1)
 * otherwise called ours, which ended the process. signal.signal(sig,
 * SIG_DFL) puts ours back (the signal still ends the process as its
 * default action would, the profile written first). _signal's own
 * functions, kept here, are what this file calls. */
static PyObject *real_getsignal_fn, *real_signal_fn;
static PyObject *ours[NSIGNALS];   /* our handler of exit_signals[i], or NULL */
static PyObject *run_handler;      /* the run's (_on_exit_signal), in the run's process */
/* SIGPIPE: Python ignores it (a write to a closed pipe raises
 * BrokenPipeError); a script that sets it to SIG_DFL (`| head` ends it at
 * once, silently) gets the run's handler instead, hidden as the others:
 * the profile is written, then the run is killed by SIGPIPE as python is. */
static int pipe_ours;

static PyObject *real_getsignal(PyObject *sigmod, int sig)
{
	return real_getsignal_fn ? PyObject_CallFunction(real_getsignal_fn, "i", sig)
				 : PyObject_CallMethod(sigmod, "getsignal", "i", sig);
}

static PyObject *real_signal(PyObject *sigmod, int sig, PyObject *handler)
{
	return real_signal_fn ? PyObject_CallFunction(real_signal_fn, "iO", sig, handler)
			      : PyObject_CallMethod(sigmod, "signal", "iO", sig, handler);
}

static PyObject *real_signal_default(PyObject *sigmod, int sig)
{
	PyObject *dfl = PyLong_FromVoidPtr((void *)SIG_DFL);
	PyObject *r = dfl ? real_signal(sigmod, sig, dfl) : NULL;
	Py_XDECREF(dfl);
	return r;
}

/* h, or SIG_DFL where h is our handler of a signal (a new reference). */
static PyObject *hide_ours(PyObject *h)
{
	for (size_t i = 0; h && i < NSIGNALS; i++)
		if (ours[i] && h == ours[i]) {
			Py_DECREF(h);
			return PyLong_FromVoidPtr((void *)SIG_DFL);
		}
	return h;
}

/* Python's C handler of sig, in place after a Python-level handler was
 * set, runs under ours (on_child_signal: the deadline of a main thread
 * that does not come back to Python). 1 when it does. */
static int under_our_c_handler(int sig)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) || sa.sa_handler == SIG_DFL ||
	    sa.sa_handler == SIG_IGN)
		return 0;
	if (sa.sa_handler != on_child_signal)
		python_c_handler = sa.sa_handler;
	sa.sa_handler = on_child_signal;
	sigaction(sig, &sa, NULL);
	return 1;
}

/* SIGINT's C handler: notes that a real one came, then Python's (its
 * KeyboardInterrupt). Python's shutdown swallows a KeyboardInterrupt
 * raised in it: the run ends at one a signal brought (unraisable_hook),
 * not at one that code raised in a __del__ or an atexit callback, which
 * python ignores (status 0). */
static void on_sigint(int sig)
{
	sigint_real = 1;
	python_c_handler(sig);   /* keeps errno as it found it */
}

/* Puts on_sigint over Python's C handler of SIGINT, where that is what
 * SIGINT has (not SIG_IGN under nohup, nor another C handler). */
static void count_sigint(void)
{
	struct sigaction sa;
	if (sigaction(SIGINT, NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) || sa.sa_handler == SIG_DFL ||
	    sa.sa_handler == SIG_IGN || sa.sa_handler == on_sigint ||
	    (python_c_handler && sa.sa_handler != python_c_handler))
		return;
	python_c_handler = sa.sa_handler;
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
}

/* An int argument's value (a numpy integer, an IntEnum too), clipped;
 * -1 for anything else. Never raises. */
static Py_ssize_t int_arg(PyObject *o)
{
	if (!PyIndex_Check(o))
		return -1;
	Py_ssize_t v = PyNumber_AsSsize_t(o, NULL);
	if (v == -1 && PyErr_Occurred())
		PyErr_Clear();
	return v;
}

static PyObject *getsignal_shown(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *h = PyObject_Vectorcall(real_getsignal_fn, args, (size_t)nargs, NULL);
	if (h && pipe_ours && h == run_handler && nargs == 1 && int_arg(args[0]) == SIGPIPE)
		Py_SETREF(h, PyLong_FromVoidPtr((void *)SIG_DFL));
	return hide_ours(h);
}

static PyObject *signal_shown(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	Py_ssize_t sig = nargs == 2 ? int_arg(args[0]) : -1;
	ptrdiff_t i = sig > 0 && sig < INT_MAX ? signal_index((long)sig) : -1;
	/* SIGINT set to SIG_DFL (a script that lets Ctrl-C end it at once,
	 * with no traceback): the run's handler too, hidden as the others */
	if (i >= 0 && !ours[i] && sig == SIGINT && run_signals && run_handler &&
	    int_arg(args[1]) == (Py_ssize_t)(intptr_t)SIG_DFL)
		ours[i] = Py_NewRef(run_handler);
	if (sig == SIGPIPE && nargs == 2) {
		int dfl = int_arg(args[1]) == (Py_ssize_t)(intptr_t)SIG_DFL && run_signals && run_handler;
		PyObject *prev = dfl ? PyObject_CallFunction(real_signal_fn, "nO", sig, run_handler)
				     : PyObject_Vectorcall(real_signal_fn, args, (size_t)nargs, NULL);
		if (prev) {
			/* hidden: SIG_DFL where it was ours */
			if (pipe_ours && prev == run_handler)
				Py_SETREF(prev, PyLong_FromVoidPtr((void *)SIG_DFL));
			pipe_ours = dfl;
		}
		return prev;
	}
	if (i >= 0 && ours[i] && int_arg(args[1]) == (Py_ssize_t)(intptr_t)SIG_DFL) {
		PyObject *prev = PyObject_CallFunction(real_signal_fn, "nO", sig, ours[i]);
		if (prev)
			under_our_c_handler((int)sig);
		return hide_ours(prev);
	}
	PyObject *prev = PyObject_Vectorcall(real_signal_fn, args, (size_t)nargs, NULL);
	if (prev && sig == SIGINT)
		count_sigint();   /* Python's C handler is back in place */
	return hide_ours(prev);
}

static PyMethodDef shown_defs[] = {
	{"getsignal", (PyCFunction)(void (*)(void))getsignal_shown, METH_FASTCALL, NULL},
	{"signal", (PyCFunction)(void (*)(void))signal_shown, METH_FASTCALL, NULL},
};

/* _signal.getsignal and _signal.signal as the script sees them (above),
 * once; the originals' docs. 0, or -1 with an exception. */
static int show_signals_as_plain(PyObject *sigmod)
{
	if (real_getsignal_fn)
		return 0;
	PyObject **real[] = {&real_getsignal_fn, &real_signal_fn};
	PyObject *got[2] = {NULL, NULL};
	for (int k = 0; k < 2; k++) {
		got[k] = PyObject_GetAttrString(sigmod, shown_defs[k].ml_name);
		if (!got[k])
			goto fail;
		PyObject *doc = PyObject_GetAttrString(got[k], "__doc__");
		const char *text = doc && PyUnicode_Check(doc) ? PyUnicode_AsUTF8(doc) : NULL;
		shown_defs[k].ml_doc = text ? strdup(text) : NULL;
		Py_XDECREF(doc);
		PyErr_Clear();
	}
	for (int k = 0; k < 2; k++) {
		PyObject *w = PyCFunction_NewEx(&shown_defs[k], NULL, NULL);
		if (!w || PyObject_SetAttrString(sigmod, shown_defs[k].ml_name, w) != 0) {
			Py_XDECREF(w);
			goto fail;
		}
		Py_DECREF(w);
		*real[k] = got[k];
		got[k] = NULL;
	}
	return 0;
fail:
	Py_XDECREF(got[0]);
	Py_XDECREF(got[1]);
	return -1;
}

static PyObject *run_exit(PyObject *m, PyObject *unused);
static void take_exit_signals(int run_pending);

/* The run ends at exit signal sig: plain python ends at such a signal at
 * once, running none of the script's code; so does the run, once its
 * profile is written (the end of the run, as at the script's end), killed
 * by sig as python is (a shell shows 128 + sig). Unwinding the script
 * instead (SystemExit) ran code plain python never runs, which could wait forever: a Pool's terminate()
 * on a lock a killed worker held, multiprocessing's exit joining a child
 * that never ends. The signal's deadline (on_child_signal's ticks) stops:
 * the main thread is here, the write may take its time. */
static void run_signal_end(int sig)
{
	if (sig == SIGPIPE)
		signal(SIGPIPE, SIG_IGN);   /* the end's own writes to the closed pipe fail quietly */
	child_ticks_set(0);
	run_ending = 1;
	watch_late();
	if (!exit_signal)
		note_exit_signal(sig);
	sp_session_note_failed();
	PyObject *r = run_exit(NULL, NULL);
	Py_XDECREF(r);
	PyErr_Clear();
	sp_likwid_close_now();   /* --likwid: its marker file, which exit would have written */
	die_by(sig);
}

/* _on_exit_signal(signum, frame): the run's handler of the exit signals
 * but SIGINT, Python's KeyboardInterrupt, unless the script set that to
 * SIG_DFL (signal_shown) (run_signal_end). */
static PyObject *on_exit_signal_py(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	long sig = nargs >= 1 ? PyLong_AsLong(args[0]) : -1;
	if (sig == -1 && PyErr_Occurred())
		return NULL;
	if (sig == SIGPIPE) {
		if (pipe_ours && !run_ending)
			run_signal_end(SIGPIPE);
		Py_RETURN_NONE;
	}
	ptrdiff_t i = signal_index(sig);
	if (i < 0 || (sig == SIGINT && !ours[i]))
		Py_RETURN_NONE;   /* called by a handler of the script's for another signal */
	run_signal_end((int)sig);
	Py_RETURN_NONE;
}

/* _watch_unraisable(hook)(unraisable): the run's sys.unraisablehook, over
 * the one it found (self). Python's shutdown swallows a KeyboardInterrupt
 * or the run's SystemExit raised in it (an atexit callback, the wait for
 * threads): the signal is noted so that the run ends as it asks. The
 * SystemExit of an exit signal is not printed (plain python would have
 * ended silently at that signal). */
static PyObject *unraisable_hook(PyObject *self, PyObject *u)
{
	PyObject *type = PyObject_GetAttrString(u, "exc_type");
	if (!type)
		PyErr_Clear();
	int quiet = 0;
	/* In Python's shutdown (no frame runs): a KeyboardInterrupt Python
	 * swallowed in a __del__ during the script is python's, ignored. */
	if (type == PyExc_KeyboardInterrupt && !exit_signal && sigint_real && !PyEval_GetFrame() &&
	    pthread_equal(pthread_self(), main_thread))
		note_exit_signal(SIGINT);
	else if (type == PyExc_SystemExit && exit_signal && exit_signal != SIGINT)
		quiet = 1;
	Py_XDECREF(type);
	if (quiet)
		Py_RETURN_NONE;
	return PyObject_CallOneArg(self, u);
}

static PyMethodDef unraisable_def = {
	"unraisablehook", unraisable_hook, METH_O,
	"scope-profiler run's watch over sys.unraisablehook (notes exit signals Python swallowed)."};

/* The profile being written by another thread (the run's end in the main
 * thread, the script's finalize()), the GIL released: os._exit and os.exec*
 * wait until it is complete (they ended the process with the profile half
 * written: a watchdog thread's os._exit), for WRITE_WAIT_S at most: a
 * watchdog's os._exit still ends a run whose end hangs (an MPI rank gone). */
#define WRITE_WAIT_S 10
static void wait_for_the_write(void)
{
	if (!sp_final_writing())
		return;
	Py_BEGIN_ALLOW_THREADS
	for (int ms = 0; sp_final_writing() && ms < WRITE_WAIT_S * 1000; ms += 5) {
		struct timespec pause = {0, 5 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	Py_END_ALLOW_THREADS
}

/* _exec_first(os.execv or os.execve)(*args): writes the profile, then
 * replaces the process. Where the exec fails, what the script records
 * from then on is not in the profile: one line says so. */
static PyObject *exec_first(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	wait_for_the_write();
	if (child_signal)   /* an exit signal came first: it ends the process */
		run_signals ? run_signal_end(child_signal) : child_signal_end();
	int ended = sp_session_end_before_exec();
	PyObject *r = PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
	if (!r && ended)
		sp_session_exec_failed();
	return r;
}

/* The thread that runs the handlers of Python's signals (the main one;
 * in a fork, the one that forked), set where the exit signals get ours. */
/* A thread about to fork once an exit signal came (its handler has not
 * run yet, or writes the profile): plain python, ended at once, started
 * nothing more, and a process started now missed the signal (sent to the whole process group: a batch
 * system's end) and outlives the run (a fork Pool's replacement worker,
 * waiting on its pool for ever: it holds the pool's pipes open; a spawned
 * one sees them close and ends). The main thread ends the process as the
 * handler would; another waits for that end. */
static void no_new_process_once_ending(void)
{
	if (!run_ending && !child_signal)
		return;
	if (child_signal && pthread_equal(pthread_self(), main_thread))
		run_signals ? run_signal_end(child_signal) : child_signal_end();
	Py_BEGIN_ALLOW_THREADS
	for (;;)
		pause();
	Py_END_ALLOW_THREADS
}

/* In the child of a fork() that raced the signal past the check above
 * (or of one outside os.fork: a C library's), before any hook of
 * Python's: it ends by the signal, as the process it was forked from
 * does; otherwise the thread that forked is its main thread. */
static void forked_child(void)
{
	if (child_signal)
		die_by(child_signal);
	main_thread = pthread_self();
	sp_final_forked();   /* a fork while a thread wrote the profile writes nothing (wait_for_the_write) */
}

/* Where a process's exit signals get ours (the run's, a child's). */
static void watch_new_processes(void)
{
	static int registered;
	main_thread = pthread_self();
	if (!registered && pthread_atfork(NULL, NULL, forked_child) == 0)
		registered = 1;
}

/* os.fork and os.forkpty under run: the stream's threads, stopped before
 * the fork, start again once it returned (sp_spill.h). The exit signals
 * are held across it: one sent to the child before its fork hooks gave it
 * its handlers (a Pool may end a worker as soon as it is forked) would be
 * lost (Python forgets signals caught before the hooks) or raise in a
 * hook; held, it comes once they are in place. */
static PyObject *fork_around(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	no_new_process_once_ending();
	sigset_t before;
	hold_exit_signals(&before);
	sp_spill_fork_enter();
	PyObject *r = PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
	sp_spill_fork_leave();
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	return r;
}

/* The originals of the os functions the run wraps, by os_defs' place.
 * The wrappers are module-level builtins of os (no self, __module__ "os"),
 * as the originals are of posix: pickle finds them as os.NAME, so a
 * multiprocessing spawn can send os._exit or os.execv as a target (it
 * raised AttributeError when each wrapper's self was its original). */
enum { OS_EXECV, OS_EXECVE, OS_EXECVPE, OS_FORK, OS_FORKPTY, OS_EXIT, OS_SPAWN, OS_SPAWNP, OS_SYSTEM, OS_FORK_EXEC,
       OS_INTERRUPT_MAIN, OS_CLOSE, OS_CLOSERANGE, OS_DUP2, NOS };
/* The module each is found in (os where NULL). */
static const char *const os_home[NOS] = {[OS_FORK_EXEC] = "_posixsubprocess", [OS_INTERRUPT_MAIN] = "_thread"};
/* Watched once the script imported its module, not before (plain python
 * starts without it): at the run's end, when no new process may start. */
static const unsigned char os_late[NOS] = {[OS_FORK_EXEC] = 1};
static int watch_os_functions(PyObject *os, int late);
static int watch_os_function(PyObject *os, PyMethodDef *def, PyObject *orig);
static PyObject *os_orig[NOS];

#define OS_WRAPPER(fn, impl, i)                                                                   \
	static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
	{                                                                                            \
		return impl(os_orig[i], args, nargs, kwnames);                                       \
	}
OS_WRAPPER(execv_first, exec_first, OS_EXECV)
OS_WRAPPER(execve_first, exec_first, OS_EXECVE)
OS_WRAPPER(execvpe_first, exec_first, OS_EXECVPE)
OS_WRAPPER(fork_watched, fork_around, OS_FORK)
OS_WRAPPER(forkpty_watched, fork_around, OS_FORKPTY)

static PyObject *exit_first(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
OS_WRAPPER(exit_watched, exit_first, OS_EXIT)

/* A process started without os.fork (subprocess's and multiprocessing
 * spawn's fork_exec, os.posix_spawn, os.system) is no fork of this one: only the
 * wait once an exit signal came (no_new_process_once_ending). */
static PyObject *spawn_watched_impl(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	no_new_process_once_ending();
	return PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
}
OS_WRAPPER(spawn_watched, spawn_watched_impl, OS_SPAWN)
OS_WRAPPER(spawnp_watched, spawn_watched_impl, OS_SPAWNP)
OS_WRAPPER(system_watched, spawn_watched_impl, OS_SYSTEM)
OS_WRAPPER(fork_exec_watched, spawn_watched_impl, OS_FORK_EXEC)

/* _thread.interrupt_main(sig): python does nothing for a signal that has
 * no Python-level handler (SIG_DFL); where the run's own handler stands in
 * for SIG_DFL, nothing is done either (it would end the run). */
static PyObject *interrupt_main_impl(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	Py_ssize_t sig = nargs == 1 && !kwnames ? int_arg(args[0]) : -1;
	ptrdiff_t i = sig > 0 && sig < INT_MAX ? signal_index((long)sig) : -1;
	if (i >= 0 && ours[i] && real_getsignal_fn) {
		PyObject *cur = PyObject_CallFunction(real_getsignal_fn, "n", sig);
		int shown_dfl = cur == ours[i];
		Py_XDECREF(cur);
		PyErr_Clear();
		if (shown_dfl)
			Py_RETURN_NONE;
	}
	return PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
}
OS_WRAPPER(interrupt_main_watched, interrupt_main_impl, OS_INTERRUPT_MAIN)

/* os.close, os.closerange, os.dup2: the script closes descriptors (a
 * daemon's start closes every one) while the profile's stream writes
 * nothing; it then finds its file's own descriptors again before it writes
 * (sp_stream_fds_enter), never one of the script's new files that took a
 * number it had. */
static PyObject *fds_around(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	if (!sp_stream_on())
		return PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
	Py_BEGIN_ALLOW_THREADS
	sp_stream_fds_enter();
	Py_END_ALLOW_THREADS
	PyObject *r = PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
	sp_stream_fds_leave();
	return r;
}
OS_WRAPPER(close_watched, fds_around, OS_CLOSE)
OS_WRAPPER(closerange_watched, fds_around, OS_CLOSERANGE)
OS_WRAPPER(dup2_watched, fds_around, OS_DUP2)

static PyMethodDef os_defs[NOS] = {
	[OS_EXECV] = {"execv", (PyCFunction)(void (*)(void))execv_first, METH_FASTCALL | METH_KEYWORDS,
	 "os.execv under scope-profiler run: the profile is written before the process is replaced."},
	[OS_EXECVE] = {"execve", (PyCFunction)(void (*)(void))execve_first, METH_FASTCALL | METH_KEYWORDS,
	 "os.execve under scope-profiler run: the profile is written before the process is replaced."},
	/* os.execvp and the like try each folder of PATH in turn: a miss is
	 * no failure, only the whole search failing is. */
	[OS_EXECVPE] = {"_execvpe", (PyCFunction)(void (*)(void))execvpe_first, METH_FASTCALL | METH_KEYWORDS,
	 "os._execvpe under scope-profiler run: the profile is written before the process is replaced."},
	[OS_FORK] = {"fork", (PyCFunction)(void (*)(void))fork_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.fork under scope-profiler run: the profile's writer pauses around the fork."},
	[OS_FORKPTY] = {"forkpty", (PyCFunction)(void (*)(void))forkpty_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.forkpty under scope-profiler run: the profile's writer pauses around the fork."},
	[OS_EXIT] = {"_exit", (PyCFunction)(void (*)(void))exit_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os._exit under scope-profiler run: a profiled child process writes its profile first."},
	[OS_SPAWN] = {"posix_spawn", (PyCFunction)(void (*)(void))spawn_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.posix_spawn under scope-profiler run: no new process once an exit signal came."},
	[OS_SPAWNP] = {"posix_spawnp", (PyCFunction)(void (*)(void))spawnp_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.posix_spawnp under scope-profiler run: no new process once an exit signal came."},
	[OS_SYSTEM] = {"system", (PyCFunction)(void (*)(void))system_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.system under scope-profiler run: no new process once an exit signal came."},
	[OS_FORK_EXEC] = {"fork_exec", (PyCFunction)(void (*)(void))fork_exec_watched, METH_FASTCALL | METH_KEYWORDS,
	 "_posixsubprocess.fork_exec under scope-profiler run: no new process once an exit signal came."},
	[OS_INTERRUPT_MAIN] = {"interrupt_main", (PyCFunction)(void (*)(void))interrupt_main_watched,
	 METH_FASTCALL | METH_KEYWORDS,
	 "interrupt_main(signum=signal.SIGINT, /)\n--\n\nSimulate the arrival of the given signal in the main "
	 "thread (scope-profiler run: nothing, as under python, for a signal left at SIG_DFL)."},
	[OS_CLOSE] = {"close", (PyCFunction)(void (*)(void))close_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.close under scope-profiler run: the profile's stream writes nothing meanwhile."},
	[OS_CLOSERANGE] = {"closerange", (PyCFunction)(void (*)(void))closerange_watched,
	 METH_FASTCALL | METH_KEYWORDS,
	 "os.closerange under scope-profiler run: the profile's stream writes nothing meanwhile."},
	[OS_DUP2] = {"dup2", (PyCFunction)(void (*)(void))dup2_watched, METH_FASTCALL | METH_KEYWORDS,
	 "os.dup2 under scope-profiler run: the profile's stream writes nothing meanwhile."},
};

/* os._exit under a child process's session (run --subprocesses): the
 * child's profile is written first (multiprocessing's workers end so);
 * in the run's own process, the run's, as at its end. */
static PyObject *exit_first(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	/* The status, as os._exit takes it (positional or status=): with
	 * anything else it raises, and the script goes on. */
	PyObject *status = nargs == 1 && !kwnames ? args[0]
			   : nargs == 0 && kwnames && PyTuple_GET_SIZE(kwnames) == 1 &&
				     PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "status") == 0
			   ? args[0] : NULL;
	int overflow = 0;
	long v = status && PyLong_Check(status) ? PyLong_AsLongAndOverflow(status, &overflow) : 0;
	PyErr_Clear();
	int valid = status && PyLong_Check(status) && !overflow && v >= INT_MIN && v <= INT_MAX;
	if (valid && sp_final_writing())
		sp_final_exit_when_written((int)v);   /* the run's end ends the process with it (run_exit) */
	wait_for_the_write();
	if (child_signal)   /* an exit signal came first: it ends the process */
		run_signals ? run_signal_end(child_signal) : child_signal_end();
	child_writing = 1;   /* an exit signal from here on ends it after the write */
	sp_session_end_child();
	child_writing = 0;
	if (!run_ending && valid && sp_session_ends_at_exit()) {
		run_ending = 1;   /* no new process while it writes (its threads run on) */
		watch_late();
		/* The exit signals as at the run's normal end: one while it
		 * writes is noted and ends the run after the write (it ended
		 * the run unwritten, without a word); again, abandons it. */
		take_exit_signals(0);   /* os._exit runs no Python handler more, as python's */
		sp_session_end_at_exit(status);
		int sig = sp_run_exit_signal_last();
		if (sig)
			die_by(sig);
	}
	if (child_signal)
		die_by(child_signal);
	return PyObject_Vectorcall(self, args, (size_t)nargs, kwnames);
}

/* A SystemExit that ends the script, however it was raised (`raise
 * SystemExit(main())`, exit(), sys.exit, a subclass's: docopt's
 * DocoptExit): Python reads its code, with no frame of Python's running,
 * in the main thread, just before it ends (_Py_HandleSystemExit); the
 * status is noted then (a failure that recorded nothing keeps the previous
 * profile; under MPI the rank does not wait for ever). Every read of
 * .code, a subclass's instance's too, goes through SystemExit's own `code`
 * descriptor: the run's stands in its place, over it. Reads of .code by
 * the script (a frame runs), a SystemExit it caught, one in a thread
 * (python ignores it) note nothing; sys.exit stays python's own. */
static PyObject *code_member;   /* SystemExit's own descriptor of .code */

static PyObject *code_get(PyObject *self, void *unused)
{
	PyObject *v = Py_TYPE(code_member)->tp_descr_get(code_member, self, (PyObject *)Py_TYPE(self));
	if (v && !PyEval_GetFrame() && pthread_equal(pthread_self(), main_thread))
		sp_session_note_exit_status(v);
	return v;
}

static int code_set(PyObject *self, PyObject *value, void *unused)
{
	return Py_TYPE(code_member)->tp_descr_set(code_member, self, value);
}

static PyGetSetDef code_def = {"code", code_get, code_set, NULL, NULL};

#if PY_VERSION_HEX < 0x030C0000
/* Python 3.11's sys.exit(status) sets the status itself as the exception's
 * value, which _Py_HandleSystemExit reads without an instance (no .code):
 * under run, sys.exit raises the SystemExit instance that normalizing it
 * would have made (SystemExit() for None), so that its end is seen as the
 * others'. A tuple stays python's: uncaught, python prints it and ends
 * with 1, through a handler (an except, a finally) normalized as
 * SystemExit(*tuple) with its code (`return 0,` in sys.exit(main())); an
 * instance cannot be both (the run's end does not see its failure). A
 * builtin of sys with no self, as os_defs' are of os (pickle: sys.exit).
 * 3.12+ normalizes at once: sys.exit stays python's own there. */
static PyObject *sys_exit_orig;

static PyObject *sys_exit_instance(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	if (nargs > 1 || kwnames)
		return PyObject_Vectorcall(sys_exit_orig, args, (size_t)nargs, kwnames);   /* its TypeError */
	PyObject *status = nargs ? args[0] : Py_None;
	if (PyTuple_Check(status))
		return PyObject_Vectorcall(sys_exit_orig, args, (size_t)nargs, kwnames);
	if (PyObject_TypeCheck(status, (PyTypeObject *)PyExc_SystemExit)) {
		/* sys.exit(e) of a SystemExit (or a subclass's): itself, as
		 * python raises it */
		PyErr_SetObject((PyObject *)Py_TYPE(status), status);
		return NULL;
	}
	PyObject *e = status == Py_None ? PyObject_CallNoArgs(PyExc_SystemExit)
					 : PyObject_CallOneArg(PyExc_SystemExit, status);
	if (e) {
		PyErr_SetObject(PyExc_SystemExit, e);
		Py_DECREF(e);
	}
	return NULL;
}

static PyMethodDef sys_exit_def = {
	"exit", (PyCFunction)(void (*)(void))sys_exit_instance, METH_FASTCALL | METH_KEYWORDS, NULL};

static int watch_sys_exit(void)
{
	PyObject *orig = PySys_GetObject("exit");   /* borrowed */
	if (!orig || (PyCFunction_Check(orig) && PyCFunction_GET_FUNCTION(orig) == sys_exit_def.ml_meth))
		return 0;
	Py_XSETREF(sys_exit_orig, Py_NewRef(orig));   /* held before sys lets it go */
	PyObject *sysmod = PyImport_ImportModule("sys");
	int rc = sysmod ? watch_os_function(sysmod, &sys_exit_def, orig) : -1;   /* python's doc and signature */
	Py_XDECREF(sysmod);
	return rc;
}
#else
static int watch_sys_exit(void)
{
	return 0;
}
#endif

static int watch_system_exit(void)
{
	PyTypeObject *t = (PyTypeObject *)PyExc_SystemExit;
#if PY_VERSION_HEX >= 0x030C0000
	PyObject *dict = PyType_GetDict(t);
#else
	PyObject *dict = Py_XNewRef(t->tp_dict);
#endif
	PyObject *m = dict && !code_member ? PyDict_GetItemString(dict, "code") : NULL;   /* borrowed */
	int rc = 0;
	if (m && Py_TYPE(m)->tp_descr_get && Py_TYPE(m)->tp_descr_set) {
		PyObject *doc = PyObject_GetAttrString(m, "__doc__");
		const char *text = doc && PyUnicode_Check(doc) ? PyUnicode_AsUTF8(doc) : NULL;
		code_def.doc = text ? strdup(text) : NULL;   /* "exception code", as python's */
		Py_XDECREF(doc);
		PyErr_Clear();
		PyObject *ours_code = PyDescr_NewGetSet(t, &code_def);
		code_member = Py_NewRef(m);
		rc = ours_code ? PyDict_SetItemString(dict, "code", ours_code) : -1;
		Py_XDECREF(ours_code);
#ifndef Py_DEBUG
		/* Lookups cached before see it (a debug build's PyType_Modified
		 * refuses a static builtin type, 3.14: its cache may then keep
		 * python's descriptor, which only misses the status) */
		PyType_Modified(t);
#endif
	}
	Py_XDECREF(dict);
	return rc == 0 ? watch_sys_exit() : -1;
}

/* Puts def's builtin (no self) in os in place of orig, named as orig's
 * module names it (posix for os.execv) and put there too where that
 * module holds orig, as python's own: pickle, which looks it up there,
 * finds it, with the original's doc. 0, or -1 with an exception set. */
static int watch_os_function(PyObject *os, PyMethodDef *def, PyObject *orig)
{
	PyObject *modname = PyObject_GetAttrString(orig, "__module__");
	if (!modname || !PyUnicode_Check(modname)) {
		PyErr_Clear();
		Py_XSETREF(modname, PyUnicode_FromString("os"));
		if (!modname)
			return -1;
	}
	PyObject *home = PyImport_GetModule(modname);
	if (!home)
		PyErr_Clear();
	PyObject *there = home ? PyObject_GetAttrString(home, def->ml_name) : NULL;
	if (home && !there)
		PyErr_Clear();
	/* The original's doc, so help() and inspect.signature() show what
	 * they show under python. */
	PyObject *doc = PyObject_GetAttrString(orig, "__doc__");
	PyObject *sig = doc ? PyObject_GetAttrString(orig, "__text_signature__") : NULL;
	/* ($module, path, /) or ($module, /, status): the builtin's self,
	 * which ours has not, goes */
	const char *args = sig && PyUnicode_Check(sig) ? PyUnicode_AsUTF8(sig) : NULL;
	if (args && *args == '(')
		args++;
	if (args && strncmp(args, "$module", 7) == 0) {
		args += 7;
		args += strncmp(args, ", ", 2) == 0 ? 2 : 0;
		args += strncmp(args, "/, ", 3) == 0 ? 3 : strncmp(args, "/)", 2) == 0 ? 1 : 0;
	}
	PyObject *full = !doc || !PyUnicode_Check(doc) ? NULL
			 : args ? PyUnicode_FromFormat("%s(%s\n--\n\n%U", def->ml_name, args, doc)
				: Py_NewRef(doc);
	const char *text = full ? PyUnicode_AsUTF8(full) : NULL;
	char *copy = text ? strdup(text) : NULL;
	if (copy)
		def->ml_doc = copy;   /* once per function: a second watch skips it */
	Py_XDECREF(full);
	Py_XDECREF(sig);
	Py_XDECREF(doc);
	PyErr_Clear();
	PyObject *w = PyCFunction_NewEx(def, NULL, modname);
	int rc = w && PyObject_SetAttrString(os, def->ml_name, w) == 0 &&
		 (there != orig || home == os || PyObject_SetAttrString(home, def->ml_name, w) == 0) ? 0 : -1;
	Py_XDECREF(w);
	Py_XDECREF(there);
	Py_XDECREF(home);
	Py_DECREF(modname);
	return rc;
}

/* os_defs' builtins in place of the originals; late: only those whose
 * module is not imported at the start (os_late), once it is (the run's
 * end). 0, or -1 with an exception. */
static int watch_os_functions(PyObject *os, int late)
{
	for (size_t i = 0; i < NOS; i++) {
		if (late && !os_late[i])
			continue;
		PyObject *home;
		if (!os_home[i]) {
			home = Py_NewRef(os);
		} else if (os_late[i]) {
			PyObject *name = PyUnicode_FromString(os_home[i]);
			home = name ? PyImport_GetModule(name) : NULL;
			Py_XDECREF(name);
		} else {
			home = PyImport_ImportModule(os_home[i]);
		}
		PyObject *orig = home ? PyObject_GetAttrString(home, os_defs[i].ml_name) : NULL;
		if (!orig) {
			PyErr_Clear();   /* not on this platform, or not imported yet */
			Py_XDECREF(home);
			continue;
		}
		if (PyCFunction_Check(orig) && PyCFunction_GET_FUNCTION(orig) == os_defs[i].ml_meth) {
			Py_DECREF(orig);   /* ours already (a second watch) */
			Py_DECREF(home);
			continue;
		}
		Py_XSETREF(os_orig[i], orig);
		int rc = watch_os_function(home, &os_defs[i], orig);
		Py_DECREF(home);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* _posixsubprocess's fork_exec is watched from the script's own import of
 * it on, so that subprocess from a thread waits once an exit signal came,
 * as os.fork does (before: only from the run's end, when the main thread
 * was back in Python); never imported before the script (plain python
 * starts without it). The import machinery executes a module built in
 * (Debian's pythons) through _imp.exec_builtin, one from a shared library
 * (pyenv's) through _imp.exec_dynamic: ours run theirs, then watch it. */
enum { IMP_BUILTIN, IMP_DYNAMIC, NIMP };
static PyObject *imp_orig[NIMP];

static PyObject *imp_exec_then_watch(int which, PyObject *module)
{
	PyObject *r = PyObject_CallOneArg(imp_orig[which], module);
	const char *name = r && PyModule_Check(module) ? PyModule_GetName(module) : NULL;
	if (!name) {
		if (r)
			PyErr_Clear();
		return r;
	}
	for (size_t i = 0; strcmp(name, "_posixsubprocess") == 0 && i < NOS; i++) {
		if (!os_home[i] || strcmp(os_home[i], name) != 0)
			continue;
		PyObject *orig = PyObject_GetAttrString(module, os_defs[i].ml_name);
		if (orig && !(PyCFunction_Check(orig) && PyCFunction_GET_FUNCTION(orig) == os_defs[i].ml_meth)) {
			Py_XSETREF(os_orig[i], Py_NewRef(orig));
			if (watch_os_function(module, &os_defs[i], orig) != 0)
				PyErr_Clear();   /* left as it is: watched at the end */
		}
		Py_XDECREF(orig);
		PyErr_Clear();
	}
	return r;
}

static PyObject *exec_builtin_watched(PyObject *m, PyObject *module)
{
	return imp_exec_then_watch(IMP_BUILTIN, module);
}

static PyObject *exec_dynamic_watched(PyObject *m, PyObject *module)
{
	return imp_exec_then_watch(IMP_DYNAMIC, module);
}

static PyMethodDef imp_defs[NIMP] = {
	[IMP_BUILTIN] = {"exec_builtin", exec_builtin_watched, METH_O,
			 "_imp.exec_builtin under scope-profiler run: a module's functions the run watches."},
	[IMP_DYNAMIC] = {"exec_dynamic", exec_dynamic_watched, METH_O,
			 "_imp.exec_dynamic under scope-profiler run: a module's functions the run watches."},
};

/* Once, before the script: _imp's two exec functions. 0, or -1 with an
 * exception. */
static int watch_imports(void)
{
	PyObject *imp = PyImport_ImportModule("_imp");
	for (size_t i = 0; imp && i < NIMP; i++) {
		if (imp_orig[i])
			continue;
		PyObject *orig = PyObject_GetAttrString(imp, imp_defs[i].ml_name);
		if (!orig) {
			PyErr_Clear();   /* not in this build (no dynamic loading) */
			continue;
		}
		PyObject *fn = PyCFunction_NewEx(&imp_defs[i], NULL, NULL);
		if (!fn || PyObject_SetAttrString(imp, imp_defs[i].ml_name, fn) != 0) {
			Py_XDECREF(orig);
			Py_XDECREF(fn);
			Py_DECREF(imp);
			return -1;
		}
		imp_orig[i] = orig;
		Py_DECREF(fn);
	}
	Py_XDECREF(imp);
	return imp ? 0 : -1;
}

/* The late watches (os_late), where the script imported their modules:
 * at the run's end. Never raises. */
static void watch_late(void)
{
	PyObject *exc_type, *exc_value, *exc_tb;
	PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	if (watch_os_functions(NULL, 1) != 0)
		PyErr_Clear();
	PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* _run_watch(os, signals=True): the run's watches, installed before the
 * script starts: the exit signals that have no handler yet (not in a
 * spawned child of --subprocesses, whose parent may stop it with SIGTERM
 * while it holds a lock its siblings wait for: multiprocessing's Pool),
 * sys.unraisablehook, os.execv / os.execve, os.fork / os.forkpty and
 * os._exit. The builtins keep the originals' names. */
static PyObject *run_watch(PyObject *m, PyObject *args)
{
	PyObject *os;
	int signals = 1;
	if (!PyArg_ParseTuple(args, "O|p:_run_watch", &os, &signals))
		return NULL;
	PyObject *sigmod = PyImport_ImportModule("_signal");
	PyObject *handler = sigmod ? PyObject_GetAttrString(m, "_on_exit_signal") : NULL;
	if (!handler)
		goto fail;
	for (size_t i = 0; signals && i < NSIGNALS; i++) {
		if (exit_signals[i] == SIGINT)
			continue;   /* Python's own KeyboardInterrupt */
		PyObject *cur = real_getsignal(sigmod, exit_signals[i]);
		if (!cur)
			goto fail;
		/* SIG_DFL is 0; a script's handler (or SIG_IGN) is kept. */
		int dfl = PyLong_Check(cur) && PyLong_AsLong(cur) == (long)(intptr_t)SIG_DFL;
		Py_DECREF(cur);
		if (dfl) {
			PyObject *r = real_signal(sigmod, exit_signals[i], handler);
			if (!r)
				goto fail;
			Py_DECREF(r);
			Py_XSETREF(ours[i], Py_NewRef(handler));
			/* Python's C handler runs under ours (on_child_signal): the
			 * signal's deadline, should the main thread not come back
			 * to Python (a long C call, an MPI wait) to write. */
			if (under_our_c_handler(exit_signals[i])) {
				run_signals = 1;
				launched_rank = sp_mpi_launch_rank();
			}
		}
	}
	if (signals && show_signals_as_plain(sigmod) != 0)
		goto fail;
	if (signals)
		Py_XSETREF(run_handler, Py_NewRef(handler));
	if (signals)
		count_sigint();
	PyObject *hook = PySys_GetObject("unraisablehook");   /* borrowed */
	if (hook) {
		PyObject *w = PyCFunction_NewEx(&unraisable_def, hook, NULL);
		if (!w || PySys_SetObject("unraisablehook", w) != 0) {
			Py_XDECREF(w);
			goto fail;
		}
		Py_DECREF(w);
	}
	if (watch_os_functions(os, 0) != 0 || watch_imports() != 0)
		goto fail;
	watch_new_processes();
	if (signals && watch_system_exit() != 0)
		goto fail;
	Py_DECREF(handler);
	Py_DECREF(sigmod);
	Py_RETURN_NONE;
fail:
	Py_XDECREF(handler);
	Py_XDECREF(sigmod);
	return NULL;
}

/* _exit_signals_default(): in a fork of the run, the exit signals that
 * carry the run's handler get SIG_DFL back, as under plain python (a Pool
 * stops its workers with SIGTERM, one maybe holding a lock the others wait
 * for: a SystemExit there would hang them). */
static PyObject *exit_signals_default(PyObject *m, PyObject *unused)
{
	PyObject *sigmod = PyImport_ImportModule("_signal");
	PyObject *handler = sigmod ? PyObject_GetAttrString(m, "_on_exit_signal") : NULL;
	run_signals = 0;   /* a fork of the run is no run */
	if (pipe_ours && handler) {
		PyObject *cur = real_getsignal(sigmod, SIGPIPE);
		PyObject *r = cur == handler ? real_signal_default(sigmod, SIGPIPE) : NULL;
		Py_XDECREF(r);
		Py_XDECREF(cur);
	}
	pipe_ours = 0;
	for (size_t i = 0; handler && i < NSIGNALS; i++) {
		PyObject *cur = real_getsignal(sigmod, exit_signals[i]);
		struct sigaction sa;
		/* One a C handler took since (faulthandler.register) stays its. */
		if (cur == handler && sigaction(exit_signals[i], NULL, &sa) == 0 &&
		    (!python_c_handler || sa.sa_handler == python_c_handler || sa.sa_handler == on_child_signal)) {
			PyObject *r = real_signal_default(sigmod, exit_signals[i]);
			Py_XDECREF(r);
		}
		Py_CLEAR(ours[i]);   /* a fork of the run is no run: nothing of ours to put back */
		Py_XDECREF(cur);
	}
	Py_XDECREF(handler);
	Py_XDECREF(sigmod);
	PyErr_Clear();
	Py_RETURN_NONE;
}

/* ---- a profiled child process (run --subprocesses) ----
 *
 * multiprocessing's Pool ends its workers with SIGTERM (at the end of its
 * `with` block, terminate()), and a batch system or the script may end a
 * child so too. Where the child has no handler of its own, the exit
 * signals but SIGINT write its profile and then end it by the same signal,
 * as plain python would have been ended, without unwinding any of its
 * code (a Pool's worker may hold a lock its siblings wait for).
 *
 * Python runs the handler in the main thread at its next bytecode, or when
 * a blocking call returns with EINTR. A signal that comes just before such
 * a call blocks (a worker's wait for the task queue's lock) interrupts
 * nothing: so from the signal on, SIGALRM comes every CHILD_TICK_MS, each
 * one interrupting the call, which then runs the handler (PEP 475). Should
 * it not run within CHILD_DEADLINE_S (one long C call that never checks
 * for signals), the child ends by the signal, unwritten (the run counts
 * it, and the child says so). The same signal again (a pool's terminate()
 * after SIGTERM to the whole process group) changes nothing before the
 * write, and gives the write CHILD_WRITE_DEADLINE_S more once it began (a
 * loaded machine, a large last block: as long as the run waits for its
 * children); another exit signal ends the child at once. A first signal
 * while the child writes at its own end (os._exit) lets the write finish,
 * then ends the child. */
#define CHILD_TICK_MS 50
#define CHILD_DEADLINE_S 2
#define CHILD_WRITE_DEADLINE_S 10
/* The run's (its exit signals take the same path): a batch system's grace
 * before SIGKILL is longer (Slurm: 30 s), and a long C call of the
 * script's (numpy's) that ends within it still lets the profile be
 * written; one that never ends (an MPI wait for a rank that is gone) no
 * longer keeps the run forever. */
#define RUN_DEADLINE_S 10
#define SP_STR_(x) #x
#define SP_STR(x) SP_STR_(x)

static volatile sig_atomic_t child_ticks;
static struct timespec child_signal_at;   /* when child_signal came (CLOCK_MONOTONIC) */
static volatile sig_atomic_t child_deadline_set;   /* the write's deadline is armed (once) */

/* Ends the process by sig, as its default action does. */
static void die_by(int sig)
{
	sigset_t set;
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

static void child_ticks_set(long ms)
{
	struct itimerval it = { .it_interval = { ms / 1000, ms % 1000 * 1000 },
				.it_value = { ms / 1000, ms % 1000 * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* The run ends before its write began: "scope-profiler: run: " why
 * ": ended unwritten", and where the calls streamed so far stay.
 * Async-signal-safe: the stream's path was made at its start. */
static void run_unwritten(const char *why)
{
	static const char head[] = "scope-profiler: run: ";
	static const char ended[] = ": ended unwritten";
	static const char kept[] = "; the calls streamed so far stay in ";
	static const char how[] = " (scope-profiler recover finishes it)";
	const char *partial = sp_stream_partial();
	int streamed = partial && access(partial, F_OK) == 0;
	ssize_t unused_rc = write(STDERR_FILENO, head, sizeof head - 1);
	unused_rc = write(STDERR_FILENO, why, strlen(why));
	unused_rc = write(STDERR_FILENO, ended, sizeof ended - 1);
	if (streamed) {
		unused_rc = write(STDERR_FILENO, kept, sizeof kept - 1);
		unused_rc = write(STDERR_FILENO, partial, strlen(partial));
		unused_rc = write(STDERR_FILENO, how, sizeof how - 1);
	}
	unused_rc = write(STDERR_FILENO, "\n", 1);
	(void)unused_rc;
}

/* Async-signal-safe writes of a line's pieces to stderr. */
static void say(const char *s)
{
	ssize_t unused_rc = write(STDERR_FILENO, s, strlen(s));
	(void)unused_rc;
}

static void say_number(long v)
{
	char digits[24], *p = digits + sizeof digits;
	unsigned long u = (unsigned long)(v < 0 ? 0 : v);
	*--p = '\0';
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	say(p);
}

/* An MPI rank's run whose script has not come back to Python 0.3 s after
 * an exit signal (blocked in an MPI call: another rank ended, and mpirun
 * takes the job down, SIGKILL a second after its SIGTERM): where its calls
 * are, said before that SIGKILL; it goes on waiting for the script. */
#define RANK_SAY_TICKS (300 / CHILD_TICK_MS)
static void rank_waits(void)
{
	const char *partial = sp_stream_partial();
	say("scope-profiler: run: rank ");
	say_number(launched_rank);
	say(": the script has not come back to Python since the signal (blocked in a call: an MPI wait for a "
	    "rank that ended?); ");
	if (partial && access(partial, F_OK) == 0) {
		say("the calls streamed so far are in ");
		say(partial);
		say(" (scope-profiler recover ");
		say(partial);
		say(" merges the job's ranks)");
	} else {
		say("nothing streamed yet: its calls are lost should the job end first");
	}
	say("; still waiting for it\n");
}

static void child_tick(int unused)
{
	(void)unused;
	if (run_signals && launched_rank >= 0 && child_ticks + 1 == RANK_SAY_TICKS) {
		int saved = errno;   /* the interrupted call's EINTR, for its retry */
		rank_waits();
		errno = saved;
	}
	if (++child_ticks < (run_signals ? RUN_DEADLINE_S : CHILD_DEADLINE_S) * 1000 / CHILD_TICK_MS)
		return;
	if (run_signals) {
		run_unwritten("the script did not come back to Python within " SP_STR(RUN_DEADLINE_S)
			      " s of the signal to write the profile");
	} else {
		child_says(" did not come back to Python within " SP_STR(CHILD_DEADLINE_S)
			   " s of the signal to write its profile: ended unwritten\n");
	}
	die_by(child_signal);
}

/* The write's deadline (the same signal again during it). */
static void child_deadline(int unused)
{
	(void)unused;
	child_says(" did not finish its profile within " SP_STR(CHILD_WRITE_DEADLINE_S)
		   " s of the same signal again: ended half-written\n");
	die_by(child_signal);
}

static void on_child_signal(int sig)
{
	int saved = errno;
	if (!child_signal)
		sp_session_say_writing();   /* async-signal-safe: open, close */
	if (!child_signal && child_writing) {
		/* The first, while the child writes at its normal end
		 * (os._exit): the write goes on and the signal ends it after. */
		child_signal = sig;
		errno = saved;
		return;
	}
	if (child_signal && sig == child_signal && child_writing) {
		/* once: repeats do not push it back; a signal that repeats by
		 * itself (SIGXCPU every CPU second, a timer's) sets none */
		if (child_deadline_set || repeats_by_itself(sig)) {
			errno = saved;
			return;
		}
		child_deadline_set = 1;
		/* Restarted, not interrupted: the write's calls go on. */
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = child_deadline;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = { .it_value = { CHILD_WRITE_DEADLINE_S, 0 } };
		setitimer(ITIMER_REAL, &it, NULL);
		errno = saved;
		return;
	}
	if (run_signals && exit_signal) {
		on_exit_signal(sig);   /* the run's end began (run_signal_end): its rules */
		errno = saved;
		return;
	}
	/* A child: the deadline set at the first one stands (a pool's
	 * terminate() sends it again). The run: the same request (within a
	 * second, or one that repeats by itself) changes nothing; another
	 * one, while the script still has not come back to Python to write
	 * (one long C call), ends the run now, as the first ended python. */
	if (child_signal && sig == child_signal &&
	    (!run_signals || same_request_as(sig, child_signal, &child_signal_at))) {
		errno = saved;
		return;
	}
	if (child_signal) {
		if (run_signals)
			run_unwritten("a second signal came before the script was back in Python to write "
				      "the profile");
		die_by(sig);
	}
	if (!python_c_handler)
		die_by(sig);
	child_signal = sig;
	clock_gettime(CLOCK_MONOTONIC, &child_signal_at);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = child_tick;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);   /* no SA_RESTART: a blocking call returns */
	child_ticks_set(CHILD_TICK_MS);
	python_c_handler(sig);   /* the Python-level handler below, at its next chance */
	errno = saved;
}

/* A signal on_child_signal took and the Python-level handler has not
 * answered yet: the profile is written and the signal ends the process
 * (also where the script would exec first: a timer survives exec). */
static void child_signal_end(void)
{
	int sig = child_signal;
	child_ticks_set(0);
	child_writing = 1;
	watch_late();
	sp_session_end_child();
	die_by(sig);
}

/* _on_child_signal(signum, frame): the child's profile is written, then
 * the signal ends the process. */
static PyObject *on_child_signal_py(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	(void)args;
	(void)nargs;
	/* Called other than for a signal on_child_signal took: by a handler
	 * the script set later that calls the one it replaced (under plain
	 * python, SIG_DFL, which it cannot call, so it goes on): nothing. */
	if (!child_signal)
		Py_RETURN_NONE;
	child_signal_end();   /* the main thread is here: the write may take its time */
	Py_RETURN_NONE;
}

/* _child_signals(): in a profiled child, the exit signals but SIGINT that
 * have no handler of the script's, Python's or C's (faulthandler's), get
 * the child's (above). Never raises. */
static PyObject *child_signals(PyObject *m, PyObject *unused)
{
	PyObject *sigmod = PyImport_ImportModule("_signal");
	PyObject *handler = sigmod ? PyObject_GetAttrString(m, "_on_child_signal") : NULL;
	for (size_t i = 0; handler && i < NSIGNALS; i++) {
		int sig = exit_signals[i];
		if (sig == SIGINT)
			continue;   /* Python's KeyboardInterrupt: the child's os._exit writes */
		struct sigaction sa;
		PyObject *cur = real_getsignal(sigmod, sig);
		int dfl = cur && PyLong_Check(cur) && PyLong_AsLong(cur) == (long)(intptr_t)SIG_DFL;
		int mine = cur && PyObject_RichCompareBool(cur, handler, Py_EQ) == 1;
		Py_XDECREF(cur);
		PyErr_Clear();
		if (sigaction(sig, NULL, &sa) != 0 ||
		    !((dfl && sa.sa_handler == SIG_DFL) ||
		      (mine && (sa.sa_handler == on_child_signal || sa.sa_handler == python_c_handler))))
			continue;
		PyObject *r = real_signal(sigmod, sig, handler);
		Py_XDECREF(r);
		/* Python's own C handler (which runs the one above) is called
		 * from ours, which keeps the ticks; without ours, the signal
		 * stays as it was (on_child_signal_py answers only ours). */
		if (!r || !under_our_c_handler(sig)) {
			PyErr_Clear();
			r = real_signal_default(sigmod, sig);
			Py_XDECREF(r);
			PyErr_Clear();
			continue;
		}
		Py_XSETREF(ours[i], Py_NewRef(handler));
	}
	if (handler && show_signals_as_plain(sigmod) != 0)
		PyErr_Clear();
	Py_XDECREF(handler);
	Py_XDECREF(sigmod);
	PyErr_Clear();
	watch_new_processes();
	Py_RETURN_NONE;
}

/* From the script's end (or its os._exit) on, the exit signals are
 * on_exit_signal's, in C: no handler of Python's runs between the script's
 * end and them, nor while the profile is written. */
static void take_exit_signals(int run_pending)
{
	/* Held while the handlers change hands: one arriving meanwhile
	 * reaches the C handler when they are let through below. */
	sigset_t before;
	hold_exit_signals(&before);
	/* A signal that arrived just before, its Python handler not yet run:
	 * Python's KeyboardInterrupt for SIGINT, the run's handler of the
	 * others (it notes itself). */
	if (run_pending && PyErr_CheckSignals() < 0) {
		if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) && !exit_signal && sigint_real)
			note_exit_signal(SIGINT);
		PyErr_Clear();
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_exit_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	PyObject *sigmod = PyImport_ImportModule("_signal");
	for (size_t i = 0; i < NSIGNALS; i++) {
		struct sigaction old;
		/* One the script ignores stays ignored. */
		if (sigaction(exit_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		/* A timer's signal the script handles itself (a sampling
		 * profiler's SIGPROF every millisecond) is the script's to the
		 * end: no request to stop. */
		if (repeats_by_itself(exit_signals[i]) && exit_signals[i] != SIGXCPU && sigmod) {
			PyObject *cur = real_getsignal(sigmod, exit_signals[i]);
			int theirs = cur && cur != ours[i] && !(PyLong_Check(cur) && PyLong_AsLong(cur) == 0);
			Py_XDECREF(cur);
			PyErr_Clear();
			if (theirs)
				continue;
			/* or a C library's (vmprof, gperftools: sigaction), under
			 * the run's Python-level handler: Python forgets the run's
			 * (its end would put SIG_DFL back over the library's, and
			 * the next tick end the process), the library keeps its */
			void (*c)(int) = old.sa_handler;
			if ((old.sa_flags & SA_SIGINFO) || (c != SIG_DFL && c != on_child_signal &&
							    c != python_c_handler && c != on_exit_signal)) {
				PyObject *r = real_signal_default(sigmod, exit_signals[i]);
				Py_XDECREF(r);
				PyErr_Clear();
				sigaction(exit_signals[i], &old, NULL);
				continue;
			}
		}
		/* Python forgets its handler first: else its finalisation
		 * would put back SIG_DFL under ours, and a signal then would
		 * kill the run after the profile is written. */
		PyObject *r = sigmod ? real_signal_default(sigmod, exit_signals[i]) : NULL;
		Py_XDECREF(r);
		sigaction(exit_signals[i], &sa, NULL);
	}
	Py_XDECREF(sigmod);
	PyErr_Clear();
	sp_outpath_note_committed(NULL);   /* what an earlier finalize() wrote is not this end's */
	const char *partial = sp_stream_on() ? sp_stream_partial() : NULL;
	int n = partial ? snprintf(abandon_msg, sizeof abandon_msg, "scope-profiler: run: abandoned: the calls "
				   "streamed so far stay in %s (scope-profiler recover finishes it)\n", partial)
			: -1;
	int fits = n > 0 && (size_t)n < sizeof abandon_msg &&
		   (size_t)snprintf(abandon_partial, sizeof abandon_partial, "%s", partial) < sizeof abandon_partial;
	if (!fits)
		abandon_partial[0] = '\0';   /* abandon_none is said */
	abandon_len = fits ? (size_t)n : sizeof abandon_none - 1;
	const char *target = partial ? sp_stream_target() : NULL;
	char *job = NULL;
	int rank = -1;
	n = target && sp_merge_rank_of(target, &job, &rank) && rank >= 0
		? snprintf(abandon_rank_msg, sizeof abandon_rank_msg, "scope-profiler: run: abandoned: this rank's "
			   "calls are in %s (scope-profiler recover %s merges the ranks' files)\n", target, job)
		: -1;
	free(job);
	fits = n > 0 && (size_t)n < sizeof abandon_rank_msg &&
	       (size_t)snprintf(abandon_rank_file, sizeof abandon_rank_file, "%s", target) < sizeof abandon_rank_file;
	abandon_rank_len = fits ? (size_t)n : 0;
	pthread_sigmask(SIG_SETMASK, &before, NULL);
}

/* _run_exit(): the run's atexit callback: the exit signals are taken,
 * then the session ends (sp_session_end_run: write, print, clean up). */
static PyObject *run_exit(PyObject *m, PyObject *unused)
{
	take_exit_signals(1);
	sp_session_end_run();
	/* A thread's os._exit(n) waited for this end's write and would never
	 * get the GIL back: with the profile written (or its fallback) and the
	 * children's folder cleaned up, the run ends with n, as the call would
	 * have ended it; an exit signal noted meanwhile ends it instead. */
	int status;
	if (sp_final_exit_pending(&status) && !sp_run_exit_signal_last())
		_exit(status);
	Py_RETURN_NONE;
}

PyMethodDef sp_exitphase_methods[] = {
	{"_run_exit", run_exit, METH_NOARGS, NULL},
	{"_run_watch", run_watch, METH_VARARGS, NULL},
	{"_exit_signals_default", exit_signals_default, METH_NOARGS, NULL},
	{"_child_signals", child_signals, METH_NOARGS, NULL},
	{"_on_child_signal", (PyCFunction)(void (*)(void))on_child_signal_py, METH_FASTCALL,
	 "scope-profiler run --subprocesses' handler of SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2, "
	 "SIGALRM, SIGVTALRM and SIGPROF "
	 "in a child process: its profile is written, then the signal ends it."},
	{"_on_exit_signal", (PyCFunction)(void (*)(void))on_exit_signal_py, METH_FASTCALL,
	 "scope-profiler run's handler of SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM "
	 "and SIGPROF: the profile "
	 "is written, then the signal ends the run, running no more of the script."},
	{NULL},
};
