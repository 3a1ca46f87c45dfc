/* stream.c - a run's events streamed to OUT.partial while it runs (see
 * sp_stream.h; the layout is format version 3 of scope-profiler-format(5)).
 *
 * The producer (the recording side, holding the GIL) copies each block it
 * hands over into a record, or hands a buffer's columns over as they are
 * (sp_stream_block_owned), and queues it; the writer thread takes the whole
 * queue at once, writes the records through a stage (small blocks are
 * gathered into one write per column), and at each flush record writes
 * flushed_ns and flushes the file. The file is in HDF5's single-writer /
 * multiple-reader mode: readers open it at any moment, and after a kill, and
 * see every call up to the last flush. Every HDF5 call of the writer holds
 * sp_h5_lock. The writer thread starts with the first record (a run that
 * hands nothing over has no thread of ours), and pauses around a fork
 * (sp_stream_pause; the next record starts it again). When the writer is
 * stopped (sp_stream_finish), the records the producer still hands over are
 * written at once by the calling thread. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_clock.h"
#include "sp_h5.h"
#include "sp_h5write.h"
#include "sp_outpath.h"
#include "sp_stream.h"
#include "sp_stream_file.h"
#include "sp_thread.h"

static pthread_mutex_t h5_mutex = PTHREAD_MUTEX_INITIALIZER;

void sp_h5_lock(void)
{
	pthread_mutex_lock(&h5_mutex);
}

void sp_h5_unlock(void)
{
	pthread_mutex_unlock(&h5_mutex);
}

enum rec_kind { REC_NAME, REC_BLOCK, REC_PATCHES, REC_FLUSH };

/* One thing handed to the writer. */
struct rec {
	struct rec *next;
	enum rec_kind kind;
	int32_t id;                    /* REC_NAME, REC_BLOCK: the region */
	int value_kind;                /* REC_BLOCK: 0, or the kind of its values */
	size_t n;                      /* calls, patches, or the name's bytes with its NUL */
	size_t bytes;                  /* counted against the queue */
	int64_t time;                  /* REC_FLUSH: the file is complete up to here */
	/* REC_BLOCK: its columns, in data (copied) or the producer's own
	 * (sp_stream_block_owned: release(owner) gives them back once written
	 * or dropped); lanes NULL without, values NULL when value_kind is 0. */
	int64_t *starts, *ends, *values;
	int32_t *lanes;
	void (*release)(void *owner);
	void *owner;
	/* REC_BLOCK copied: starts[n], ends[n], values[n] (value_kind > 0),
	 * then int32 lanes[n]; REC_PATCHES: index[n], end[n], kind[n],
	 * value[n]; REC_NAME: the name. */
	int64_t data[];
};

static struct stream {
	int on;                        /* started, not finished (producer's view) */
	struct sp_stream_config c;
	char *target, *partial, *hostname, *children_dir;
	uint64_t hint_calls, hint_blocks;  /* sp_stream_size_hint: the file's size when made at the end */
	pthread_t thread;
	int thread_running;
	pid_t thread_tid;              /* the writer's, as the kernel counts threads */
	pthread_mutex_t mu;            /* the queue, stop, failed */
	pthread_cond_t cv;
	struct rec *head, *tail;
	size_t queued;                 /* bytes in the queue */
	size_t queued_blocks;          /* of which blocks' (what queue_bytes bounds) */
	int stop;                      /* the writer is to finish the queue and end */
	int direct;                    /* the writer has ended: records are written by the caller */
	int failed;                    /* the writer failed: failure says why */
	struct sp_error failure;
	/* Producer side. */
	uint64_t next_index;           /* the file index of the next call handed over */
	int handed;                    /* something was handed over */
	uint64_t refused;
	int64_t *patch[4];             /* index, end, kind (0: no value), value */
	size_t npatch, patch_cap;
	/* Writer side. */
	uint64_t flushed_calls;        /* calls in the file as of its last flush */
	unsigned slow_us;              /* SCOPE_PROFILER_TEST_SLOW_WRITER_US: a pause per record */
	int64_t busy_ns;               /* the writer's time at work (make bench) */
	struct sp_sfile f;
	int created;
	int made;                      /* this stream created OUT.partial */
	int closed;                    /* sp_stream_close ran: */
	enum sp_err close_rc;          /* its outcome */
	struct sp_error close_err;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .f = {.file = -1, .lock_fd = -1}};

/* ---- the file ---------------------------------------------------------- */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char what[320];
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&S.mu);
	if (!S.failed) {
		if (e == ENOSPC || e == EDQUOT || e == EIO || e == EFBIG || e == EROFS)
			sp_error_set(&S.failure, SP_EIO, "cannot stream to '%s': %s: %s", S.partial, what,
				     strerror(e));
		else
			sp_error_set(&S.failure, SP_EIO, "cannot stream to '%s': %s", S.partial, what);
		S.failed = 1;
	}
	pthread_mutex_unlock(&S.mu);
}

static int is_failed(void)
{
	pthread_mutex_lock(&S.mu);
	int f = S.failed;
	pthread_mutex_unlock(&S.mu);
	return f;
}

/* t on rank 0's clock (under MPI; the same time when serial), SP_NO_TIME
 * kept, wrapping as the hardware does. */
static int64_t on_rank0(int64_t t)
{
	return t == SP_NO_TIME ? t : (int64_t)((uint64_t)t - (uint64_t)S.c.clock_offset_ns);
}

static void times_on_rank0(int64_t *t, size_t n)
{
	for (size_t i = 0; S.c.clock_offset_ns && i < n; i++)
		t[i] = on_rank0(t[i]);
}

/* Creates the file (at the first record). 0, or -1 (failed). */
static int create(void)
{
	S.f = (struct sp_sfile){.partial = S.partial, .rank = S.c.rank, .compression = S.c.compression,
				.mpi_size = S.c.mpi_size, .clock_offset_ns = S.c.clock_offset_ns, .mpi_job = S.c.mpi_job,
				.pid = S.c.pid, .parent_pid = S.c.parent_pid, .run_start_ns = on_rank0(S.c.run_start_ns),
				.hostname = S.hostname, .children_dir = S.children_dir,
				.event_chunk = S.hint_calls ? (size_t)S.hint_calls : 0,
				.block_chunk = S.hint_blocks ? (size_t)S.hint_blocks : 0,
				.file = -1, .lock_fd = -1};
	sp_h5_lock();
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	int rc = sp_sfile_create(&S.f);
	sp_h5_unlock();
	if (rc != 0) {
		if (S.f.why)
			fail("%s", S.f.why);
		else
			fail("%s", strerror(errno));
		return -1;
	}
	S.created = S.made = 1;
	/* An MPI rank's finished file of an earlier run: this run's will
	 * replace it, and until then it must not pass for this run's. */
	if (S.c.mpi_size > 0)
		unlink(S.target);
	return 0;
}

/* Writes one record (the writer's thread, or the caller's once it ended);
 * its times are put on rank 0's clock first (under MPI). */
static void put(struct rec *r)
{
	if (is_failed())
		return;
	if (!S.created && create() < 0)
		return;
	int rc = 0;
	if (r->kind == REC_BLOCK) {
		times_on_rank0(r->starts, r->n);   /* starts and ends, not the values */
		times_on_rank0(r->ends, r->n);
	}
	else if (r->kind == REC_PATCHES)
		times_on_rank0(r->data + r->n, r->n);   /* the ends only */
	sp_h5_lock();
	/* The script may have closed the file's descriptor (sp_sfile_hold). */
	int held = sp_sfile_hold(&S.f);
	switch (held < 0 ? -1 : (int)r->kind) {
	case REC_NAME:
		rc = sp_sfile_name(&S.f, (const char *)r->data, r->n);
		break;
	case REC_BLOCK:
		rc = sp_sfile_block(&S.f, r->id, r->n, r->starts, r->ends, r->lanes, r->value_kind, r->values);
		break;
	case REC_PATCHES:
		rc = sp_sfile_patches(&S.f, r->n, r->data, r->data + r->n, r->data + 2 * r->n, r->data + 3 * r->n);
		break;
	case REC_FLUSH:
		rc = sp_sfile_flush(&S.f, on_rank0(r->time));
		if (rc >= 0)
			S.flushed_calls = S.f.events;
		break;
	}
	/* The file keeps what its last flush wrote: a failed write goes on
	 * nowhere, so the close cannot spoil what recover reads. */
	if (held < 0) {
		rc = -1;
	} else if (rc < 0) {
		sp_h5_detach(S.f.file);
		S.f.vfd = NULL;   /* detached for good: sp_sfile_hold opens the file no more */
	}
	sp_h5_unlock();
	if (rc < 0)
		fail("%s", held < 0 ? S.f.why : "HDF5 cannot write");
}

/* Frees a record handed over, giving a block's columns back to their owner. */
static void rec_free(struct rec *r)
{
	if (r->release)
		r->release(r->owner);
	free(r);
}

/* ---- the script's descriptors -------------------------------------------- */

/* The writer thread's writes and the script's closing of descriptors
 * (sp_stream_fds_enter/leave) keep off each other: a write begins with
 * sp_sfile_hold, which finds the file's own descriptors again, and the
 * script closes none of them during one. The writer waits FDS_WAIT_S at
 * most for a script's close, which never waits for the writer itself,
 * unless another thread that holds the GIL does (a fork, the end). */
#define FDS_WAIT_S 2
static pthread_mutex_t fds_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fds_cv = PTHREAD_COND_INITIALIZER;
static int fds_closing, fds_writing;
static int fds_waited_out;   /* the writer waited FDS_WAIT_S once: no more until no one closes */

static void fds_write_begin(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FDS_WAIT_S;
	pthread_mutex_lock(&fds_mu);
	while (fds_closing && !fds_waited_out)
		if (pthread_cond_timedwait(&fds_cv, &fds_mu, &until) == ETIMEDOUT)
			fds_waited_out = 1;
	fds_writing = 1;
	pthread_mutex_unlock(&fds_mu);
}

static void fds_write_end(void)
{
	pthread_mutex_lock(&fds_mu);
	fds_writing = 0;
	pthread_cond_broadcast(&fds_cv);
	pthread_mutex_unlock(&fds_mu);
}

void sp_stream_fds_enter(void)
{
	pthread_mutex_lock(&fds_mu);
	fds_closing++;
	while (fds_writing)
		pthread_cond_wait(&fds_cv, &fds_mu);
	pthread_mutex_unlock(&fds_mu);
}

void sp_stream_fds_leave(void)
{
	pthread_mutex_lock(&fds_mu);
	if (fds_closing > 0 && --fds_closing == 0)
		fds_waited_out = 0;
	pthread_cond_broadcast(&fds_cv);
	pthread_mutex_unlock(&fds_mu);
}

/* ---- the writer thread -------------------------------------------------- */

static void add_ns(struct timespec *t, int64_t ns)
{
	int64_t s = (int64_t)t->tv_nsec + ns % 1000000000;
	t->tv_sec += (time_t)(ns / 1000000000 + s / 1000000000);
	t->tv_nsec = (long)(s % 1000000000);
}

static int after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

static void *writer_main(void *arg)
{
	(void)arg;
	S.thread_tid = gettid();
	sp_h5_lock();
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);    /* per thread: failures are said in one line */
	sp_h5_unlock();
	struct timespec next, now;
	clock_gettime(CLOCK_MONOTONIC, &next);
	add_ns(&next, S.c.interval_ns);
	for (;;) {
		pthread_mutex_lock(&S.mu);
		while (!S.head && !S.stop) {
			if (pthread_cond_timedwait(&S.cv, &S.mu, &next) == ETIMEDOUT)
				break;
		}
		struct rec *list = S.head;
		S.head = S.tail = NULL;
		int stop = S.stop;
		pthread_mutex_unlock(&S.mu);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (after(&now, &next)) {
			if (!stop && S.c.ask_flush)
				S.c.ask_flush();
			next = now;
			add_ns(&next, S.c.interval_ns);
		}
		size_t done = 0, done_blocks = 0;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (list) {
			struct rec *r = list;
			list = r->next;
			if (S.slow_us)
				usleep(S.slow_us);   /* the tests' slow disk */
			fds_write_begin();
			put(r);
			fds_write_end();
			done += r->bytes;
			if (r->kind == REC_BLOCK)
				done_blocks += r->bytes;
			rec_free(r);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		S.busy_ns += (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
		pthread_mutex_lock(&S.mu);
		S.queued -= done;
		S.queued_blocks -= done_blocks;
		int end = stop && !S.head;
		pthread_mutex_unlock(&S.mu);
		if (end)
			break;
	}
	return NULL;
}

/* ---- the producer -------------------------------------------------------- */

/* Starts the writer thread. 0, or -1 (failed, said). */
static int writer_start(void)
{
	S.stop = 0;
	S.thread_tid = 0;
	int e = sp_thread_start(&S.thread, writer_main, NULL);
	if (e != 0) {
		errno = e;
		fail("cannot start the writer thread");
		return -1;
	}
	S.thread_running = 1;
	return 0;
}

/* Queues r (or writes it now once the writer ended): 0, or -1 when
 * refused (freed). */
static int hand(struct rec *r)
{
	if (S.direct) {
		put(r);
		rec_free(r);
		return 0;
	}
	if (!S.thread_running && writer_start() != 0) {
		free(r);
		return -1;
	}
	pthread_mutex_lock(&S.mu);
	if (S.failed || (r->kind == REC_BLOCK && S.queued_blocks && S.queued_blocks + r->bytes > S.c.queue_bytes)) {
		pthread_mutex_unlock(&S.mu);
		free(r);
		return -1;
	}
	r->next = NULL;
	if (S.tail)
		S.tail->next = r;
	else
		S.head = r;
	S.tail = r;
	S.queued += r->bytes;
	if (r->kind == REC_BLOCK)
		S.queued_blocks += r->bytes;
	int wake = r->kind == REC_FLUSH || r->kind == REC_BLOCK;
	pthread_mutex_unlock(&S.mu);
	if (wake)
		pthread_cond_signal(&S.cv);
	return 0;
}

static struct rec *rec_new(enum rec_kind kind, size_t payload)
{
	struct rec *r = malloc(sizeof *r + payload);
	if (r)
		*r = (struct rec){.kind = kind, .bytes = sizeof *r + payload};
	return r;
}

int sp_stream_name(int32_t id, const char *name)
{
	size_t len = strlen(name) + 1;
	struct rec *r = S.on ? rec_new(REC_NAME, len) : NULL;
	if (!r)
		return -1;
	r->id = id;
	r->n = len;
	memcpy(r->data, name, len);
	S.handed = 1;
	return hand(r);
}

/* The bytes of a block's columns per call. */
static size_t call_bytes(int lanes, int values)
{
	return 2 * sizeof(int64_t) + (values ? sizeof(int64_t) : 0) + (lanes ? sizeof(int32_t) : 0);
}

int sp_stream_room(size_t n, int lanes, int values)
{
	if (!S.on)
		return 0;
	if (S.direct)
		return 1;
	size_t need = sizeof(struct rec) + n * call_bytes(lanes, values);
	pthread_mutex_lock(&S.mu);
	int room = !S.failed && (S.queued_blocks == 0 || S.queued_blocks + need <= S.c.queue_bytes);
	pthread_mutex_unlock(&S.mu);
	return room;
}

int sp_stream_direct(void)
{
	return S.on && S.direct;
}

/* Queues a block of n calls whose columns are already set in r (or the
 * caller's, when r->release is set: they stay the caller's on refusal).
 * The block's index in the file, or -1 (r freed). */
static int64_t hand_block(struct rec *r, int32_t id, size_t n, int kind)
{
	r->id = id;
	r->n = n;
	r->value_kind = r->values ? kind : 0;
	int64_t at = (int64_t)S.next_index;
	S.handed = 1;
	if (hand(r) != 0) {
		S.refused += n;
		return -1;
	}
	S.next_index += n;
	return at;
}

/* Whether a block of n calls of these columns may be handed over: counted
 * as refused when not. */
static int block_ok(size_t n, int lanes, int kind, int values)
{
	if (!S.on || n == 0 || n > SIZE_MAX / 32 || (values && (kind <= 0 || kind >= SP_VALUE_KINDS)))
		return 0;
	if (!sp_stream_room(n, lanes, values)) {
		S.refused += n;
		return 0;
	}
	return 1;
}

int64_t sp_stream_block(int32_t id, size_t n, const int64_t *starts, const int64_t *ends, const int32_t *lanes,
			int kind, const int64_t *values)
{
	if (!block_ok(n, lanes != NULL, kind, values != NULL))
		return -1;
	struct rec *r = rec_new(REC_BLOCK, n * call_bytes(lanes != NULL, values != NULL));
	if (!r) {
		S.refused += n;
		return -1;
	}
	size_t nv = values ? n : 0;
	r->starts = memcpy(r->data, starts, n * sizeof *starts);
	r->ends = memcpy(r->data + n, ends, n * sizeof *ends);
	if (values)
		r->values = memcpy(r->data + 2 * n, values, n * sizeof *values);
	if (lanes)
		r->lanes = memcpy(r->data + 2 * n + nv, lanes, n * sizeof *lanes);
	return hand_block(r, id, n, kind);
}

int64_t sp_stream_block_owned(int32_t id, size_t n, int64_t *starts, int64_t *ends, int32_t *lanes, int kind,
			      int64_t *values, void (*give_back)(void *owner), void *owner)
{
	if (!give_back || !block_ok(n, lanes != NULL, kind, values != NULL))
		return -1;
	struct rec *r = rec_new(REC_BLOCK, 0);
	if (!r) {
		S.refused += n;
		return -1;
	}
	/* Counted against the queue as the copy it saves would be. */
	r->bytes += n * call_bytes(lanes != NULL, values != NULL);
	r->starts = starts;
	r->ends = ends;
	r->lanes = lanes;
	r->values = values;
	r->release = give_back;
	r->owner = owner;
	return hand_block(r, id, n, kind);
}

int sp_stream_patch(int64_t index, int64_t end, int kind, int64_t value)
{
	if (!S.on)
		return -1;
	if (S.npatch == S.patch_cap) {
		size_t cap = S.patch_cap ? 2 * S.patch_cap : 256;
		for (int c = 0; c < 4; c++) {
			int64_t *a = realloc(S.patch[c], cap * sizeof *a);
			if (!a) {
				S.refused++;
				return -1;
			}
			S.patch[c] = a;
		}
		S.patch_cap = cap;
	}
	const int64_t p[4] = {index, end, kind > 0 && kind < SP_VALUE_KINDS ? kind : 0, value};
	for (int c = 0; c < 4; c++)
		S.patch[c][S.npatch] = p[c];
	S.npatch++;
	return 0;
}

void sp_stream_flush(int64_t now)
{
	if (!S.on || !S.handed)
		return;
	if (S.npatch) {
		struct rec *r = rec_new(REC_PATCHES, S.npatch * 4 * sizeof(int64_t));
		if (r) {
			r->n = S.npatch;
			for (int c = 0; c < 4; c++)
				memcpy(r->data + c * S.npatch, S.patch[c], S.npatch * sizeof(int64_t));
			if (hand(r) == 0)
				S.npatch = 0;
		}
	}
	struct rec *r = rec_new(REC_FLUSH, 0);
	if (r) {
		r->time = now;
		hand(r);
	}
}

uint64_t sp_stream_refused(void)
{
	return S.refused;
}

uint64_t sp_stream_unsaved(void)
{
	return is_failed() && S.next_index > S.flushed_calls ? S.next_index - S.flushed_calls : 0;
}

int sp_stream_failed(struct sp_error *err)
{
	pthread_mutex_lock(&S.mu);
	int f = S.failed;
	if (f && err)
		*err = S.failure;
	pthread_mutex_unlock(&S.mu);
	return f;
}

int sp_stream_on(void)
{
	return S.on;
}

/* ---- start, finish, fork ------------------------------------------------ */

char *sp_stream_partial_path(const char *path)
{
	size_t len = strlen(path) + sizeof ".partial";
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s.partial", path);
	return p;
}

/* Frees the memory the stream owns: its paths and names, pending
 * patches, queued records (no HDF5, no lock). */
static void free_owned(void)
{
	free(S.target);
	free(S.partial);
	free(S.hostname);
	free(S.children_dir);
	for (int c = 0; c < 4; c++)
		free(S.patch[c]);
	for (struct rec *r = S.head, *next; r; r = next) {
		next = r->next;
		rec_free(r);
	}
}

static void release(void)
{
	sp_sfile_close_layout(&S.f);
	sp_sfile_unlock(&S.f);   /* the file is renamed or removed by now */
	free_owned();
	pthread_cond_destroy(&S.cv);
	S = (struct stream){.mu = PTHREAD_MUTEX_INITIALIZER, .f = {.file = -1, .lock_fd = -1}};
}

static void before_fork(void)
{
	pthread_mutex_lock(&h5_mutex);
	pthread_mutex_lock(&S.mu);
	pthread_mutex_lock(&fds_mu);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&fds_mu);
	pthread_mutex_unlock(&S.mu);
	pthread_mutex_unlock(&h5_mutex);
}

static void after_fork_child(void)
{
	fds_writing = fds_closing = fds_waited_out = 0;   /* no writer thread here, nor another closing thread */
	pthread_cond_init(&fds_cv, NULL);   /* no waiter either */
	pthread_mutex_unlock(&fds_mu);
	pthread_mutex_unlock(&S.mu);
	pthread_mutex_unlock(&h5_mutex);
	sp_stream_forget();
}

void sp_stream_forget(void)
{
	if (!S.on && !S.created)
		return;
	/* Whatever HDF5 would still write into the parent's file (its exit
	 * handler closes open files) goes to /dev/null instead. */
	if (S.created)
		sp_sfile_forget_fd(&S.f);
	sp_sfile_unlock(&S.f);   /* this process's copy; the parent keeps its lock */
	/* Nothing of the parent's stream is this process's: a stream it
	 * starts (a child of run --subprocesses) starts from nothing (its own
	 * call indexes, no pending patch, no queue). Its HDF5 handles stay
	 * open, writing to /dev/null; memory is freed without HDF5. */
	free_owned();
	S = (struct stream){.mu = PTHREAD_MUTEX_INITIALIZER, .f = {.file = -1, .lock_fd = -1}};
}

enum sp_err sp_stream_start(const struct sp_stream_config *c, struct sp_error *err)
{
	static int atfork;
	if (S.on)
		return sp_error_set(err, SP_EINVAL, "a stream is already running");
	if (!c || !c->path || !c->path[0] || c->interval_ns <= 0 || c->queue_bytes == 0)
		return sp_error_set(err, SP_EINVAL, "sp_stream_start: bad configuration");
	S.c = *c;
	/* Absolute: the script may change its working folder. */
	char abs[PATH_MAX];
	if (sp_outpath_absolute(c->path, abs, sizeof abs, err) != SP_OK) {
		release();
		return err ? err->code : SP_EINVAL;
	}
	char *target = realpath(abs, NULL);
	S.target = target ? target : strdup(abs);
	S.partial = S.target ? sp_stream_partial_path(S.target) : NULL;
	S.hostname = c->hostname ? strdup(c->hostname) : NULL;
	S.children_dir = c->children_dir ? strdup(c->children_dir) : NULL;
	S.c.path = S.target;
	S.c.hostname = S.hostname;
	S.c.children_dir = S.children_dir;
	if (!S.target || !S.partial || (c->hostname && !S.hostname) || (c->children_dir && !S.children_dir)) {
		release();
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	struct stat st;
	if (lstat(S.partial, &st) == 0 && !S_ISREG(st.st_mode)) {
		enum sp_err rc = sp_error_set(err, SP_EINVAL, "'%s' exists and is not a regular file", S.partial);
		release();
		return rc;
	}
	/* An earlier run's partial file is replaced; anything else is kept. */
	if (lstat(S.partial, &st) == 0 && st.st_size > 0 && !sp_h5_is_profile(S.partial)) {
		enum sp_err rc = sp_error_set(err, SP_EEXIST, "'%s' exists and is not a scope-profiler profile "
					      "(an earlier run's partial file); move it away", S.partial);
		release();
		return rc;
	}
	if (sp_sfile_live(S.partial) == 1) {
		enum sp_err rc = sp_error_set(err, SP_EEXIST, "another run is streaming to '%s'", S.partial);
		release();
		return rc;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S.cv, &ca);
	pthread_condattr_destroy(&ca);
	if (!atfork && pthread_atfork(before_fork, after_fork_parent, after_fork_child) == 0)
		atfork = 1;
	/* The tests make the writer slow (a slow disk, without one) to see the
	 * recording side hold on and then drop calls, counted. */
	const char *slow = getenv("SCOPE_PROFILER_TEST_SLOW_WRITER_US");
	S.slow_us = slow ? (unsigned)strtoul(slow, NULL, 10) : 0;
	S.on = 1;
	return SP_OK;
}

int sp_stream_unmark_dead(const char *partial)
{
	struct stat st;
	if (stat(partial, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;   /* no run's file (a FIFO, a folder): its reader says what it is */
	int live = sp_sfile_live(partial);
	if (live != 0 && live != 2)   /* 2: no locks there, taken for dead (the caller knows) */
		return 0;
	sp_h5_lock();
	int rc = sp_sfile_unmark(partial);
	sp_h5_unlock();
	return rc == 0 ? 1 : -1;
}

int sp_stream_written_now(const char *partial)
{
	int live = sp_sfile_live(partial);
	return live == 1 ? 1 : live == 0 ? 0 : -1;
}

void sp_stream_thread_gone(pid_t tid)
{
	char path[64];
	if (tid <= 0)
		return;
	snprintf(path, sizeof path, "/proc/self/task/%ld", (long)tid);
	/* pthread_join returns when the thread's stack is free, a little
	 * before the kernel stops counting the thread; what counts threads
	 * (Python's fork warning reads /proc/self/stat) would still see it. */
	for (int i = 0; i < 10000 && access(path, F_OK) == 0; i++)
		usleep(10);
}

/* Joins the writer once it wrote the queue. */
static void writer_join(void)
{
	pthread_mutex_lock(&S.mu);
	S.stop = 1;
	pthread_mutex_unlock(&S.mu);
	pthread_cond_signal(&S.cv);
	pthread_join(S.thread, NULL);
	S.thread_running = 0;
	S.stop = 0;
}

void sp_stream_pause(void)
{
	if (!S.on || !S.thread_running)
		return;
	writer_join();
	sp_stream_thread_gone(S.thread_tid);
}

/* Stops the writer thread after it wrote the queue; later records are
 * written by the caller. */
void sp_stream_quiesce(void)
{
	if (S.direct || !S.on)
		return;
	if (S.thread_running)
		writer_join();
	S.direct = 1;
	sp_h5_lock();
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);    /* this thread writes from here on */
	sp_h5_unlock();
}

#define HINT_MIN 256

void sp_stream_size_hint(uint64_t calls, uint64_t blocks)
{
	if (!S.on || S.created)
		return;
	/* At least HINT_MIN: calls not counted (an MPI rank's intercepted
	 * ones, handed over after) would each take a chunk of their own. */
	S.hint_calls = calls > HINT_MIN ? calls : HINT_MIN;
	S.hint_blocks = blocks > HINT_MIN / 8 ? blocks : HINT_MIN / 8;
}

void sp_stream_want_file(void)
{
	if (S.on)
		S.handed = 1;
}

int sp_stream_handed(void)
{
	return S.on && S.handed;
}

void sp_stream_cancel(void)
{
	if (!S.on)
		return;
	sp_stream_quiesce();
	if (S.created) {
		sp_h5_lock();
		sp_sfile_hold(&S.f);   /* its close writes into the file, not a file of the script's */
		sp_sfile_close_layout(&S.f);
		H5Fclose(S.f.file);
		sp_h5_unlock();
	}
	/* What it held is given up with the stream (a reset, or a session
	 * that ends writing nothing). */
	if (S.made)
		unlink(S.partial);
	release();
}

enum sp_err sp_stream_close(struct sp_error *err)
{
	if (!S.on)
		return sp_error_set(err, SP_EINVAL, "no stream is running");
	if (S.closed)
		return S.close_rc;
	S.closed = 1;
	sp_stream_flush(sp_clock_ns());
	sp_stream_quiesce();
	enum sp_err rc = SP_OK;
	herr_t shut = 0;
	if (S.created) {
		sp_h5_lock();
		int held = sp_sfile_hold(&S.f);
		sp_sfile_close_layout(&S.f);
		shut = H5Fclose(S.f.file);
		/* What the writer freed goes back to the system before the end of
		 * the run reads the file back: HDF5 keeps freed blocks on its own
		 * free lists, and the C library keeps the writer thread's heap. */
		H5garbage_collect();
		malloc_trim(0);
		sp_h5_unlock();
		S.f.file = -1;
		S.f.vfd = NULL;
		S.created = 0;
		if (held < 0)
			fail("%s", S.f.why);
	}
	if (sp_stream_failed(err))
		rc = SP_EIO;
	else if (shut < 0)
		rc = sp_error_set(err, SP_EIO, "cannot finish '%s': HDF5 cannot close '%s'", S.target, S.partial);
	else if (!S.handed)
		rc = sp_error_set(err, SP_EIO, "cannot finish '%s': nothing was streamed", S.target);
	S.close_rc = rc;
	if (rc != SP_OK)
		S.close_err = *err;
	return rc;
}

const char *sp_stream_partial(void)
{
	return S.on ? S.partial : NULL;
}

const char *sp_stream_target(void)
{
	return S.on ? S.target : NULL;
}

void sp_stream_leave(void)
{
	struct sp_error err = {0};
	if (!S.on)
		return;
	sp_stream_close(&err);
	release();
}

uint64_t sp_stream_calls(void)
{
	return S.next_index;
}

/* fapl opens without HDF5's file lock (HDF5 1.10.7 and later). */
static int no_h5_lock(hid_t fapl)
{
#ifdef SP_H5_FILE_LOCKING
	return H5Pset_file_locking(fapl, 0, 1) < 0 ? -1 : 0;
#else
	(void)fapl;
	return 0;
#endif
}

enum sp_err sp_stream_finish(const struct sp_profile *p, const char *path, struct sp_error *err)
{
	enum sp_err rc;
	struct sp_region_data *regions = NULL;
	if (!S.on)
		return sp_error_set(err, SP_EINVAL, "no stream is running");
	rc = sp_stream_close(err);
	/* make bench (scripts/bench_stream.py): the writer's throughput. */
	if (getenv("SCOPE_PROFILER_STREAM_STATS"))
		fprintf(stderr, "scope-profiler: stream: %llu calls written in %.3f s of the writer's time\n",
			(unsigned long long)S.f.events, (double)S.busy_ns / 1e9);
	if (rc != SP_OK) {
		if (err)
			*err = S.close_err;
		goto out;
	}
	/* The rank's times on rank 0's clock, as its events are (a copy of
	 * what the table needs: the caller's profile stays as it is). */
	struct sp_profile shifted;
	struct sp_rank rk;
	if (S.c.clock_offset_ns && p && p->nranks == 1) {
		rk = p->ranks[0];
		if (rk.nregions && !(regions = malloc(rk.nregions * sizeof *regions))) {
			rc = sp_error_set(err, SP_ENOMEM, "cannot finish '%s': out of memory", S.target);
			goto out;
		}
		if (rk.nregions)
			memcpy(regions, rk.regions, rk.nregions * sizeof *regions);
		for (size_t i = 0; i < rk.nregions; i++) {
			regions[i].stats.first_start_ns = on_rank0(regions[i].stats.first_start_ns);
			regions[i].stats.last_end_ns = on_rank0(regions[i].stats.last_end_ns);
		}
		rk.regions = regions;
		rk.run_start_ns = on_rank0(rk.run_start_ns);
		rk.run_end_ns = on_rank0(rk.run_end_ns);
		rk.clock_offset_ns = S.c.clock_offset_ns;
		shifted = *p;
		shifted.ranks = &rk;
		p = &shifted;
	}
	sp_h5_lock();
	hid_t fapl = sp_h5_fapl(), file = -1;
	/* Strong close: whatever a failure left open closes with the file, so
	 * that it is never left marked as open for writing. HDF5's own file
	 * lock is not taken: a reader of the partial file (summary --follow)
	 * holds it while it reads, and would make the end of the run fail;
	 * writers keep off each other by the stream's lock (stream_file.c). */
	if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0 &&
	    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) >= 0 && no_h5_lock(fapl) >= 0)
		file = H5Fopen(S.partial, H5F_ACC_RDWR, fapl);
	if (fapl >= 0)
		H5Pclose(fapl);
	if (file < 0) {
		rc = sp_error_set(err, SP_EIO, "cannot finish '%s': HDF5 cannot reopen '%s'", S.target, S.partial);
	} else {
		char *rp = path ? realpath(path, NULL) : NULL;
		/* The tests kill the run here, the file open for writing. */
		sp_test_pause("SCOPE_PROFILER_TEST_FINISH_PAUSE_MS", "finishing");
		rc = sp_h5w_finish_stream(file, S.partial, rp ? rp : path ? path : S.target, p, err);
		free(rp);
	}
	sp_h5_unlock();
out:
	free(regions);
	release();
	return rc;
}
