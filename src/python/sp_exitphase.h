/* sp_exitphase.h - how `scope-profiler run` ends, whatever ends it
 * (exitphase.c): exit signals, os.exec*(), os._exit() in a child. Include
 * <Python.h> first. */
#ifndef SP_EXITPHASE_H
#define SP_EXITPHASE_H

/* Once the interpreter has ended: the exit signal (SIGINT, SIGTERM,
 * SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF) that ended the run or arrived while
 * it ended, one pending now included, else 0. The run's handler is gone
 * after it: one arriving later takes its default action, as at the very
 * end of plain python. */
int sp_run_exit_signal_last(void);

/* _run_exit, _run_watch, _exit_signals_default, _on_exit_signal. */
extern PyMethodDef sp_exitphase_methods[];

#endif
