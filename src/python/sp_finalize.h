/* sp_finalize.h - the end of a session (finalize.c): the live regions
 * become a profile, written, rendered and handed to the read API. Include
 * <Python.h> first. */
#ifndef SP_FINALIZE_H
#define SP_FINALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"

/* What the end of a session does. */
struct sp_final {
	const char *path;            /* write the profile here; NULL: no file */
	int render;                  /* the summary, as a str in ->summary */
	int render_lines;            /* the line tables, in ->lines, */
	int lines_width;             /* that wide (sp_py_render) */
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
	size_t children_merged;      /* out: how many did (processes: one for the programs a pid ran) */
	size_t children_recovered;   /* out: of those, how many from a partial file (killed) */
	const char *root;            /* run --recursive: the root region, which with the
				      * script's body (__main__.<module>) every run records */
	int skip_if_empty;           /* the script failed: a profile of no call of its own
				      * is neither written nor rendered (not under MPI,
				      * streaming or --subprocesses) */
	int skipped;                 /* out: it was not, for that reason */
	int64_t calls;               /* out: the script's calls (less root's and its body's);
				      * -1: not known */
	PyObject *summary, *lines, *data;   /* out: new references or NULL */
};

/* Stops recording everywhere (sp_mode_freeze), builds the profile of the
 * live regions, says its losses on stderr, writes it (collectively under
 * MPI), renders what f asks. Returns 0, or -1 with an exception set (the
 * file's failure as OSError; the events are kept). */
int sp_final_run(struct sp_final *f);

/* The run is ending by exit signal sig (exitphase.c): a process group's
 * children got it too, and the end waits a moment for theirs to finish
 * their files. Async-signal-safe. */
void sp_final_note_signal(int sig);

/* Whether the last end of a session under MPI left the profile in the
 * ranks' own files, their merge having failed (scope-profiler recover
 * merges them): a file written elsewhere would hold less. */
int sp_final_files_kept(void);

/* Whether a profile is being written (sp_final_run, the GIL released):
 * the session must not change meanwhile. */
int sp_final_writing(void);

/* A thread's os._exit(status) waits for the profile being written
 * (exitphase.c): noted here, for the run's end, which keeps the GIL to the
 * process's end (the waiting thread would not get it back). */
void sp_final_exit_when_written(int status);

/* Whether a thread's os._exit waited for a write: 1 and its status, or 0. */
int sp_final_exit_pending(int *status);

/* In a process just forked: no profile is being written here (the thread
 * of the parent's that wrote one is not in the child). */
void sp_final_forked(void);

#endif
