/* sp_select.h - which regions and ranks a report covers: --include PATTERN
 * and --exclude PATTERN (sp_filter.h: globs against the whole name, or
 * re:EXPR searched anywhere in it) and --ranks 0-3,5. Shared by summary,
 * diff, export and plot. */
#ifndef SP_SELECT_H
#define SP_SELECT_H

#include <stddef.h>

#include "sp_error.h"
#include "sp_filter.h"

struct sp_select {
	struct sp_pattern *include;   /* none: every region */
	size_t ninclude;
	struct sp_pattern *exclude;
	size_t nexclude;
	int *ranks;                   /* sorted, unique; none: every rank */
	size_t nranks;
};

/* Adds a pattern (sp_pattern_init); SP_EINVAL with a one-line message
 * naming it when a re: expression does not compile, SP_ENOMEM. */
enum sp_err sp_select_include(struct sp_select *s, const char *pattern, struct sp_error *err);
enum sp_err sp_select_exclude(struct sp_select *s, const char *pattern, struct sp_error *err);

/* Parses "0-3,5" (adds to the ranks); SP_EINVAL naming the bad part. */
enum sp_err sp_select_ranks(struct sp_select *s, const char *spec, struct sp_error *err);

/* The three options as getopt_long values (no short forms), for the
 * commands' option tables. */
enum { SP_SELECT_INCLUDE = 0x200, SP_SELECT_EXCLUDE, SP_SELECT_RANKS };

/* One command-line option: --include PATTERN (SP_SELECT_INCLUDE), --exclude
 * PATTERN (SP_SELECT_EXCLUDE) or --ranks LIST (SP_SELECT_RANKS). Failures as above,
 * the message prefixed with the option's name ("--ranks: ..."). */
enum sp_err sp_select_option(struct sp_select *s, int option, const char *arg, struct sp_error *err);

/* 1 when the region name / rank is selected, else 0. */
int sp_select_region(const struct sp_select *s, const char *name);
int sp_select_rank(const struct sp_select *s, int rank);

/* Frees what the selection holds; it selects everything again. */
void sp_select_free(struct sp_select *s);

#endif
