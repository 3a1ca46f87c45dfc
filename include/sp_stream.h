/* sp_stream.h - a run's events streamed to disk while it runs (format
 * version 3, man/scope-profiler-format.5): the recording side hands whole
 * blocks of one region's calls over; a background writer thread, which never
 * takes the GIL, appends them to OUT.partial (HDF5 in single-writer /
 * multiple-reader mode, so that the file reads as a profile at any moment,
 * and after a kill) and flushes it every interval; the end of the run
 * finishes that file and renames it to OUT.
 *
 * The producer calls (sp_stream_name .. sp_stream_flush) come from one thread
 * at a time (the recording side calls them holding the GIL) and never block
 * on the disk: what the writer has not written yet waits in a queue of at
 * most queue_bytes (an empty queue takes any one block); a hand-over that
 * does not fit is refused (-1) and the caller keeps or drops the calls,
 * counting them. */
#ifndef SP_STREAM_H
#define SP_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sp_error.h"
#include "sp_profile.h"

/* The stream's flush interval when none is given, in nanoseconds. */
#define SP_STREAM_INTERVAL_NS ((int64_t)1000000000)

struct sp_stream_config {
	const char *path;          /* OUT: the stream writes OUT.partial beside it */
	int rank;
	/* Under MPI (mpi_size > 0; 0 when serial): path is the rank's own file
	 * (sp_merge_rank_file), the rank's group gets an mpi_size attribute,
	 * and clock_offset_ns (this rank's clock minus rank 0's) is subtracted
	 * from every time written, so that the file is on rank 0's clock. Such
	 * a target is the run's own intermediate: one left by an earlier run is
	 * removed when the partial file is created. The rank's group gets the
	 * job's id (mpi_job) too. */
	int mpi_size;
	int64_t clock_offset_ns;
	int64_t mpi_job;           /* under MPI: the job's id (sp_mpi_job), the rank's mpi_job */
	int64_t pid, run_start_ns;
	int64_t parent_pid;        /* a child process of run --subprocesses: its parent's pid (0: none) */
	const char *hostname;      /* NULL: none */
	/* The run's own process under run --subprocesses: the folder its child
	 * processes stream into (NULL: none), the rank's children_dir, for
	 * `recover` of a run that was killed. */
	const char *children_dir;
	int compression;           /* the event columns: 0, or a deflate level 1..9 */
	size_t queue_bytes;        /* the most bytes of calls waiting for the writer */
	int64_t interval_ns;       /* how often the writer asks for a flush (> 0) */
	/* Called from the writer thread every interval, without the GIL: asks
	 * the recording side to hand its partly filled blocks over and call
	 * sp_stream_flush (Py_AddPendingCall). */
	void (*ask_flush)(void);
};

/* Starts the stream. Nothing is written, and no thread runs, until the
 * first block or flush: a run that ends before either writes no partial
 * file. SP_EINVAL
 * (a bad path: a device, a directory), SP_ENOMEM or SP_EIO with err set. */
enum sp_err sp_stream_start(const struct sp_stream_config *c, struct sp_error *err);

/* Whether a stream is running (started, not finished or abandoned). */
int sp_stream_on(void);

/* The script closes descriptors (os.close, os.closerange, os.dup2) between
 * these two: the writer writes nothing meanwhile (it waits at most a few
 * seconds: a writer waited for by a thread that holds the GIL goes on), and
 * before it writes again it finds the file's own descriptors (opened again
 * by path where the script closed them), never one of the script's files on
 * a number the stream had. Enter waits for a write in progress: call it
 * without the GIL. */
void sp_stream_fds_enter(void);
void sp_stream_fds_leave(void);

/* Region id's exact name (UTF-8): ids are given by the caller, 0, 1, ...
 * in order, each named once before its first block. 0, or -1 (refused). */
int sp_stream_name(int32_t id, const char *name);

/* Hands n calls (n > 0) of region id over: their starts, ends (SP_NO_TIME
 * for a call still open: see sp_stream_patch), lanes (NULL: lane 0) and
 * values of kind `kind` (an enum sp_value_kind; values NULL: none, 0 in
 * the file where the column exists), copied. Returns the index in the
 * file's event columns of the first of them, or -1 when refused (the queue
 * is full, or the writer failed). */
int64_t sp_stream_block(int32_t id, size_t n, const int64_t *starts, const int64_t *ends,
			const int32_t *lanes, int kind, const int64_t *values);

/* sp_stream_block without the copy: the columns become the stream's (it
 * may change them), and give_back(owner) is called once they are written
 * or dropped, from the writer's thread or the caller's. -1: refused, the
 * columns still the caller's (give_back not called). */
int64_t sp_stream_block_owned(int32_t id, size_t n, int64_t *starts, int64_t *ends, int32_t *lanes, int kind,
			      int64_t *values, void (*give_back)(void *owner), void *owner);

/* Whether a block of n calls (with lanes, values or not) would be taken now. */
int sp_stream_room(size_t n, int lanes, int values);

/* Whether the writer thread has stopped (sp_stream_quiesce): each record
 * is then written by the caller as it is handed over. */
int sp_stream_direct(void);

/* A call handed over while still open ends at `end`: event `index` of the
 * file (sp_stream_block's index plus its place in the block); kind > 0:
 * its value of that kind is `value` (handed over as 0). Kept until the
 * next sp_stream_flush. 0, or -1 when memory runs out (counted). */
int sp_stream_patch(int64_t index, int64_t end, int kind, int64_t value);

/* Everything handed over so far is to reach the file now, with `now` as the
 * time up to which the file is complete (its flushed_ns). */
void sp_stream_flush(int64_t now);

/* Calls refused so far because the writer fell behind (the queue was full),
 * and whether the writer has failed (its message in *err when err). */
uint64_t sp_stream_refused(void);
int sp_stream_failed(struct sp_error *err);
/* After a failure, the calls handed over that the file's last flush does
 * not hold (lost with the stream; the writer stopped); else 0. */
uint64_t sp_stream_unsaved(void);

/* Writes what was handed over (the writer stopped) and closes the file:
 * OUT.partial then reads as a complete partial profile (every call up to
 * now; sp_stream_partial names it) until sp_stream_finish completes it.
 * SP_OK, or the writer's failure. */
enum sp_err sp_stream_close(struct sp_error *err);

/* The partial file's path while a stream is on, else NULL; the calls handed
 * over so far. */
const char *sp_stream_partial(void);
/* The file the stream finishes into (OUT, absolute) while it is on, else NULL. */
const char *sp_stream_target(void);
uint64_t sp_stream_calls(void);

/* Ends the stream (closing it first when sp_stream_close did not): waits for the writer to write everything handed over,
 * stops it, completes the file with p (one rank: its regions in id order,
 * each with its statistics and no events, its times on the rank's own
 * clock, shifted as the events were; metadata, line tables, LIKWID
 * counters) and renames OUT.partial to path (NULL: the OUT it started with). On failure OUT is untouched,
 * OUT.partial stays (with every call the writer wrote) and err says why.
 * The stream is off afterwards whatever the outcome. */
enum sp_err sp_stream_finish(const struct sp_profile *p, const char *path, struct sp_error *err);

/* Stops the writer thread once it wrote what was handed over: from here on
 * what is handed over is written by the calling thread at once (the end of
 * the run, which must not be refused). */
void sp_stream_quiesce(void);

/* At the end of the run, before the last calls are handed over: when the
 * file is not made yet, it is made for about this many calls in this many
 * blocks (its columns' chunks no larger: a chunk takes its whole size on
 * disk from its first call, so a process of a few calls leaves a small
 * file). A hint: more calls are written all the same. */
void sp_stream_size_hint(uint64_t calls, uint64_t blocks);

/* Before a fork: the writer thread writes what was handed over and ends,
 * and is gone from the kernel's count of this process's threads, so that
 * the fork is a single-threaded process's (as without the stream); the next
 * record starts it again. */
void sp_stream_pause(void);

/* Waits (at most about 0.1 s) until the kernel no longer counts thread tid
 * of this process (joined threads linger a moment). */
void sp_stream_thread_gone(pid_t tid);

/* Whether anything was handed over (the run then ends with
 * sp_stream_finish; else with sp_stream_cancel and a file written whole). */
int sp_stream_handed(void);

/* From now on the stream has a file even if no call is handed over (the
 * next flush creates it): under MPI every rank of a job that streams
 * leaves one, a rank that recorded nothing included. */
void sp_stream_want_file(void);

/* Stops the writer and the stream without finishing the file, which stays
 * as it is (every call written): a run that cannot finish it (under MPI,
 * the merge recovers it). */
void sp_stream_leave(void);

/* Stops the writer and the stream without finishing a file (nothing was
 * handed over, or the run writes no profile after all). */
void sp_stream_cancel(void);

/* In a forked child: the parent's stream is none of this process's
 * business. The writer thread does not exist here; the file's descriptor
 * is pointed away so that nothing (not even HDF5's exit handler) writes
 * into the parent's file; the stream is off. */
void sp_stream_forget(void);

/* For recover: a partial file that its run left marked as open for
 * writing (killed while it finished the file) is marked closed, so that it
 * reads, unless a live run streams into it. 1 when it was, 0 when nothing
 * was done (a live run's), -1 when it cannot be (not such a file). */
int sp_stream_unmark_dead(const char *partial);

/* Whether a live run streams into partial now (holds the stream's lock on
 * it): 1, 0 (none: a dead run's, or a file no run made), -1 when it cannot
 * be told (a file system without locks). */
int sp_stream_written_now(const char *partial);

/* The partial file's path for OUT (OUT + ".partial"), malloc'd, or NULL. */
char *sp_stream_partial_path(const char *path);

/* HDF5 calls from several threads of one process (the stream's writer, the
 * read API) go through this lock. */
void sp_h5_lock(void);
void sp_h5_unlock(void);

#endif
