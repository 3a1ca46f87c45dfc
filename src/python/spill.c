/* spill.c - the recording side of streaming (sp_spill.h): regions hand
 * their calls to the stream (include/sp_stream.h) instead of holding them.
 *
 * A region's buffer that is full is offered here (sp_buf_spill, from the
 * growth slow path of sp_buf_reserve): when growing would pass the budget,
 * or, once the stream runs, past a block's size, its calls are handed over
 * and the buffer starts again from slot 0 with its gen moved on. Every flush
 * interval a ticker thread takes the GIL (so every buffer is consistent) and
 * hands the partly filled buffers over too. A call still open when handed
 * over is written with no end; its exit, which then holds an old gen, ends
 * it here (sp_spill_late_end), which the file gets as a patch. Nothing runs
 * on the recording fast path.
 *
 * A fork (os.fork, multiprocessing's fork) finds a single-threaded process,
 * as without the stream: an os.register_at_fork hook stops the ticker and
 * the writer before it, and they start again after it, once Python counted
 * the process's threads (3.12+ warns when there are several). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

#include "sp_clock.h"
#include "sp_mode.h"
#include "sp_mpi.h"
#include "sp_mpicalls.h"
#include "sp_pytext.h"
#include "sp_recorder.h"
#include "sp_region.h"
#include "sp_spill.h"
#include "sp_stream.h"
#include "sp_thread.h"

/* An intercepted MPI function's calls in the stream (run --mpi-calls). */
struct mpi_fn {
	int32_t id;                    /* its region's id, -1: not named yet */
	int kind;                      /* its values' kind (0: none) */
	char *name;                    /* its region's name */
	struct sp_stats_acc acc;       /* the calls handed over */
	int64_t first;                 /* the earliest start */
	uint64_t sum;                  /* their values' sum, wrapping */
	int64_t dropped;               /* calls lost to memory (at the end) */
};

/* Calls in a block handed over once the stream runs: at most 1/32 of the
 * budget, so that the writer's queue (half of it) holds 16 of them. */
#define BLOCK_MAX ((size_t)1 << 16)
#define BLOCK_MIN ((size_t)256)

static struct {
	int on;                        /* this session streams */
	size_t block;                  /* calls per block */
	size_t budget;                 /* bytes of buffers and queue */
	size_t call_bytes;             /* a call's bytes in the buffers (16, 24 with values) */
	int32_t next_id;               /* the next region's id in the stream */
	uint64_t dropped;              /* calls not recorded: the writer was behind */
	uint64_t lost;                 /* a failed stream's calls its last flush missed */
	int64_t interval_ns;           /* between flushes */
	int finish_failed;             /* the last sp_spill_finish failed */
	int paused;                    /* the threads were stopped for a fork */
	int in_fork;                   /* inside os.fork / os.forkpty (their wrappers) */
	struct mpi_fn *mpi;            /* per intercepted MPI function */
	size_t nmpi;
} spill;

/* The producer side of the stream (sp_stream_name .. sp_stream_flush) is
 * one thread's at a time: the GIL's holder, and a thread that records an
 * MPI call into a full buffer, holding its function's lock (which is
 * always taken before this one, never after). */
static pthread_mutex_t producer = PTHREAD_MUTEX_INITIALIZER;

static struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int running, stop;
	int ready;                     /* the thread has its thread state */
	pid_t pid;                     /* of the process that started it */
	pid_t tid;                     /* the thread's, as the kernel counts threads */
} ticker = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Room for k more late calls in r. 0, or -1. */
static int late_room(RegionObject *r, size_t k)
{
	if (r->nlate + k <= r->late_cap)
		return 0;
	size_t cap = r->late_cap ? 2 * r->late_cap : 8;
	while (cap < r->nlate + k)
		cap *= 2;
	struct sp_late *v = realloc(r->late, cap * sizeof *v);
	if (!v)
		return -1;
	r->late = v;
	r->late_cap = cap;
	return 0;
}

/* A buffer grown before the stream began, emptied, goes back to nothing
 * and grows to a block's size from now on (so that the writer's queue
 * holds many), keeping its columns (lanes, values) and its count of
 * dropped calls (sp_buf_release). */
static void shrink_to_block(struct sp_buf *b)
{
	if (b->cap > 2 * spill.block)
		sp_buf_release(b);
}

/* The writer is done with a buffer's columns handed over as they are. */
static void give_back_taken(void *taken)
{
	sp_buf_free_taken(taken);
	free(taken);
}

/* Hands r's buffered calls over; the buffer is then empty and r's gen moved
 * on. A call still open goes with value 0 (its value is patched when it
 * ends), what its value slot held kept with its late record. 0, or -1 when
 * refused (r unchanged). */
static int hand_over_locked(RegionObject *r)
{
	struct sp_buf *b = &r->buf;
	size_t n = b->n, open = 0;
	int kind = b->keep_values;
	if (n == 0)
		return 0;
	if (!sp_stream_room(n, b->keep_lanes, kind != 0))
		return -1;   /* the writer is behind: nothing copied or scanned */
	if (r->stream_id < 0) {
		const char *name = PyUnicode_AsUTF8(r->name);
		if (!name) {
			PyErr_Clear();
			return -1;
		}
		if (sp_stream_name(spill.next_id, name) != 0)
			return -1;
		r->stream_id = spill.next_id++;
	}
	for (size_t i = 0; i < n; i++)
		open += b->ends[i] == SP_NO_TIME;
	if (open && late_room(r, open) != 0)
		return -1;
	/* The open calls' late records, kept only once the block is taken;
	 * their value slots (the tracer's counter at their start) go as 0. */
	struct sp_late *late = r->late + r->nlate;
	for (size_t i = 0, k = 0; open && i < n; i++)
		if (b->ends[i] == SP_NO_TIME) {
			late[k++] = (struct sp_late){r->gen, (ptrdiff_t)i, b->starts[i], 0, kind ? b->values[i] : 0};
			if (kind)
				b->values[i] = 0;
		}
	/* The block's ended calls count in r's stats as they leave memory
	 * (the open ones when they end: late_patch); a block of ended calls
	 * only (the usual one) in one pass. Summed before the hand-over
	 * (the writer may own the columns then), kept once it is taken. */
	struct sp_stats_acc acc = r->acc;
	uint64_t values_sum = r->values_sum;
	int64_t first = b->starts[0];
	if (!open)
		sp_stats_acc_columns(&acc, b->starts, b->ends, n);
	for (size_t i = 0; open && i < n; i++)
		if (b->ends[i] != SP_NO_TIME)
			sp_stats_acc_add(&acc, b->ends[i] - b->starts[i], b->ends[i]);
	for (size_t i = 0; kind && i < n; i++)
		values_sum += (uint64_t)b->values[i];
	/* Written at once (the end of the run): a buffer that grew before
	 * the stream began goes a block at a time, never copied whole. The
	 * blocks are the file's next calls, one after the other. A buffer
	 * that would give its memory back after (shrink_to_block) hands its
	 * columns over as they are, not a copy of them: the first flush
	 * after a burst holds its calls once. */
	size_t step = sp_stream_direct() && n > spill.block ? spill.block : n, off = 0;
	int64_t at = -1;
	struct sp_buf *taken = step == n && spill.on && b->cap > 2 * spill.block ? malloc(sizeof *taken) : NULL;
	if (taken) {
		sp_buf_take(b, taken);
		at = sp_stream_block_owned(r->stream_id, n, taken->starts, taken->ends,
					   taken->keep_lanes ? taken->lanes : NULL, kind,
					   kind ? taken->values : NULL, give_back_taken, taken);
		if (at < 0) {
			sp_buf_untake(b, taken);   /* refused: the columns are the region's again */
			free(taken);
		}
		off = at < 0 ? 0 : n;
	} else {
		for (; off < n; off += step) {
			size_t m = n - off < step ? n - off : step;
			int64_t a = sp_stream_block(r->stream_id, m, b->starts + off, b->ends + off,
						    b->keep_lanes ? b->lanes + off : NULL, kind,
						    kind ? b->values + off : NULL);
			if (a < 0)
				break;   /* refused; past the first block only by a failed writer (the end says so) */
			at = off == 0 ? a : at;
		}
	}
	if (off < n) {
		for (size_t k = 0; kind && k < open; k++)
			b->values[late[k].slot] = late[k].value0;
		return -1;
	}
	if (r->first_start == SP_NO_TIME)
		r->first_start = first;
	r->streamed += n;
	r->acc = acc;
	r->values_sum = values_sum;
	for (size_t k = 0; k < open; k++)
		late[k].index = at + late[k].slot;
	r->nlate += open;
	b->n = 0;
	r->gen++;
	if (spill.on)
		shrink_to_block(b);
	return 0;
}

static int hand_over(RegionObject *r)
{
	pthread_mutex_lock(&producer);
	int rc = hand_over_locked(r);
	pthread_mutex_unlock(&producer);
	return rc;
}

/* ---- MPI calls (run --mpi-calls) -------------------------------------- */

/* Names function fn's region in the stream (the GIL held): the function's
 * name, or, when the script has a region of that name, "NAME [mpi]", then
 * "NAME [mpi N]" (as sp_mpicalls_add names them at the end of a run
 * written whole). 0, or -1. */
static int mpi_name(struct mpi_fn *m, const char *fn)
{
	size_t len = strlen(fn) + 32;
	char *name = malloc(len);
	if (!name)
		return -1;
	snprintf(name, len, "%s", fn);
	for (unsigned long k = 1;; k++) {
		PyObject *taken = PyDict_GetItemString(sp_registry, name);
		if (!taken)
			break;
		if (k == 1)
			snprintf(name, len, "%s [mpi]", fn);
		else
			snprintf(name, len, "%s [mpi %lu]", fn, k);
	}
	if (sp_stream_name(spill.next_id, name) != 0) {
		free(name);
		return -1;
	}
	m->name = name;
	m->id = spill.next_id++;
	return 0;
}

/* Hands function fn's buffered calls over (its lock and the producer's
 * held). 0, or -1 when refused (not named yet, or the writer is behind). */
static int mpi_hand(size_t fn, struct sp_buf *b)
{
	struct mpi_fn *m = &spill.mpi[fn];
	size_t n = b->n;
	int kind = b->keep_values;
	if (n == 0)
		return 0;
	if (m->id < 0 || sp_stream_block(m->id, n, b->starts, b->ends, b->keep_lanes ? b->lanes : NULL, kind,
					 kind ? b->values : NULL) < 0)
		return -1;
	m->kind = kind;
	sp_stats_acc_columns(&m->acc, b->starts, b->ends, n);
	for (size_t i = 0; i < n; i++) {
		if (b->starts[i] < m->first)
			m->first = b->starts[i];
		if (kind)
			m->sum += (uint64_t)b->values[i];
	}
	b->n = 0;
	shrink_to_block(b);
	return 0;
}

/* sp_mpicalls_on_full: an MPI call finds its function's buffer full (any
 * thread, maybe without the GIL): past a block's size, the calls go to
 * the stream when the function has its region (named at a flush); else,
 * and when the writer is behind, the buffer grows. */
static void mpi_full(size_t fn, struct sp_buf *b)
{
	if (b->cap < spill.block || !spill.on || !sp_stream_on())
		return;
	pthread_mutex_lock(&producer);
	if (spill.on && sp_stream_on() && fn < spill.nmpi)
		mpi_hand(fn, b);
	pthread_mutex_unlock(&producer);
}

/* sp_mpicalls_each at a flush and at the end (the GIL held): each
 * function's calls handed over, its region named first. *ctx: the time
 * up to which the file is complete, moved back to the first call kept. */
static void mpi_tick(void *ctx, size_t fn, const char *name, struct sp_buf *b)
{
	int64_t *until = ctx;
	if (fn >= spill.nmpi || b->n == 0)
		return;
	pthread_mutex_lock(&producer);
	struct mpi_fn *m = &spill.mpi[fn];
	if ((m->id >= 0 || mpi_name(m, name) == 0) && mpi_hand(fn, b) == 0) {
		pthread_mutex_unlock(&producer);
		return;
	}
	pthread_mutex_unlock(&producer);
	if (until && b->starts[0] < *until)
		*until = b->starts[0];
}

/* The MPI functions' state goes (the stream stopped or finished). */
static void mpi_off(void)
{
	sp_mpicalls_on_full(NULL);
	for (size_t i = 0; i < spill.nmpi; i++)
		free(spill.mpi[i].name);
	free(spill.mpi);
	spill.mpi = NULL;
	spill.nmpi = 0;
}

static void resume(void);

/* sp_buf_spill: a full region buffer. */
static int spill_full(struct sp_buf *b)
{
	RegionObject *r = (RegionObject *)((char *)b - offsetof(RegionObject, buf));
	if (!spill.on || !sp_stream_on())
		return 1;   /* a forked child's copy: as without a stream */
	if (spill.paused)
		resume();   /* a fork's pause the pending call has not ended yet */
	size_t entry = 2 * sizeof(int64_t) + (b->keep_lanes ? sizeof(int32_t) : 0) +
		       (b->keep_values ? sizeof(int64_t) : 0);
	size_t next = sp_buf_next_cap(b->cap, b->limit);
	size_t more = next > b->cap ? (next - b->cap) * entry : SIZE_MAX;
	int fits = more <= spill.budget / 2 && sp_buf_bytes <= spill.budget / 2 - more;
	/* Nothing streamed yet: within the budget the buffer grows, so that a
	 * run that ends before its first flush and within its budget streams
	 * nothing (its file is written whole, version 2). */
	if (fits && (!sp_stream_handed() || b->cap < spill.block))
		return 1;
	if (hand_over(r) == 0)
		return b->cap ? 0 : 1;   /* emptied; or given up whole: grows anew */
	/* The writer is behind: hold on within the budget; past it (the
	 * writer's queue, the budget's other half, full too) the call is
	 * dropped, counted. */
	if (fits)
		return 1;
	spill.dropped++;
	return -1;
}

/* Whether the interpreter is shutting down (a thread then must not take
 * the GIL). */
static int sp_py_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
	return Py_IsFinalizing();
#else
	return _Py_IsFinalizing();
#endif
}

/* A flush: every region's partly filled buffer handed over (the GIL held,
 * so every buffer is consistent: the recording paths fill a slot without
 * letting Python run in between). */
static void tick(void)
{
	if (!spill.on || !sp_stream_on())
		return;
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	/* The file is complete up to now, or up to the first call of a buffer
	 * the writer refused (kept for the next flush). */
	int64_t until = sp_clock_ns();
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (r->buf.n && hand_over(r) != 0 && r->buf.starts[0] < until)
			until = r->buf.starts[0];
	}
	sp_mpicalls_each(mpi_tick, &until);
	pthread_mutex_lock(&producer);
	sp_stream_flush(until);
	pthread_mutex_unlock(&producer);
}

/* The ticker: a thread that takes the GIL once per interval for tick().
 * (Py_AddPendingCall would need no thread of ours, but on 3.11 a call added
 * from a thread that is not Python's main one waits until the main thread
 * happens to recompute its eval breaker: in a busy loop, never.) Under the
 * memory mode it keeps one thread state for its life: taking the GIL then
 * allocates nothing, which that mode would count in the calls open at each
 * flush. Otherwise it has one only while it ticks, so that the script's
 * view of its threads (faulthandler's dumps, py-spy's) has no thread of
 * ours between flushes. The stream's writer itself never takes the GIL. */
static void *ticker_main(void *arg)
{
	(void)arg;
	ticker.tid = gettid();   /* its signals blocked from its start (sp_thread.h) */
	int keep = sp_mode.memory;
	PyThreadState *ts = NULL;
	if (keep && !sp_py_finalizing()) {
		PyGILState_Ensure();
		ts = PyEval_SaveThread();
	}
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&ticker.mu);
	ticker.ready = 1;
	pthread_cond_broadcast(&ticker.cv);
	for (;;) {
		int64_t ns = (int64_t)next.tv_nsec + spill.interval_ns % 1000000000;
		next.tv_sec += (time_t)(spill.interval_ns / 1000000000 + ns / 1000000000);
		next.tv_nsec = (long)(ns % 1000000000);
		while (!ticker.stop && pthread_cond_timedwait(&ticker.cv, &ticker.mu, &next) != ETIMEDOUT)
			;
		if (ticker.stop)
			break;
		pthread_mutex_unlock(&ticker.mu);
		if ((keep && !ts) || sp_py_finalizing())
			return NULL;
		PyGILState_STATE g = PyGILState_UNLOCKED;
		if (keep)
			PyEval_RestoreThread(ts);
		else
			g = PyGILState_Ensure();
		/* Stopped while this thread waited for the GIL (ticker_stop
		 * releases it to join): the session is ending, its buffers are
		 * the end's now. */
		pthread_mutex_lock(&ticker.mu);
		int stopped = ticker.stop;
		pthread_mutex_unlock(&ticker.mu);
		if (!stopped)
			tick();
		if (keep)
			PyEval_SaveThread();
		else
			PyGILState_Release(g);
		clock_gettime(CLOCK_MONOTONIC, &next);
		pthread_mutex_lock(&ticker.mu);
	}
	pthread_mutex_unlock(&ticker.mu);
	if (ts && !sp_py_finalizing()) {
		PyEval_RestoreThread(ts);
		PyGILState_Release(PyGILState_UNLOCKED);
	}
	return NULL;
}

/* Stops the ticker (called with the GIL, which it may be waiting for). */
static void ticker_stop(void)
{
	if (!ticker.running)
		return;
	ticker.running = 0;
	if (ticker.pid != getpid())
		return;   /* a forked child: the thread is the parent's */
	pthread_mutex_lock(&ticker.mu);
	ticker.stop = 1;
	pthread_cond_signal(&ticker.cv);
	pthread_mutex_unlock(&ticker.mu);
	Py_BEGIN_ALLOW_THREADS
	pthread_join(ticker.thread, NULL);
	Py_END_ALLOW_THREADS
}

/* Starts the ticker; wait: until it made its thread state (which takes
 * the GIL), so that no call open later counts its allocation. */
static int ticker_start(int wait)
{
	static int init;
	if (!init) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ticker.cv, &ca);
		pthread_condattr_destroy(&ca);
		init = 1;
	}
	ticker.stop = 0;
	ticker.ready = 0;
	ticker.pid = getpid();
	ticker.tid = 0;
	if (sp_thread_start(&ticker.thread, ticker_main, NULL) != 0)
		return -1;
	ticker.running = 1;
	if (wait) {
		/* Its thread state is made now, while no call is open. */
		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&ticker.mu);
		while (!ticker.ready)
			pthread_cond_wait(&ticker.cv, &ticker.mu);
		pthread_mutex_unlock(&ticker.mu);
		Py_END_ALLOW_THREADS
	}
	return 0;
}

/* ---- fork ------------------------------------------------------------ */

/* The ticker again after a fork (the writer starts with the next record). */
static void resume(void)
{
	spill.paused = 0;
	if (spill.on && sp_stream_on() && !ticker.running && ticker_start(0) != 0)
		fprintf(stderr, "scope-profiler: warning: cannot start the stream's ticker thread again; "
			"calls are written as buffers fill\n");
}

static int resume_pending(void *arg)
{
	(void)arg;
	if (spill.paused)
		resume();
	return 0;
}

/* os.register_at_fork(before=): the ticker and the writer end (the writer
 * once it wrote its queue) and are gone from the kernel's count. */
static PyObject *fork_before(PyObject *self, PyObject *unused)
{
	if (spill.on && sp_stream_on() && ticker.pid == getpid()) {
		if (ticker.running) {
			ticker_stop();
			sp_stream_thread_gone(ticker.tid);
		}
		sp_stream_pause();
		spill.paused = 1;
	}
	Py_RETURN_NONE;
}

/* after_in_parent=: 3.13 counts the threads after the hooks, so nothing
 * starts here. Inside os.fork or os.forkpty their wrapper starts the ticker
 * once the original returned (sp_spill_fork_leave); after any other fork
 * (a C extension's, which Python does not warn about) a pending call does.
 * A recording that hands a buffer over first starts it there. */
static PyObject *fork_parent(PyObject *self, PyObject *unused)
{
	if (spill.paused && !spill.in_fork && Py_AddPendingCall(resume_pending, NULL) != 0)
		resume();
	Py_RETURN_NONE;
}

void sp_spill_fork_enter(void)
{
	spill.in_fork++;
}

void sp_spill_fork_leave(void)
{
	spill.in_fork--;
	if (spill.paused && ticker.pid == getpid())
		resume();   /* the parent; the child has no stream */
}

/* Registers the hooks once (a forked child has them from its parent). 0,
 * or -1 with an exception. */
static int fork_hooks(void)
{
	static PyMethodDef defs[] = {
		{"_stream_before_fork", fork_before, METH_NOARGS, NULL},
		{"_stream_after_fork", fork_parent, METH_NOARGS, NULL},
	};
	static int registered;   /* a forked child has its parent's hooks */
	if (registered)
		return 0;
	PyObject *os = PyImport_ImportModule("os"), *before = NULL, *parent = NULL, *r = NULL;
	PyObject *kw = PyDict_New();
	if (os && kw && (before = PyCFunction_New(&defs[0], NULL)) && (parent = PyCFunction_New(&defs[1], NULL)) &&
	    PyDict_SetItemString(kw, "before", before) == 0 &&
	    PyDict_SetItemString(kw, "after_in_parent", parent) == 0) {
		PyObject *fn = PyObject_GetAttrString(os, "register_at_fork"), *args = PyTuple_New(0);
		if (fn && args)
			r = PyObject_Call(fn, args, kw);
		Py_XDECREF(fn);
		Py_XDECREF(args);
	}
	Py_XDECREF(os);
	Py_XDECREF(kw);
	Py_XDECREF(before);
	Py_XDECREF(parent);
	if (!r)
		return -1;
	Py_DECREF(r);
	registered = 1;
	return 0;
}

int sp_spill_begin(const char *path, size_t budget, int64_t interval_ns, int compression, int64_t run_start_ns,
		   int values, int64_t parent_pid, const char *children_dir)
{
	if (spill.on)
		sp_spill_cancel();
	char host[256] = "";
	if (gethostname(host, sizeof host) != 0)
		host[0] = 0;
	host[sizeof host - 1] = 0;
	budget = budget ? budget : SP_SPILL_BUDGET;
	struct sp_stream_config c = {
		.path = path, .rank = sp_mpi_rank(), .mpi_size = sp_mpi_active() ? sp_mpi_size() : 0,
		.clock_offset_ns = sp_mpi_clock_offset(), .mpi_job = sp_mpi_job(), .pid = (int64_t)getpid(),
		.parent_pid = parent_pid, .run_start_ns = run_start_ns,
		.hostname = host[0] ? host : NULL, .children_dir = children_dir, .compression = compression,
		.queue_bytes = budget / 2,
		.interval_ns = interval_ns > 0 ? interval_ns : SP_STREAM_INTERVAL_NS, .ask_flush = NULL,
	};
	struct sp_error err = {0};
	if (sp_stream_start(&c, &err) != SP_OK) {
		fprintf(stderr, "scope-profiler: warning: %s; the profile is written at the end only\n", err.msg);
		return 0;
	}
	spill.call_bytes = 2 * sizeof(int64_t) + (values ? sizeof(int64_t) : 0);
	size_t block = budget / 32 / spill.call_bytes;
	spill.block = block > BLOCK_MAX ? BLOCK_MAX : block < BLOCK_MIN ? BLOCK_MIN : block;
	spill.budget = budget;
	spill.next_id = 0;
	spill.dropped = 0;
	spill.interval_ns = c.interval_ns;
	mpi_off();
	if ((spill.nmpi = sp_mpicalls_count()) && !(spill.mpi = calloc(spill.nmpi, sizeof *spill.mpi))) {
		spill.nmpi = 0;
		sp_stream_cancel();
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < spill.nmpi; i++) {
		spill.mpi[i].id = -1;
		spill.mpi[i].first = INT64_MAX;
		sp_stats_acc_init(&spill.mpi[i].acc);
	}
	if (fork_hooks() != 0) {
		sp_stream_cancel();
		return -1;
	}
	if (ticker_start(1) != 0) {
		sp_stream_cancel();
		fprintf(stderr, "scope-profiler: warning: cannot start the stream's ticker thread; the profile "
			"is written at the end only\n");
		return 0;
	}
	spill.on = 1;
	spill.paused = 0;
	sp_buf_spill = spill_full;
	sp_mpicalls_on_full(mpi_full);
	return 0;
}

int sp_spill_streamed(void)
{
	return spill.on && sp_stream_handed();
}

/* The stream stops: no MPI call (any thread, maybe without the GIL) hands
 * calls over from now on, then end (sp_stream_cancel or sp_stream_leave)
 * lets the stream go. */
static void stop(void (*end)(void))
{
	if (!spill.on)
		return;
	ticker_stop();
	sp_mpicalls_on_full(NULL);
	/* A call that took the hand-over before it went finds the stream off
	 * once it holds the producer's lock, or is done when we hold it. (A
	 * forked child's copy of the stream is not its own, nor the lock.) */
	int mine = sp_stream_on();
	if (mine)
		pthread_mutex_lock(&producer);
	spill.on = 0;
	if (mine)
		pthread_mutex_unlock(&producer);
	end();
	spill.paused = 0;
	sp_buf_spill = NULL;
	mpi_off();
}

void sp_spill_cancel(void)
{
	stop(sp_stream_cancel);
}

/* Takes r's late record of the call in (gen, slot) out of the list into
 * *out. 1, or 0 when there is none. */
static int late_take(RegionObject *r, uint64_t gen, ptrdiff_t slot, struct sp_late *out)
{
	for (size_t i = r->nlate; i-- > 0;) {
		struct sp_late *l = &r->late[i];
		if (l->gen != gen || l->slot != slot)
			continue;
		*out = *l;
		*l = r->late[--r->nlate];
		return 1;
	}
	return 0;
}

/* Late call l of r ends at t with value v of kind (0: none). */
static void late_patch(RegionObject *r, const struct sp_late *l, int64_t t, int kind, int64_t v)
{
	if (!spill.on || !sp_stream_on())
		return;   /* (a forked child's copy: not its stream, nor its lock) */
	pthread_mutex_lock(&producer);
	int rc = sp_stream_patch(l->index, t, kind, v);
	pthread_mutex_unlock(&producer);
	if (rc == 0) {
		sp_stats_acc_add(&r->acc, t - l->start, t);
		r->values_sum += kind ? (uint64_t)v : 0;
	}
}

void sp_spill_late_end(RegionObject *r, uint64_t gen, ptrdiff_t slot, int64_t t)
{
	struct sp_late l;
	if (late_take(r, gen, slot, &l))
		late_patch(r, &l, t, 0, 0);
}

void sp_spill_late_end_mem(RegionObject *r, uint64_t gen, ptrdiff_t slot, int64_t t, const int64_t *alloc0,
			   int64_t mark0)
{
	struct sp_late l;
	if (!late_take(r, gen, slot, &l))
		return;
	int64_t v = 0;
	sp_mem_close(&v, &r->peak_bytes, alloc0 ? *alloc0 : l.value0, mark0);
	late_patch(r, &l, t, r->buf.keep_values, v);
}

/* sp_mpicalls_each at the end: every function's calls written, its
 * calls lost to memory counted. */
static void mpi_collect(void *ctx, size_t fn, const char *name, struct sp_buf *b)
{
	if (fn >= spill.nmpi)
		return;
	spill.mpi[fn].dropped = (int64_t)b->dropped;
	mpi_tick(NULL, fn, name, b);
	if (b->n)
		*(int *)ctx = 1;   /* not written */
}

int sp_spill_collect(struct sp_rank *rk, int64_t now)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	/* The ticker and the writer stop: what is handed over from here is
	 * written at once. */
	ticker_stop();
	spill.paused = 0;
	sp_stream_quiesce();
	/* A file not made yet is made for the calls at hand (a process of a
	 * few calls leaves a small one). */
	uint64_t calls = 0, blocks = 0;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		size_t n = ((RegionObject *)v)->buf.n;
		calls += n;
		blocks += n ? (n + spill.block - 1) / spill.block : 0;
	}
	sp_stream_size_hint(calls, blocks);
	pos = 0;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		rk->dropped += (int64_t)r->buf.dropped;
		for (size_t i = 0; i < r->buf.n; i++)
			if (r->buf.ends[i] == SP_NO_TIME)
				sp_region_end(r, i, now);
		if (hand_over(r) != 0 && r->buf.n) {
			const char *partial = sp_stream_partial();
			spill.finish_failed = 1;   /* what was written stays there, said so */
			PyErr_Format(PyExc_OSError, "cannot write the last calls to %s; the calls written so "
				     "far stay there (scope-profiler recover finishes it)", partial ? partial : "the stream");
			return -1;
		}
		/* Still open (in another thread, or in this one's tracer
		 * outside the profile hook): value 0, as without the stream. */
		for (size_t i = 0; i < r->nlate; i++)
			late_patch(r, &r->late[i], now, r->buf.keep_values, 0);
		r->nlate = 0;
	}
	/* The MPI calls (stopped at the freeze): written at once from here. */
	int unwritten = 0;
	sp_mpicalls_on_full(NULL);
	sp_mpicalls_each(mpi_collect, &unwritten);
	if (unwritten) {
		const char *partial = sp_stream_partial();
		spill.finish_failed = 1;
		PyErr_Format(PyExc_OSError, "cannot write the last MPI calls to %s; the calls written so far "
			     "stay there (scope-profiler recover finishes it)", partial ? partial : "the stream");
		return -1;
	}
	if (!(rk->regions = calloc(spill.next_id ? (size_t)spill.next_id : 1, sizeof *rk->regions))) {
		PyErr_NoMemory();
		return -1;
	}
	rk->nregions = (size_t)spill.next_id;
	pos = 0;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (r->stream_id < 0)
			continue;
		struct sp_region_data *rd = &rk->regions[r->stream_id];
		if (!(rd->name = sp_text_dup(r->name)))
			return -1;
		rd->dropped = (int64_t)r->buf.dropped;
		rd->peak_bytes = r->peak_bytes;
		rd->value_kind = r->buf.keep_values;   /* the values are in the file */
		rd->values_total = (int64_t)r->values_sum;
		rd->gpu_waited = sp_mode.gpu;
		rd->gpu_wait_ns = r->gpu_wait_ns;
		if (sp_stats_from_acc(&rd->stats, &r->acc, r->first_start) != 0) {
			PyErr_Format(PyExc_OSError, "region '%s': its statistics overflowed", rd->name);
			return -1;
		}
	}
	for (size_t i = 0; i < spill.nmpi; i++) {
		struct mpi_fn *m = &spill.mpi[i];
		rk->dropped += m->dropped;
		if (m->id < 0)
			continue;
		struct sp_region_data *rd = &rk->regions[m->id];
		if (!(rd->name = strdup(m->name))) {
			PyErr_NoMemory();
			return -1;
		}
		rd->dropped = m->dropped;
		rd->peak_bytes = SP_NO_PEAK;
		rd->value_kind = m->kind;
		rd->values_total = (int64_t)m->sum;
		if (sp_stats_from_acc(&rd->stats, &m->acc, m->first) != 0) {
			PyErr_Format(PyExc_OSError, "region '%s': its statistics overflowed", rd->name);
			return -1;
		}
	}
	return 0;
}

int sp_spill_finish(const struct sp_profile *p, const char *path)
{
	struct sp_error err = {0};
	/* The file the calls streamed to (OUT.partial; --subprocesses finishes
	 * the run's own in place, path being that very file). */
	char partial[PATH_MAX];
	const char *streamed = sp_stream_partial();
	if (!streamed || (size_t)snprintf(partial, sizeof partial, "%s", streamed) >= sizeof partial)
		snprintf(partial, sizeof partial, "%s.partial", path);
	uint64_t dropped = spill.dropped;
	spill.on = 0;
	sp_buf_spill = NULL;
	mpi_off();
	if (dropped && !sp_stream_failed(NULL))
		fprintf(stderr, "scope-profiler: warning: %llu call%s not recorded: the profile's writer fell "
			"behind the recording (a slow disk, or many regions sharing the budget, each handing "
			"over few calls at a time); a larger --memory-budget gives it more room\n",
			(unsigned long long)dropped, dropped == 1 ? " was" : "s were");
	spill.finish_failed = 0;
	/* Closed first (sp_stream_finish closes it too, then forgets it):
	 * after a failure, what the file's last flush missed is known now. */
	sp_stream_close(&err);
	uint64_t lost = sp_stream_failed(NULL) ? dropped + sp_stream_unsaved() : 0;
	if (sp_stream_finish(p, path, &err) != SP_OK) {
		/* The calls are on disk, up to the last flush that worked: no
		 * other file can hold more. Those after it are counted, said
		 * by the run (sp_spill_lost; a child process says nothing). */
		spill.lost = lost;
		spill.finish_failed = 1;
		if (err.code == SP_EEXIST)   /* a file appeared at the output: the profile is whole */
			PyErr_Format(PyExc_OSError, "%s; the profile stays in %s (scope-profiler recover "
				     "%s -o OTHER.h5 moves it)", err.msg, partial, partial);
		else if (access(partial, F_OK) != 0)   /* never made: nothing was flushed */
			PyErr_Format(PyExc_OSError, "%s; nothing was flushed before it: the profile is lost", err.msg);
		else
			PyErr_Format(PyExc_OSError, "%s; the calls flushed before it stay in %s (scope-profiler "
				     "recover %s finishes it)", err.msg, partial, partial);
		return -1;
	}
	return 0;
}

void sp_spill_hold(void)
{
	ticker_stop();
}

void sp_spill_leave(void)
{
	stop(sp_stream_leave);
}

uint64_t sp_spill_readback_max(void)
{
	return spill.budget / 2 / (spill.call_bytes ? spill.call_bytes : 2 * sizeof(int64_t));
}

uint64_t sp_spill_dropped(void)
{
	return spill.dropped;
}

int sp_spill_finish_failed(void)
{
	return spill.finish_failed;
}

uint64_t sp_spill_lost(void)
{
	return spill.finish_failed ? spill.lost : 0;
}
