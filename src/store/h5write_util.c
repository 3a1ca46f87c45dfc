/* h5write_util.c - the bottom of the HDF5 writer (sp_h5write.h): its
 * one-line failures, abandoning a file after a failed write, scalar
 * attributes, string types and columns (whole or a span at a time). The
 * other h5write*.c files write through these and not through each other. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_h5write.h"

_Static_assert(sizeof(hid_t) == sizeof(int64_t) && (hid_t)-1 < 0, "sp_h5_fapl returns an hid_t as int64_t");

int64_t sp_h5_fapl(void)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#ifdef SP_H5_FILE_LOCKING
	hbool_t use = 1, ignore = 0;
	if (fapl >= 0 && (H5Pget_file_locking(fapl, &use, &ignore) < 0 || H5Pset_file_locking(fapl, use, 1) < 0)) {
		H5Pclose(fapl);
		fapl = H5I_INVALID_HID;
	}
#endif
	return fapl;
}

int sp_h5w_small_caches(hid_t fapl)
{
	H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
	if (H5Pget_mdc_config(fapl, &mdc) < 0)
		return -1;
	mdc.set_initial_size = 1;
	mdc.initial_size = (size_t)1 << 20;
	mdc.min_size = (size_t)1 << 20;
	mdc.max_size = (size_t)2 << 20;
	return H5Pset_mdc_config(fapl, &mdc) < 0 ? -1 : 0;
}

/* Abandons a file after a failure, before any more of it is closed. HDF5
 * writes cached data and metadata when a dataset or the file is closed;
 * when that write fails (a full disk), HDF5 1.10 frees the object all the
 * same but keeps its id, and its atexit handler later closes that id again:
 * a use after free, SIGSEGV at exit (sp_h5_no_exit_handler leaves that
 * handler out where it can). So the file's descriptor is pointed at an
 * anonymous memory file (at /dev/null under a finite RLIMIT_FSIZE, which
 * bounds a memory file too): every later write and close then succeeds,
 * and nothing more reaches the disk. */
int sp_h5_nowhere(void)
{
	struct rlimit lim;
	return getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur == RLIM_INFINITY
		? memfd_create("scope-profiler-abandoned", MFD_CLOEXEC)
		: open("/dev/null", O_RDWR | O_CLOEXEC);
}

int sp_h5_detach(hid_t file)
{
	int *fd = NULL;
	int e = errno, ok = 0;
	if (file >= 0 && H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0) {
		int m = sp_h5_nowhere();
		ok = m >= 0 && dup3(m, *fd, O_CLOEXEC) >= 0;
		if (m >= 0)
			close(m);
	}
	errno = e;
	return ok ? 0 : -1;
}

/* The writer's temporary file, abandoned (above) and then removed. */
void sp_h5w_detach(struct sp_h5_writer *w)
{
	int *fd = NULL;
	int e = errno;
	if (w->detached || w->file < 0)
		return;
	if (sp_h5_detach(w->file) == 0) {
		w->detached = 1;
	} else if (H5Fget_vfd_handle(w->file, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0) {
		/* Nowhere to point it: give the disk space back at least. */
		int ignored = ftruncate(*fd, 0);
		(void)ignored;
	}
	errno = e;
}

/* Fills w->failure with "cannot write '<path>': <what>", adding the OS's reason
 * when errno holds one that explains an HDF5 failure; the file is abandoned. */
enum sp_err sp_h5w_fail(struct sp_h5_writer *w, enum sp_err code, const char *fmt, ...)
{
	int e = errno;
	char what[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	sp_h5w_detach(w);
	if (code == SP_EIO && (e == ENOSPC || e == EDQUOT || e == EIO || e == EFBIG || e == EROFS))
		return sp_error_set(&w->failure, code, "cannot write '%s': %s: %s", w->path, what,
				    strerror(e));
	return sp_error_set(&w->failure, code, "cannot write '%s': %s", w->path, what);
}

/* Attribute name of loc over space (closed here) from buf. 0 or -1. */
static int attr_over(hid_t loc, const char *name, hid_t ftype, hid_t mtype, hid_t space, const void *buf)
{
	hid_t a = H5I_INVALID_HID;
	int ok = 0;
	if (space < 0)
		return -1;
	a = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
	if (a >= 0 && H5Awrite(a, mtype, buf) >= 0)
		ok = 1;
	if (a >= 0 && H5Aclose(a) < 0)
		ok = 0;
	H5Sclose(space);
	return ok ? 0 : -1;
}

int sp_h5w_attr(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *buf)
{
	return attr_over(loc, name, ftype, mtype, H5Screate(H5S_SCALAR), buf);
}

int sp_h5w_attr_1d(hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n, const void *buf)
{
	hsize_t dims[1] = {(hsize_t)n};
	return attr_over(loc, name, ftype, mtype, H5Screate_simple(1, dims, NULL), buf);
}

int sp_h5w_attr_i64(hid_t loc, const char *name, int64_t v)
{
	return sp_h5w_attr(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

int sp_h5w_attr_f64(hid_t loc, const char *name, double v)
{
	return sp_h5w_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

/* A fixed-length, null-terminated UTF-8 string type of size bytes, or -1. */
hid_t sp_h5w_str_type(size_t size)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t >= 0 && (H5Tset_size(t, size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
		       H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
		H5Tclose(t);
		return -1;
	}
	return t;
}

int sp_h5w_attr_str(hid_t loc, const char *name, const char *value)
{
	hid_t t = sp_h5w_str_type(strlen(value) + 1);
	if (t < 0)
		return -1;
	int rc = sp_h5w_attr(loc, name, t, t, value);
	H5Tclose(t);
	return rc;
}

/* A dataset creation property list for a column of n elements: w->dcpl, or
 * (level > 0) a new chunked one with shuffle then deflate at that level,
 * which the caller closes. */
static hid_t column_dcpl(struct sp_h5_writer *w, size_t n, int level)
{
	if (level <= 0 || n < SP_H5W_COMPRESS_MIN)
		return w->dcpl;
	hsize_t chunk[1] = {(hsize_t)(n < SP_H5W_CHUNK_MAX ? n : SP_H5W_CHUNK_MAX)};
	hid_t d = H5Pcreate(H5P_DATASET_CREATE);
	if (d < 0)
		return -1;
	if (H5Pset_obj_track_times(d, 0) < 0 || H5Pset_chunk(d, 1, chunk) < 0 ||
	    H5Pset_fill_time(d, H5D_FILL_TIME_NEVER) < 0 || H5Pset_shuffle(d) < 0 ||
	    H5Pset_deflate(d, (unsigned)level) < 0
#if H5_VERSION_GE(1, 10, 5)
	    || H5Pset_dset_no_attrs_hint(d, 1) < 0
#endif
	) {
		H5Pclose(d);
		return -1;
	}
	return d;
}

hid_t sp_h5w_dataset(struct sp_h5_writer *w, hid_t loc, const char *name, hid_t ftype, size_t n,
		     int level)
{
	hsize_t dims[1] = {(hsize_t)n};
	hid_t space = H5Screate_simple(1, dims, NULL), ds = H5I_INVALID_HID, dcpl;
	if (space < 0)
		return -1;
	if ((dcpl = column_dcpl(w, n, level)) >= 0)
		ds = H5Dcreate2(loc, name, ftype, space, w->lcpl, dcpl, H5P_DEFAULT);
	if (dcpl >= 0 && dcpl != w->dcpl)
		H5Pclose(dcpl);
	H5Sclose(space);
	return ds;
}

/* After a failed write: the file is abandoned, errno kept for the message. */
static int write_failed(struct sp_h5_writer *w)
{
	int e = errno;
	sp_h5w_detach(w);
	errno = e;
	return -1;
}

int sp_h5w_span(struct sp_h5_writer *w, hid_t ds, hid_t mtype, uint64_t first, size_t n,
		const void *buf)
{
	hsize_t off[1] = {(hsize_t)first}, cnt[1] = {(hsize_t)n};
	hid_t fs, ms = H5I_INVALID_HID;
	int ok = 0;
	if (n == 0)
		return 0;
	if ((fs = H5Dget_space(ds)) >= 0 && (ms = H5Screate_simple(1, cnt, NULL)) >= 0 &&
	    H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
	    H5Dwrite(ds, mtype, ms, fs, H5P_DEFAULT, buf) >= 0)
		ok = 1;
	if (!ok)
		write_failed(w);
	if (ms >= 0)
		H5Sclose(ms);
	if (fs >= 0)
		H5Sclose(fs);
	return ok ? 0 : -1;
}

/* A compressed column's chunks wait in the chunk cache: flushed here, so
 * that a failure to write them is seen while the dataset is still open,
 * never first by H5Dclose (see sp_h5w_detach). Contiguous columns are
 * written by H5Dwrite itself (no sieve buffer, make_plists). */
int sp_h5w_dataset_close(struct sp_h5_writer *w, hid_t ds)
{
	int ok = 1;
	hid_t dcpl = H5Dget_create_plist(ds);
	if (dcpl < 0 || (H5Pget_layout(dcpl) == H5D_CHUNKED && H5Dflush(ds) < 0))
		ok = write_failed(w) == 0;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (H5Dclose(ds) < 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* One H5Dwrite for the whole column. */
int sp_h5w_column_z(struct sp_h5_writer *w, hid_t loc, const char *name, hid_t ftype, hid_t mtype,
		    size_t n, const void *buf, int level)
{
	hid_t ds = sp_h5w_dataset(w, loc, name, ftype, n, level);
	if (ds < 0)
		return write_failed(w);
	if (n > 0 && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		write_failed(w);
		H5Dclose(ds);
		return -1;
	}
	return sp_h5w_dataset_close(w, ds);
}

/* A contiguous column (call trees, line tables). */
int sp_h5w_column(struct sp_h5_writer *w, hid_t loc, const char *name, hid_t ftype,
			hid_t mtype, size_t n, const void *buf)
{
	return sp_h5w_column_z(w, loc, name, ftype, mtype, n, buf, 0);
}
