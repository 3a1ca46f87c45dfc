/* sp_pack_layout.h - one rank's profile as one flat byte buffer
 * (include/sp_pack.h): its layout, which pack.c writes and unpack.c reads
 * back, the one mirroring the other item by item.
 *
 * The layout (native byte order, both ends run the same executable). Every
 * item starts at an offset that is a multiple of 8 from the buffer's start,
 * so the event columns are 8-byte aligned whenever the buffer is:
 *
 *   header      u32 magic "SPPK", u32 version, u64 total length in bytes,
 *               u64 flags (SP_PK_EVENTS, SP_PK_HOSTNAME, SP_PK_TREE)
 *   attributes  i64 rank, run_start_ns, run_end_ns, pid, parent_pid, clock_offset_ns,
 *               dropped, u64 nregions, ntree, nlines, i64 tree_overlaps
 *   hostname    a string, present only with SP_PK_HOSTNAME
 *   regions     nregions times: name (string), struct sp_stats (64 bytes),
 *               u64 region flags (SP_PK_LANES, SP_PK_AGG, SP_PK_DROPPED,
 *               SP_PK_VALUES, SP_PK_PEAK, SP_PK_GPU), i64 dropped with
 *               SP_PK_DROPPED, i64 peak_bytes with SP_PK_PEAK, i64
 *               gpu_wait_ns with SP_PK_GPU, i64 value_kind and i64
 *               values_total with SP_PK_VALUES; with SP_PK_EVENTS:
 *               i64 starts[num_calls], i64 ends[num_calls], with
 *               SP_PK_VALUES i64 values[num_calls], and with
 *               SP_PK_LANES, i32 lanes[num_calls] zero-padded to 8 bytes
 *   tree        ntree struct sp_tree_node (24 bytes each)
 *   line tables nlines times: function, region, filename (strings),
 *               i64 first_line, u64 n, i64 hits[n], i64 time_ns[n], then
 *               n source strings (a NULL source, or a NULL line, packs as "")
 *   LIKWID      only with SP_PK_LIKWID: u64 nlikwid, then nlikwid times:
 *               region (string), u64 nthreads, nevents, f64
 *               events[nthreads * nevents], i64 count[nthreads],
 *               f64 time[nthreads], u64 nmrows, nmetrics, f64
 *               metrics[nmrows * nmetrics]
 *
 *   string      u64 length (without the NUL), the bytes, a NUL, zero padding
 *               to the next multiple of 8.
 *
 * What unpacking gives: hostname NULL when it was NULL; tree NULL when it was
 * NULL (an empty non-NULL tree stays non-NULL); with events, non-NULL starts
 * and ends for every region (zero calls too), lanes and values only where
 * packed;
 * without, NULL columns. Line tables always have non-NULL hits, time_ns and
 * source, every source line a string ("" where the rank had none).
 */
#ifndef SP_PACK_LAYOUT_H
#define SP_PACK_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"

#define SP_PK_MAGIC 0x4b505053u      /* "SPPK" read little-endian */
#define SP_PK_VERSION 6u

#define SP_PK_EVENTS 1u              /* header: event columns follow each region */
#define SP_PK_HOSTNAME 2u            /* header: a hostname string follows */
#define SP_PK_TREE 4u                /* header: rk->tree was non-NULL */
#define SP_PK_LIKWID 8u              /* header: LIKWID tables follow the line tables */
#define SP_PK_LANES 1u               /* region: a lanes column follows */
#define SP_PK_AGG 2u                 /* region: aggregates; i64 self_ns follows, no columns */
#define SP_PK_DROPPED 4u             /* region: i64 dropped follows the flags */
#define SP_PK_VALUES 8u              /* region: i64 kind and total follow; a values column */
#define SP_PK_PEAK 16u               /* region: i64 peak_bytes follows */
#define SP_PK_GPU 32u                /* region: i64 gpu_wait_ns follows (run --gpu) */

#define HEADER_BYTES 24u
#define ATTR_BYTES 88u
#define STATS_BYTES ((size_t)sizeof(struct sp_stats))
#define NODE_BYTES ((size_t)sizeof(struct sp_tree_node))

_Static_assert(sizeof(struct sp_stats) == 64, "sp_stats is packed as 64 bytes");
_Static_assert(sizeof(struct sp_tree_node) == 24, "sp_tree_node is packed as 24 bytes");

/* The smallest encodings, for bounding counts by the bytes left. */
#define MIN_STRING 16u                               /* length + NUL padded */
#define MIN_REGION (MIN_STRING + 64u + 8u)
#define MIN_TABLE (3u * MIN_STRING + 16u)
#define MIN_LINE (16u + MIN_STRING)                  /* hits, time_ns, source */
#define MIN_LIKWID (MIN_STRING + 16u + 16u)           /* name, sizes, a thread's count and time */

static inline size_t pad8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

#endif
