/* sp_pysession.h - the profiling session inside the built-in module
 * (session.c): setup() -> record -> finalize(), and `run`'s start and
 * end. Include <Python.h> first. */
#ifndef SP_PYSESSION_H
#define SP_PYSESSION_H

#include "sp_session.h"

/* The end of `run` (the atexit callback, exitphase.c): writes what the
 * script did not finalize itself (to the fallback path when the output
 * path fails, saying so), prints the summary unless quiet, removes the
 * shim folder. Never raises. */
void sp_session_end_run(void);

/* `run`'s start, after the interpreter: the session of the command line's
 * settings (the given ones fixed for the script's setup()), writing to
 * outfile (absolute; fixed only when s->outfile was given), the --recursive
 * hook (its root region `root`; the code of t counts as the user's own),
 * the exit hooks. Returns 0, or -1 after printing why (-2: Ctrl-C, its
 * traceback printed as python prints it). */
int sp_session_begin_run(const struct sp_settings *s, const char *outfile, const char *root,
			 const struct sp_run_target *t);

/* The module, for the read API's classes (module init; borrowed). */
void sp_session_bind(PyObject *mod);

/* Whether `run` could not write the profile where it was asked to. */
int sp_session_write_failed(void);

/* The script is ending with a failure (an exit signal): under MPI this
 * rank does not wait for the others. */
void sp_session_note_failed(void);
/* sys.exit(status) under run: a status other than None or 0 is a failure
 * (under MPI such a rank does not wait for ever for the others). */
void sp_session_note_exit_status(PyObject *status);

/* `run`, at os.exec*(): writes the profile as at the end of the run (the
 * process is about to be replaced); the shim folder stays for the new
 * program. Returns 1 when it ended the session, else 0. Never raises. */
int sp_session_end_before_exec(void);

/* A child process's session (run --subprocesses) at os._exit(): its
 * profile is written, quietly, for the run to merge. Nothing in the run's
 * own process. Never raises. */
void sp_session_end_child(void);

/* 1 in the run's own process where os._exit() ends the run (not in a
 * child, not under an MPI launcher), else 0. */
int sp_session_ends_at_exit(void);

/* `run` at os._exit(status) in its own process: the profile is written
 * as at the end of the run (not under an MPI launcher). 1 when it was
 * written here, else 0. Never raises. */
int sp_session_end_at_exit(PyObject *status);

/* The exec after sp_session_end_before_exec failed: one line says that
 * what follows is not recorded (instead of the after-finalize warning). */
void sp_session_exec_failed(void);

/* setup(), finalize() and the session's other module functions. */
extern PyMethodDef sp_session_methods[];

/* In a child session (run --subprocesses): leaves dir/writing-<PID> in the
 * run's folder as its end's write begins, so that a run ended by the same
 * signal waits for it (sp_children_ending). Async-signal-safe (open,
 * close); nothing in another process. */
void sp_session_say_writing(void);

#endif
