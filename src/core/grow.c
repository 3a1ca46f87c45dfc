/* grow.c - the one growable-array idiom (see sp_grow.h). */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "sp_grow.h"

size_t sp_grow_cap(size_t cap, size_t first, size_t need, size_t elem)
{
	size_t ncap = cap ? cap : first ? first : 1;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return 0;
		ncap *= 2;
	}
	return elem && ncap > SIZE_MAX / elem ? 0 : ncap;
}

void *sp_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = sp_grow_cap(*cap, 16, need, elem);
	void *np = ncap ? realloc(p, ncap * elem) : NULL;
	if (np)
		*cap = ncap;
	return np;
}

void sp_malloc_for_reading(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
}
