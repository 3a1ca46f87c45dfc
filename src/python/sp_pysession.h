/* sp_pysession.h - the session inside the built-in module, shared by its
 * files: the state (session.c), the end of a session (finalize.c), the run
 * (run_session.c) and its exit phase (exitphase.c). Include <Python.h>
 * first. */
#ifndef SP_PYSESSION_H
#define SP_PYSESSION_H

#include <stdint.h>

#include "sp_error.h"
#include "sp_profile.h"
#include "sp_session.h"

/* Raises the Python exception of an sp_err (the one mapping of the module):
 * SP_ENOENT FileNotFoundError, SP_ENOMEM MemoryError, anything else
 * OSError, with msg. Returns NULL, for `return sp_py_err(...)`. */
PyObject *sp_py_err(enum sp_err code, const char *msg);

/* What the end of a session does (finalize.c). */
struct sp_final {
	const char *path;            /* write the profile here; NULL: no file */
	int render;                  /* the summary, as a str in ->summary */
	int render_lines;            /* the line tables, in ->lines */
	int snapshot;                /* the profile as the read API's data, in ->data */
	int failed;                  /* under MPI: this rank's script failed */
	const char *fallback;        /* under MPI: where a rank writes alone */
	int compression;             /* deflate level of the event columns, 0..9 */
	int64_t run_start_ns;
	struct sp_kv *meta;          /* the file's metadata, nmeta pairs (borrowed) */
	size_t nmeta;
	int64_t parent_pid;          /* a child process of the run (--subprocesses): its parent */
	const char *children_dir;    /* the run's own process under --subprocesses: the child
				      * profiles there join this one (sp_children_merge) */
	size_t children_merged;      /* out: how many did */
	PyObject *summary, *lines, *data;   /* out: new references or NULL */
};

/* Stops recording everywhere (sp_session_freeze), builds the profile of the
 * live regions, says its losses on stderr, writes it (collectively under
 * MPI), renders what f asks. Returns 0, or -1 with an exception set (the
 * file's failure as OSError; the events are kept). */
int sp_final_run(struct sp_final *f);

/* The end of `run` (the atexit callback, exitphase.c): writes what the
 * script did not finalize itself (to the fallback path when the output
 * path fails, saying so), prints the summary unless quiet, removes the
 * shim folder. Never raises. */
void sp_session_end_run(void);

/* `run`'s start, after the interpreter: the session of the command line's
 * settings (the given ones fixed for the script's setup()), writing to
 * outfile (absolute; fixed only when s->outfile was given), the --recursive
 * hook, the exit hooks. Returns 0, or -1 after printing why. */
int sp_session_begin_run(const struct sp_settings *s, const char *outfile, const char *target,
			 const char *command_line);

/* The module, for the read API's classes (module init; borrowed). */
void sp_session_bind(PyObject *mod);

/* Whether `run` could not write the profile where it was asked to. */
int sp_session_write_failed(void);

/* The exit signal (SIGINT, SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2)
 * that ended the run or arrived while it ended, else 0 (exitphase.c). */
int sp_run_exit_signal(void);

/* The script is ending with a failure (an exit signal): under MPI this
 * rank does not wait for the others. */
void sp_session_note_failed(void);

/* `run`, at os.exec*(): writes the profile as at the end of the run (the
 * process is about to be replaced); the shim folder stays for the new
 * program. Returns 1 when it ended the session, else 0. Never raises. */
int sp_session_end_before_exec(void);

/* A child process's session (run --subprocesses) at os._exit(): its
 * profile is written, quietly, for the run to merge. Nothing in the run's
 * own process. Never raises. */
void sp_session_end_child(void);

/* The exec after sp_session_end_before_exec failed: one line says that
 * what follows is not recorded (instead of the after-finalize warning). */
void sp_session_exec_failed(void);

/* The module functions of the session and of the exit phase. */
extern PyMethodDef sp_session_methods[];
extern PyMethodDef sp_exitphase_methods[];

#endif
