/* sp_blocks.h - a stack of open `with` blocks (blocks.c): one per thread
 * (region_paths.c) and one per task lane (lanes.c, --track-async), so that
 * an exit closes its own call however calls of other threads or tasks
 * interleave. Used under the GIL; nothing here runs Python code. */
#ifndef SP_BLOCKS_H
#define SP_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

struct sp_region;

/* One open block: its region, its event slot (-1: dropped, out of memory)
 * and the region's gen at entry (a reset moves it on: the slot is then no
 * longer the block's). */
struct sp_open_entry {
	struct sp_region *region;
	ptrdiff_t slot;
	uint64_t gen;
};

/* The memory mode's counters at a block's entry (sp_memory.h), and on a
 * task's stack the --nvtx range of the block (sp_nvtx.h), in an array
 * beside the entries that only those paths touch: the other modes keep
 * their 24-byte entries. */
struct sp_open_mem {
	int64_t alloc0, mark0;
	uint64_t range;
};

/* Innermost last; v[cap] and m[cap] are one allocation (v's pointer). */
struct sp_blocks {
	struct sp_open_entry *v;
	struct sp_open_mem *m;
	size_t depth, cap;
};

/* Twice the room (16 entries the first time); 0, or -1 when out of memory
 * (the stack unchanged). The caller that frees stacks at a thread's exit
 * follows v. */
int sp_blocks_grow(struct sp_blocks *b);

/* The innermost entry of r taken out, the entries above it moved down: 1
 * with *e and *m set, 0 when r has none open here. */
int sp_blocks_take(struct sp_blocks *b, const struct sp_region *r, struct sp_open_entry *e,
		   struct sp_open_mem *m);

/* Frees the stack; it is empty and can grow again. */
void sp_blocks_free(struct sp_blocks *b);

#endif
