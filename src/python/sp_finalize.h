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

/* Stops recording everywhere (sp_mode_freeze), builds the profile of the
 * live regions, says its losses on stderr, writes it (collectively under
 * MPI), renders what f asks. Returns 0, or -1 with an exception set (the
 * file's failure as OSError; the events are kept). */
int sp_final_run(struct sp_final *f);

/* Whether a profile is being written (sp_final_run, the GIL released):
 * the session must not change meanwhile. */
int sp_final_writing(void);

/* In a process just forked: no profile is being written here (the thread
 * of the parent's that wrote one is not in the child). */
void sp_final_forked(void);

#endif
