/* sp_pack.h - one rank's profile as one flat byte buffer, for sending it to
 * rank 0 under MPI (see src/store/mpi.c). The layout (src/store/sp_pack_layout.h)
 * is private to one build: both ends run the same executable. */
#ifndef SP_PACK_H
#define SP_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "sp_profile.h"

/* Serialises rk: its attributes (rank, run start/end, pid, hostname,
 * clock_offset_ns), every region (name, stats and, with with_events, the
 * start/end columns and lanes when present), the call tree and the line
 * tables. `shift` is subtracted from every timestamp (run start/end, event
 * starts and ends, first_start_ns/last_end_ns; SP_NO_TIME stays as is), to
 * put the rank's times on rank 0's clock. *buf is malloc'd; columns start at
 * 8-byte aligned offsets. Returns SP_ENOMEM or SP_EINVAL (rk inconsistent). */
enum sp_err sp_rank_pack(const struct sp_rank *rk, int with_events, int64_t shift, void **buf,
			 size_t *len, struct sp_error *err);

/* Fills *out (zeroed first) from a buffer made by sp_rank_pack. The event
 * columns point into buf (owns_events 0: buf must outlive them, and is
 * copied when not 8-byte aligned); everything else is owned by *out (free
 * with sp_rank_clear). Checks every length and offset: a damaged buffer gives
 * SP_ECORRUPT, never a read outside buf; SP_ENOMEM. On failure *out is
 * empty. */
enum sp_err sp_rank_unpack(const void *buf, size_t len, struct sp_rank *out, struct sp_error *err);

#endif
