/* sp_analysis.h - questions every report asks of a profile, answered from
 * the summary statistics alone (no event column is needed): the time axis
 * (origin, span, startup), per-rank totals and load imbalance, self time. */
#ifndef SP_ANALYSIS_H
#define SP_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"

/* The rank's first region entry and last exit; SP_NO_TIME when it recorded
 * nothing. */
int64_t sp_rank_first_start(const struct sp_rank *rk);
int64_t sp_rank_last_end(const struct sp_rank *rk);

/* The rank's run span in ns: its recorded run (end - start) when both are
 * known, else first entry to last exit; 0 when it recorded nothing. */
int64_t sp_rank_span(const struct sp_rank *rk);

/* The profile's time origin: the earliest run start over its ranks, or the
 * first region entry of any rank for files without run starts; SP_NO_TIME
 * for an empty profile. Every report and export measures from it. */
int64_t sp_profile_time_origin(const struct sp_profile *p);

/* First region entry to last exit over all ranks, in ns (0 when empty). */
int64_t sp_profile_time_span(const struct sp_profile *p);

/* From the earliest run start to the first region entry, in ns: the work
 * before any region (imports, input); SP_NO_TIME without run starts. */
int64_t sp_profile_startup(const struct sp_profile *p);

/* Each rank's total time in region `name` into totals[p->nranks] (0 where
 * the rank lacks it); returns how many ranks have it. */
size_t sp_region_rank_totals(const struct sp_profile *p, const char *name, int64_t *totals);

/* Load imbalance, defined here once for every report (summary, diff, the
 * Python read API): the slowest rank's total over the fastest rank's, the
 * caller choosing which ranks count (summary and diff count a rank that
 * lacks the region as 0 s). 1.0 for equal totals; INFINITY when the fastest
 * is 0 s and the slowest is not; NAN (not defined) when the slowest is 0 s. */
double sp_imbalance_of(int64_t slowest, int64_t fastest);

/* sp_imbalance_of over totals[0..n): of their largest and smallest; NAN
 * when n == 0. */
double sp_imbalance(const int64_t *totals, size_t n);

/* The self (exclusive) time of tree node i of rk: its total less its
 * children's, never below 0. rk->tree must be built. */
int64_t sp_tree_self_ns(const struct sp_rank *rk, size_t i);

#endif
