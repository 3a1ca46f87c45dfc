/* mode.c - the recording mode, owned here (sp_mode.h): chosen at setup(),
 * changed during the run (lanes by default, the end of a session, no
 * session) and applied to what records through the operations module.c
 * gives. Every function runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "sp_gpu.h"
#include "sp_likwid.h"
#include "sp_memory.h"
#include "sp_mode.h"
#include "sp_mpicalls.h"
#include "sp_nvtx.h"
#include "sp_recorder.h"

struct sp_recmode sp_mode = { .buffer_limit = SP_DEFAULT_BUFFER_LIMIT };

static struct sp_mode_ops ops;

void sp_mode_init(const struct sp_mode_ops *o)
{
	ops = *o;
}

/* --mpi-calls without --track-threads: the lane of the thread making an
 * MPI call once it has one (it recorded a call, lanes by default), else 0:
 * never the GIL, which the thread may not be able to take (see below). */
static int32_t mpi_call_lane_known(void)
{
	int32_t lane = sp_my_lane;
	return lane > 0 ? lane : 0;
}

/* --mpi-calls with --track-threads: the lane of the thread making an MPI
 * call, which may not hold the GIL (mpi4py releases it around blocking
 * calls); a thread's first lane is taken under the GIL. */
static int32_t mpi_call_lane(void)
{
	if (sp_my_lane >= 0)
		return sp_my_lane;
	PyGILState_STATE g = PyGILState_Ensure();
	int32_t lane = sp_lane_assign();
	PyGILState_Release(g);
	return lane;
}

/* What the mode of s needs before anything changes: asyncio's functions,
 * the allocators wrapped, LIKWID loaded. 0, or -1 with an exception. */
static int mode_prepare(const struct sp_settings *s)
{
	if (s->disable)
		return 0;
	if (s->track_async && sp_async_init() != 0)
		return -1;
	/* After the interpreter started (setup() from a script, not `run
	 * --memory`): the requested bytes only (sp_memory.h). */
	if (s->memory && sp_mem_install(0) != 0) {
		PyErr_SetString(PyExc_RuntimeError, "use_memray: the Python allocators cannot be read");
		return -1;
	}
	if (s->likwid) {
		char why[256];
		if (sp_likwid_load(why, sizeof why) != 0) {
			PyErr_Format(PyExc_RuntimeError, "use_likwid: %s", why);
			return -1;
		}
	}
	if (s->mpi_calls && !sp_mpicalls_built()) {
		PyErr_SetString(PyExc_RuntimeError, "profile_mpi_calls: this scope-profiler was built without MPI");
		return -1;
	}
	return 0;
}

int sp_mode_apply(const struct sp_settings *s)
{
	if (mode_prepare(s) != 0)
		return -1;
	int on = !s->disable;
	sp_mode.buffer_limit = (size_t)s->buffer_limit;
	sp_mode.disabled = s->disable;
	sp_mode.idle = 0;
	sp_mode.finished = 0;
	sp_mode.recursive_all = s->recursive;
	sp_mode.aggregate = on && s->aggregate;
	sp_mode.track_async = on && s->track_async;
	sp_mode.threads = sp_mode.threads || s->track_threads || s->track_async;
	sp_mode.lines = on && s->line_profile;
	sp_mode.memory = on && s->memory;
	sp_mode.likwid = on && s->likwid;
	/* Without NVTX in this build: said once, and the run goes on (sp_nvtx.h). */
	sp_mode.nvtx = on && s->nvtx && sp_nvtx_open();
	/* Without a usable device: said once, timed without synchronising. */
	sp_mode.gpu = on && s->gpu && sp_gpu_open();
	sp_mode.memory_kept |= sp_mode.memory;
	/* Without track_threads, lanes go on when a second thread records. */
	sp_mode.auto_lanes = on && !sp_mode.aggregate && !sp_mode.threads;
	sp_mode.hook_special = sp_mode.aggregate || sp_mode.memory || sp_mode.nvtx;
	ops.hook_mode();
	if (on && s->mpi_calls) {
		/* MPI calls always carry their thread's lane: they may be made
		 * in any thread, without the GIL (no switch to lanes then). */
		if (sp_mpicalls_start(sp_mode.buffer_limit, sp_mode.threads ? mpi_call_lane : mpi_call_lane_known) != 0) {
			PyErr_NoMemory();
			return -1;
		}
	} else {
		sp_mpicalls_stop();
	}
	return ops.regions_apply() == 0 && ops.wrappers_apply() == 0 ? 0 : -1;
}

void sp_mode_off(size_t buffer_limit)
{
	struct sp_settings off = { .disable = 1, .buffer_limit = (long long)buffer_limit };
	if (sp_mode_apply(&off) != 0)
		PyErr_Clear();
	sp_mode.idle = 1;
}

void sp_mode_freeze(void)
{
	ops.hook_stop_all();
	sp_mode.disabled = 1;
	sp_mode.aggregate = sp_mode.track_async = sp_mode.lines = sp_mode.memory = 0;
	sp_mode.hook_special = 0;
	ops.regions_freeze();   /* --nvtx: the thread's open ranges end (sp_region_paths.h) */
	sp_mode.nvtx = 0;
	ops.wrappers_freeze();
	sp_mpicalls_stop();
}

void sp_mode_hook_stop(void)
{
	ops.hook_stop_all();
}

void sp_mode_reset(void)
{
	ops.hook_stop_all();
	sp_mode.threads = sp_mode.memory_kept = 0;
}

int sp_mode_reapply(void)
{
	return ops.regions_apply() == 0 && ops.wrappers_apply() == 0 ? 0 : -1;
}

static unsigned long finished_thread;   /* finished == 2: the thread that wrote the profile */

void sp_mode_set_finished(int on)
{
	sp_mode.finished = on;
	if (on == 2)
		finished_thread = PyThread_get_thread_ident();
}

int sp_mode_other_thread_slow(void)
{
	if (!sp_mode.auto_lanes)
		return -1;
	sp_mode.threads = 1;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	if (ops.regions_apply() != 0) {
		/* A region could not get its lanes column: all back as they were
		 * (the columns made stay, unused), each class without lanes. */
		PyErr_Clear();
		sp_mode.threads = 0;
		if (ops.regions_apply() != 0)
			PyErr_Clear();   /* only the (empty) buffers' sizes failed */
		sp_mode.auto_lanes = 0;
		PyErr_Restore(type, value, tb);
		return -1;
	}
	PyErr_Restore(type, value, tb);
	ops.wrappers_choose();
	ops.hook_lanes_on();
	sp_mode.auto_lanes = 0;
	return 0;
}

__attribute__((cold)) void sp_mode_used_after_finalize_slow(PyObject *name)
{
	/* After the run's end: a daemon thread still running records nothing
	 * more, as documented; the thread that wrote the profile is in
	 * Python's shutdown (a module global's __del__). */
	int at_end = sp_mode.finished == 2;
	if (at_end && PyThread_get_thread_ident() != finished_thread)
		return;
	sp_mode.finished = 0;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	if (at_end)
		PySys_FormatStderr("scope-profiler: warning: region %R used in Python's shutdown, after the "
				   "profile was written (a __del__ of a module's global): not recorded\n", name);
	else
		PySys_FormatStderr("scope-profiler: warning: region %R used after finalize(): calls after "
				   "finalize() are not recorded (setup() starts a new session)\n", name);
	PyErr_Restore(type, value, tb);
}
