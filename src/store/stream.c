/* stream.c - a run's events streamed to OUT.partial while it runs (see
 * sp_stream.h; the layout is format version 3 of scope-profiler-format(5)).
 *
 * The producer (the recording side, holding the GIL) copies each block it
 * hands over into a record and queues it; the writer thread takes the whole
 * queue at once, writes the records through a stage (small blocks are
 * gathered into one write per column), and at each flush record writes
 * flushed_ns and flushes the file. The file is in HDF5's single-writer /
 * multiple-reader mode: readers open it at any moment, and after a kill, and
 * see every call up to the last flush. Every HDF5 call of the writer holds
 * sp_h5_lock. When the writer is stopped (sp_stream_finish), the records the
 * producer still hands over are written at once by the calling thread. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "sp_h5write.h"
#include "sp_stream.h"

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
	int has_lanes;                 /* REC_BLOCK: a lanes column follows */
	size_t n;                      /* calls, patches, or the name's bytes with its NUL */
	size_t bytes;                  /* counted against the queue */
	int64_t time;                  /* REC_FLUSH: the file is complete up to here */
	/* REC_BLOCK: starts[n], ends[n], then int32 lanes[n]; REC_PATCHES:
	 * index[n], end[n]; REC_NAME: the name. */
	int64_t data[];
};

/* The event columns of the file. */
enum { COL_START, COL_END, COL_LANES, NCOL };

/* Calls gathered before a write; also the event columns' chunk. */
#define STAGE ((size_t)1 << 16)
/* The chunk of the small columns (blocks, names). */
#define SMALL_CHUNK ((hsize_t)4096)

struct file {
	hid_t file;
	hid_t col[NCOL], block_region, block_calls, names, flushed;
	int fd;                        /* HDF5's descriptor of the file (for a forked child) */
	uint64_t events;               /* calls in the columns */
	uint64_t blocks;               /* rows of the block table */
	uint64_t name_bytes;
	int lanes_on;                  /* the lanes column is as long as the others */
	/* The stage: calls and blocks not written yet. */
	int64_t *st_start, *st_end;
	int32_t *st_lanes;
	size_t st_n;
	int32_t *sb_region;
	int64_t *sb_calls;
	size_t sb_n, sb_cap;
};

static struct stream {
	int on;                        /* started, not finished (producer's view) */
	struct sp_stream_config c;
	char *target, *partial, *hostname;
	pthread_t thread;
	int thread_running;
	pthread_mutex_t mu;            /* the queue, stop, failed */
	pthread_cond_t cv;
	struct rec *head, *tail;
	size_t queued;                 /* bytes in the queue */
	int stop;                      /* the writer is to finish the queue and end */
	int direct;                    /* the writer has ended: records are written by the caller */
	int failed;                    /* the writer failed: failure says why */
	struct sp_error failure;
	/* Producer side. */
	uint64_t next_index;           /* the file index of the next call handed over */
	int handed;                    /* something was handed over */
	uint64_t refused;
	int64_t *patch_idx, *patch_end;
	size_t npatch, patch_cap;
	/* Writer side. */
	struct file f;
	int created;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .f = {.file = -1, .fd = -1}};

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

/* An empty 1-D extendible dataset of type t, chunked by chunk elements
 * (deflated at level when > 0). */
static hid_t column_new(hid_t loc, const char *name, hid_t t, hsize_t chunk, int level)
{
	hsize_t dims[1] = {0}, maxd[1] = {H5S_UNLIMITED};
	hid_t sp = H5Screate_simple(1, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
	if (sp >= 0 && dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0 &&
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0 &&
	    (level <= 0 || (H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)level) >= 0)))
		ds = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	return ds;
}

/* The partial file's groups and empty columns, before SWMR writing starts
 * (no object may be created after). 0, or -1. */
static int make_layout(hid_t file)
{
	char name[32];
	int ok = 1;
	snprintf(name, sizeof name, "rank%d", S.c.rank);
	hid_t g = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t ev = g < 0 ? -1 : H5Gcreate2(g, "events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t st = g < 0 ? -1 : H5Gcreate2(g, "stream", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (ev < 0 || st < 0 || sp_h5w_attr_str(file, "format", "scope-profiler") < 0 ||
	    sp_h5w_attr(file, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT32, &(int32_t){3}) < 0 ||
	    sp_h5w_attr_i64(g, "run_start_time", S.c.run_start_ns) < 0 || sp_h5w_attr_i64(g, "pid", S.c.pid) < 0 ||
	    sp_h5w_attr_i64(g, "clock_offset_ns", 0) < 0 ||
	    (S.hostname && sp_h5w_attr_str(g, "hostname", S.hostname) < 0))
		ok = 0;
	hid_t ids[6] = {-1, -1, -1, -1, -1, -1};
	if (ok) {
		ids[0] = column_new(ev, "start_times", H5T_STD_I64LE, STAGE, S.c.compression);
		ids[1] = column_new(ev, "end_times", H5T_STD_I64LE, STAGE, S.c.compression);
		ids[2] = column_new(ev, "lanes", H5T_STD_I32LE, STAGE, S.c.compression);
		ids[3] = column_new(ev, "block_region", H5T_STD_I32LE, SMALL_CHUNK, 0);
		ids[4] = column_new(ev, "block_calls", H5T_STD_I64LE, SMALL_CHUNK, 0);
		ids[5] = column_new(st, "names", H5T_STD_U8LE, SMALL_CHUNK, 0);
		for (int i = 0; i < 6; i++)
			ok &= ids[i] >= 0;
	}
	hsize_t one[1] = {1};
	hid_t sp = H5Screate_simple(1, one, NULL);
	hid_t fl = ok && sp >= 0 ? H5Dcreate2(st, "flushed_ns", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT,
					      H5P_DEFAULT) : -1;
	if (fl < 0 || H5Dwrite(fl, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &S.c.run_start_ns) < 0)
		ok = 0;
	for (int i = 0; i < 6; i++)
		if (ids[i] >= 0)
			H5Dclose(ids[i]);
	hid_t close_them[] = {fl};
	for (size_t i = 0; i < sizeof close_them / sizeof close_them[0]; i++)
		if (close_them[i] >= 0)
			H5Dclose(close_them[i]);
	if (sp >= 0)
		H5Sclose(sp);
	if (st >= 0)
		H5Gclose(st);
	if (ev >= 0)
		H5Gclose(ev);
	if (g >= 0)
		H5Gclose(g);
	return ok ? 0 : -1;
}

/* Opens the columns of the file's layout into S.f. 0, or -1. */
static int open_layout(void)
{
	char path[96];
	struct file *f = &S.f;
	hid_t *ids[] = {&f->col[COL_START], &f->col[COL_END], &f->col[COL_LANES], &f->block_region,
			&f->block_calls, &f->names, &f->flushed};
	const char *names[] = {"events/start_times", "events/end_times", "events/lanes", "events/block_region",
			       "events/block_calls", "stream/names", "stream/flushed_ns"};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		snprintf(path, sizeof path, "rank%d/%s", S.c.rank, names[i]);
		if ((*ids[i] = H5Dopen2(f->file, path, H5P_DEFAULT)) < 0)
			return -1;
	}
	return 0;
}

static void close_layout(void)
{
	struct file *f = &S.f;
	hid_t *ids[] = {&f->col[COL_START], &f->col[COL_END], &f->col[COL_LANES], &f->block_region,
			&f->block_calls, &f->names, &f->flushed};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		if (*ids[i] >= 0)
			H5Dclose(*ids[i]);
		*ids[i] = -1;
	}
}

/* Creates OUT.partial (replacing a dead run's), its layout, and starts
 * SWMR writing. 0, or -1 (failed). */
static int file_create(void)
{
	struct file *f = &S.f;
	int fd = open(S.partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0) {
		fail("%s", strerror(errno));
		return -1;
	}
	/* A live run writing the same profile holds HDF5's lock on it. */
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		errno = 0;
		fail("another process is writing it");
		return -1;
	}
	if (ftruncate(fd, 0) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		fail("%s", strerror(e));
		return -1;
	}
	flock(fd, LOCK_UN);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	char by_fd[64];
	snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", fd);
	errno = 0;
	if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0)
		f->file = H5Fcreate(access(by_fd, F_OK) == 0 ? by_fd : S.partial, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	close(fd);
	if (f->file < 0) {
		if (fapl >= 0)
			H5Pclose(fapl);
		fail("HDF5 cannot create the file");
		return -1;
	}
	int *vfd = NULL;
	if (make_layout(f->file) < 0 || H5Fstart_swmr_write(f->file) < 0 || open_layout() < 0 ||
	    H5Fget_vfd_handle(f->file, fapl, (void **)&vfd) < 0 || !vfd) {
		H5Pclose(fapl);
		fail("cannot set up the file");
		return -1;
	}
	H5Pclose(fapl);
	f->fd = *vfd;
	f->st_start = malloc(STAGE * sizeof *f->st_start);
	f->st_end = malloc(STAGE * sizeof *f->st_end);
	f->st_lanes = malloc(STAGE * sizeof *f->st_lanes);
	if (!f->st_start || !f->st_end || !f->st_lanes) {
		errno = ENOMEM;
		fail("out of memory");
		return -1;
	}
	S.created = 1;
	return 0;
}

/* Appends n elements of buf (memory type mt) to the 1-D dataset ds, which
 * holds `at` now. 0, or -1. */
static int append(hid_t ds, hid_t mt, uint64_t at, size_t n, const void *buf)
{
	hsize_t len[1] = {(hsize_t)(at + n)}, off[1] = {(hsize_t)at}, cnt[1] = {(hsize_t)n};
	if (n == 0)
		return 0;
	hid_t fs = -1, ms = -1;
	int ok = H5Dset_extent(ds, len) >= 0 && (fs = H5Dget_space(ds)) >= 0 &&
		 (ms = H5Screate_simple(1, cnt, NULL)) >= 0 &&
		 H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
		 H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, buf) >= 0;
	if (ms >= 0)
		H5Sclose(ms);
	if (fs >= 0)
		H5Sclose(fs);
	return ok ? 0 : -1;
}

/* Writes n calls (lanes NULL: lane 0) to the event columns; the lanes
 * column only once some call had a lane. 0, or -1. */
static int write_calls(size_t n, const int64_t *starts, const int64_t *ends, const int32_t *lanes)
{
	struct file *f = &S.f;
	if (append(f->col[COL_START], H5T_NATIVE_INT64, f->events, n, starts) < 0 ||
	    append(f->col[COL_END], H5T_NATIVE_INT64, f->events, n, ends) < 0)
		return -1;
	if (f->lanes_on && lanes && append(f->col[COL_LANES], H5T_NATIVE_INT32, f->events, n, lanes) < 0)
		return -1;
	f->events += n;
	return 0;
}

/* Writes the stage (events first, then the blocks that describe them). */
static int stage_flush(void)
{
	struct file *f = &S.f;
	if (f->st_n && write_calls(f->st_n, f->st_start, f->st_end, f->st_lanes) < 0)
		return -1;
	f->st_n = 0;
	if (f->sb_n && (append(f->block_region, H5T_NATIVE_INT32, f->blocks, f->sb_n, f->sb_region) < 0 ||
			append(f->block_calls, H5T_NATIVE_INT64, f->blocks, f->sb_n, f->sb_calls) < 0))
		return -1;
	f->blocks += f->sb_n;
	f->sb_n = 0;
	return 0;
}

/* From now on the lanes column is written: the calls so far get lane 0. */
static int lanes_start(void)
{
	struct file *f = &S.f;
	static const int32_t zeros[4096];
	for (uint64_t at = 0; at < f->events;) {
		size_t k = f->events - at < 4096 ? (size_t)(f->events - at) : 4096;
		if (append(f->col[COL_LANES], H5T_NATIVE_INT32, at, k, zeros) < 0)
			return -1;
		at += k;
	}
	for (size_t i = 0; i < f->st_n; i++)
		f->st_lanes[i] = 0;
	f->lanes_on = 1;
	return 0;
}

static int put_block(const struct rec *r)
{
	struct file *f = &S.f;
	const int64_t *starts = r->data, *ends = r->data + r->n;
	const int32_t *lanes = r->has_lanes ? (const int32_t *)(r->data + 2 * r->n) : NULL;
	if (lanes && !f->lanes_on && lanes_start() < 0)
		return -1;
	if (f->sb_n == f->sb_cap) {
		size_t cap = f->sb_cap ? 2 * f->sb_cap : 1024;
		int32_t *reg = realloc(f->sb_region, cap * sizeof *reg);
		if (reg)
			f->sb_region = reg;
		int64_t *calls = reg ? realloc(f->sb_calls, cap * sizeof *calls) : NULL;
		if (!calls) {
			errno = ENOMEM;
			return -1;
		}
		f->sb_calls = calls;
		f->sb_cap = cap;
	}
	if (f->st_n + r->n > STAGE && stage_flush() < 0)
		return -1;
	if (r->n > STAGE) {
		/* Large: straight from the record, after what is staged. */
		if (write_calls(r->n, starts, ends, lanes) < 0)
			return -1;
	} else {
		memcpy(f->st_start + f->st_n, starts, r->n * sizeof *starts);
		memcpy(f->st_end + f->st_n, ends, r->n * sizeof *ends);
		if (f->lanes_on) {
			if (lanes)
				memcpy(f->st_lanes + f->st_n, lanes, r->n * sizeof *lanes);
			else
				memset(f->st_lanes + f->st_n, 0, r->n * sizeof *lanes);
		}
		f->st_n += r->n;
	}
	f->sb_region[f->sb_n] = r->id;
	f->sb_calls[f->sb_n++] = (int64_t)r->n;
	if (r->n > STAGE)
		return stage_flush();   /* the block's row, with the rows before it */
	return 0;
}

/* Calls handed over open get their ends (all of them written by now). */
static int put_patches(const struct rec *r)
{
	struct file *f = &S.f;
	if (stage_flush() < 0)
		return -1;
	hsize_t *coord = malloc((r->n ? r->n : 1) * sizeof *coord);
	int64_t *ends = malloc((r->n ? r->n : 1) * sizeof *ends);
	size_t k = 0;
	int ok = coord && ends;
	for (size_t i = 0; ok && i < r->n; i++)
		if (r->data[i] >= 0 && (uint64_t)r->data[i] < f->events) {
			coord[k] = (hsize_t)r->data[i];
			ends[k++] = r->data[r->n + i];
		}
	if (ok && k) {
		hsize_t cnt[1] = {k};
		hid_t fs = H5Dget_space(f->col[COL_END]), ms = H5Screate_simple(1, cnt, NULL);
		ok = fs >= 0 && ms >= 0 && H5Sselect_elements(fs, H5S_SELECT_SET, k, coord) >= 0 &&
		     H5Dwrite(f->col[COL_END], H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, ends) >= 0;
		if (ms >= 0)
			H5Sclose(ms);
		if (fs >= 0)
			H5Sclose(fs);
	}
	free(coord);
	free(ends);
	if (!coord || !ends)
		errno = ENOMEM;
	return ok ? 0 : -1;
}

static int put_name(const struct rec *r)
{
	struct file *f = &S.f;
	if (append(f->names, H5T_NATIVE_UCHAR, f->name_bytes, r->n, r->data) < 0)
		return -1;
	f->name_bytes += r->n;
	return 0;
}

/* Everything so far to the disk, flushed_ns = t. */
static int put_flush(int64_t t)
{
	struct file *f = &S.f;
	if (stage_flush() < 0 || H5Dwrite(f->flushed, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &t) < 0 ||
	    H5Fflush(f->file, H5F_SCOPE_LOCAL) < 0)
		return -1;
	return 0;
}

/* Writes one record (the writer's thread, or the caller's once it ended). */
static void put(const struct rec *r)
{
	if (is_failed())
		return;
	if (!S.created && file_create() < 0)
		return;
	int rc = 0;
	sp_h5_lock();
	switch (r->kind) {
	case REC_NAME:
		rc = put_name(r);
		break;
	case REC_BLOCK:
		rc = put_block(r);
		break;
	case REC_PATCHES:
		rc = put_patches(r);
		break;
	case REC_FLUSH:
		rc = put_flush(r->time);
		break;
	}
	sp_h5_unlock();
	if (rc < 0)
		fail("HDF5 cannot write");
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
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);   /* signals are the main thread's */
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
		size_t done = 0;
		while (list) {
			struct rec *r = list;
			list = r->next;
			put(r);
			done += r->bytes;
			free(r);
		}
		pthread_mutex_lock(&S.mu);
		S.queued -= done;
		int end = stop && !S.head;
		pthread_mutex_unlock(&S.mu);
		if (end)
			break;
	}
	return NULL;
}

/* ---- the producer -------------------------------------------------------- */

/* Queues r (or writes it now once the writer ended): 0, or -1 when
 * refused (freed). */
static int hand(struct rec *r)
{
	if (S.direct) {
		put(r);
		free(r);
		return 0;
	}
	pthread_mutex_lock(&S.mu);
	if (S.failed || (r->kind == REC_BLOCK && S.queued + r->bytes > S.c.queue_bytes)) {
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
	int wake = r->kind == REC_FLUSH || S.queued > S.c.queue_bytes / 4;
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

int64_t sp_stream_block(int32_t id, size_t n, const int64_t *starts, const int64_t *ends, const int32_t *lanes)
{
	if (!S.on || n == 0 || n > SIZE_MAX / 32)
		return -1;
	if (!S.direct) {
		/* Refused before anything is copied when it would be. */
		size_t need = sizeof(struct rec) + n * (2 * sizeof(int64_t) + (lanes ? sizeof(int32_t) : 0));
		pthread_mutex_lock(&S.mu);
		int room = !S.failed && S.queued + need <= S.c.queue_bytes;
		pthread_mutex_unlock(&S.mu);
		if (!room) {
			S.refused += n;
			return -1;
		}
	}
	struct rec *r = rec_new(REC_BLOCK, n * (2 * sizeof(int64_t) + (lanes ? sizeof(int32_t) : 0)));
	if (!r) {
		S.refused += n;
		return -1;
	}
	r->id = id;
	r->n = n;
	r->has_lanes = lanes != NULL;
	memcpy(r->data, starts, n * sizeof *starts);
	memcpy(r->data + n, ends, n * sizeof *ends);
	if (lanes)
		memcpy(r->data + 2 * n, lanes, n * sizeof *lanes);
	int64_t at = (int64_t)S.next_index;
	S.handed = 1;
	if (hand(r) != 0) {
		S.refused += n;
		return -1;
	}
	S.next_index += n;
	return at;
}

int sp_stream_patch(int64_t index, int64_t end)
{
	if (!S.on)
		return -1;
	if (S.npatch == S.patch_cap) {
		size_t cap = S.patch_cap ? 2 * S.patch_cap : 256;
		int64_t *a = realloc(S.patch_idx, cap * sizeof *a);
		if (a)
			S.patch_idx = a;
		int64_t *b = a ? realloc(S.patch_end, cap * sizeof *b) : NULL;
		if (!b) {
			S.refused++;
			return -1;
		}
		S.patch_end = b;
		S.patch_cap = cap;
	}
	S.patch_idx[S.npatch] = index;
	S.patch_end[S.npatch++] = end;
	return 0;
}

void sp_stream_flush(int64_t now)
{
	if (!S.on || !S.handed)
		return;
	if (S.npatch) {
		struct rec *r = rec_new(REC_PATCHES, S.npatch * 2 * sizeof(int64_t));
		if (r) {
			r->n = S.npatch;
			memcpy(r->data, S.patch_idx, S.npatch * sizeof(int64_t));
			memcpy(r->data + S.npatch, S.patch_end, S.npatch * sizeof(int64_t));
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

static void release(void)
{
	free(S.target);
	free(S.partial);
	free(S.hostname);
	free(S.patch_idx);
	free(S.patch_end);
	free(S.f.st_start);
	free(S.f.st_end);
	free(S.f.st_lanes);
	free(S.f.sb_region);
	free(S.f.sb_calls);
	for (struct rec *r = S.head, *next; r; r = next) {
		next = r->next;
		free(r);
	}
	pthread_cond_destroy(&S.cv);
	S = (struct stream){.mu = PTHREAD_MUTEX_INITIALIZER, .f = {.file = -1, .fd = -1}};
}

static void before_fork(void)
{
	pthread_mutex_lock(&h5_mutex);
	pthread_mutex_lock(&S.mu);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&S.mu);
	pthread_mutex_unlock(&h5_mutex);
}

static void after_fork_child(void)
{
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
	if (S.created && S.f.fd >= 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0) {
			dup3(null, S.f.fd, O_CLOEXEC);
			close(null);
		}
	}
	S.on = 0;
	S.thread_running = 0;
	S.created = 0;
}

enum sp_err sp_stream_start(const struct sp_stream_config *c, struct sp_error *err)
{
	static int atfork;
	if (S.on)
		return sp_error_set(err, SP_EINVAL, "a stream is already running");
	if (!c || !c->path || !c->path[0] || c->interval_ns <= 0 || c->queue_bytes == 0)
		return sp_error_set(err, SP_EINVAL, "sp_stream_start: bad configuration");
	S.c = *c;
	char *target = realpath(c->path, NULL);
	S.target = target ? target : strdup(c->path);
	S.partial = S.target ? sp_stream_partial_path(S.target) : NULL;
	S.hostname = c->hostname ? strdup(c->hostname) : NULL;
	S.c.path = S.target;
	S.c.hostname = S.hostname;
	if (!S.target || !S.partial || (c->hostname && !S.hostname)) {
		release();
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	struct stat st;
	if (lstat(S.partial, &st) == 0 && !S_ISREG(st.st_mode)) {
		enum sp_err rc = sp_error_set(err, SP_EINVAL, "'%s' exists and is not a regular file", S.partial);
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
	S.on = 1;
	if (pthread_create(&S.thread, NULL, writer_main, NULL) != 0) {
		int e = errno;
		release();
		return sp_error_set(err, SP_EIO, "cannot start the writer thread: %s", strerror(e));
	}
	S.thread_running = 1;
	return SP_OK;
}

/* Stops the writer thread after it wrote the queue; later records are
 * written by the caller. */
void sp_stream_quiesce(void)
{
	if (!S.thread_running)
		return;
	pthread_mutex_lock(&S.mu);
	S.stop = 1;
	pthread_mutex_unlock(&S.mu);
	pthread_cond_signal(&S.cv);
	pthread_join(S.thread, NULL);
	S.thread_running = 0;
	S.direct = 1;
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
		close_layout();
		H5Fclose(S.f.file);
		sp_h5_unlock();
	}
	release();
}

enum sp_err sp_stream_finish(const struct sp_profile *p, const char *path, struct sp_error *err)
{
	enum sp_err rc = SP_OK;
	if (!S.on)
		return sp_error_set(err, SP_EINVAL, "no stream is running");
	sp_stream_flush(sp_clock_ns());
	sp_stream_quiesce();
	if (!S.created || sp_stream_failed(err)) {
		if (!sp_stream_failed(err))
			sp_error_set(err, SP_EIO, "cannot finish '%s': nothing was streamed", S.target);
		rc = SP_EIO;
		if (S.created) {
			sp_h5_lock();
			close_layout();
			H5Fclose(S.f.file);
			sp_h5_unlock();
		}
		goto out;
	}
	sp_h5_lock();
	close_layout();
	herr_t closed = H5Fclose(S.f.file);
	S.f.file = -1;
	S.created = 0;
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), file = -1;
	if (closed >= 0 && fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0)
		file = H5Fopen(S.partial, H5F_ACC_RDWR, fapl);
	if (fapl >= 0)
		H5Pclose(fapl);
	if (file < 0)
		rc = sp_error_set(err, SP_EIO, "cannot finish '%s': HDF5 cannot reopen '%s'", S.target, S.partial);
	else {
		char *rp = path ? realpath(path, NULL) : NULL;
		rc = sp_h5w_finish_stream(file, S.partial, rp ? rp : path ? path : S.target, p, err);
		free(rp);
	}
	sp_h5_unlock();
out:
	release();
	return rc;
}
