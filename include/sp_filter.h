/* sp_filter.h - region-name patterns, in the one dialect of every command
 * (man scope-profiler, FILTERS): a glob (fnmatch(3), matched against the
 * whole name) by default, a POSIX extended regular expression (searched
 * anywhere in the name) when written re:PATTERN. And which functions
 * --recursive records: own code only (not the stdlib, installed packages,
 * frozen or <string> code) unless --all, but always the program being run
 * (the script's folder, the package of -m, -c's <string>, installed or
 * not), and the --include / --exclude
 * patterns on region names. Decided once per code object. */
#ifndef SP_FILTER_H
#define SP_FILTER_H

#include <regex.h>
#include <stddef.h>

#include "sp_error.h"

/* The prefix that makes a pattern a regular expression. */
#define SP_PATTERN_RE "re:"

struct sp_pattern {
	char *text;              /* the glob or the expression, without "re:" */
	int regex;               /* text is a regular expression, compiled in re */
	regex_t re;
};

/* Compiles spec into *p. Returns SP_OK; SP_EINVAL with a one-line message
 * naming the pattern when a re: expression does not compile (a glob always
 * does); SP_ENOMEM. On failure *p holds nothing to free. */
enum sp_err sp_pattern_init(struct sp_pattern *p, const char *spec, struct sp_error *err);

/* 1 when name matches p, else 0. */
int sp_pattern_match(const struct sp_pattern *p, const char *name);

/* Frees what p holds. */
void sp_pattern_free(struct sp_pattern *p);

/* Compiles spec onto the end of the array *v of *n patterns (grown by one).
 * Failures as sp_pattern_init; *v and *n unchanged then. */
enum sp_err sp_pattern_push(struct sp_pattern **v, size_t *n, const char *spec, struct sp_error *err);

/* 1 when name matches any of v[0..n), else 0. */
int sp_pattern_any(const struct sp_pattern *v, size_t n, const char *name);

/* Frees v[0..n) and v; *v and *n are empty again. */
void sp_pattern_clear(struct sp_pattern **v, size_t *n);

struct sp_filter {
	int all;                 /* every file counts as own code */
	char **foreign;          /* folder prefixes that are not own code */
	size_t nforeign;
	char **own;              /* prefixes that are own code before any of the above */
	size_t nown;
	struct sp_pattern *include; /* none: everything is included */
	size_t ninclude;
	struct sp_pattern *exclude;
	size_t nexclude;
};

/* 1 when code from filename is the user's own (or --all, or it starts with
 * one of f->own and no installed packages' folder follows), else 0. */
int sp_filter_own_code(const struct sp_filter *f, const char *filename);

/* 1 when a region name passes --include and --exclude, else 0. */
int sp_filter_name(const struct sp_filter *f, const char *name);

/* Frees the filter's strings, patterns and arrays; the filter is empty again. */
void sp_filter_clear(struct sp_filter *f);

#endif
