/* sp_filter.h - which functions --recursive records: own code only (not the
 * stdlib, installed packages, frozen or <string> code) unless --all, and the
 * --include / --exclude globs on region names. Decided once per code object. */
#ifndef SP_FILTER_H
#define SP_FILTER_H

#include <stddef.h>

struct sp_filter {
	int all;                 /* every file counts as own code */
	char **foreign;          /* folder prefixes that are not own code */
	size_t nforeign;
	char **include;          /* globs; none: everything is included */
	size_t ninclude;
	char **exclude;          /* globs */
	size_t nexclude;
};

/* 1 when code from filename is the user's own (or --all), else 0. */
int sp_filter_own_code(const struct sp_filter *f, const char *filename);

/* 1 when a region name passes --include and --exclude, else 0. */
int sp_filter_name(const struct sp_filter *f, const char *name);

/* Frees the filter's strings and arrays; the filter is empty again. */
void sp_filter_clear(struct sp_filter *f);

#endif
