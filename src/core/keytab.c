/* keytab.c - dense ids for (parent, key) pairs (see sp_keytab.h). */
#include <stdlib.h>
#include <string.h>

#include "sp_grow.h"
#include "sp_keytab.h"

static size_t slot_of(const struct sp_keytab *t, int32_t parent, uint64_t key)
{
	uint64_t k = key ^ ((uint64_t)(uint32_t)parent * 0x9e3779b97f4a7c15ULL);
	k ^= k >> 33;                  /* the murmur3 64-bit finaliser */
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (size_t)k & (t->nslots - 1);
}

/* Replaces the slot table by one of nslots slots holding every id. */
static int rehash(struct sp_keytab *t, size_t nslots)
{
	if (nslots > SIZE_MAX / sizeof *t->slots)
		return -1;
	int32_t *slots = malloc(nslots * sizeof *slots);
	if (!slots)
		return -1;
	memset(slots, 0xff, nslots * sizeof *slots);
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = slot_of(t, t->keys[i].parent, t->keys[i].key);
		while (slots[h] != -1)
			h = (h + 1) & (nslots - 1);
		slots[h] = (int32_t)i;
	}
	return 0;
}

int32_t sp_keytab_get(struct sp_keytab *t, int32_t parent, uint64_t key, int *added)
{
	if (added)
		*added = 0;
	if (!t->nslots && rehash(t, 64) != 0)
		return -1;
	size_t mask = t->nslots - 1, h = slot_of(t, parent, key);
	for (int32_t i; (i = t->slots[h]) != -1; h = (h + 1) & mask)
		if (t->keys[i].parent == parent && t->keys[i].key == key)
			return i;
	if (t->n >= INT32_MAX)
		return -1;
	/* Room first, so that a failure leaves the table as it was. */
	if ((t->n + 1) * 2 > t->nslots) {
		if (t->nslots > SIZE_MAX / 2 || rehash(t, t->nslots * 2) != 0)
			return -1;
		mask = t->nslots - 1;
		for (h = slot_of(t, parent, key); t->slots[h] != -1; h = (h + 1) & mask)
			;
	}
	if (t->n == t->cap && SP_GROW(&t->keys, &t->cap, t->n + 1) != 0)
		return -1;
	int32_t id = (int32_t)t->n++;
	t->keys[id] = (struct sp_keytab_key){parent, key};
	t->slots[h] = id;
	if (added)
		*added = 1;
	return id;
}

int32_t sp_keytab_find(const struct sp_keytab *t, int32_t parent, uint64_t key)
{
	if (!t->nslots)
		return -1;
	size_t mask = t->nslots - 1;
	for (size_t h = slot_of(t, parent, key); t->slots[h] != -1; h = (h + 1) & mask)
		if (t->keys[t->slots[h]].parent == parent && t->keys[t->slots[h]].key == key)
			return t->slots[h];
	return -1;
}

void sp_keytab_clear(struct sp_keytab *t)
{
	t->n = 0;
	if (t->nslots)
		memset(t->slots, 0xff, t->nslots * sizeof *t->slots);
}

void sp_keytab_free(struct sp_keytab *t)
{
	free(t->keys);
	free(t->slots);
	memset(t, 0, sizeof *t);
}
