/* sp_mode.h - the recording mode (mode.c), its one owner: chosen at each
 * setup() from the session's settings, changed during the run only here
 * (lanes turned on when a second thread records, the end of a session, no
 * session), and applied from here to everything that records: the region
 * classes, the decorated functions' calls and the --recursive hook, which
 * then check nothing but what they read of sp_mode. As _lsprof.c keeps a
 * profiler's mode in one flags word that only enable() and disable()
 * change. Include <Python.h> first. */
#ifndef SP_MODE_H
#define SP_MODE_H

#include <stddef.h>
#include <stdint.h>

#include "sp_lanes.h"
#include "sp_session.h"

/* The mode. Read by the recording files; written by mode.c alone. */
struct sp_recmode {
	size_t buffer_limit;          /* the capacity regions double up to from a few events */
	int disabled;                 /* deactivate_profiling, or no session */
	int idle;                     /* with disabled: no session (before setup(), after
				       * finalize()); decorating still wraps, so that the
				       * next setup() turns the wrapper on */
	int finished;                 /* with idle: finalize() ended a session and no
				       * region has been used since (then one warning) */
	int recursive_all;            /* recursive_profile: every wrapper runs the hook */
	int aggregate;                /* aggregation_mode */
	int track_async;              /* a lane per asyncio task */
	int threads;                  /* events keep a lane (threads or async); once on,
				       * until the events are reset */
	int lines;                    /* use_line_profiler */
	int memory;                   /* use_memray: allocations per call (sp_memory.h) */
	int memory_kept;              /* the events carry allocation values: setup() keeps
				       * use_memray on until they are reset */
	int likwid;                   /* use_likwid: LIKWID marker regions (sp_likwid.h);
				       * kept through the freeze, for the end of the session */
	int nvtx;                     /* use_nvtx: each call an NVTX range (sp_nvtx.h) */
	int gpu;                      /* use_gpu: the device synchronised around each call
				       * (sp_gpu.h); kept through the freeze, for the end
				       * of the session */
	int auto_lanes;               /* lanes go on when a thread other than lane 0's
				       * records (sp_mode_check_thread) */
	int hook_special;             /* aggregate, memory or nvtx: the --recursive hook's one check */
};
extern struct sp_recmode sp_mode;

/* What applying a mode means to the files that record, which read the
 * mode and are not known here: given once, at module init (module.c). */
struct sp_mode_ops {
	int (*regions_apply)(void);    /* every region to the mode's class and columns;
					* -1 with MemoryError */
	void (*regions_freeze)(void);  /* every region records nothing, in every thread */
	int (*wrappers_apply)(void);   /* every decorated function's call chosen again (line
					* mode times its lines); -1 with an exception */
	void (*wrappers_choose)(void); /* the same, the call only (no Python code) */
	void (*wrappers_freeze)(void); /* every decorated function calls through */
	void (*hook_mode)(void);       /* the --recursive hook threads start with */
	void (*hook_lanes_on)(void);   /* the hook records lanes in every thread */
	void (*hook_stop_all)(void);   /* the hook stops in every thread, its calls ended */
};
void sp_mode_init(const struct sp_mode_ops *ops);

/* setup(): the mode of s (its given fields; lanes, once on, stay on until
 * the events are reset), applied to every region and decorated function,
 * existing and future. 0, or -1 with an exception. */
int sp_mode_apply(const struct sp_settings *s);

/* No session: regions record nothing until the next setup() (decorators
 * still wrap, for that setup()); buffer_limit as the session had it. */
void sp_mode_off(size_t buffer_limit);

/* The end of a session, under the GIL, before its events are read: every
 * region and decorated function records nothing from now on, in every
 * thread (the --recursive hook stops everywhere), and calls still open in
 * any thread will not write their end (their regions' gen moves on); the
 * open calls' ends are then set by whoever reads the events. So the events
 * stay unchanged while the GIL is released to write them. The next
 * sp_mode_apply records again. */
void sp_mode_freeze(void);

/* The --recursive hook stops in every thread, its open calls ended now
 * (profile(recursive=True) calls still running at finalize()). */
void sp_mode_hook_stop(void);

/* The events are about to be forgotten: the hook stops in every thread
 * (its open calls point into them), and lanes and allocation values go off
 * until asked for. The caller applies a mode after (sp_mode_apply,
 * sp_mode_off). */
void sp_mode_reset(void);

/* Outside a session, after sp_mode_reset: the mode as it is, applied
 * again to every region and decorated function (their columns were
 * freed). 0, or -1 with an exception. */
int sp_mode_reapply(void);

/* finalize() ended the session (on 1): a region used from now on is said
 * once, until the next setup(); 2: the run's end wrote the profile, a
 * region used in Python's shutdown by the thread that wrote it (a module
 * global's __del__) is said once (a daemon thread's, not); 0: not said (an
 * exec failed and says so itself). */
void sp_mode_set_finished(int on);

/* The slow path of sp_mode_check_thread: lanes by default. A mode without
 * lanes (time-only, memory, lines, LIKWID) turns them on when a thread
 * other than lane 0's (the thread that imported the module) records, so
 * that calls of different threads never nest in each other; until then
 * one thread recorded, and its events take lane 0. Every region keeps a
 * lanes column from now on (its events so far in lane 0) and takes the
 * lanes class, the wrappers and the --recursive hook (every thread's)
 * record lanes. Runs no Python code. 0, or -1 when lanes stay off (not
 * asked for, or out of memory; no exception set). */
int sp_mode_other_thread_slow(void);

/* Whether a decorated function's calls run the --recursive hook under
 * them: profile(recursive=True) (recursive 1), or recursive_profile / run
 * --recursive where the decorator said nothing (0); recursive=False -1. */
static inline int sp_mode_hooked(int recursive)
{
	return recursive > 0 || (sp_mode.recursive_all && recursive == 0);
}

/* First on a recording path without lanes, before its event slot is
 * reserved. 1 when the lanes were turned on just now: the caller records
 * this call with lanes. */
static inline int sp_mode_check_thread(void)
{
	return __builtin_expect(sp_my_lane != 0, 0) && sp_mode_other_thread_slow() == 0;
}

/* The slow path of the disabled classes when sp_mode.finished: a region
 * (called name) used after finalize() is said once; never raises. */
void sp_mode_used_after_finalize_slow(PyObject *name);

#endif
