/* sp_profile.h - the in-memory profile model shared by the recorder's writer,
 * the HDF5 reader, the analysis and the renderers: ranks -> regions -> events. */
#ifndef SP_PROFILE_H
#define SP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "sp_error.h"

/* Summary statistics of one region on one rank; durations are end - start. */
struct sp_stats {
	int64_t num_calls;
	int64_t total_ns;
	int64_t min_ns, max_ns;        /* 0 when num_calls == 0 */
	double mean_ns, std_ns;        /* population standard deviation */
	int64_t first_start_ns;        /* SP_NO_TIME when num_calls == 0 */
	int64_t last_end_ns;           /* SP_NO_TIME when num_calls == 0 */
};

/* What a region's per-call values are (run --memory, --mpi-calls). */
enum sp_value_kind {
	SP_VALUES_NONE = 0,
	SP_VALUES_ALLOC_BYTES = 1,     /* bytes allocated during the call, nested calls included */
	SP_VALUES_BYTES = 2,           /* bytes an MPI call moved (count times the type's size) */
};
#define SP_VALUE_KINDS 3
#define SP_NO_PEAK (-1)

/* The dataset name of a kind's column ("alloc_bytes", "bytes"), or NULL for
 * SP_VALUES_NONE or an unknown kind. */
const char *sp_value_kind_name(int kind);

/* One region on one rank. */
struct sp_region_data {
	char *name;                    /* exact name, UTF-8, owned by the profile */
	struct sp_stats stats;
	/* Event columns, num_calls each, in call (entry) order; NULL when they
	 * were not loaded (summary-only read). */
	int64_t *starts, *ends;
	/* The thread lane of each call (--track-threads), or NULL: one lane. */
	int32_t *lanes;
	int owns_events;               /* free starts/ends/lanes with the profile */
	/* Aggregation mode: only the stats were kept (no per-call events
	 * exist; starts/ends stay NULL) and self_ns holds the exclusive time. */
	int aggregate;
	int64_t self_ns;
	/* The total counting a recursive region once, as cProfile's cumulative
	 * time does (a call nested in a call of the same region, in its lane,
	 * adds nothing), as read from the file's cumulative_ns column; 0 when
	 * not known (sp_rank_region_times computes it from the tree). */
	int64_t cumulative_ns;
	/* Calls that were not recorded because memory ran out (stored as the
	 * region's dropped_events attribute when not 0). */
	int64_t dropped;
	/* A value per call (value_kind says what; SP_VALUES_NONE: none), num_calls
	 * of them with the events (NULL when the events are not loaded; freed
	 * with them when owns_events), and their sum, known without them. */
	int64_t *values;
	int64_t values_total;
	int value_kind;
	/* run --gpu (gpu_waited 1): the time the calls' exits waited for the
	 * device, inside their intervals (the file's gpu_wait_ns column).
	 * gpu_waited beside value_kind: one 8-byte slot holds both. */
	int gpu_waited;
	int64_t gpu_wait_ns;
	/* The peak of live bytes while the region was open (run --memory):
	 * known when > 0; 0 or SP_NO_PEAK when not. */
	int64_t peak_bytes;
};

/* One node of a rank's call tree. Nodes are stored parents first: a node's
 * parent index is always smaller than its own; siblings appear in the order
 * their first call started. */
struct sp_tree_node {
	int32_t parent;                /* -1 for a root */
	int32_t region;                /* index into the rank's regions[] */
	int64_t calls;
	int64_t total_ns;
};

/* Per-line timings of one function on one rank (--line-profile). Lines are
 * the function's source lines in order, first_line .. first_line + n - 1. */
struct sp_line_table {
	char *function;                /* qualified name, e.g. "Mesh.refine" */
	char *region;                  /* the region it was profiled under */
	char *filename;                /* source file as recorded */
	int32_t first_line;            /* line number of lines[0] (the def line) */
	size_t n;                      /* lines */
	int64_t *hits;                 /* line events per line */
	int64_t *time_ns;              /* time attributed to each line */
	char **source;                 /* n source lines, no newline; "" when unknown */
};

/* LIKWID's counters of one marker region on one rank (run --likwid): what
 * likwid_markerGetRegion gave for each thread that ran the region. */
struct sp_likwid_region {
	char *region;                  /* the region's name (a row of regions[]) */
	size_t nthreads, nevents;
	double *events;                /* nthreads x nevents, row-major */
	int64_t *count;                /* nthreads: the region's calls in each thread */
	double *time;                  /* nthreads: seconds in the region, per thread */
	/* LIKWID's derived metrics (its group's formulas, evaluated by LIKWID
	 * over its marker file under likwid-perfctr -m): nmrows x nmetrics,
	 * one row per thread in LIKWID's own thread order (not the rows
	 * above); NaN where LIKWID gave no finite value. nmetrics 0: none. The
	 * names are /metadata's likwid_metric_names. */
	size_t nmrows, nmetrics;
	double *metrics;
};

/* Frees what a LIKWID table owns (not the table itself). */
void sp_likwid_region_clear(struct sp_likwid_region *t);

struct sp_rank {
	int rank;
	int64_t run_start_ns;          /* SP_NO_TIME when unknown */
	int64_t run_end_ns;            /* SP_NO_TIME when unknown */
	int64_t pid;                   /* 0 when unknown */
	/* A child process of the run (run --subprocesses): its parent's pid;
	 * 0 for the run's own process and for MPI ranks. */
	int64_t parent_pid;
	char *hostname;                /* NULL when unknown; owned */
	/* A partial file of a run under --subprocesses (its own process): the
	 * folder its child processes streamed into, for `recover`; NULL when
	 * none; owned. */
	char *children_dir;
	/* This rank's clock minus rank 0's, measured at start under MPI; the
	 * stored timestamps are already on rank 0's clock (0 when serial). */
	int64_t clock_offset_ns;
	/* Calls not recorded on this rank because memory ran out, in every
	 * region (one whose every call was lost has no group of its own). */
	int64_t dropped;
	size_t nregions;
	struct sp_region_data *regions;
	size_t ntree;                  /* 0 with tree == NULL when not built */
	struct sp_tree_node *tree;
	/* Calls that started inside another call of their lane and outlived it
	 * (overlapped without nesting), as sp_tree_build found them or the
	 * file's tree says (its overlaps attribute; 0 in older files). */
	int64_t tree_overlaps;
	size_t nlines;                 /* line tables, one per profiled function */
	struct sp_line_table *lines;
	size_t nlikwid;                /* LIKWID marker regions (run --likwid) */
	struct sp_likwid_region *likwid;
};

/* How an attribute of /metadata is stored; the value is text in memory
 * either way. */
enum sp_kv_type {
	SP_KV_FIXED = 0,               /* a fixed-length UTF-8 string (h5py reads bytes) */
	SP_KV_TEXT,                    /* a variable-length UTF-8 string (h5py reads str) */
	SP_KV_INT,                     /* a 64-bit integer; value holds it in decimal */
};

/* An attribute of /metadata. */
struct sp_kv {
	char *key, *value;             /* owned */
	enum sp_kv_type type;
};

struct sp_profile {
	/* Read: the file's format version (3, 2 or 1; 0 for the plain
	 * hand-written layout). Written: 1 writes version 1, anything else
	 * the current version 2. */
	int format_version;
	/* Read: 1 for a streamed profile that is not finished (format version
	 * 3's OUT.partial: a run still going, or one that was killed): it
	 * holds the calls recorded up to partial_until_ns (the last flush, on
	 * the events' clock), a call still open then ending there;
	 * partial_until_ns means nothing when partial is 0. Not written. */
	int partial;
	int64_t partial_until_ns;
	size_t nranks;
	struct sp_rank *ranks;         /* sorted by rank number */
	size_t nmeta;
	struct sp_kv *meta;
	/* Writing: 0 stores contiguous datasets; 1..9 chunked datasets with
	 * shuffle and deflate at that level. */
	int compression;
};

/* Drops a region's event columns (freed when owned); its stats stay. */
void sp_region_drop_events(struct sp_region_data *rd);

/* Frees what a line table owns (not the table itself). */
void sp_line_table_clear(struct sp_line_table *t);

/* Frees everything the rank owns (not the rank itself) and zeroes it. */
void sp_rank_clear(struct sp_rank *rk);

/* Whether name is a row of the rank's regions. */
int sp_rank_has_region(const struct sp_rank *rk, const char *name);

/* Frees everything the profile owns, then the profile itself. NULL is fine. */
void sp_profile_free(struct sp_profile *p);

/* Computes stats from events (n pairs). */
void sp_stats_compute(struct sp_stats *st, const int64_t *starts, const int64_t *ends, size_t n);

/* The same statistics as sums, added to a call or a column at a time (the
 * end of a run's columns, a stream's blocks as they leave memory): counts
 * and sums only, the squares summed exactly in 128 bits (below 2^126 while
 * the total fits its 64 bits; a sum that would not fit is flagged, and the
 * stats are then computed from the events). */
__extension__ typedef __int128 sp_i128;
struct sp_stats_acc {
	int64_t n, total;
	int64_t min, max;              /* INT64_MAX, INT64_MIN while empty */
	int64_t last_end;              /* the latest end; INT64_MIN while empty */
	sp_i128 squares;               /* sum of the durations' squares */
	int overflow;                  /* a sum wrapped: not usable */
};

/* Empties an accumulator. */
void sp_stats_acc_init(struct sp_stats_acc *a);

/* One call from end - d to end. */
static inline void sp_stats_acc_add(struct sp_stats_acc *a, int64_t d, int64_t end)
{
	a->n++;
	if (__builtin_expect(__builtin_add_overflow(a->total, d, &a->total), 0))
		a->overflow = 1;
	if (__builtin_expect(d < a->min, 0))
		a->min = d;
	if (__builtin_expect(d > a->max, 0))
		a->max = d;
	if (__builtin_expect(end > a->last_end, 1))
		a->last_end = end;
	if (__builtin_expect(__builtin_add_overflow(a->squares, (sp_i128)d * d, &a->squares), 0))
		a->overflow = 1;
}

/* n calls from starts[i] to ends[i], in one pass (about half the
 * instructions of sp_stats_compute's two). */
void sp_stats_acc_columns(struct sp_stats_acc *a, const int64_t *starts, const int64_t *ends, size_t n);

/* The stats of the calls added to a, the first of which started at
 * first_start; what sp_stats_compute gives for the same calls (the mean and
 * standard deviation to the last bits or better: these sums are exact).
 * Returns 0, or -1 (st unchanged) when a sum overflowed. */
int sp_stats_from_acc(struct sp_stats *st, const struct sp_stats_acc *a, int64_t first_start);

/* Per region of rk, from its call tree (the nesting the tree reconstructs):
 * cumulative[i], region i's total counting a recursive region once (a call
 * nested inside a call of the same region adds nothing; calls in no node of
 * the tree count whole), and, when self is not NULL, self[i], its self time
 * (cProfile's tottime: its total less the time of the calls nested directly
 * in it; an aggregated region's recorded self_ns). Without a tree (tree
 * NULL), cumulative is the region's cumulative_ns where known, else its
 * raw total, and self its total. Returns 1 when every figure comes from a
 * tree or the file, 0 when some cumulative[i] fell back to the raw sum of a
 * region with calls, -1 out of memory (arrays untouched). */
int sp_rank_region_times(const struct sp_rank *rk, int64_t *cumulative, int64_t *self);

/* Returns the value of a metadata key, or NULL. */
const char *sp_profile_meta(const struct sp_profile *p, const char *key);

/* Sets key to a copy of value (of type) in the metadata *meta of *n
 * entries, replacing the key's value when it is there, else appending it.
 * 0, or -1 out of memory (the metadata unchanged). */
int sp_kv_set(struct sp_kv **meta, size_t *n, const char *key, const char *value, enum sp_kv_type type);

#endif
