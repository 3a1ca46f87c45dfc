/* sp_h5.h - the HDF5 file format, version 2, and the reading of versions 1
 * and 3 (a streamed profile, finished or partial; man/scope-profiler-format.5). */
#ifndef SP_H5_H
#define SP_H5_H

#include "sp_profile.h"

/* Writes the profile to path atomically: to a temporary file in the same
 * folder, then rename(2). The file is format version 2, or version 1 when
 * p->format_version is 1 (the layout earlier releases wrote: for tests and
 * tools that read only that). Regions with num_calls == 0 are skipped. Every
 * region's events must be loaded, except an aggregate region's (it is
 * written as its summary attributes plus self_ns and aggregate = 1, with no
 * event columns). p->compression 1..9 stores event columns of 64 calls or
 * more chunked (65536 elements at most) with shuffle then deflate at that
 * level; 0 stores them contiguous; SP_EINVAL outside 0..9 or when HDF5 lacks
 * the filters. On failure nothing is left at path (an existing file there is
 * untouched) and err says why. */
enum sp_err sp_h5_write(const struct sp_profile *p, const char *path, struct sp_error *err);

/* Writing a profile one rank at a time: under MPI rank 0 writes each rank's
 * group as it arrives, so its memory holds one rank's events at a time.
 * sp_h5_write is open + one sp_h5_writer_rank per rank + commit, with the
 * same file and the same messages.
 *
 * Nothing appears at path before a successful commit. After any failed
 * sp_h5_writer_* call the writer is failed: only sp_h5_writer_abort (or
 * commit, which then fails too) is meaningful; meta and rank do nothing and,
 * like commit, return the first failure's code with its message in err.
 * One writer per path at a time in a process (the temporary file's name is
 * the path and the pid). */
struct sp_h5_writer;

/* Creates the temporary file beside path (path.tmp.PID) and writes the root
 * attributes and p's metadata (p->ranks is not used; p->compression applies
 * to every rank written). On failure *out is NULL and nothing is left behind. */
enum sp_err sp_h5_writer_open(const char *path, const struct sp_profile *p, struct sp_h5_writer **out,
			      struct sp_error *err);
/* Adds one /metadata attribute of the given type (a str, or an integer
 * given in decimal), after those already written (at any time before the
 * commit). SP_EINVAL for an empty key, a NULL value, an SP_KV_INT value that
 * is not a whole number, or a key already written. */
enum sp_err sp_h5_writer_meta(struct sp_h5_writer *w, const char *key, const char *value,
			      enum sp_kv_type type, struct sp_error *err);
/* Writes one rank's group, as sp_h5_write does (its events must be loaded);
 * its clock_offset_ns is stored as the group's clock_offset_ns attribute.
 * SP_EINVAL "rank N appears twice" for a rank already written. */
enum sp_err sp_h5_writer_rank(struct sp_h5_writer *w, const struct sp_rank *rk, struct sp_error *err);
/* Closes the file and renames it to path; frees w whatever the outcome. On
 * failure (this one or an earlier call's) the temporary file is removed and
 * path is untouched. */
enum sp_err sp_h5_writer_commit(struct sp_h5_writer *w, struct sp_error *err);
/* Closes and removes the temporary file; frees w. NULL is fine. */
void sp_h5_writer_abort(struct sp_h5_writer *w);

enum sp_read_flags {
	SP_READ_SUMMARY = 0,           /* stats and the stored trees; the events of a
					* rank whose file holds no tree */
	SP_READ_EVENTS = 1,            /* also load every event column */
};

/* Reads a profile (format 3, 2 or 1, or the plain rank{N}/regions/{name}/
 * start_times and end_times layout); p->format_version says which. On
 * success *out owns everything; after a summary read, every rank has stats
 * and the tree its file holds, or (tree NULL) its events, from which the
 * report layer builds it (sp_tree.h: sp_report_read). A version 3 file
 * holds no tree, so its events are read. A partial one (OUT.partial: a
 * run still streaming it, or killed while it did; opened for reading while
 * written when a plain open fails) is read up to what is consistent, its
 * stats computed from its events, calls open at its last flush ending
 * there: p->partial and p->partial_until_ns say so. */
enum sp_err sp_h5_read(const char *path, int flags, struct sp_profile **out, struct sp_error *err);

/* Escapes a region name into an HDF5 link name ('%' -> %25, '/' -> %2F, a
 * name "." -> %2E); returns a malloc'd string or NULL on out of memory. */
char *sp_h5_escape(const char *name);
/* The inverse; returns a malloc'd string or NULL. */
char *sp_h5_unescape(const char *link);

/* A profile open for reading its event columns a slice at a time (export):
 * memory stays bounded by the slice, not by the number of events. */
struct sp_h5_stream;

/* Opens path and reads its structure: ranks, region names and stats,
 * metadata; no event columns, call trees or line tables. Every region with
 * calls must have start_times and end_times of num_calls events (SP_ECORRUPT
 * otherwise, e.g. a region stored as a summary only); a region without
 * summary attributes has its columns read once, at open, for its stats, and
 * so have a partial version 3 file's (a slice at a time).
 * Returns the codes of sp_h5_read, with *out NULL and nothing left open. */
enum sp_err sp_h5_stream_open(const char *path, struct sp_h5_stream **out, struct sp_error *err);

/* The profile's structure: every region's starts/ends/lanes are NULL.
 * Owned by the stream. */
const struct sp_profile *sp_h5_stream_profile(const struct sp_h5_stream *s);

/* Reads calls first .. first + n - 1 of region gi of the rank at index ri
 * (indices into the profile's arrays) into starts[n], ends[n] and, when not
 * NULL, lanes[n] (0 for every call when the region has no lanes column).
 * Returns SP_EINVAL for a range outside the region, SP_ECORRUPT when the
 * columns cannot be read or a call ends before it starts. Reading the
 * regions one after the other, each from its first call on, is cheapest. */
enum sp_err sp_h5_stream_read(struct sp_h5_stream *s, size_t ri, size_t gi, uint64_t first, size_t n,
			      int64_t *starts, int64_t *ends, int32_t *lanes, struct sp_error *err);

/* Closes the file and frees the stream and its profile. NULL is fine. */
/* Reads calls first .. first + n - 1 of the per-call values (bytes
 * allocated or moved: the region's value_kind) of region gi of rank index
 * ri into values. SP_EINVAL when the region has no values (value_kind 0;
 * files of format version 1 have none) or the calls are not its. */
enum sp_err sp_h5_stream_values(struct sp_h5_stream *s, size_t ri, size_t gi, uint64_t first, size_t n,
				int64_t *values, struct sp_error *err);

void sp_h5_stream_close(struct sp_h5_stream *s);

/* The HDF5 library in use, for --version: "1.14.5, linked in" (the static
 * archive, see the Makefile's HDF5_STATIC) or "1.14.5 (/usr/lib/.../
 * libhdf5_serial.so.310)"; written into buf (len bytes). */
void sp_h5_library(char *buf, size_t len);

/* Whether path is a scope-profiler profile (any format version, a partial
 * one too) as the reader would take it: 1 if so, 0 if not (another file,
 * another HDF5 file, a damaged one). */
int sp_h5_is_profile(const char *path);

/* A new file-access property list for every file of ours, read or
 * written: HDF5's file locks where the file system has them, and none
 * where flock() fails with ENOSYS (Lustre mounted without -o flock, some
 * NFS), where an HDF5 built without ignore-disabled-file-locks (its default
 * since 1.10.7) would refuse to open or create any file; as
 * HDF5_USE_FILE_LOCKING=BEST_EFFORT does (the variable, where set, still
 * decides). A profile is only ever written by one process: a temporary
 * file renamed at the end, a stream under its own lock. An hid_t (this
 * header leaves hdf5.h out), -1 on failure. */
int64_t sp_h5_fapl(void);

/* Before any other HDF5 call: where HDF5 is linked in (this program's copy
 * alone), the library does not close files at exit. Every file of ours is
 * closed when its work ends; one whose close failed (the disk or
 * RLIMIT_FSIZE full) stays half-closed, and HDF5 1.10's exit handler
 * crashed on it. A shared library (one a script's h5py may share) keeps
 * its handler. */
void sp_h5_no_exit_handler(void);

#endif
