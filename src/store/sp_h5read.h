/* sp_h5read.h - the bottom of the HDF5 reader (store-private; the public
 * API is include/sp_h5.h): the reader's state and its primitives, which
 * every other piece of the reader stands on:
 *   h5read_check.c  the one-line failure and the damaged-file checks (the
 *                   event columns' validation among them); calls nothing
 *                   of the reader's
 *   h5read_util.c   groups, attributes, columns, strings, a rank group's
 *                   attributes and regions group; on h5read_check.c
 * Above them, each piece declares what it defines in its own header, and a
 * piece includes the headers of the pieces it calls, never one that calls
 * it: h5read_lines.c, h5read_likwid.c; h5read_tree.c (the end of a rank's
 * read) on those two; h5read_table.c (version 2's ranks) on h5read_tree.c;
 * h5read_v3.c (version 3's) on h5read_table.c and h5read_tree.c; h5read.c
 * (the file, version 1's ranks, sp_h5_read) on h5read_table.c,
 * h5read_tree.c and h5read_v3.c; h5stream.c on h5read.c, h5read_table.c
 * and h5read_v3.c
 * (`scripts/check-layers.sh --graph store` prints the calls). Every
 * function leaves nothing open on failure and, where it returns enum
 * sp_err, fills r->err through sp_h5r_fail: "cannot read '<path>': <detail>". */
#ifndef SP_H5READ_H
#define SP_H5READ_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "sp_h5.h"

#if H5_VERSION_GE(1, 12, 0)
#define vlen_reclaim(t, s, buf) H5Treclaim(t, s, H5P_DEFAULT, buf)
#else
#define vlen_reclaim(t, s, buf) H5Dvlen_reclaim(t, s, H5P_DEFAULT, buf)
#endif

struct reader {
	const char *path;
	struct sp_error *err;
	int flags;
	int version;                   /* the file's format version (0: plain layout) */
	struct sp_h5_stream *stream;   /* sp_h5_stream_open: the structure only */
	hid_t file;                    /* the open file, once open */
	uint64_t file_size;            /* in bytes, from stat(2) at open */
	int sb_swmr;                   /* the superblock says a writer has it open for SWMR writing */
	int swmr;                      /* opened for reading while written (format 3's partial file) */
	/* Format version 3: a rank read from a partial file sets partial,
	 * and partial_until_ns to its last flush (the earliest of them). */
	int partial;
	int64_t partial_until_ns;
	/* The checks that read the file directly (h5read_check.c): the file
	 * opened by sp_h5r_check_path, the sizes HDF5 reports for it, and the
	 * last global heap collection read from it. */
	int fd;                        /* -1 when not open */
	size_t sizeof_addr, sizeof_size;   /* 0 until first needed */
	uint64_t base;                 /* the user block's size: where addresses start */
	unsigned char *heap;           /* the collection's bytes */
	uint64_t heap_addr, heap_size; /* heap_size 0: none read */
};

/* Link names of a group, in creation order when it is tracked. */
struct names {
	char **v;
	size_t n, cap;
	int oom;
};

/* Closes an HDF5 identifier of any kind (group, dataset, attribute, type,
 * space, property list) unless it is invalid. */
static inline void sp_h5r_close(hid_t id)
{
	if (id >= 0)
		H5Idec_ref(id);
}

/* h5read_check.c */

/* Fills r->err with "cannot read '<path>': <detail>" on one line (control
 * characters shown as '?'); returns code. */
enum sp_err sp_h5r_fail(struct reader *r, enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* What the OS can say before HDF5 is asked: SP_ENOENT, SP_EIO (a directory,
 * not a regular file, unreadable), SP_ENOTHDF5 (no HDF5 signature, or a
 * superblock whose driver information block lies outside the file). Sets
 * r->file_size and r->sb_swmr. */
enum sp_err sp_h5r_check_path(struct reader *r);
/* Closes what the checks opened (the file descriptor, the heap read). */
void sp_h5r_release(struct reader *r);
/* Checks the n variable-length strings of attribute or dataset obj (a
 * dataset when is_dataset) before HDF5 reads them. Returns 0, -1 when they
 * are damaged (or cannot be checked), -2 when out of memory. */
int sp_h5r_vlen_strings_ok(struct reader *r, hid_t obj, int is_dataset, size_t n);
/* 0 when group g's object header names a B-tree and a local heap inside
 * the file (or is a version 2 header), -1 otherwise. */
int sp_h5r_group_header_ok(struct reader *r, hid_t g);
/* SP_OK when dataset ds (n elements of tsize bytes, layout from dcpl) keeps
 * its elements where HDF5 can read them without overrunning a buffer;
 * SP_ECORRUPT naming ctx/name otherwise. */
enum sp_err sp_h5r_storage_ok(struct reader *r, hid_t ds, hid_t dcpl, H5D_layout_t layout, const char *ctx,
			      const char *name, hsize_t n, size_t tsize);
/* SP_OK when a region's summary attributes agree with each other, else
 * SP_ECORRUPT "<ctx>: inconsistent summary: ...". */
enum sp_err sp_h5r_stats_ok(struct reader *r, const char *ctx, const struct sp_stats *st);
/* SP_OK when every one of the n calls ends no earlier than it starts and
 * their durations add up within 64 bits; else SP_ECORRUPT "<ctx>: call K
 * ends before it starts" or "<ctx>: durations overflow 64 bits". */
enum sp_err sp_h5r_events_ok(struct reader *r, const char *ctx, const int64_t *starts, const int64_t *ends,
			     size_t n);

/* h5read_util.c */

/* Opens r->path read-only with fapl into *file: plainly, and when that
 * fails (HDF5 printing nothing) and the superblock says a writer has it
 * open for SWMR writing (r->sb_swmr: a format version 3 file still being
 * streamed, or left so by a killed run), for reading while another process
 * writes it (H5F_ACC_SWMR_READ, a damaged piece of metadata read 10
 * times, not HDF5's hundred, which sleep twice as long each time); r->swmr
 * is then set and r->file_size taken again. SP_EIO "locked by another
 * process" (a plain writer holds it) or SP_ENOTHDF5. fapl is changed. */
enum sp_err sp_h5r_open_file(struct reader *r, hid_t fapl, hid_t *file);
/* Frees the names; nl is empty again. */
void sp_h5r_names_free(struct names *nl);
/* Lists g's hard links into nl, in creation order if the group tracks it,
 * else by name. Returns 0, or -1 (HDF5 failure) or -2 (out of memory). */
int sp_h5r_list_links(hid_t g, struct names *nl);
/* 1 when name is a hard link in g, 0 when absent (or another kind of
 * link), -1 on failure. */
int sp_h5r_hard_link(hid_t g, const char *name);
/* H5Gopen2 for a group the reader will look into: -1 (nothing open) when
 * it cannot be opened or sp_h5r_group_header_ok finds it damaged. */
hid_t sp_h5r_open_group(struct reader *r, hid_t loc, const char *name);
/* A scalar numeric attribute converted to mtype into v: 1 when read, 0 when
 * absent, -1 when present but not a single number. */
int sp_h5r_attr_num(hid_t loc, const char *name, hid_t mtype, void *v);
/* An open attribute holding one string (fixed or variable length) as a
 * malloc'd copy in *out: 1, -1 when it is not one string, -2 on OOM. */
int sp_h5r_attr_str_open(struct reader *r, hid_t a, char **out);
/* Reads elements first .. first + n - 1 of 1-D dataset ds into buf as
 * mtype: 0, or -1. */
int sp_h5r_span(hid_t ds, hid_t mtype, uint64_t first, size_t n, void *buf);
/* As sp_h5r_attr_str_open for attribute name of loc; 0 when absent. */
int sp_h5r_attr_str(struct reader *r, hid_t loc, const char *name, char **out);
/* Opens the 1-D column name in g into *ds with its length in *n; want is
 * H5T_STRING or H5T_INTEGER (which also accepts floats). SP_ECORRUPT (*ds
 * -1) for a missing column, another type or rank, a layout that reads other
 * files, or an extent the stored bytes cannot back; deep also checks the
 * storage (sp_h5r_storage_ok: a lookup per chunk). */
enum sp_err sp_h5r_column_open(struct reader *r, hid_t g, const char *ctx, const char *name,
			       H5T_class_t want, int deep, hid_t *ds, hsize_t *n);
/* malloc of n elements of size sz (at least one byte); NULL on OOM or
 * overflow. */
void *sp_h5r_alloc_n(size_t n, size_t sz);

/* A string column read whole (sp_h5r_strings_read): fixed-length strings
 * in one block, or variable-length ones as HDF5 allocated them. */
struct sp_h5r_strings {
	hid_t mt, space;               /* the memory type and the column's space */
	int vlen;
	size_t fsize, n;               /* fixed: each string's size; strings */
	char **v;                      /* vlen: the strings (NULL: empty) */
	char *fixed;                   /* fixed: n strings of fsize + 1 bytes */
};
/* Reads the n strings of column ds (column name of ctx, for messages),
 * variable-length ones checked by sp_h5r_vlen_strings_ok first. SP_OK,
 * SP_ECORRUPT ("<ctx>/<name>: unreadable type" or "damaged strings",
 * "<ctx>: cannot read the <name> column") or SP_ENOMEM; s (initialised with
 * mt and space -1) is freed with sp_h5r_strings_free either way. */
enum sp_err sp_h5r_strings_read(struct reader *r, hid_t ds, const char *ctx, const char *name, size_t n,
				struct sp_h5r_strings *s);
/* String i of s (NULL for a variable-length string HDF5 read as NULL). */
static inline const char *sp_h5r_string(const struct sp_h5r_strings *s, size_t i)
{
	return s->vlen ? s->v[i] : s->fixed + i * (s->fsize + 1);
}
/* Frees what sp_h5r_strings_read allocated. */
void sp_h5r_strings_free(struct sp_h5r_strings *s);
/* An event column of n elements of size sz (large ones on huge pages), or
 * NULL; freed with free(). */
void *sp_h5r_alloc_column(size_t n, size_t sz);
/* A rank group's optional attributes into rk. */
enum sp_err sp_h5r_rank_attrs(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk);
/* Opens rank group g's regions group into *regions, lists its links into
 * *nl and allocates rk->regions for them (rk->nregions stays 0). */
enum sp_err sp_h5r_open_regions(struct reader *r, hid_t g, const char *gname, hid_t *regions,
				struct names *nl, struct sp_rank *rk);

/* A region name and its index, sorted by name for lookups. */
struct sp_h5r_name_ref {
	const char *name;
	int32_t idx;
};
/* By name: qsort and bsearch of sp_h5r_name_ref. */
int sp_h5r_name_ref_cmp(const void *a, const void *b);

#endif
