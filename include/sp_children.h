/* sp_children.h - the profiles of a run's child processes (run
 * --subprocesses): each child streams to dir/proc-<PID>.h5.partial and
 * finishes it into dir/proc-<PID>.h5, a one-rank profile (or writes that
 * whole), and the parent merges them into its own profile before writing
 * it; a child killed (or still running) is merged from its partial file.
 * A program the child runs after os.exec* (the same pid) writes
 * proc-<PID>-<k>.h5, k = 2, 3, ...: a child of its own here, after it. */
#ifndef SP_CHILDREN_H
#define SP_CHILDREN_H

#include <stddef.h>

#include "sp_error.h"
#include "sp_profile.h"

/* What sp_children_merge found in the folder. */
struct sp_children_found {
	size_t merged;       /* child profiles merged into p */
	size_t unreadable;   /* proc-*.h5 files that could not be read (not profiles, truncated) */
	size_t recovered;    /* of those merged, the ones from a partial file (up to its last flush) */
	size_t processes;    /* the processes they came from (a process that ran a second program after
			      * os.exec* wrote one profile for each) */
};

/* The pid of a child profile's file (dir/proc-<PID>[-<k>].h5[.partial]),
 * -1 for any other name. */
int64_t sp_children_file_pid(const char *path);

/* Appends to p each child profile dir/proc-<PID>.h5 (a profile written by
 * a child process of the run: one rank, its pid and parent_pid set), or,
 * when there is none or it cannot be read, dir/proc-<PID>.h5.partial (the
 * calls up to its last flush, as `recover` reads it: the rank's run ends
 * there, and p's metadata gets incomplete_ranks and partial_until_ns, as
 * an MPI job's merge sets them), in ascending pid order, as ranks of their
 * own numbered after p's highest rank number, keeping everything the child
 * recorded (pid, parent_pid, run start/end, hostname, dropped, regions with
 * their events owned by p, the call tree, line tables, likwid tables).
 * Files whose name does not match proc-<digits>[-<k>].h5[.partial] are ignored
 * (e.g. temporary files of a write in progress and other files in the
 * folder). Returns SP_OK, also when dir holds none or does not exist; an
 * error only when memory runs out. Never prints. found may be NULL; on an
 * error p holds the children merged so far (each whole) and found counts
 * them. The files' metadata is ignored; a file of several ranks adds each
 * of them. */
enum sp_err sp_children_merge(struct sp_profile *p, const char *dir,
			      struct sp_children_found *found, struct sp_error *err);

/* The children's profiles in dir for a merge of files (sp_merge_processes):
 * *files (*n of them, in ascending pid order) are dir/proc-<PID>.h5 for each
 * pid that left that file or dir/proc-<PID>.h5.partial. Free with
 * sp_children_files_free. SP_OK (also for none, or no folder), or
 * SP_ENOMEM. */
enum sp_err sp_children_files(const char *dir, char ***files, size_t *n, struct sp_error *err);

void sp_children_files_free(char **files, size_t n);

/* How many children in dir are still ending: each child that still
 * streams into its partial file (a live process holds it) or is marked in
 * dir ("child-<PID>", the shim's), alive, with no finished profile
 * (proc-<PID>.h5), and said it writes one ("writing-<PID>", left at its
 * exit signal or its os._exit), or has a signal pending it has not taken
 * yet, or sig (the run's: the process group's) blocked, as it is while its
 * handler begins (a loaded machine has not run it since, or it is
 * stopped), or, with fresh set, has not said so yet (a small
 * child makes its file only at its end). A child that never got the signal
 * (SIGTERM to the run alone) goes on by itself, as under python, after
 * that. */
size_t sp_children_ending(const char *dir, int fresh, int sig);

/* Whether process pid has ended (a zombie its parent has not reaped yet
 * included). */
int sp_process_gone(long pid);

#endif
