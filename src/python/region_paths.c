/* region_paths.c - what `with region:` records, one pair of __enter__ and
 * __exit__ per recording mode (time-only, lanes of threads or tasks,
 * allocations, lines, LIKWID, NVTX, aggregation, disabled), each checking
 * nothing but its own path: the mode is the region's class
 * (region_types.c). The `with` blocks open in each thread, so that an
 * exit closes its own call. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdlib.h>

#include "sp_aggregate.h"
#include "sp_blocks.h"
#include "sp_clock.h"
#include "sp_gpu.h"
#include "sp_lanes.h"
#include "sp_likwid.h"
#include "sp_linetrace.h"
#include "sp_memory.h"
#include "sp_mode.h"
#include "sp_nvtx.h"
#include "sp_recorder.h"
#include "sp_region.h"
#include "sp_region_paths.h"
#include "sp_spill.h"

/* The `with` blocks open in the calling thread, innermost last. Per thread,
 * so threads entering the same region at once each close their own call;
 * an exit closes the innermost open entry of its region (a generator may
 * exit a block that is not the innermost). */
static _Thread_local struct sp_blocks open_blocks;

static pthread_key_t open_blocks_key;   /* frees a thread's stack at its exit; made at module init */
static int open_blocks_key_made;

static void open_blocks_free(void *v)
{
	free(v);
}

static __attribute__((noinline, cold)) int open_blocks_grow(void)
{
	if (sp_blocks_grow(&open_blocks) != 0)
		return -1;
	pthread_setspecific(open_blocks_key, open_blocks.v);
	return 0;
}

/* `with region:` entry; `lanes` and `mem` (the memory mode: the call's
 * allocations, sp_memory.h) are constants in each caller below, so each
 * compiles to its own branch-free path. */
static inline PyObject *region_enter(PyObject *self, int lanes, int mem)
{
	RegionObject *r = (RegionObject *)self;
	/* The lane first (as in pf_record): starts stay in slot order. */
	int32_t lane = lanes ? sp_current_lane() : 0;
	/* Another thread than lane 0's turns the lanes on, and this call is
	 * then recorded with its lane. */
	if (!lanes && sp_mode_check_thread())
		return mem ? sp_enter_mem_threads(self, NULL) : sp_enter_threads(self, NULL);
	if (open_blocks.depth == open_blocks.cap && open_blocks_grow() != 0)
		return PyErr_NoMemory();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	struct sp_open_entry *e = &open_blocks.v[open_blocks.depth++];
	*e = (struct sp_open_entry){r, i, r->gen};
	if (i >= 0) {
		if (lanes)
			r->buf.lanes[i] = lane;
		r->buf.ends[i] = SP_NO_TIME;
		if (mem) {
			r->buf.values[i] = 0;   /* a call still open at the end */
			struct sp_open_mem *em = &open_blocks.m[open_blocks.depth - 1];
			em->mark0 = sp_mem_open();
			em->alloc0 = sp_mem_allocated();
		}
		r->buf.starts[i] = sp_clock_ns();
	}
	return Py_NewRef(self);
}

PyObject *sp_enter_timed(PyObject *self, PyObject *unused)
{
	return region_enter(self, 0, 0);
}

PyObject *sp_enter_threads(PyObject *self, PyObject *unused)
{
	return region_enter(self, 1, 0);
}

PyObject *sp_enter_mem(PyObject *self, PyObject *unused)
{
	return region_enter(self, 0, 1);
}

PyObject *sp_enter_mem_threads(PyObject *self, PyObject *unused)
{
	return region_enter(self, 1, 1);
}

/* An exit with no entry in this thread: entered in another session (then
 * nothing of the region is open, and there is nothing to close) or in
 * another thread, whose call stays open until the end of the run. That is
 * counted, to be said at the end (sp_region.h). A region's last calls are
 * searched for one still open, a bounded search on a rare path. */
static __attribute__((noinline, cold)) void note_unmatched_exit(RegionObject *r)
{
	size_t n = r->buf.n, lo = n > 4096 ? n - 4096 : 0;
	for (size_t i = n; i-- > lo;)
		if (r->buf.ends[i] == SP_NO_TIME) {
			if (!sp_unmatched_exits++)
				sp_unmatched_region = r;
			return;
		}
}

/* An exit whose entry is not the innermost: find it, close the gap. */
static __attribute__((noinline)) void exit_below(RegionObject *r, int64_t t)
{
	struct sp_open_entry e;
	struct sp_open_mem em;
	if (!sp_blocks_take(&open_blocks, r, &e, &em)) {
		note_unmatched_exit(r);
		return;
	}
	int mem = r->buf.keep_values == SP_VALUES_ALLOC_BYTES && sp_mode.memory;
	if (e.slot >= 0 && r->gen == e.gen) {
		if (mem)
			sp_region_mem_close(r, (size_t)e.slot, em.alloc0, em.mark0);
		sp_region_end(r, (size_t)e.slot, t);
	} else if (e.slot >= 0 && mem) {
		sp_spill_late_end_mem(r, e.gen, e.slot, t, &em.alloc0, em.mark0);
	} else if (e.slot >= 0) {
		sp_spill_late_end(r, e.gen, e.slot, t);
	}
}

/* Whether the calling thread's open block e is a call of this session still
 * open at its end: the session's freeze moved its region's gen on once. */
static int open_at_end(const struct sp_open_entry *e)
{
	const RegionObject *r = e->region;
	return e->slot >= 0 && e->gen + 1 == r->gen && (size_t)e->slot < r->buf.n &&
	       r->buf.ends[e->slot] == SP_NO_TIME;
}

/* A thread's block entered through sp_enter_nvtx whose range is still
 * pushed: its sp_open_mem's range (unused otherwise on a thread's stack). */
#define NVTX_PUSHED 1

void sp_regions_nvtx_end_open(void)
{
	for (size_t k = open_blocks.depth; k-- > 0;)
		if (open_blocks.m[k].range == NVTX_PUSHED)
			open_blocks.m[k].range = 0;   /* not again at its exit */
	/* Theirs and those of the decorated calls still running, whose own
	 * pops come later (sp_nvtx_pop_from). */
	sp_nvtx_pop_all();
}

void sp_regions_end_open(int64_t now)
{
	if (!sp_mem.installed)
		return;
	for (size_t k = open_blocks.depth; k-- > 0;) {
		const struct sp_open_entry *e = &open_blocks.v[k];
		RegionObject *r = e->region;
		if (r->buf.keep_values != SP_VALUES_ALLOC_BYTES || e->slot < 0)
			continue;
		if (open_at_end(e))
			sp_region_mem_close(r, (size_t)e->slot, open_blocks.m[k].alloc0, open_blocks.m[k].mark0);
		else if (e->gen + 1 < r->gen)
			sp_spill_late_end_mem(r, e->gen, e->slot, now, &open_blocks.m[k].alloc0,
					      open_blocks.m[k].mark0);
	}
}

static inline PyObject *region_exit(PyObject *self, int mem)
{
	int64_t t = sp_clock_ns();
	RegionObject *r = (RegionObject *)self;
	size_t d = open_blocks.depth;
	if (d && open_blocks.v[d - 1].region == r) {
		struct sp_open_entry *e = &open_blocks.v[d - 1];
		open_blocks.depth = d - 1;
		/* gen differs when the session was finalized inside the block. */
		if (e->slot >= 0 && r->gen == e->gen) {
			if (mem)
				sp_region_mem_close(r, (size_t)e->slot, open_blocks.m[d - 1].alloc0,
						    open_blocks.m[d - 1].mark0);
			sp_region_end(r, (size_t)e->slot, t);
		} else if (e->slot >= 0 && mem) {
			sp_spill_late_end_mem(r, e->gen, e->slot, t, &open_blocks.m[d - 1].alloc0,
					      open_blocks.m[d - 1].mark0);
		} else if (e->slot >= 0) {
			sp_spill_late_end(r, e->gen, e->slot, t);   /* handed over open (spill.c) */
		}
	} else {
		exit_below(r, t);
	}
	Py_RETURN_NONE;
}

PyObject *sp_exit_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return region_exit(self, 0);
}

PyObject *sp_exit_mem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return region_exit(self, 1);
}

/* --track-async: `with region:` records the task's lane and pushes the
 * entry on the task's own stack (sp_lane_blocks); `mem` and `nvtx`
 * (constants in each caller below): the call's allocations too
 * (sp_memory.h), or an NVTX range started by id (sp_nvtx.h: a task's calls
 * do not nest on its thread). */
static inline PyObject *enter_async(PyObject *self, int mem, int nvtx)
{
	RegionObject *r = (RegionObject *)self;
	int32_t lane = sp_async_lane();
	struct sp_blocks *s = sp_lane_blocks(lane);
	if (!s)
		return PyErr_NoMemory();
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (nvtx)
		s->m[s->depth].range = sp_nvtx_start(r->nvtx_name);
	s->v[s->depth++] = (struct sp_open_entry){r, i, r->gen};
	if (i >= 0) {
		if (r->buf.lanes)
			r->buf.lanes[i] = lane;
		r->buf.ends[i] = SP_NO_TIME;
		if (mem) {
			struct sp_open_mem *em = &s->m[s->depth - 1];
			r->buf.values[i] = 0;   /* a call still open at the end */
			em->mark0 = sp_mem_open();
			em->alloc0 = sp_mem_allocated();
		}
		r->buf.starts[i] = sp_clock_ns();
	}
	return Py_NewRef(self);
}

PyObject *sp_enter_async(PyObject *self, PyObject *unused)
{
	return enter_async(self, 0, 0);
}

PyObject *sp_enter_async_mem(PyObject *self, PyObject *unused)
{
	return enter_async(self, 1, 0);
}

PyObject *sp_enter_async_nvtx(PyObject *self, PyObject *unused)
{
	return enter_async(self, 0, 1);
}

/* Closes the innermost open entry of this region in the task's stack. */
static inline PyObject *exit_async(PyObject *self, int mem, int nvtx)
{
	int64_t t = sp_clock_ns();
	RegionObject *r = (RegionObject *)self;
	struct sp_blocks *s = sp_lane_blocks_of(sp_async_lane());
	struct sp_open_entry e;
	struct sp_open_mem em;
	if (s && sp_blocks_take(s, r, &e, &em)) {
		if (e.slot >= 0 && r->gen == e.gen) {
			if (mem)
				sp_region_mem_close(r, (size_t)e.slot, em.alloc0, em.mark0);
			sp_region_end(r, (size_t)e.slot, t);
		} else if (e.slot >= 0 && mem) {
			sp_spill_late_end_mem(r, e.gen, e.slot, t, &em.alloc0, em.mark0);
		} else if (e.slot >= 0) {
			sp_spill_late_end(r, e.gen, e.slot, t);
		}
		if (nvtx)
			sp_nvtx_end(em.range);
		Py_RETURN_NONE;
	}
	/* Entered before the mode was on: on the thread's stack, if anywhere. */
	exit_below(r, t);
	Py_RETURN_NONE;
}

PyObject *sp_exit_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return exit_async(self, 0, 0);
}

PyObject *sp_exit_async_mem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return exit_async(self, 1, 0);
}

PyObject *sp_exit_async_nvtx(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return exit_async(self, 0, 1);
}

/* --line-profile, a region holding functions: the line hook runs in this
 * thread while the block does. Heavy anyway, so lanes are a branch here. */
PyObject *sp_enter_lines(PyObject *self, PyObject *unused)
{
	if (sp_linetrace_hold() != 0)
		return NULL;
	RegionObject *r = (RegionObject *)self;
	PyObject *res = sp_mode.track_async ? sp_enter_async(self, unused)
		: r->buf.keep_lanes ? sp_enter_threads(self, unused) : sp_enter_timed(self, unused);
	if (!res)
		sp_linetrace_release();
	return res;
}

PyObject *sp_exit_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *res = sp_mode.track_async ? sp_exit_async(self, args, nargs) : sp_exit_timed(self, args, nargs);
	sp_linetrace_release();
	return res;
}

/* --likwid: each call is also a LIKWID marker region (sp_likwid.h), inside
 * the recorded interval; lanes as the mode says (a branch here: the
 * library's calls cost far more). */
PyObject *sp_enter_likwid(PyObject *self, PyObject *unused)
{
	const char *tag = PyUnicode_AsUTF8(((RegionObject *)self)->name);
	if (!tag)
		return NULL;
	PyObject *res = sp_mode.threads ? sp_enter_threads(self, unused) : sp_enter_timed(self, unused);
	if (res)
		sp_likwid_enter(((RegionObject *)self)->likwid_id, tag);
	return res;
}

PyObject *sp_exit_likwid(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	const char *tag = PyUnicode_AsUTF8(((RegionObject *)self)->name);
	if (tag)
		sp_likwid_leave(((RegionObject *)self)->likwid_id, tag);
	else
		PyErr_Clear();   /* its entry could not start it either */
	return sp_exit_timed(self, args, nargs);
}

/* --nvtx: each call also an NVTX range on its thread (sp_nvtx.h), pushed
 * before the recorded interval starts and popped after it ends, so the
 * range holds the call as recorded; lanes as the mode says (a branch
 * here, as for LIKWID). */
PyObject *sp_enter_nvtx(PyObject *self, PyObject *unused)
{
	sp_nvtx_push(((RegionObject *)self)->nvtx_name);
	PyObject *res = sp_mode.threads ? region_enter(self, 1, 0) : region_enter(self, 0, 0);
	if (!res)
		sp_nvtx_pop();
	else
		open_blocks.m[open_blocks.depth - 1].range = NVTX_PUSHED;
	return res;
}

/* The range is popped when the block's entry still holds it: not when the
 * end of the session popped it already (sp_regions_nvtx_end_open), nor for
 * an exit with no entry in this thread (its range is another thread's). */
PyObject *sp_exit_nvtx(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	int pushed = 0;
	for (size_t k = open_blocks.depth; k-- > 0;)
		if (open_blocks.v[k].region == (RegionObject *)self) {   /* the entry region_exit takes */
			pushed = open_blocks.m[k].range == NVTX_PUSHED;
			break;
		}
	PyObject *res = region_exit(self, 0);
	if (pushed)
		sp_nvtx_pop();
	return res;
}

/* --gpu: the device synchronised at each call's entry, before its start,
 * and at its exit, before its end, the wait added to the region's
 * gpu_wait_ns (sp_gpu.h); with --nvtx the range too (branches here: a
 * synchronisation costs far more). */
PyObject *sp_enter_gpu(PyObject *self, PyObject *unused)
{
	sp_gpu_sync();
	return sp_mode.nvtx ? sp_enter_nvtx(self, unused)
		: sp_mode.threads ? region_enter(self, 1, 0) : region_enter(self, 0, 0);
}

PyObject *sp_exit_gpu(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	((RegionObject *)self)->gpu_wait_ns += sp_gpu_wait();
	return sp_mode.nvtx ? sp_exit_nvtx(self, args, nargs) : region_exit(self, 0);
}

/* Aggregation mode: count the call, keep no event (sp_aggregate.h). */
PyObject *sp_enter_agg(PyObject *self, PyObject *unused)
{
	if (sp_agg_push((RegionObject *)self) != 0)
		return NULL;
	return Py_NewRef(self);
}

PyObject *sp_exit_agg(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	sp_agg_pop((RegionObject *)self);
	Py_RETURN_NONE;
}

PyObject *sp_enter_disabled(PyObject *self, PyObject *unused)
{
	if (__builtin_expect(sp_mode.finished, 0))
		sp_mode_used_after_finalize_slow(((RegionObject *)self)->name);
	return Py_NewRef(self);
}

PyObject *sp_exit_disabled(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	Py_RETURN_NONE;
}

int sp_region_paths_init(void)
{
	if (open_blocks_key_made)
		return 0;
	if (pthread_key_create(&open_blocks_key, open_blocks_free) != 0) {
		PyErr_SetString(PyExc_RuntimeError, "cannot create a thread-specific key");
		return -1;
	}
	open_blocks_key_made = 1;
	return 0;
}
