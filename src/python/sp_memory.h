/* sp_memory.h - `run --memory` / setup(use_memray=True): CPython's
 * allocators (raw, mem and object domains) wrapped with counters
 * (memory.c), read by the recording paths of the memory mode.
 *
 * Allocated bytes: every byte requested through the three domains
 * (malloc and calloc their size; realloc its growth over the old size
 * when the block's size is known, else its new size), from every thread.
 * A call's value is the counter at its end minus the counter at its start:
 * nested calls included, and also what other threads allocated meanwhile
 * (the counter is the process's).
 *
 * Live bytes and peaks: exact only when the wrappers were installed before
 * the interpreter started (`run --memory`): each block then carries a
 * 16-byte header with its size (alignment kept). Installed later
 * (setup(use_memray=True) from a script), the blocks that exist have no
 * header, so only the requested bytes are counted and peaks stay unknown.
 *
 * The wrappers stay installed for the rest of the process (blocks with a
 * header must be freed by them). Include <Python.h> first. */
#ifndef SP_MEMORY_H
#define SP_MEMORY_H

#include <stdint.h>

struct sp_mem_counters {
	int64_t alloc;        /* bytes requested in the mem and object domains (GIL held) */
	int64_t live;         /* their blocks' bytes still allocated */
	int64_t mark;         /* high-water mark of live bytes since the innermost open call began */
	int64_t alloc_raw;    /* raw domain, any thread: atomic (relaxed) */
	int64_t live_raw;
	int exact;            /* headers: live bytes and peaks known */
	int installed;
};
extern struct sp_mem_counters sp_mem;

/* Installs the wrappers, once; exact when called before Py_Initialize
 * (after preinitialization). Later calls do nothing. Returns 0, or -1 when
 * an allocator cannot be read. */
int sp_mem_install(int exact);

static inline int64_t sp_mem_allocated(void)
{
	return sp_mem.alloc + __atomic_load_n(&sp_mem.alloc_raw, __ATOMIC_RELAXED);
}

static inline int64_t sp_mem_live(void)
{
	return sp_mem.live + __atomic_load_n(&sp_mem.live_raw, __ATOMIC_RELAXED);
}

/* A call opens: returns the mark to give back to sp_mem_close; the mark
 * now counts from the live bytes. */
static inline int64_t sp_mem_open(void)
{
	int64_t saved = sp_mem.mark;
	sp_mem.mark = sp_mem_live();
	return saved;
}

/* A call closes: its allocated bytes into *value (the counter at its
 * start: alloc0), its region's peak (*peak), and the outer calls' mark
 * (saved: what sp_mem_open returned). */
static inline void sp_mem_close(int64_t *value, int64_t *peak, int64_t alloc0, int64_t saved)
{
	*value = sp_mem_allocated() - alloc0;
	int64_t m = sp_mem.mark;
	if (sp_mem.exact && m > *peak)
		*peak = m;
	if (saved > m)
		sp_mem.mark = saved;
}

#endif
