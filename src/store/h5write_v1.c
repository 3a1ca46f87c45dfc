/* h5write_v1.c - a rank's regions as format version 1 wrote them (written
 * when the profile's format_version is 1: the fixtures of the tests and the
 * fuzz seeds that keep the version 1 reader covered): a group per region
 * with its summary as attributes and its event columns, the call tree with
 * regions by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5write.h"
#include "sp_h5write_v1.h"

static enum sp_err write_region(struct sp_h5_writer *w, hid_t regions, const struct sp_rank *rk,
				const struct sp_region_data *rd)
{
	const struct sp_stats *st = &rd->stats;
	enum sp_err rc = SP_OK;
	hid_t g = H5I_INVALID_HID;
	char *link = NULL;

	if (!rd->name || !rd->name[0])
		return sp_h5w_fail(w, SP_EINVAL, "rank %d has a region without a name", rk->rank);
	if (!rd->aggregate && (!rd->starts || !rd->ends))
		return sp_h5w_fail(w, SP_EINVAL, "rank %d region '%s': events not loaded", rk->rank, rd->name);
	link = sp_h5_escape(rd->name);
	if (!link)
		return sp_h5w_fail(w, SP_ENOMEM, "out of memory");
	g = H5Gcreate2(regions, link, w->lcpl, w->gcpl_region, H5P_DEFAULT);
	if (g < 0) {
		if (H5Lexists(regions, link, H5P_DEFAULT) > 0)
			rc = sp_h5w_fail(w, SP_EINVAL, "rank %d has two regions named '%s'", rk->rank, rd->name);
		else
			rc = sp_h5w_fail(w, SP_EIO, "cannot create group for rank %d region '%s'", rk->rank, rd->name);
		goto out;
	}
	if (sp_h5w_attr_str(g, "name", rd->name) < 0 || sp_h5w_attr_i64(g, "num_calls", st->num_calls) < 0 ||
	    sp_h5w_attr_i64(g, "total_ns", st->total_ns) < 0 || sp_h5w_attr_i64(g, "min_ns", st->min_ns) < 0 ||
	    sp_h5w_attr_i64(g, "max_ns", st->max_ns) < 0 ||
	    sp_h5w_attr_i64(g, "first_start_ns", st->first_start_ns) < 0 ||
	    sp_h5w_attr_i64(g, "last_end_ns", st->last_end_ns) < 0 || sp_h5w_attr_f64(g, "mean_ns", st->mean_ns) < 0 ||
	    sp_h5w_attr_f64(g, "std_ns", st->std_ns) < 0 ||
	    (rd->dropped && sp_h5w_attr_i64(g, "dropped_events", rd->dropped) < 0)) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot write attributes of rank %d region '%s'", rk->rank, rd->name);
		goto out;
	}
	/* Aggregation mode: the summary, the exclusive time, no event columns. */
	if (rd->aggregate) {
		if (sp_h5w_attr_i64(g, "self_ns", rd->self_ns) < 0 ||
		    sp_h5w_attr(g, "aggregate", H5T_STD_I32LE, H5T_NATIVE_INT32, &(int32_t){1}) < 0)
			rc = sp_h5w_fail(w, SP_EIO, "cannot write attributes of rank %d region '%s'", rk->rank,
				   rd->name);
		goto out;
	}
	if (sp_h5w_column_z(w, g, "start_times", H5T_STD_I64LE, H5T_NATIVE_INT64, (size_t)st->num_calls,
			   rd->starts, w->level) < 0 ||
	    sp_h5w_column_z(w, g, "end_times", H5T_STD_I64LE, H5T_NATIVE_INT64, (size_t)st->num_calls,
			   rd->ends, w->level) < 0 ||
	    (rd->lanes && sp_h5w_column_z(w, g, "lanes", H5T_STD_I32LE, H5T_NATIVE_INT32,
					 (size_t)st->num_calls, rd->lanes, w->level) < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot write events of rank %d region '%s'", rk->rank, rd->name);
out:
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank %d region '%s'", rk->rank, rd->name);
	free(link);
	return rc;
}

/* The call tree as four columns; node regions are stored by name, as
 * fixed-length strings: variable-length ones would live in HDF5's global
 * heap, whose reader in HDF5 1.10 overruns its buffers on damaged files. */
static enum sp_err write_tree(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk)
{
	size_t n = rk->ntree;
	enum sp_err rc = SP_OK;
	hid_t g = H5I_INVALID_HID, stype = H5I_INVALID_HID;
	int32_t *parent = NULL;
	int64_t *calls = NULL, *total = NULL;
	char *names = NULL;
	size_t width = 1;

	if (n > INT32_MAX)
		return sp_h5w_fail(w, SP_EINVAL, "rank %d: tree too large", rk->rank);
	parent = malloc((n ? n : 1) * sizeof *parent);
	calls = malloc((n ? n : 1) * sizeof *calls);
	total = malloc((n ? n : 1) * sizeof *total);
	if (!parent || !calls || !total) {
		rc = sp_h5w_fail(w, SP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sp_tree_node *t = &rk->tree[i];
		if (t->region < 0 || (size_t)t->region >= rk->nregions ||
		    rk->regions[t->region].stats.num_calls <= 0 || !rk->regions[t->region].name) {
			rc = sp_h5w_fail(w, SP_EINVAL, "rank %d: tree node %zu names no written region", rk->rank, i);
			goto out;
		}
		if (t->parent < -1 || (t->parent >= 0 && (size_t)t->parent >= i)) {
			rc = sp_h5w_fail(w, SP_EINVAL, "rank %d: tree node %zu has a bad parent", rk->rank, i);
			goto out;
		}
		parent[i] = t->parent;
		calls[i] = t->calls;
		total[i] = t->total_ns;
		size_t len = strlen(rk->regions[t->region].name) + 1;
		width = len > width ? len : width;
	}
	if (n > SIZE_MAX / width || !(names = calloc(n ? n : 1, width))) {
		rc = sp_h5w_fail(w, SP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		strcpy(names + i * width, rk->regions[rk->tree[i].region].name);
	g = H5Gcreate2(rank_g, "tree", w->lcpl, w->gcpl, H5P_DEFAULT);
	if (g < 0 || (stype = sp_h5w_str_type(width)) < 0 ||
	    sp_h5w_column(w, g, "parent", H5T_STD_I32LE, H5T_NATIVE_INT32, n, parent) < 0 ||
	    sp_h5w_column(w, g, "region", stype, stype, n, names) < 0 ||
	    sp_h5w_column(w, g, "calls", H5T_STD_I64LE, H5T_NATIVE_INT64, n, calls) < 0 ||
	    sp_h5w_column(w, g, "total_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, n, total) < 0)
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the call tree of rank %d", rk->rank);
out:
	if (stype >= 0)
		H5Tclose(stype);
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close the call tree of rank %d", rk->rank);
	free(parent);
	free(calls);
	free(total);
	free(names);
	return rc;
}

enum sp_err sp_h5w_regions_v1(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk)
{
	enum sp_err rc = SP_OK;
	hid_t regions = H5Gcreate2(rank_g, "regions", w->lcpl, w->gcpl_regions, H5P_DEFAULT);
	if (regions < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot create group rank%d/regions", rk->rank);
	for (size_t i = 0; i < rk->nregions && rc == SP_OK; i++)
		if (rk->regions[i].stats.num_calls > 0)
			rc = write_region(w, regions, rk, &rk->regions[i]);
	if (H5Gclose(regions) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/regions", rk->rank);
	if (rc == SP_OK && rk->tree)
		rc = write_tree(w, rank_g, rk);
	return rc;
}
