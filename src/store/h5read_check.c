/* h5read_check.c - the bottom of the reader: its one-line failures and its
 * checks of damaged files, made before libhdf5 is trusted with what they
 * guard: the superblock's driver information block, old-style group
 * headers, variable-length strings (their global heap collections), where
 * a dataset's elements are stored, and summary attributes that contradict
 * each other (see sp_h5read.h); and the validation of every call of the
 * event columns read, written for the compiler to vectorise (the Makefile
 * compiles this file with VECTORISE_OBJ's flags). It calls no other
 * h5read*.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp_h5read.h"

/* Fills err with "cannot read '<path>': <detail>" on one line. */
enum sp_err sp_h5r_fail(struct reader *r, enum sp_err code, const char *fmt, ...)
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

/* A little-endian unsigned number of n bytes (at most 8) at b. */
static uint64_t le_uint(const unsigned char *b, size_t n)
{
	uint64_t v = 0;
	while (n--)
		v = v << 8 | b[n];
	return v;
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

/* Looks for the superblock where HDF5 does (at 0, 512, 1024, 2048, ...,
 * the first signature found: what H5Fis_hdf5 answers, found here in the
 * same reads) and checks its driver information block: HDF5 1.10 reads the
 * block of a version 0 or 1 superblock as long as the block says it is (a
 * 32-bit length: up to 4 GiB, zero-filled past the end of the file) before
 * checking anything: a 10 KB file had it allocate and clear a gigabyte.
 * Sets *found when there is a signature, *swmr when the superblock (version
 * 3) says a writer has the file open for SWMR writing (its file consistency
 * flags: a run streaming its profile, or one killed while it did). Returns
 * 0 when there is no such block or it lies inside the file, -1 otherwise. */
static int superblock_ok(int fd, uint64_t size, int *found, int *swmr)
{
	static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	unsigned char b[28 + 4 * 32], hdr[8];
	*found = 0;
	for (uint64_t at = 0; at < size && size - at >= sizeof sig; at = at ? at * 2 : 512) {
		ssize_t got = pread(fd, b, sizeof b, (off_t)at);
		if (got < (ssize_t)sizeof sig || memcmp(b, sig, sizeof sig) != 0)
			continue;
		*found = 1;
		*swmr = b[8] >= 3 && got > 11 && (b[11] & 0x04);
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
 * unreadable, empty; and what HDF5 would trust in its superblock. The file
 * stays open (r->fd) for the checks that read it directly. */
enum sp_err sp_h5r_check_path(struct reader *r)
{
	struct stat sb;
	int found = 0, swmr = 0;
	if (stat(r->path, &sb) != 0)
		return sp_h5r_fail(r, errno == ENOENT ? SP_ENOENT : SP_EIO, "%s", strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return sp_h5r_fail(r, SP_EIO, "is a directory");
	if (!S_ISREG(sb.st_mode))
		return sp_h5r_fail(r, SP_EIO, "not a regular file");
	int fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sp_h5r_fail(r, SP_EIO, "%s", strerror(errno));
	r->file_size = (uint64_t)sb.st_size;
	int drv = superblock_ok(fd, r->file_size, &found, &swmr);
	if (sb.st_size == 0 || !found || drv < 0) {
		close(fd);
		if (drv < 0 && found)
			return sp_h5r_fail(r, SP_ENOTHDF5,
					   "truncated or damaged HDF5 file (driver information block)");
		return sp_h5r_fail(r, SP_ENOTHDF5, "not an HDF5 file");
	}
	r->fd = fd;
	r->sb_swmr = swmr;
	return SP_OK;
}

/* The file's descriptor (opened by sp_h5r_check_path) once the sizes of its
 * addresses and lengths and its base address are known. Returns r->fd, or
 * -1 when HDF5 does not tell them or they are out of range. */
static int reader_fd(struct reader *r)
{
	hsize_t ub = 0;
	hid_t fcpl;
	if (r->fd < 0 || r->sizeof_addr)
		return r->fd;
	if ((fcpl = H5Fget_create_plist(r->file)) < 0)
		return -1;
	size_t sa = 0, ss = 0;
	int ok = H5Pget_sizes(fcpl, &sa, &ss) >= 0 && H5Pget_userblock(fcpl, &ub) >= 0 && sa >= 2 && sa <= 8 &&
		 ss >= 2 && ss <= 8;
	H5Pclose(fcpl);
	if (!ok)
		return -1;
	r->sizeof_addr = sa;
	r->sizeof_size = ss;
	r->base = ub;
	return r->fd;
}

/* Closes what the checks opened (the file, the heap collection read). */
void sp_h5r_release(struct reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->sizeof_addr = 0;
	free(r->heap);
	r->heap = NULL;
	r->heap_size = 0;
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
int sp_h5r_vlen_strings_ok(struct reader *r, hid_t obj, int is_dataset, size_t n)
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
	sp_h5r_close(vs); sp_h5r_close(rt);
	return rc;
}

/* An old-style group (a version 1 object header with a symbol table
 * message) names its B-tree and its local heap of link names; HDF5 1.10
 * reads a heap at the undefined address through a NULL pointer. Checks both
 * addresses of every such message (the header's chunks followed through
 * their continuation messages) before the group is used. Returns 0, or -1
 * when damaged. Version 2 object headers are left to HDF5. */
int sp_h5r_group_header_ok(struct reader *r, hid_t g)
{
	unsigned char pre[16], m[8 + 2 * 8];
	haddr_t addr;
	unsigned version;
#if H5_VERSION_GE(1, 12, 0)
	/* 1.12 moved the address into a token and the header into the native
	 * info. */
	H5O_info2_t oi;
	H5O_native_info_t ni;
	hid_t file = -1;
	int bad = H5Oget_info3(g, &oi, H5O_INFO_BASIC) < 0 ||
		  H5Oget_native_info(g, &ni, H5O_NATIVE_INFO_HDR) < 0 ||
		  (file = H5Iget_file_id(g)) < 0 || H5VLnative_token_to_addr(file, oi.token, &addr) < 0;
	if (file >= 0)
		H5Fclose(file);
	if (bad || reader_fd(r) < 0)
		return -1;
	version = ni.hdr.version;
#else
	H5O_info_t oi;
	if (H5Oget_info2(g, &oi, H5O_INFO_BASIC | H5O_INFO_HDR) < 0 || reader_fd(r) < 0)
		return -1;
	addr = oi.addr;
	version = oi.hdr.version;
#endif
	uint64_t at = r->base + addr, sa = r->sizeof_addr;
	if (addr > r->file_size || at > r->file_size - sizeof pre)
		return -1;
	/* HDF5 took the version from these very bytes (a version 2 header
	 * starts "OHDR"): only a version 1 header needs reading. */
	if (version != 1)
		return 0;
	if (pread(r->fd, pre, sizeof pre, (off_t)at) != (ssize_t)sizeof pre)
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

/* Checks where a dataset's elements are stored before HDF5 is asked to read
 * them: HDF5 1.10 trusts its chunk index and its compact and contiguous
 * layouts, and a damaged one makes it copy past the end of its own buffers
 * (a chunk recorded smaller than the chunk shape says, or at an address
 * shared with another). So: known filters only (deflate, shuffle,
 * fletcher32); a compact dataset holds exactly its bytes; a contiguous one
 * lies inside the file; a chunked one has no more chunks than its extent
 * needs, each found where its coordinates say, inside the file, non-empty,
 * and exactly chunk-sized unless filtered (then at most what deflate can
 * make of a chunk). n elements of tsize bytes; layout from dcpl. A file
 * read while it is written (r->swmr) grows: its size is taken again, and
 * its chunk index may already hold chunks past the extent seen (never
 * read). */
enum sp_err sp_h5r_storage_ok(struct reader *r, hid_t ds, hid_t dcpl, H5D_layout_t layout, const char *ctx,
			      const char *name, hsize_t n, size_t tsize)
{
	hsize_t stored = H5Dget_storage_size(ds);
	struct stat sb;
	if (r->swmr && r->fd >= 0 && fstat(r->fd, &sb) == 0 && (uint64_t)sb.st_size > r->file_size)
		r->file_size = (uint64_t)sb.st_size;
	if (layout == H5D_COMPACT) {
		if (stored != n * tsize)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: compact storage of %llu bytes for %llu", ctx, name,
				     (unsigned long long)stored, (unsigned long long)(n * tsize));
		return SP_OK;
	}
	if (layout == H5D_CONTIGUOUS) {
		haddr_t at = H5Dget_offset(ds);
		if (stored && (at == HADDR_UNDEF || at > r->file_size || stored > r->file_size - at))
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: its data lies outside the file", ctx, name);
		return SP_OK;
	}
	int nf = H5Pget_nfilters(dcpl);
	hsize_t cdim = 0;
	if (nf < 0 || H5Pget_chunk(dcpl, 1, &cdim) != 1 || cdim == 0 || cdim > ((hsize_t)1 << 32) / tsize)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: bad chunk shape", ctx, name);
	/* Each of the three filters read at most once (and nf < 32 for the
	 * chunks' filter masks below). */
	if (nf > 3)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: %d filters, at most 3 are read", ctx, name, nf);
	for (int i = 0; i < nf; i++) {
		unsigned flags = 0;
		size_t ncd = 0;
		H5Z_filter_t f = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, NULL, 0, NULL, NULL);
		if (f != H5Z_FILTER_DEFLATE && f != H5Z_FILTER_SHUFFLE && f != H5Z_FILTER_FLETCHER32)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: compressed with filter %d, which is not read",
				     ctx, name, (int)f);
	}
	hsize_t chunk = cdim * tsize, want = n ? (n - 1) / cdim + 1 : 0, have = 0, found = 0;
	/* A lookup per chunk: a million (2^16 calls each with our writer's
	 * chunks) is already a column no run writes. */
	hid_t space = H5Dget_space(ds);   /* H5S_ALL is not taken here in 1.10 */
	herr_t e = space < 0 ? -1 : H5Dget_num_chunks(ds, space, &have);
	sp_h5r_close(space);
	if (e < 0 || (have > want && !r->swmr) || have > ((hsize_t)1 << 20))
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: bad chunk index", ctx, name);
	for (hsize_t c = 0; c < want && found < have; c++) {
		hsize_t off = c * cdim, size = 0;
		haddr_t at = HADDR_UNDEF;
		unsigned mask = 0;
		if (H5Dget_chunk_info_by_coord(ds, &off, &mask, &at, &size) < 0)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: bad chunk index", ctx, name);
		if (at == HADDR_UNDEF)
			continue;      /* never written: reads as the fill value */
		found++;
		int filtered = nf > 0 && (mask & ((1u << nf) - 1)) != ((1u << nf) - 1);
		if (at == 0 || size == 0 || at > r->file_size || size > r->file_size - at ||
		    (filtered ? size > chunk + chunk / 8 + 1024 : size != chunk))
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: chunk %llu is damaged (%llu bytes at %llu)", ctx,
				     name, (unsigned long long)c, (unsigned long long)size,
				     (unsigned long long)at);
	}
	if (found != have && !(r->swmr && found < have))
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: bad chunk index", ctx, name);
	return SP_OK;
}

/* A region's summary attributes agree with each other: 0 <= min <= max <=
 * total <= num_calls * max (total is the sum of the calls' durations), a mean
 * between min and max, a std that is not negative (NaN: not kept), and calls
 * inside [first_start_ns, last_end_ns]. */
enum sp_err sp_h5r_stats_ok(struct reader *r, const char *ctx, const struct sp_stats *st)
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
	return sp_h5r_fail(r, SP_ECORRUPT, "%s: inconsistent summary: %s (num_calls %lld, total_ns %lld, "
		     "min_ns %lld, max_ns %lld)", ctx, what, (long long)st->num_calls, (long long)st->total_ns,
		     (long long)st->min_ns, (long long)st->max_ns);
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

enum sp_err sp_h5r_events_ok(struct reader *r, const char *ctx, const int64_t *starts, const int64_t *ends,
			     size_t n)
{
	/* Every call ends no earlier than it starts, and the durations add up
	 * within 64 bits, so every single duration does too. */
	int bad = 0;
	__int128 sum = 0;
	check_events(starts, ends, n, &bad, &sum);
	if (bad) {
		size_t i = 0;
		while (ends[i] >= starts[i])
			i++;
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: call %zu ends before it starts", ctx, i);
	}
	if (sum > INT64_MAX)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: durations overflow 64 bits", ctx);
	return SP_OK;
}
