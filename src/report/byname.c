/* byname.c - regions joined by name across ranks and files (byname.h).
 * Names get their ids from one sp_keytab, keyed by the name's 64-bit
 * FNV-1a hash: ids come out in order of first appearance, and a hit is
 * checked against the name, a true collision moving on to the next parent
 * (-1, -2, ...), so two names never share an id. Then one counting pass
 * lays the regions out name by name. O(regions + bytes of names). */
#include <stdlib.h>
#include <string.h>

#include "sp_keytab.h"
#include "byname.h"

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The id of name, given names[] of the ids so far (room for one more);
 * -1 when out of memory. */
static int32_t name_id(struct sp_keytab *t, const char **names, const char *name)
{
	uint64_t h = fnv1a(name);
	for (int32_t parent = -1;; parent--) {
		int added;
		int32_t id = sp_keytab_get(t, parent, h, &added);
		if (id < 0 || added) {
			if (id >= 0)
				names[id] = name;
			return id;
		}
		if (strcmp(names[id], name) == 0)
			return id;
	}
}

int32_t sp_byname_find(const struct sp_byname *b, const char *name)
{
	uint64_t h = fnv1a(name);
	for (int32_t parent = -1;; parent--) {
		int32_t id = sp_keytab_find(&b->ids, parent, h);
		if (id < 0 || strcmp(b->names[id], name) == 0)
			return id;
	}
}

/* Gives every region of the selected ranks its name id in b->id (-1 for the
 * ranks left out) and fills b->base, b->rank0, b->n, b->names and the
 * count of each name's regions in b->first[id + 1]. */
static enum sp_err number(struct sp_byname *b, const struct sp_profile *const *files, size_t nfiles,
			  const struct sp_select *sel)
{
	struct sp_keytab *t = &b->ids;
	const char **names = b->names;
	size_t at = 0, g = 0;
	for (size_t f = 0; f < nfiles; f++) {
		b->rank0[f] = g;
		for (size_t r = 0; r < files[f]->nranks; r++, g++) {
			const struct sp_rank *rk = &files[f]->ranks[r];
			int keep = sp_select_rank(sel, rk->rank);
			b->base[g] = at;
			for (size_t i = 0; i < rk->nregions; i++, at++) {
				int32_t id = keep ? name_id(t, names, rk->regions[i].name) : -1;
				if (keep && id < 0)
					return SP_ENOMEM;
				b->id[at] = id;
				if (id >= 0)
					b->first[id + 1]++;
			}
		}
	}
	b->n = t->n;
	return SP_OK;
}

enum sp_err sp_byname_build(struct sp_byname *b, const struct sp_profile *const *files, size_t nfiles,
			    const struct sp_select *sel, struct sp_error *err)
{
	size_t nregions = 0, nranks = 0;
	*b = (struct sp_byname){0};
	for (size_t f = 0; f < nfiles; f++)
		for (size_t r = 0; r < files[f]->nranks; r++, nranks++) {
			if (files[f]->ranks[r].nregions > INT32_MAX - nregions)
				return sp_error_set(err, SP_ENOMEM, "too many regions to merge");
			nregions += files[f]->ranks[r].nregions;
		}
	/* One block, widest elements first: first[nregions + 2] (zeroed: the
	 * counts), base[nranks], rank0[nfiles], names[], refs[], id[]. */
	size_t words = nregions + 2 + nranks + nfiles;
	char *block = malloc(words * sizeof(size_t) + nregions * (sizeof *b->names + sizeof *b->refs +
								    sizeof *b->id));
	if (block) {
		b->first = memset(block, 0, (nregions + 2) * sizeof *b->first);
		b->base = b->first + nregions + 2;
		b->rank0 = b->base + nranks;
		b->names = (const char **)(b->rank0 + nfiles);
		b->refs = (struct sp_byname_ref *)(b->names + nregions);
		b->id = (int32_t *)(b->refs + nregions);
	}
	if (!block || number(b, files, nfiles, sel) != SP_OK) {
		sp_byname_free(b);
		return sp_error_set(err, SP_ENOMEM, "out of memory merging %zu regions", nregions);
	}
	/* Counts to starts; then each region in file, rank, region order, so a
	 * name's regions are by file then rank; first[k + 1] ends at name k's end. */
	for (size_t k = 0; k < b->n; k++)
		b->first[k + 1] += b->first[k];
	size_t at = 0, g = 0;
	for (size_t f = 0; f < nfiles; f++)
		for (size_t r = 0; r < files[f]->nranks; r++, g++)
			for (size_t i = 0; i < files[f]->ranks[r].nregions; i++, at++)
				if (b->id[at] >= 0)
					b->refs[b->first[b->id[at]]++] = (struct sp_byname_ref){
						(uint32_t)f, (uint32_t)r, (uint32_t)i };
	/* first[k] now holds name k's end: shift back to starts. */
	memmove(b->first + 1, b->first, b->n * sizeof *b->first);
	b->first[0] = 0;
	return SP_OK;
}

void sp_byname_free(struct sp_byname *b)
{
	free(b->first);                /* the block of every array (sp_byname_build) */
	sp_keytab_free(&b->ids);
	*b = (struct sp_byname){0};
}
