/* sp_stream_file.h - the file a stream writes (stream_file.c): OUT.partial
 * in HDF5's single-writer / multiple-reader mode, format version 3 (the
 * layout: scope-profiler-format(5)). Store-private: stream.c's writer calls
 * these with sp_h5_lock held. */
#ifndef SP_STREAM_FILE_H
#define SP_STREAM_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hdf5.h>

#include "sp_profile.h"

/* The event columns of the file: the value column of kind k (an enum
 * sp_value_kind > 0) is SP_SCOL_VALUES + k - 1. */
enum { SP_SCOL_START, SP_SCOL_END, SP_SCOL_LANES, SP_SCOL_VALUES, SP_SCOLS = SP_SCOL_VALUES + SP_VALUE_KINDS - 1 };

struct sp_sfile {
	/* Set by the caller before sp_sfile_create. */
	const char *partial;           /* the file's path */
	int rank, compression;
	int mpi_size;                  /* > 0: written as the rank's mpi_size */
	int64_t clock_offset_ns;       /* written as the rank's clock_offset_ns */
	int64_t mpi_job;               /* mpi_size > 0: written as the rank's mpi_job */
	int64_t pid, run_start_ns;
	int64_t parent_pid;            /* > 0: written as the rank's parent_pid */
	const char *hostname;          /* NULL: none */
	const char *children_dir;      /* NULL: none; written as the rank's children_dir */
	/* The columns' chunks: the event columns' and the block table's, in
	 * elements (0: the defaults, for a file that grows). */
	size_t event_chunk, block_chunk;
	/* The rest is the file's. */
	const char *why;               /* after a failure: what failed, or NULL (errno says) */
	hid_t file;
	hid_t col[SP_SCOLS], block_region, block_calls, names, flushed;
	int *vfd;                      /* where HDF5's sec2 driver keeps its descriptor of the
					* file (sp_sfile_hold, a forked child); NULL: none, or
					* detached for good */
	dev_t dev;                     /* the file's device and inode: a descriptor of it */
	ino_t ino;
	int lock_fd, locked;           /* ours, holding the file's lock while it is the run's */
	uint64_t events;               /* calls in the columns */
	uint64_t blocks;               /* rows of the block table */
	uint64_t name_bytes;
	/* Per column: it is as long as start_times (the lanes and value
	 * columns are written from a first block that has them on). */
	int on[SP_SCOLS];
	/* The stage: calls and blocks not written yet. */
	int64_t *st_start, *st_end;
	int32_t *st_lanes;
	int64_t *st_vals[SP_VALUE_KINDS];  /* per kind, allocated when its column goes on */
	size_t st_n;
	int32_t *sb_region;
	int64_t *sb_calls;
	size_t sb_n, sb_cap;
};

/* Creates f->partial (truncating a dead run's; refused while another
 * process holds it), its layout, and starts SWMR writing. 0, or -1 (f->why
 * or errno says why). */
int sp_sfile_create(struct sp_sfile *f);

/* Gives up the lock sp_sfile_create took (once the file is renamed or
 * removed; in a forked child, only its copy of the descriptor). A
 * descriptor number that is no longer the file's is left alone. */
void sp_sfile_unlock(struct sp_sfile *f);

/* Before HDF5 writes to the file again: the script may have closed its
 * descriptors since (os.closerange(), a daemon's start) and its own files
 * taken their numbers. A descriptor that is no longer the file's is
 * replaced by one opened again by path (the lock taken again), never
 * written through: HDF5 writes on into the file. 0; -1 when the file is
 * gone or another run took its lock meanwhile (f->why says which): HDF5's
 * descriptor then writes nowhere for good (f->vfd NULL), so that nothing
 * it writes later (a close) lands in a file. */
int sp_sfile_hold(struct sp_sfile *f);   /* nothing once f->vfd is NULL (detached) */

/* In a forked child: HDF5's copy of the descriptor writes to /dev/null
 * from now on (its exit handler closes open files), the number kept where
 * it is still the file's, else left to the file of the script's that took
 * it. */
void sp_sfile_forget_fd(struct sp_sfile *f);

/* Whether a live run streams into the partial file at path (holds its
 * lock): 1, 0, 2 where the file system has no locks (the caller judges by
 * the process, where it knows it), or -1 when it cannot be told (errno). */
int sp_sfile_live(const char *path);

/* A partial file that a run left marked as open for writing (killed while
 * it finished the file): the mark cleared (HDF5's superblock status flags,
 * as h5clear -s does), so that it reads. 0, or -1. */
int sp_sfile_unmark(const char *path);

/* The next region's name (n bytes, its NUL included). 0, or -1. */
int sp_sfile_name(struct sp_sfile *f, const char *name, size_t n);

/* n calls of region id (lanes NULL: lane 0; values NULL: none, else the
 * calls' values of kind `kind`, an enum sp_value_kind), staged or written.
 * A column that some block had is as long as the others from then on
 * (0 for the calls of blocks without it). 0, or -1. */
int sp_sfile_block(struct sp_sfile *f, int32_t id, size_t n, const int64_t *starts, const int64_t *ends,
		   const int32_t *lanes, int kind, const int64_t *values);

/* Ends of calls written open: event index[i] ends at end[i], and, where
 * kind[i] > 0, its value of that kind is value[i]. 0, or -1. */
int sp_sfile_patches(struct sp_sfile *f, size_t n, const int64_t *index, const int64_t *end, const int64_t *kind,
		     const int64_t *value);

/* Everything staged to the file, flushed_ns = t, the file flushed. 0, or -1. */
int sp_sfile_flush(struct sp_sfile *f, int64_t t);

/* Closes the columns (the file stays open); frees the stage. */
void sp_sfile_close_layout(struct sp_sfile *f);

#endif
