/* sp_region.h - the region object (region.c): a name, its event columns
 * and statistics, its aggregates; the registry of regions by name. What
 * the object does when entered depends on its class (region_types.c, one
 * per recording mode), which the mode switches. Include <Python.h> first. */
#ifndef SP_REGION_H
#define SP_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "sp_memory.h"
#include "sp_profile.h"
#include "sp_recorder.h"

/* Aggregation mode (sp_aggregate.h): what a region keeps instead of events. */
struct sp_agg {
	int64_t count, total;         /* summed from the tree by sp_agg_sum */
	int64_t min, max;
	int64_t self;                 /* total minus the time in regions inside */
	int64_t first, last;          /* earliest start, latest end */
	int32_t node_parent, node;    /* cache: its tree node under that parent */
};

/* Empties a region's aggregates (at creation and at each session's reset). */
static inline void sp_agg_region_init(struct sp_agg *a)
{
	*a = (struct sp_agg){ .min = INT64_MAX, .max = INT64_MIN, .first = INT64_MAX, .last = INT64_MIN,
			      .node_parent = -2, .node = -1 };
}

typedef struct sp_region {
	PyObject_HEAD
	PyObject *name;               /* str, exact */
	struct sp_buf buf;
	struct sp_agg agg;            /* aggregation mode */
	struct sp_stats_acc acc;      /* the stats of its calls handed to the stream (spill.c) */
	uint64_t gen;                 /* bumped when the events are cleared */
	int holds_functions;          /* region(name, functions=[...]) in line mode */
	int32_t index;                /* the end of a session: its place in the rank's regions, or -1 */
	int64_t peak_bytes;           /* run --memory: the peak of live bytes while open; -1: none */
	int32_t likwid_id;            /* --likwid: its number with sp_likwid_register, or -1 */
	void *nvtx_name;              /* --nvtx: its NVTX registered string (sp_nvtx_name), or NULL */
	int64_t gpu_wait_ns;          /* --gpu: the time its calls' exits waited for the device */
	size_t kept_calls;            /* after finalize(): the calls the session recorded */
	/* Streaming (spill.c): its id in the stream (-1: none yet), its first
	 * call's start, and its calls handed over while still open. */
	int32_t stream_id;
	size_t streamed;              /* calls handed over this session */
	uint64_t values_sum;          /* the sum of their values (wrapping), patched ones included */
	int64_t first_start;
	struct sp_late *late;
	size_t nlate, late_cap;
} RegionObject;

/* A call of r in event slot `slot` ends at t: its end written, nothing
 * more (every recorded call's cost). The statistics are summed from the
 * events: those still in memory at the end of the run in one pass
 * (sp_stats_acc_columns), those handed to the stream as they go (r->acc). */
static inline void sp_region_end(RegionObject *r, size_t slot, int64_t t)
{
	r->buf.ends[slot] = t;
}

/* The memory mode: the call of r in slot `slot` closes with what it
 * allocated (sp_mem_close; alloc0 and mark0 from its start). */
static inline void sp_region_mem_close(RegionObject *r, size_t slot, int64_t alloc0, int64_t mark0)
{
	sp_mem_close(&r->buf.values[slot], &r->peak_bytes, alloc0, mark0);
}

/* Every region by name (a dict, in creation order); the module's. */
extern PyObject *sp_registry;

/* The region called name (a str), created on first use in the class of the
 * mode; a borrowed reference (the registry keeps every region alive), or
 * NULL with an exception set. A name UTF-8 cannot hold is stored escaped
 * (sp_text_storable), said once. */
RegionObject *sp_region_lookup(PyObject *name);

/* The class regions take when they are created (region_types.c, at each
 * change of the mode). */
void sp_regions_set_class(PyTypeObject *type);

/* r's buffer and columns as sp_mode asks: its capacity, a lanes column
 * when sp_mode.threads, allocation values when sp_mode.memory, its LIKWID
 * marker name when sp_mode.likwid, its NVTX name when sp_mode.nvtx. 0, or
 * -1 with an exception. */
int sp_region_fit(RegionObject *r);

/* One call of r around work that runs synchronously in the calling thread
 * (a resume of a decorated generator, generator.c): entered as a `with`
 * block of r's current class, so it nests and takes its lane as that block
 * would. Returns the class's exit, to be called once (args ignored) when
 * the work is done, even if the class changes meanwhile (as a `with` block
 * keeps its __exit__); NULL with an exception when nothing was entered.
 * Every class (region_types.c) has __enter__ first and __exit__ next. */
typedef PyObject *(*sp_region_exit_fn)(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
sp_region_exit_fn sp_region_enter_with(RegionObject *r);

/* Exits of a region whose call was entered in another thread (that call
 * stays open until the end of the run): how many, and the first region;
 * cleared with the events. */
extern size_t sp_unmatched_exits;
extern RegionObject *sp_unmatched_region;

/* Forgets every recorded event; the regions stay registered. */
void sp_regions_reset(void);

/* Every region whose buffer is empty (a streamed run's end, its calls all
 * handed over) gives the buffer's memory back (sp_buf_release), before
 * the end reads the calls back from the file. The GIL held. */
void sp_regions_release_empty(void);

/* Creates the registry (module init); -1 with an exception. */
int sp_regions_init(void);

#endif
