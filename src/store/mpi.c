/* mpi.c - one merged profile for all ranks of an MPI job (see sp_mpi.h).
 *
 * The protocol of a session's end, on a private duplicate of COMM_WORLD:
 *   1. every rank packs its profile (timestamps moved to rank 0's clock),
 *      waits in a barrier until every rank has arrived (a rank whose script
 *      failed waits only so long) and gathers the packed lengths to rank 0;
 *   2. rank 0 writes its own rank, then for r = 1 .. N-1 tells rank r "go",
 *      receives its buffer and writes it as group /rank{r}; the "go" of rank
 *      r+1 is sent before rank r's group is written, so one transfer overlaps
 *      one write and rank 0 holds at most two ranks' buffers;
 *   3. rank 0 broadcasts its outcome.
 * Ranks waiting their turn poll with growing sleeps instead of spinning in
 * MPI, so an oversubscribed node keeps its cores for rank 0's writing. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sp_clock.h"
#include "sp_h5.h"
#include "sp_merge.h"
#include "sp_session.h"
#include "sp_mpi.h"
#include "sp_pack.h"
#include "sp_hosts.h"

int sp_mpi_launch_rank(void)
{
	const char *force = getenv("SCOPE_PROFILER_MPI");
	if (force && strcmp(force, "0") == 0)
		return -1;
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (!v || !*v)
			continue;
		char *end;
		errno = 0;
		long r = strtol(v, &end, 10);
		if (errno == 0 && *end == '\0' && r >= 0 && r <= INT_MAX)
			return (int)r;
	}
	return -1;
}

int sp_mpi_wait_seconds(double *out)
{
	const char *v = getenv("SCOPE_PROFILER_MPI_WAIT");
	*out = 60.0;
	if (!v || !*v)
		return 0;
	char *end;
	double d;
	if (sp_parse_decimal(v, &d, &end) != 0 || *end || !(d >= 0) || d > 1e9)
		return -1;
	*out = d;
	return 0;
}

#ifdef SP_HAVE_MPI
#include <dlfcn.h>
#include <mpi.h>

/* The MPI library is not linked in: loading libmpi and its dependencies
 * costs every start 20 ms (Open MPI 4) to 500 ms (Open MPI 5), and most runs
 * are not under a launcher. It is opened (dlopen, RTLD_GLOBAL, as mpi4py
 * does) only when a launcher started this process or --version asks for
 * its name; a script that imports mpi4py without a launcher loads it
 * itself. Its functions and the handles this file uses are looked up once
 * into `lib`; the macros below point the MPI names there, so the code
 * reads as plain MPI. SP_MPI_SONAME is the library the build compiled
 * against (the Makefile reads it from libmpi.so). */
#ifndef SP_MPI_SONAME
#define SP_MPI_SONAME "libmpi.so"
#endif

#define SP_MPI_FUNCS(X)                                                          \
	X(MPI_Init_thread) X(MPI_Initialized) X(MPI_Comm_rank) X(MPI_Comm_size)  \
	X(MPI_Comm_dup) X(MPI_Comm_free) X(MPI_Abort) X(MPI_Send) X(MPI_Recv)    \
	X(MPI_Isend) X(MPI_Irecv) X(MPI_Testall) X(MPI_Waitall) X(MPI_Scatter)   \
	X(MPI_Ibarrier) X(MPI_Igather) X(MPI_Ibcast) X(MPI_Get_library_version) \
	X(PMPI_Finalize) X(PMPI_Finalized)

static struct {
	void *handle;
	int tried;
	char why[200];                 /* why loading failed */
#define SP_MPI_FIELD(f) __typeof__(f) *f;
	SP_MPI_FUNCS(SP_MPI_FIELD)
#undef SP_MPI_FIELD
#ifdef OPEN_MPI
	/* Open MPI's predefined handles are addresses of its globals. */
	void *comm_world, *byte, *int_, *int64;
#endif
} lib;

/* Loads the library once; 0 when every name was found, else -1 with
 * lib.why saying what failed. */
static int lib_load(void)
{
	if (lib.tried)
		return lib.handle ? 0 : -1;
	lib.tried = 1;
	void *h = dlopen(SP_MPI_SONAME, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(lib.why, sizeof lib.why, "cannot load the MPI library: %s", e ? e : SP_MPI_SONAME);
		return -1;
	}
	const char *missing = NULL;
/* Their PMPI_ names: our own calls are never recorded (--mpi-calls). */
#define SP_MPI_LOOK(f)                                                       \
	if (!(*(void **)&lib.f = dlsym(h, (#f)[0] == 'P' ? #f : "P" #f)) && !missing) \
		missing = (#f)[0] == 'P' ? #f : "P" #f;
	SP_MPI_FUNCS(SP_MPI_LOOK)
#undef SP_MPI_LOOK
#ifdef OPEN_MPI
	static const char *const names[] = {"ompi_mpi_comm_world", "ompi_mpi_byte", "ompi_mpi_int",
					    "ompi_mpi_int64_t"};
	void **slots[] = {&lib.comm_world, &lib.byte, &lib.int_, &lib.int64};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!(*slots[i] = dlsym(h, names[i])) && !missing)
			missing = names[i];
#endif
	if (missing) {
		snprintf(lib.why, sizeof lib.why, "the MPI library %s lacks %s", SP_MPI_SONAME, missing);
		dlclose(h);
		char why[sizeof lib.why];
		memcpy(why, lib.why, sizeof why);
		memset(&lib, 0, sizeof lib);   /* no pointer into the closed library */
		lib.tried = 1;
		memcpy(lib.why, why, sizeof why);
		return -1;
	}
	lib.handle = h;
	return 0;
}

#define MPI_Init_thread lib.MPI_Init_thread
#define MPI_Initialized lib.MPI_Initialized
#define MPI_Comm_rank lib.MPI_Comm_rank
#define MPI_Comm_size lib.MPI_Comm_size
#define MPI_Comm_dup lib.MPI_Comm_dup
#define MPI_Comm_free lib.MPI_Comm_free
#define MPI_Abort lib.MPI_Abort
#define MPI_Send lib.MPI_Send
#define MPI_Recv lib.MPI_Recv
#define MPI_Isend lib.MPI_Isend
#define MPI_Irecv lib.MPI_Irecv
#define MPI_Testall lib.MPI_Testall
#define MPI_Waitall lib.MPI_Waitall
#define MPI_Scatter lib.MPI_Scatter
#define MPI_Ibarrier lib.MPI_Ibarrier
#define MPI_Igather lib.MPI_Igather
#define MPI_Ibcast lib.MPI_Ibcast
#define MPI_Get_library_version lib.MPI_Get_library_version
#ifdef OPEN_MPI
#undef MPI_COMM_WORLD
#undef MPI_BYTE
#undef MPI_INT
#undef MPI_INT64_T
#define MPI_COMM_WORLD ((MPI_Comm)lib.comm_world)
#define MPI_BYTE ((MPI_Datatype)lib.byte)
#define MPI_INT ((MPI_Datatype)lib.int_)
#define MPI_INT64_T ((MPI_Datatype)lib.int64)
#endif

enum { TAG_PING = 1, TAG_PONG, TAG_GO, TAG_DATA };
/* Messages are cut into pieces of at most this many bytes (MPI counts are int). */
#define CHUNK ((size_t)1 << 30)
/* Round trips per rank when measuring clock offsets; the shortest one wins. */
#define SYNC_ROUNDS 12

static struct {
	int active, rank, size;
	int script_finalized;          /* the script called MPI_Finalize */
	int provided;                  /* the thread level MPI_Init_thread gave the run */
	int alone;                     /* this failed rank waited in vain at the end (sp_mpi_meet) */
	pid_t pid;                     /* forked children must not communicate */
	int64_t offset;                /* this rank's clock - rank 0's */
	int64_t sync_error;            /* rank 0: largest half round trip of the best rounds */
	int64_t job;                   /* the job's id: rank 0's wall clock at start (ns) */
	MPI_Comm comm;
	char library[MPI_MAX_LIBRARY_VERSION_STRING];
} mpi;

int sp_mpi_built(void)
{
	return 1;
}

const char *sp_mpi_library(void)
{
	if (!mpi.library[0] && lib_load() != 0)
		snprintf(mpi.library, sizeof mpi.library, "%s (%s)", SP_MPI_SONAME, lib.why);
	if (!mpi.library[0]) {
		int len = 0;
		MPI_Get_library_version(mpi.library, &len);
		mpi.library[len > 0 && len < (int)sizeof mpi.library ? len : 0] = '\0';
		char *nl = strchr(mpi.library, '\n');
		if (nl)
			*nl = '\0';
		/* Open MPI: "Open MPI v4.1.4, package: ..., ident: ..." */
		char *comma = strchr(mpi.library, ',');
		if (comma && strncmp(mpi.library, "Open MPI", 8) == 0)
			*comma = '\0';
	}
	return mpi.library;
}

/* The library's own entry points: from our handle when we loaded it, else
 * from the copy that the script's import (mpi4py) loaded, which is why a
 * wrapper got called. That copy may sit in the extension's local scope
 * (Python's dlopen is RTLD_LOCAL), out of RTLD_DEFAULT's reach: ask for it
 * by name. */
void *sp_mpi_symbol(const char *name)
{
	if (lib.handle)
		return dlsym(lib.handle, name);
	void *f = NULL, *h = dlopen(SP_MPI_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		f = dlsym(h, name);
		dlclose(h);
	}
	return f ? f : dlsym(RTLD_DEFAULT, name);
}

static void *real(void *ours, const char *name)
{
	return ours ? ours : sp_mpi_symbol(name);
}

/* The script's MPI_Finalize (through mpi4py or a C extension) is deferred
 * to sp_mpi_end, so the final write can still communicate. The executable
 * exports these two symbols, which therefore win over libmpi's for every
 * library loaded later (the standard MPI profiling interface). */
int MPI_Finalize(void)
{
	if (mpi.active) {
		mpi.script_finalized = 1;
		return MPI_SUCCESS;
	}
	int (*fin)(void) = real((void *)lib.PMPI_Finalize, "PMPI_Finalize");
	return fin ? fin() : MPI_ERR_OTHER;
}

/* A script that starts MPI itself (mpi4py.rc.initialize = False, then
 * MPI.Init()): under a launcher the run started it already, which a second
 * MPI_Init would abort; it succeeds instead, as the script's first. */
#undef MPI_Init_thread
int MPI_Init(int *argc, char ***argv)
{
	if (mpi.active)
		return MPI_SUCCESS;
	int (*init)(int *, char ***) = real(NULL, "PMPI_Init");
	return init ? init(argc, argv) : MPI_ERR_OTHER;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	if (mpi.active) {
		if (provided)
			*provided = mpi.provided;
		return MPI_SUCCESS;
	}
	int (*init)(int *, char ***, int, int *) = real((void *)lib.MPI_Init_thread, "PMPI_Init_thread");
	return init ? init(argc, argv, required, provided) : MPI_ERR_OTHER;
}
#define MPI_Init_thread lib.MPI_Init_thread

int MPI_Finalized(int *flag)
{
	int (*fed)(int *) = real((void *)lib.PMPI_Finalized, "PMPI_Finalized");
	if (!fed)
		return MPI_ERR_OTHER;
	int rc = fed(flag);
	if (rc == MPI_SUCCESS && mpi.active && mpi.script_finalized)
		*flag = 1;
	return rc;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&ts, NULL);
}

/* Waits for n requests, sleeping between tests: 20 us growing to 2 ms;
 * waiting(arg), when given, is called between tests. limit_s < 0: no
 * limit. Returns 0, or -1 when the limit passed. */
static int wait_watched(int n, MPI_Request *reqs, double limit_s, void (*waiting)(void *), void *arg)
{
	int64_t start = sp_clock_ns();
	long pause = 20000;
	for (;;) {
		int done = 0;
		MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
		if (done)
			return 0;
		if (limit_s >= 0 && (double)(sp_clock_ns() - start) > limit_s * 1e9)
			return -1;
		if (waiting)
			waiting(arg);
		sleep_ns(pause);
		if (pause < 2000000)
			pause *= 2;
	}
}

static int wait_all(int n, MPI_Request *reqs, double limit_s)
{
	return wait_watched(n, reqs, limit_s, NULL, NULL);
}

/* Takes the whole job down after this rank said why on stderr. mpirun
 * forwards a rank's stderr and prints MPI_Abort's own notice by separate
 * paths, and Open MPI 5 and 6 were seen printing the notice in the middle
 * of the rank's line: a moment for the forwarding first. */
static _Noreturn void abort_job(void)
{
	fflush(stderr);
	nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
	MPI_Abort(MPI_COMM_WORLD, 1);
	abort();   /* MPI_Abort does not return */
}

/* Offsets by ping-pong from rank 0, as NTP does: rank r answers with its
 * clock t_r; with the send time t0 and the receive time t1 on rank 0, the
 * offset is t_r - (t0 + t1) / 2, off by at most half the round trip, so the
 * round with the shortest round trip is kept. */
static void clock_sync(void)
{
	int64_t *offsets = NULL;
	if (mpi.rank == 0) {
		offsets = calloc((size_t)mpi.size, sizeof *offsets);
		if (!offsets) {
			fprintf(stderr, "scope-profiler: out of memory for %d clock offsets\n", mpi.size);
			abort_job();
		}
		for (int r = 1; r < mpi.size; r++) {
			int64_t best_rtt = INT64_MAX;
			for (int k = 0; k < SYNC_ROUNDS; k++) {
				int64_t t0 = sp_clock_ns(), tr = 0;
				MPI_Send(NULL, 0, MPI_BYTE, r, TAG_PING, mpi.comm);
				MPI_Recv(&tr, 1, MPI_INT64_T, r, TAG_PONG, mpi.comm, MPI_STATUS_IGNORE);
				int64_t t1 = sp_clock_ns();
				if (t1 - t0 < best_rtt) {
					best_rtt = t1 - t0;
					offsets[r] = tr - (t0 + (t1 - t0) / 2);
				}
			}
			if (best_rtt / 2 > mpi.sync_error)
				mpi.sync_error = best_rtt / 2;
		}
	} else {
		for (int k = 0; k < SYNC_ROUNDS; k++) {
			MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_PING, mpi.comm, MPI_STATUS_IGNORE);
			int64_t tr = sp_clock_ns();
			MPI_Send(&tr, 1, MPI_INT64_T, 0, TAG_PONG, mpi.comm);
		}
	}
	MPI_Scatter(offsets, 1, MPI_INT64_T, &mpi.offset, 1, MPI_INT64_T, 0, mpi.comm);
	free(offsets);
}

/* The job's id, rank 0's: its wall clock now, in ns (a later job on the
 * same output has another). */
static void job_id(void)
{
	MPI_Request req;
	if (mpi.rank == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		mpi.job = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	MPI_Ibcast(&mpi.job, 1, MPI_INT64_T, 0, mpi.comm, &req);
	wait_all(1, &req, -1.0);
}

enum sp_err sp_mpi_start(struct sp_error *err)
{
	int provided = 0, initialized = 0;
	if (lib_load() != 0)
		return sp_error_set(err, SP_EIO, "%s", lib.why);
	MPI_Initialized(&initialized);
	if (!initialized && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
		return sp_error_set(err, SP_EIO, "MPI_Init_thread failed");
	mpi.provided = initialized ? MPI_THREAD_MULTIPLE : provided;
	MPI_Comm_rank(MPI_COMM_WORLD, &mpi.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mpi.size);
	if (MPI_Comm_dup(MPI_COMM_WORLD, &mpi.comm) != MPI_SUCCESS)
		return sp_error_set(err, SP_EIO, "MPI_Comm_dup failed");
	mpi.pid = getpid();
	mpi.active = 1;
	/* sys.exit() ends the process inside Python (Py_Exit -> exit): MPI is
	 * finalised at exit, after the interpreter's atexit stage wrote. */
	atexit(sp_mpi_end);
	clock_sync();
	job_id();
	return SP_OK;
}

int sp_mpi_active(void)
{
	return mpi.active && getpid() == mpi.pid;
}

int sp_mpi_rank(void)
{
	return sp_mpi_active() ? mpi.rank : 0;
}

int sp_mpi_size(void)
{
	return sp_mpi_active() ? mpi.size : 1;
}

int64_t sp_mpi_clock_offset(void)
{
	return sp_mpi_active() ? mpi.offset : 0;
}

int64_t sp_mpi_sync_error(void)
{
	return sp_mpi_active() ? mpi.sync_error : 0;
}

int64_t sp_mpi_job(void)
{
	return sp_mpi_active() ? mpi.job : 0;
}

/* Sends or receives len bytes in pieces; fills reqs (at most npieces). */
static int post_pieces(int send, void *buf, size_t len, int peer, MPI_Request *reqs)
{
	int n = 0;
	for (size_t off = 0; off < len; off += CHUNK, n++) {
		int count = (int)(len - off < CHUNK ? len - off : CHUNK);
		if (send)
			MPI_Isend((char *)buf + off, count, MPI_BYTE, peer, TAG_DATA, mpi.comm, &reqs[n]);
		else
			MPI_Irecv((char *)buf + off, count, MPI_BYTE, peer, TAG_DATA, mpi.comm, &reqs[n]);
	}
	return n;
}

static size_t npieces(size_t len)
{
	return len / CHUNK + 1;
}

/* A failed rank that the others never joined: keep its own profile, then
 * take the job down, as MPI does when a rank dies. */
static void give_up(struct sp_profile *p, double wait_s, const char *fallback)
{
	struct sp_error err = {0};
	p->ranks[0].clock_offset_ns = 0;  /* its own clock: the file holds only it */
	int saved = fallback && sp_h5_write(p, fallback, &err) == SP_OK;
	fprintf(stderr,
		"scope-profiler: rank %d: the script failed and the other ranks did not reach the end "
		"within %g s (they may be waiting for this rank); %s%s%s; aborting the job\n",
		mpi.rank, wait_s, saved ? "this rank's profile is saved to " : "this rank's profile is lost",
		saved ? fallback : "", saved ? "" : (fallback ? ": " : ""));
	if (!saved && fallback)
		fprintf(stderr, "scope-profiler: %s\n", err.msg);
	abort_job();
}

/* Rank 0's outcome (rc, and err's message when it failed) to every rank:
 * each returns it, a failure in rank 0's words. */
static enum sp_err share_outcome(enum sp_err rc, struct sp_error *err)
{
	struct {
		int32_t code;
		char msg[sizeof err->msg];
	} status = {(int32_t)rc, ""};
	MPI_Request req;
	if (mpi.rank == 0 && rc != SP_OK)
		snprintf(status.msg, sizeof status.msg, "%s", err->msg);
	MPI_Ibcast(&status, (int)sizeof status, MPI_BYTE, 0, mpi.comm, &req);
	wait_all(1, &req, -1.0);
	if (mpi.rank != 0 && status.code != SP_OK)
		return sp_error_set(err, (enum sp_err)status.code, "%s", status.msg);
	return rc;
}

struct incoming {
	void *buf;
	size_t len;
	int nreq;
	MPI_Request *reqs;
};

/* Rank 0: starts receiving rank r's buffer and tells r to send it (go = 1),
 * or, without the memory for it, not to (go = 0). */
static enum sp_err start_receive(struct incoming *in, int r, int64_t len, struct sp_error *err)
{
	enum sp_err rc = SP_OK;
	memset(in, 0, sizeof *in);
	if (len <= 0)
		return SP_OK;
	int go = 1;
	in->buf = malloc((size_t)len);
	in->reqs = calloc(npieces((size_t)len), sizeof *in->reqs);
	if (!in->buf || !in->reqs) {
		free(in->buf);
		free(in->reqs);
		memset(in, 0, sizeof *in);
		go = 0;
		rc = sp_error_set(err, SP_ENOMEM, "out of memory for rank %d's profile (%lld bytes)", r,
				  (long long)len);
	} else {
		in->len = (size_t)len;
		in->nreq = post_pieces(0, in->buf, in->len, r, in->reqs);
	}
	MPI_Send(&go, 1, MPI_INT, r, TAG_GO, mpi.comm);
	return rc;
}

/* A rank other than 0: sends its packed profile (len bytes at buf) once
 * rank 0 says it can take it. */
static void send_mine(void *buf, size_t len)
{
	MPI_Request go_req;
	int go = 0;
	MPI_Irecv(&go, 1, MPI_INT, 0, TAG_GO, mpi.comm, &go_req);
	wait_all(1, &go_req, -1.0);
	MPI_Request *reqs = NULL;
	if (!go)
		;              /* rank 0 could not take it; it reports that */
	else if ((reqs = calloc(npieces(len), sizeof *reqs))) {
		int n = post_pieces(1, buf, len, 0, reqs);
		MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
		free(reqs);
	} else {           /* no memory for requests: piece by piece */
		for (size_t off = 0; off < len; off += CHUNK)
			MPI_Send((char *)buf + off, (int)(len - off < CHUNK ? len - off : CHUNK),
				 MPI_BYTE, 0, TAG_DATA, mpi.comm);
	}
}

/* Rank 0: room in p->ranks for every rank (the others zeroed); returns its
 * own rank's entry. Aborts the job when out of memory. */
static struct sp_rank *grow_ranks(struct sp_profile *p)
{
	struct sp_rank *ranks = realloc(p->ranks, (size_t)mpi.size * sizeof *ranks);
	if (!ranks) {
		fprintf(stderr, "scope-profiler: out of memory gathering %d ranks\n", mpi.size);
		abort_job();
	}
	memset(ranks + 1, 0, (size_t)(mpi.size - 1) * sizeof *ranks);
	p->ranks = ranks;
	return &p->ranks[0];
}

/* Rank 0: receives ranks 1 .. size-1 (lens[r] bytes each, -1 for a rank
 * that could not pack), the next one's transfer started while one is
 * unpacked, each written to w (when not NULL) and kept as its summary.
 * rc is the outcome so far; returns it, or the first failure after it
 * (with err filled). Every rank is received whatever fails. */
static enum sp_err receive_ranks(struct sp_profile *p, const int64_t *lens, struct sp_h5_writer *w,
				 enum sp_err rc, struct sp_error *err)
{
	struct incoming cur, next;
	struct sp_error rerr = {0};
	enum sp_err rrc = mpi.size > 1 ? start_receive(&next, 1, lens[1], &rerr) : SP_OK;
	if (rc == SP_OK && rrc != SP_OK)
		rc = sp_error_set(err, rrc, "%s", rerr.msg);
	for (int r = 1; r < mpi.size; r++) {
		cur = next;
		if (cur.nreq)
			MPI_Waitall(cur.nreq, cur.reqs, MPI_STATUSES_IGNORE);
		if (r + 1 < mpi.size) {
			rrc = start_receive(&next, r + 1, lens[r + 1], &rerr);
			if (rc == SP_OK && rrc != SP_OK)
				rc = sp_error_set(err, rrc, "%s", rerr.msg);
		}
		struct sp_rank *rk = &p->ranks[r];
		rk->rank = r;
		if (lens[r] < 0 && rc == SP_OK)
			rc = sp_error_set(err, SP_ENOMEM, "rank %d could not pack its profile (out of memory)", r);
		if (cur.buf && rc == SP_OK) {
			rc = sp_rank_unpack(cur.buf, cur.len, rk, err);
			if (rc == SP_OK && rk->rank != r)
				rc = sp_error_set(err, SP_ECORRUPT, "rank %d sent the profile of rank %d", r, rk->rank);
			if (rc == SP_OK && w)
				rc = sp_h5_writer_rank(w, rk, err);
			/* Only the summary stays: stats, tree, line tables. */
			for (size_t i = 0; i < rk->nregions; i++)
				sp_region_drop_events(&rk->regions[i]);
		}
		free(cur.buf);
		free(cur.reqs);
	}
	return rc;
}

enum sp_err sp_mpi_collect(struct sp_profile *p, const char *path, int with_events, int failed,
			   double wait_s, const char *fallback, struct sp_error *err)
{
	if (!sp_mpi_active() || p->nranks != 1)
		return sp_error_set(err, SP_EINVAL, "sp_mpi_collect: MPI is not active or the profile is not one rank");
	struct sp_rank *mine = &p->ranks[0];
	mine->rank = mpi.rank;
	mine->clock_offset_ns = mpi.offset;
	enum sp_err rc = SP_OK;
	void *buf = NULL;
	size_t len = 0;
	int64_t mylen = 0, *lens = NULL;

	if (mpi.rank != 0) {
		struct sp_error perr = {0};
		if (sp_rank_pack(mine, with_events, mpi.offset, &buf, &len, &perr) == SP_OK)
			mylen = (int64_t)len;
		else
			mylen = -1;        /* rank 0 reports it; this rank still takes part */
	} else if (!(lens = calloc((size_t)mpi.size, sizeof *lens))) {
		fprintf(stderr, "scope-profiler: out of memory gathering %d ranks\n", mpi.size);
		abort_job();
	}
	/* Every rank arrives here, or a failed rank gives up. (A gather is not
	 * enough: on a rank other than the root it may finish alone.) */
	MPI_Request req;
	if (mpi.alone)
		give_up(p, wait_s, fallback);   /* the others did not come to sp_mpi_meet */
	MPI_Ibarrier(mpi.comm, &req);
	if (wait_all(1, &req, failed ? wait_s : -1.0) != 0)
		give_up(p, wait_s, fallback);
	MPI_Igather(&mylen, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, 0, mpi.comm, &req);
	wait_all(1, &req, -1.0);

	if (mpi.rank != 0) {
		if (mylen > 0)
			send_mine(buf, len);
		free(buf);
	} else {
		struct sp_h5_writer *w = NULL;
		mine = grow_ranks(p);
		if (path && (rc = sp_h5_writer_open(path, p, &w, err)) == SP_OK)
			rc = sp_h5_writer_rank(w, mine, err);
		rc = receive_ranks(p, lens, w, rc, err);
		p->nranks = (size_t)mpi.size;
		if (w && rc == SP_OK) {
			char *hosts = sp_profile_hosts(p);
			char sync[32];
			snprintf(sync, sizeof sync, "%lld", (long long)mpi.sync_error);
			rc = hosts ? sp_h5_writer_meta(w, "hostnames", hosts, SP_KV_TEXT, err)
				   : sp_error_set(err, SP_ENOMEM, "out of memory");
			if (rc == SP_OK)
				rc = sp_h5_writer_meta(w, "clock_sync_error_ns", sync, SP_KV_INT, err);
			free(hosts);
		}
		if (w) {
			if (rc == SP_OK)
				rc = sp_h5_writer_commit(w, err);
			else
				sp_h5_writer_abort(w);
		}
		free(lens);
	}
	return share_outcome(rc, err);
}

int sp_mpi_meet(int streamed, int failed, double wait_s, int *any, void (*waiting)(void *), void *arg)
{
	MPI_Request req;
	int *all = NULL, mine = streamed != 0;
	*any = 0;
	/* Every rank arrives here, or a failed rank stops waiting. */
	MPI_Ibarrier(mpi.comm, &req);
	if (wait_watched(1, &req, failed ? wait_s : -1.0, waiting, arg) != 0) {
		mpi.alone = 1;
		return -1;
	}
	if (mpi.rank == 0 && !(all = calloc((size_t)mpi.size, sizeof *all))) {
		fprintf(stderr, "scope-profiler: out of memory gathering %d ranks\n", mpi.size);
		abort_job();
	}
	MPI_Igather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, mpi.comm, &req);
	wait_all(1, &req, -1.0);
	for (int r = 0; all && r < mpi.size; r++)
		*any |= all[r];
	free(all);
	MPI_Ibcast(any, 1, MPI_INT, 0, mpi.comm, &req);
	wait_all(1, &req, -1.0);
	return 0;
}

void sp_mpi_abandon(const char *file, double wait_s)
{
	fprintf(stderr,
		"scope-profiler: rank %d: the script failed and the other ranks did not reach the end "
		"within %g s (they may be waiting for this rank); this rank's profile is in %s (scope-profiler "
		"recover merges the ranks' files); aborting the job\n", mpi.rank, wait_s, file);
	abort_job();
}

enum sp_err sp_mpi_merge(const char *job, const char *path, int state, struct sp_merge_report *rep,
			 struct sp_error *err)
{
	int32_t mine = state, *all = NULL;
	enum sp_err rc = SP_OK;
	MPI_Request req;
	if (mpi.rank == 0 && !(all = calloc((size_t)mpi.size, sizeof *all))) {
		fprintf(stderr, "scope-profiler: out of memory gathering %d ranks\n", mpi.size);
		abort_job();
	}
	MPI_Igather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, mpi.comm, &req);
	wait_all(1, &req, -1.0);
	if (mpi.rank == 0) {
		enum sp_merge_state *said = calloc((size_t)mpi.size, sizeof *said);
		if (!said) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory gathering %d ranks", mpi.size);
		} else {
			for (int r = 0; r < mpi.size; r++)
				said[r] = (enum sp_merge_state)all[r];
			int64_t t0 = sp_clock_ns();
			rc = sp_merge_ranks(job ? job : path, path, mpi.size, mpi.job, said, 1, rep, err);
			/* scripts/bench_mpi_stream.py: the merge's time. */
			if (rc == SP_OK && getenv("SCOPE_PROFILER_STREAM_STATS"))
				fprintf(stderr, "scope-profiler: merge: %d ranks, %lld calls in %.3f s\n", mpi.size,
					(long long)rep->calls, (double)(sp_clock_ns() - t0) / 1e9);
			free(said);
		}
		free(all);
	}
	return share_outcome(rc, err);
}

void sp_mpi_end(void)
{
	if (!mpi.active || getpid() != mpi.pid)
		return;
	mpi.active = 0;
	int finalized = 0;
	lib.PMPI_Finalized(&finalized);
	if (!finalized) {
		MPI_Comm_free(&mpi.comm);
		lib.PMPI_Finalize();
	}
}

#else /* no MPI */

void *sp_mpi_symbol(const char *name)
{
	(void)name;
	return NULL;
}

int sp_mpi_built(void)
{
	return 0;
}

const char *sp_mpi_library(void)
{
	return "not built in";
}

enum sp_err sp_mpi_start(struct sp_error *err)
{
	return sp_error_set(err, SP_EINVAL, "this scope-profiler was built without MPI");
}

int sp_mpi_active(void)
{
	return 0;
}

int sp_mpi_rank(void)
{
	return 0;
}

int sp_mpi_size(void)
{
	return 1;
}

enum sp_err sp_mpi_collect(struct sp_profile *p, const char *path, int with_events, int failed,
			   double wait_s, const char *fallback, struct sp_error *err)
{
	return sp_error_set(err, SP_EINVAL, "this scope-profiler was built without MPI");
}

int64_t sp_mpi_clock_offset(void)
{
	return 0;
}

int64_t sp_mpi_sync_error(void)
{
	return 0;
}

int64_t sp_mpi_job(void)
{
	return 0;
}

int sp_mpi_meet(int streamed, int failed, double wait_s, int *any, void (*waiting)(void *), void *arg)
{
	*any = streamed != 0;
	return 0;
}

void sp_mpi_abandon(const char *file, double wait_s)
{
	abort();
}

enum sp_err sp_mpi_merge(const char *job, const char *path, int state, struct sp_merge_report *rep,
			 struct sp_error *err)
{
	return sp_error_set(err, SP_EINVAL, "this scope-profiler was built without MPI");
}

void sp_mpi_end(void)
{
}

#endif
