/* sp_diff.h - two profiles compared region by region from their summary
 * statistics: calls, total per rank, slowest rank, imbalance
 * (sp_imbalance), the change and the --fail-above gate (a floor on region
 * time, then a Mann-Whitney test on the per-call durations of the regions
 * that grew past the bound, read from the event columns only for them);
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
	int64_t calls, total;          /* summed over the selected ranks (total: a
					* recursive region counted once, as summary's) */
	int64_t raw_total;             /* every call's time summed: mean = raw_total / calls */
	int64_t slowest;               /* the largest rank total */
	int64_t fastest;               /* the smallest; 0 when a selected rank lacks the region */
	size_t present;                /* ranks where it was recorded */
	int slowest_rank;              /* the rank number of the largest rank total */
	int64_t fastest_call;          /* the shortest call on any selected rank; 0: none */
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
	struct sp_diff_side *regions;  /* the regions it has, by name (one row each) */
	size_t n;
};

/* What --fail-above made of one row. */
enum sp_diff_verdict {
	SP_DIFF_UNJUDGED = 0,          /* no bound, or the region is in one file only */
	SP_DIFF_BELOW_FLOOR,           /* under --min-time in both files: never judged */
	SP_DIFF_WITHIN,                /* grew by at most the bound (or shrank) */
	SP_DIFF_NOISE,                 /* grew past the bound; the test did not confirm it */
	SP_DIFF_FEW_CALLS,             /* grew past the bound, too few calls to test,
					* under --min-time in A and not far over it in B:
					* not judged */
	SP_DIFF_ABOVE,                 /* grew past the bound, confirmed where tested */
};

/* One row of the comparison. */
struct sp_diff_row {
	const char *name;
	const struct sp_diff_side *a, *b; /* NULL when the region is not in that file */
	double change;                 /* ns, of total/rank; an only-in row: its whole total */
	double pct, ratio;             /* of total/rank; NAN when not defined */
	double slow_pct;               /* of the slowest rank; NAN when not defined */
	int above;                     /* verdict == SP_DIFF_ABOVE */
	enum sp_diff_verdict verdict;
	double growth;                 /* the growth judged, percent: pct or slow_pct */
	int by_slowest;                /* growth is of the slowest rank's total */
	int tested;                    /* the per-call test ran (p is its result) */
	double p;                      /* one-sided p of the test; NAN when untested */
	double fast_pct;               /* tested: the growth of the total/rank were every
					* call as fast as the mean of the fastest tenth
					* compared (a growth the noise barely moves) */
};

/* A comparison of file A (f[0]) with file B (f[1]). */
struct sp_diff {
	struct sp_diff_file f[2];
	struct sp_diff_row *rows;      /* in the order asked for */
	size_t n;
	int several;                   /* either file has more than one selected rank */
	int by_name;                   /* rows sorted by name, else largest |change| first */
	double bound;                  /* --fail-above in percent; NAN: none */
	int64_t min_time;              /* the floor in force, ns (--min-time or its default) */
	const struct sp_diff_row *worst; /* the row above the bound that grew most (by
					  * fast_pct where tested), or NULL */
	double worst_pct;              /* its growth in percent */
	size_t nabove;                 /* rows above the bound */
};

/* The significance level of the --fail-above test (one-sided). */
#define SP_DIFF_ALPHA 0.01

/* The default floor of --fail-above: 1 ms or 1 % of the longer run span,
 * whichever is more. */
int64_t sp_diff_default_floor(int64_t span_a, int64_t span_b);

/* Compares the regions of a (read from path_a) and b (path_b) that sel
 * selects (NULL: all) into *d, rows sorted by name when by_name, else by
 * the size of their change. With a bound (percent, NAN: none) a row in
 * both files whose largest rank total is under min_time ns in both (< 0:
 * sp_diff_default_floor) is SP_DIFF_BELOW_FLOOR; one whose total/rank, or
 * with several ranks whose slowest rank's total, or whose fastest call grew
 * by more than the bound is marked above it, pending sp_diff_confirm. The profiles and
 * paths are borrowed and must outlive *d. Returns SP_OK; SP_EINVAL when
 * sel keeps no rank of a file (err names the file and the ranks it has);
 * SP_ENOMEM. Free *d with sp_diff_free either way. */
enum sp_err sp_diff_compare(struct sp_diff *d, const struct sp_profile *a, const char *path_a,
			    const struct sp_profile *b, const char *path_b, const struct sp_select *sel,
			    int by_name, double bound, int64_t min_time, struct sp_error *err);

/* Tests each row marked above the bound on its per-call durations, read
 * from the event columns of d->f[0].path and d->f[1].path (sp_h5_stream;
 * nothing is opened when no row needs it): the fastest tenth of the
 * calls of the ranks its growth is of (other work on the machine only adds
 * time to a call), B's against A's made (1 + bound) times longer, and
 * longer still by A's calls over B's (so that a region called more often
 * is not excused), per rank. The row stays above the bound when the one-sided
 * p < SP_DIFF_ALPHA and fast_pct is above the bound too (its total may be
 * swollen, or shrunk, by interrupted calls), else becomes SP_DIFF_NOISE. A row the test cannot
 * judge (an aggregate region; too few calls for any p below SP_DIFF_ALPHA,
 * sp_diff_min_p) is judged on its totals: within the bound; SP_DIFF_NOISE
 * when, not by its slowest rank, its fastest call times its calls per rank
 * grew by at most the bound (fast_pct set to that growth); or above it
 * when it reaches the floor in A, or in B reaches twice the floor and grew
 * by more than the floor; else it becomes SP_DIFF_FEW_CALLS (one
 * interrupted call can lift a small region a little over the floor in B). Updates worst and
 * nabove. Returns SP_OK; SP_ECORRUPT / SP_EIO when a file's events cannot
 * be read (err names the file); SP_ENOMEM. */
enum sp_err sp_diff_confirm(struct sp_diff *d, struct sp_error *err);

/* The one-sided Mann-Whitney U test, normal approximation with the tie
 * correction and a continuity correction: the p of values b (m) being no
 * larger than values a (n) each multiplied by scale. Sets *p (1 when n or
 * m is 0 or every value ties); returns 0, or -1 when out of memory. */
int sp_diff_mann_whitney(const double *a, size_t n, const double *b, size_t m, double scale,
			 double *p);

/* The smallest p sp_diff_mann_whitney can give for n and m values (every
 * b above every a, no ties); 1 when either is 0. */
double sp_diff_min_p(size_t n, size_t m);

/* Parses a duration: a number with a unit ns, us, µs, ms or s (none:
 * seconds), "1ms", "500us", "0.2s", "0". Returns 0 with *ns set, or -1 (*ns
 * untouched) when s is not a finite non-negative duration. */
int sp_diff_parse_time(const char *s, int64_t *ns);

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
