/* h5read_util.c - the reader's primitives, on the checks of
 * h5read_check.c: link listing, groups opened only once checked, numeric
 * and string attributes, columns opened with their extents and layout
 * checked, event columns' memory, a rank group's attributes and regions
 * group (see sp_h5read.h). Every other h5read*.c reads through these. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "sp_grow.h"
#include "sp_h5read.h"

/* A piece of metadata whose checksum fails is read this many times in all
 * (a reader of a live file may catch it half written, for the microseconds
 * of a write): HDF5 sleeps 1, 2, 4, ... ns between the reads, each sleep at
 * least the timer's slack (~50 us), half a millisecond in all; HDF5's own
 * 100 would double up to 2^99 ns on a damaged file. */
#define SWMR_READ_ATTEMPTS 10

enum sp_err sp_h5r_open_file(struct reader *r, hid_t fapl, hid_t *file)
{
	struct stat sb;
	errno = 0;
	if ((*file = H5Fopen(r->path, H5F_ACC_RDONLY, fapl)) >= 0)
		return SP_OK;
	if (errno == EWOULDBLOCK || errno == EAGAIN)
		return sp_h5r_fail(r, SP_EIO, "locked by another process");
	if (!r->sb_swmr || H5Pset_metadata_read_attempts(fapl, SWMR_READ_ATTEMPTS) < 0 ||
	    (*file = H5Fopen(r->path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl)) < 0)
		return sp_h5r_fail(r, SP_ENOTHDF5, "truncated or damaged HDF5 file");
	/* It grows while it is read: checks against its size take the latest. */
	r->swmr = 1;
	if (r->fd >= 0 && fstat(r->fd, &sb) == 0 && (uint64_t)sb.st_size > r->file_size)
		r->file_size = (uint64_t)sb.st_size;
	return SP_OK;
}

void sp_h5r_names_free(struct names *nl)
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
	if (nl->n == nl->cap && SP_GROW(&nl->v, &nl->cap, nl->n + 1) != 0)
		goto oom;
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
int sp_h5r_list_links(hid_t g, struct names *nl)
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
	sp_h5r_names_free(nl);
	if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, names_cb, nl) >= 0)
		return 0;
	return nl->oom ? -2 : -1;
}

/* 1 when name is a hard link in g, 0 when absent (or another kind of link),
 * -1 on failure. */
int sp_h5r_hard_link(hid_t g, const char *name)
{
	H5L_info_t li;
	htri_t ex = H5Lexists(g, name, H5P_DEFAULT);
	if (ex <= 0)
		return ex < 0 ? -1 : 0;
	if (H5Lget_info(g, name, &li, H5P_DEFAULT) < 0)
		return -1;
	return li.type == H5L_TYPE_HARD;
}

/* H5Gopen2 for a group the reader will look into: -1 (nothing open) when
 * it cannot be opened or sp_h5r_group_header_ok finds it damaged. */
hid_t sp_h5r_open_group(struct reader *r, hid_t loc, const char *name)
{
	hid_t g = H5Gopen2(loc, name, H5P_DEFAULT);
	if (g >= 0 && sp_h5r_group_header_ok(r, g) < 0) {
		H5Gclose(g);
		return -1;
	}
	return g;
}

/* Reads a scalar numeric attribute converted to mtype. Returns 1 when read,
 * 0 when absent, -1 when present but not a single number. */
int sp_h5r_attr_num(hid_t loc, const char *name, hid_t mtype, void *v)
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
	sp_h5r_close(t); sp_h5r_close(s);
	H5Aclose(a);
	return rc;
}

/* Reads an open attribute holding one string (fixed or variable length) into
 * a malloc'd copy. Returns 1, -1 when it is not one string, -2 on OOM. */
int sp_h5r_attr_str_open(struct reader *r, hid_t a, char **out)
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
		if ((rc = sp_h5r_vlen_strings_ok(r, a, 0, 1)) < 0 || (rc = -1, H5Tset_size(m, H5T_VARIABLE) < 0) ||
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
	sp_h5r_close(m); sp_h5r_close(t); sp_h5r_close(s);
	return rc;
}

int sp_h5r_span(hid_t ds, hid_t mtype, uint64_t first, size_t n, void *buf)
{
	hsize_t off[1] = {(hsize_t)first}, cnt[1] = {(hsize_t)n};
	hid_t fs, ms = -1;
	int rc = -1;
	if (n == 0)
		return 0;
	if ((fs = H5Dget_space(ds)) >= 0 && (ms = H5Screate_simple(1, cnt, NULL)) >= 0 &&
	    H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
	    H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf) >= 0)
		rc = 0;
	sp_h5r_close(ms);
	sp_h5r_close(fs);
	return rc;
}

/* Like sp_h5r_attr_num for a string attribute: 1, 0 (absent), -1, or -2 (OOM). */
int sp_h5r_attr_str(struct reader *r, hid_t loc, const char *name, char **out)
{
	htri_t ex = H5Aexists(loc, name);
	if (ex <= 0)
		return ex < 0 ? -1 : 0;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
	if (a < 0)
		return -1;
	int rc = sp_h5r_attr_str_open(r, a, out);
	H5Aclose(a);
	return rc;
}

/* Opens name of g again as *ds, without a chunk cache: a chunk that is not
 * filtered is read straight into the caller's buffer, where the default
 * cache would hold up to 1 MiB per column (at the end of a streamed run,
 * read back beside the recording's own memory). 0, or -1 (*ds closed). */
static int reopen_uncached(hid_t g, const char *name, hid_t *ds)
{
	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
	H5Dclose(*ds);
	*ds = -1;
	if (dapl >= 0 && H5Pset_chunk_cache(dapl, 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT) >= 0)
		*ds = H5Dopen2(g, name, dapl);
	if (dapl >= 0)
		H5Pclose(dapl);
	return *ds < 0 ? -1 : 0;
}

/* Opens the 1-D column name in g and returns its length in *n; want is
 * H5T_STRING or H5T_INTEGER (which also accepts floats). Rejects layouts that
 * would read other files, and extents the stored bytes cannot back; deep
 * (for a column about to be read) also checks its storage (sp_h5r_storage_ok),
 * which costs a lookup per chunk. */
enum sp_err sp_h5r_column_open(struct reader *r, hid_t g, const char *ctx, const char *name,
			       H5T_class_t want, int deep, hid_t *ds, hsize_t *n)
{
	hid_t t = -1, s = -1, dcpl = -1;
	enum sp_err rc = SP_ECORRUPT;
	H5L_info_t li;
	/* One lookup where sp_h5r_hard_link makes two: absent and unreadable
	 * read the same here. */
	if (H5Lget_info(g, name, &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_HARD)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no %s dataset", ctx, name);
	if ((*ds = H5Dopen2(g, name, H5P_DEFAULT)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/%s is not a readable dataset", ctx, name);
	t = H5Dget_type(*ds);
	s = H5Dget_space(*ds);
	dcpl = H5Dget_create_plist(*ds);
	H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
	if (want == H5T_INTEGER ? cls != H5T_INTEGER && cls != H5T_FLOAT : cls != want) {
		sp_h5r_fail(r, rc, "%s/%s has the wrong type", ctx, name);
		goto out;
	}
	if (s < 0 || H5Sget_simple_extent_type(s) != H5S_SIMPLE || H5Sget_simple_extent_ndims(s) != 1 ||
	    H5Sget_simple_extent_dims(s, n, NULL) != 1) {
		sp_h5r_fail(r, rc, "%s/%s is not 1-D", ctx, name);
		goto out;
	}
	H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
	if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) ||
	    H5Pget_external_count(dcpl) != 0) {
		sp_h5r_fail(r, rc, "%s/%s has an unsupported storage layout", ctx, name);
		goto out;
	}
	size_t tsize = H5Tget_size(t);
	hsize_t stored = H5Dget_storage_size(*ds);
	if (tsize == 0 || *n > (hsize_t)-1 / 4096 / tsize) {
		sp_h5r_fail(r, rc, "%s/%s is too large", ctx, name);
		goto out;
	}
	/* Compressed chunks shrink data, but not beyond what deflate can do. */
	hsize_t need = *n * tsize, have = stored;
	if (layout == H5D_CHUNKED)
		have = stored > (hsize_t)-1 / 4096 ? (hsize_t)-1 : stored * 4096;
	if (need > have) {
		sp_h5r_fail(r, rc, "%s/%s is missing data (%llu of %llu bytes stored)", ctx, name,
		      (unsigned long long)stored, (unsigned long long)need);
		goto out;
	}
	rc = deep ? sp_h5r_storage_ok(r, *ds, dcpl, layout, ctx, name, *n, tsize) : SP_OK;
	if (rc == SP_OK && layout == H5D_CHUNKED && H5Pget_nfilters(dcpl) == 0 && reopen_uncached(g, name, ds) < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%s is not a readable dataset", ctx, name);
out:
	sp_h5r_close(t); sp_h5r_close(s); sp_h5r_close(dcpl);
	if (rc != SP_OK) {
		H5Dclose(*ds);
		*ds = -1;
	}
	return rc;
}

/* Allocates n elements of size sz (at least one byte), or NULL. */
void *sp_h5r_alloc_n(size_t n, size_t sz)
{
	if (n > SIZE_MAX / sz)
		return NULL;
	return malloc(n ? n * sz : 1);
}

enum sp_err sp_h5r_strings_read(struct reader *r, hid_t ds, const char *ctx, const char *name, size_t n,
				struct sp_h5r_strings *s)
{
	hid_t ft = H5Dget_type(ds);
	int a;
	enum sp_err rc = SP_OK;

	if (ft < 0 || (s->space = H5Dget_space(ds)) < 0 || (s->mt = H5Tcopy(H5T_C_S1)) < 0 ||
	    H5Tset_cset(s->mt, H5Tget_cset(ft)) < 0 || (s->vlen = H5Tis_variable_str(ft)) < 0) {
		s->vlen = 0;
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: unreadable type", ctx, name);
		goto out;
	}
	s->fsize = s->vlen ? 0 : H5Tget_size(ft);
	if (s->vlen ? H5Tset_size(s->mt, H5T_VARIABLE) < 0
		    : (s->fsize == 0 || s->fsize >= SIZE_MAX - 1 || H5Tset_size(s->mt, s->fsize + 1) < 0 ||
		       H5Tset_strpad(s->mt, H5T_STR_NULLTERM) < 0)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%s: unreadable type", ctx, name);
		goto out;
	}
	if (s->vlen ? !(s->v = calloc(n ? n : 1, sizeof *s->v)) : !(s->fixed = sp_h5r_alloc_n(n, s->fsize + 1))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu %s strings", ctx, n, name);
		goto out;
	}
	if (s->vlen && (a = sp_h5r_vlen_strings_ok(r, ds, 1, n)) < 0) {
		rc = sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "%s/%s: damaged strings", ctx, name);
		goto out;
	}
	s->n = n;              /* what HDF5 may allocate (s->v is zeroed) */
	if (n && H5Dread(ds, s->mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, s->vlen ? (void *)s->v : s->fixed) < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the %s column", ctx, name);
out:
	sp_h5r_close(ft);
	return rc;
}

void sp_h5r_strings_free(struct sp_h5r_strings *s)
{
	if (s->v && s->n)
		vlen_reclaim(s->mt, s->space, s->v);
	free(s->v);
	free(s->fixed);
	sp_h5r_close(s->mt);
	sp_h5r_close(s->space);
	*s = (struct sp_h5r_strings){.mt = -1, .space = -1};
}

/* An event column of n elements of size sz, or NULL: large ones aligned
 * to 2 MiB and marked for transparent huge pages, so reading 16 MB costs a
 * handful of page faults instead of four thousand (numpy does the same for
 * h5py). Freed with free(). */
void *sp_h5r_alloc_column(size_t n, size_t sz)
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

/* A rank group's attributes (each optional): run start and end, pid,
 * parent_pid, hostname, clock offset, calls not recorded (0 when absent),
 * children_dir (a partial file's). */
enum sp_err sp_h5r_rank_attrs(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk)
{
	int a = 0;
	if (sp_h5r_attr_num(g, "run_start_time", H5T_NATIVE_INT64, &rk->run_start_ns) < 0 ||
	    sp_h5r_attr_num(g, "run_end_time", H5T_NATIVE_INT64, &rk->run_end_ns) < 0 ||
	    sp_h5r_attr_num(g, "pid", H5T_NATIVE_INT64, &rk->pid) < 0 ||
	    sp_h5r_attr_num(g, "parent_pid", H5T_NATIVE_INT64, &rk->parent_pid) < 0 ||
	    sp_h5r_attr_num(g, "clock_offset_ns", H5T_NATIVE_INT64, &rk->clock_offset_ns) < 0 ||
	    sp_h5r_attr_num(g, "dropped_events", H5T_NATIVE_INT64, &rk->dropped) < 0 ||
	    (a = sp_h5r_attr_str(r, g, "hostname", &rk->hostname)) == -1)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: unreadable attribute", gname);
	/* recover's hint only: one that is not a string is no folder. */
	if (a != -2 && (a = sp_h5r_attr_str(r, g, "children_dir", &rk->children_dir)) == -1) {
		free(rk->children_dir);
		rk->children_dir = NULL;
		H5Eclear2(H5E_DEFAULT);
	}
	if (a == -2)
		return sp_h5r_fail(r, SP_ENOMEM, "out of memory");
	if (rk->dropped < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: negative dropped_events", gname);
	return SP_OK;
}

/* Opens rank group g's regions group into *regions, lists its links into
 * *nl and allocates rk->regions for them (rk->nregions stays 0). */
enum sp_err sp_h5r_open_regions(struct reader *r, hid_t g, const char *gname, hid_t *regions,
				struct names *nl, struct sp_rank *rk)
{
	int a;
	if (sp_h5r_hard_link(g, "regions") != 1 || (*regions = sp_h5r_open_group(r, g, "regions")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no regions group", gname);
	if ((a = sp_h5r_list_links(*regions, nl)) < 0)
		return sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "%s: cannot list the regions", gname);
	if (nl->n > INT32_MAX || !(rk->regions = calloc(nl->n ? nl->n : 1, sizeof *rk->regions)))
		return sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, nl->n);
	return SP_OK;
}

int sp_h5r_name_ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sp_h5r_name_ref *)a)->name, ((const struct sp_h5r_name_ref *)b)->name);
}
