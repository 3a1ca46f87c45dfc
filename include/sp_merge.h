/* sp_merge.h - the one profile of an MPI job whose ranks streamed (format
 * version 3, man 5 scope-profiler-format), built from the ranks' own files
 * with bounded memory (src/store/merge.c).
 *
 * Under MPI each rank r streams as a serial run does, to OUT.rank{r}.partial
 * (its times already on rank 0's clock), and at the end finishes it into
 * OUT.rank{r}. The merge writes OUT from those files: a finished rank's
 * group is copied whole (a chunk at a time); a rank killed or failed, whose
 * calls are in its partial file only, is recovered into OUT as `recover`
 * reads such a file (every call up to its last flush, a call still open
 * then ending there). A rank with no file is left out. Each rank left out
 * or recovered gets one line in the report. OUT appears by rename, complete,
 * or not at all; it is a finished version 3 profile that every reader
 * reads. The run's rank 0 merges once the ranks met; `scope-profiler
 * recover` merges what a killed job left. */
#ifndef SP_MERGE_H
#define SP_MERGE_H

#include <stdint.h>

#include "sp_error.h"

/* What a rank left for the merge. */
enum sp_merge_state {
	SP_MERGE_UNKNOWN = 0,          /* not said (recover): its finished file, else its partial one */
	SP_MERGE_FINISHED,             /* OUT.rank{r}, finished by the rank */
	SP_MERGE_PARTIAL,              /* OUT.rank{r}.partial: the rank could not finish it */
	SP_MERGE_NONE,                 /* no file of its own: left out */
};

/* One rank's part in OUT. */
struct sp_merge_rank {
	enum sp_merge_state state;     /* what went into OUT: FINISHED, PARTIAL, or NONE (left out) */
	int64_t calls;                 /* its calls in OUT */
	int64_t partial_until_ns;      /* PARTIAL: its last flush, on rank 0's clock */
	char note[512];                /* "" or one line on what became of it ("rank 3: ...") */
};

struct sp_merge_report {
	int nranks;                    /* the job's ranks */
	struct sp_merge_rank *ranks;   /* nranks of them */
	int64_t calls;                 /* every rank's in OUT */
	int in_out;                    /* ranks in OUT */
	int all_trees;                 /* every rank in OUT holds its call tree (a summary needs no event) */
};

/* OUT.rank{rank}: rank's own file under MPI (malloc'd; NULL when out of
 * memory). Its partial file is that path + ".partial". */
char *sp_merge_rank_file(const char *out, int rank);

/* Writes out from the rank files of the job whose profile is job (its
 * OUT: the files are job.rank{r} and job.rank{r}.partial; out is job
 * itself at the end of a run) of nranks ranks (nranks <= 0: as many as the
 * files say: `recover`), whose id is job_id (the run's sp_mpi_job; 0:
 * that of the job that wrote the newest rank file: `recover`). said[r] is
 * what rank r said it left (NULL: nothing said, each rank's finished file
 * is taken, else its partial one). A rank file that holds another rank,
 * or whose rank attributes mpi_job or mpi_size differ from the job's (a
 * file an earlier job left on the same output), is left out. OUT's
 * /metadata is the lowest finished rank's (a minimal one when none
 * finished) with hostnames, and incomplete_ranks,
 * missing_ranks and partial_until_ns where ranks were recovered or left
 * out. With `remove`, the rank files that went into OUT are removed once
 * OUT is there. *rep (free with sp_merge_report_free) says what became of
 * each rank, also on failure where it got that far. SP_ENOENT when no rank
 * file is there at all, SP_ENOMEM, SP_EIO (OUT cannot be written: it is
 * then untouched and the rank files stay). */
enum sp_err sp_merge_ranks(const char *job, const char *out, int nranks, int64_t job_id,
			   const enum sp_merge_state *said, int remove, struct sp_merge_report *rep,
			   struct sp_error *err);

/* Writes out from the profiles of a run's processes (run --subprocesses):
 * files[k] (k < n) is process k's finished file, or, when that is not
 * there or cannot be read, files[k] + ".partial" is recovered (as above);
 * each holds one rank group of format version 3, which becomes OUT's
 * rank{k} (its pid and parent_pid kept); said (NULL: nothing said) as
 * sp_merge_ranks's (recover of a run killed: its own file is the partial
 * one, whatever files[0] is). files[0] may be out itself (the run's own
 * profile, replaced by OUT complete). No file is removed. *rep and the
 * return as sp_merge_ranks's (each part a "rank" of the report; its notes
 * name ranks, not processes). */
enum sp_err sp_merge_processes(const char *const *files, int n, const char *out,
			       const enum sp_merge_state *said, struct sp_merge_report *rep, struct sp_error *err);

void sp_merge_report_free(struct sp_merge_report *rep);

/* Whether path names an MPI rank's file, OUT.rank{N} or OUT.rank{N}.partial
 * (then *job is OUT, malloc'd, and *rank N), or an OUT that rank files lie
 * beside (then *job is a copy of path, *rank -1). 0 otherwise (or out of
 * memory): a serial run's profile so named (no mpi_size) is not a rank's. */
int sp_merge_rank_of(const char *path, char **job, int *rank);

#endif
