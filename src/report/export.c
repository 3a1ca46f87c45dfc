/* export.c - a profile's calls for pandas, Perfetto / chrome://tracing,
 * speedscope and flamegraph.pl (csv, json, chrome; folded stacks are in
 * export_folded.c), streamed from the file a slice at a time. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "render_int.h"
#include "sp_grow.h"
#include "sp_analysis.h"
#include "sp_hosts.h"
#include "sp_clock.h"
#include "sp_nest.h"

const char *const sp_export_format_names[SP_EXPORT_NFORMATS] = {"csv", "json", "chrome", "folded",
									   "speedscope"};

int sp_export_format_parse(const char *name)
{
	for (int f = 0; f < SP_EXPORT_NFORMATS; f++)
		if (strcmp(name, sp_export_format_names[f]) == 0)
			return f;
	return -1;
}

/* The Python read API's region order: earliest call first, ties in the
 * order the regions first appear (rank by rank, file order). */
static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->ri != y->ri)
		return x->ri < y->ri ? -1 : 1;
	return (x->gi > y->gi) - (x->gi < y->gi);
}

/* Orders the regions, finds each rank's time origin, allocates the slice. */
static enum sp_err plan(struct exporter *x)
{
	const struct sp_profile *p = x->p;
	size_t n = 0;
	for (size_t r = 0; r < p->nranks; r++)
		n += p->ranks[r].nregions;
	if (sp_byname_build(&x->names, &p, 1, NULL, x->err) != SP_OK)
		return SP_ENOMEM;
	x->groups = malloc((x->names.n ? x->names.n : 1) * sizeof *x->groups);
	x->gid = malloc((n ? n : 1) * sizeof *x->gid);
	x->origin = malloc(p->nranks * sizeof *x->origin);
	x->starts = malloc(SLICE * sizeof *x->starts);
	x->ends = malloc(SLICE * sizeof *x->ends);
	x->lanes = malloc(SLICE * sizeof *x->lanes);
	x->values = malloc(SLICE * sizeof *x->values);
	if (!x->groups || !x->gid || !x->origin || !x->starts || !x->ends || !x->lanes || !x->values)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory for %zu regions", n);
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t g = 0; g < p->ranks[r].nregions; g++)
			x->kinds[p->ranks[r].regions[g].value_kind] = 1;
	/* One time axis for all ranks, the analysis module's (as the Python
	 * read API has it). */
	int64_t origin = sp_profile_time_origin(p);
	for (size_t r = 0; r < p->nranks; r++)
		x->origin[r] = origin != SP_NO_TIME ? origin : 0;
	for (size_t k = 0; k < x->names.n; k++) {
		size_t first = x->names.first[k], nk = x->names.first[k + 1] - first;
		const struct sp_byname_ref *r0 = &x->names.refs[first];
		struct group *g = &x->groups[x->ngroups++];
		*g = (struct group){first, nk, INT64_MAX, r0->ri, r0->gi};
		for (size_t i = first; i < first + nk; i++) {
			const struct sp_stats *st = &p->ranks[x->names.refs[i].ri].regions[x->names.refs[i].gi].stats;
			if (st->num_calls > 0 && st->first_start_ns < g->key)
				g->key = st->first_start_ns;
		}
		if (g->key == INT64_MAX)
			g->key = 0;
	}
	qsort(x->groups, x->ngroups, sizeof *x->groups, group_cmp);
	for (size_t k = 0; k < x->ngroups; k++)
		for (size_t i = 0; i < x->groups[k].n; i++) {
			const struct sp_byname_ref *e = &x->names.refs[x->groups[k].first + i];
			x->gid[x->names.base[e->ri] + e->gi] = (int32_t)k;
		}
	return SP_OK;
}

/* ---- csv, json, chrome: one call at a time ------------------------------ */

/* Remembers that rank's lane got a call (chrome's thread names). */
static enum sp_err lane_seen(struct exporter *x, int rank, int32_t lane)
{
	int64_t key = (int64_t)rank << 32 | (uint32_t)lane;
	size_t lo = 0, hi = x->nseen;
	if (hi && x->seen[hi - 1] == key)
		return SP_OK;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->seen[mid] == key)
			return SP_OK;
		if (x->seen[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (SP_GROW(&x->seen, &x->seen_cap, x->nseen + 1) != 0)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory for thread lanes");
	memmove(&x->seen[lo + 1], &x->seen[lo], (x->nseen - lo) * sizeof *x->seen);
	x->seen[lo] = key;
	x->nseen++;
	return SP_OK;
}

/* The value columns: CSV's cells (empty where the region has none of that
 * kind); JSON's and Chrome's key of the region's kind. */
static void write_value(struct exporter *x, int64_t v)
{
	struct out *o = x->o;
	if (x->fmt == SP_EXPORT_CSV) {
		for (int k = 1; k < SP_VALUE_KINDS; k++)
			if (x->kinds[k]) {
				out_ch(o, ',');
				if (k == x->kind)
					out_dec(o, v, 0);
			}
		return;
	}
	if (!x->kind)
		return;
	out_str(o, x->fmt == SP_EXPORT_JSON ? ", \"" : ",\"args\":{\"");
	out_str(o, sp_value_kind_name(x->kind));
	out_str(o, x->fmt == SP_EXPORT_JSON ? "\": " : "\":");
	out_dec(o, v, 0);
	if (x->fmt != SP_EXPORT_JSON)
		out_ch(o, '}');
}

static void write_call(struct exporter *x, int rank, int32_t lane, uint64_t call, int64_t start,
		       int64_t end, int64_t origin, int64_t value)
{
	struct out *o = x->o;
	__int128 s = (__int128)start - origin, e = (__int128)end - origin, d = (__int128)end - start;
	switch (x->fmt) {
	case SP_EXPORT_CSV:
		out_mem(o, x->name.p, x->name.n);
		out_ch(o, ',');
		out_dec(o, rank, 0);
		out_ch(o, ',');
		out_dec(o, lane, 0);
		out_ch(o, ',');
		out_dec(o, call, 0);
		out_ch(o, ',');
		out_dec(o, s, 9);
		out_ch(o, ',');
		out_dec(o, e, 9);
		out_ch(o, ',');
		out_dec(o, d, 9);
		write_value(x, value);
		out_ch(o, '\n');
		break;
	case SP_EXPORT_JSON:
		out_str(o, x->written ? ",\n{\"name\": " : "\n{\"name\": ");
		out_mem(o, x->name.p, x->name.n);
		out_str(o, ", \"rank\": ");
		out_dec(o, rank, 0);
		out_str(o, ", \"lane\": ");
		out_dec(o, lane, 0);
		out_str(o, ", \"call_index\": ");
		out_dec(o, call, 0);
		out_str(o, ", \"start\": ");
		out_dec(o, s, 9);
		out_str(o, ", \"end\": ");
		out_dec(o, e, 9);
		out_str(o, ", \"duration\": ");
		out_dec(o, d, 9);
		write_value(x, value);
		out_ch(o, '}');
		break;
	default:                   /* SP_EXPORT_CHROME: microseconds, to the ns */
		out_str(o, ",\n{\"ph\":\"X\",\"name\":");
		out_mem(o, x->name.p, x->name.n);
		out_str(o, ",\"pid\":");
		out_dec(o, rank, 0);
		out_str(o, ",\"tid\":");
		out_dec(o, lane, 0);
		out_str(o, ",\"ts\":");
		out_dec(o, s, 3);
		out_str(o, ",\"dur\":");
		out_dec(o, d, 3);
		write_value(x, value);
		out_ch(o, '}');
		break;
	}
	x->written++;
}

/* Encodes the current region's name once for the format (x->name). */
static enum sp_err encode_name(struct exporter *x, const char *name)
{
	x->name.n = 0;
	if (x->fmt == SP_EXPORT_CSV)
		sp_csv_field(&x->name, name);
	else
		sp_json_string(&x->name, name);
	if (x->name.oom)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory");
	return SP_OK;
}

/* Loads the selected calls of rank ri: *colsp, one column per region of
 * the rank (empty when not selected), over *mem, 20 bytes a call; both
 * malloc'd (the previous rank's are freed here). SP_ENOMEM or the stream's
 * read error otherwise. */
static enum sp_err load_rank(struct exporter *x, size_t ri, struct sp_nest_column **colsp, void **mem)
{
	const struct sp_rank *rk = &x->p->ranks[ri];
	size_t n = 0, k = 0;
	enum sp_err rc = SP_OK;
	free(*mem);
	*mem = NULL;
	free(*colsp);
	struct sp_nest_column *cols = *colsp = malloc((rk->nregions ? rk->nregions : 1) * sizeof *cols);
	if (!cols)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory");
	for (size_t g = 0; g < rk->nregions; g++) {
		int64_t calls = rk->regions[g].stats.num_calls;
		cols[g] = (struct sp_nest_column){ 0 };
		if (calls <= 0 || !sp_select_region(x->sel, rk->regions[g].name))
			continue;
		if ((uint64_t)calls > SIZE_MAX / 20 - n)
			return sp_error_set(x->err, SP_ENOMEM, "rank %d: too many calls", rk->rank);
		n += (size_t)calls;
		cols[g].n = (size_t)calls;
	}
	char *m = malloc(n ? n * 20 : 1);
	if (!m)
		return sp_error_set(x->err, SP_ENOMEM,
				    "rank %d: out of memory for %zu calls (the export needs 20 bytes a call)",
				    rk->rank, n);
	int64_t *starts = (int64_t *)m, *ends = starts + n;
	int32_t *lanes = (int32_t *)(ends + n);
	for (size_t g = 0; g < rk->nregions; g++) {
		size_t calls = cols[g].n;
		if (!calls)
			continue;
		cols[g] = (struct sp_nest_column){ starts + k, ends + k, lanes + k, calls };
		for (size_t first = 0; first < calls; first += SLICE) {
			size_t c = calls - first < SLICE ? calls - first : SLICE;
			size_t at = k + first;
			if ((rc = sp_h5_stream_read(x->s, ri, g, first, c, starts + at, ends + at, lanes + at,
						    x->err)) != SP_OK) {
				free(m);
				return rc;
			}
		}
		k += calls;
	}
	*mem = m;
	return SP_OK;
}

enum sp_err sp_export_walk_ranks(struct exporter *x, sp_nest_fn visit, void *ctx,
				 void (*begin)(void *ctx, const int32_t *gid, int64_t origin),
				 enum sp_err (*end)(struct exporter *x, void *ctx, int rank))
{
	struct sp_nest_column *cols = NULL;
	void *mem = NULL;
	enum sp_err rc = SP_OK;
	for (size_t r = 0; r < x->p->nranks && rc == SP_OK; r++) {
		const struct sp_rank *rk = &x->p->ranks[r];
		if (!sp_select_rank(x->sel, rk->rank))
			continue;
		if ((rc = load_rank(x, r, &cols, &mem)) != SP_OK)
			break;
		begin(ctx, x->gid + x->names.base[r], x->origin[r]);
		if (sp_nest_walk(cols, rk->nregions, 0, visit, ctx, x->err) != SP_OK)
			rc = sp_error_set(x->err, SP_ENOMEM, "rank %d: out of memory nesting its calls", rk->rank);
		else if (end)
			rc = end(x, ctx, rk->rank);
	}
	free(mem);
	free(cols);
	return rc;
}

/* Streams every selected call, region by region, rank by rank. */
static enum sp_err write_calls(struct exporter *x)
{
	enum sp_err rc;
	for (size_t k = 0; k < x->ngroups; k++) {
		const struct group *g = &x->groups[k];
		const char *name = sp_export_group_name(x, k);
		if (!sp_select_region(x->sel, name))
			continue;
		if (encode_name(x, name) != SP_OK)
			return SP_ENOMEM;
		for (size_t i = 0; i < g->n; i++) {
			const struct sp_byname_ref *e = &x->names.refs[g->first + i];
			const struct sp_rank *rk = &x->p->ranks[e->ri];
			uint64_t calls = (uint64_t)rk->regions[e->gi].stats.num_calls;
			if (!sp_select_rank(x->sel, rk->rank) || rk->regions[e->gi].stats.num_calls <= 0)
				continue;
			x->kind = rk->regions[e->gi].value_kind;
			for (uint64_t first = 0; first < calls; first += SLICE) {
				size_t n = calls - first < SLICE ? (size_t)(calls - first) : SLICE;
				if ((rc = sp_h5_stream_read(x->s, e->ri, e->gi, first, n, x->starts, x->ends,
							    x->lanes, x->err)) != SP_OK ||
				    (x->kind && (rc = sp_h5_stream_values(x->s, e->ri, e->gi, first, n, x->values,
									  x->err)) != SP_OK))
					return rc;
				for (size_t c = 0; c < n; c++) {
					if (x->fmt == SP_EXPORT_CHROME &&
					    (rc = lane_seen(x, rk->rank, x->lanes[c])) != SP_OK)
						return rc;
					write_call(x, rk->rank, x->lanes[c], first + c, x->starts[c], x->ends[c],
						   x->origin[e->ri], x->kind ? x->values[c] : 0);
				}
				if (x->o->err)
					return SP_EIO;
			}
		}
	}
	return SP_OK;
}

/* The name of rank's lane from the /metadata "lanes" attribute
 * ("0=MainThread; 1=worker"): *len bytes at the result, or NULL. */
static const char *lane_name(const char *lanes, int32_t lane, size_t *len)
{
	const char *p = lanes;
	while (p && *p) {
		char *eq;
		long v = strtol(p, &eq, 10);
		const char *name = eq + 1, *end = name;
		/* The entry ends at "; " followed by "<digits>=", or at the end. */
		for (;; end++) {
			if (!*end)
				break;
			if (end[0] == ';' && end[1] == ' ') {
				const char *d = end + 2;
				while (*d >= '0' && *d <= '9')
					d++;
				if (d > end + 2 && *d == '=')
					break;
			}
		}
		if (eq != p && *eq == '=' && v == lane) {
			*len = (size_t)(end - name);
			return name;
		}
		p = *end ? end + 2 : NULL;
	}
	return NULL;
}

static enum sp_err write_chrome(struct exporter *x)
{
	struct out *o = x->o;
	const char *lanes = sp_profile_meta(x->p, "lanes");
	enum sp_err rc;
	int n = 0;
	out_str(o, HEAD_CHROME);
	for (size_t r = 0; r < x->p->nranks; r++) {
		int rank = x->p->ranks[r].rank;
		if (!sp_select_rank(x->sel, rank))
			continue;
		out_str(o, n++ ? ",\n" : "\n");
		out_str(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
		out_dec(o, rank, 0);
		out_str(o, ",\"tid\":0,\"args\":{\"name\":\"rank ");
		out_dec(o, rank, 0);
		out_str(o, "\"}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
		out_dec(o, rank, 0);
		out_str(o, ",\"tid\":0,\"args\":{\"sort_index\":");
		out_dec(o, rank, 0);
		out_str(o, "}}");
	}
	if ((rc = write_calls(x)) != SP_OK)
		return rc;
	for (size_t i = 0; i < x->nseen; i++) {
		int rank = (int)(x->seen[i] >> 32);
		int32_t lane = (int32_t)(uint32_t)x->seen[i];
		size_t len = 0;
		const char *name = lanes ? lane_name(lanes, lane, &len) : NULL;
		char buf[32];
		x->name.n = 0;
		if (name) {
			char *copy = strndup(name, len);
			if (!copy)
				return sp_error_set(x->err, SP_ENOMEM, "out of memory");
			sp_json_string(&x->name, copy);
			free(copy);
		} else {
			snprintf(buf, sizeof buf, "lane %d", (int)lane);
			sp_json_string(&x->name, buf);
		}
		if (x->name.oom)
			return sp_error_set(x->err, SP_ENOMEM, "out of memory");
		out_str(o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
		out_dec(o, rank, 0);
		out_str(o, ",\"tid\":");
		out_dec(o, lane, 0);
		out_str(o, ",\"args\":{\"name\":");
		out_mem(o, x->name.p, x->name.n);
		out_str(o, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":");
		out_dec(o, rank, 0);
		out_str(o, ",\"tid\":");
		out_dec(o, lane, 0);
		out_str(o, ",\"args\":{\"sort_index\":");
		out_dec(o, lane, 0);
		out_str(o, "}}");
	}
	out_str(o, "\n],\n\"displayTimeUnit\": \"ns\"}\n");
	return SP_OK;
}

static enum sp_err write_json(struct exporter *x)
{
	struct out *o = x->o;
	enum sp_err rc;
	int64_t common = 0;
	int n = 0, same = 1;
	for (size_t r = 0; r < x->p->nranks; r++)
		if (sp_select_rank(x->sel, x->p->ranks[r].rank)) {
			same &= n == 0 || x->origin[r] == common;
			common = x->origin[r];
			n++;
		}
	x->name.n = 0;
	sp_json_string(&x->name, x->path);
	if (x->name.oom)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory");
	out_str(o, HEAD_JSON);
	out_mem(o, x->name.p, x->name.n);
	out_str(o, ",\n\"time_origin_ns\": ");
	if (same && n)
		out_dec(o, common, 0);
	else
		out_str(o, "null");
	out_str(o, ",\n\"ranks\": [");
	n = 0;
	for (size_t r = 0; r < x->p->nranks; r++) {
		if (!sp_select_rank(x->sel, x->p->ranks[r].rank))
			continue;
		out_str(o, n++ ? ", {\"rank\": " : "{\"rank\": ");
		out_dec(o, x->p->ranks[r].rank, 0);
		out_str(o, ", \"time_origin_ns\": ");
		out_dec(o, x->origin[r], 0);
		out_ch(o, '}');
	}
	out_str(o, "],\n\"events\": [");
	if ((rc = write_calls(x)) != SP_OK)
		return rc;
	out_str(o, x->written ? "\n]}\n" : "]}\n");
	return SP_OK;
}

/* ---- aggregation mode: no calls, one row per region and rank ------------ */

static int has_aggregates(const struct sp_profile *p)
{
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t g = 0; g < p->ranks[r].nregions; g++)
			if (p->ranks[r].regions[g].aggregate)
				return 1;
	return 0;
}

/* csv and json of aggregates: calls, total, self, min, max, mean per
 * selected region and rank, in the read API's region order. */
static enum sp_err write_aggregates(struct exporter *x)
{
	struct out *o = x->o;
	/* total_s counts a recursive region once, as summary's does (its
	 * raw_total_s: the plain sum over the calls). */
	static const char *const keys[] = {AGG_FIRST_KEY, "total_s", "self_s", "min_s", "max_s", "mean_s",
					   "raw_total_s"};
	enum { NKEYS = sizeof keys / sizeof *keys };
	size_t nall = 0;
	for (size_t r = 0; r < x->p->nranks; r++)
		nall += x->p->ranks[r].nregions;
	int64_t *cum = malloc((nall ? nall : 1) * sizeof *cum);
	if (!cum)
		return SP_ENOMEM;
	/* cum: where the join keeps each rank's regions (sp_byname_id's place) */
	for (size_t r = 0; r < x->p->nranks; r++)
		if (sp_rank_region_times(&x->p->ranks[r], cum + x->names.base[x->names.rank0[0] + r], NULL) < 0) {
			free(cum);
			return SP_ENOMEM;
		}
	if (x->fmt == SP_EXPORT_CSV) {
		out_str(o, HEAD_CSV);
		for (size_t i = 0; i < NKEYS; i++) {
			out_ch(o, ',');
			out_str(o, keys[i]);
		}
		out_ch(o, '\n');
	} else {
		x->name.n = 0;
		sp_json_string(&x->name, x->path);
		out_str(o, HEAD_JSON);
		out_mem(o, x->name.p, x->name.n);
		out_str(o, ",\n\"aggregate\": true,\n\"regions\": [");
	}
	for (size_t k = 0; k < x->ngroups; k++) {
		const struct group *g = &x->groups[k];
		const char *name = sp_export_group_name(x, k);
		if (!sp_select_region(x->sel, name))
			continue;
		if (encode_name(x, name) != SP_OK) {
			free(cum);
			return SP_ENOMEM;
		}
		for (size_t i = 0; i < g->n; i++) {
			const struct sp_byname_ref *e = &x->names.refs[g->first + i];
			const struct sp_rank *rk = &x->p->ranks[e->ri];
			const struct sp_region_data *rd = &rk->regions[e->gi];
			const struct sp_stats *st = &rd->stats;
			if (!sp_select_rank(x->sel, rk->rank) || st->num_calls <= 0)
				continue;
			size_t at = x->names.base[x->names.rank0[0] + e->ri] + e->gi;
			/* A region with events has no stored self time. */
			__int128 vals[NKEYS] = {st->num_calls, cum[at], rd->aggregate ? rd->self_ns : -1,
						st->min_ns, st->max_ns, (__int128)(st->mean_ns + 0.5), st->total_ns};
			if (x->fmt == SP_EXPORT_CSV) {
				out_mem(o, x->name.p, x->name.n);
				out_ch(o, ',');
				out_dec(o, rk->rank, 0);
			} else {
				out_str(o, x->written ? ",\n{\"name\": " : "\n{\"name\": ");
				out_mem(o, x->name.p, x->name.n);
				out_str(o, ", \"rank\": ");
				out_dec(o, rk->rank, 0);
			}
			for (size_t v = 0; v < NKEYS; v++) {
				if (x->fmt == SP_EXPORT_CSV) {
					out_ch(o, ',');
				} else {
					out_str(o, ", \"");
					out_str(o, keys[v]);
					out_str(o, "\": ");
				}
				if (vals[v] < 0)
					out_str(o, x->fmt == SP_EXPORT_CSV ? "" : "null");
				else
					out_dec(o, vals[v], v == 0 ? 0 : 9);
			}
			if (x->fmt == SP_EXPORT_CSV)
				out_ch(o, '\n');
			else
				out_ch(o, '}');
			x->written++;
		}
	}
	free(cum);
	if (x->fmt == SP_EXPORT_JSON)
		out_str(o, x->written ? "\n]}\n" : "]}\n");
	return SP_OK;
}

/* Writes the export of the open stream s to o. Returns SP_OK, or the
 * failure with err filled (SP_EIO with o->err set for a failed write). */
enum sp_err sp_export(struct sp_h5_stream *s, const char *path, enum sp_export_format fmt,
		      const struct sp_select *sel, FILE *f, int *write_errno, struct sp_error *err)
{
	struct out *o = calloc(1, sizeof *o);
	if (!o)
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	o->f = f;
	struct exporter x = {.s = s, .p = sp_h5_stream_profile(s), .sel = sel, .o = o, .fmt = fmt,
			     .path = path, .err = err};
	enum sp_err rc;
	size_t nsel = 0;
	for (size_t r = 0; r < x.p->nranks; r++)
		nsel += sp_select_rank(sel, x.p->ranks[r].rank);
	if (nsel == 0) {
		rc = sp_render_none_selected(err, NULL, x.p);
		goto out;
	}
	if ((rc = plan(&x)) != SP_OK)
		goto out;
	if (has_aggregates(x.p)) {
		if (fmt == SP_EXPORT_CHROME || fmt == SP_EXPORT_SPEEDSCOPE)
			rc = sp_error_set(err, SP_EINVAL, "'%s' holds aggregates (run --aggregate): there is no "
					  "per-call timeline for %s; export csv, json or folded", path,
					  fmt == SP_EXPORT_CHROME ? "a Chrome trace" : "speedscope's evented profiles");
		else
			rc = fmt == SP_EXPORT_FOLDED ? sp_export_folded_trees(&x) : write_aggregates(&x);
		out_flush(o);
		if (rc == SP_OK && o->err)
			rc = SP_EIO;
		goto out;
	}
	switch (fmt) {
	case SP_EXPORT_CSV:
		out_str(o, HEAD_CSV_CALLS "start_s,end_s,duration_s");
		for (int k = 1; k < SP_VALUE_KINDS; k++)
			if (x.kinds[k]) {
				out_ch(o, ',');
				out_str(o, sp_value_kind_name(k));
			}
		out_ch(o, '\n');
		rc = write_calls(&x);
		break;
	case SP_EXPORT_JSON:
		rc = write_json(&x);
		break;
	case SP_EXPORT_CHROME:
		rc = write_chrome(&x);
		break;
	case SP_EXPORT_SPEEDSCOPE:
		rc = sp_export_speedscope(&x);
		break;
	default:
		rc = sp_export_folded(&x);
		break;
	}
	out_flush(o);
	if (rc == SP_OK && o->err)
		rc = SP_EIO;
out:
	sp_byname_free(&x.names);
	free(x.groups);
	free(x.gid);
	free(x.origin);
	free(x.starts);
	free(x.ends);
	free(x.lanes);
	free(x.values);
	free(x.name.p);
	free(x.seen);
	if (rc == SP_EIO && write_errno)
		*write_errno = o->err;
	free(o);
	return rc;
}

/* A folded file's complete lines in head: each 'stack count', one stack
 * at least named (a character in it that no column of numbers has: a
 * letter, any non-ASCII one, ';', a symbol; a region may be called "1");
 * a head that is one line longer than head, a stack of frames (';'). */
static int folded_lines(const char *head, size_t n)
{
	if (!memchr(head, '\n', n))
		return memchr(head, ';', n) != NULL;
	size_t named_lines = 0, start = 0;
	for (size_t i = 0; i < n; i++) {
		if (head[i] != '\n')
			continue;
		size_t end = i, digits = 0;
		while (end > start && head[end - 1] >= '0' && head[end - 1] <= '9') {
			end--;
			digits++;
		}
		if (!digits || end < start + 2 || head[end - 1] != ' ')
			return 0;
		int named = 0;
		for (size_t k = start; k + 1 < end && !named; k++)
			named = !strchr("0123456789.+-, \t", head[k]);
		named_lines += named;
		start = i + 1;
	}
	return named_lines > 0;
}

int sp_export_is_own(const char *head, size_t n)
{
	static const char *const heads[] = {HEAD_CSV_CALLS, HEAD_CSV "," AGG_FIRST_KEY ",", HEAD_JSON,
					     HEAD_CHROME, HEAD_SPEEDSCOPE};
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
		if (n >= strlen(heads[i]) && memcmp(head, heads[i], strlen(heads[i])) == 0)
			return 1;
	return folded_lines(head, n);
}
