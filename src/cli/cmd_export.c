/* cmd_export.c - `scope-profiler export FILE --format csv|json|chrome|folded`:
 * a profile's calls for pandas, Perfetto / chrome://tracing, speedscope and
 * flamegraph.pl, streamed from the file a slice at a time. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp_clock.h"
#include "sp_analysis.h"
#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_keytab.h"
#include "sp_outpath.h"
#include "sp_render.h"
#include "sp_select.h"

#define CMD "export"
#define SLICE 65536            /* calls read from the file at a time */

enum format { FMT_CSV, FMT_JSON, FMT_CHROME, FMT_FOLDED, NFORMATS };

static const char *const format_names[NFORMATS] = {"csv", "json", "chrome", "folded"};


static const struct sp_cmd_option export_options[] = {
	{{"format", required_argument, NULL, 'f'}, "FMT", "csv, json, chrome or folded (required)"},
	{{"output", required_argument, NULL, 'o'}, "OUT",
	 "write to OUT (atomically; a FIFO or device in place)"},
	{{"outfile", required_argument, NULL, 'o'}, NULL, NULL},
	{{"include", required_argument, NULL, SP_SELECT_INCLUDE}, "RE",
	 "only regions whose name matches RE (repeatable)"},
	{{"exclude", required_argument, NULL, SP_SELECT_EXCLUDE}, "RE",
	 "not regions whose name matches RE (repeatable)"},
	{{"ranks", required_argument, NULL, SP_SELECT_RANKS}, "LIST", "only these ranks, e.g. 0-3,5"},
	{{"help", no_argument, NULL, 'h'}, NULL, "show this help and exit"},
};

#define NOPTS (sizeof export_options / sizeof export_options[0])

static void export_usage(FILE *out)
{
	fprintf(out,
		"usage: scope-profiler export FILE --format csv|json|chrome|folded [OPTIONS]\n"
		"\n"
		"Writes every recorded call of a profile in a format other tools read:\n"
		"  csv     name,rank,lane,call_index,start_s,end_s,duration_s; one row per\n"
		"          call (pandas.read_csv)\n"
		"  json    {\"file\", \"time_origin_ns\", \"ranks\", \"events\": [...]}, seconds\n"
		"  chrome  Chrome trace events: a process per rank, a thread per lane\n"
		"          (Perfetto, chrome://tracing)\n"
		"  folded  'a;b;c self_ns' per call stack, merged over ranks (flamegraph.pl,\n"
		"          speedscope); ';' in a region name becomes ':'\n"
		"Times are relative to the run's start, the earliest over the ranks (the\n"
		"first region entry when the file has none), one axis for all ranks, as\n"
		"the Python read API has it. Calls come region by region, then rank, then call\n"
		"order. csv, json and chrome hold a slice of the file in memory at a time;\n"
		"folded holds one rank's calls (24 bytes each).\n"
		"\n"
		"Options:\n");
	sp_cmd_print_options(out, export_options, NOPTS);
	fprintf(out,
		"\n"
		"Exit status: 0, 1 when FILE cannot be read or OUT written (OUT is then\n"
		"left as it was), 2 for usage errors.\n");
}

/* ---- buffered output ---------------------------------------------------- */

struct out {
	FILE *f;
	int err;                   /* errno of the first failed write, or 0 */
	size_t n;
	char buf[1 << 16];
};

static void out_flush(struct out *o)
{
	if (o->n && !o->err) {
		errno = 0;
		if (fwrite(o->buf, 1, o->n, o->f) != o->n)
			o->err = errno ? errno : EIO;
	}
	o->n = 0;
}

static void out_mem(struct out *o, const void *p, size_t len)
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

static void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static void out_ch(struct out *o, char c)
{
	if (o->n == sizeof o->buf)
		out_flush(o);
	o->buf[o->n++] = c;
}

/* Writes v / 10^digits with exactly `digits` decimals (none when 0): exact,
 * so nanoseconds survive however long the run. */
static void out_dec(struct out *o, __int128 v, int digits)
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

/* ---- names, encoded once per region ------------------------------------- */

struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + len + 1 && cap <= SIZE_MAX / 2)
			cap *= 2;
		char *p = cap >= b->n + len + 1 ? realloc(b->p, cap) : NULL;
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

/* The length of the well-formed UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4 || (s[1] & 0xc0) != 0x80)
		return 0;
	if (c < 0xe0)
		return 2;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (s[2] & 0xc0) != 0x80)
		return 0;
	if (c < 0xf0)
		return 3;
	if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90) || (s[3] & 0xc0) != 0x80)
		return 0;
	return 4;
}

/* Appends s as a JSON string, quotes included: '"', '\\' and control
 * characters escaped, UTF-8 kept, malformed bytes as U+FFFD. */
static void sb_json(struct sbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	sb_add(b, "\"", 1);
	for (const unsigned char *q = (const unsigned char *)s; *q;) {
		size_t len;
		if (*q == '"' || *q == '\\') {
			char e[2] = {'\\', (char)*q};
			sb_add(b, e, 2);
			q++;
		} else if (*q < 0x20) {
			const char *e = *q == '\n' ? "\\n" : *q == '\t' ? "\\t" : *q == '\r' ? "\\r" : NULL;
			char u[6] = {'\\', 'u', '0', '0', hex[*q >> 4], hex[*q & 15]};
			if (e)
				sb_add(b, e, 2);
			else
				sb_add(b, u, 6);
			q++;
		} else if ((len = utf8_seq(q)) != 0) {
			sb_add(b, (const char *)q, len);
			q += len;
		} else {
			sb_add(b, "\\ufffd", 6);
			q++;
		}
	}
	sb_add(b, "\"", 1);
}

/* Appends s as a CSV field: quoted (quotes doubled) when it holds a comma,
 * a quote or a line break (RFC 4180). */
static void sb_csv(struct sbuf *b, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		sb_add(b, s, strlen(s));
		return;
	}
	sb_add(b, "\"", 1);
	for (const char *q = s; *q; q++) {
		if (*q == '"')
			sb_add(b, "\"", 1);
		sb_add(b, q, 1);
	}
	sb_add(b, "\"", 1);
}

/* ---- the regions in export order ---------------------------------------- */

/* One region of one rank. */
struct entry {
	const char *name;
	size_t ri, gi;             /* indices into p->ranks, rank->regions */
};

/* The entries of one name: entries[first .. first + n), by rank. */
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
	enum format fmt;
	const char *path;
	struct entry *entries;
	size_t nentries;
	struct group *groups;      /* in export order */
	size_t ngroups;
	int32_t *gid;              /* group of each entry's region: gid[base[ri] + gi] */
	size_t *base;
	int64_t *origin;           /* per rank index */
	int64_t *starts, *ends;    /* SLICE each */
	int32_t *lanes;
	struct sbuf name;          /* the current region's name, encoded */
	size_t written;            /* calls written so far */
	int64_t *seen;             /* chrome: (rank << 32 | lane) written, sorted */
	size_t nseen, seen_cap;
	struct sp_error *err;
};

static int entry_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	if (x->ri != y->ri)
		return x->ri < y->ri ? -1 : 1;
	return (x->gi > y->gi) - (x->gi < y->gi);
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
	x->entries = malloc((n ? n : 1) * sizeof *x->entries);
	x->groups = malloc((n ? n : 1) * sizeof *x->groups);
	x->gid = malloc((n ? n : 1) * sizeof *x->gid);
	x->base = malloc(p->nranks * sizeof *x->base);
	x->origin = malloc(p->nranks * sizeof *x->origin);
	x->starts = malloc(SLICE * sizeof *x->starts);
	x->ends = malloc(SLICE * sizeof *x->ends);
	x->lanes = malloc(SLICE * sizeof *x->lanes);
	if (!x->entries || !x->groups || !x->gid || !x->base || !x->origin || !x->starts || !x->ends ||
	    !x->lanes)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory for %zu regions", n);
	int64_t first = 0;
	int have_first = 0;
	for (size_t r = 0, k = 0; r < p->nranks; r++) {
		x->base[r] = k;
		for (size_t g = 0; g < p->ranks[r].nregions; g++, k++) {
			const struct sp_stats *st = &p->ranks[r].regions[g].stats;
			x->entries[k] = (struct entry){p->ranks[r].regions[g].name, r, g};
			if (st->num_calls > 0 && (!have_first || st->first_start_ns < first)) {
				first = st->first_start_ns;
				have_first = 1;
			}
		}
	}
	/* One time axis for all ranks, as the Python read API has it. */
	int64_t origin = sp_profile_time_origin(p);
	for (size_t r = 0; r < p->nranks; r++)
		x->origin[r] = origin != SP_NO_TIME ? origin : first;
	x->nentries = n;
	qsort(x->entries, n, sizeof *x->entries, entry_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct entry *e = &x->entries[i];
		const struct sp_stats *st = &p->ranks[e->ri].regions[e->gi].stats;
		if (i == 0 || strcmp(e->name, x->entries[i - 1].name) != 0)
			x->groups[x->ngroups++] = (struct group){i, 0, INT64_MAX, e->ri, e->gi};
		struct group *g = &x->groups[x->ngroups - 1];
		if (st->num_calls > 0 && st->first_start_ns < g->key)
			g->key = st->first_start_ns;
		g->n++;
	}
	for (size_t k = 0; k < x->ngroups; k++)
		if (x->groups[k].key == INT64_MAX)
			x->groups[k].key = 0;
	qsort(x->groups, x->ngroups, sizeof *x->groups, group_cmp);
	for (size_t k = 0; k < x->ngroups; k++)
		for (size_t i = 0; i < x->groups[k].n; i++) {
			const struct entry *e = &x->entries[x->groups[k].first + i];
			x->gid[x->base[e->ri] + e->gi] = (int32_t)k;
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
	if (x->nseen == x->seen_cap) {
		size_t cap = x->seen_cap ? x->seen_cap * 2 : 16;
		int64_t *v = cap <= SIZE_MAX / sizeof *v ? realloc(x->seen, cap * sizeof *v) : NULL;
		if (!v)
			return sp_error_set(x->err, SP_ENOMEM, "out of memory for thread lanes");
		x->seen = v;
		x->seen_cap = cap;
	}
	memmove(&x->seen[lo + 1], &x->seen[lo], (x->nseen - lo) * sizeof *x->seen);
	x->seen[lo] = key;
	x->nseen++;
	return SP_OK;
}

static void write_call(struct exporter *x, int rank, int32_t lane, uint64_t call, int64_t start,
		       int64_t end, int64_t origin)
{
	struct out *o = x->o;
	__int128 s = (__int128)start - origin, e = (__int128)end - origin, d = (__int128)end - start;
	switch (x->fmt) {
	case FMT_CSV:
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
		out_ch(o, '\n');
		break;
	case FMT_JSON:
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
		out_ch(o, '}');
		break;
	default:                   /* FMT_CHROME: microseconds, to the ns */
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
		out_ch(o, '}');
		break;
	}
	x->written++;
}

/* Encodes the current region's name once for the format (x->name). */
static enum sp_err encode_name(struct exporter *x, const char *name)
{
	x->name.n = 0;
	if (x->fmt == FMT_CSV)
		sb_csv(&x->name, name);
	else
		sb_json(&x->name, name);
	if (x->name.oom)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory");
	return SP_OK;
}

/* Streams every selected call, region by region, rank by rank. */
static enum sp_err write_calls(struct exporter *x)
{
	enum sp_err rc;
	for (size_t k = 0; k < x->ngroups; k++) {
		const struct group *g = &x->groups[k];
		const char *name = x->entries[g->first].name;
		if (!sp_select_region(x->sel, name))
			continue;
		if (encode_name(x, name) != SP_OK)
			return SP_ENOMEM;
		for (size_t i = 0; i < g->n; i++) {
			const struct entry *e = &x->entries[g->first + i];
			const struct sp_rank *rk = &x->p->ranks[e->ri];
			uint64_t calls = (uint64_t)rk->regions[e->gi].stats.num_calls;
			if (!sp_select_rank(x->sel, rk->rank) || rk->regions[e->gi].stats.num_calls <= 0)
				continue;
			for (uint64_t first = 0; first < calls; first += SLICE) {
				size_t n = calls - first < SLICE ? (size_t)(calls - first) : SLICE;
				if ((rc = sp_h5_stream_read(x->s, e->ri, e->gi, first, n, x->starts, x->ends,
							    x->lanes, x->err)) != SP_OK)
					return rc;
				for (size_t c = 0; c < n; c++) {
					if (x->fmt == FMT_CHROME &&
					    (rc = lane_seen(x, rk->rank, x->lanes[c])) != SP_OK)
						return rc;
					write_call(x, rk->rank, x->lanes[c], first + c, x->starts[c], x->ends[c],
						   x->origin[e->ri]);
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
	out_str(o, "{\"traceEvents\": [");
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
			sb_json(&x->name, copy);
			free(copy);
		} else {
			snprintf(buf, sizeof buf, "lane %d", (int)lane);
			sb_json(&x->name, buf);
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
	sb_json(&x->name, x->path);
	if (x->name.oom)
		return sp_error_set(x->err, SP_ENOMEM, "out of memory");
	out_str(o, "{\"file\": ");
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

/* ---- folded stacks ------------------------------------------------------ */

/* One call of one rank: 24 bytes, all a rank's calls in memory at once. */
struct fcall {
	int64_t start, end;
	int32_t region;            /* index into the rank's regions */
	int32_t lane;
};

/* A distinct stack: its region (group) under its parent stack. */
struct fnode {
	int32_t parent;            /* -1: a root */
	int32_t group;
	__int128 self;             /* ns: its calls' durations minus their children's */
};

struct fopen {
	int64_t end;
	int32_t node;
};

struct folded {
	struct fnode *nodes;
	size_t n, cap;
	struct sp_keytab ids;      /* (parent, group) -> node */
	struct fopen *stack;
	size_t depth, stack_cap;
};

/* tree.c's order: lane, start ascending, the longer call first (it is the
 * parent), then the lower region index. */
static int fcall_cmp(const void *a, const void *b)
{
	const struct fcall *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return (x->region > y->region) - (x->region < y->region);
}

/* The node of group under parent, added if new; -1 on out of memory. */
static int32_t fnode_get(struct folded *f, int32_t parent, int32_t group)
{
	int added;
	int32_t id = sp_keytab_get(&f->ids, parent, (uint32_t)group, &added);
	if (id < 0 || !added)
		return id;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct fnode *v = cap <= SIZE_MAX / sizeof *v ? realloc(f->nodes, cap * sizeof *v) : NULL;
		if (!v)
			return -1;
		f->nodes = v;
		f->cap = cap;
	}
	f->nodes[f->n++] = (struct fnode){parent, group, 0};
	return id;
}

/* Adds one rank's calls (sorted) to the stacks, by containment as tree.c
 * does: a call inside the open one is its child, a partial overlap is a
 * sibling; each lane starts at the roots. */
static int fsweep(struct folded *f, const struct fcall *c, size_t n, const int32_t *gid)
{
	f->depth = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && c[i].lane != c[i - 1].lane)
			f->depth = 0;
		while (f->depth > 0) {
			const struct fopen *top = &f->stack[f->depth - 1];
			if (c[i].end <= top->end && c[i].start < top->end)
				break;
			f->depth--;
		}
		int32_t parent = f->depth > 0 ? f->stack[f->depth - 1].node : -1;
		int32_t id = fnode_get(f, parent, gid[c[i].region]);
		if (id < 0)
			return -1;
		__int128 d = (__int128)c[i].end - c[i].start;
		f->nodes[id].self += d;
		if (parent >= 0)
			f->nodes[parent].self -= d;
		if (f->depth == f->stack_cap) {
			size_t cap = f->stack_cap ? f->stack_cap * 2 : 64;
			struct fopen *v = cap <= SIZE_MAX / sizeof *v ? realloc(f->stack, cap * sizeof *v) : NULL;
			if (!v)
				return -1;
			f->stack = v;
			f->stack_cap = cap;
		}
		f->stack[f->depth++] = (struct fopen){c[i].end, id};
	}
	return 0;
}

/* Loads the selected calls of rank ri into *out (n of them). */
static enum sp_err fload(struct exporter *x, size_t ri, struct fcall **out, size_t *count)
{
	const struct sp_rank *rk = &x->p->ranks[ri];
	struct fcall *c = NULL;
	size_t n = 0, k = 0;
	enum sp_err rc = SP_OK;
	for (size_t g = 0; g < rk->nregions; g++) {
		int64_t calls = rk->regions[g].stats.num_calls;
		if (calls <= 0 || !sp_select_region(x->sel, rk->regions[g].name))
			continue;
		if ((uint64_t)calls > SIZE_MAX / sizeof *c - n)
			return sp_error_set(x->err, SP_ENOMEM, "rank %d: too many calls", rk->rank);
		n += (size_t)calls;
	}
	if (!(c = malloc(n ? n * sizeof *c : 1)))
		return sp_error_set(x->err, SP_ENOMEM,
				    "rank %d: out of memory for %zu calls (folded needs 24 bytes a call)",
				    rk->rank, n);
	for (size_t g = 0; g < rk->nregions; g++) {
		uint64_t calls = (uint64_t)rk->regions[g].stats.num_calls;
		if (rk->regions[g].stats.num_calls <= 0 || !sp_select_region(x->sel, rk->regions[g].name))
			continue;
		for (uint64_t first = 0; first < calls; first += SLICE) {
			size_t m = calls - first < SLICE ? (size_t)(calls - first) : SLICE;
			if ((rc = sp_h5_stream_read(x->s, ri, g, first, m, x->starts, x->ends, x->lanes,
						    x->err)) != SP_OK)
				goto out;
			for (size_t i = 0; i < m; i++)
				c[k++] = (struct fcall){x->starts[i], x->ends[i], (int32_t)g, x->lanes[i]};
		}
	}
	*out = c;
	*count = n;
	c = NULL;
out:
	free(c);
	return rc;
}

/* Writes "a;b;c self_ns" for every distinct stack, parents first. */
static enum sp_err fprint(struct exporter *x, const struct folded *f)
{
	int32_t *path = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < f->n; i++) {
		size_t depth = 0;
		for (int32_t j = (int32_t)i; j >= 0; j = f->nodes[j].parent) {
			if (depth == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				int32_t *v = realloc(path, ncap * sizeof *v);
				if (!v) {
					free(path);
					return sp_error_set(x->err, SP_ENOMEM, "out of memory");
				}
				path = v;
				cap = ncap;
			}
			path[depth++] = j;
		}
		while (depth--) {
			const char *name = x->entries[x->groups[f->nodes[path[depth]].group].first].name;
			for (const char *q = name; *q; q++)
				out_ch(x->o, *q == ';' ? ':' : *q == '\n' || *q == '\r' ? ' ' : *q);
			out_ch(x->o, depth ? ';' : ' ');
		}
		/* Siblings that overlap in one lane (threads recorded without
		 * --track-threads) can leave a parent less than nothing. */
		out_dec(x->o, f->nodes[i].self > 0 ? f->nodes[i].self : 0, 0);
		out_ch(x->o, '\n');
	}
	free(path);
	return x->o->err ? SP_EIO : SP_OK;
}

static enum sp_err write_folded(struct exporter *x)
{
	struct folded f = {0};
	struct fcall *calls = NULL;
	enum sp_err rc = SP_OK;
	for (size_t r = 0; r < x->p->nranks; r++) {
		size_t n = 0;
		if (!sp_select_rank(x->sel, x->p->ranks[r].rank))
			continue;
		if ((rc = fload(x, r, &calls, &n)) != SP_OK)
			goto out;
		qsort(calls, n, sizeof *calls, fcall_cmp);
		if (fsweep(&f, calls, n, x->gid + x->base[r]) != 0) {
			rc = sp_error_set(x->err, SP_ENOMEM, "rank %d: out of memory for the stacks",
					  x->p->ranks[r].rank);
			goto out;
		}
		free(calls);
		calls = NULL;
	}
	rc = fprint(x, &f);
out:
	free(calls);
	free(f.nodes);
	sp_keytab_free(&f.ids);
	free(f.stack);
	return rc;
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
	static const char *const keys[] = {"calls", "total_s", "self_s", "min_s", "max_s", "mean_s"};
	if (x->fmt == FMT_CSV) {
		out_str(o, "name,rank");
		for (size_t i = 0; i < 6; i++) {
			out_ch(o, ',');
			out_str(o, keys[i]);
		}
		out_ch(o, '\n');
	} else {
		x->name.n = 0;
		sb_json(&x->name, x->path);
		out_str(o, "{\"file\": ");
		out_mem(o, x->name.p, x->name.n);
		out_str(o, ",\n\"aggregate\": true,\n\"regions\": [");
	}
	for (size_t k = 0; k < x->ngroups; k++) {
		const struct group *g = &x->groups[k];
		const char *name = x->entries[g->first].name;
		if (!sp_select_region(x->sel, name))
			continue;
		if (encode_name(x, name) != SP_OK)
			return SP_ENOMEM;
		for (size_t i = 0; i < g->n; i++) {
			const struct entry *e = &x->entries[g->first + i];
			const struct sp_rank *rk = &x->p->ranks[e->ri];
			const struct sp_region_data *rd = &rk->regions[e->gi];
			const struct sp_stats *st = &rd->stats;
			if (!sp_select_rank(x->sel, rk->rank) || st->num_calls <= 0)
				continue;
			/* A region with events has no stored self time. */
			__int128 vals[6] = {st->num_calls, st->total_ns, rd->aggregate ? rd->self_ns : -1,
					    st->min_ns, st->max_ns, (__int128)(st->mean_ns + 0.5)};
			if (x->fmt == FMT_CSV) {
				out_mem(o, x->name.p, x->name.n);
				out_ch(o, ',');
				out_dec(o, rk->rank, 0);
			} else {
				out_str(o, x->written ? ",\n{\"name\": " : "\n{\"name\": ");
				out_mem(o, x->name.p, x->name.n);
				out_str(o, ", \"rank\": ");
				out_dec(o, rk->rank, 0);
			}
			for (size_t v = 0; v < 6; v++) {
				if (x->fmt == FMT_CSV) {
					out_ch(o, ',');
				} else {
					out_str(o, ", \"");
					out_str(o, keys[v]);
					out_str(o, "\": ");
				}
				if (vals[v] < 0)
					out_str(o, x->fmt == FMT_CSV ? "" : "null");
				else
					out_dec(o, vals[v], v == 0 ? 0 : 9);
			}
			if (x->fmt == FMT_CSV)
				out_ch(o, '\n');
			else
				out_ch(o, '}');
			x->written++;
		}
	}
	if (x->fmt == FMT_JSON)
		out_str(o, x->written ? "\n]}\n" : "]}\n");
	return SP_OK;
}

/* Folded stacks of aggregates, from the stored call trees (the stream does
 * not read trees): a path's value is its node's total minus its children's,
 * summed over the selected ranks; an unselected region's node lends its own
 * time to its nearest selected ancestor and its children move up to it. */
static enum sp_err write_folded_trees(struct exporter *x)
{
	struct sp_profile *p = NULL;
	enum sp_err rc = sp_h5_read(x->path, SP_READ_SUMMARY, &p, x->err);
	struct folded f = {0};
	int32_t *map = NULL;
	if (rc != SP_OK)
		return rc;
	for (size_t r = 0; r < p->nranks && rc == SP_OK; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (!sp_select_rank(x->sel, rk->rank))
			continue;
		free(map);
		if (!(map = malloc((rk->ntree ? rk->ntree : 1) * sizeof *map))) {
			rc = sp_error_set(x->err, SP_ENOMEM, "out of memory");
			break;
		}
		for (size_t i = 0; i < rk->ntree; i++) {
			const struct sp_tree_node *t = &rk->tree[i];
			int32_t parent = t->parent >= 0 ? map[t->parent] : -1;
			const char *name = rk->regions[t->region].name;
			/* The region's group, through its name's entry in the plan
			 * (the entries are sorted by name). */
			const struct entry key = {name, 0, 0}, *e =
				bsearch(&key, x->entries, x->nentries, sizeof *e, entry_name_cmp);
			int32_t group = e ? x->gid[x->base[e->ri] + e->gi] : -1;
			if (group < 0 || !sp_select_region(x->sel, name)) {
				map[i] = parent;
				if (parent >= 0)
					f.nodes[parent].self += t->total_ns;
			} else if ((map[i] = fnode_get(&f, parent, group)) < 0) {
				rc = sp_error_set(x->err, SP_ENOMEM, "out of memory");
				break;
			} else {
				f.nodes[map[i]].self += t->total_ns;
			}
			/* The time of a kept node's child is not its own. */
			if (parent >= 0)
				f.nodes[parent].self -= t->total_ns;
		}
	}
	if (rc == SP_OK)
		rc = fprint(x, &f);
	free(map);
	free(f.nodes);
	sp_keytab_free(&f.ids);
	free(f.stack);
	sp_profile_free(p);
	return rc;
}

/* ---- the command -------------------------------------------------------- */

/* Writes the export of the open stream s to o. Returns SP_OK, or the
 * failure with err filled (SP_EIO with o->err set for a failed write). */
static enum sp_err run_export(struct sp_h5_stream *s, const char *path, enum format fmt,
			  const struct sp_select *sel, struct out *o, struct sp_error *err)
{
	struct exporter x = {.s = s, .p = sp_h5_stream_profile(s), .sel = sel, .o = o, .fmt = fmt,
			     .path = path, .err = err};
	enum sp_err rc;
	size_t nsel = 0;
	for (size_t r = 0; r < x.p->nranks; r++)
		nsel += sp_select_rank(sel, x.p->ranks[r].rank);
	if (nsel == 0) {
		int nums[64];
		char list[128];
		size_t n = x.p->nranks < 64 ? x.p->nranks : 64;
		for (size_t r = 0; r < n; r++)
			nums[r] = x.p->ranks[r].rank;
		sp_rank_list(list, sizeof list, nums, n);
		return sp_error_set(err, SP_EINVAL, "no rank selected: the profile has rank%s %s%s",
				    x.p->nranks == 1 ? "" : "s", list, x.p->nranks > n ? ",..." : "");
	}
	if ((rc = plan(&x)) != SP_OK)
		goto out;
	if (has_aggregates(x.p)) {
		if (fmt == FMT_CHROME)
			rc = sp_error_set(err, SP_EINVAL, "'%s' holds aggregates (run --aggregate): there is no "
					  "per-call timeline for a Chrome trace; export csv, json or folded", path);
		else
			rc = fmt == FMT_FOLDED ? write_folded_trees(&x) : write_aggregates(&x);
		out_flush(o);
		if (rc == SP_OK && o->err)
			rc = SP_EIO;
		goto out;
	}
	switch (fmt) {
	case FMT_CSV:
		out_str(o, "name,rank,lane,call_index,start_s,end_s,duration_s\n");
		rc = write_calls(&x);
		break;
	case FMT_JSON:
		rc = write_json(&x);
		break;
	case FMT_CHROME:
		rc = write_chrome(&x);
		break;
	default:
		rc = write_folded(&x);
		break;
	}
	out_flush(o);
	if (rc == SP_OK && o->err)
		rc = SP_EIO;
out:
	free(x.entries);
	free(x.groups);
	free(x.gid);
	free(x.base);
	free(x.origin);
	free(x.starts);
	free(x.ends);
	free(x.lanes);
	free(x.name.p);
	free(x.seen);
	return rc;
}

/* Returns 0, 1 when FILE cannot be read or OUT written, or SP_EXIT_USAGE. */
int cmd_export(int argc, char **argv)
{
	struct option longopts[NOPTS + 1];
	struct sp_select sel = {0};
	struct sp_error err = {0};
	struct sp_h5_stream *s = NULL;
	struct out *o = NULL;
	const char *outpath = NULL;
	struct sp_outpath op = {.fd = -1, .slot = -1};
	FILE *f = stdout;
	int fmt = -1, status = SP_EXIT_USAGE, c, stdout_err = 0;
	enum sp_err rc;

	sp_cmd_longopts(export_options, NOPTS, longopts);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			for (fmt = 0; fmt < NFORMATS && strcmp(optarg, format_names[fmt]) != 0; fmt++)
				;
			if (fmt == NFORMATS) {
				sp_cmd_error(CMD, "unknown format '%s'; use csv, json, chrome or folded",
					     optarg);
				goto out;
			}
			break;
		case 'o':
			if (!*optarg) {
				sp_cmd_error(CMD, "--output needs a path");
				goto out;
			}
			outpath = strcmp(optarg, "-") == 0 ? NULL : optarg;
			break;
		case SP_SELECT_INCLUDE:
		case SP_SELECT_EXCLUDE:
		case SP_SELECT_RANKS:
			rc = sp_select_option(&sel, c, optarg, &err);
			if (rc != SP_OK) {
				sp_cmd_error(CMD, "%s", err.msg);
				status = rc == SP_ENOMEM ? 1 : SP_EXIT_USAGE;
				goto out;
			}
			break;
		case 'h':
			export_usage(stdout);
			status = 0;
			goto out;
		case ':':
			sp_cmd_error(CMD, "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			sp_cmd_error(CMD, "unknown option '%s'; see 'scope-profiler export --help'",
				     argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc - 1) {
		sp_cmd_error(CMD, optind >= argc ? "no file given; usage: scope-profiler export FILE --format FMT"
						 : "one file at a time; usage: scope-profiler export FILE --format FMT");
		goto out;
	}
	if (fmt < 0) {
		sp_cmd_error(CMD, "no format given; use --format csv, json, chrome or folded");
		goto out;
	}
	status = 1;
	const char *path = argv[optind];
	struct stat in_st, out_st;
	if (outpath && stat(path, &in_st) == 0 && stat(outpath, &out_st) == 0 &&
	    in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
		sp_cmd_error(CMD, "'%s' is the profile itself; choose another output", outpath);
		goto out;
	}
	if (sp_h5_stream_open(path, &s, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	if (!(o = calloc(1, sizeof *o))) {
		sp_cmd_error(CMD, "out of memory");
		goto out;
	}
	/* A file is replaced whole through a temporary file; a device or a
	 * FIFO (/dev/stdout on a pipe, /dev/null) is written in place. */
	if (outpath) {
		if (sp_outpath_open(&op, outpath, SP_OUTPATH_IN_PLACE, &err) != SP_OK) {
			sp_cmd_error(CMD, "cannot write %s", err.msg);
			goto out;
		}
		/* The stream gets its own descriptor: closing it reports the
		 * stream's errors, op's is the commit's to close. */
		int fd = fcntl(op.fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || !(f = fdopen(fd, "w"))) {
			sp_cmd_error(CMD, "cannot write '%s': %s", outpath, strerror(errno));
			if (fd >= 0)
				close(fd);
			f = stdout;
			goto out;
		}
	}
	o->f = f;
	rc = run_export(s, path, (enum format)fmt, &sel, o, &err);
	if (rc == SP_EIO && o->err) {
		if (outpath)
			sp_cmd_error(CMD, "cannot write '%s': %s", outpath, strerror(o->err));
		else
			stdout_err = o->err;   /* main reports it, as for every command */
	} else if (rc != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
	} else if (outpath) {
		errno = 0;
		int bad = fflush(f) != 0 || ferror(f);
		int e = errno;
		FILE *g = f;
		f = stdout;
		if (fclose(g) != 0 && !bad) {
			bad = 1;
			e = errno;
		}
		if (bad)
			sp_cmd_error(CMD, "cannot write '%s': %s", outpath, strerror(e ? e : EIO));
		else if (sp_outpath_commit(&op, &err) != SP_OK)
			sp_cmd_error(CMD, "cannot write %s", err.msg);
		else
			status = 0;
	} else {
		status = 0;
	}
out:
	if (f != stdout)
		fclose(f);
	sp_outpath_abort(&op);     /* after a commit: nothing left to do */
	free(o);
	sp_h5_stream_close(s);
	sp_select_free(&sel);
	if (stdout_err)
		errno = stdout_err;
	return status;
}
