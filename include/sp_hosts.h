/* sp_hosts.h - which ranks of a profile ran on which host, and compact rank
 * lists: the model's facts that the summary, diff, export and the MPI merge
 * all print (src/core/hosts.c). */
#ifndef SP_HOSTS_H
#define SP_HOSTS_H

#include <stddef.h>

#include "sp_profile.h"

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
