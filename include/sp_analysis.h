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

/* Writes the n sorted rank numbers as a compact list ("0-3,5") into buf,
 * cut with "..." when longer than len allows. Returns buf. */
char *sp_rank_list(char *buf, size_t len, const int *ranks, size_t n);

/* One rank and its host name (NULL: unknown, absent or ""). */
struct sp_host_rank {
	const char *host;
	int rank;
};

/* One host: its ranks are hr[first .. first + n - 1], by rank number. */
struct sp_host_group {
	int lowest;                    /* its lowest rank number */
	size_t first, n;
};

/* The ranks of a profile grouped by host. */
struct sp_hosts {
	struct sp_host_rank *hr;       /* every rank, grouped by host */
	struct sp_host_group *g;       /* in the order of their lowest rank */
	size_t ng;
	size_t known;                  /* groups with a host name */
	int unknown;                   /* some rank has no host name */
};

/* Groups the ranks of p by host name into *h (names borrowed from p; free
 * with sp_hosts_free). Returns 0, or -1 when out of memory (*h then empty). */
int sp_hosts_group(const struct sp_profile *p, struct sp_hosts *h);

/* Frees what sp_hosts_group allocated; *h is empty again. */
void sp_hosts_free(struct sp_hosts *h);

/* Which ranks of p ran on which host, as one malloc'd line: hosts in the
 * order of their lowest rank, each with its ranks as sp_rank_list writes
 * them (never cut), e.g. "nodeA: 0-3; nodeB: 4-7" or, interleaved,
 * "A: 0,2; B: 1,3". Ranks without a host name (none or "") are listed under
 * "?"; no ranks give "". Returns NULL when out of memory. */
char *sp_profile_hosts(const struct sp_profile *p);

#endif
