/* select.c - which regions and ranks a report covers: --include/--exclude
 * patterns (sp_filter.h) and --ranks lists (see sp_select.h). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_select.h"

/* A --ranks list may name at most this many ranks, so that "0-2000000000"
 * is an error rather than gigabytes of memory. */
#define MAX_RANKS (1 << 20)

enum sp_err sp_select_include(struct sp_select *s, const char *pattern, struct sp_error *err)
{
	return sp_pattern_push(&s->include, &s->ninclude, pattern, err);
}

enum sp_err sp_select_exclude(struct sp_select *s, const char *pattern, struct sp_error *err)
{
	return sp_pattern_push(&s->exclude, &s->nexclude, pattern, err);
}

/* Parses the decimal rank at *p (digits only) and advances *p past it.
 * Returns 0, or -1 with err set naming `item` (the comma-separated part). */
static int parse_rank(const char **p, int *out, const char *spec, const char *item, size_t ilen,
		      struct sp_error *err)
{
	const char *q = *p;
	long long v = 0;
	if (*q == '-' || *q == '+') {
		sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': '%.*s': ranks are "
			     "numbers from 0", spec, (int)ilen, item);
		return -1;
	}
	if (*q < '0' || *q > '9') {
		sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': '%.*s' is not a rank "
			     "or a range like 0-3", spec, (int)ilen, item);
		return -1;
	}
	for (; *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (*q - '0');
		if (v > INT_MAX) {
			sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': '%.*s': rank too "
				     "large", spec, (int)ilen, item);
			return -1;
		}
	}
	*out = (int)v;
	*p = q;
	return 0;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Parses the part of the rank list spec at *p (up to the next ',' or the
 * end): a rank or a range lo-hi, into *lo and *hi, and advances *p past
 * it. SP_EINVAL with err set naming the part when it is malformed. */
static enum sp_err parse_part(const char **p, int *lo, int *hi, const char *spec,
			      struct sp_error *err)
{
	const char *item = *p;
	size_t ilen = strcspn(item, ",");
	if (ilen == 0)
		return sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': an empty part", spec);
	if (parse_rank(p, lo, spec, item, ilen, err) != 0)
		return SP_EINVAL;
	*hi = *lo;
	if (**p == '-') {
		(*p)++;
		if (parse_rank(p, hi, spec, item, ilen, err) != 0)
			return SP_EINVAL;
	}
	if (**p != ',' && **p != '\0')
		return sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': '%.*s' "
				    "is not a rank or a range like 0-3", spec, (int)ilen, item);
	if (*hi < *lo)
		return sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': the "
				    "range '%.*s' runs backwards", spec, (int)ilen, item);
	return SP_OK;
}

/* One pass over the rank list spec: checks every part and, from index n on,
 * stores its ranks in all (when all is set; the caller sized it from the
 * counting pass) or only counts them; *end gets the index after the last.
 * SP_EINVAL with err set on a bad part or more than MAX_RANKS ranks. */
static enum sp_err walk_list(const char *spec, size_t n, int *all, size_t *end,
			     struct sp_error *err)
{
	for (const char *p = spec;;) {
		int lo, hi;
		enum sp_err rc = parse_part(&p, &lo, &hi, spec, err);
		if (rc != SP_OK)
			return rc;
		if ((size_t)hi - (size_t)lo + 1 > MAX_RANKS - (n < MAX_RANKS ? n : MAX_RANKS))
			return sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': more "
					    "than %d ranks", spec, MAX_RANKS);
		if (all)
			for (long long r = lo; r <= hi; r++)
				all[n++] = (int)r;
		else
			n += (size_t)hi - (size_t)lo + 1;
		if (*p == '\0')
			break;
		p++;
		if (*p == '\0')
			return sp_error_set(err, SP_EINVAL, "invalid rank list '%.100s': an "
					    "empty part", spec);
	}
	*end = n;
	return SP_OK;
}

/* Sorts the count ranks of all and drops repeats; returns how many stay. */
static size_t sort_unique(int *all, size_t count)
{
	qsort(all, count, sizeof *all, int_cmp);
	size_t u = 0;
	for (size_t i = 0; i < count; i++)
		if (u == 0 || all[u - 1] != all[i])
			all[u++] = all[i];
	return u;
}

enum sp_err sp_select_ranks(struct sp_select *s, const char *spec, struct sp_error *err)
{
	enum sp_err rc = SP_OK;
	int *all = NULL;
	if (!spec || !*spec)
		return sp_error_set(err, SP_EINVAL, "empty rank list; give ranks like 0-3,5");
	/* First pass: check every part and count the ranks, so nothing is
	 * added when any part is bad. */
	size_t count = s->nranks;
	if ((rc = walk_list(spec, s->nranks, NULL, &count, err)) != SP_OK)
		goto out;
	all = malloc(count * sizeof *all);
	if (!all) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory for rank list '%.100s'", spec);
		goto out;
	}
	if (s->nranks)
		memcpy(all, s->ranks, s->nranks * sizeof *all);
	if ((rc = walk_list(spec, s->nranks, all, &count, err)) != SP_OK)
		goto out;
	size_t u = sort_unique(all, count);
	int *fit = realloc(all, u * sizeof *fit);
	if (fit)
		all = fit;
	free(s->ranks);
	s->ranks = all;
	s->nranks = u;
	all = NULL;
out:
	free(all);
	return rc;
}

int sp_select_region(const struct sp_select *s, const char *name)
{
	if (!s)
		return 1;
	if (sp_pattern_any(s->exclude, s->nexclude, name))
		return 0;
	return s->ninclude == 0 || sp_pattern_any(s->include, s->ninclude, name);
}

int sp_select_rank(const struct sp_select *s, int rank)
{
	if (!s || s->nranks == 0)
		return 1;
	return bsearch(&rank, s->ranks, s->nranks, sizeof *s->ranks, int_cmp) != NULL;
}

void sp_select_free(struct sp_select *s)
{
	if (!s)
		return;
	sp_pattern_clear(&s->include, &s->ninclude);
	sp_pattern_clear(&s->exclude, &s->nexclude);
	free(s->ranks);
	*s = (struct sp_select){0};
}

enum sp_err sp_select_option(struct sp_select *s, int option, const char *arg, struct sp_error *err)
{
	const char *name = option == SP_SELECT_INCLUDE ? "include"
			 : option == SP_SELECT_EXCLUDE ? "exclude" : "ranks";
	enum sp_err rc = option == SP_SELECT_INCLUDE ? sp_select_include(s, arg, err)
		       : option == SP_SELECT_EXCLUDE ? sp_select_exclude(s, arg, err)
						     : sp_select_ranks(s, arg, err);
	if (rc != SP_OK && err) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		sp_error_set(err, rc, "--%s: %s", name, msg);
	}
	return rc;
}
