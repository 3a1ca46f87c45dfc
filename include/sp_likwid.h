/* sp_likwid.h - LIKWID's marker API, opened at run time (run --likwid,
 * setup(use_likwid=True)): the library is loaded with dlopen only when
 * asked, so the executable neither links nor needs it otherwise. The
 * marker calls go through the function pointers of sp_lw, resolved once;
 * the region classes of the Python layer call them around every call.
 * No Python here. */
#ifndef SP_LIKWID_H
#define SP_LIKWID_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"

/* LIKWID's marker functions (the prototypes of likwid.h). */
struct sp_likwid_api {
	void (*init)(void);
	void (*thread_init)(void);
	void (*close)(void);
	int (*register_region)(const char *tag);
	int (*start)(const char *tag);
	int (*stop)(const char *tag);
	void (*get)(const char *tag, int *nevents, double *events, double *time, int *count);
};
extern struct sp_likwid_api sp_lw;

/* The library: $SCOPE_PROFILER_LIKWID_LIB when set (a path), else
 * liblikwid.so.5 found the usual way. The first call opens it, resolves the
 * marker functions and calls likwid_markerInit; likwid_markerClose runs at
 * the process's exit. Returns 0, or -1 with one line in err[len] (the
 * library or a function missing); a failure is remembered. */
int sp_likwid_load(char *err, size_t len);

/* Whether the library is loaded and marking started. */
int sp_likwid_loaded(void);

/* The calling thread's likwid_markerThreadInit, once per thread, before
 * its first marker region. */
extern _Thread_local int sp_likwid_thread_ready;
void sp_likwid_thread_init(void);
static inline void sp_likwid_thread(void)
{
	if (__builtin_expect(!sp_likwid_thread_ready, 0))
		sp_likwid_thread_init();
}

/* likwid_markerRegisterRegion(name) unless name was registered before;
 * the name is remembered for the end of the run. Returns the name's number
 * (0, 1, ...), or -1 out of memory. */
int32_t sp_likwid_register(const char *name);

/* How deep each registered region is open in the calling thread: a region
 * entered inside itself (recursion) is one LIKWID region, started at the
 * outermost entry and stopped at its exit, as LIKWID's regions do not nest
 * in themselves. */
struct sp_likwid_depth {
	uint32_t *v;
	size_t cap;
};
extern _Thread_local struct sp_likwid_depth sp_likwid_depth;
int sp_likwid_depth_grow(int32_t id);   /* 0, or -1 out of memory */

/* A call of region id (named tag) starts / ends in the calling thread. */
static inline void sp_likwid_enter(int32_t id, const char *tag)
{
	sp_likwid_thread();
	if (__builtin_expect((size_t)id >= sp_likwid_depth.cap, 0) && sp_likwid_depth_grow(id) != 0)
		return;
	if (sp_likwid_depth.v[id]++ == 0)
		sp_lw.start(tag);
}

static inline void sp_likwid_leave(int32_t id, const char *tag)
{
	if ((size_t)id < sp_likwid_depth.cap && sp_likwid_depth.v[id] && --sp_likwid_depth.v[id] == 0)
		sp_lw.stop(tag);
}

/* The calling thread's marker regions still open (a session ended inside
 * its calls: finalize() in a block, a signal) are stopped now, before their
 * counters are read; their calls' later ends stop nothing. */
void sp_likwid_stop_open(void);

/* likwid_markerClose now, if the marker API is open (its marker file for
 * likwid-perfctr -m): a run ended by a signal, which runs no atexit. */
void sp_likwid_close_now(void);

/* The counters of every registered region, as likwid_markerGetRegion gives
 * them: in the calling thread now, and in each thread that ran marker
 * regions and has exited since the last collection (read at its exit, as
 * LIKWID answers for the calling thread only); threads still running are
 * not seen. Regions no thread ran are left out, and so are names that are
 * not rows of rk->regions. Threads that have not exited are waited for
 * (a second at most: a joined thread may still be on its way out), and
 * those still running are counted in *running. Values the file may not
 * hold (a time not finite or negative, an event not finite) are stored as
 * 0 and counted in *replaced. Sets rk->likwid; 0, or -1 out of memory. */
int sp_likwid_collect(struct sp_rank *rk, size_t *running, size_t *replaced);

/* LIKWID's derived metrics of rk's tables (sp_likwid_collect's), computed
 * by LIKWID itself with its group's formulas. Only under likwid-perfctr -m
 * ($LIKWID_FILEPATH set), only when no thread that ran marker regions still
 * runs, and only when the library has LIKWID's perfmon functions: closes
 * the marker API (LIKWID writes its marker file, which likwid-perfctr reads
 * at the end), reads that file back through LIKWID (perfmon_readMarkerFile)
 * and asks it for each metric of each region and thread
 * (perfmon_getMetricOfRegionThread). Marker calls after it do nothing, and
 * sp_likwid_load refuses a second session. Sets the tables' metrics and
 * *names (the metric names, newline-separated, malloc'd; NULL when there
 * are none). Returns 0, with a reason in why[len] when metrics were wanted
 * ($LIKWID_FILEPATH set) but are not there ("" otherwise); -1 out of
 * memory. */
int sp_likwid_metrics(struct sp_rank *rk, char **names, char *why, size_t len);

/* The event names for /metadata's likwid_event_names, comma-separated:
 * from $LIKWID_EVENTS when it is an explicit list ("EV:CTR,EV:CTR"), else
 * from the EVENTSET section of the group's file in LIKWID's group folder
 * ($SCOPE_PROFILER_LIKWID_GROUPS, else /usr/share/likwid/perfgroups), the
 * file of any CPU folder whose event count is nevents (when all such files
 * agree). "" when unknown. A malloc'd string, or NULL out of memory. */
char *sp_likwid_event_names(size_t nevents);

#endif
