/* h5read.c - reading a profile from HDF5: format version 1 and the plain
 * rank{N}/regions/{name}/{start_times,end_times} layout. Defensive: the file
 * may be anything, and nothing in it is trusted without a check. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_clock.h"
#include "sp_h5.h"

#if H5_VERSION_GE(1, 12, 0)
#define vlen_reclaim(t, s, buf) H5Treclaim(t, s, H5P_DEFAULT, buf)
#define is_hdf5(path) H5Fis_accessible(path, H5P_DEFAULT)
#else
#define vlen_reclaim(t, s, buf) H5Dvlen_reclaim(t, s, H5P_DEFAULT, buf)
#define is_hdf5(path) H5Fis_hdf5(path)
#endif

struct reader {
	const char *path;
	struct sp_error *err;
	int flags;
	struct sp_h5_stream *stream;   /* sp_h5_stream_open: the structure only */
	hid_t file;                    /* the open file, once open */
	uint64_t file_size;            /* in bytes, from stat(2) at open */
	/* Checking variable-length strings (vlen_strings_ok): the file read
	 * directly, and the last global heap collection read from it. */
	int fd;                        /* -1 until first needed */
	size_t sizeof_addr, sizeof_size;
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

/* A region name and its index, sorted by name for lookups. */
struct name_ref {
	const char *name;
	int32_t idx;
};

/* Closes an HDF5 identifier of any kind (group, dataset, attribute, type,
 * space, property list) unless it is invalid. */
static void h5close(hid_t id)
{
	if (id >= 0)
		H5Idec_ref(id);
}

/* Closes what checking strings opened (vlen_strings_ok). */
static void reader_release(struct reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->heap);
	r->heap = NULL;
	r->heap_size = 0;
}

/* Fills err with "cannot read '<path>': <detail>" on one line. */
static enum sp_err rfail(struct reader *r, enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum sp_err rfail(struct reader *r, enum sp_err code, const char *fmt, ...)
{
	char what[448];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	sp_error_set(r->err, code, "cannot read '%s': %s", r->path, what);
	if (r->err)
		for (char *c = r->err->msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	return code;
}

static void names_free(struct names *nl)
{
	for (size_t i = 0; i < nl->n; i++)
		free(nl->v[i]);
	free(nl->v);
	*nl = (struct names){0};
}

static herr_t names_cb(hid_t g, const char *name, const H5L_info_t *info, void *op)
{
	struct names *nl = op;
	(void)g;
	if (info->type != H5L_TYPE_HARD)
		return 0;              /* soft and external links are not followed */
	if (nl->n == nl->cap) {
		size_t cap = nl->cap ? nl->cap * 2 : 16;
		char **v = cap <= SIZE_MAX / sizeof *v ? realloc(nl->v, cap * sizeof *v) : NULL;
		if (!v)
			goto oom;
		nl->v = v;
		nl->cap = cap;
	}
	if (!(nl->v[nl->n] = strdup(name)))
		goto oom;
	nl->n++;
	return 0;
oom:
	nl->oom = 1;
	return -1;
}

/* Lists g's hard links, in creation order if the group tracks it, else by
 * name. Returns 0, or -1 (HDF5 failure) or -2 (out of memory). */
static int list_links(hid_t g, struct names *nl)
{
	unsigned crt = 0;
	hid_t gcpl = H5Gget_create_plist(g);
	if (gcpl >= 0) {
		if (H5Pget_link_creation_order(gcpl, &crt) < 0)
			crt = 0;
		H5Pclose(gcpl);
	}
	if ((crt & H5P_CRT_ORDER_TRACKED) &&
	    H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, NULL, names_cb, nl) >= 0)
		return 0;
	if (nl->oom)
		return -2;
	names_free(nl);
	if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, names_cb, nl) >= 0)
		return 0;
	return nl->oom ? -2 : -1;
}

/* 1 when name is a hard link in g, 0 when absent (or another kind of link),
 * -1 on failure. */
static int hard_link(hid_t g, const char *name)
{
	H5L_info_t li;
	htri_t ex = H5Lexists(g, name, H5P_DEFAULT);
	if (ex <= 0)
		return ex < 0 ? -1 : 0;
	if (H5Lget_info(g, name, &li, H5P_DEFAULT) < 0)
		return -1;
	return li.type == H5L_TYPE_HARD;
}

/* Variable-length strings are read by HDF5 from global heap collections,
 * which HDF5 1.10 parses trusting every size in them: a collection whose
 * free-space object claims 0 bytes makes it loop forever, a larger object
 * than the string's length overruns its buffer, an index it does not hold
 * reads through a NULL pointer. So before such a string is read, the
 * reader reads what the file stores for it (length, collection address,
 * object index: a tagged opaque type, which raw_vlen_conv converts to by
 * leaving the bytes as they are) and walks the collection itself. */
#define RAW_VLEN_TAG "scope-profiler raw vlen"

static herr_t raw_vlen_conv(hid_t src, hid_t dst, H5T_cdata_t *cdata, size_t nelmts, size_t buf_stride,
			    size_t bkg_stride, void *buf, void *bkg, hid_t dxpl)
{
	if (cdata->command != H5T_CONV_INIT)
		return 0;      /* converting: the stored bytes are the result */
	char *tag = H5Tget_class(dst) == H5T_OPAQUE ? H5Tget_tag(dst) : NULL;
	int ok = tag && strcmp(tag, RAW_VLEN_TAG) == 0 && H5Tis_variable_str(src) > 0 &&
		 H5Tget_size(src) == H5Tget_size(dst);
	H5free_memory(tag);
	cdata->need_bkg = H5T_BKG_NO;
	return ok ? 0 : -1;
}

static uint64_t le_uint(const unsigned char *b, size_t n)
{
	uint64_t v = 0;
	while (n--)
		v = v << 8 | b[n];
	return v;
}

/* Opens the file for reading it directly (once), with the sizes of its
 * addresses and lengths and its base address. Returns r->fd or -1. */
static int reader_fd(struct reader *r)
{
	hsize_t ub = 0;
	hid_t fcpl;
	if (r->fd >= 0)
		return r->fd;
	if ((fcpl = H5Fget_create_plist(r->file)) < 0)
		return -1;
	if (H5Pget_sizes(fcpl, &r->sizeof_addr, &r->sizeof_size) >= 0 && H5Pget_userblock(fcpl, &ub) >= 0 &&
	    r->sizeof_addr >= 2 && r->sizeof_addr <= 8 && r->sizeof_size >= 2 && r->sizeof_size <= 8) {
		r->base = ub;
		r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
	}
	H5Pclose(fcpl);
	return r->fd;
}

/* Reads the collection at addr into r->heap (kept for the next string),
 * checking what HDF5's own parser takes on trust. Returns 0 or -1. */
static int load_heap(struct reader *r, uint64_t addr)
{
	unsigned char hdr[16];
	size_t hsize = 8 + r->sizeof_size, ohsize = 8 + r->sizeof_size;
	if (r->heap_size && r->heap_addr == addr)
		return 0;
	free(r->heap);
	r->heap = NULL;
	r->heap_size = 0;
	uint64_t at = r->base + addr;
	if (at < addr || at > r->file_size || r->file_size - at < sizeof hdr ||
	    pread(r->fd, hdr, sizeof hdr, (off_t)at) != (ssize_t)sizeof hdr || memcmp(hdr, "GCOL", 4) != 0 ||
	    hdr[4] != 1)
		return -1;
	uint64_t size = le_uint(hdr + 8, r->sizeof_size);
	/* HDF5 makes collections of 4096 bytes at least, and reads that much. */
	if (size < 4096 || size > r->file_size - at || size > ((uint64_t)1 << 30) ||
	    !(r->heap = malloc((size_t)size)) || pread(r->fd, r->heap, (size_t)size, (off_t)at) != (ssize_t)size)
		return -1;
	/* Walk the objects as HDF5 does: each must move on, and stay inside. */
	for (uint64_t p = hsize; p < size;) {
		if (size - p < ohsize)
			break;         /* a tail too short for an object: free space */
		unsigned idx = (unsigned)le_uint(r->heap + p, 2);
		uint64_t osize = le_uint(r->heap + p + 8, r->sizeof_size);
		uint64_t need = idx ? ohsize + ((osize + 7) & ~(uint64_t)7) : osize;
		if (need == 0 || osize > size || need > size - p)
			return -1;
		p += need;
	}
	r->heap_addr = addr;
	r->heap_size = size;
	return 0;
}

/* The size of object idx of the loaded collection, or -1 when absent (the
 * last of duplicates counts, as in HDF5). */
static int64_t heap_object(const struct reader *r, unsigned idx)
{
	size_t ohsize = 8 + r->sizeof_size;
	int64_t found = -1;
	for (uint64_t p = 8 + r->sizeof_size; p + ohsize <= r->heap_size;) {
		unsigned i = (unsigned)le_uint(r->heap + p, 2);
		uint64_t osize = le_uint(r->heap + p + 8, r->sizeof_size);
		if (i == idx && idx)
			found = (int64_t)osize;
		p += i ? ohsize + ((osize + 7) & ~(uint64_t)7) : osize;
	}
	return found;
}

/* Checks the n variable-length strings of attribute or dataset obj (a
 * dataset when is_dataset) before HDF5 reads them. Returns 0, -1 when they
 * are damaged (or cannot be checked), -2 when out of memory. */
static int vlen_strings_ok(struct reader *r, hid_t obj, int is_dataset, size_t n)
{
	static int registered;
	unsigned char *raw = NULL;
	hid_t vs = -1, rt = -1;
	int rc = -1;

	if (reader_fd(r) < 0)
		goto out;
	size_t esize = 8 + r->sizeof_addr;
	if ((vs = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(vs, H5T_VARIABLE) < 0 ||
	    (rt = H5Tcreate(H5T_OPAQUE, esize)) < 0 || H5Tset_tag(rt, RAW_VLEN_TAG) < 0)
		goto out;
	if (!registered) {
		if (H5Tregister(H5T_PERS_SOFT, "scope-profiler raw vlen", vs, rt, raw_vlen_conv) < 0)
			goto out;
		registered = 1;
	}
	if (n > SIZE_MAX / esize || !(raw = malloc(n ? n * esize : 1))) {
		rc = -2;
		goto out;
	}
	if (n && (is_dataset ? H5Dread(obj, rt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) : H5Aread(obj, rt, raw)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *e = raw + i * esize;
		uint64_t len = le_uint(e, 4), addr = le_uint(e + 4, r->sizeof_addr);
		unsigned idx = (unsigned)le_uint(e + 4 + r->sizeof_addr, 4);
		if (len > r->file_size)
			goto out;
		if (addr == 0)
			continue;      /* HDF5 reads nothing: an empty string */
		if (load_heap(r, addr) < 0 || heap_object(r, idx) != (int64_t)len)
			goto out;
	}
	rc = 0;
out:
	free(raw);
	h5close(vs); h5close(rt);
	return rc;
}

/* An old-style group (a version 1 object header with a symbol table
 * message) names its B-tree and its local heap of link names; HDF5 1.10
 * reads a heap at the undefined address through a NULL pointer. Checks both
 * addresses of every such message (the header's chunks followed through
 * their continuation messages) before the group is used. Returns 0, or -1
 * when damaged. Version 2 object headers are left to HDF5. */
static int group_header_ok(struct reader *r, hid_t g)
{
	H5O_info_t oi;
	unsigned char pre[16], m[8 + 2 * 8];
	if (H5Oget_info2(g, &oi, H5O_INFO_BASIC) < 0 || reader_fd(r) < 0)
		return -1;
	uint64_t at = r->base + oi.addr, sa = r->sizeof_addr;
	if (oi.addr > r->file_size || at > r->file_size - sizeof pre ||
	    pread(r->fd, pre, sizeof pre, (off_t)at) != (ssize_t)sizeof pre)
		return -1;
	if (pre[0] != 1)
		return 0;
	uint64_t chunk = at + 16, len = le_uint(pre + 8, 4);
	for (int chunks = 0; chunks < 64 && len; chunks++) {
		uint64_t next = 0, next_len = 0;
		if (chunk > r->file_size || len > r->file_size - chunk)
			return -1;
		for (uint64_t p = 0; p + 8 <= len;) {
			if (pread(r->fd, m, 8 + 2 * sa, (off_t)(chunk + p)) < 8)
				return -1;
			unsigned type = (unsigned)le_uint(m, 2);
			uint64_t size = le_uint(m + 2, 2);
			if (size > len - p - 8)
				return -1;
			if ((type == 0x11 || type == 0x10) && size >= 2 * sa) {
				uint64_t a = le_uint(m + 8, sa), b = le_uint(m + 8 + sa, sa);
				uint64_t undef = sa == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * sa)) - 1;
				if (a == undef || a >= r->file_size || (type == 0x11 && (b == undef || b >= r->file_size)))
					return -1;
				if (type == 0x10) {
					next = r->base + a;
					next_len = b;
				}
			}
			p += 8 + size;
		}
		chunk = next;
		len = next_len;
	}
	return 0;
}

/* H5Gopen2 for a group the reader will look into: -1 (nothing open) when
 * it cannot be opened or group_header_ok finds it damaged. */
static hid_t open_group(struct reader *r, hid_t loc, const char *name)
{
	hid_t g = H5Gopen2(loc, name, H5P_DEFAULT);
	if (g >= 0 && group_header_ok(r, g) < 0) {
		H5Gclose(g);
		return -1;
	}
	return g;
}

/* Reads a scalar numeric attribute converted to mtype. Returns 1 when read,
 * 0 when absent, -1 when present but not a single number. */
static int attr_num(hid_t loc, const char *name, hid_t mtype, void *v)
{
	htri_t ex = H5Aexists(loc, name);
	if (ex <= 0)
		return ex < 0 ? -1 : 0;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = -1, s = -1;
	int rc = -1;
	if (a < 0)
		return -1;
	if ((t = H5Aget_type(a)) >= 0 && (s = H5Aget_space(a)) >= 0 &&
	    (H5Tget_class(t) == H5T_INTEGER || H5Tget_class(t) == H5T_FLOAT) &&
	    H5Sget_simple_extent_npoints(s) == 1 && H5Aread(a, mtype, v) >= 0)
		rc = 1;
	h5close(t); h5close(s);
	H5Aclose(a);
	return rc;
}

/* Reads an open attribute holding one string (fixed or variable length) into
 * a malloc'd copy. Returns 1, -1 when it is not one string, -2 on OOM. */
static int attr_str_open(struct reader *r, hid_t a, char **out)
{
	hid_t t = H5Aget_type(a), s = H5Aget_space(a), m = -1;
	int rc = -1;
	htri_t var;
	if (t < 0 || s < 0 || H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1 ||
	    (var = H5Tis_variable_str(t)) < 0 || (m = H5Tcopy(H5T_C_S1)) < 0 ||
	    H5Tset_cset(m, H5Tget_cset(t)) < 0)
		goto out;
	if (var) {
		char *v = NULL;
		if ((rc = vlen_strings_ok(r, a, 0, 1)) < 0 || (rc = -1, H5Tset_size(m, H5T_VARIABLE) < 0) ||
		    H5Aread(a, m, &v) < 0)
			goto out;
		*out = strdup(v ? v : "");
		H5free_memory(v);
	} else {
		size_t n = H5Tget_size(t);
		if (n == 0 || n > (1u << 24) || H5Tset_size(m, n + 1) < 0 ||
		    H5Tset_strpad(m, H5T_STR_NULLTERM) < 0)
			goto out;
		if (!(*out = calloc(1, n + 1)))
			goto out_oom;
		if (H5Aread(a, m, *out) < 0) {
			free(*out);
			*out = NULL;
			goto out;
		}
	}
out_oom:
	rc = *out ? 1 : -2;
out:
	h5close(m); h5close(t); h5close(s);
	return rc;
}

/* Like attr_num for a string attribute: 1, 0 (absent), -1, or -2 (OOM). */
static int attr_str(struct reader *r, hid_t loc, const char *name, char **out)
{
	htri_t ex = H5Aexists(loc, name);
	if (ex <= 0)
		return ex < 0 ? -1 : 0;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
	if (a < 0)
		return -1;
	int rc = attr_str_open(r, a, out);
	H5Aclose(a);
	return rc;
}

/* Checks where a dataset's elements are stored before HDF5 is asked to read
 * them: HDF5 1.10 trusts its chunk index and its compact and contiguous
 * layouts, and a damaged one makes it copy past the end of its own buffers
 * (a chunk recorded smaller than the chunk shape says, or at an address
 * shared with another). So: known filters only (deflate, shuffle,
 * fletcher32); a compact dataset holds exactly its bytes; a contiguous one
 * lies inside the file; a chunked one has no more chunks than its extent
 * needs, each found where its coordinates say, inside the file, non-empty,
 * and exactly chunk-sized unless filtered (then at most what deflate can
 * make of a chunk). n elements of tsize bytes; layout from dcpl. */
static enum sp_err storage_ok(struct reader *r, hid_t ds, hid_t dcpl, H5D_layout_t layout, const char *ctx,
			      const char *name, hsize_t n, size_t tsize)
{
	hsize_t stored = H5Dget_storage_size(ds);
	if (layout == H5D_COMPACT) {
		if (stored != n * tsize)
			return rfail(r, SP_ECORRUPT, "%s/%s: compact storage of %llu bytes for %llu", ctx, name,
				     (unsigned long long)stored, (unsigned long long)(n * tsize));
		return SP_OK;
	}
	if (layout == H5D_CONTIGUOUS) {
		haddr_t at = H5Dget_offset(ds);
		if (stored && (at == HADDR_UNDEF || at > r->file_size || stored > r->file_size - at))
			return rfail(r, SP_ECORRUPT, "%s/%s: its data lies outside the file", ctx, name);
		return SP_OK;
	}
	int nf = H5Pget_nfilters(dcpl);
	hsize_t cdim = 0;
	if (nf < 0 || H5Pget_chunk(dcpl, 1, &cdim) != 1 || cdim == 0 || cdim > ((hsize_t)1 << 32) / tsize)
		return rfail(r, SP_ECORRUPT, "%s/%s: bad chunk shape", ctx, name);
	/* Each of the three filters read at most once (and nf < 32 for the
	 * chunks' filter masks below). */
	if (nf > 3)
		return rfail(r, SP_ECORRUPT, "%s/%s: %d filters, at most 3 are read", ctx, name, nf);
	for (int i = 0; i < nf; i++) {
		unsigned flags = 0;
		size_t ncd = 0;
		H5Z_filter_t f = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, NULL, 0, NULL, NULL);
		if (f != H5Z_FILTER_DEFLATE && f != H5Z_FILTER_SHUFFLE && f != H5Z_FILTER_FLETCHER32)
			return rfail(r, SP_ECORRUPT, "%s/%s: compressed with filter %d, which is not read",
				     ctx, name, (int)f);
	}
	hsize_t chunk = cdim * tsize, want = n ? (n - 1) / cdim + 1 : 0, have = 0, found = 0;
	/* A lookup per chunk: a million (2^16 calls each with our writer's
	 * chunks) is already a column no run writes. */
	hid_t space = H5Dget_space(ds);   /* H5S_ALL is not taken here in 1.10 */
	herr_t e = space < 0 ? -1 : H5Dget_num_chunks(ds, space, &have);
	h5close(space);
	if (e < 0 || have > want || have > ((hsize_t)1 << 20))
		return rfail(r, SP_ECORRUPT, "%s/%s: bad chunk index", ctx, name);
	for (hsize_t c = 0; c < want && found < have; c++) {
		hsize_t off = c * cdim, size = 0;
		haddr_t at = HADDR_UNDEF;
		unsigned mask = 0;
		if (H5Dget_chunk_info_by_coord(ds, &off, &mask, &at, &size) < 0)
			return rfail(r, SP_ECORRUPT, "%s/%s: bad chunk index", ctx, name);
		if (at == HADDR_UNDEF)
			continue;      /* never written: reads as the fill value */
		found++;
		int filtered = nf > 0 && (mask & ((1u << nf) - 1)) != ((1u << nf) - 1);
		if (at == 0 || size == 0 || at > r->file_size || size > r->file_size - at ||
		    (filtered ? size > chunk + chunk / 8 + 1024 : size != chunk))
			return rfail(r, SP_ECORRUPT, "%s/%s: chunk %llu is damaged (%llu bytes at %llu)", ctx,
				     name, (unsigned long long)c, (unsigned long long)size,
				     (unsigned long long)at);
	}
	if (found != have)
		return rfail(r, SP_ECORRUPT, "%s/%s: bad chunk index", ctx, name);
	return SP_OK;
}

/* Opens the 1-D column name in g and returns its length in *n; want is
 * H5T_STRING or H5T_INTEGER (which also accepts floats). Rejects layouts that
 * would read other files, and extents the stored bytes cannot back; deep
 * (for a column about to be read) also checks its storage (storage_ok),
 * which costs a lookup per chunk. */
static enum sp_err column_open(struct reader *r, hid_t g, const char *ctx, const char *name,
			       H5T_class_t want, int deep, hid_t *ds, hsize_t *n)
{
	hid_t t = -1, s = -1, dcpl = -1;
	enum sp_err rc = SP_ECORRUPT;
	int hl = hard_link(g, name);
	if (hl <= 0)
		return rfail(r, SP_ECORRUPT, "%s has no %s dataset", ctx, name);
	if ((*ds = H5Dopen2(g, name, H5P_DEFAULT)) < 0)
		return rfail(r, SP_ECORRUPT, "%s/%s is not a readable dataset", ctx, name);
	t = H5Dget_type(*ds);
	s = H5Dget_space(*ds);
	dcpl = H5Dget_create_plist(*ds);
	H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
	if (want == H5T_INTEGER ? cls != H5T_INTEGER && cls != H5T_FLOAT : cls != want) {
		rfail(r, rc, "%s/%s has the wrong type", ctx, name);
		goto out;
	}
	if (s < 0 || H5Sget_simple_extent_type(s) != H5S_SIMPLE || H5Sget_simple_extent_ndims(s) != 1 ||
	    H5Sget_simple_extent_dims(s, n, NULL) != 1) {
		rfail(r, rc, "%s/%s is not 1-D", ctx, name);
		goto out;
	}
	H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
	if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) ||
	    H5Pget_external_count(dcpl) != 0) {
		rfail(r, rc, "%s/%s has an unsupported storage layout", ctx, name);
		goto out;
	}
	size_t tsize = H5Tget_size(t);
	hsize_t stored = H5Dget_storage_size(*ds);
	if (tsize == 0 || *n > (hsize_t)-1 / 4096 / tsize) {
		rfail(r, rc, "%s/%s is too large", ctx, name);
		goto out;
	}
	/* Compressed chunks shrink data, but not beyond what deflate can do. */
	hsize_t need = *n * tsize, have = stored;
	if (layout == H5D_CHUNKED)
		have = stored > (hsize_t)-1 / 4096 ? (hsize_t)-1 : stored * 4096;
	if (need > have) {
		rfail(r, rc, "%s/%s is missing data (%llu of %llu bytes stored)", ctx, name,
		      (unsigned long long)stored, (unsigned long long)need);
		goto out;
	}
	rc = deep ? storage_ok(r, *ds, dcpl, layout, ctx, name, *n, tsize) : SP_OK;
out:
	h5close(t); h5close(s); h5close(dcpl);
	if (rc != SP_OK) {
		H5Dclose(*ds);
		*ds = -1;
	}
	return rc;
}

/* An event column of n elements of size sz, or NULL: large ones aligned
 * to 2 MiB and marked for transparent huge pages, so reading 16 MB costs a
 * handful of page faults instead of four thousand (numpy does the same for
 * h5py). Freed with free(). */
static void *alloc_column(size_t n, size_t sz)
{
	if (n > SIZE_MAX / sz)
		return NULL;
	size_t bytes = n * sz;
	const size_t huge = (size_t)2 << 20;
	if (bytes < 2 * huge)
		return malloc(bytes ? bytes : 1);
	void *p = NULL;
	if (posix_memalign(&p, huge, bytes) != 0)
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE);   /* a hint; failure is harmless */
	return p;
}

/* Allocates n elements of size sz (at least one byte), or NULL. */
static void *alloc_n(size_t n, size_t sz)
{
	if (n > SIZE_MAX / sz)
		return NULL;
	return malloc(n ? n * sz : 1);
}

/* The validation of a full read, in blocks the compiler vectorises (only
 * 64-bit subtract, or and add): a block whose every end - start, taken as
 * unsigned, is under 2^40 ns (18 minutes) has no call ending before it
 * starts and sums in 64 bits without wrapping; any other block is checked
 * and summed exactly. Sets *bad when a call ends before it starts, and
 * *sum to the total duration. */
#define CHECK_BLOCK 4096
static void check_events(const int64_t *starts, const int64_t *ends, size_t n, int *bad,
			 __int128 *sum)
{
	for (size_t c = 0; c < n; c += CHECK_BLOCK) {
		size_t m = n - c < CHECK_BLOCK ? n - c : CHECK_BLOCK;
		const int64_t *s = starts + c, *e = ends + c;
		uint64_t bits = 0, total = 0;
		for (size_t i = 0; i < m; i++) {
			uint64_t d = (uint64_t)e[i] - (uint64_t)s[i];
			bits |= d;
			total += d;
		}
		if (bits < ((uint64_t)1 << 40)) {
			*sum += total;
			continue;
		}
		for (size_t i = 0; i < m; i++) {
			if (e[i] < s[i]) {
				*bad = 1;
				return;
			}
			*sum += (__int128)e[i] - s[i];
		}
	}
}

/* Loads a region's event columns and checks every call has end >= start and
 * the durations add up without overflow. */
static enum sp_err read_events(struct reader *r, hid_t g, const char *ctx, struct sp_region_data *rd,
			       size_t *count)
{
	hid_t ds = -1, de = -1;
	hsize_t ns = 0, ne = 0;
	int64_t *starts = NULL, *ends = NULL;
	int32_t *lanes = NULL;
	enum sp_err rc;

	if ((rc = column_open(r, g, ctx, "start_times", H5T_INTEGER, 1, &ds, &ns)) != SP_OK ||
	    (rc = column_open(r, g, ctx, "end_times", H5T_INTEGER, 1, &de, &ne)) != SP_OK)
		goto out;
	if (ns != ne) {
		rc = rfail(r, SP_ECORRUPT, "%s: start_times and end_times differ in length (%llu vs %llu)",
			   ctx, (unsigned long long)ns, (unsigned long long)ne);
		goto out;
	}
	size_t n = (size_t)ns;
	if ((hsize_t)n != ns || !(starts = alloc_column(n, sizeof *starts)) ||
	    !(ends = alloc_column(n, sizeof *ends))) {
		rc = rfail(r, SP_ENOMEM, "%s: out of memory for %llu events", ctx, (unsigned long long)ns);
		goto out;
	}
	if (n && (H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, starts) < 0 ||
		  H5Dread(de, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ends) < 0)) {
		rc = rfail(r, SP_ECORRUPT, "%s: cannot read the event columns", ctx);
		goto out;
	}
	/* Every call ends no earlier than it starts, and the durations add up
	 * within 64 bits, so every single duration does too. */
	int bad = 0;
	__int128 sum = 0;
	check_events(starts, ends, n, &bad, &sum);
	if (bad) {
		size_t i = 0;
		while (ends[i] >= starts[i])
			i++;
		rc = rfail(r, SP_ECORRUPT, "%s: call %zu ends before it starts", ctx, i);
		goto out;
	}
	if (sum > INT64_MAX) {
		rc = rfail(r, SP_ECORRUPT, "%s: durations overflow 64 bits", ctx);
		goto out;
	}
	/* The optional thread lane of each call (--track-threads). */
	if (hard_link(g, "lanes") > 0) {
		hid_t dl = -1;
		hsize_t nl = 0;
		if ((rc = column_open(r, g, ctx, "lanes", H5T_INTEGER, 1, &dl, &nl)) != SP_OK)
			goto out;
		if (nl != ns)
			rc = rfail(r, SP_ECORRUPT, "%s: lanes and start_times differ in length", ctx);
		else if (!(lanes = alloc_column(n, sizeof *lanes)))
			rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu lanes", ctx, n);
		else if (n && H5Dread(dl, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, lanes) < 0)
			rc = rfail(r, SP_ECORRUPT, "%s: cannot read the lanes column", ctx);
		h5close(dl);
		if (rc != SP_OK)
			goto out;
	}
	rd->starts = starts;
	rd->ends = ends;
	rd->lanes = lanes;
	rd->owns_events = 1;
	starts = ends = NULL;
	lanes = NULL;
	*count = n;
out:
	free(starts);
	free(ends);
	free(lanes);
	h5close(ds); h5close(de);
	return rc;
}

/* A region's summary attributes agree with each other: 0 <= min <= max <=
 * total <= num_calls * max (total is the sum of the calls' durations), a mean
 * between min and max, a std that is not negative (NaN: not kept), and calls
 * inside [first_start_ns, last_end_ns]. */
static enum sp_err stats_ok(struct reader *r, const char *ctx, const struct sp_stats *st)
{
	const char *what = NULL;
	if (st->num_calls < 0)
		what = "num_calls is negative";
	else if (st->min_ns < 0 || st->max_ns < st->min_ns)
		what = "min_ns and max_ns are not 0 <= min <= max";
	else if (st->total_ns < st->max_ns || (__int128)st->total_ns > (__int128)st->num_calls * st->max_ns)
		what = "total_ns is not between max_ns and num_calls * max_ns";
	else if (!(st->mean_ns >= 0) || st->mean_ns < (double)st->min_ns * (1 - 1e-9) - 1 ||
		 st->mean_ns > (double)st->max_ns * (1 + 1e-9) + 1)
		what = "mean_ns is not between min_ns and max_ns";
	else if (st->std_ns < 0 || isinf(st->std_ns))
		what = "std_ns is negative or infinite";
	else if (st->num_calls > 0 && (st->last_end_ns < st->first_start_ns ||
				       (__int128)st->last_end_ns - st->first_start_ns < st->max_ns))
		what = "first_start_ns and last_end_ns do not span the longest call";
	if (!what)
		return SP_OK;
	return rfail(r, SP_ECORRUPT, "%s: inconsistent summary: %s (num_calls %lld, total_ns %lld, "
		     "min_ns %lld, max_ns %lld)", ctx, what, (long long)st->num_calls, (long long)st->total_ns,
		     (long long)st->min_ns, (long long)st->max_ns);
}

/* Without reading them: the event columns of a region, those it has, hold
 * num_calls calls each (their extents, cheap to read). A summary needs no
 * columns: a region may have none (stream_open and full reads refuse it). */
static enum sp_err extents_ok(struct reader *r, hid_t g, const char *ctx, int64_t num_calls)
{
	static const char *const cols[2] = {"start_times", "end_times"};
	for (int i = 0; i < 2; i++) {
		hid_t ds = -1;
		hsize_t n = 0;
		int hl = hard_link(g, cols[i]);
		if (hl < 0)
			return rfail(r, SP_ECORRUPT, "%s: cannot look up %s", ctx, cols[i]);
		if (hl == 0)
			continue;
		enum sp_err rc = column_open(r, g, ctx, cols[i], H5T_INTEGER, 0, &ds, &n);
		h5close(ds);
		if (rc != SP_OK)
			return rc;
		if (n != (hsize_t)num_calls)
			return rfail(r, SP_ECORRUPT, "%s: num_calls is %lld but %s holds %llu calls", ctx,
				     (long long)num_calls, cols[i], (unsigned long long)n);
	}
	return SP_OK;
}

static enum sp_err read_region(struct reader *r, hid_t regions, const char *link, int rankno,
			       int need_events, struct sp_region_data *rd)
{
	static const char *const inames[] = {"num_calls", "total_ns", "min_ns", "max_ns",
					     "first_start_ns", "last_end_ns"};
	struct sp_stats *st = &rd->stats;
	int64_t *ivals[] = {&st->num_calls, &st->total_ns, &st->min_ns, &st->max_ns,
			    &st->first_start_ns, &st->last_end_ns};
	enum sp_err rc = SP_OK;
	char ctx[256];
	int got = 0, a;
	size_t n = 0;

	snprintf(ctx, sizeof ctx, "rank%d/regions/%s", rankno, link);
	hid_t g = open_group(r, regions, link);
	if (g < 0)
		return rfail(r, SP_ECORRUPT, "%s is not a group", ctx);
	if ((a = attr_str(r, g, "name", &rd->name)) == 0)
		rd->name = sp_h5_unescape(link);
	if (a == -2 || (a == 0 && !rd->name)) {
		rc = rfail(r, SP_ENOMEM, "out of memory");
		goto out;
	}
	if (a < 0 || !rd->name[0]) {
		rc = rfail(r, SP_ECORRUPT, "%s: bad 'name' attribute", ctx);
		goto out;
	}
	for (size_t i = 0; i < 8; i++) {
		if (i < 6)
			a = attr_num(g, inames[i], H5T_NATIVE_INT64, ivals[i]);
		else
			a = attr_num(g, i == 6 ? "mean_ns" : "std_ns", H5T_NATIVE_DOUBLE,
				     i == 6 ? &st->mean_ns : &st->std_ns);
		if (a < 0) {
			rc = rfail(r, SP_ECORRUPT, "%s: unreadable summary attribute", ctx);
			goto out;
		}
		got += a;
	}
	if (got == 8 && (rc = stats_ok(r, ctx, st)) != SP_OK)
		goto out;
	if (attr_num(g, "dropped_events", H5T_NATIVE_INT64, &rd->dropped) < 0 || rd->dropped < 0) {
		rc = rfail(r, SP_ECORRUPT, "%s: bad 'dropped_events' attribute", ctx);
		goto out;
	}
	/* Aggregation mode: the summary and the self time, no events. */
	int32_t agg = 0;
	if ((a = attr_num(g, "aggregate", H5T_NATIVE_INT32, &agg)) < 0 ||
	    (a == 1 && agg == 1 && attr_num(g, "self_ns", H5T_NATIVE_INT64, &rd->self_ns) != 1)) {
		rc = rfail(r, SP_ECORRUPT, "%s: bad 'aggregate' or 'self_ns' attribute", ctx);
		goto out;
	}
	if (a == 1 && agg == 1) {
		if (got != 8)
			rc = rfail(r, SP_ECORRUPT, "%s: aggregates without their summary attributes", ctx);
		rd->aggregate = 1;
		goto out;
	}
	if (got == 8 && !need_events) {
		rc = extents_ok(r, g, ctx, st->num_calls);
		goto out;
	}
	if ((rc = read_events(r, g, ctx, rd, &n)) != SP_OK)
		goto out;
	if (got != 8)
		sp_stats_compute(st, rd->starts, rd->ends, n);
	else if ((uint64_t)st->num_calls != n)
		rc = rfail(r, SP_ECORRUPT, "%s: num_calls is %lld but there are %zu events", ctx,
			   (long long)st->num_calls, n);
out:
	H5Gclose(g);
	return rc;
}

static int name_ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_ref *)a)->name, ((const struct name_ref *)b)->name);
}

/* Reads the four tree columns; regions are given by name and looked up in
 * idx (nidx entries sorted by name). */
static enum sp_err read_tree(struct reader *r, hid_t rank_g, int rankno, const struct name_ref *idx,
			     size_t nidx, struct sp_rank *rk)
{
	static const char *const cols[4] = {"parent", "region", "calls", "total_ns"};
	hid_t tg = -1, ds[4] = {-1, -1, -1, -1}, mt = -1, space = -1, ft = -1;
	hsize_t len[4];
	int32_t *parent = NULL;
	int64_t *calls = NULL, *total = NULL;
	char **vnames = NULL, *fnames = NULL;
	size_t fsize = 0, n = 0;
	int vlen = 0, a;
	struct sp_tree_node *tree = NULL;
	enum sp_err rc = SP_OK;
	char ctx[32];

	snprintf(ctx, sizeof ctx, "rank%d/tree", rankno);
	if ((tg = open_group(r, rank_g, "tree")) < 0)
		return rfail(r, SP_ECORRUPT, "%s is not a group", ctx);
	for (int i = 0; i < 4; i++)
		if ((rc = column_open(r, tg, ctx, cols[i], i == 1 ? H5T_STRING : H5T_INTEGER, 1, &ds[i],
				      &len[i])) != SP_OK)
			goto out;
	if (len[1] != len[0] || len[2] != len[0] || len[3] != len[0] || len[0] > INT32_MAX) {
		rc = rfail(r, SP_ECORRUPT, "%s: columns of different lengths", ctx);
		goto out;
	}
	n = (size_t)len[0];
	parent = alloc_n(n, sizeof *parent);
	calls = alloc_n(n, sizeof *calls);
	total = alloc_n(n, sizeof *total);
	tree = alloc_n(n, sizeof *tree);
	if ((ft = H5Dget_type(ds[1])) < 0 || (space = H5Dget_space(ds[1])) < 0 ||
	    (mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 ||
	    (vlen = H5Tis_variable_str(ft)) < 0) {
		rc = rfail(r, SP_ECORRUPT, "%s/region: unreadable type", ctx);
		goto out;
	}
	fsize = vlen ? 0 : H5Tget_size(ft);
	if (vlen ? H5Tset_size(mt, H5T_VARIABLE) < 0
		 : (fsize == 0 || fsize >= SIZE_MAX - 1 || H5Tset_size(mt, fsize + 1) < 0 ||
		    H5Tset_strpad(mt, H5T_STR_NULLTERM) < 0)) {
		rc = rfail(r, SP_ECORRUPT, "%s/region: unreadable type", ctx);
		goto out;
	}
	if (vlen)
		vnames = n ? calloc(n, sizeof *vnames) : malloc(1);
	else
		fnames = alloc_n(n, fsize + 1);
	if (!parent || !calls || !total || !tree || (vlen ? !vnames : !fnames)) {
		rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu nodes", ctx, n);
		goto out;
	}
	if (vlen && (a = vlen_strings_ok(r, ds[1], 1, n)) < 0) {
		rc = rfail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "%s/region: damaged strings", ctx);
		goto out;
	}
	if (n && (H5Dread(ds[0], H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, parent) < 0 ||
		  H5Dread(ds[1], mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vlen ? (void *)vnames : fnames) < 0 ||
		  H5Dread(ds[2], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, calls) < 0 ||
		  H5Dread(ds[3], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, total) < 0)) {
		rc = rfail(r, SP_ECORRUPT, "%s: cannot read the tree columns", ctx);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct name_ref key = {vlen ? vnames[i] : fnames + i * (fsize + 1), 0}, *hit;
		if (!key.name || !(hit = bsearch(&key, idx, nidx, sizeof *idx, name_ref_cmp))) {
			rc = rfail(r, SP_ECORRUPT, "%s: node %zu names no region of this rank", ctx, i);
			goto out;
		}
		if (parent[i] < -1 || (parent[i] >= 0 && (size_t)parent[i] >= i)) {
			rc = rfail(r, SP_ECORRUPT, "%s: node %zu has a bad parent %d", ctx, i, (int)parent[i]);
			goto out;
		}
		tree[i] = (struct sp_tree_node){parent[i], hit->idx, calls[i], total[i]};
	}
	free(rk->tree);
	rk->tree = tree;
	rk->ntree = n;
	tree = NULL;
out:
	if (vnames && n)
		vlen_reclaim(mt, space, vnames);
	free(vnames);
	free(fnames);
	free(parent);
	free(calls);
	free(total);
	free(tree);
	h5close(mt); h5close(ft); h5close(space);
	for (int i = 0; i < 4; i++)
		h5close(ds[i]);
	H5Gclose(tg);
	return rc;
}

/* Reads a string attribute of a line table that must be there. */
static enum sp_err line_attr_str(struct reader *r, hid_t g, const char *ctx, const char *name,
				 char **out)
{
	int a = attr_str(r, g, name, out);
	if (a == -2)
		return rfail(r, SP_ENOMEM, "out of memory");
	if (a == 0)
		return rfail(r, SP_ECORRUPT, "%s has no '%s' attribute", ctx, name);
	if (a < 0)
		return rfail(r, SP_ECORRUPT, "%s: bad '%s' attribute", ctx, name);
	return SP_OK;
}

/* Reads the source column (n strings, fixed or variable length) of ds into
 * t->source, a calloc'd array of malloc'd strings; a missing line is "". */
static enum sp_err read_source(struct reader *r, hid_t ds, const char *ctx, size_t n,
			       struct sp_line_table *t)
{
	hid_t ft = -1, mt = -1, space = -1;
	char **vlines = NULL, *fixed = NULL;
	size_t fsize = 0;
	int vlen = 0, a;
	enum sp_err rc = SP_OK;

	if ((ft = H5Dget_type(ds)) < 0 || (space = H5Dget_space(ds)) < 0 ||
	    (mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 ||
	    (vlen = H5Tis_variable_str(ft)) < 0) {
		rc = rfail(r, SP_ECORRUPT, "%s/source: unreadable type", ctx);
		goto out;
	}
	fsize = vlen ? 0 : H5Tget_size(ft);
	if (vlen ? H5Tset_size(mt, H5T_VARIABLE) < 0
		 : (fsize == 0 || fsize >= SIZE_MAX - 1 || H5Tset_size(mt, fsize + 1) < 0 ||
		    H5Tset_strpad(mt, H5T_STR_NULLTERM) < 0)) {
		rc = rfail(r, SP_ECORRUPT, "%s/source: unreadable type", ctx);
		goto out;
	}
	if (!(t->source = calloc(n ? n : 1, sizeof *t->source)) ||
	    (vlen ? !(vlines = calloc(n ? n : 1, sizeof *vlines)) : !(fixed = alloc_n(n, fsize + 1)))) {
		rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu source lines", ctx, n);
		goto out;
	}
	if (vlen && (a = vlen_strings_ok(r, ds, 1, n)) < 0) {
		rc = rfail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "%s/source: damaged strings", ctx);
		goto out;
	}
	if (n && H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vlen ? (void *)vlines : fixed) < 0) {
		rc = rfail(r, SP_ECORRUPT, "%s: cannot read the source column", ctx);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *line = vlen ? vlines[i] : fixed + i * (fsize + 1);
		if (!(t->source[i] = strdup(line ? line : ""))) {
			rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu source lines", ctx, n);
			goto out;
		}
	}
out:
	if (vlines && n)
		vlen_reclaim(mt, space, vlines);
	free(vlines);
	free(fixed);
	h5close(mt); h5close(ft); h5close(space);
	return rc;
}

/* Reads the line table in group `link` of g into *t (zeroed by the caller);
 * on failure the caller clears *t. */
static enum sp_err read_line_table(struct reader *r, hid_t lines, int rankno, const char *link,
				   struct sp_line_table *t)
{
	static const char *const cols[2] = {"hits", "time_ns"};
	hid_t g = -1, ds[3] = {-1, -1, -1};
	hsize_t len[3];
	int64_t first = 0;
	enum sp_err rc = SP_OK;
	char ctx[256];
	int a;

	snprintf(ctx, sizeof ctx, "rank%d/lines/%.200s", rankno, link);
	if ((g = open_group(r, lines, link)) < 0)
		return rfail(r, SP_ECORRUPT, "%s is not a group", ctx);
	if ((rc = line_attr_str(r, g, ctx, "function", &t->function)) != SP_OK ||
	    (rc = line_attr_str(r, g, ctx, "region", &t->region)) != SP_OK ||
	    (rc = line_attr_str(r, g, ctx, "filename", &t->filename)) != SP_OK)
		goto out;
	if ((a = attr_num(g, "first_line", H5T_NATIVE_INT64, &first)) <= 0) {
		rc = rfail(r, SP_ECORRUPT, a == 0 ? "%s has no 'first_line' attribute"
						  : "%s: bad 'first_line' attribute", ctx);
		goto out;
	}
	if (first < 0 || first > INT32_MAX) {
		rc = rfail(r, SP_ECORRUPT, "%s: first_line %lld out of range", ctx, (long long)first);
		goto out;
	}
	t->first_line = (int32_t)first;
	for (int i = 0; i < 3; i++)
		if ((rc = column_open(r, g, ctx, i < 2 ? cols[i] : "source",
				      i < 2 ? H5T_INTEGER : H5T_STRING, 1, &ds[i], &len[i])) != SP_OK)
			goto out;
	if (len[1] != len[0] || len[2] != len[0]) {
		rc = rfail(r, SP_ECORRUPT, "%s: hits, time_ns and source differ in length", ctx);
		goto out;
	}
	/* The last line's number must be an int32 too. */
	if (len[0] && len[0] - 1 > (hsize_t)(INT32_MAX - t->first_line)) {
		rc = rfail(r, SP_ECORRUPT, "%s: %llu lines from line %d run past the last line number", ctx,
			   (unsigned long long)len[0], (int)t->first_line);
		goto out;
	}
	size_t n = (size_t)len[0];
	if (!(t->hits = alloc_n(n, sizeof *t->hits)) || !(t->time_ns = alloc_n(n, sizeof *t->time_ns))) {
		rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu lines", ctx, n);
		goto out;
	}
	if (n && (H5Dread(ds[0], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->hits) < 0 ||
		  H5Dread(ds[1], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->time_ns) < 0)) {
		rc = rfail(r, SP_ECORRUPT, "%s: cannot read the hits and time_ns columns", ctx);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (t->hits[i] < 0 || t->time_ns[i] < 0) {
			rc = rfail(r, SP_ECORRUPT, "%s: negative %s at line %lld", ctx,
				   t->hits[i] < 0 ? "hits" : "time", (long long)t->first_line + (long long)i);
			goto out;
		}
	if ((rc = read_source(r, ds[2], ctx, n, t)) != SP_OK)
		goto out;
	t->n = n;              /* only now: clearing frees n source lines */
out:
	for (int i = 0; i < 3; i++)
		h5close(ds[i]);
	H5Gclose(g);
	return rc;
}

/* Orders line-table links by number ("2" before "10"), other names after,
 * by name, so that a file without tracked creation order reads the same. */
static int line_link_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t dx = strspn(x, "0123456789"), dy = strspn(y, "0123456789");
	int nx = dx && !x[dx], ny = dy && !y[dy];
	if (nx != ny)
		return ny - nx;
	if (nx) {
		while (dx > 1 && *x == '0')
			x++, dx--;
		while (dy > 1 && *y == '0')
			y++, dy--;
		if (dx != dy)
			return dx < dy ? -1 : 1;
	}
	return strcmp(x, y);
}

/* Reads the rank's per-line tables (group lines, one subgroup per table);
 * small, so read in either mode. */
static enum sp_err read_lines(struct reader *r, hid_t rank_g, struct sp_rank *rk)
{
	struct names nl = {0};
	struct sp_line_table t = {0};
	enum sp_err rc = SP_OK;
	hid_t g;
	int a;

	if ((g = open_group(r, rank_g, "lines")) < 0)
		return rfail(r, SP_ECORRUPT, "rank%d/lines is not a group", rk->rank);
	if ((a = list_links(g, &nl)) < 0) {
		rc = rfail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "rank%d: cannot list the line tables",
			   rk->rank);
		goto out;
	}
	qsort(nl.v, nl.n, sizeof *nl.v, line_link_cmp);
	if (nl.n && !(rk->lines = calloc(nl.n, sizeof *rk->lines))) {
		rc = rfail(r, SP_ENOMEM, "rank%d: out of memory for %zu line tables", rk->rank, nl.n);
		goto out;
	}
	for (size_t i = 0; i < nl.n; i++) {
		if ((rc = read_line_table(r, g, rk->rank, nl.v[i], &t)) != SP_OK) {
			sp_line_table_clear(&t);
			goto out;
		}
		rk->lines[rk->nlines++] = t;   /* freed with the profile from here on */
		t = (struct sp_line_table){0};
	}
out:
	names_free(&nl);
	H5Gclose(g);
	return rc;
}

/* A rank group's attributes (each optional): run start and end, pid,
 * hostname, clock offset and calls not recorded (0 when absent). */
static enum sp_err read_rank_attrs(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk)
{
	int a = 0;
	if (attr_num(g, "run_start_time", H5T_NATIVE_INT64, &rk->run_start_ns) < 0 ||
	    attr_num(g, "run_end_time", H5T_NATIVE_INT64, &rk->run_end_ns) < 0 ||
	    attr_num(g, "pid", H5T_NATIVE_INT64, &rk->pid) < 0 ||
	    attr_num(g, "clock_offset_ns", H5T_NATIVE_INT64, &rk->clock_offset_ns) < 0 ||
	    attr_num(g, "dropped_events", H5T_NATIVE_INT64, &rk->dropped) < 0 ||
	    (a = attr_str(r, g, "hostname", &rk->hostname)) == -1)
		return rfail(r, SP_ECORRUPT, "%s: unreadable attribute", gname);
	if (a == -2)
		return rfail(r, SP_ENOMEM, "out of memory");
	if (rk->dropped < 0)
		return rfail(r, SP_ECORRUPT, "%s: negative dropped_events", gname);
	return SP_OK;
}

/* Opens rank group g's regions group into *regions, lists its links into
 * *nl and allocates rk->regions for them (rk->nregions stays 0). */
static enum sp_err open_regions(struct reader *r, hid_t g, const char *gname, hid_t *regions,
				struct names *nl, struct sp_rank *rk)
{
	int a;
	if (hard_link(g, "regions") != 1 || (*regions = open_group(r, g, "regions")) < 0)
		return rfail(r, SP_ECORRUPT, "%s has no regions group", gname);
	if ((a = list_links(*regions, nl)) < 0)
		return rfail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "%s: cannot list the regions", gname);
	if (nl->n > INT32_MAX || !(rk->regions = calloc(nl->n ? nl->n : 1, sizeof *rk->regions)))
		return rfail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, nl->n);
	return SP_OK;
}

static enum sp_err read_rank(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	hid_t g = -1, regions = -1;
	struct names nl = {0};
	struct name_ref *idx = NULL;
	enum sp_err rc = SP_OK;
	int has_tree, a = 0;

	if ((g = open_group(r, file, gname)) < 0)
		return rfail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = read_rank_attrs(r, g, gname, rk)) != SP_OK)
		goto out;
	if ((rc = open_regions(r, g, gname, &regions, &nl, rk)) != SP_OK)
		goto out;
	if ((has_tree = hard_link(g, "tree")) < 0) {
		rc = rfail(r, SP_ECORRUPT, "%s: cannot look up the tree", gname);
		goto out;
	}
	if (!(idx = alloc_n(nl.n, sizeof *idx))) {
		rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, nl.n);
		goto out;
	}
	rk->nregions = nl.n;
	int need_events = (r->flags & SP_READ_EVENTS) || !has_tree;
	for (size_t i = 0; i < nl.n; i++) {
		if ((rc = read_region(r, regions, nl.v[i], rk->rank, need_events, &rk->regions[i])) != SP_OK)
			goto out;
		idx[i] = (struct name_ref){rk->regions[i].name, (int32_t)i};
	}
	qsort(idx, nl.n, sizeof *idx, name_ref_cmp);
	for (size_t i = 1; i < nl.n; i++)
		if (strcmp(idx[i - 1].name, idx[i].name) == 0) {
			rc = rfail(r, SP_ECORRUPT, "%s has two regions named '%s'", gname, idx[i].name);
			goto out;
		}
	if (has_tree) {
		rc = read_tree(r, g, rk->rank, idx, nl.n, rk);
	} else if ((rc = sp_tree_build(rk, r->err)) != SP_OK) {
		char msg[sizeof r->err->msg];
		snprintf(msg, sizeof msg, "%s", r->err ? r->err->msg : "cannot build the call tree");
		rfail(r, rc, "%s", msg);
	}
	if (rc != SP_OK)
		goto out;
	if ((a = hard_link(g, "lines")) < 0)
		rc = rfail(r, SP_ECORRUPT, "%s: cannot look up the line tables", gname);
	else if (a == 1)
		rc = read_lines(r, g, rk);
out:
	free(idx);
	names_free(&nl);
	h5close(regions);
	H5Gclose(g);
	return rc;
}

/* A single integer or float attribute as text: 1, -1 (something else), -2 (OOM). */
static int attr_num_text(hid_t a, char **out)
{
	hid_t t = H5Aget_type(a), s = H5Aget_space(a);
	H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
	int rc = -1;
	char buf[40];
	int64_t i;
	double d;
	if (s >= 0 && H5Sget_simple_extent_npoints(s) == 1) {
		if (cls == H5T_INTEGER && H5Aread(a, H5T_NATIVE_INT64, &i) >= 0)
			rc = snprintf(buf, sizeof buf, "%lld", (long long)i);
		else if (cls == H5T_FLOAT && H5Aread(a, H5T_NATIVE_DOUBLE, &d) >= 0)
			rc = snprintf(buf, sizeof buf, "%.17g", d);
		if (rc >= 0)
			rc = (*out = strdup(buf)) ? 1 : -2;
	}
	h5close(t); h5close(s);
	return rc;
}

struct meta_op {
	struct reader *r;
	struct sp_profile *p;
};

static herr_t meta_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op)
{
	struct sp_profile *p = ((struct meta_op *)op)->p;
	char *value = NULL, *key = NULL;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
	(void)info;
	if (a < 0)
		return 0;
	int rc = attr_str_open(((struct meta_op *)op)->r, a, &value);
	if (rc == -1)
		rc = attr_num_text(a, &value);
	H5Aclose(a);
	if (rc == -1)
		return 0;              /* neither a string nor a number: skipped */
	if (rc == -2 || !(key = strdup(name)))
		goto oom;
	if ((p->nmeta & (p->nmeta - 1)) == 0) { /* full at every power of two */
		size_t cap = p->nmeta ? p->nmeta * 2 : 1;
		struct sp_kv *m = cap <= SIZE_MAX / sizeof *m ? realloc(p->meta, cap * sizeof *m) : NULL;
		if (!m)
			goto oom;
		p->meta = m;
	}
	p->meta[p->nmeta++] = (struct sp_kv){key, value};
	return 0;
oom:
	free(key);
	free(value);
	return -1;
}

/* The string attributes of /metadata, in creation order when tracked. */
static enum sp_err read_meta(struct reader *r, hid_t file, struct sp_profile *p)
{
	hid_t g = open_group(r, file, "metadata"), gcpl;
	unsigned crt = 0;
	if (g < 0)
		return rfail(r, SP_ECORRUPT, "metadata is not a group");
	if ((gcpl = H5Gget_create_plist(g)) >= 0) {
		if (H5Pget_attr_creation_order(gcpl, &crt) < 0)
			crt = 0;
		H5Pclose(gcpl);
	}
	herr_t e = -1;
	for (int by_name = !(crt & H5P_CRT_ORDER_TRACKED); by_name < 2 && e < 0; by_name++) {
		for (size_t i = 0; i < p->nmeta; i++) {
			free(p->meta[i].key);
			free(p->meta[i].value);
		}
		p->nmeta = 0;
		e = H5Aiterate2(g, by_name ? H5_INDEX_NAME : H5_INDEX_CRT_ORDER, H5_ITER_INC, NULL,
				meta_cb, &(struct meta_op){r, p});
	}
	H5Gclose(g);
	if (e < 0)
		return rfail(r, SP_ECORRUPT, "cannot read the metadata");
	return SP_OK;
}

static int rank_cmp(const void *a, const void *b)
{
	int x = ((const struct sp_rank *)a)->rank, y = ((const struct sp_rank *)b)->rank;
	return (x > y) - (x < y);
}

/* "rank<digits>" -> the number, or -1. */
static int rank_number(const char *name)
{
	long long v = 0;
	if (strncmp(name, "rank", 4) != 0 || !name[4])
		return -1;
	for (const char *c = name + 4; *c; c++) {
		if (*c < '0' || *c > '9' || (v = v * 10 + (*c - '0')) > INT_MAX)
			return -1;
	}
	return (int)v;
}

/* An address of n bytes at b: its value, or UINT64_MAX for HDF5's
 * undefined address (all bits set) or one that does not fit 64 bits. */
static uint64_t sb_addr(const unsigned char *b, size_t n, int *undef)
{
	int ones = 1, high = 0;
	for (size_t i = 0; i < n; i++) {
		ones &= b[i] == 0xff;
		high |= i >= 8 && b[i];
	}
	*undef = ones;
	return ones || high ? UINT64_MAX : le_uint(b, n < 8 ? n : 8);
}

/* HDF5 1.10 reads the driver information block of a version 0 or 1
 * superblock as long as the block says it is (a 32-bit length: up to 4 GiB,
 * zero-filled past the end of the file) before checking anything: a 10 KB
 * file had it allocate and clear a gigabyte. Returns 0 when there is no
 * such block or it lies inside the file, -1 otherwise. */
static int driver_info_ok(int fd, uint64_t size)
{
	static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	unsigned char b[28 + 4 * 32], hdr[8];
	/* Where HDF5 looks for the superblock: 0, 512, 1024, 2048, ... */
	for (uint64_t at = 0; at < size && size - at >= sizeof sig; at = at ? at * 2 : 512) {
		ssize_t got = pread(fd, b, sizeof b, (off_t)at);
		if (got < (ssize_t)sizeof sig || memcmp(b, sig, sizeof sig) != 0)
			continue;
		size_t sa = got > 13 ? b[13] : 0, off = b[8] == 1 ? 28 : 24;
		if (b[8] > 1 || (sa != 2 && sa != 4 && sa != 8 && sa != 16 && sa != 32) ||
		    (size_t)got < off + 4 * sa)
			return 0;      /* no such block, or HDF5 refuses the superblock */
		int undef;
		uint64_t drv = sb_addr(b + off + 3 * sa, sa, &undef);
		if (undef)
			return 0;
		if (drv > size || at > size - drv || size - at - drv < sizeof hdr + 8 ||
		    pread(fd, hdr, sizeof hdr, (off_t)(at + drv)) != (ssize_t)sizeof hdr)
			return -1;
		return le_uint(hdr + 4, 4) <= size - at - drv - sizeof hdr - 8 ? 0 : -1;
	}
	return 0;
}

/* Sorts out what the OS can say before HDF5 is asked: missing, a directory,
 * unreadable, empty; and what HDF5 would trust in its superblock. */
static enum sp_err check_path(struct reader *r)
{
	struct stat sb;
	if (stat(r->path, &sb) != 0)
		return rfail(r, errno == ENOENT ? SP_ENOENT : SP_EIO, "%s", strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return rfail(r, SP_EIO, "is a directory");
	if (!S_ISREG(sb.st_mode))
		return rfail(r, SP_EIO, "not a regular file");
	int fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rfail(r, SP_EIO, "%s", strerror(errno));
	r->file_size = (uint64_t)sb.st_size;
	int drv = driver_info_ok(fd, r->file_size);
	close(fd);
	if (sb.st_size == 0 || is_hdf5(r->path) <= 0)
		return rfail(r, SP_ENOTHDF5, "not an HDF5 file");
	if (drv < 0)
		return rfail(r, SP_ENOTHDF5, "truncated or damaged HDF5 file (driver information block)");
	return SP_OK;
}

/* A profile open for streaming its events (sp_h5_stream_open). */
struct sp_h5_stream {
	struct reader r;
	char *path;
	hid_t file;
	struct sp_profile *p;
	char **groups;                 /* per rank: the rank group's link name */
	char ***links;                 /* per rank, per region: the region's link name */
	size_t ri, gi;                 /* the region whose columns are open, if any */
	hid_t cols[3];                 /* its start_times, end_times, lanes; -1: none */
};

static void close_columns(hid_t cols[3])
{
	for (int i = 0; i < 3; i++) {
		h5close(cols[i]);
		cols[i] = -1;
	}
}

/* Opens the event columns of region group g (start_times, end_times, and
 * lanes when present) into cols, each of exactly n events; deep: checks
 * their storage too (done once, at open, for every region). */
static enum sp_err stream_columns(struct reader *r, hid_t g, const char *ctx, int64_t n, hid_t cols[3],
				  int deep)
{
	static const char *const names[3] = {"start_times", "end_times", "lanes"};
	enum sp_err rc = SP_OK;
	for (int i = 0; i < 3 && rc == SP_OK; i++) {
		hsize_t len = 0;
		int hl = i < 2 ? 1 : hard_link(g, names[i]);
		if (hl < 0)
			rc = rfail(r, SP_ECORRUPT, "%s: cannot look up the lanes", ctx);
		else if (hl == 0)
			break;
		else if ((rc = column_open(r, g, ctx, names[i], H5T_INTEGER, deep, &cols[i], &len)) == SP_OK &&
			 len != (hsize_t)n)
			rc = rfail(r, SP_ECORRUPT, "%s: %s holds %llu calls, num_calls says %lld", ctx, names[i],
				   (unsigned long long)len, (long long)n);
	}
	if (rc != SP_OK)
		close_columns(cols);
	return rc;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Reads a rank's structure for a stream: attributes, region names and stats,
 * and checks every region's columns; keeps the link names for reading. */
static enum sp_err stream_rank(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	struct sp_h5_stream *s = r->stream;
	size_t ri = (size_t)(rk - s->p->ranks);
	hid_t g = -1, regions = -1, cols[3] = {-1, -1, -1};
	struct names nl = {0};
	const char **sorted = NULL;
	enum sp_err rc = SP_OK;

	if (!s->groups && (!(s->groups = calloc(s->p->nranks, sizeof *s->groups)) ||
			   !(s->links = calloc(s->p->nranks, sizeof *s->links))))
		return rfail(r, SP_ENOMEM, "out of memory");
	if (!(s->groups[ri] = strdup(gname)))
		return rfail(r, SP_ENOMEM, "out of memory");
	if ((g = open_group(r, file, gname)) < 0)
		return rfail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = read_rank_attrs(r, g, gname, rk)) != SP_OK)
		goto out;
	if ((rc = open_regions(r, g, gname, &regions, &nl, rk)) != SP_OK)
		goto out;
	if (!(sorted = alloc_n(nl.n, sizeof *sorted))) {
		rc = rfail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, nl.n);
		goto out;
	}
	rk->nregions = nl.n;
	for (size_t i = 0; i < nl.n; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		char ctx[256];
		if ((rc = read_region(r, regions, nl.v[i], rk->rank, 0, rd)) != SP_OK)
			goto out;
		sorted[i] = rd->name;
		if (rd->owns_events) {
			/* No summary attributes: the columns were read for the
			 * stats and checked; only the stats are kept. */
			sp_region_drop_events(rd);
			continue;
		}
		if (rd->stats.num_calls == 0 || rd->aggregate)
			continue;
		snprintf(ctx, sizeof ctx, "rank%d/regions/%s", rk->rank, nl.v[i]);
		hid_t rg = open_group(r, regions, nl.v[i]);
		rc = rg < 0 ? rfail(r, SP_ECORRUPT, "%s is not a group", ctx)
			    : stream_columns(r, rg, ctx, rd->stats.num_calls, cols, 1);
		close_columns(cols);
		h5close(rg);
		if (rc != SP_OK)
			goto out;
	}
	qsort(sorted, nl.n, sizeof *sorted, str_ptr_cmp);
	for (size_t i = 1; i < nl.n; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0) {
			rc = rfail(r, SP_ECORRUPT, "%s has two regions named '%s'", gname, sorted[i]);
			goto out;
		}
	s->links[ri] = nl.v;           /* nl.n == rk->nregions from here on */
	nl = (struct names){0};
out:
	free(sorted);
	names_free(&nl);
	h5close(regions);
	H5Gclose(g);
	return rc;
}

/* Reads the file's structure into p; the caller frees p on failure. */
static enum sp_err read_file(struct reader *r, hid_t file, struct sp_profile *p)
{
	struct names nl = {0};
	enum sp_err rc = SP_OK;
	char *format = NULL;
	int32_t version = 0;
	int a;

	hid_t root = open_group(r, file, "/");
	h5close(root);
	if (root < 0) {
		rc = rfail(r, SP_ECORRUPT, "damaged root group");
		goto out;
	}
	if ((a = attr_str(r, file, "format", &format)) < 0 ||
	    attr_num(file, "format_version", H5T_NATIVE_INT32, &version) < 0) {
		rc = rfail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "unreadable file attributes");
		goto out;
	}
	if (format && strcmp(format, "scope-profiler") != 0) {
		rc = rfail(r, SP_ENOTPROF, "not a scope-profiler file (format '%.64s')", format);
		goto out;
	}
	if (version < 0 || version > 1) {
		rc = rfail(r, SP_ENOTPROF, "format version %d is not supported (1 is)", (int)version);
		goto out;
	}
	p->format_version = version;
	if ((a = list_links(file, &nl)) < 0) {
		rc = rfail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "cannot list the root group");
		goto out;
	}
	size_t nr = 0;
	for (size_t i = 0; i < nl.n; i++)
		nr += rank_number(nl.v[i]) >= 0;
	if (nr == 0) {
		rc = rfail(r, SP_ENOTPROF, "not a scope-profiler file (no rank groups)");
		goto out;
	}
	if (!(p->ranks = calloc(nr, sizeof *p->ranks))) {
		rc = rfail(r, SP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nl.n; i++) {
		int k = rank_number(nl.v[i]);
		if (k < 0)
			continue;
		p->ranks[p->nranks++] = (struct sp_rank){
			.rank = k, .run_start_ns = SP_NO_TIME, .run_end_ns = SP_NO_TIME};
	}
	qsort(p->ranks, p->nranks, sizeof *p->ranks, rank_cmp);
	for (size_t i = 1; i < p->nranks; i++)
		if (p->ranks[i].rank == p->ranks[i - 1].rank) {
			rc = rfail(r, SP_ECORRUPT, "two groups for rank %d", p->ranks[i].rank);
			goto out;
		}
	for (size_t i = 0; i < p->nranks; i++) {
		char gname[32];
		snprintf(gname, sizeof gname, "rank%d", p->ranks[i].rank);
		/* "rank007" names rank 7 too: find the link actually listed. */
		if (hard_link(file, gname) != 1)
			for (size_t j = 0; j < nl.n; j++)
				if (rank_number(nl.v[j]) == p->ranks[i].rank)
					snprintf(gname, sizeof gname, "%.31s", nl.v[j]);
		if ((rc = (r->stream ? stream_rank : read_rank)(r, file, gname, &p->ranks[i])) != SP_OK)
			goto out;
	}
	if ((a = hard_link(file, "metadata")) == 1)
		rc = read_meta(r, file, p);
	else if (a < 0)
		rc = rfail(r, SP_ECORRUPT, "cannot look up the metadata");
out:
	free(format);
	names_free(&nl);
	return rc;
}

/* Reads path into *out. Returns SP_ENOENT, SP_EIO, SP_ENOTHDF5, SP_ENOTPROF,
 * SP_ECORRUPT, SP_ENOMEM or SP_EINVAL on failure, with *out NULL and nothing
 * left allocated or open. */
enum sp_err sp_h5_read(const char *path, int flags, struct sp_profile **out, struct sp_error *err)
{
	struct reader r = {.path = path ? path : "", .err = err, .flags = flags, .file = -1, .fd = -1};
	struct sp_profile *p = NULL;
	hid_t fapl = -1, file = -1;
	enum sp_err rc;

	if (!out || !path || (flags & ~SP_READ_EVENTS))
		return sp_error_set(err, SP_EINVAL, "sp_h5_read: bad arguments");
	*out = NULL;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if ((rc = check_path(&r)) != SP_OK)
		return rc;
	/* Strong close: whatever a failure path left open goes with the file. */
	if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
		rc = rfail(&r, SP_EIO, "cannot set up HDF5");
		goto out;
	}
	errno = 0;
	if ((file = H5Fopen(path, H5F_ACC_RDONLY, fapl)) < 0) {
		if (errno == EWOULDBLOCK || errno == EAGAIN)
			rc = rfail(&r, SP_EIO, "locked by another process");
		else
			rc = rfail(&r, SP_ENOTHDF5, "truncated or damaged HDF5 file");
		goto out;
	}
	if (!(p = calloc(1, sizeof *p))) {
		rc = rfail(&r, SP_ENOMEM, "out of memory");
		goto out;
	}
	r.file = file;
	rc = read_file(&r, file, p);
out:
	if (file >= 0 && H5Fclose(file) < 0 && rc == SP_OK)
		rc = rfail(&r, SP_EIO, "cannot close the file");
	h5close(fapl);
	reader_release(&r);
	if (rc != SP_OK)
		sp_profile_free(p);
	else
		*out = p;
	return rc;
}

/* Opens path for sp_h5_stream_read. Returns the codes of sp_h5_read; on
 * failure *out is NULL and nothing is left allocated or open. */
enum sp_err sp_h5_stream_open(const char *path, struct sp_h5_stream **out, struct sp_error *err)
{
	struct sp_h5_stream *s = NULL;
	hid_t fapl = -1;
	enum sp_err rc = SP_OK;

	if (!out || !path)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_open: bad arguments");
	*out = NULL;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (!(s = calloc(1, sizeof *s)) || !(s->path = strdup(path)) || !(s->p = calloc(1, sizeof *s->p))) {
		rc = sp_error_set(err, SP_ENOMEM, "cannot read '%s': out of memory", path);
		goto out;
	}
	s->file = -1;
	s->ri = s->gi = SIZE_MAX;
	s->cols[0] = s->cols[1] = s->cols[2] = -1;
	s->r = (struct reader){.path = s->path, .err = err, .flags = SP_READ_SUMMARY, .stream = s,
			       .file = -1, .fd = -1};
	if ((rc = check_path(&s->r)) != SP_OK)
		goto out;
	/* A chunk cache that holds a compressed column's chunk (up to 16 MiB)
	 * while it is read a slice at a time, instead of inflating it again
	 * for every slice. */
	if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
	    H5Pset_cache(fapl, 0, 521, 16u << 20, 0.75) < 0) {
		rc = rfail(&s->r, SP_EIO, "cannot set up HDF5");
		goto out;
	}
	errno = 0;
	if ((s->file = H5Fopen(path, H5F_ACC_RDONLY, fapl)) < 0) {
		if (errno == EWOULDBLOCK || errno == EAGAIN)
			rc = rfail(&s->r, SP_EIO, "locked by another process");
		else
			rc = rfail(&s->r, SP_ENOTHDF5, "truncated or damaged HDF5 file");
		goto out;
	}
	s->r.file = s->file;
	rc = read_file(&s->r, s->file, s->p);
	reader_release(&s->r);
out:
	h5close(fapl);
	if (rc != SP_OK)
		sp_h5_stream_close(s);
	else
		*out = s;
	return rc;
}

const struct sp_profile *sp_h5_stream_profile(const struct sp_h5_stream *s)
{
	return s->p;
}

/* Reads a slice of a region's columns; see sp_h5.h. The region's datasets
 * stay open until another region is read. */
enum sp_err sp_h5_stream_read(struct sp_h5_stream *s, size_t ri, size_t gi, uint64_t first, size_t n,
			      int64_t *starts, int64_t *ends, int32_t *lanes, struct sp_error *err)
{
	hid_t fs = -1, ms = -1;
	enum sp_err rc = SP_OK;
	char ctx[256];

	if (!s || !starts || !ends || ri >= s->p->nranks || gi >= s->p->ranks[ri].nregions)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_read: bad arguments");
	const struct sp_rank *rk = &s->p->ranks[ri];
	const struct sp_region_data *rd = &rk->regions[gi];
	if (rd->aggregate)
		return sp_error_set(err, SP_EINVAL, "region '%s' holds aggregates only, no calls", rd->name);
	uint64_t calls = rd->stats.num_calls > 0 ? (uint64_t)rd->stats.num_calls : 0;
	if (first > calls || n > calls - first)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_read: calls %llu + %zu of region '%s' "
				    "are not among its %llu", (unsigned long long)first, n, rd->name,
				    (unsigned long long)calls);
	if (n == 0)
		return SP_OK;
	s->r.err = err;
	snprintf(ctx, sizeof ctx, "rank%d/regions/%s", rk->rank, s->links[ri][gi]);
	if (s->ri != ri || s->gi != gi) {
		close_columns(s->cols);
		s->ri = s->gi = SIZE_MAX;
		hid_t rg = H5Gopen2(s->file, s->groups[ri], H5P_DEFAULT);
		hid_t regions = rg >= 0 ? H5Gopen2(rg, "regions", H5P_DEFAULT) : -1;
		hid_t g = regions >= 0 ? H5Gopen2(regions, s->links[ri][gi], H5P_DEFAULT) : -1;
		rc = g < 0 ? rfail(&s->r, SP_ECORRUPT, "%s is not a group", ctx)
			   : stream_columns(&s->r, g, ctx, rd->stats.num_calls, s->cols, 0);
		h5close(g); h5close(regions); h5close(rg);
		if (rc != SP_OK)
			return rc;
		s->ri = ri;
		s->gi = gi;
	}
	hsize_t off = first, cnt = n;
	for (int i = 0; i < 3 && rc == SP_OK; i++) {
		void *buf = i == 0 ? (void *)starts : i == 1 ? (void *)ends : (void *)lanes;
		if (i == 2 && (!lanes || s->cols[2] < 0)) {
			if (lanes)
				memset(lanes, 0, n * sizeof *lanes);
			break;
		}
		if ((fs = H5Dget_space(s->cols[i])) < 0 || (ms = H5Screate_simple(1, &cnt, NULL)) < 0 ||
		    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &cnt, NULL) < 0 ||
		    H5Dread(s->cols[i], i == 2 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf) < 0)
			rc = rfail(&s->r, SP_ECORRUPT, "%s: cannot read the event columns", ctx);
		h5close(fs); h5close(ms);
		fs = ms = -1;
	}
	for (size_t i = 0; rc == SP_OK && i < n; i++)
		if (ends[i] < starts[i])
			rc = rfail(&s->r, SP_ECORRUPT, "%s: call %llu ends before it starts", ctx,
				   (unsigned long long)(first + i));
	return rc;
}

void sp_h5_stream_close(struct sp_h5_stream *s)
{
	if (!s)
		return;
	close_columns(s->cols);
	if (s->file >= 0)
		H5Fclose(s->file);
	for (size_t i = 0; s->p && i < s->p->nranks; i++) {
		if (s->groups)
			free(s->groups[i]);
		if (s->links && s->links[i]) {
			for (size_t j = 0; j < s->p->ranks[i].nregions; j++)
				free(s->links[i][j]);
			free(s->links[i]);
		}
	}
	free(s->groups);
	free(s->links);
	sp_profile_free(s->p);
	free(s->path);
	free(s);
}
