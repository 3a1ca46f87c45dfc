/* h5read_likwid.c - reading a rank's LIKWID counters (group likwid, one
 * subgroup per marker region, h5write_likwid.c), trusting nothing: shapes
 * agree, values finite, counts not negative, each region a row of the
 * rank's table and named once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5read.h"
#include "sp_h5read_likwid.h"

/* Bounds a damaged file cannot push the reader past. */
#define MAX_THREADS ((hsize_t)1 << 20)
#define MAX_EVENTS ((hsize_t)4096)

/* Reads 1-D numeric attribute name of g, n values, into a new array. */
static enum sp_err attr_1d(struct reader *r, hid_t g, const char *ctx, const char *name, hid_t mtype,
			   size_t size, size_t n, void **out)
{
	hid_t a = -1, t = -1, s = -1;
	hsize_t dims[1];
	enum sp_err rc = SP_OK;
	htri_t ex = H5Aexists(g, name);
	if (ex <= 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no '%s' attribute", ctx, name);
	if ((a = H5Aopen(g, name, H5P_DEFAULT)) < 0 || (t = H5Aget_type(a)) < 0 || (s = H5Aget_space(a)) < 0 ||
	    (H5Tget_class(t) != H5T_INTEGER && H5Tget_class(t) != H5T_FLOAT) ||
	    H5Sget_simple_extent_type(s) != H5S_SIMPLE || H5Sget_simple_extent_ndims(s) != 1 ||
	    H5Sget_simple_extent_dims(s, dims, NULL) != 1 || dims[0] != (hsize_t)n) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: '%s' is not %zu numbers", ctx, name, n);
		goto out;
	}
	if (!(*out = sp_h5r_alloc_n(n, size))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "out of memory");
		goto out;
	}
	if (H5Aread(a, mtype, *out) < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read '%s'", ctx, name);
out:
	sp_h5r_close(s);
	sp_h5r_close(t);
	sp_h5r_close(a);
	return rc;
}

/* The 2-D float dataset name of g (rows 1.., columns 0..) into a new array
 * *out, its shape in *rows, *cols. */
static enum sp_err read_2d(struct reader *r, hid_t g, const char *ctx, const char *name, hsize_t max_cols,
			   size_t *rows, size_t *cols, double **out)
{
	hid_t ds = -1, ty = -1, sp = -1, dcpl = -1;
	hsize_t dims[2];
	enum sp_err rc = SP_OK;
	if ((ds = H5Dopen2(g, name, H5P_DEFAULT)) < 0 || (ty = H5Dget_type(ds)) < 0 ||
	    (sp = H5Dget_space(ds)) < 0 || (dcpl = H5Dget_create_plist(ds)) < 0 ||
	    (H5Tget_class(ty) != H5T_FLOAT && H5Tget_class(ty) != H5T_INTEGER) ||
	    H5Sget_simple_extent_type(sp) != H5S_SIMPLE || H5Sget_simple_extent_ndims(sp) != 2 ||
	    H5Sget_simple_extent_dims(sp, dims, NULL) != 2) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: no 2-D %s dataset", ctx, name);
		goto out;
	}
	H5D_layout_t layout = H5Pget_layout(dcpl);
	if (dims[0] < 1 || dims[0] > MAX_THREADS || dims[1] > max_cols ||
	    (layout != H5D_CONTIGUOUS && layout != H5D_COMPACT) || H5Pget_external_count(dcpl) != 0 ||
	    (dims[1] && H5Dget_storage_size(ds) < dims[0] * dims[1] * H5Tget_size(ty))) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s has an unreadable shape or storage", ctx, name);
		goto out;
	}
	*rows = (size_t)dims[0];
	*cols = (size_t)dims[1];
	if (!(*out = sp_h5r_alloc_n(*rows * (*cols ? *cols : 1), sizeof **out))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "out of memory");
		goto out;
	}
	if (*cols && H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read %s", ctx, name);
out:
	sp_h5r_close(dcpl);
	sp_h5r_close(sp);
	sp_h5r_close(ty);
	sp_h5r_close(ds);
	return rc;
}

static enum sp_err read_table(struct reader *r, hid_t parent, const struct sp_rank *rk, const char *link,
			      struct sp_likwid_region *t)
{
	hid_t g = -1;
	enum sp_err rc = SP_OK;
	char ctx[256];
	int a;

	snprintf(ctx, sizeof ctx, "rank%d/likwid/%.200s", rk->rank, link);
	if ((g = sp_h5r_open_group(r, parent, link)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", ctx);
	if ((a = sp_h5r_attr_str(r, g, "region", &t->region)) != 1) {
		rc = sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, a == 0 ? "%s has no 'region' attribute"
				 : "%s: bad 'region' attribute", ctx);
		goto out;
	}
	int known = 0;
	for (size_t i = 0; i < rk->nregions && !known; i++)
		known = strcmp(rk->regions[i].name, t->region) == 0;
	if (!known) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: region '%.100s' is not in the rank's regions", ctx, t->region);
		goto out;
	}
	if ((rc = read_2d(r, g, ctx, "likwid_events", MAX_EVENTS, &t->nthreads, &t->nevents, &t->events)) != SP_OK)
		goto out;
	if ((rc = attr_1d(r, g, ctx, "likwid_count", H5T_NATIVE_INT64, sizeof *t->count, t->nthreads,
			  (void **)&t->count)) != SP_OK ||
	    (rc = attr_1d(r, g, ctx, "likwid_time", H5T_NATIVE_DOUBLE, sizeof *t->time, t->nthreads,
			  (void **)&t->time)) != SP_OK)
		goto out;
	for (size_t i = 0; i < t->nthreads * t->nevents; i++)
		if (!isfinite(t->events[i])) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: likwid_events holds a value that is not finite", ctx);
			goto out;
		}
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->count[i] < 0 || !isfinite(t->time[i]) || t->time[i] < 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: negative or not finite likwid_count or likwid_time", ctx);
			goto out;
		}
	if ((a = sp_h5r_hard_link(g, "likwid_metrics")) < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: bad likwid_metrics link", ctx);
		goto out;
	}
	/* Metrics may be NaN (no finite value from LIKWID); infinities are
	 * stored as NaN by the writer's side, so they are damage here. */
	if (a == 1 && (rc = read_2d(r, g, ctx, "likwid_metrics", MAX_EVENTS, &t->nmrows, &t->nmetrics,
				    &t->metrics)) == SP_OK)
		for (size_t i = 0; i < t->nmrows * t->nmetrics; i++)
			if (isinf(t->metrics[i])) {
				rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: likwid_metrics holds an infinity", ctx);
				goto out;
			}
	if (rc == SP_OK && !t->nmetrics) {   /* an empty metrics dataset: none */
		free(t->metrics);
		t->metrics = NULL;
		t->nmrows = 0;
	}
out:
	H5Gclose(g);
	return rc;
}

/* Orders "2" before "10": the writer's numbering. */
static int link_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

enum sp_err sp_h5r_read_likwid(struct reader *r, hid_t rank_g, struct sp_rank *rk)
{
	struct names nl = {0};
	struct sp_likwid_region t = {0};
	enum sp_err rc = SP_OK;
	hid_t g;
	int a;

	if ((g = sp_h5r_open_group(r, rank_g, "likwid")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "rank%d/likwid is not a group", rk->rank);
	if ((a = sp_h5r_list_links(g, &nl)) < 0) {
		rc = sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "rank%d: cannot list the LIKWID tables",
				 rk->rank);
		goto out;
	}
	qsort(nl.v, nl.n, sizeof *nl.v, link_cmp);
	if (nl.n && !(rk->likwid = calloc(nl.n, sizeof *rk->likwid))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "rank%d: out of memory for %zu LIKWID tables", rk->rank, nl.n);
		goto out;
	}
	for (size_t i = 0; i < nl.n; i++) {
		if ((rc = read_table(r, g, rk, nl.v[i], &t)) != SP_OK) {
			sp_likwid_region_clear(&t);
			goto out;
		}
		for (size_t k = 0; k < rk->nlikwid; k++)
			if (strcmp(rk->likwid[k].region, t.region) == 0) {
				rc = sp_h5r_fail(r, SP_ECORRUPT, "rank%d/likwid: region '%.100s' appears twice",
						 rk->rank, t.region);
				sp_likwid_region_clear(&t);
				goto out;
			}
		rk->likwid[rk->nlikwid++] = t;   /* freed with the profile from here on */
		t = (struct sp_likwid_region){0};
	}
out:
	sp_h5r_names_free(&nl);
	H5Gclose(g);
	return rc;
}
