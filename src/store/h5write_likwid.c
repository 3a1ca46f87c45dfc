/* h5write_likwid.c - a rank's LIKWID counters (run --likwid) as group
 * likwid/<k>, one per marker region: attribute region (its name),
 * likwid_count (int64[threads]) and likwid_time (float64[threads], seconds),
 * dataset likwid_events (float64[threads x events]), and where LIKWID
 * evaluated its group's formulas, dataset likwid_metrics
 * (float64[LIKWID's threads x metrics], NaN where no finite value). */
#include <math.h>
#include <stdio.h>

#include "sp_h5write.h"
#include "sp_h5write_likwid.h"

static enum sp_err write_table(struct sp_h5_writer *w, hid_t parent, const struct sp_rank *rk, size_t k,
			       const struct sp_likwid_region *t)
{
	enum sp_err rc = SP_OK;
	hid_t g = H5I_INVALID_HID, space = H5I_INVALID_HID, ds = H5I_INVALID_HID;
	hid_t mspace = H5I_INVALID_HID, mds = H5I_INVALID_HID;
	char name[32];

	if (!t->region || !t->nthreads || !t->count || !t->time || (t->nevents && !t->events) ||
	    (t->nmetrics && (!t->nmrows || !t->metrics)))
		return sp_h5w_fail(w, SP_EINVAL, "rank %d LIKWID table %zu: no region, thread or column",
				   rk->rank, k);
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->count[i] < 0 || !isfinite(t->time[i]) || t->time[i] < 0)
			return sp_h5w_fail(w, SP_EINVAL, "rank %d LIKWID table %zu: bad count or time",
					   rk->rank, k);
	snprintf(name, sizeof name, "%zu", k);
	if ((g = H5Gcreate2(parent, name, w->lcpl, w->gcpl, H5P_DEFAULT)) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot create group rank%d/likwid/%s", rk->rank, name);
		goto out;
	}
	hsize_t dims[2] = {(hsize_t)t->nthreads, (hsize_t)t->nevents};
	if (sp_h5w_attr_str(g, "region", t->region) < 0 ||
	    sp_h5w_attr_1d(g, "likwid_count", H5T_STD_I64LE, H5T_NATIVE_INT64, t->nthreads, t->count) < 0 ||
	    sp_h5w_attr_1d(g, "likwid_time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, t->nthreads, t->time) < 0 ||
	    (space = H5Screate_simple(2, dims, NULL)) < 0 ||
	    (ds = H5Dcreate2(g, "likwid_events", H5T_IEEE_F64LE, space, w->lcpl, H5P_DEFAULT,
			     H5P_DEFAULT)) < 0 ||
	    (t->nevents && H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->events) < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot write rank%d/likwid/%s", rk->rank, name);
	hsize_t mdims[2] = {(hsize_t)t->nmrows, (hsize_t)t->nmetrics};
	if (rc == SP_OK && t->nmetrics &&
	    ((mspace = H5Screate_simple(2, mdims, NULL)) < 0 ||
	     (mds = H5Dcreate2(g, "likwid_metrics", H5T_IEEE_F64LE, mspace, w->lcpl, H5P_DEFAULT,
			       H5P_DEFAULT)) < 0 ||
	     H5Dwrite(mds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->metrics) < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot write rank%d/likwid/%s/likwid_metrics", rk->rank, name);
out:
	if (mds >= 0 && H5Dclose(mds) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/likwid/%s", rk->rank, name);
	if (mspace >= 0)
		H5Sclose(mspace);
	if (ds >= 0 && H5Dclose(ds) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/likwid/%s", rk->rank, name);
	if (space >= 0)
		H5Sclose(space);
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/likwid/%s", rk->rank, name);
	return rc;
}

enum sp_err sp_h5w_likwid(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk)
{
	enum sp_err rc = SP_OK;
	hid_t g;

	if (!rk->likwid)
		return sp_h5w_fail(w, SP_EINVAL, "rank %d: %zu LIKWID tables but no array", rk->rank, rk->nlikwid);
	if ((g = H5Gcreate2(rank_g, "likwid", w->lcpl, w->gcpl_regions, H5P_DEFAULT)) < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot create group rank%d/likwid", rk->rank);
	for (size_t k = 0; k < rk->nlikwid && rc == SP_OK; k++)
		rc = write_table(w, g, rk, k, &rk->likwid[k]);
	if (H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/likwid", rk->rank);
	return rc;
}
