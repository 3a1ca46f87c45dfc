/* sp_h5write.h - the bottom of the HDF5 writer (store-private; the public
 * API is include/sp_h5.h): the writer's state and the primitives of
 * h5write_util.c (one-line failures, attributes, columns), which every
 * piece writes through. The pieces above it declare what they define in
 * headers of their own, which only h5write.c (the file, metadata, ranks,
 * line tables) includes: a rank's regions in format version 2's table
 * (sp_h5write_table.h) or version 1's group per region (sp_h5write_v1.h),
 * its LIKWID counters (sp_h5write_likwid.h). */
#ifndef SP_H5WRITE_H
#define SP_H5WRITE_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "sp_h5.h"
#include "sp_outpath.h"

/* H5Pset_file_locking: HDF5 1.10.7 and later, 1.12.1 and later. */
#if H5_VERSION_GE(1, 10, 7) && !(H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 12 && H5_VERS_RELEASE == 0)
#define SP_H5_FILE_LOCKING 1
#endif

/* A file being written: the temporary file, the property lists shared by
 * every object, and the first failure, which every later call returns. */
struct sp_h5_writer {
	char *path;                    /* the final path (a copy), for messages */
	struct sp_outpath out;         /* the temporary file (out.tmp) and its target */
	int version;                   /* the format version written: 1, 2 or 3 (a stream finished) */
	int failed;                    /* a call failed: failure says why */
	int detached;                  /* the file's descriptor points at memory (detach) */
	int keep_children_dir;         /* a stream finished in place keeps it (for recover) */
	struct sp_error failure;       /* what sp_h5w_fail sets; copied to the caller's err */
	hid_t fcpl, fapl;              /* the file's */
	hid_t lcpl;                    /* UTF-8 link names */
	hid_t gcpl;                    /* plain groups */
	hid_t gcpl_regions;            /* link creation order tracked + indexed */
	hid_t gcpl_region;             /* room for all summary attrs in the header */
	hid_t gcpl_meta;               /* attribute creation order tracked + indexed */
	hid_t dcpl;                    /* contiguous, no fill write */
	int level;                     /* event columns: 0 contiguous, 1..9 deflate level */
	hid_t file;                    /* the temporary file, open */
	hid_t meta;                    /* its /metadata group, open until commit */
};

/* Compressed event columns (scope-profiler-format(5)): chunks of at most
 * SP_H5W_CHUNK_MAX elements (512 KiB of int64: it fits HDF5's default 1 MiB
 * chunk cache, so reading a column a slice at a time inflates each chunk
 * once; chunks 16x larger are 3% smaller and slower to write), exactly the
 * column when shorter. A column of fewer than SP_H5W_COMPRESS_MIN elements
 * stays contiguous: compressing it saves less than its chunk index costs. */
#define SP_H5W_CHUNK_MAX ((size_t)1 << 16)
#define SP_H5W_COMPRESS_MIN ((size_t)64)
/* The chunk index of compressed columns is a version 1 B-tree whose nodes
 * are allocated whole: with ISTORE_K 2 (HDF5's default is 32) a one-chunk
 * column's node takes 176 bytes instead of 2 KiB (the file's creation
 * property list, h5write.c). */
#define ISTORE_K 2
/* Calls gathered per write into uncompressed columns (64 KiB a column). */
#define SP_H5W_STAGE_DIRECT ((size_t)8192)

/* HDF5's metadata cache of a file grows with it (up to 32 MiB by default:
 * the chunk index of hours of calls): at most 2 MiB with fapl, so that a
 * stream's or a merge's memory stays bounded whatever the file's size.
 * 0, or -1. */
int sp_h5w_small_caches(hid_t fapl);

/* Opens a writer as sp_h5_writer_open does, for format version `version`:
 * 1 or 2 as p->format_version asks there; 3 for the merged file of an MPI
 * job whose ranks streamed (merge.c: HDF5's 1.10 file format, which the
 * ranks' chunked columns copied into it need, small caches, no rank
 * written by the writer itself). */
enum sp_err sp_h5w_open(const char *path, const struct sp_profile *p, int version, struct sp_h5_writer **out,
			struct sp_error *err);

/* Fills w->failure with "cannot write '<path>': <what>", adding the OS's
 * reason when errno holds one that explains an HDF5 failure; the file is
 * abandoned (its descriptor detached). Returns code. */
enum sp_err sp_h5w_fail(struct sp_h5_writer *w, enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Points the file's descriptor at memory after a failed write, so that
 * closing it can no longer fail and writes nothing more to the disk (see
 * h5write_util.c); 0, or -1 (left as it was). */
int sp_h5_detach(hid_t file);
/* A new descriptor of nowhere for that: an anonymous memory file (/dev/null
 * under a finite RLIMIT_FSIZE, which bounds a memory file too); -1. */
int sp_h5_nowhere(void);
/* The same for the writer's temporary file, emptied where it cannot be. */
void sp_h5w_detach(struct sp_h5_writer *w);

/* Scalar attributes of loc: 0, or -1 on failure. */
int sp_h5w_attr(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *buf);
int sp_h5w_attr_i64(hid_t loc, const char *name, int64_t v);
int sp_h5w_attr_f64(hid_t loc, const char *name, double v);
int sp_h5w_attr_str(hid_t loc, const char *name, const char *value);
/* A 1-D attribute of n values (n > 0): 0, or -1 on failure. */
int sp_h5w_attr_1d(hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n, const void *buf);
/* A fixed-length, null-terminated UTF-8 string type of size bytes (size
 * H5T_VARIABLE: variable-length), or -1. */
hid_t sp_h5w_str_type(size_t size);

/* Creates the 1-D dataset name of n elements of ftype in loc and writes buf
 * whole (nothing for n == 0): contiguous, or with level > 0 and n of
 * SP_H5W_COMPRESS_MIN or more chunked with shuffle then deflate. 0 or -1. */
int sp_h5w_column_z(struct sp_h5_writer *w, hid_t loc, const char *name, hid_t ftype, hid_t mtype,
		    size_t n, const void *buf, int level);
/* A contiguous column (tables, call trees, line tables). */
int sp_h5w_column(struct sp_h5_writer *w, hid_t loc, const char *name, hid_t ftype, hid_t mtype,
		  size_t n, const void *buf);
/* Creates the 1-D dataset name of n elements of ftype in loc, written later
 * a span at a time (sp_h5w_span); level as sp_h5w_column_z's. The dataset,
 * or -1. */
hid_t sp_h5w_dataset(struct sp_h5_writer *w, hid_t loc, const char *name, hid_t ftype, size_t n,
		     int level);
/* Writes elements first .. first + n - 1 of dataset ds from buf (mtype).
 * 0, or -1 (the file detached). */
int sp_h5w_span(struct sp_h5_writer *w, hid_t ds, hid_t mtype, uint64_t first, size_t n,
		const void *buf);
/* Closes a dataset written a span at a time; a compressed one's chunks are
 * flushed first, while a failure can still be told (see h5write_util.c). 0 or -1. */
int sp_h5w_dataset_close(struct sp_h5_writer *w, hid_t ds);

/* Completes a streamed file (format version 3) that `file` holds open
 * read-write (its SWMR writing over): /metadata, each rank's attributes,
 * regions table, line tables and LIKWID counters from p (regions in id
 * order, no events); drops the stream group and empty columns; closes file
 * and renames partial to target. On failure the partial file stays. */
enum sp_err sp_h5w_finish_stream(hid_t file, const char *partial, const char *target,
				 const struct sp_profile *p, struct sp_error *err);

#endif
