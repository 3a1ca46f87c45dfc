/* sp_nvtx.h - run --nvtx / setup(use_nvtx=True): each region call also an
 * NVTX range (nvtx.c owns the domain and the names), for Nsight Systems
 * and any other NVTX tool. NVTX3 is header-only: with SP_HAVE_NVTX (the
 * Makefile found nvtx3/nvToolsExt.h, in the CUDA toolkit or NVTX_INCLUDE)
 * the calls below are NVTX's own inline functions, each a load and a
 * compare when no tool is attached; without, they are empty and --nvtx
 * says once how to get them (sp_nvtx_open). Ranges of the calls that nest
 * on a thread are pushed and popped (nvtxDomainRangePushEx/Pop, names
 * registered once per region); calls that do not nest on a thread (asyncio
 * task lanes, coroutines) are started and ended by id. The recording paths
 * that call these are chosen at setup (sp_mode.nvtx): without --nvtx none
 * of this runs. Include <Python.h> first. */
#ifndef SP_NVTX_H
#define SP_NVTX_H

#include <stdint.h>

#ifdef SP_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

/* The domain "scope-profiler" (NULL until sp_nvtx_open). */
extern nvtxDomainHandle_t sp_nvtx_domain;

/* The calling thread's ranges of ours pushed and not popped, and the
 * number of times the end of a session popped them all (sp_nvtx_pop_all). */
extern _Thread_local unsigned sp_nvtx_pushed, sp_nvtx_epoch;

/* A range named by name (a region's attributes, sp_nvtx_name) opens on the
 * calling thread. Returns the epoch to pop it with (sp_nvtx_pop_from). */
static inline unsigned sp_nvtx_push(void *name)
{
	nvtxDomainRangePushEx(sp_nvtx_domain, (const nvtxEventAttributes_t *)name);
	sp_nvtx_pushed++;
	return sp_nvtx_epoch;
}

/* The calling thread's innermost range closes (none when none is open). */
static inline void sp_nvtx_pop(void)
{
	if (sp_nvtx_pushed) {
		sp_nvtx_pushed--;
		nvtxDomainRangePop(sp_nvtx_domain);
	}
}

/* The pop of a range pushed at epoch: nothing when the end of a session
 * popped it already. */
static inline void sp_nvtx_pop_from(unsigned epoch)
{
	if (epoch == sp_nvtx_epoch)
		sp_nvtx_pop();
}

/* A range that need not nest (ended by its id, from any thread). */
static inline uint64_t sp_nvtx_start(void *name)
{
	return nvtxDomainRangeStartEx(sp_nvtx_domain, (const nvtxEventAttributes_t *)name);
}

static inline void sp_nvtx_end(uint64_t id)
{
	nvtxDomainRangeEnd(sp_nvtx_domain, id);
}
#else
static inline unsigned sp_nvtx_push(void *name)
{
	(void)name;
	return 0;
}

static inline void sp_nvtx_pop(void)
{
}

static inline void sp_nvtx_pop_from(unsigned epoch)
{
	(void)epoch;
}

static inline uint64_t sp_nvtx_start(void *name)
{
	(void)name;
	return 0;
}

static inline void sp_nvtx_end(uint64_t id)
{
	(void)id;
}
#endif

/* The end of a session on the calling thread: every range of ours still
 * open on it closes (blocks', decorated calls', in one go: pops are
 * positional), and their own pops later do nothing (sp_nvtx_pop_from). */
void sp_nvtx_pop_all(void);

/* Whether this build has NVTX (SP_HAVE_NVTX). */
int sp_nvtx_built(void);

/* The domain made (once; NVTX's loader attaches a tool from
 * NVTX_INJECTION64_PATH then). 1 when ranges will be made; 0 when this
 * build has no NVTX: said once on stderr, with how to get it (the run goes
 * on without ranges). */
int sp_nvtx_open(void);

/* The event attributes of a region's ranges (utf8: its name), made once
 * per region by sp_region_fit and kept for the process (the regions are):
 * its name registered in the domain (an NVTX registered string), or, when
 * the tool registers none, the text itself. The pushes then pass them as
 * they are: no attributes are built per call. NULL when out of memory (the
 * ranges are unnamed, never wrong). */
void *sp_nvtx_name(const char *utf8);

#endif
