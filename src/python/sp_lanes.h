/* sp_lanes.h - the lanes of --track-threads and --track-async (lanes.c): a
 * number per thread, in order of first use, and per asyncio task, with its
 * name for the file. Include <Python.h> first. */
#ifndef SP_LANES_H
#define SP_LANES_H

#include <stdint.h>

#include "sp_blocks.h"

/* The calling thread's lane: 0 for the first thread that asks (the thread
 * that imports the module: the main thread under `run`), then 1, 2, ...
 * in order of first use; -1 until it asks. */
extern _Thread_local int32_t sp_my_lane;

/* Gives the calling thread its lane (named after its threading.Thread);
 * never raises into the caller. */
int32_t sp_lane_assign(void);

static inline int32_t sp_current_lane(void)
{
	return sp_my_lane >= 0 ? sp_my_lane : sp_lane_assign();
}

/* --track-async: the calling task's lane, or the thread's outside any
 * task; never raises. */
int32_t sp_async_lane(void);

/* Imports asyncio's functions the first time the mode is chosen; -1 with
 * an exception. */
int sp_async_init(void);

/* --track-async: the `with` blocks open in a lane (a task, or a thread
 * outside any task), so that tasks interleaved on one thread each close
 * their own call; a task's stack goes when the task is done. The lane's
 * stack with room for one more entry, NULL when out of memory; or the
 * lane's stack as it is, NULL when it has none. */
struct sp_blocks *sp_lane_blocks(int32_t lane);
struct sp_blocks *sp_lane_blocks_of(int32_t lane);

/* The lanes' names, in lane order ("MainThread", "Task-3 (worker)"); the
 * module's _lane_names. Created at module init (sp_lanes_init; -1 with an
 * exception). */
extern PyObject *sp_lane_names;
int sp_lanes_init(void);

#endif
