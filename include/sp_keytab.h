/* sp_keytab.h - dense ids for (parent, key) pairs: the one hash table behind
 * every call tree built here (tree.c's nodes and lanes, export's folded
 * stacks, summary's tree merged over ranks, aggregation mode's call tree)
 * and the join of regions by name (src/report/byname.c, keyed by the name's
 * hash). Ids are 0, 1, 2, ... in order of
 * first appearance, so callers keep their payload in plain arrays indexed by
 * id. Open addressing, at most half full. */
#ifndef SP_KEYTAB_H
#define SP_KEYTAB_H

#include <stddef.h>
#include <stdint.h>

struct sp_keytab {
	struct sp_keytab_key {
		int32_t parent;
		uint64_t key;
	} *keys;                       /* by id */
	size_t n, cap;
	int32_t *slots;                /* ids; -1 empty */
	size_t nslots;                 /* a power of two, at least twice n; 0 before use */
};

/* The id of (parent, key), added as id t->n when new (then *added = 1, else
 * 0; added may be NULL). Returns -1 when out of memory or when the ids would
 * not fit an int32_t; the table is then unchanged. */
int32_t sp_keytab_get(struct sp_keytab *t, int32_t parent, uint64_t key, int *added);

/* The id of (parent, key), or -1 when the table does not hold it. */
int32_t sp_keytab_find(const struct sp_keytab *t, int32_t parent, uint64_t key);

/* Forgets every key; keeps the memory. */
void sp_keytab_clear(struct sp_keytab *t);

/* Frees the table; it is empty again. */
void sp_keytab_free(struct sp_keytab *t);

#endif
