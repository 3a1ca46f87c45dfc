/* memory.c - the allocation counters of the memory mode (sp_memory.h):
 * wrappers of CPython's three allocator domains that call the allocators
 * they replace and count.
 *
 * The mem and object domains run with the GIL held: plain adds. The raw
 * domain may run without it: relaxed atomic adds on counters of its own.
 * The default object allocator (pymalloc) hands requests above its
 * small-block limit to PyMem_RawMalloc (and their frees to PyMem_RawFree),
 * which is wrapped too; a thread-local flag set around the inner call
 * makes the raw wrapper pass such calls straight through: no count (the
 * outer call counted the block) and no header of its own. Each block the
 * program sees thus has exactly one header, right before it, whichever
 * domain it came from, and the block under that header is what the
 * allocator below returned: a raw free of a large mem/object block, or a
 * mem/object free of a raw block, strips that one header and hands the
 * allocator below its own pointer, as both pairings work without the
 * wrappers (pymalloc gives blocks it does not own to PyMem_RawFree). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "sp_memory.h"

struct sp_mem_counters sp_mem;

/* The header before each block in exact mode: its size; 16 bytes so that
 * the block keeps the 16-byte alignment of what it came from. */
#define HDR 16

struct domain {
	PyMemAllocatorEx orig;
	int raw;
};
static struct domain domains[3];

/* Set while a wrapped mem/object allocator runs: its inner raw calls are
 * its own, already counted. */
static _Thread_local int nested;

static inline void count(const struct domain *d, size_t n)
{
	if (d->raw)
		__atomic_fetch_add(&sp_mem.alloc_raw, (int64_t)n, __ATOMIC_RELAXED);
	else
		sp_mem.alloc += (int64_t)n;
}

/* Exact mode: the live bytes change by delta (a block of n came or went). */
static inline void live_add(const struct domain *d, int64_t delta)
{
	if (d->raw) {
		__atomic_fetch_add(&sp_mem.live_raw, delta, __ATOMIC_RELAXED);
		return;
	}
	sp_mem.live += delta;
	if (delta > 0) {
		int64_t l = sp_mem.live + __atomic_load_n(&sp_mem.live_raw, __ATOMIC_RELAXED);
		if (l > sp_mem.mark)
			sp_mem.mark = l;
	}
}

/* ---- exact mode: a header with the size ---- */

/* A new block p with n bytes for the caller after its header: n in the header,
 * counted when the call is not nested in another of ours; the caller's
 * pointer. */
static inline void *born(struct domain *d, char *p, size_t n, int outer)
{
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof n);
	if (outer) {
		count(d, n);
		live_add(d, (int64_t)n);
	}
	return p + HDR;
}

static inline void *x_malloc(struct domain *d, size_t n)
{
	if (d->raw && nested)
		return d->orig.malloc(d->orig.ctx, n);
	if (n > SIZE_MAX - HDR)
		return NULL;
	int outer = !nested;
	if (!d->raw)
		nested++;
	char *p = d->orig.malloc(d->orig.ctx, n + HDR);
	if (!d->raw)
		nested--;
	return born(d, p, n, outer);
}

static inline void *x_calloc(struct domain *d, size_t nelem, size_t elsize)
{
	if (d->raw && nested)
		return d->orig.calloc(d->orig.ctx, nelem, elsize);
	if (elsize && nelem > (SIZE_MAX - HDR) / elsize)
		return NULL;
	size_t n = nelem * elsize;
	int outer = !nested;
	if (!d->raw)
		nested++;
	char *p = d->orig.calloc(d->orig.ctx, 1, n + HDR);
	if (!d->raw)
		nested--;
	return born(d, p, n, outer);
}

static inline void *x_realloc(struct domain *d, void *ptr, size_t n)
{
	if (d->raw && nested)
		return d->orig.realloc(d->orig.ctx, ptr, n);
	if (!ptr)
		return x_malloc(d, n);
	if (n > SIZE_MAX - HDR)
		return NULL;
	char *base = (char *)ptr - HDR;
	size_t old;
	memcpy(&old, base, sizeof old);
	int outer = !nested;
	if (!d->raw)
		nested++;
	char *p = d->orig.realloc(d->orig.ctx, base, n + HDR);
	if (!d->raw)
		nested--;
	if (!p)
		return NULL;   /* the old block stays, with its header */
	memcpy(p, &n, sizeof n);
	if (outer) {
		if (n > old)
			count(d, n - old);
		live_add(d, (int64_t)n - (int64_t)old);
	}
	return p + HDR;
}

static inline void x_free(struct domain *d, void *ptr)
{
	if (d->raw && nested) {
		d->orig.free(d->orig.ctx, ptr);
		return;
	}
	if (!ptr)
		return;
	char *base = (char *)ptr - HDR;
	size_t n;
	memcpy(&n, base, sizeof n);
	int outer = !nested;
	if (outer)
		live_add(d, -(int64_t)n);
	if (!d->raw)
		nested++;
	d->orig.free(d->orig.ctx, base);
	if (!d->raw)
		nested--;
}

/* ---- late mode: blocks without headers, the requested bytes only ---- */

static inline void *l_malloc(struct domain *d, size_t n)
{
	int outer = !nested;
	if (!d->raw)
		nested++;
	void *p = d->orig.malloc(d->orig.ctx, n);
	if (!d->raw)
		nested--;
	if (p && outer)
		count(d, n);
	return p;
}

static inline void *l_calloc(struct domain *d, size_t nelem, size_t elsize)
{
	int outer = !nested;
	if (!d->raw)
		nested++;
	void *p = d->orig.calloc(d->orig.ctx, nelem, elsize);
	if (!d->raw)
		nested--;
	if (p && outer)
		count(d, nelem * elsize);
	return p;
}

/* The old size is unknown: the new size counts. */
static inline void *l_realloc(struct domain *d, void *ptr, size_t n)
{
	int outer = !nested;
	if (!d->raw)
		nested++;
	void *p = d->orig.realloc(d->orig.ctx, ptr, n);
	if (!d->raw)
		nested--;
	if (p && outer)
		count(d, n);
	return p;
}

static inline void l_free(struct domain *d, void *ptr)
{
	if (!d->raw)
		nested++;
	d->orig.free(d->orig.ctx, ptr);
	if (!d->raw)
		nested--;
}

/* The entry points, one set per domain: each knows its domain without
 * reading the ctx it is given. A late install (setup(use_memray=True))
 * swaps the allocators while threads without the GIL may be inside
 * PyMem_RawMalloc; such a thread may see the new function with the old
 * ctx, which these ignore. */
#define ENTRIES(i)                                                                              \
	static void *x_malloc##i(void *ctx, size_t n) { return x_malloc(&domains[i], n); }       \
	static void *x_calloc##i(void *ctx, size_t m, size_t n) { return x_calloc(&domains[i], m, n); } \
	static void *x_realloc##i(void *ctx, void *p, size_t n) { return x_realloc(&domains[i], p, n); } \
	static void x_free##i(void *ctx, void *p) { x_free(&domains[i], p); }                      \
	static void *l_malloc##i(void *ctx, size_t n) { return l_malloc(&domains[i], n); }       \
	static void *l_calloc##i(void *ctx, size_t m, size_t n) { return l_calloc(&domains[i], m, n); } \
	static void *l_realloc##i(void *ctx, void *p, size_t n) { return l_realloc(&domains[i], p, n); } \
	static void l_free##i(void *ctx, void *p) { l_free(&domains[i], p); }
ENTRIES(0)
ENTRIES(1)
ENTRIES(2)

static const PyMemAllocatorEx exact_entries[3] = {
	{NULL, x_malloc0, x_calloc0, x_realloc0, x_free0},
	{NULL, x_malloc1, x_calloc1, x_realloc1, x_free1},
	{NULL, x_malloc2, x_calloc2, x_realloc2, x_free2},
};
static const PyMemAllocatorEx late_entries[3] = {
	{NULL, l_malloc0, l_calloc0, l_realloc0, l_free0},
	{NULL, l_malloc1, l_calloc1, l_realloc1, l_free1},
	{NULL, l_malloc2, l_calloc2, l_realloc2, l_free2},
};

int sp_mem_install(int exact)
{
	static const PyMemAllocatorDomain which[3] = {PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};
	if (sp_mem.installed)
		return 0;
	for (int i = 0; i < 3; i++) {
		PyMem_GetAllocator(which[i], &domains[i].orig);
		if (!domains[i].orig.malloc || !domains[i].orig.free)
			return -1;
		domains[i].raw = which[i] == PYMEM_DOMAIN_RAW;
	}
	sp_mem.exact = exact;
	/* The domains complete before any thread can reach an entry point. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (int i = 0; i < 3; i++) {
		PyMemAllocatorEx a = exact ? exact_entries[i] : late_entries[i];
		/* The entries ignore ctx: keeping the old one makes every mix of
		 * old and new fields a thread may read during the copy a valid
		 * pair (the old function with its own ctx, or a new one). */
		a.ctx = domains[i].orig.ctx;
		PyMem_SetAllocator(which[i], &a);
	}
	sp_mem.installed = 1;
	return 0;
}
