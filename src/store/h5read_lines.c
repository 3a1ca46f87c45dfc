/* h5read_lines.c - reading a rank's per-line tables (group lines, one
 * subgroup per profiled function). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5read.h"
#include "sp_h5read_lines.h"

/* Reads a string attribute of a line table that must be there. */
static enum sp_err line_attr_str(struct reader *r, hid_t g, const char *ctx, const char *name,
				 char **out)
{
	int a = sp_h5r_attr_str(r, g, name, out);
	if (a == -2)
		return sp_h5r_fail(r, SP_ENOMEM, "out of memory");
	if (a == 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no '%s' attribute", ctx, name);
	if (a < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: bad '%s' attribute", ctx, name);
	return SP_OK;
}

/* Reads the source column (n strings, fixed or variable length) of ds into
 * t->source, a calloc'd array of malloc'd strings; a missing line is "". */
static enum sp_err read_source(struct reader *r, hid_t ds, const char *ctx, size_t n,
			       struct sp_line_table *t)
{
	struct sp_h5r_strings lines = {.mt = -1, .space = -1};
	enum sp_err rc;

	if ((rc = sp_h5r_strings_read(r, ds, ctx, "source", n, &lines)) != SP_OK)
		goto out;
	if (!(t->source = calloc(n ? n : 1, sizeof *t->source))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu source lines", ctx, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *line = sp_h5r_string(&lines, i);
		if (!(t->source[i] = strdup(line ? line : ""))) {
			rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu source lines", ctx, n);
			goto out;
		}
	}
out:
	sp_h5r_strings_free(&lines);
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
	if ((g = sp_h5r_open_group(r, lines, link)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", ctx);
	if ((rc = line_attr_str(r, g, ctx, "function", &t->function)) != SP_OK ||
	    (rc = line_attr_str(r, g, ctx, "region", &t->region)) != SP_OK ||
	    (rc = line_attr_str(r, g, ctx, "filename", &t->filename)) != SP_OK)
		goto out;
	if ((a = sp_h5r_attr_num(g, "first_line", H5T_NATIVE_INT64, &first)) <= 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, a == 0 ? "%s has no 'first_line' attribute"
						  : "%s: bad 'first_line' attribute", ctx);
		goto out;
	}
	if (first < 0 || first > INT32_MAX) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: first_line %lld out of range", ctx, (long long)first);
		goto out;
	}
	t->first_line = (int32_t)first;
	for (int i = 0; i < 3; i++)
		if ((rc = sp_h5r_column_open(r, g, ctx, i < 2 ? cols[i] : "source",
				      i < 2 ? H5T_INTEGER : H5T_STRING, 1, &ds[i], &len[i])) != SP_OK)
			goto out;
	if (len[1] != len[0] || len[2] != len[0]) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: hits, time_ns and source differ in length", ctx);
		goto out;
	}
	/* The last line's number must be an int32 too. */
	if (len[0] && len[0] - 1 > (hsize_t)(INT32_MAX - t->first_line)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %llu lines from line %d run past the last line number", ctx,
			   (unsigned long long)len[0], (int)t->first_line);
		goto out;
	}
	size_t n = (size_t)len[0];
	if (!(t->hits = sp_h5r_alloc_n(n, sizeof *t->hits)) ||
	    !(t->time_ns = sp_h5r_alloc_n(n, sizeof *t->time_ns))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu lines", ctx, n);
		goto out;
	}
	if (n && (H5Dread(ds[0], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->hits) < 0 ||
		  H5Dread(ds[1], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->time_ns) < 0)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the hits and time_ns columns", ctx);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (t->hits[i] < 0 || t->time_ns[i] < 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: negative %s at line %lld", ctx,
				   t->hits[i] < 0 ? "hits" : "time", (long long)t->first_line + (long long)i);
			goto out;
		}
	if ((rc = read_source(r, ds[2], ctx, n, t)) != SP_OK)
		goto out;
	t->n = n;              /* only now: clearing frees n source lines */
out:
	for (int i = 0; i < 3; i++)
		sp_h5r_close(ds[i]);
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
enum sp_err sp_h5r_read_lines(struct reader *r, hid_t rank_g, struct sp_rank *rk)
{
	struct names nl = {0};
	struct sp_line_table t = {0};
	enum sp_err rc = SP_OK;
	hid_t g;
	int a;

	if ((g = sp_h5r_open_group(r, rank_g, "lines")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "rank%d/lines is not a group", rk->rank);
	if ((a = sp_h5r_list_links(g, &nl)) < 0) {
		rc = sp_h5r_fail(r, a == -2 ? SP_ENOMEM : SP_ECORRUPT, "rank%d: cannot list the line tables",
			   rk->rank);
		goto out;
	}
	qsort(nl.v, nl.n, sizeof *nl.v, line_link_cmp);
	if (nl.n && !(rk->lines = calloc(nl.n, sizeof *rk->lines))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "rank%d: out of memory for %zu line tables", rk->rank, nl.n);
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
	sp_h5r_names_free(&nl);
	H5Gclose(g);
	return rc;
}
