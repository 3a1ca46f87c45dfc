/* h5write.c - writing a profile as an HDF5 file, atomically: whole
 * (sp_h5_write) or one rank at a time (sp_h5_writer_*). This file holds the
 * writer, the root, metadata and rank groups and the line tables; a rank's
 * regions are h5write_table.c's (format version 2) or h5write_v1.c's, its
 * LIKWID counters h5write_likwid.c's; every piece writes through the
 * primitives of h5write_util.c. Where the file goes (symlinks, devices, the
 * temporary file and the rename) is outpath.c's. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_clock.h"
#include "sp_h5write.h"
#include "sp_outpath.h"
#include "sp_h5write_table.h"
#include "sp_h5write_v1.h"
#include "sp_h5write_likwid.h"

/* Checks a line table before anything of it is written; the reader refuses
 * what this lets through. */
static enum sp_err check_line_table(struct sp_h5_writer *w, const struct sp_rank *rk, size_t k,
				    const struct sp_line_table *t)
{
	if (!t->function || !t->region || !t->filename)
		return sp_h5w_fail(w, SP_EINVAL, "rank %d line table %zu: no function, region or filename",
			     rk->rank, k);
	if (t->first_line < 0 || (t->n && (uint64_t)t->n - 1 > (uint64_t)(INT32_MAX - t->first_line)))
		return sp_h5w_fail(w, SP_EINVAL, "rank %d line table %zu: line numbers out of range", rk->rank, k);
	if (t->n && (!t->hits || !t->time_ns || !t->source))
		return sp_h5w_fail(w, SP_EINVAL, "rank %d line table %zu: columns missing", rk->rank, k);
	for (size_t i = 0; i < t->n; i++)
		if (t->hits[i] < 0 || t->time_ns[i] < 0)
			return sp_h5w_fail(w, SP_EINVAL, "rank %d line table %zu: negative hits or time at line %zu",
				     rk->rank, k, i);
	return SP_OK;
}

/* One line table as group lines/<k>: attributes function, region, filename,
 * first_line; columns hits, time_ns, source (fixed-length UTF-8, as wide as
 * the longest line; a NULL line is written as ""). */
static enum sp_err write_line_table(struct sp_h5_writer *w, hid_t lines, const struct sp_rank *rk,
				    size_t k, const struct sp_line_table *t)
{
	enum sp_err rc = check_line_table(w, rk, k, t);
	hid_t g = H5I_INVALID_HID, stype = H5I_INVALID_HID;
	char name[32], *text = NULL;
	size_t width = 1;

	if (rc != SP_OK)
		return rc;
	for (size_t i = 0; i < t->n; i++) {
		size_t len = t->source[i] ? strlen(t->source[i]) + 1 : 1;
		width = len > width ? len : width;
	}
	if ((t->n && t->n > SIZE_MAX / width) || !(text = calloc(t->n ? t->n : 1, width)))
		return sp_h5w_fail(w, SP_ENOMEM, "out of memory");
	for (size_t i = 0; i < t->n; i++)
		if (t->source[i])
			memcpy(text + i * width, t->source[i], strlen(t->source[i]));
	snprintf(name, sizeof name, "%zu", k);
	g = H5Gcreate2(lines, name, w->lcpl, w->gcpl, H5P_DEFAULT);
	if (g < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot create group rank%d/lines/%s", rk->rank, name);
		goto out;
	}
	if (sp_h5w_attr_str(g, "function", t->function) < 0 || sp_h5w_attr_str(g, "region", t->region) < 0 ||
	    sp_h5w_attr_str(g, "filename", t->filename) < 0 ||
	    sp_h5w_attr(g, "first_line", H5T_STD_I32LE, H5T_NATIVE_INT32, &t->first_line) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot write attributes of rank%d/lines/%s", rk->rank, name);
		goto out;
	}
	if ((stype = sp_h5w_str_type(width)) < 0 ||
	    sp_h5w_column(w, g, "hits", H5T_STD_I64LE, H5T_NATIVE_INT64, t->n, t->hits) < 0 ||
	    sp_h5w_column(w, g, "time_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, t->n, t->time_ns) < 0 ||
	    sp_h5w_column(w, g, "source", stype, stype, t->n, text) < 0)
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the columns of rank%d/lines/%s", rk->rank, name);
out:
	if (stype >= 0)
		H5Tclose(stype);
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/lines/%s", rk->rank, name);
	free(text);
	return rc;
}

/* The rank's line tables as lines/0, lines/1, ... in order (creation order
 * tracked, so readers list them as written). */
static enum sp_err write_lines(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk)
{
	enum sp_err rc = SP_OK;
	hid_t g;

	if (!rk->lines)
		return sp_h5w_fail(w, SP_EINVAL, "rank %d: %zu line tables but no array", rk->rank, rk->nlines);
	if ((g = H5Gcreate2(rank_g, "lines", w->lcpl, w->gcpl_regions, H5P_DEFAULT)) < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot create group rank%d/lines", rk->rank);
	for (size_t k = 0; k < rk->nlines && rc == SP_OK; k++)
		rc = write_line_table(w, g, rk, k, &rk->lines[k]);
	if (H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/lines", rk->rank);
	return rc;
}

static enum sp_err write_rank(struct sp_h5_writer *w, hid_t file, const struct sp_rank *rk)
{
	enum sp_err rc = SP_OK;
	hid_t g = H5I_INVALID_HID;
	char name[32];

	if (rk->rank < 0)
		return sp_h5w_fail(w, SP_EINVAL, "negative rank number %d", rk->rank);
	snprintf(name, sizeof name, "rank%d", rk->rank);
	g = H5Gcreate2(file, name, w->lcpl, w->gcpl, H5P_DEFAULT);
	if (g < 0) {
		if (H5Lexists(file, name, H5P_DEFAULT) > 0)
			rc = sp_h5w_fail(w, SP_EINVAL, "rank %d appears twice", rk->rank);
		else
			rc = sp_h5w_fail(w, SP_EIO, "cannot create group %s", name);
		goto out;
	}
	if ((rk->run_start_ns != SP_NO_TIME && sp_h5w_attr_i64(g, "run_start_time", rk->run_start_ns) < 0) ||
	    (rk->run_end_ns != SP_NO_TIME && sp_h5w_attr_i64(g, "run_end_time", rk->run_end_ns) < 0) ||
	    (rk->pid != 0 && sp_h5w_attr_i64(g, "pid", rk->pid) < 0) ||
	    (rk->parent_pid != 0 && w->version != 1 && sp_h5w_attr_i64(g, "parent_pid", rk->parent_pid) < 0) ||
	    (rk->hostname && sp_h5w_attr_str(g, "hostname", rk->hostname) < 0) ||
	    sp_h5w_attr_i64(g, "clock_offset_ns", rk->clock_offset_ns) < 0 ||
	    sp_h5w_attr_i64(g, "dropped_events", rk->dropped) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot write attributes of %s", name);
		goto out;
	}
	rc = w->version == 1 ? sp_h5w_regions_v1(w, g, rk) : sp_h5w_regions_v2(w, g, rk);
	if (rc == SP_OK && rk->nlines > 0)
		rc = write_lines(w, g, rk);
	if (rc == SP_OK && rk->nlikwid > 0)
		rc = sp_h5w_likwid(w, g, rk);
out:
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close %s", name);
	return rc;
}

/* Up to this many /metadata attributes stay in the group's object header. */
#define META_COMPACT_MAX 64

static int make_plists(struct sp_h5_writer *w)
{
	unsigned crt = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
	if ((w->lcpl = H5Pcreate(H5P_LINK_CREATE)) < 0 || H5Pset_char_encoding(w->lcpl, H5T_CSET_UTF8) < 0)
		return -1;
	hid_t *g[] = {&w->gcpl, &w->gcpl_regions, &w->gcpl_region, &w->gcpl_meta};
	for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
		if ((*g[i] = H5Pcreate(H5P_GROUP_CREATE)) < 0 || H5Pset_obj_track_times(*g[i], 0) < 0)
			return -1;
	if (H5Pset_link_creation_order(w->gcpl_regions, crt) < 0 ||
	    H5Pset_attr_phase_change(w->gcpl_region, 16, 12) < 0 ||
	    H5Pset_attr_creation_order(w->gcpl_meta, crt) < 0 ||
	    /* /metadata's attributes in its object header, not in dense storage:
	     * HDF5 1.10's H5Ocopy (h5py's Group.copy, h5copy) crashes on densely
	     * stored variable-length string attributes whose creation order is
	     * tracked. */
	    H5Pset_attr_phase_change(w->gcpl_meta, META_COMPACT_MAX, META_COMPACT_MAX - 8) < 0)
		return -1;
	if ((w->dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_obj_track_times(w->dcpl, 0) < 0 ||
	    H5Pset_layout(w->dcpl, H5D_CONTIGUOUS) < 0 || H5Pset_fill_time(w->dcpl, H5D_FILL_TIME_NEVER) < 0)
		return -1;
#if H5_VERSION_GE(1, 10, 5)
	/* Datasets get no attributes: a minimal object header is a third smaller. */
	if (H5Pset_dset_no_attrs_hint(w->dcpl, 1) < 0)
		return -1;
#endif
	return 0;
}

/* Whether HDF5 is linked into the object this code is in; the library's
 * file name into *where when it is known. */
static int linked_in(Dl_info *where)
{
	Dl_info self = {0};
	return dladdr((void *)H5get_libversion, where) && where->dli_fname &&
	       dladdr((void *)linked_in, &self) && self.dli_fbase == where->dli_fbase;
}

void sp_h5_library(char *buf, size_t len)
{
	unsigned maj = 0, min = 0, rel = 0;
	H5get_libversion(&maj, &min, &rel);
	Dl_info where = {0};
	if (linked_in(&where))
		snprintf(buf, len, "%u.%u.%u, linked in", maj, min, rel);
	else if (!where.dli_fname)
		snprintf(buf, len, "%u.%u.%u", maj, min, rel);
	else
		snprintf(buf, len, "%u.%u.%u (%s)", maj, min, rel, where.dli_fname);
}

void sp_h5_no_exit_handler(void)
{
	Dl_info where = {0};
	if (linked_in(&where))
		H5dont_atexit();
}

/* Compression needs HDF5's shuffle and deflate (zlib) filters, able to
 * encode: a library built without zlib has no deflate. */
static enum sp_err check_filters(struct sp_h5_writer *w)
{
	const struct {
		H5Z_filter_t id;
		const char *what;
	} need[] = {{H5Z_FILTER_DEFLATE, "deflate (zlib)"}, {H5Z_FILTER_SHUFFLE, "shuffle"}};
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
		unsigned info = 0, maj = 0, min = 0, rel = 0;
		if (H5Zfilter_avail(need[i].id) <= 0 || H5Zget_filter_info(need[i].id, &info) < 0 ||
		    !(info & H5Z_FILTER_CONFIG_ENCODE_ENABLED)) {
			H5get_libversion(&maj, &min, &rel);
			return sp_h5w_fail(w, SP_EINVAL, "this HDF5 library (%u.%u.%u) has no %s filter for "
				     "compression; write with compression none", maj, min, rel,
				     need[i].what);
		}
	}
	return SP_OK;
}

/* One /metadata attribute of the given type (enum sp_kv_type): 0, or -1
 * (an SP_KV_INT value that is not a whole number included). */
static int meta_attr(hid_t loc, const char *key, const char *value, enum sp_kv_type type)
{
	if (type == SP_KV_INT) {
		char *end;
		errno = 0;
		long long v = strtoll(value, &end, 10);
		if (end == value || *end || errno)
			return -1;
		return sp_h5w_attr_i64(loc, key, (int64_t)v);
	}
	if (type == SP_KV_TEXT) {
		hid_t t = sp_h5w_str_type(H5T_VARIABLE);
		if (t < 0)
			return -1;
		int rc = sp_h5w_attr(loc, key, t, t, &value);
		H5Tclose(t);
		return rc;
	}
	return sp_h5w_attr_str(loc, key, value);
}

/* Adds one attribute to /metadata; entry is the index in the profile's
 * meta[] for messages, or -1 for sp_h5_writer_meta. */
static enum sp_err meta_add(struct sp_h5_writer *w, const char *key, const char *value,
			    enum sp_kv_type type, long entry)
{
	if (!key || !key[0] || !value) {
		if (entry >= 0)
			return sp_h5w_fail(w, SP_EINVAL, "metadata entry %ld has no key or value", entry);
		return sp_h5w_fail(w, SP_EINVAL, "metadata entry has no key or value");
	}
	if (meta_attr(w->meta, key, value, type) < 0)
		return sp_h5w_fail(w, H5Aexists(w->meta, key) > 0 ? SP_EINVAL : SP_EIO,
			     "cannot write metadata '%s'", key);
	return SP_OK;
}

/* Closes whatever is still open, removes the temporary file when asked to
 * (and when it is ours), frees w. A file being removed is detached first,
 * so that closing it cannot fail. */
static void writer_free(struct sp_h5_writer *w, int remove_tmp)
{
	if (remove_tmp)
		sp_h5w_detach(w);
	if (w->meta >= 0)
		H5Gclose(w->meta);
	if (w->file >= 0)
		H5Fclose(w->file);
	hid_t plists[] = {w->fcpl, w->fapl, w->lcpl, w->gcpl, w->gcpl_regions, w->gcpl_region,
			  w->gcpl_meta, w->dcpl};
	for (size_t i = 0; i < sizeof plists / sizeof plists[0]; i++)
		if (plists[i] >= 0)
			H5Pclose(plists[i]);
	if (remove_tmp)
		sp_outpath_abort(&w->out);
	free(w->path);
	free(w);
}

/* Marks w failed with rc (already in w->failure) and copies the failure to
 * the caller's err. */
static enum sp_err writer_failed(struct sp_h5_writer *w, enum sp_err rc, struct sp_error *err)
{
	w->failed = 1;
	if (err)
		*err = w->failure;
	return rc;
}

/* Room on the disk for a new file's superblock and first metadata. */
#define CREATE_ROOM ((off_t)64 * 1024)

/* Creates the HDF5 file in the temporary file w->out opened (w->file), with
 * the writer's property lists. SP_EIO (w->failure filled) when HDF5 fails. */
static enum sp_err create_file(struct sp_h5_writer *w)
{
	/* Version 1.8 object headers and groups: smaller than the 1.6 defaults
	 * and readable by any HDF5 since 1.8 (h5py included). */
	H5F_libver_t lv = w->version == 3 ? H5F_LIBVER_V110 : H5F_LIBVER_V18;
	if (make_plists(w) < 0 || (w->fcpl = H5Pcreate(H5P_FILE_CREATE)) < 0 ||
	    H5Pset_obj_track_times(w->fcpl, 0) < 0 ||
	    (w->level > 0 && H5Pset_istore_k(w->fcpl, ISTORE_K) < 0) ||
	    (w->fapl = sp_h5_fapl()) < 0 || H5Pset_libver_bounds(w->fapl, lv, lv) < 0 ||
	    (w->version == 3 && sp_h5w_small_caches(w->fapl) < 0) ||
	    H5Pset_sieve_buf_size(w->fapl, 0) < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot set up HDF5 property lists");
	/* HDF5 2.2 (Debian testing) fails an assertion in H5Fcreate, aborting
	 * the process, when not even the superblock fits on the disk: room for
	 * the file's first metadata is asked for first, so that a full disk is a
	 * plain error. (HDF5's truncation gives the room back; failures after
	 * the file exists are handled by detach.) A file system without
	 * fallocate(2) is not checked. */
	if (fallocate(w->out.fd, 0, 0, CREATE_ROOM) != 0 && errno != EOPNOTSUPP && errno != ENOSYS &&
	    errno != EINTR) {
		int e = errno;
		errno = e == ENOSPC || e == EDQUOT || e == EFBIG ? e : EIO;
		return sp_h5w_fail(w, SP_EIO, "cannot create the file");
	}
	/* HDF5 opens the file by name: through the /proc name of the
	 * descriptor we created it with (O_EXCL), so that a file put at that
	 * path since, in a folder others can write to, is never the one
	 * truncated; the plain name where /proc is not mounted. */
	char by_fd[64];
	snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", w->out.fd);
	errno = 0;
	w->file = H5Fcreate(access(by_fd, F_OK) == 0 ? by_fd : w->out.tmp, H5F_ACC_TRUNC, w->fcpl,
			    w->fapl);
	close(w->out.fd);              /* HDF5 has its own descriptor now */
	w->out.fd = -1;
	if (w->file < 0)
		return sp_error_set(&w->failure, SP_EIO, "cannot write '%s': HDF5 cannot create the file%s%s",
				    w->path, errno ? ": " : "", errno ? strerror(errno) : "");
	return SP_OK;
}

enum sp_err sp_h5_writer_open(const char *path, const struct sp_profile *p, struct sp_h5_writer **out,
			      struct sp_error *err)
{
	return sp_h5w_open(path, p, p && p->format_version == 1 ? 1 : 2, out, err);
}

enum sp_err sp_h5w_open(const char *path, const struct sp_profile *p, int version, struct sp_h5_writer **out,
			struct sp_error *err)
{
	struct sp_h5_writer *w;
	enum sp_err rc = SP_OK;

	if (out)
		*out = NULL;
	if (!p || !path || !path[0] || !out)
		return sp_error_set(err, SP_EINVAL, "sp_h5_writer_open: no profile, path or writer");
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (!(w = calloc(1, sizeof *w)) || !(w->path = strdup(path))) {
		free(w);
		return sp_error_set(err, SP_ENOMEM, "cannot write '%s': out of memory", path);
	}
	w->out.fd = -1;
	hid_t *ids[] = {&w->fcpl, &w->fapl, &w->lcpl, &w->gcpl, &w->gcpl_regions, &w->gcpl_region,
			&w->gcpl_meta, &w->dcpl, &w->file, &w->meta};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		*ids[i] = H5I_INVALID_HID;
	if (p->compression < 0 || p->compression > 9) {
		rc = sp_h5w_fail(w, SP_EINVAL, "compression level %d is not 0 (none) to 9", p->compression);
		goto out;
	}
	if (p->compression > 0 && (rc = check_filters(w)) != SP_OK)
		goto out;
	w->level = p->compression;
	w->version = version;
	/* A profile goes only to a regular file, new or replacing a profile
	 * (or what sp_outpath_allow named): a device, a FIFO or another file
	 * that appeared there since the run began is refused, never replaced. */
	struct sp_error oerr = {0};
	if ((rc = sp_outpath_open(&w->out, path, SP_OUTPATH_PROFILE_ONLY, &oerr)) != SP_OK) {
		sp_error_set(&w->failure, rc, "cannot write %s", oerr.msg);
		goto out;
	}
	if ((rc = create_file(w)) != SP_OK)
		goto out;
	if (sp_h5w_attr_str(w->file, "format", "scope-profiler") < 0 ||
	    sp_h5w_attr(w->file, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT32, &(int32_t){w->version}) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the file's attributes");
		goto out;
	}
	w->meta = H5Gcreate2(w->file, "metadata", w->lcpl, w->gcpl_meta, H5P_DEFAULT);
	if (w->meta < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot create group metadata");
		goto out;
	}
	for (size_t i = 0; i < p->nmeta && rc == SP_OK; i++)
		rc = meta_add(w, p->meta[i].key, p->meta[i].value, p->meta[i].type, (long)i);
out:
	if (rc != SP_OK) {
		if (err)
			*err = w->failure;
		writer_free(w, 1);
		return rc;
	}
	*out = w;
	return SP_OK;
}

enum sp_err sp_h5_writer_meta(struct sp_h5_writer *w, const char *key, const char *value,
			      enum sp_kv_type type, struct sp_error *err)
{
	if (!w)
		return sp_error_set(err, SP_EINVAL, "sp_h5_writer_meta: no writer");
	if (w->failed)
		return writer_failed(w, w->failure.code, err);
	enum sp_err rc = meta_add(w, key, value, type, -1);
	return rc == SP_OK ? SP_OK : writer_failed(w, rc, err);
}

enum sp_err sp_h5_writer_rank(struct sp_h5_writer *w, const struct sp_rank *rk,
			      struct sp_error *err)
{
	if (!w)
		return sp_error_set(err, SP_EINVAL, "sp_h5_writer_rank: no writer");
	if (w->failed)
		return writer_failed(w, w->failure.code, err);
	enum sp_err rc = rk ? write_rank(w, w->file, rk) : sp_h5w_fail(w, SP_EINVAL, "no rank to write");
	return rc == SP_OK ? SP_OK : writer_failed(w, rc, err);
}

/* Makes sure that closing the file cannot fail for want of disk space (see
 * sp_h5w_detach): H5Fclose writes the cached metadata, all of it inside the file's
 * allocated address space, so that space is reserved on disk first. A full
 * disk then fails here, while the file can still be detached. H5Fflush
 * cannot serve: after a failed flush HDF5 1.10 can close the file no more.
 * A file system without fallocate(2) is not checked. */
static enum sp_err reserve(struct sp_h5_writer *w)
{
	haddr_t eoa = 0;
	int *fd = NULL;
	if (H5Fget_eoa(w->file, &eoa) < 0 || H5Fget_vfd_handle(w->file, H5P_DEFAULT, (void **)&fd) < 0 ||
	    !fd || *fd < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot find the file's size");
	if (eoa > 0 && eoa <= (haddr_t)INT64_MAX && fallocate(*fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)eoa) != 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS && errno != EINTR) {
		int e = errno;
		errno = e == ENOSPC || e == EDQUOT || e == EFBIG ? e : EIO;
		return sp_h5w_fail(w, SP_EIO, "cannot finish writing the file");
	}
	return SP_OK;
}

enum sp_err sp_h5_writer_commit(struct sp_h5_writer *w, struct sp_error *err)
{
	enum sp_err rc;

	if (!w)
		return sp_error_set(err, SP_EINVAL, "sp_h5_writer_commit: no writer");
	rc = w->failed ? w->failure.code : SP_OK;
	if (rc == SP_OK) {
		if (H5Gclose(w->meta) < 0)
			rc = sp_h5w_fail(w, SP_EIO, "cannot close group metadata");
		w->meta = H5I_INVALID_HID;
		if (rc == SP_OK)
			rc = reserve(w);
		errno = 0;
		herr_t closed = H5Fclose(w->file);
		w->file = H5I_INVALID_HID;
		if (closed < 0 && rc == SP_OK)
			rc = sp_h5w_fail(w, SP_EIO, "cannot finish writing the file");
		struct sp_error oerr = {0};
		if (rc == SP_OK && sp_outpath_commit(&w->out, &oerr) != SP_OK)
			rc = sp_error_set(&w->failure, oerr.code, "cannot write %s", oerr.msg);
	}
	if (rc != SP_OK)
		writer_failed(w, rc, err);
	writer_free(w, rc != SP_OK);
	return rc;
}

/* ---- Finishing a streamed file (format version 3, stream.c) ---- */

/* Sets attribute name of loc to v, replacing one already there. */
static int attr_i64_set(hid_t loc, const char *name, int64_t v)
{
	if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0)
		return -1;
	return sp_h5w_attr_i64(loc, name, v);
}

/* Removes link name of loc when it is there. 0, or -1. */
static int unlink_if(hid_t loc, const char *name)
{
	htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
	return e < 0 ? -1 : e == 0 ? 0 : H5Ldelete(loc, name, H5P_DEFAULT) < 0 ? -1 : 0;
}

/* Removes the event column name of g when it holds nothing. 0, or -1. */
static int unlink_empty(hid_t g, const char *name)
{
	hid_t ds = H5Lexists(g, name, H5P_DEFAULT) > 0 ? H5Dopen2(g, name, H5P_DEFAULT) : -1;
	if (ds < 0)
		return 0;
	hid_t sp = H5Dget_space(ds);
	hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
	if (sp >= 0)
		H5Sclose(sp);
	H5Dclose(ds);
	return n < 0 ? -1 : n > 0 ? 0 : H5Ldelete(g, name, H5P_DEFAULT) < 0 ? -1 : 0;
}

/* One rank of a streamed file: its attributes, table, line tables and LIKWID
 * counters; its stream group, empty columns and children_dir (a partial
 * file's, for recover) go; children_dir stays in a file finished in place
 * (the run's own, before its children's files are merged with it). */
static enum sp_err finish_rank(struct sp_h5_writer *w, const struct sp_rank *rk)
{
	char name[32];
	enum sp_err rc = SP_OK;
	snprintf(name, sizeof name, "rank%d", rk->rank);
	hid_t g = H5Gopen2(w->file, name, H5P_DEFAULT), ev = -1;
	if (g < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot open group %s", name);
	if ((rk->run_end_ns != SP_NO_TIME && attr_i64_set(g, "run_end_time", rk->run_end_ns) < 0) ||
	    (rk->parent_pid != 0 && attr_i64_set(g, "parent_pid", rk->parent_pid) < 0) ||
	    attr_i64_set(g, "dropped_events", rk->dropped) < 0 ||
	    (!w->keep_children_dir && H5Aexists(g, "children_dir") > 0 && H5Adelete(g, "children_dir") < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot write attributes of %s", name);
	if (rc == SP_OK)
		rc = sp_h5w_regions_v3(w, g, rk);
	if (rc == SP_OK && rk->nlines > 0)
		rc = write_lines(w, g, rk);
	if (rc == SP_OK && rk->nlikwid > 0)
		rc = sp_h5w_likwid(w, g, rk);
	if (rc == SP_OK && (unlink_if(g, "stream") < 0 || (ev = H5Gopen2(g, "events", H5P_DEFAULT)) < 0 ||
			    unlink_empty(ev, "lanes") < 0 || unlink_empty(ev, "alloc_bytes") < 0 ||
			    unlink_empty(ev, "bytes") < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot tidy %s", name);
	if (ev >= 0)
		H5Gclose(ev);
	if (H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close %s", name);
	return rc;
}

enum sp_err sp_h5w_finish_stream(hid_t file, const char *partial, const char *target, const struct sp_profile *p,
				 struct sp_error *err)
{
	struct sp_h5_writer *w = calloc(1, sizeof *w);
	enum sp_err rc = SP_OK;
	if (!w || !(w->path = strdup(target))) {
		free(w);
		H5Fclose(file);
		return sp_error_set(err, SP_ENOMEM, "cannot finish '%s': out of memory", target);
	}
	w->out.fd = -1;
	hid_t *ids[] = {&w->fcpl, &w->fapl, &w->lcpl, &w->gcpl, &w->gcpl_regions, &w->gcpl_region,
			&w->gcpl_meta, &w->dcpl, &w->meta};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		*ids[i] = H5I_INVALID_HID;
	w->file = file;
	w->version = 3;
	w->level = p->compression;
	w->keep_children_dir = sp_outpath_same_file(partial, target);
	if (make_plists(w) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot set up HDF5 property lists");
		goto out;
	}
	w->meta = H5Gcreate2(w->file, "metadata", w->lcpl, w->gcpl_meta, H5P_DEFAULT);
	if (w->meta < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot create group metadata");
		goto out;
	}
	for (size_t i = 0; i < p->nmeta && rc == SP_OK; i++)
		rc = meta_add(w, p->meta[i].key, p->meta[i].value, p->meta[i].type, (long)i);
	for (size_t i = 0; i < p->nranks && rc == SP_OK; i++)
		rc = finish_rank(w, &p->ranks[i]);
	/* Closed whatever happened, so that the file's close below is real
	 * (a file left open for writing cannot be recovered). */
	if (H5Gclose(w->meta) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close group metadata");
	w->meta = H5I_INVALID_HID;
	if (rc == SP_OK)
		rc = reserve(w);
	errno = 0;
	if (H5Fclose(w->file) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot finish writing the file");
	w->file = H5I_INVALID_HID;
	struct sp_error oerr = {0};
	if (rc == SP_OK && sp_outpath_replaceable(target, &oerr) != SP_OK)
		rc = sp_error_set(&w->failure, oerr.code, "cannot write %s", oerr.msg);
	if (rc == SP_OK && rename(partial, target) != 0)
		rc = sp_error_set(&w->failure, SP_EIO, "cannot write '%s': renaming '%s': %s", target, partial,
				  strerror(errno));
	else if (rc == SP_OK && strcmp(partial, target) != 0)   /* not a finish in place (--subprocesses' own) */
		sp_outpath_note_committed(target);
out:
	if (rc != SP_OK && err)
		*err = w->failure;
	writer_free(w, 0);
	return rc;
}

void sp_h5_writer_abort(struct sp_h5_writer *w)
{
	if (w)
		writer_free(w, 1);
}

/* Writes p to path via a temporary file and rename(2): the streaming writer
 * with every rank at once. Returns SP_EINVAL for an inconsistent profile,
 * SP_ENOMEM, or SP_EIO; on failure the temporary file is removed and path is
 * untouched. */
enum sp_err sp_h5_write(const struct sp_profile *p, const char *path, struct sp_error *err)
{
	struct sp_h5_writer *w = NULL;
	enum sp_err rc;

	if (!p || !path || !path[0])
		return sp_error_set(err, SP_EINVAL, "sp_h5_write: no profile or no path");
	if ((rc = sp_h5_writer_open(path, p, &w, err)) != SP_OK)
		return rc;
	for (size_t r = 0; r < p->nranks; r++)
		if ((rc = sp_h5_writer_rank(w, &p->ranks[r], err)) != SP_OK) {
			sp_h5_writer_abort(w);
			return rc;
		}
	return sp_h5_writer_commit(w, err);
}
