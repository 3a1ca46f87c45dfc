/* sp_nest.h - call nesting by containment, computed in one place for every
 * consumer: the call tree (summary, diff), folded stacks (export) and the
 * Python read API's call_stack() and events().
 *
 * The rule. Calls nest only within their lane (thread). Within a lane the
 * calls are taken in one order: start ascending; on equal starts the longer
 * call first (it is the parent); then the lower region index; then the
 * earlier call of that region. A call's parent is the innermost call taken
 * before it in its lane that contains it: it starts before that call's end
 * and ends no later (a partial overlap is a sibling, and closes the older
 * call; a zero-length call at another's end is not inside it). */
#ifndef SP_NEST_H
#define SP_NEST_H

#include <stddef.h>
#include <stdint.h>

#include "sp_error.h"
#include "sp_profile.h"

/* One region's calls as the walk reads them (in place, not copied). */
struct sp_nest_column {
	const int64_t *starts, *ends;
	const int32_t *lanes;          /* NULL: every call in lane 0 */
	size_t n;
};

/* One call as the walk visits it. */
struct sp_nest_call {
	int64_t start, end;
	int32_t region;                /* index into the columns */
	int32_t lane;
	size_t call;                   /* index within the region's columns */
	uint64_t pos;                  /* 0, 1, ...: the order of the visits */
	size_t depth;                  /* calls of its lane that contain it */
	int overlapped;                /* it started inside a call of its lane that
					* ended before it: overlapped without nesting */
};

/* The visitor: called once per call, each call after its parent; parent_tag
 * is the tag the visitor set for the parent (-1 for a root). Stores this
 * call's tag in *tag; returns 0, or -1 to stop the walk (out of memory). */
typedef int (*sp_nest_fn)(void *ctx, const struct sp_nest_call *c, int64_t parent_tag,
			  int64_t *tag);

enum {
	SP_NEST_ALWAYS_SORT = 1,       /* tests: visit every column through a sorted copy */
};

/* Visits every call of cols[0..ncols) in time order over all lanes (within
 * one lane: the rule's order), each with its parent's tag. Columns already
 * in the rule's order are read in place (memory in O(columns + nesting
 * depth)); one out of order costs a size_t per call of its own. Returns
 * SP_OK, SP_ENOMEM (also when the visitor stops; err says so), or SP_EINVAL
 * for more than INT32_MAX columns. */
enum sp_err sp_nest_walk(const struct sp_nest_column *cols, size_t ncols, unsigned flags,
			 sp_nest_fn fn, void *ctx, struct sp_error *err);

/* One rank's nesting, per call, in the rank's order of calls: region 0's
 * calls in call order, then region 1's, ... (call k of region r at
 * base[r] + k, base being the running sum of num_calls). */
struct sp_nest {
	size_t n;
	int64_t *id;                   /* the call's place in lane order: lanes ascending,
					* then the rule's order (0 .. n-1) */
	int64_t *parent;               /* the parent's id, or -1 for a root; always < id */
};

/* Computes the nesting of rk's calls (every region's events must be loaded)
 * into *out, which the caller frees with sp_nest_free. Returns SP_OK,
 * SP_EINVAL when a region with calls has no events loaded, SP_ENOMEM. */
enum sp_err sp_nest_rank(const struct sp_rank *rk, struct sp_nest *out, struct sp_error *err);

/* Frees what sp_nest_rank allocated; *nest is empty again. */
void sp_nest_free(struct sp_nest *nest);

#endif
