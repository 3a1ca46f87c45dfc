/* grow.c - the one growable-array idiom (see sp_grow.h). */
#include <stdint.h>
#include <stdlib.h>

#include "sp_grow.h"

void *sp_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return NULL;
	void *np = realloc(p, ncap * elem);
	if (np)
		*cap = ncap;
	return np;
}
