/* sp_diff.h - two profiles compared region by region from their summary
 * statistics (never the event columns): calls, total per rank, slowest
 * rank, imbalance (sp_imbalance), the change and the --fail-above bound;
 * rendered as a column-fitted table or as JSON. */
#ifndef SP_DIFF_H
#define SP_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sp_error.h"
#include "sp_profile.h"
#include "sp_select.h"

/* One region of one file, merged over the file's selected ranks. */
struct sp_diff_side {
	const char *name;              /* borrowed from the profile */
	int64_t calls, total;          /* summed over the selected ranks */
	int64_t slowest;               /* the largest rank total */
	int64_t fastest;               /* the smallest; 0 when a selected rank lacks the region */
	size_t present;                /* ranks where it was recorded */
	double per_rank;               /* total / the file's selected ranks, ns */
	double imbalance;              /* sp_imbalance_of(slowest, fastest) */
};

/* One input file. */
struct sp_diff_file {
	const char *path;              /* borrowed */
	const struct sp_profile *p;    /* borrowed */
	int *ranks;                    /* the selected rank numbers */
	size_t nranks;
	int64_t span;                  /* the longest selected rank's run */
	struct sp_diff_side *regions;  /* sorted by name */
	size_t n;
};

/* One row of the comparison. */
struct sp_diff_row {
	const char *name;
	const struct sp_diff_side *a, *b; /* NULL when the region is not in that file */
	double change;                 /* ns, of total/rank; an only-in row: its whole total */
	double pct, ratio;             /* of total/rank; NAN when not defined */
	double slow_pct;               /* of the slowest rank; NAN when not defined */
	int above;                     /* grew past the bound */
};

/* A comparison of file A (f[0]) with file B (f[1]). */
struct sp_diff {
	struct sp_diff_file f[2];
	struct sp_diff_row *rows;      /* in the order asked for */
	size_t n;
	int several;                   /* either file has more than one selected rank */
	int by_name;                   /* rows sorted by name, else largest |change| first */
	double bound;                  /* --fail-above in percent; NAN: none */
	const struct sp_diff_row *worst; /* the row furthest above the bound, or NULL */
	double worst_pct;              /* its growth in percent */
	size_t nabove;                 /* rows above the bound */
};

/* Compares the regions of a (read from path_a) and b (path_b) that sel
 * selects (NULL: all) into *d, rows sorted by name when by_name, else by
 * the size of their change; bound (percent, NAN: none) marks the rows
 * whose total/rank, or with several ranks whose slowest rank's total,
 * grew by more. The profiles and paths are borrowed and must outlive *d.
 * Returns SP_OK; SP_EINVAL when sel keeps no rank of a file (err names
 * the file and the ranks it has); SP_ENOMEM. Free *d with sp_diff_free
 * either way. */
enum sp_err sp_diff_compare(struct sp_diff *d, const struct sp_profile *a, const char *path_a,
			    const struct sp_profile *b, const char *path_b, const struct sp_select *sel,
			    int by_name, double bound, struct sp_error *err);

/* Frees what sp_diff_compare allocated; *d is empty again. */
void sp_diff_free(struct sp_diff *d);

/* Writes the comparison to out: the table (names cut in the middle to fit
 * about 100 columns) or, when json, one JSON document. Returns SP_OK or
 * SP_ENOMEM (nothing written). Write errors are left in out's error flag. */
enum sp_err sp_diff_render(FILE *out, const struct sp_diff *d, int json, struct sp_error *err);

/* The one line saying which region grew furthest past the bound ("'solve'
 * grew by 25.0% (...), more than --fail-above 10%; 1 region above the
 * bound") into buf; returns buf, or NULL when no row is above it. */
char *sp_diff_worst_line(const struct sp_diff *d, char *buf, size_t len);

/* Parses "10", "2.5" or "10%" into *pct; returns 0, or -1 (*pct untouched)
 * when s is not a finite non-negative number of percent. */
int sp_diff_parse_percent(const char *s, double *pct);

#endif
