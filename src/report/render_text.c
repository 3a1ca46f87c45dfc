/* render_text.c - terminal text for every table and tree: display widths of
 * UTF-8 text, cutting with an ellipsis, padding and rules, seconds, the fit
 * of a table's name column; the one-line report of dropped calls and the
 * summary's other notes. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"
#include "sp_analysis.h"
#include "sp_clock.h"
#include "sp_hosts.h"
#include "sp_json.h"
#include "sp_render.h"
#include "sp_select.h"

/* ---- text --------------------------------------------------------------- */

/* Decodes one character at s into *cp; returns its length in bytes. A
 * malformed byte or a control character gives *cp = -1 (shown as '?'). */
static size_t u8_decode(const unsigned char *s, int32_t *cp)
{
	unsigned c = s[0];
	uint32_t v;
	if (c < 0x80) {
		*cp = c < 0x20 || c == 0x7f ? -1 : (int32_t)c;
		return 1;
	}
	size_t len = sp_utf8_seq(s, &v);
	if (!len)
		return *cp = -1, 1;
	*cp = v < 0xa0 ? -1 : (int32_t)v;   /* C1 controls */
	return len;
}

/* Terminal columns of a code point: 0 for combining marks, 2 for East Asian
 * wide characters and emoji, else 1. */
static int cp_width(int32_t cp)
{
	if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) ||
	    (cp >= 0xfe00 && cp <= 0xfe0f))
		return 0;
	if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf && cp != 0x303f) ||
	    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
	    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
	    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
	    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd))
		return 2;
	return 1;
}

static int text_width(const char *s)
{
	int w = 0;
	for (const unsigned char *q = (const unsigned char *)s; *q && w < INT32_MAX / 2;) {
		int32_t cp;
		q += u8_decode(q, &cp);
		w += cp_width(cp);
	}
	return w;
}

/* Writes s in at most maxw columns, cut with "…" when wider; returns the
 * columns written. */
static int put_text(FILE *out, const char *s, int maxw)
{
	if (maxw <= 0)
		return 0;
	int cut = text_width(s) > maxw, budget = cut ? maxw - 1 : maxw, used = 0;
	const unsigned char *q = (const unsigned char *)s;
	while (*q) {
		int32_t cp;
		size_t len = u8_decode(q, &cp);
		int w = cp_width(cp);
		if (used + w > budget)
			break;
		if (cp < 0)
			putc('?', out);
		else
			fwrite(q, 1, len, out);
		used += w;
		q += len;
	}
	if (cut) {
		fputs("…", out);
		used++;
	}
	return used;
}

int sp_render_text_mid(FILE *out, const char *s, int maxw)
{
	int tw = text_width(s);
	if (tw <= maxw || maxw < 8)
		return put_text(out, s, maxw);
	int head = (maxw - 1) / 3, tail = maxw - 1 - head;
	/* The tail: the longest suffix, starting on a character, at most
	 * `tail` columns wide (the first character whose remainder fits). */
	const unsigned char *q = (const unsigned char *)s;
	int before = 0;
	while (*q && tw - before > tail) {
		int32_t cp;
		size_t len = u8_decode(q, &cp);
		before += cp_width(cp);
		q += len;
	}
	int used = put_text(out, s, head + 1);   /* head columns and "…" */
	return used + put_text(out, (const char *)q, tail);
}

int sp_render_text_width(const char *s)
{
	return text_width(s);
}

int sp_render_text(FILE *out, const char *s, int maxw)
{
	return put_text(out, s, maxw);
}

void sp_render_pad(FILE *out, int n)
{
	for (; n > 0; n--)
		putc(' ', out);
}

void sp_render_rule(FILE *out, int n)
{
	for (; n > 0; n--)
		fputs("─", out);
	putc('\n', out);
}

void sp_render_secs_exact(FILE *out, int64_t ns)
{
	uint64_t u = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	fprintf(out, "%s%llu.%09llu", ns < 0 ? "-" : "", (unsigned long long)(u / 1000000000u),
		(unsigned long long)(u % 1000000000u));
}

char *sp_render_seconds(char *buf, size_t len, double ns)
{
	double s = ns / 1e9;
	/* %9.6f would print 1000.000000 for 999.9999996: switch before it. */
	snprintf(buf, len, fabs(s) < 999.9999995 ? "%9.6f" : "%9.1f", s);
	return buf;
}

char *sp_render_duration(char *buf, size_t len, double ns)
{
	static const char *const units[] = {"ns", "µs", "ms", "s"};
	if (!isfinite(ns)) {
		snprintf(buf, len, "-");
		return buf;
	}
	double a = fabs(ns);
	int u = 0;
	/* The unit in which the figure stays below 1000 as printed. */
	while (u < 3 && a >= 999.5)
		a /= 1000, ns /= 1000, u++;
	if (u == 0)
		snprintf(buf, len, "%.0f ns", ns);
	else
		snprintf(buf, len, a < 9.995 ? "%.2f %s" : a < 99.95 ? "%.1f %s" : "%.0f %s", ns, units[u]);
	return buf;
}

char *sp_render_bytes(char *buf, size_t len, double bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double a = fabs(bytes);
	int u = 0;
	/* The unit in which the figure stays below 1024 as printed. */
	while (u < 6 && a >= 1023.95)
		a /= 1024, bytes /= 1024, u++;
	if (u == 0)
		snprintf(buf, len, "%6.0f %-3s", bytes, units[u]);
	else
		snprintf(buf, len, a < 99.995 ? "%6.2f %s" : "%6.1f %s", bytes, units[u]);
	return buf;
}

/* The seconds without their leading padding, for use inside a sentence. */
const char *sp_render_secs_trim(char *buf, size_t len, double ns)
{
	const char *s = sp_render_seconds(buf, len, ns);
	while (*s == ' ')
		s++;
	return s;
}

int sp_render_digits(int64_t n)
{
	int d = 1;
	for (; n >= 10 || n <= -10; n /= 10)
		d++;
	return d + (n < 0);
}

/* Width of the name column: what the labels need, at least "region", within
 * the caps for a table whose other columns take rest. */
int sp_render_name_width(int need, int rest)
{
	int cap = TABLE_CAP - rest > NAME_CAP ? TABLE_CAP - rest : NAME_CAP;
	need = need > 6 ? need : 6;
	return need < cap ? need : cap;
}

int64_t sp_render_dropped(FILE *out, const struct sp_profile *p, const char *prefix)
{
	enum { TOP = 3 };
	const struct sp_region_data *top[TOP] = {NULL};
	const struct sp_rank *top_rank[TOP] = {NULL};
	int64_t total = 0, listed = 0;
	size_t nregions = 0;
	for (size_t r = 0; r < p->nranks; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		if (__builtin_add_overflow(total, rk->dropped, &total))
			total = INT64_MAX;   /* damaged counts: still said, saturated */
		for (size_t i = 0; i < rk->nregions; i++) {
			const struct sp_region_data *rd = &rk->regions[i];
			if (rd->dropped <= 0)
				continue;
			nregions++;
			if (__builtin_add_overflow(listed, rd->dropped, &listed))
				listed = INT64_MAX;
			/* Insert into the top three, largest first. */
			for (int k = 0; k < TOP; k++) {
				if (top[k] && top[k]->dropped >= rd->dropped)
					continue;
				for (int j = TOP - 1; j > k; j--) {
					top[j] = top[j - 1];
					top_rank[j] = top_rank[j - 1];
				}
				top[k] = rd;
				top_rank[k] = rk;
				break;
			}
		}
	}
	if (total < listed)
		total = listed;   /* a file written before ranks kept the total */
	if (total <= 0)
		return 0;
	/* A streamed run drops calls when its memory budget is full, the
	 * writer behind; another only when memory runs out. */
	fprintf(out, "%s%lld call%s not recorded: %s", prefix, (long long)total, total == 1 ? "" : "s",
		p->format_version == 3 ? "the memory budget was full (the writer fell behind)"
				       : "memory ran out");
	for (int k = 0; k < TOP && top[k]; k++) {
		fputs(k ? ", " : " (", out);
		put_text(out, top[k]->name, 40);
		if (p->nranks > 1) {
			char label[64];
			fprintf(out, " on %s", sp_render_rank_label(label, sizeof label, top_rank[k], 0));
		}
		fprintf(out, ": %lld", (long long)top[k]->dropped);
	}
	if (nregions > TOP)
		fprintf(out, " and %zu more region%s", nregions - TOP, nregions - TOP == 1 ? "" : "s");
	fputs(top[0] ? ")\n" : "\n", out);
	return total;
}

char *sp_render_partial_until(char *buf, size_t len, const struct sp_profile *p)
{
	char d[32];
	int64_t origin = sp_profile_time_origin(p);
	if (origin == SP_NO_TIME)
		snprintf(buf, len, "no call recorded yet");
	else
		snprintf(buf, len, "calls up to %s after its start",
			 sp_render_duration(d, sizeof d, p->partial_until_ns > origin ?
							 ((double)p->partial_until_ns - (double)origin) : 0.0));
	return buf;
}

int sp_render_partial(char *buf, size_t len, const struct sp_profile *p, const char *path)
{
	char until[64];
	if (len)
		*buf = '\0';
	if (!p->partial)
		return 0;
	snprintf(buf, len, "%s: incomplete profile (a run still going, or killed): %s", path,
		 sp_render_partial_until(until, sizeof until, p));
	return 1;
}

/* ---- the summary's lines ------------------------------------------------ */

size_t sp_render_children(const struct sp_profile *p)
{
	size_t n = 0;
	for (size_t r = 0; r < p->nranks; r++)
		n += p->ranks[r].parent_pid != 0;
	return n;
}

char *sp_render_rank_label(char *buf, size_t len, const struct sp_rank *rk, int cap)
{
	if (rk->parent_pid)
		snprintf(buf, len, "%s %d (pid %lld)", cap ? "Process" : "process", rk->rank,
			 (long long)rk->pid);
	else
		snprintf(buf, len, "%s %d", cap ? "Rank" : "rank", rk->rank);
	return buf;
}

/* The profile's rank numbers as a list, for messages. */
char *sp_render_rank_list(char *buf, size_t len, const struct sp_profile *p)
{
	int nums[64];
	size_t n = p->nranks < 64 ? p->nranks : 64;
	for (size_t r = 0; r < n; r++)
		nums[r] = p->ranks[r].rank;
	sp_rank_list(buf, len, nums, n);
	if (p->nranks > n && strlen(buf) + 4 < len)
		strcat(buf, ",...");
	return buf;
}

enum sp_err sp_render_none_selected(struct sp_error *err, const char *path, const struct sp_profile *p)
{
	char list[128];
	const char *unit = sp_render_children(p) ? "process" : "rank";
	return sp_error_set(err, SP_EINVAL, "%s%sno %s selected: the profile has %s%s %s", path ? path : "",
			    path ? ": " : "", unit, unit, p->nranks == 1 ? "" : sp_render_children(p) ? "es" : "s",
			    sp_render_rank_list(list, sizeof list, p));
}

/* The number in /metadata omp_num_threads; 0 when absent, empty or not a
 * positive whole number. */
static long omp_threads(const struct sp_profile *p)
{
	const char *s = sp_profile_meta(p, "omp_num_threads");
	if (!s || *s < '0' || *s > '9')
		return 0;
	char *end;
	errno = 0;
	long n = strtol(s, &end, 10);
	return *end || errno || n <= 0 ? 0 : n;
}

void sp_render_notes(FILE *out, const struct sp_profile *shown, const struct sp_profile *p,
		     const struct sp_select *sel, size_t nrows, size_t nall)
{
	char list[128];
	int several = shown->nranks > 1;
	sp_render_dropped(out, shown, "warning: ");
	long threads = several ? omp_threads(shown) : 0;
	unsigned long long cores;
	if (threads > 0 && !__builtin_mul_overflow((unsigned long long)shown->nranks,
						   (unsigned long long)threads, &cores))
		fprintf(out, "cores: %zu %s × %ld OpenMP thread%s = %llu\n", shown->nranks,
			sp_render_children(shown) ? "processes" : "ranks", threads, threads == 1 ? "" : "s", cores);
	if (sel && (sel->ninclude || sel->nexclude || sel->nranks)) {
		fprintf(out, "Selection: %zu of %zu region%s", nrows, nall, nall == 1 ? "" : "s");
		if (sel->nranks && sp_render_children(p))
			fprintf(out, "; process%s %s of %zu", shown->nranks == 1 ? "" : "es",
				sp_render_rank_list(list, sizeof list, shown), p->nranks);
		else if (sel->nranks)
			fprintf(out, "; rank%s %s of %zu", shown->nranks == 1 ? "" : "s",
				sp_render_rank_list(list, sizeof list, shown), p->nranks);
		fputc('\n', out);
	}
}

/* Prints the summary. Returns SP_EINVAL for a malformed tree, SP_ENOMEM when
 * out of memory (nothing written then), SP_EIO when writing to out failed. */
