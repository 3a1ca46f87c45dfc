/* blocks.c - stacks of open `with` blocks (sp_blocks.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_blocks.h"

__attribute__((noinline, cold)) int sp_blocks_grow(struct sp_blocks *b)
{
	size_t cap = b->cap ? 2 * b->cap : 16;
	size_t each = sizeof b->v[0] + sizeof b->m[0];
	if (cap > SIZE_MAX / each)
		return -1;
	struct sp_open_entry *v = malloc(cap * each);
	if (!v)
		return -1;
	struct sp_open_mem *m = (struct sp_open_mem *)(v + cap);
	if (b->depth) {
		memcpy(v, b->v, b->depth * sizeof v[0]);
		memcpy(m, b->m, b->depth * sizeof m[0]);
	}
	free(b->v);
	b->v = v;
	b->m = m;
	b->cap = cap;
	return 0;
}

int sp_blocks_take(struct sp_blocks *b, const struct sp_region *r, struct sp_open_entry *e,
		   struct sp_open_mem *m)
{
	for (size_t k = b->depth; k-- > 0;) {
		if (b->v[k].region != r)
			continue;
		*e = b->v[k];
		*m = b->m[k];
		size_t above = b->depth - k - 1;
		memmove(&b->v[k], &b->v[k + 1], above * sizeof b->v[0]);
		memmove(&b->m[k], &b->m[k + 1], above * sizeof b->m[0]);
		b->depth--;
		return 1;
	}
	return 0;
}

void sp_blocks_free(struct sp_blocks *b)
{
	free(b->v);
	*b = (struct sp_blocks){0};
}
