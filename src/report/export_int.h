/* export_int.h - what the export's files share (export.c: the plan, csv,
 * json, chrome, aggregates; export_folded.c: folded stacks). Private to
 * src/report. */
#ifndef SP_EXPORT_INT_H
#define SP_EXPORT_INT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sp_export.h"
#include "sp_h5.h"
#include "sp_json.h"
#include "sp_nest.h"
#include "sp_select.h"
#include "byname.h"

#define SLICE 65536            /* calls read from the file at a time */

/* How each format's file begins (sp_export_is_own knows an earlier export
 * by them): csv (calls and aggregates), json (both), Chrome, speedscope.
 * A folded file is lines of 'stack count'. */
#define HEAD_CSV "name,rank"
#define HEAD_CSV_CALLS HEAD_CSV ",lane,call_index,"   /* then start_s, ... */
#define AGG_FIRST_KEY "calls"                         /* an aggregates' csv: HEAD_CSV, AGG_FIRST_KEY, ... */
#define HEAD_JSON "{\"file\": "
#define HEAD_CHROME "{\"traceEvents\": ["
#define HEAD_SPEEDSCOPE "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""

/* ---- buffered output ---------------------------------------------------- */

struct out {
	FILE *f;
	int err;                   /* errno of the first failed write, or 0 */
	size_t n;
	char buf[1 << 16];
};

static inline void out_flush(struct out *o)
{
	if (o->n && !o->err) {
		errno = 0;
		if (fwrite(o->buf, 1, o->n, o->f) != o->n)
			o->err = errno ? errno : EIO;
	}
	o->n = 0;
}

static inline void out_mem(struct out *o, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		if (o->n == sizeof o->buf)
			out_flush(o);
		size_t k = sizeof o->buf - o->n < len ? sizeof o->buf - o->n : len;
		memcpy(o->buf + o->n, c, k);
		o->n += k;
		c += k;
		len -= k;
	}
}

static inline void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static inline void out_ch(struct out *o, char c)
{
	if (o->n == sizeof o->buf)
		out_flush(o);
	o->buf[o->n++] = c;
}

/* Writes v / 10^digits with exactly `digits` decimals (none when 0): exact,
 * so nanoseconds survive however long the run. */
static inline void out_dec(struct out *o, __int128 v, int digits)
{
	char tmp[64];
	size_t k = sizeof tmp;
	unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
	int d = 0;
	while (u > UINT64_MAX) {       /* never for real timestamps */
		tmp[--k] = (char)('0' + (int)(u % 10));
		u /= 10;
		if (++d == digits)
			tmp[--k] = '.';
	}
	uint64_t w = (uint64_t)u;
	do {
		tmp[--k] = (char)('0' + (int)(w % 10));
		w /= 10;
		if (++d == digits)
			tmp[--k] = '.';
	} while (w || d <= digits);
	if (v < 0)
		tmp[--k] = '-';
	out_mem(o, tmp + k, sizeof tmp - k);
}

/* ---- the regions in export order ---------------------------------------- */

/* The regions of one name: names.refs[first .. first + n), by rank. */
struct group {
	size_t first, n;
	int64_t key;               /* the earliest call over all ranks; 0 without calls */
	size_t ri, gi;             /* where the name first appears */
};

struct exporter {
	struct sp_h5_stream *s;
	const struct sp_profile *p;
	const struct sp_select *sel;
	struct out *o;
	enum sp_export_format fmt;
	const char *path;
	struct sp_byname names;    /* the regions by name (byname.c) */
	struct group *groups;      /* in export order */
	size_t ngroups;
	int32_t *gid;              /* group of each region: gid[names.base[ri] + gi] */
	int64_t *origin;           /* per rank index */
	int64_t *starts, *ends;    /* SLICE each */
	int32_t *lanes;
	int64_t *values;           /* SLICE: the current region's values, when it has */
	int kinds[SP_VALUE_KINDS]; /* a region of the file has values of this kind */
	int kind;                  /* the current region's value kind (0: none) */
	struct sp_str name;          /* the current region's name, encoded */
	size_t written;            /* calls written so far */
	int64_t *seen;             /* chrome: (rank << 32 | lane) written, sorted */
	size_t nseen, seen_cap;
	struct sp_error *err;
};

/* Group k's name. */
static inline const char *sp_export_group_name(const struct exporter *x, size_t k)
{
	const struct sp_byname_ref *r = &x->names.refs[x->groups[k].first];
	return x->p->ranks[r->ri].regions[r->gi].name;
}

/* The group of the region called name, or -1 when the profile has none. */
static inline int32_t sp_export_group_of(const struct exporter *x, const char *name)
{
	int32_t id = sp_byname_find(&x->names, name);
	if (id < 0)
		return -1;
	const struct sp_byname_ref *r = &x->names.refs[x->names.first[id]];
	return x->gid[x->names.base[r->ri] + r->gi];
}

/* Walks the nesting of each selected rank's selected calls with visit(ctx,
 * ...) (sp_nest.h), a rank at a time (its calls loaded, 20 bytes a call):
 * begin(ctx, the group of each of its regions, its time origin) before its
 * walk, end(x, ctx, its rank number) after it (NULL: nothing). SP_ENOMEM,
 * the stream's read error or end's otherwise. */
enum sp_err sp_export_walk_ranks(struct exporter *x, sp_nest_fn visit, void *ctx,
				 void (*begin)(void *ctx, const int32_t *gid, int64_t origin),
				 enum sp_err (*end)(struct exporter *x, void *ctx, int rank));

/* speedscope's own JSON file: the regions as its shared frames, an evented
 * profile per selected rank and lane (export_speedscope.c). */
enum sp_err sp_export_speedscope(struct exporter *x);

/* The folded stacks of the selected calls, merged over the selected ranks
 * (export_folded.c); of the stored call trees for aggregates. */
enum sp_err sp_export_folded(struct exporter *x);
enum sp_err sp_export_folded_trees(struct exporter *x);

#endif
