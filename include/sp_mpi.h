/* sp_mpi.h - running under an MPI launcher: one merged profile for all ranks.
 *
 * Under mpirun (or srun with PMI/PMIx) `scope-profiler run` initialises MPI
 * itself before the script runs, measures every rank's clock offset against
 * rank 0, and at the end of a session gathers every rank's profile onto rank
 * 0, which writes one file with a /rank{N} group per rank. Without a launcher
 * nothing here touches MPI. A build without MPI compiles the same interface:
 * under a launcher it warns once and lets each rank write its own file. */
#ifndef SP_MPI_H
#define SP_MPI_H

#include <stdint.h>

#include "sp_profile.h"

/* 1 when this executable was built with MPI. */
int sp_mpi_built(void);

/* A one-line description of the MPI library ("Open MPI v4.1.4, ..."), or a
 * note that MPI is not built in. */
const char *sp_mpi_library(void);

/* The rank a launcher gave this process, from its environment
 * (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK), or -1 when none did.
 * SCOPE_PROFILER_MPI=0 makes it -1 whatever the environment says. */
int sp_mpi_launch_rank(void);

/* How long a rank whose script failed waits for the others at the end:
 * SCOPE_PROFILER_MPI_WAIT seconds (default 60). Returns 0, or -1 when the
 * variable is set but not a number of seconds (>= 0). */
int sp_mpi_wait_seconds(double *out);

/* Initialises MPI (MPI_THREAD_MULTIPLE, as mpi4py asks for), duplicates
 * MPI_COMM_WORLD for our own messages and measures the clock offsets. Call
 * only when sp_mpi_launch_rank() >= 0. */
enum sp_err sp_mpi_start(struct sp_error *err);

/* 1 between sp_mpi_start and sp_mpi_end (a script's MPI_Finalize is
 * deferred to sp_mpi_end, so MPI stays usable for the final write). */
int sp_mpi_active(void);
int sp_mpi_rank(void);                 /* 0 when not active */
int sp_mpi_size(void);                 /* 1 when not active */

/* The end of a session, collective over every rank. p holds this rank's
 * profile (one rank, numbered with this rank, events loaded when
 * with_events). Every rank sends it to rank 0, its timestamps put on rank
 * 0's clock; rank 0 writes all ranks to path (when path is not NULL) one
 * rank at a time, and afterwards p holds every rank (summary data: stats,
 * trees, line tables; the other ranks' events are not kept) and the
 * metadata keys mpi_size and hostnames. On the other ranks p is unchanged.
 * Every rank returns rank 0's outcome (err: rank 0's message).
 *
 * A rank whose script failed (failed != 0) waits at most wait_s seconds for
 * every rank to arrive: if they do not (they may be blocked in a
 * communication with this rank), it saves its own profile to fallback_path,
 * says so on stderr and aborts the job with MPI_Abort. */
enum sp_err sp_mpi_collect(struct sp_profile *p, const char *path, int with_events, int failed,
			   double wait_s, const char *fallback_path, struct sp_error *err);

/* This rank's clock minus rank 0's, as measured at sp_mpi_start (0 when
 * MPI is not active); on rank 0, the largest error of those measures. */
int64_t sp_mpi_clock_offset(void);
int64_t sp_mpi_sync_error(void);

/* The job's id, the same on every rank and another for each job (rank 0's
 * wall clock at sp_mpi_start, in ns): the ranks' own files carry it, so
 * that a file an earlier job left on the same output is told apart. 0
 * when MPI is not active. */
int64_t sp_mpi_job(void);

/* The end of a session whose ranks may have streamed their calls to files
 * of their own (sp_merge.h), collective over every rank, in two steps.
 *
 * First the ranks meet: every rank says whether its calls streamed
 * (streamed) and learns whether any rank's did (*any). A rank whose script
 * failed (failed != 0) waits at most wait_s seconds for the others: when
 * they do not come, -1 (and a later sp_mpi_collect gives up at once, as it
 * does after waiting); else 0. A rank whose own file holds its profile
 * then calls sp_mpi_abandon: it says where the file is and aborts the job.
 * While it waits for the others, waiting(arg) (when not NULL) is called
 * every few milliseconds, without the GIL.
 * When no rank streamed, the session ends with sp_mpi_collect as before.
 *
 * Else every rank has left its own file (state: an enum sp_merge_state,
 * FINISHED, PARTIAL or NONE) and calls sp_mpi_merge: rank 0 merges the
 * ranks' files job.rank{r} (job NULL: path.rank{r}; rank 0's job counts)
 * into path, removes them, and fills *rep (rank 0 only: what
 * became of each rank; free with sp_merge_report_free). Every rank returns
 * rank 0's outcome (err: rank 0's message); on failure the rank files stay
 * (scope-profiler recover merges them). */
struct sp_merge_report;
int sp_mpi_meet(int streamed, int failed, double wait_s, int *any, void (*waiting)(void *), void *arg);
_Noreturn void sp_mpi_abandon(const char *file, double wait_s);
enum sp_err sp_mpi_merge(const char *job, const char *path, int state, struct sp_merge_report *rep,
			 struct sp_error *err);

/* The address of a function of the MPI library in use ("PMPI_Send"): the
 * one sp_mpi_start loaded, else the one a script's import loaded; NULL
 * when none is loaded or it lacks the name. */
void *sp_mpi_symbol(const char *name);

/* Finalises MPI if sp_mpi_start initialised it. */
void sp_mpi_end(void);

#endif
