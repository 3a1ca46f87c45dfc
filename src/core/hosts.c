/* hosts.c - which ranks ran on which host, and rank lists ("0-3,5"): facts
 * of the profile model, used by the summary, diff, export and the MPI merge
 * (which writes /metadata hostnames). See sp_hosts.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_hosts.h"

char *sp_rank_list(char *buf, size_t len, const int *ranks, size_t n)
{
	size_t at = 0;
	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0, j; i < n; i = j + 1) {
		for (j = i; j + 1 < n && (long long)ranks[j + 1] == (long long)ranks[j] + 1; j++)
			;
		char part[40];
		if (j == i)
			snprintf(part, sizeof part, "%d", ranks[i]);
		else
			snprintf(part, sizeof part, j == i + 1 ? "%d,%d" : "%d-%d", ranks[i], ranks[j]);
		size_t need = strlen(part) + (at ? 1 : 0);
		/* Keep room for a final ",..." unless this is the last part. */
		if (at + need + (j + 1 < n ? 4 : 0) >= len) {
			if (at + 4 < len)
				snprintf(buf + at, len - at, "%s...", at ? "," : "");
			break;
		}
		snprintf(buf + at, len - at, "%s%s", at ? "," : "", part);
		at += need;
	}
	return buf;
}

/* A rank's host name; NULL when unknown (absent or empty). */
static const char *rank_host(const struct sp_rank *rk)
{
	return rk->hostname && rk->hostname[0] ? rk->hostname : NULL;
}

/* By host (unknown first), then by rank number. */
static int host_rank_cmp(const void *a, const void *b)
{
	const struct sp_host_rank *x = a, *y = b;
	if (x->host != y->host) {
		if (!x->host || !y->host)
			return x->host ? 1 : -1;
		int c = strcmp(x->host, y->host);
		if (c)
			return c;
	}
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static int host_group_cmp(const void *a, const void *b)
{
	const struct sp_host_group *x = a, *y = b;
	return (x->lowest > y->lowest) - (x->lowest < y->lowest);
}

void sp_hosts_free(struct sp_hosts *h)
{
	free(h->hr);
	free(h->g);
	*h = (struct sp_hosts){0};
}

int sp_hosts_group(const struct sp_profile *p, struct sp_hosts *h)
{
	size_t n = p->nranks;
	*h = (struct sp_hosts){0};
	h->hr = malloc((n ? n : 1) * sizeof *h->hr);
	h->g = malloc((n ? n : 1) * sizeof *h->g);
	if (!h->hr || !h->g) {
		sp_hosts_free(h);
		return -1;
	}
	for (size_t r = 0; r < n; r++)
		h->hr[r] = (struct sp_host_rank){ rank_host(&p->ranks[r]), p->ranks[r].rank };
	qsort(h->hr, n, sizeof *h->hr, host_rank_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && (h->hr[j].host == h->hr[i].host ||
					  (h->hr[j].host && h->hr[i].host &&
					   strcmp(h->hr[j].host, h->hr[i].host) == 0)); j++)
			;
		h->g[h->ng++] = (struct sp_host_group){ h->hr[i].rank, i, j - i };
		if (h->hr[i].host)
			h->known++;
		else
			h->unknown = 1;
	}
	qsort(h->g, h->ng, sizeof *h->g, host_group_cmp);
	return 0;
}

char *sp_profile_hosts(const struct sp_profile *p)
{
	struct sp_hosts h;
	if (sp_hosts_group(p, &h) != 0)
		return NULL;
	/* A rank takes at most 12 bytes of a list ("-2147483648,"). */
	size_t len = 1, most = 0;
	for (size_t k = 0; k < h.ng; k++) {
		const char *name = h.hr[h.g[k].first].host;
		len += strlen(name ? name : "?") + 4 + 12 * h.g[k].n + 8;
		most = h.g[k].n > most ? h.g[k].n : most;
	}
	char *out = malloc(len), *list = malloc(12 * most + 8);
	int *nums = malloc((most ? most : 1) * sizeof *nums);
	if (!out || !list || !nums) {
		free(out);
		out = NULL;
		goto done;
	}
	size_t at = 0;
	out[0] = '\0';
	for (size_t k = 0; k < h.ng; k++) {
		const struct sp_host_group *g = &h.g[k];
		const char *name = h.hr[g->first].host;
		for (size_t i = 0; i < g->n; i++)
			nums[i] = h.hr[g->first + i].rank;
		sp_rank_list(list, 12 * g->n + 8, nums, g->n);
		at += (size_t)snprintf(out + at, len - at, "%s%s: %s", k ? "; " : "",
				       name ? name : "?", list);
	}
done:
	free(list);
	free(nums);
	sp_hosts_free(&h);
	return out;
}

