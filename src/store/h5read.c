/* h5read.c - reading a profile from HDF5 (sp_h5_read): the file and its
 * metadata, and the ranks of format version 1 and of the plain
 * rank{N}/regions/{name}/{start_times,end_times} layout, region by region
 * (version 2's ranks are h5read_table.c's, version 3's h5read_v3.c's;
 * every rank's tree, line tables and counters h5read_tree.c's). Defensive: the file may be anything, and
 * nothing in it is trusted without a check. On the primitives of
 * h5read_util.c and the checks of h5read_check.c (see sp_h5read.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_h5read.h"
#include "sp_h5read_file.h"
#include "sp_h5read_table.h"
#include "sp_h5read_tree.h"
#include "sp_h5read_v3.h"

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

	if ((rc = sp_h5r_column_open(r, g, ctx, "start_times", H5T_INTEGER, 1, &ds, &ns)) != SP_OK ||
	    (rc = sp_h5r_column_open(r, g, ctx, "end_times", H5T_INTEGER, 1, &de, &ne)) != SP_OK)
		goto out;
	if (ns != ne) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: start_times and end_times differ in length (%llu vs %llu)",
			   ctx, (unsigned long long)ns, (unsigned long long)ne);
		goto out;
	}
	size_t n = (size_t)ns;
	if ((hsize_t)n != ns || !(starts = sp_h5r_alloc_column(n, sizeof *starts)) ||
	    !(ends = sp_h5r_alloc_column(n, sizeof *ends))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %llu events", ctx, (unsigned long long)ns);
		goto out;
	}
	if (n && (H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, starts) < 0 ||
		  H5Dread(de, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ends) < 0)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the event columns", ctx);
		goto out;
	}
	if ((rc = sp_h5r_events_ok(r, ctx, starts, ends, n)) != SP_OK)
		goto out;
	/* The optional thread lane of each call (--track-threads). */
	if (sp_h5r_hard_link(g, "lanes") > 0) {
		hid_t dl = -1;
		hsize_t nl = 0;
		if ((rc = sp_h5r_column_open(r, g, ctx, "lanes", H5T_INTEGER, 1, &dl, &nl)) != SP_OK)
			goto out;
		if (nl != ns)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: lanes and start_times differ in length", ctx);
		else if (!(lanes = sp_h5r_alloc_column(n, sizeof *lanes)))
			rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu lanes", ctx, n);
		else if (n && H5Dread(dl, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, lanes) < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the lanes column", ctx);
		sp_h5r_close(dl);
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
	sp_h5r_close(ds); sp_h5r_close(de);
	return rc;
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
		int hl = sp_h5r_hard_link(g, cols[i]);
		if (hl < 0)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up %s", ctx, cols[i]);
		if (hl == 0)
			continue;
		enum sp_err rc = sp_h5r_column_open(r, g, ctx, cols[i], H5T_INTEGER, 0, &ds, &n);
		sp_h5r_close(ds);
		if (rc != SP_OK)
			return rc;
		if (n != (hsize_t)num_calls)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: num_calls is %lld but %s holds %llu calls", ctx,
				     (long long)num_calls, cols[i], (unsigned long long)n);
	}
	return SP_OK;
}

enum sp_err sp_h5r_read_region(struct reader *r, hid_t regions, const char *link, int rankno,
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
	hid_t g = sp_h5r_open_group(r, regions, link);
	if (g < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", ctx);
	if ((a = sp_h5r_attr_str(r, g, "name", &rd->name)) == 0)
		rd->name = sp_h5_unescape(link);
	if (a == -2 || (a == 0 && !rd->name)) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "out of memory");
		goto out;
	}
	if (a < 0 || !rd->name[0]) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: bad 'name' attribute", ctx);
		goto out;
	}
	for (size_t i = 0; i < 8; i++) {
		if (i < 6)
			a = sp_h5r_attr_num(g, inames[i], H5T_NATIVE_INT64, ivals[i]);
		else
			a = sp_h5r_attr_num(g, i == 6 ? "mean_ns" : "std_ns", H5T_NATIVE_DOUBLE,
				     i == 6 ? &st->mean_ns : &st->std_ns);
		if (a < 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: unreadable summary attribute", ctx);
			goto out;
		}
		got += a;
	}
	if (got == 8 && (rc = sp_h5r_stats_ok(r, ctx, st)) != SP_OK)
		goto out;
	if (sp_h5r_attr_num(g, "dropped_events", H5T_NATIVE_INT64, &rd->dropped) < 0 || rd->dropped < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: bad 'dropped_events' attribute", ctx);
		goto out;
	}
	/* Aggregation mode: the summary and the self time, no events. */
	int32_t agg = 0;
	if ((a = sp_h5r_attr_num(g, "aggregate", H5T_NATIVE_INT32, &agg)) < 0 ||
	    (a == 1 && agg == 1 && sp_h5r_attr_num(g, "self_ns", H5T_NATIVE_INT64, &rd->self_ns) != 1)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: bad 'aggregate' or 'self_ns' attribute", ctx);
		goto out;
	}
	if (a == 1 && agg == 1) {
		if (got != 8)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: aggregates without their summary attributes", ctx);
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
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: num_calls is %lld but there are %zu events", ctx,
			   (long long)st->num_calls, n);
out:
	H5Gclose(g);
	return rc;
}

static enum sp_err read_rank(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	hid_t g = -1, regions = -1;
	struct names nl = {0};
	struct sp_h5r_name_ref *idx = NULL;
	enum sp_err rc = SP_OK;
	int has_tree;

	if (r->version == 2)
		return sp_h5r_read_rank_v2(r, file, gname, rk);
	if (r->version == 3)
		return sp_h5r_read_rank_v3(r, file, gname, rk);
	if ((g = sp_h5r_open_group(r, file, gname)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = sp_h5r_rank_attrs(r, g, gname, rk)) != SP_OK)
		goto out;
	if ((rc = sp_h5r_open_regions(r, g, gname, &regions, &nl, rk)) != SP_OK)
		goto out;
	if ((has_tree = sp_h5r_hard_link(g, "tree")) < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the tree", gname);
		goto out;
	}
	if (!(idx = sp_h5r_alloc_n(nl.n, sizeof *idx))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, nl.n);
		goto out;
	}
	rk->nregions = nl.n;
	int need_events = (r->flags & SP_READ_EVENTS) || !has_tree;
	for (size_t i = 0; i < nl.n; i++) {
		if ((rc = sp_h5r_read_region(r, regions, nl.v[i], rk->rank, need_events, &rk->regions[i])) != SP_OK)
			goto out;
		idx[i] = (struct sp_h5r_name_ref){rk->regions[i].name, (int32_t)i};
	}
	qsort(idx, nl.n, sizeof *idx, sp_h5r_name_ref_cmp);
	for (size_t i = 1; i < nl.n; i++)
		if (strcmp(idx[i - 1].name, idx[i].name) == 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s has two regions named '%s'", gname, idx[i].name);
			goto out;
		}
	rc = sp_h5r_tree_and_lines(r, g, gname, has_tree, idx, nl.n, rk);
out:
	free(idx);
	sp_h5r_names_free(&nl);
	sp_h5r_close(regions);
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
	sp_h5r_close(t); sp_h5r_close(s);
	return rc;
}

struct meta_op {
	struct reader *r;
	struct sp_profile *p;
	size_t cap;                    /* p->meta's allocated entries */
};

static herr_t meta_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op)
{
	struct sp_profile *p = ((struct meta_op *)op)->p;
	char *value = NULL, *key = NULL;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
	(void)info;
	if (a < 0)
		return 0;
	enum sp_kv_type type = SP_KV_FIXED;
	int rc = sp_h5r_attr_str_open(((struct meta_op *)op)->r, a, &value);
	if (rc == 1) {
		hid_t t = H5Aget_type(a);
		if (t >= 0 && H5Tis_variable_str(t) > 0)
			type = SP_KV_TEXT;
		if (t >= 0)
			H5Tclose(t);
	} else if (rc == -1) {
		hid_t t = H5Aget_type(a);
		if (t >= 0 && H5Tget_class(t) == H5T_INTEGER)
			type = SP_KV_INT;
		if (t >= 0)
			H5Tclose(t);
		rc = attr_num_text(a, &value);
	}
	H5Aclose(a);
	if (rc == -1)
		return 0;              /* neither a string nor a number: skipped */
	if (rc == -2 || !(key = strdup(name)))
		goto oom;
	if (SP_GROW(&p->meta, &((struct meta_op *)op)->cap, p->nmeta + 1) != 0)
		goto oom;
	p->meta[p->nmeta++] = (struct sp_kv){key, value, type};
	return 0;
oom:
	free(key);
	free(value);
	return -1;
}

/* The string attributes of /metadata, in creation order when tracked. */
static enum sp_err read_meta(struct reader *r, hid_t file, struct sp_profile *p)
{
	hid_t g = sp_h5r_open_group(r, file, "metadata"), gcpl;
	unsigned crt = 0;
	if (g < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "metadata is not a group");
	if ((gcpl = H5Gget_create_plist(g)) >= 0) {
		if (H5Pget_attr_creation_order(gcpl, &crt) < 0)
			crt = 0;
		H5Pclose(gcpl);
	}
	herr_t e = -1;
	struct meta_op op = {r, p, 0};
	for (int by_name = !(crt & H5P_CRT_ORDER_TRACKED); by_name < 2 && e < 0; by_name++) {
		for (size_t i = 0; i < p->nmeta; i++) {
			free(p->meta[i].key);
			free(p->meta[i].value);
		}
		p->nmeta = 0;
		e = H5Aiterate2(g, by_name ? H5_INDEX_NAME : H5_INDEX_CRT_ORDER, H5_ITER_INC, NULL,
				meta_cb, &op);
	}
	H5Gclose(g);
	if (e < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "cannot read the metadata");
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

/* Whether file is a scope-profiler profile: its "format" attribute, when
 * there, is "scope-profiler", its format_version one this reader knows,
 * and it has a rank group (the plain hand-written layout has no attribute
 * at all). SP_OK with *version and the root's links in *nl (freed by the
 * caller), or the reader's failure. With `ours`, the attribute alone
 * answers where it is there (a later version's, a damaged one of ours). */
static enum sp_err identify(struct reader *r, hid_t file, int ours, int32_t *version, struct names *nl,
			    size_t *nr)
{
	enum sp_err rc = SP_OK;
	char *format = NULL;
	int a;
	hid_t root = sp_h5r_open_group(r, file, "/");
	sp_h5r_close(root);
	*version = 0;
	*nr = 0;
	if (root < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "damaged root group");
		goto out;
	}
	if ((a = sp_h5r_attr_str(r, file, "format", &format)) < 0 ||
	    sp_h5r_attr_num(file, "format_version", H5T_NATIVE_INT32, version) < 0) {
		rc = sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "unreadable file attributes");
		goto out;
	}
	if (format && strcmp(format, "scope-profiler") != 0) {
		rc = sp_h5r_fail(r, SP_ENOTPROF, "not a scope-profiler file (format '%.64s')", format);
		goto out;
	}
	if (format && ours)
		goto out;
	if (*version < 0 || *version > 3) {
		rc = sp_h5r_fail(r, SP_ENOTPROF, "format version %d is not supported (1 to 3 are)", (int)*version);
		goto out;
	}
	if ((a = sp_h5r_list_links(file, nl)) < 0) {
		rc = sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "cannot list the root group");
		goto out;
	}
	for (size_t i = 0; i < nl->n; i++)
		*nr += rank_number(nl->v[i]) >= 0;
	if (*nr == 0)
		rc = sp_h5r_fail(r, SP_ENOTPROF, "not a scope-profiler file (no rank groups)");
out:
	free(format);
	return rc;
}

/* Reads the file's structure into p; the caller frees p on failure. */
enum sp_err sp_h5r_read_file(struct reader *r, hid_t file, struct sp_profile *p, sp_h5r_rank_fn read_one)
{
	struct names nl = {0};
	int32_t version = 0;
	size_t nr = 0;
	int a;
	enum sp_err rc = identify(r, file, 0, &version, &nl, &nr);
	if (rc != SP_OK)
		goto out;
	p->format_version = r->version = version;
	if (!(p->ranks = calloc(nr, sizeof *p->ranks))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "out of memory");
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
			rc = sp_h5r_fail(r, SP_ECORRUPT, "two groups for rank %d", p->ranks[i].rank);
			goto out;
		}
	for (size_t i = 0; i < p->nranks; i++) {
		char gname[32];
		snprintf(gname, sizeof gname, "rank%d", p->ranks[i].rank);
		/* "rank007" names rank 7 too: find the link actually listed. */
		if (sp_h5r_hard_link(file, gname) != 1)
			for (size_t j = 0; j < nl.n; j++)
				if (rank_number(nl.v[j]) == p->ranks[i].rank)
					snprintf(gname, sizeof gname, "%.31s", nl.v[j]);
		if ((rc = read_one(r, file, gname, &p->ranks[i])) != SP_OK)
			goto out;
	}
	p->partial = r->partial;
	p->partial_until_ns = r->partial_until_ns;
	if ((a = sp_h5r_hard_link(file, "metadata")) == 1)
		rc = read_meta(r, file, p);
	else if (a < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "cannot look up the metadata");
out:
	sp_h5r_names_free(&nl);
	return rc;
}

int sp_h5_is_profile(const char *path)
{
	struct sp_error err = {0};
	struct reader r = {.path = path ? path : "", .err = &err, .file = -1, .fd = -1};
	struct names nl = {0};
	hid_t fapl = -1, file = -1;
	int32_t version;
	size_t nr;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	int yes = path && sp_h5r_check_path(&r) == SP_OK && (fapl = sp_h5_fapl()) >= 0 &&
		  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) >= 0 && sp_h5r_open_file(&r, fapl, &file) == SP_OK &&
		  (r.file = file, identify(&r, file, 1, &version, &nl, &nr) == SP_OK);
	sp_h5r_names_free(&nl);
	if (file >= 0)
		H5Fclose(file);
	sp_h5r_close(fapl);
	sp_h5r_release(&r);
	return yes;
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
	if ((rc = sp_h5r_check_path(&r)) != SP_OK)
		return rc;
	/* Strong close: whatever a failure path left open goes with the file. */
	if ((fapl = sp_h5_fapl()) < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
		rc = sp_h5r_fail(&r, SP_EIO, "cannot set up HDF5");
		goto out;
	}
	if ((rc = sp_h5r_open_file(&r, fapl, &file)) != SP_OK)
		goto out;
	if (!(p = calloc(1, sizeof *p))) {
		rc = sp_h5r_fail(&r, SP_ENOMEM, "out of memory");
		goto out;
	}
	r.file = file;
	rc = sp_h5r_read_file(&r, file, p, read_rank);
out:
	if (file >= 0 && H5Fclose(file) < 0 && rc == SP_OK)
		rc = sp_h5r_fail(&r, SP_EIO, "cannot close the file");
	sp_h5r_close(fapl);
	sp_h5r_release(&r);
	if (rc != SP_OK)
		sp_profile_free(p);
	else
		*out = p;
	return rc;
}
