/* sp_grow.h - the one growable-array idiom (git's ALLOC_GROW): capacity
 * doubled from 16, the multiplication checked for overflow. */
#ifndef SP_GROW_H
#define SP_GROW_H

#include <stddef.h>

/* The capacity to grow cap to for need elements of elem bytes: cap doubled
 * (first when cap is 0) until it holds need; cap itself when it already
 * does. 0 when the doubling or the size in bytes would overflow. */
size_t sp_grow_cap(size_t cap, size_t first, size_t need, size_t elem);

/* Returns p grown to hold at least need elements of elem bytes (capacity
 * *cap doubled until it does, starting at 16), updating *cap; p itself when
 * it is already big enough. NULL on out of memory or size overflow, leaving
 * p and *cap as they were (p still owned by the caller). */
void *sp_grow(void *p, size_t *cap, size_t need, size_t elem);

/* Grows the array *pp (a T *) to hold need elements; 0, or -1 as sp_grow
 * fails (the array untouched). */
#define SP_GROW(pp, cap, need) sp_grow_ptr((void **)(pp), (cap), (need), sizeof **(pp))

static inline int sp_grow_ptr(void **pp, size_t *cap, size_t need, size_t elem)
{
	void *p = sp_grow(*pp, cap, need, elem);
	if (!p)
		return -1;
	*pp = p;
	return 0;
}

/* Sets glibc's malloc for reading profiles, once: columns and the reader's
 * buffers are megabytes each, made and freed over and over (a read in a
 * loop), and glibc would map each afresh, zero-filled and faulted in page by
 * page, until its adaptive thresholds caught up; this starts where they end
 * (blocks up to 32 MiB from the heap, 64 MiB of free heap kept), about twice
 * as fast a read. Every command but `run` sets it at its start; a process
 * running a script (`run`, or plain python with the module) only when the
 * script first reads a profile, so that until then the script's memory
 * comes and goes back as under plain python. */
void sp_malloc_for_reading(void);

#endif
