/* stream_file.c - the file a stream writes (sp_stream_file.h): OUT.partial,
 * format version 3, in HDF5's single-writer / multiple-reader mode. Every
 * object is created before SWMR writing starts (none may be after); then
 * calls are appended through a stage (small blocks gathered into one write
 * per column), events first and the block rows that describe them after,
 * so that a reader cutting to the consistent prefix (see the format's man
 * page) never sees a block without its calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_h5write.h"
#include "sp_stream_file.h"

/* Calls gathered before a write. */
#define STAGE ((size_t)1 << 16)
/* The event columns' chunk, an eighth of a stage: a chunk takes its whole
 * size on disk from its first call, so a process of a few calls (a child
 * of run --subprocesses, an MPI rank) leaves 64 KiB a column, not 512. */
#define EVENT_CHUNK ((hsize_t)STAGE / 8)
/* The chunk of the small columns (blocks, names). */
#define SMALL_CHUNK ((hsize_t)1024)
/* The names' chunk in a file made for a known size (sp_stream_size_hint). */
#define NAME_CHUNK ((hsize_t)256)

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

/* Event column c's dataset name. */
static const char *column_name(int c)
{
	static const char *const fixed[SP_SCOL_VALUES] = {"start_times", "end_times", "lanes"};
	return c < SP_SCOL_VALUES ? fixed[c] : sp_value_kind_name(c - SP_SCOL_VALUES + 1);
}

/* Event column c's element: its memory type and size. */
static hid_t column_type(int c)
{
	return c == SP_SCOL_LANES ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64;
}

static size_t column_size(int c)
{
	return c == SP_SCOL_LANES ? sizeof(int32_t) : sizeof(int64_t);
}

/* The partial file's groups and empty columns, before SWMR writing starts
 * (no object may be created after). 0, or -1. */
static int make_layout(struct sp_sfile *f, hid_t file)
{
	char name[32];
	int ok = 1;
	snprintf(name, sizeof name, "rank%d", f->rank);
	hid_t g = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t ev = g < 0 ? -1 : H5Gcreate2(g, "events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hid_t st = g < 0 ? -1 : H5Gcreate2(g, "stream", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (ev < 0 || st < 0 || sp_h5w_attr_str(file, "format", "scope-profiler") < 0 ||
	    sp_h5w_attr(file, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT32, &(int32_t){3}) < 0 ||
	    sp_h5w_attr_i64(g, "run_start_time", f->run_start_ns) < 0 || sp_h5w_attr_i64(g, "pid", f->pid) < 0 ||
	    (f->parent_pid > 0 && sp_h5w_attr_i64(g, "parent_pid", f->parent_pid) < 0) ||
	    sp_h5w_attr_i64(g, "clock_offset_ns", f->clock_offset_ns) < 0 ||
	    (f->mpi_size > 0 && (sp_h5w_attr_i64(g, "mpi_size", f->mpi_size) < 0 ||
				 sp_h5w_attr_i64(g, "mpi_job", f->mpi_job) < 0)) ||
	    (f->hostname && sp_h5w_attr_str(g, "hostname", f->hostname) < 0) ||
	    (f->children_dir && sp_h5w_attr_str(g, "children_dir", f->children_dir) < 0))
		ok = 0;
	enum { NIDS = SP_SCOLS + 3 };
	hid_t ids[NIDS];
	for (int i = 0; i < NIDS; i++)
		ids[i] = -1;
	hsize_t events = f->event_chunk && f->event_chunk < EVENT_CHUNK ? f->event_chunk : EVENT_CHUNK;
	hsize_t blocks = f->block_chunk && f->block_chunk < SMALL_CHUNK ? f->block_chunk : SMALL_CHUNK;
	if (ok) {
		for (int c = 0; c < SP_SCOLS; c++)
			ids[c] = column_new(ev, column_name(c), c == SP_SCOL_LANES ? H5T_STD_I32LE : H5T_STD_I64LE,
					    events, f->compression);
		ids[SP_SCOLS] = column_new(ev, "block_region", H5T_STD_I32LE, blocks, 0);
		ids[SP_SCOLS + 1] = column_new(ev, "block_calls", H5T_STD_I64LE, blocks, 0);
		ids[SP_SCOLS + 2] = column_new(st, "names", H5T_STD_U8LE, f->block_chunk ? NAME_CHUNK : SMALL_CHUNK, 0);
		for (int i = 0; i < NIDS; i++)
			ok &= ids[i] >= 0;
	}
	hsize_t one[1] = {1};
	hid_t sp = H5Screate_simple(1, one, NULL);
	hid_t fl = ok && sp >= 0 ? H5Dcreate2(st, "flushed_ns", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT,
					      H5P_DEFAULT) : -1;
	if (fl < 0 || H5Dwrite(fl, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &f->run_start_ns) < 0)
		ok = 0;
	for (int i = 0; i < NIDS; i++)
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

/* Opens the columns of the file's layout into f. 0, or -1. */
static int open_layout(struct sp_sfile *f)
{
	char path[96];
	hid_t *ids[] = {&f->block_region, &f->block_calls, &f->names, &f->flushed};
	const char *names[] = {"events/block_region", "events/block_calls", "stream/names", "stream/flushed_ns"};
	for (int c = 0; c < SP_SCOLS; c++) {
		snprintf(path, sizeof path, "rank%d/events/%s", f->rank, column_name(c));
		if ((f->col[c] = H5Dopen2(f->file, path, H5P_DEFAULT)) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		snprintf(path, sizeof path, "rank%d/%s", f->rank, names[i]);
		if ((*ids[i] = H5Dopen2(f->file, path, H5P_DEFAULT)) < 0)
			return -1;
	}
	return 0;
}

void sp_sfile_close_layout(struct sp_sfile *f)
{
	hid_t *ids[] = {&f->block_region, &f->block_calls, &f->names, &f->flushed};
	for (int c = 0; c < SP_SCOLS; c++) {
		if (f->col[c] > 0)
			H5Dclose(f->col[c]);
		f->col[c] = -1;
	}
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		if (*ids[i] > 0)
			H5Dclose(*ids[i]);
		*ids[i] = -1;
	}
	free(f->st_start);
	free(f->st_end);
	free(f->st_lanes);
	for (int k = 0; k < SP_VALUE_KINDS; k++) {
		free(f->st_vals[k]);
		f->st_vals[k] = NULL;
	}
	free(f->sb_region);
	free(f->sb_calls);
	f->st_start = f->st_end = NULL;
	f->st_lanes = f->sb_region = NULL;
	f->sb_calls = NULL;
	f->st_n = f->sb_n = f->sb_cap = 0;
}

/* Whether a lock failed with e because the file system has none. */
static int no_locks(int e)
{
	return e == ENOSYS || e == EOPNOTSUPP || e == ENOLCK;
}

/* Whether fd is a descriptor of the file: not closed by the script, nor
 * its number taken by another file since. */
static int is_file(const struct sp_sfile *f, int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

/* The file opened again by path (O_RDWR), or -1: gone, or another file. */
static int reopen(const struct sp_sfile *f)
{
	int fd = open(f->partial, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && !is_file(f, fd)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void sp_sfile_unlock(struct sp_sfile *f)
{
	if (f->locked && is_file(f, f->lock_fd))
		close(f->lock_fd);
	f->locked = 0;
	f->lock_fd = -1;
}

int sp_sfile_hold(struct sp_sfile *f)
{
	if (f->file < 0 || !f->vfd)
		return 0;
	/* Both are looked at before either is opened again: a new descriptor
	 * may take the other one's old number. */
	int lock_ok = !f->locked || is_file(f, f->lock_fd), h5_ok = is_file(f, *f->vfd);
	if (lock_ok && h5_ok)
		return 0;
	const char *why = NULL;
	if (!lock_ok) {
		struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		int fd = reopen(f);
		if (fd < 0) {
			why = "the file was removed or replaced while the run streamed into it";
		} else if (fcntl(fd, F_OFD_SETLK, &lk) != 0 && !no_locks(errno)) {
			close(fd);
			fd = -1;
			why = "another run took the file while the script had closed the stream's descriptors";
		}
		f->lock_fd = fd;
		f->locked = fd >= 0;
	}
	if (!why && !h5_ok) {
		int fd = reopen(f);
		if (fd >= 0) {
			*f->vfd = fd;
			return 0;
		}
		why = "the file was removed or replaced while the run streamed into it";
	}
	if (!why)
		return 0;
	/* HDF5 writes nothing more to any file: its descriptor, where still
	 * the file's, or a new one in its place, is a file of nowhere (its
	 * close and its exit handler then succeed), for good. */
	if (h5_ok) {
		sp_h5_detach(f->file);
	} else {
		int fd = sp_h5_nowhere();
		*f->vfd = fd;
	}
	f->vfd = NULL;
	f->why = why;
	return -1;
}

void sp_sfile_forget_fd(struct sp_sfile *f)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0 || !f->vfd || *f->vfd < 0) {
		if (null >= 0)
			close(null);
		return;
	}
	if (is_file(f, *f->vfd)) {
		dup3(null, *f->vfd, O_CLOEXEC);
		close(null);
	} else {
		*f->vfd = null;
	}
}

int sp_sfile_live(const char *path)
{
	/* Not blocking: a FIFO so named has no writer. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat sb;
	if (fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		close(fd);
		return 0;   /* no run streams into it; its readers say what it is */
	}
	struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int rc = fcntl(fd, F_OFD_GETLK, &lk);
	int e = errno;
	close(fd);
	errno = e;
	return rc != 0 ? (no_locks(e) ? 2 : -1) : lk.l_type != F_UNLCK;
}

int sp_sfile_unmark(const char *path)
{
	hbool_t clear = 1;
	hid_t fapl = sp_h5_fapl(), file = -1;
	/* HDF5's own property for it (h5clear's); not in every version. */
	if (fapl >= 0 && H5Pexist(fapl, "clear_status_flags") > 0 &&
	    H5Pset(fapl, "clear_status_flags", &clear) >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) >= 0)
		file = H5Fopen(path, H5F_ACC_RDWR, fapl);
	if (fapl >= 0)
		H5Pclose(fapl);
	return file >= 0 && H5Fclose(file) >= 0 ? 0 : -1;
}

/* Creates OUT.partial (replacing a dead run's), its layout, and starts
 * SWMR writing. 0, or -1 (failed). */
int sp_sfile_create(struct sp_sfile *f)
{
	int fd = open(f->partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0) {
		f->why = NULL;
		return -1;
	}
	/* A live run writing the same profile holds our lock on it, for as
	 * long as the file is its own (HDF5's own lock goes once SWMR writing
	 * starts); one still creating it, HDF5's. The lock is an open file
	 * description's (OFD), apart from HDF5's flock. A file system without
	 * locks (Lustre without -o flock) has neither: the file is written
	 * all the same, unguarded. */
	struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if ((fcntl(fd, F_OFD_SETLK, &lk) != 0 && !no_locks(errno)) ||
	    (flock(fd, LOCK_EX | LOCK_NB) != 0 && !no_locks(errno))) {
		close(fd);
		errno = 0;
		f->why = "another process is writing it";
		return -1;
	}
	if (ftruncate(fd, 0) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		f->why = NULL;
		return -1;
	}
	flock(fd, LOCK_UN);
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		f->why = NULL;
		return -1;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->lock_fd = fd;
	f->locked = 1;
	hid_t fapl = sp_h5_fapl();
	char by_fd[64];
	snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", fd);
	errno = 0;
	/* Uncompressed columns are written straight from the stage, without a
	 * chunk cache (it held a chunk, 512 KiB, per column); compressed ones
	 * keep theirs: a chunk filled by several flushes is deflated once. */
	if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0 && sp_h5w_small_caches(fapl) == 0 &&
	    (f->compression > 0 || H5Pset_cache(fapl, 0, 521, 0, 0.75) >= 0))
		f->file = H5Fcreate(access(by_fd, F_OK) == 0 ? by_fd : f->partial, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	if (f->file < 0) {
		if (fapl >= 0)
			H5Pclose(fapl);
		f->why = "HDF5 cannot create the file";
		return -1;
	}
	int *vfd = NULL;
	if (make_layout(f, f->file) < 0 || H5Fstart_swmr_write(f->file) < 0 || open_layout(f) < 0 ||
	    H5Fget_vfd_handle(f->file, fapl, (void **)&vfd) < 0 || !vfd) {
		H5Pclose(fapl);
		f->why = "cannot set up the file";
		return -1;
	}
	H5Pclose(fapl);
	f->vfd = vfd;
	f->st_start = malloc(STAGE * sizeof *f->st_start);
	f->st_end = malloc(STAGE * sizeof *f->st_end);
	f->st_lanes = malloc(STAGE * sizeof *f->st_lanes);
	if (!f->st_start || !f->st_end || !f->st_lanes) {
		errno = ENOMEM;
		f->why = "out of memory";
		return -1;
	}
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

/* Appends n zeros of column c's type to it, which holds `at` now. 0, or -1. */
static int append_zeros(hid_t ds, int c, uint64_t at, size_t n)
{
	static const int64_t zeros[4096];
	size_t each = sizeof zeros / column_size(c);
	for (size_t done = 0; done < n;) {
		size_t k = n - done < each ? n - done : each;
		if (append(ds, column_type(c), at + done, k, zeros) < 0)
			return -1;
		done += k;
	}
	return 0;
}

/* Writes n calls to the event columns: cols[c] the calls' column c, NULL
 * for zeros in a column that is on (columns not on are not written). 0,
 * or -1. */
static int write_calls(struct sp_sfile *f, size_t n, const void *const cols[SP_SCOLS])
{
	for (int c = 0; c < SP_SCOLS; c++) {
		if (c > SP_SCOL_END && !f->on[c])
			continue;
		if (cols[c] ? append(f->col[c], column_type(c), f->events, n, cols[c]) < 0
			    : append_zeros(f->col[c], c, f->events, n) < 0)
			return -1;
	}
	f->events += n;
	return 0;
}

/* The stage's columns (the value columns that are not on have no array). */
static void stage_cols(struct sp_sfile *f, const void *cols[SP_SCOLS])
{
	cols[SP_SCOL_START] = f->st_start;
	cols[SP_SCOL_END] = f->st_end;
	cols[SP_SCOL_LANES] = f->st_lanes;
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		cols[SP_SCOL_VALUES + k - 1] = f->st_vals[k];
}

/* Writes the stage (events first, then the blocks that describe them). */
static int stage_flush(struct sp_sfile *f)
{
	const void *cols[SP_SCOLS];
	stage_cols(f, cols);
	if (f->st_n && write_calls(f, f->st_n, cols) < 0)
		return -1;
	f->st_n = 0;
	if (f->sb_n && (append(f->block_region, H5T_NATIVE_INT32, f->blocks, f->sb_n, f->sb_region) < 0 ||
			append(f->block_calls, H5T_NATIVE_INT64, f->blocks, f->sb_n, f->sb_calls) < 0))
		return -1;
	f->blocks += f->sb_n;
	f->sb_n = 0;
	return 0;
}

/* From now on column c (lanes or values) is written: the calls so far get
 * 0 (lane 0, value 0). 0, or -1. */
static int column_on(struct sp_sfile *f, int c)
{
	if (c >= SP_SCOL_VALUES) {
		int k = c - SP_SCOL_VALUES + 1;
		if (!(f->st_vals[k] = malloc(STAGE * sizeof *f->st_vals[k]))) {
			errno = ENOMEM;
			return -1;
		}
	}
	if (append_zeros(f->col[c], c, 0, (size_t)f->events) < 0)
		return -1;
	const void *cols[SP_SCOLS];
	stage_cols(f, cols);
	memset((void *)cols[c], 0, f->st_n * column_size(c));
	f->on[c] = 1;
	return 0;
}

int sp_sfile_block(struct sp_sfile *f, int32_t id, size_t n, const int64_t *starts, const int64_t *ends,
		   const int32_t *lanes, int kind, const int64_t *values)
{
	const void *cols[SP_SCOLS] = {starts, ends, lanes};
	if (values && (kind <= 0 || kind >= SP_VALUE_KINDS)) {
		errno = EINVAL;
		return -1;
	}
	if (values)
		cols[SP_SCOL_VALUES + kind - 1] = values;
	for (int c = SP_SCOL_LANES; c < SP_SCOLS; c++)
		if (cols[c] && !f->on[c] && column_on(f, c) < 0)
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
	if (f->st_n + n > STAGE && stage_flush(f) < 0)
		return -1;
	if (n > STAGE) {
		/* Large: straight from the record, after what is staged. */
		if (write_calls(f, n, cols) < 0)
			return -1;
	} else {
		const void *st[SP_SCOLS];
		stage_cols(f, st);
		for (int c = 0; c < SP_SCOLS; c++) {
			if (c > SP_SCOL_END && !f->on[c])
				continue;
			char *to = (char *)st[c] + f->st_n * column_size(c);
			if (cols[c])
				memcpy(to, cols[c], n * column_size(c));
			else
				memset(to, 0, n * column_size(c));
		}
		f->st_n += n;
	}
	f->sb_region[f->sb_n] = id;
	f->sb_calls[f->sb_n++] = (int64_t)n;
	if (n > STAGE)
		return stage_flush(f);   /* the block's row, with the rows before it */
	return 0;
}

/* Writes v[i] of the elements coord[0 .. k) of column ds. 0, or -1. */
static int write_points(hid_t ds, size_t k, const hsize_t *coord, const int64_t *v)
{
	hsize_t cnt[1] = {k};
	hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, cnt, NULL);
	int ok = fs >= 0 && ms >= 0 && H5Sselect_elements(fs, H5S_SELECT_SET, k, coord) >= 0 &&
		 H5Dwrite(ds, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, v) >= 0;
	if (ms >= 0)
		H5Sclose(ms);
	if (fs >= 0)
		H5Sclose(fs);
	return ok ? 0 : -1;
}

/* Calls handed over open get their ends, and their values (all of them
 * written by now). */
int sp_sfile_patches(struct sp_sfile *f, size_t n, const int64_t *index, const int64_t *end, const int64_t *kind,
		     const int64_t *value)
{
	if (stage_flush(f) < 0)
		return -1;
	hsize_t *coord = malloc((n ? n : 1) * sizeof *coord);
	int64_t *v = malloc((n ? n : 1) * sizeof *v);
	int ok = coord && v;
	/* Pass 0 the ends; pass k the values of kind k. */
	for (int pass = 0; ok && pass < SP_VALUE_KINDS; pass++) {
		int c = pass ? SP_SCOL_VALUES + pass - 1 : SP_SCOL_END;
		size_t k = 0;
		if (pass && !f->on[c])
			continue;
		for (size_t i = 0; i < n; i++)
			if (index[i] >= 0 && (uint64_t)index[i] < f->events && (!pass || kind[i] == pass)) {
				coord[k] = (hsize_t)index[i];
				v[k++] = pass ? value[i] : end[i];
			}
		if (k)
			ok = write_points(f->col[c], k, coord, v) == 0;
	}
	free(coord);
	free(v);
	if (!coord || !v)
		errno = ENOMEM;
	return ok ? 0 : -1;
}

int sp_sfile_name(struct sp_sfile *f, const char *name, size_t n)
{	
	if (append(f->names, H5T_NATIVE_UCHAR, f->name_bytes, n, name) < 0)
		return -1;
	f->name_bytes += n;
	return 0;
}

/* Everything so far to the disk, flushed_ns = t. */
int sp_sfile_flush(struct sp_sfile *f, int64_t t)
{	
	if (stage_flush(f) < 0 || H5Dwrite(f->flushed, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &t) < 0 ||
	    H5Fflush(f->file, H5F_SCOPE_LOCAL) < 0)
		return -1;
	return 0;
}

