/* finalize.c - the end of a session: the live regions become a profile
 * (events borrowed, calls still open closed now), which is written
 * (collectively under MPI), rendered, and handed to the read API when
 * asked. What calls this and when is session.c's. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sp_aggregate.h"
#include "sp_children.h"
#include "sp_clock.h"
#include "sp_finalize.h"
#include "sp_h5.h"
#include "sp_likwid.h"
#include "sp_linetrace.h"
#include "sp_merge.h"
#include "sp_mode.h"
#include "sp_mpi.h"
#include "sp_mpicalls.h"
#include "sp_nest.h"
#include "sp_outpath.h"
#include "sp_profile.h"
#include "sp_pyedge.h"
#include "sp_pyresults.h"
#include "sp_pytext.h"
#include "sp_region.h"
#include "sp_region_paths.h"
#include "sp_render.h"
#include "sp_spill.h"
#include "sp_stream.h"
#include "sp_tree.h"

/* A profile is being written (sp_final_run, the GIL released); read by
 * threads waiting without the GIL (exitphase.c). */
static _Atomic int writing;

int sp_final_writing(void)
{
	return writing;
}

/* os._exit(status) called by a thread while the profile was written. */
static _Atomic int exit_pending;
static _Atomic int exit_status;

void sp_final_exit_when_written(int status)
{
	exit_status = status;
	exit_pending = 1;
}

int sp_final_exit_pending(int *status)
{
	if (!exit_pending)
		return 0;
	*status = exit_status;
	return 1;
}

void sp_final_forked(void)
{
	writing = 0;
	exit_pending = 0;
}

/* Region -> index in the profile, for the aggregate call tree. */
struct region_index {
	RegionObject **r;
	size_t n;
};

static int32_t region_index_of(RegionObject *r, void *ctx)
{
	(void)ctx;
	return r->index;   /* set by add_live_regions */
}

/* Appends r's aggregated statistics (no events) to rk as one region;
 * 0, or -1 with a Python exception set. */
static int add_aggregate_region(struct sp_rank *rk, RegionObject *r)
{
	struct sp_region_data *rd = &rk->regions[rk->nregions];
	if (!(rd->name = sp_text_dup(r->name)))
		return -1;
	rk->nregions++;
	rd->aggregate = 1;
	rd->peak_bytes = r->peak_bytes;
	sp_agg_stats(&r->agg, &rd->stats, &rd->self_ns);
	return 0;
}

/* What the end of a session computes, from what it must produce: nothing
 * written or shown needs only the calls lost (for the warning); the line
 * tables alone need no region; a file, a summary, the read API's data or
 * the MPI merge need every region's statistics and the call tree. */
enum need {
	NEED_LOSSES,
	NEED_LINES,
	NEED_ALL,
};

/* r's calls still open end at `now`. */
static void end_open_calls(RegionObject *r, int64_t now)
{
	for (size_t i = 0; i < r->buf.n; i++)
		if (r->buf.ends[i] == SP_NO_TIME)
			sp_region_end(r, i, now);
}

/* Appends r to rk with its events borrowed (not copied), closing calls
 * still open at `now`; 0, or -1 with a Python exception set. */
static int add_event_region(struct sp_rank *rk, RegionObject *r, int64_t now)
{
	size_t n = r->buf.n;
	end_open_calls(r, now);
	struct sp_region_data *rd = &rk->regions[rk->nregions];
	if (!(rd->name = sp_text_dup(r->name)))
		return -1;
	rk->nregions++;
	rd->starts = r->buf.starts;
	rd->ends = r->buf.ends;
	rd->lanes = r->buf.keep_lanes ? r->buf.lanes : NULL;
	rd->owns_events = 0;
	rd->dropped = (int64_t)r->buf.dropped;
	rd->peak_bytes = r->peak_bytes;
	rd->gpu_waited = sp_mode.gpu;
	rd->gpu_wait_ns = r->gpu_wait_ns;
	if (r->buf.keep_values) {
		int64_t sum = 0;
		rd->values = r->buf.values;
		rd->value_kind = r->buf.keep_values;
		for (size_t i = 0; i < n; i++)
			sum = (int64_t)((uint64_t)sum + (uint64_t)rd->values[i]);
		rd->values_total = sum;
	}
	/* Nothing was streamed (sp_spill_cancel): the events in memory are
	 * every call's. Starts are taken in slot order (under the GIL, right
	 * after the slot is reserved): the first is the earliest. */
	struct sp_stats_acc acc;
	sp_stats_acc_init(&acc);
	sp_stats_acc_columns(&acc, rd->starts, rd->ends, n);
	if (sp_stats_from_acc(&rd->stats, &acc, n ? rd->starts[0] : SP_NO_TIME) != 0)
		sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
	return 0;
}

/* Appends r to rk by name with its calls lost only (for the warning: no
 * statistics, no events); 0, or -1 with a Python exception set. */
static int add_lost_region(struct sp_rank *rk, RegionObject *r)
{
	struct sp_region_data *rd = &rk->regions[rk->nregions];
	if (!(rd->name = sp_text_dup(r->name)))
		return -1;
	rk->nregions++;
	rd->dropped = (int64_t)r->buf.dropped;
	return 0;
}

/* A session that kept some calls as events and aggregated others (a
 * setup() turned aggregation_mode on, or off, during it) is written as
 * aggregates: the events go into the aggregation's call tree by their
 * nesting (the one rule, sp_nest.h) and into their regions' statistics,
 * and leave the buffers. Before, a region with both wrote its events
 * only, and the tree held the aggregated calls only. */
static int fold_visit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	RegionObject *r = ((RegionObject **)ctx)[c->region];
	int64_t first = r->agg.first, last = r->agg.last;
	int32_t node = sp_agg_node_get((int32_t)parent_tag, r);
	if (node < 0)
		return -1;
	sp_agg_count(r, node, c->start, c->end);
	/* Events and aggregated calls come in either order. */
	r->agg.first = first < c->start ? first : c->start;
	r->agg.last = last > c->end ? last : c->end;
	*tag = node;
	return 0;
}

/* 0, or -1 with a Python exception set (the aggregates may then hold some
 * of the events: the profile is not written). */
static int fold_events_into_aggregates(int64_t now)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	size_t n = 0;
	int aggregated = 0;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (r->streamed)
			return 0;      /* on disk already: written as events */
		n += r->buf.n > 0;
		aggregated |= r->agg.count > 0;
	}
	if (!n || !aggregated)
		return 0;
	struct sp_nest_column *cols = malloc(n * sizeof *cols);
	RegionObject **rs = malloc(n * sizeof *rs);
	if (!cols || !rs) {
		free(cols);
		free(rs);
		PyErr_NoMemory();
		return -1;
	}
	size_t i = 0;
	for (pos = 0; PyDict_Next(sp_registry, &pos, &k, &v);) {
		RegionObject *r = (RegionObject *)v;
		if (!r->buf.n)
			continue;
		end_open_calls(r, now);
		cols[i] = (struct sp_nest_column){ r->buf.starts, r->buf.ends,
						   r->buf.keep_lanes ? r->buf.lanes : NULL, r->buf.n };
		rs[i++] = r;
	}
	struct sp_error err = {0};
	enum sp_err rc = sp_nest_walk(cols, n, 0, fold_visit, rs, &err);
	if (rc == SP_OK) {
		for (i = 0; i < n; i++) {
			rs[i]->buf.n = 0;
			sp_stats_acc_init(&rs[i]->acc);
		}
		sp_agg_sum();
	} else if (!PyErr_Occurred()) {
		sp_py_err(rc, err.msg);
	}
	free(cols);
	free(rs);
	return rc == SP_OK ? 0 : -1;
}

/* Adds every registered region that recorded something to rk (room for
 * all of them allocated by the caller), each also to ix in the same order;
 * sets *aggregated when one holds aggregated calls. Unless need is
 * NEED_ALL, only the regions that lost calls, by name. 0, or -1 with a
 * Python exception set (the regions added so far stay rk's). */
static int add_live_regions(struct sp_rank *rk, struct region_index *ix, int64_t now, enum need need,
			    int *aggregated)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		r->index = -1;
		rk->dropped += (int64_t)r->buf.dropped;
		if (need != NEED_ALL) {
			if (r->buf.dropped && add_lost_region(rk, r) != 0)
				return -1;
			continue;
		}
		if (r->agg.count > 0 && r->buf.n == 0) {
			if (add_aggregate_region(rk, r) != 0)
				return -1;
			r->index = (int32_t)ix->n;
			ix->r[ix->n++] = r;
			*aggregated = 1;
			continue;
		}
		if (r->buf.n == 0)
			continue;
		r->index = (int32_t)ix->n;
		ix->r[ix->n++] = r;
		if (add_event_region(rk, r, now) != 0)
			return -1;
	}
	return 0;
}

/* Copies the metadata into p (and its "hostname" into rk); 0, or -1 with
 * MemoryError set (the pairs copied so far stay p's). */
static int copy_meta(struct sp_profile *p, struct sp_rank *rk, const struct sp_kv *meta,
		     size_t nmeta)
{
	if (nmeta && !(p->meta = calloc(nmeta, sizeof *p->meta)))
		goto nomem;
	for (size_t m = 0; m < nmeta; m++) {
		struct sp_kv *kv = &p->meta[p->nmeta];
		kv->key = strdup(meta[m].key);
		kv->value = strdup(meta[m].value);
		kv->type = meta[m].type;
		if (!kv->key || !kv->value) {
			free(kv->key);
			free(kv->value);
			goto nomem;
		}
		p->nmeta++;
		if (strcmp(kv->key, "hostname") == 0 && !rk->hostname && !(rk->hostname = strdup(kv->value)))
			goto nomem;
	}
	return 0;
nomem:
	PyErr_NoMemory();
	return -1;
}

/* --likwid: the counters of the rank's marker regions, and /metadata's
 * likwid_events and likwid_event_names (sp_likwid.h); 0, or -1 with an
 * exception. */
static int add_likwid(struct sp_profile *p, struct sp_rank *rk)
{
	size_t running = 0, replaced = 0;
	int rc;
	sp_likwid_stop_open();
	Py_BEGIN_ALLOW_THREADS
	rc = sp_likwid_collect(rk, &running, &replaced);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyErr_NoMemory();
		return -1;
	}
	if (running)
		fprintf(stderr, "scope-profiler: warning: rank %d: %zu thread%s that ran LIKWID marker regions "
			"still run%s: %s counters are not in the profile\n", rk->rank, running,
			running == 1 ? "" : "s", running == 1 ? "s" : "", running == 1 ? "its" : "their");
	if (replaced)
		fprintf(stderr, "scope-profiler: warning: rank %d: LIKWID gave %zu value%s not finite or a "
			"negative time: stored as 0\n", rk->rank, replaced, replaced == 1 ? "" : "s");
	/* With the GIL held: no Python thread can enter a marker region (and
	 * call LIKWID) while the API closes. */
	char *metric_names = NULL, why[256];
	rc = sp_likwid_metrics(rk, &metric_names, why, sizeof why);
	if (rc != 0) {
		PyErr_NoMemory();
		return -1;
	}
	if (why[0])
		fprintf(stderr, "scope-profiler: warning: rank %d: LIKWID's derived metrics are not in the "
			"profile: %s\n", rk->rank, why);
	const char *events = getenv("LIKWID_EVENTS");
	char *names = sp_likwid_event_names(rk->nlikwid ? rk->likwid[0].nevents : 0);
	size_t add = metric_names ? 3 : 2;
	struct sp_kv *kv = realloc(p->meta, (p->nmeta + add) * sizeof *kv);
	if (kv)
		p->meta = kv;
	if (!names || !kv) {
		free(names);
		free(metric_names);
		PyErr_NoMemory();
		return -1;
	}
	kv[p->nmeta] = (struct sp_kv){strdup("likwid_events"), strdup(events ? events : ""), SP_KV_TEXT};
	kv[p->nmeta + 1] = (struct sp_kv){strdup("likwid_event_names"), names, SP_KV_TEXT};
	if (metric_names)
		kv[p->nmeta + 2] = (struct sp_kv){strdup("likwid_metric_names"), metric_names, SP_KV_TEXT};
	p->nmeta += add;
	for (size_t i = p->nmeta - add; i < p->nmeta; i++)
		if (!kv[i].key || !kv[i].value) {
			PyErr_NoMemory();
			return -1;
		}
	return 0;
}

/* Builds a one-rank profile over the live regions (events borrowed, not
 * copied), closing calls still open at `now`, as much of it as need asks
 * for: with NEED_ALL every region's statistics, the call tree, the line
 * tables and a copy of the metadata. Sets a Python exception and returns
 * NULL on failure. */
static struct sp_profile *live_profile(int64_t now, int64_t run_start, const struct sp_kv *meta,
				       size_t nmeta, enum need need)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	struct sp_error err = {0};
	struct region_index ix = {NULL, 0};
	if (!p)
		return (struct sp_profile *)PyErr_NoMemory();
	p->format_version = 2;
	p->nranks = 1;
	p->ranks = calloc(1, sizeof *p->ranks);
	size_t nreg = (size_t)PyDict_GET_SIZE(sp_registry);
	size_t nslots = nreg + sp_mpicalls_count();   /* --mpi-calls: a region per MPI function */
	if (!p->ranks || !(p->ranks[0].regions = calloc(nslots ? nslots : 1, sizeof(struct sp_region_data))))
		goto nomem;
	struct sp_rank *rk = &p->ranks[0];
	rk->rank = sp_mpi_rank();
	rk->run_start_ns = run_start;
	rk->run_end_ns = now;
	rk->pid = (int64_t)getpid();
	/* Aggregation mode: the calls still open in this thread end now. */
	sp_agg_close_all(now);
	sp_agg_sum();
	int aggregated = 0;
	if (!(ix.r = calloc(nreg ? nreg : 1, sizeof(RegionObject *))))
		goto nomem;
	/* Calls still open end now (add_event_region; those of the hook ended
	 * at the freeze), the calling thread's `with` blocks with their
	 * allocations so far. */
	sp_regions_end_open(now);
	if ((need == NEED_ALL && fold_events_into_aggregates(now) != 0) ||
	    add_live_regions(rk, &ix, now, need, &aggregated) != 0 ||
	    (need == NEED_ALL && copy_meta(p, rk, meta, nmeta) != 0) ||
	    (need == NEED_ALL && sp_mode.likwid && add_likwid(p, rk) != 0) ||
	    (need != NEED_LOSSES && sp_linetrace_collect(rk, NULL) != 0))
		goto fail;
	if (need == NEED_ALL && aggregated && sp_agg_tree(rk, region_index_of, &ix, &err) != SP_OK) {
		sp_py_err(err.code, err.msg);
		goto fail;
	}
	free(ix.r);
	ix.r = NULL;
	/* The MPI calls (stopped at the freeze), a region per function. */
	if (sp_mpicalls_add(rk) < 0)
		goto nomem;
	/* The events' nesting by containment (src/report/nest.c's rule). */
	if (need == NEED_ALL && !aggregated && sp_tree_build(rk, &err) != SP_OK) {
		sp_py_err(err.code, err.msg);
		goto fail;
	}
	return p;
nomem:
	PyErr_NoMemory();
fail:
	free(ix.r);
	sp_profile_free(p);
	return NULL;
}

/* A one-rank profile with no regions: what a rank whose own profile could
 * not be built gives the MPI merge. NULL when memory runs out. */
static struct sp_profile *empty_profile(int64_t now, int64_t run_start)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	if (!p || !(p->ranks = calloc(1, sizeof *p->ranks)) ||
	    !(p->ranks[0].regions = calloc(1, sizeof(struct sp_region_data)))) {
		sp_profile_free(p);
		return NULL;
	}
	p->format_version = 2;
	p->nranks = 1;
	p->ranks[0].rank = sp_mpi_rank();
	p->ranks[0].run_start_ns = run_start;
	p->ranks[0].run_end_ns = now;
	p->ranks[0].pid = (int64_t)getpid();
	return p;
}

/* Nothing goes wrong silently: calls that memory could not hold (also kept
 * in the file), and exits from a thread that did not enter the call, are
 * said on stderr (each rank for itself, in one write). */
static void report_losses(const struct sp_profile *p, int collective)
{
	char *text = NULL, prefix[64];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return;
	if (collective)
		snprintf(prefix, sizeof prefix, "scope-profiler: warning: rank %d: ", p->ranks[0].rank);
	else
		snprintf(prefix, sizeof prefix, "scope-profiler: warning: ");
	sp_render_dropped(f, p, prefix);
	if (sp_unmatched_exits) {
		const char *name = PyUnicode_AsUTF8(sp_unmatched_region->name);
		if (!name)
			PyErr_Clear();
		fprintf(f, "%s%zu region exit%s came from a thread that had not entered the call "
			"(first: '%s'); such calls stay open until the end\n", prefix,
			sp_unmatched_exits, sp_unmatched_exits == 1 ? "" : "s", name ? name : "?");
	}
	if (fclose(f) == 0 && len)
		fputs(text, stderr);
	free(text);
}

/* A streamed session's profile (spill.c): its regions' statistics in
 * stream order, no events (they are in the file), with the metadata, line
 * tables and LIKWID counters that finish the file. NULL with an exception. */
static struct sp_profile *streamed_profile(int64_t now, int64_t run_start, const struct sp_kv *meta,
					   size_t nmeta)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	if (!p || !(p->ranks = calloc(1, sizeof *p->ranks))) {
		free(p);
		return (struct sp_profile *)PyErr_NoMemory();
	}
	p->format_version = 3;
	p->nranks = 1;
	struct sp_rank *rk = &p->ranks[0];
	rk->rank = sp_mpi_rank();
	rk->run_start_ns = run_start;
	rk->run_end_ns = now;
	rk->pid = (int64_t)getpid();
	/* The calling thread's `with` blocks still open get their
	 * allocations so far, as in a run written whole. */
	sp_regions_end_open(now);
	if (sp_spill_collect(rk, now) != 0 || copy_meta(p, rk, meta, nmeta) != 0 ||
	    (sp_mode.likwid && add_likwid(p, rk) != 0) || sp_linetrace_collect(rk, NULL) != 0) {
		sp_profile_free(p);
		return NULL;
	}
	return p;
}

/* A streamed run of at most sp_spill_readback_max() calls (2M for the
 * default budget) gets its call tree at the end, as a run written whole
 * does (its events read back from the partial file: about 2 MiB/ms, then
 * the tree, ~100 instructions a call); a longer one is left for the reader
 * to build (the end of the run stays short, and within the budget). */

/* The call tree of a streamed run into p's rank, from the calls in the
 * closed partial file. 0, or -1 with an exception. */
static int add_streamed_tree(struct sp_profile *p)
{
	struct sp_error err = {0};
	struct sp_profile *back = NULL;
	/* The calls are all handed over (streamed_profile): the regions'
	 * buffers, each grown to the most it held between two flushes, go
	 * before the calls are read back (scripts/bench_memory.py's sympy
	 * script under --flush-interval 0.2: 85 MiB at its peak before, 76). */
	sp_regions_release_empty();
	if (sp_stream_calls() > sp_spill_readback_max())
		return 0;
	if (sp_stream_close(&err) != SP_OK)
		return 0;   /* said by sp_spill_finish */
	enum sp_err rc;
	const char *partial = sp_stream_partial();
	Py_BEGIN_ALLOW_THREADS
	rc = sp_h5_read(partial, SP_READ_EVENTS, &back, &err);
	if (rc == SP_OK && back->nranks == 1 && back->ranks[0].nregions == p->ranks[0].nregions)
		rc = sp_tree_build(&back->ranks[0], &err);
	Py_END_ALLOW_THREADS
	if (rc == SP_OK && back->ranks[0].tree) {
		p->ranks[0].tree = back->ranks[0].tree;
		p->ranks[0].ntree = back->ranks[0].ntree;
		p->ranks[0].tree_overlaps = back->ranks[0].tree_overlaps;
		back->ranks[0].tree = NULL;
		back->ranks[0].ntree = 0;
	}
	sp_profile_free(back);
	if (rc == SP_ENOMEM) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;   /* unreadable: the file goes without a tree, the reader builds it */
}

static int merged_show(struct sp_final *f, const struct sp_merge_report *rep, struct sp_profile **back,
		       struct sp_h5_stream **st);

static volatile sig_atomic_t signalled;   /* sp_final_note_signal's signal */
static _Atomic long long signalled_at;       /* when the last came (CLOCK_MONOTONIC, ns) */

/* Async-signal-safe (a lock-free atomic store). */
void sp_final_note_signal(int sig)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	atomic_store(&signalled_at, (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
	signalled = sig;
}

/* Whether the run is ending by an exit signal, or an unhandled
 * KeyboardInterrupt (Ctrl-C, printed by now). The GIL held. */
static int ending_by_signal(void)
{
	return signalled || PySys_GetObject("last_type") == PyExc_KeyboardInterrupt;
}

/* run --subprocesses, the run's own process, its profile finished in
 * place as `own` (OUT.partial, which keeps the children's folder for
 * recover): its children's files join it into f->path (sp_merge_processes:
 * a group at a time, in bounded memory, as an MPI job's ranks; a child that
 * did not finish its file up to its last flush), and f counts them; own is
 * then removed. Until OUT is complete, the file there stays as it was: a
 * second signal, or SIGKILL, meanwhile leaves it and own, which recover
 * merges with the children as the end would have. 0, or -1 with an
 * exception (own then holds the run's own profile). */
static int merge_children(struct sp_final *f, const char *own, struct sp_merge_report *rep)
{
	struct sp_error err = {0};
	char **kids = NULL;
	const char **files = NULL;
	size_t nkids = 0;
	/* Ended by a signal (SIGTERM to the job's process group, a batch
	 * system's time limit, Ctrl-C): the children got it too and finish
	 * their files as this process does; up to 10 s for them (a loaded
	 * machine; the run's own deadline is as long), so that their calls
	 * after their last flush are in. A child that has the signal still
	 * to take (not run since: a loaded machine) counts too, and for the
	 * first second any child alive with no file yet (sp_children_ending). */
	if (ending_by_signal()) {
		int sig = signalled ? (int)signalled : SIGINT;   /* else Ctrl-C's KeyboardInterrupt */
		Py_BEGIN_ALLOW_THREADS
		for (int i = 0; i < 1000 && sp_children_ending(f->children_dir, i < 100, sig) > 0; i++)
			usleep(10000);
		Py_END_ALLOW_THREADS
	}
	enum sp_err r = sp_children_files(f->children_dir, &kids, &nkids, &err);
	if (r == SP_OK && nkids == 0) {
		sp_children_files_free(kids, nkids);
		/* No child's: the run's own is the profile. */
		if (sp_outpath_replaceable(f->path, &err) != SP_OK || rename(own, f->path) != 0) {
			PyErr_Format(PyExc_OSError, "cannot write %s; the profile stays in %s",
				     err.msg[0] ? err.msg : strerror(errno), own);
			return -1;
		}
		sp_outpath_note_committed(f->path);
		return 0;
	}
	if (r == SP_OK && (nkids > INT32_MAX - 1 || !(files = malloc((nkids + 1) * sizeof *files))))
		r = sp_error_set(&err, SP_ENOMEM, "out of memory merging the child profiles");
	/* The tests kill the run here, OUT not made yet. */
	if (r == SP_OK) {
		Py_BEGIN_ALLOW_THREADS
		sp_test_pause("SCOPE_PROFILER_TEST_MERGE_PAUSE_MS", "merging");
		Py_END_ALLOW_THREADS
	}
	if (r == SP_OK) {
		files[0] = own;
		for (size_t i = 0; i < nkids; i++)
			files[i + 1] = kids[i];
		Py_BEGIN_ALLOW_THREADS
		r = sp_merge_processes(files, (int)nkids + 1, f->path, NULL, rep, &err);
		Py_END_ALLOW_THREADS
	}
	free(files);
	/* The processes merged (proc-<PID>.h5 and proc-<PID>-2.h5, a second
	 * program after os.exec*: one process), as sp_children_merge counts
	 * them (kids is sorted by pid), and those from a partial file. */
	int64_t last = -1;
	for (int k = 1; r == SP_OK && k < rep->nranks && (size_t)k <= nkids; k++) {
		int64_t pid = sp_children_file_pid(kids[k - 1]);
		if (rep->ranks[k].state == SP_MERGE_NONE)
			continue;
		f->children_merged += pid < 0 || pid != last;
		f->children_recovered += rep->ranks[k].state == SP_MERGE_PARTIAL;
		last = pid;
	}
	sp_children_files_free(kids, nkids);
	if (r == SP_ENOMEM) {
		PyErr_NoMemory();
		return -1;
	}
	if (r != SP_OK) {
		PyErr_Format(PyExc_OSError, "cannot merge the child processes' profiles into %s: %s; the run's own "
			     "profile stays in %s (scope-profiler recover %s merges them)", f->path, err.msg, own, own);
		return -1;
	}
	unlink(own);
	return 0;
}

/* The end of a streamed session: the file finished (under --subprocesses
 * the children's joining it), then read back for what f asks to show or
 * hand over. 0, or -1 with an exception. */
static int final_streamed(struct sp_final *f, int64_t now)
{
	struct sp_profile *p = streamed_profile(now, f->run_start_ns, f->meta, f->nmeta), *back = NULL;
	struct sp_h5_stream *st = NULL;
	struct sp_merge_report rep = {0};
	struct sp_error err = {0};
	int rc = -1;
	if (!p)
		return -1;
	p->ranks[0].parent_pid = f->parent_pid;
	p->compression = f->compression;
	/* Calls dropped because the writer was behind are said by
	 * sp_spill_finish, in their own words; others (memory) here. */
	if ((uint64_t)p->ranks[0].dropped > sp_spill_dropped() || sp_unmatched_exits)
		report_losses(p, 0);
	/* Under --subprocesses the run's own file is finished in place, and
	 * OUT made only by the merge (merge_children). */
	const char *partial = f->children_dir ? sp_stream_partial() : NULL;
	char *own = partial ? strdup(partial) : NULL;
	if (partial && !own) {
		PyErr_NoMemory();
		goto out;
	}
	if (add_streamed_tree(p) != 0 || sp_spill_finish(p, own ? own : f->path) != 0) {
		free(own);
		goto out;
	}
	if (own && merge_children(f, own, &rep) != 0) {
		free(own);
		goto out;
	}
	free(own);
	/* What is shown is read back from the file; but a file without a
	 * tree (over sp_spill_readback_max() calls) would be read with every event,
	 * as many bytes as the run streamed: its summary is p's, its
	 * statistics without a tree (summary FILE builds it). The children's
	 * merged with it: as an MPI job's merge shows its file. */
	const struct sp_profile *show = p;
	if (rep.nranks > 1) {
		if ((f->render || f->render_lines || f->snapshot) && merged_show(f, &rep, &back, &st) != 0)
			goto out;
		show = back ? back : st ? sp_h5_stream_profile(st) : p;
	} else if (f->snapshot || ((f->render || f->render_lines) && p->ranks[0].tree)) {
		enum sp_err r;
		Py_BEGIN_ALLOW_THREADS
		r = sp_h5_read(f->path, f->snapshot ? SP_READ_EVENTS : SP_READ_SUMMARY, &back, &err);
		Py_END_ALLOW_THREADS
		if (r != SP_OK) {
			PyErr_Format(PyExc_OSError, "cannot read back the profile: %s", err.msg);
			goto out;
		}
		show = back;
	}
	if ((f->render && !(f->summary = sp_py_render(show, f->path, 0))) ||
	    (f->render_lines && !(f->lines = sp_py_render(show, f->path, f->lines_width))) ||
	    (f->snapshot && !(f->data = sp_results_data(back))))
		goto out;
	rc = 0;
out:
	sp_merge_report_free(&rep);
	sp_h5_stream_close(st);
	sp_profile_free(back);
	sp_profile_free(p);
	return rc;
}

/* ---- under MPI: every rank's own file, merged by rank 0 ---------------- */

/* The last end under MPI left the profile in the ranks' files. */
static int files_kept;

int sp_final_files_kept(void)
{
	return files_kept;
}

/* Sets key = value (of that enum sp_kv_type) in p's metadata; 0, or -1
 * with MemoryError set. */
static int meta_append(struct sp_profile *p, const char *key, const char *value, enum sp_kv_type type)
{
	if (sp_kv_set(&p->meta, &p->nmeta, key, value, type) != 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* Says the pending exception as a warning of this rank, and clears it. */
static void say_rank_error(const char *what)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyObject *s = value ? PyObject_Str(value) : NULL;
	const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
	PyErr_Clear();
	fprintf(stderr, "scope-profiler: warning: rank %d: %s: %s\n", sp_mpi_rank(), what, text ? text : "unknown error");
	Py_XDECREF(s);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
}

/* This rank's own file of a job whose calls streamed: its calls finished
 * into OUT.rank{r} as a serial streamed run finishes OUT (a rank that had
 * streamed nothing hands everything over now; one that recorded nothing
 * gets a file all the same). Rank 0's metadata gets the clocks' sync
 * error. With *own not NULL, the file is read back into it (the read
 * API's data of a rank other than 0). Returns what the rank leaves for the
 * merge (enum sp_merge_state); never raises: a failure is said here. */
static int finish_own(struct sp_final *f, int64_t now, struct sp_profile **own)
{
	if (!sp_stream_on()) {
		/* Its settings kept this rank's calls from streaming (another
		 * memory budget, a stream that could not start). */
		fprintf(stderr, "scope-profiler: warning: rank %d: its calls were not streamed while the other "
			"ranks' were; they are not in the profile\n", sp_mpi_rank());
		return SP_MERGE_NONE;
	}
	char *target = strdup(sp_stream_target());
	struct sp_profile *p = target ? streamed_profile(now, f->run_start_ns, f->meta, f->nmeta) : NULL;
	int state = SP_MERGE_PARTIAL;
	char sync[32];
	snprintf(sync, sizeof sync, "%lld", (long long)sp_mpi_sync_error());
	if (!target)
		PyErr_NoMemory();
	if (!p || (sp_mpi_rank() == 0 && meta_append(p, "clock_sync_error_ns", sync, SP_KV_INT) != 0)) {
		say_rank_error("cannot finish its profile");
		sp_spill_leave();   /* what is in its partial file is recovered by the merge */
		goto out;
	}
	sp_stream_want_file();
	p->ranks[0].parent_pid = f->parent_pid;
	p->compression = f->compression;
	if ((uint64_t)p->ranks[0].dropped > sp_spill_dropped() || sp_unmatched_exits)
		report_losses(p, 1);
	if (add_streamed_tree(p) != 0 || sp_spill_finish(p, target) != 0) {
		say_rank_error("cannot finish its profile");
		sp_spill_leave();
		goto out;
	}
	state = SP_MERGE_FINISHED;
	if (own) {
		struct sp_error err = {0};
		enum sp_err r;
		Py_BEGIN_ALLOW_THREADS
		r = sp_h5_read(target, SP_READ_EVENTS, own, &err);
		Py_END_ALLOW_THREADS
		if (r != SP_OK)
			fprintf(stderr, "scope-profiler: warning: rank %d: %s\n", sp_mpi_rank(), err.msg);
	}
out:
	sp_profile_free(p);
	free(target);
	return state;
}

/* Rank 0: what the end shows of the merged file: the summary read (when
 * every rank has its tree: no event is read), else its structure alone
 * (statistics, no tree: `summary FILE` builds the trees); the events too
 * for the read API's data. */
static int merged_show(struct sp_final *f, const struct sp_merge_report *rep, struct sp_profile **back,
		       struct sp_h5_stream **st)
{
	struct sp_error err = {0};
	enum sp_err r;
	int whole = f->snapshot || rep->all_trees;
	Py_BEGIN_ALLOW_THREADS
	if (whole)
		r = sp_h5_read(f->path, f->snapshot ? SP_READ_EVENTS : SP_READ_SUMMARY, back, &err);
	else
		r = sp_h5_stream_open(f->path, st, &err);
	Py_END_ALLOW_THREADS
	if (r != SP_OK) {
		PyErr_Format(PyExc_OSError, "cannot read back the profile: %s", err.msg);
		return -1;
	}
	return 0;
}

/* While a rank waits for the others at the end (sp_mpi_meet), its run
 * ended by an exit signal: when they have not come 0.3 s after it, the job
 * may be being taken down (a rank ended without coming: mpirun sends the
 * others SIGTERM, then SIGKILL a second later). One line says where this
 * rank's calls are, before a SIGKILL; the wait goes on (a rank only late
 * still merges). */
#define MEET_SAY_NS 300000000LL
struct meet_watch {
	const char *file;              /* this rank's finished file, or NULL */
	const char *job;               /* the output the ranks merge into */
	int64_t began;                 /* when the wait began (CLOCK_MONOTONIC, ns) */
	int said;
};

static int64_t mono_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int meet_said;   /* meet_watch said its line: the merge after it says it came */

/* The merge done (every rank): OUT is in place, for a signal's abandon
 * line; after meet_watch's line, the merge that came after all says so. */
static void meet_ended(const char *path)
{
	if (path)
		sp_outpath_note_committed(path);
	if (meet_said)
		fprintf(stderr, "scope-profiler: run: rank %d: the other ranks came after all; the profile is "
			"merged into %s\n", sp_mpi_rank(), path);
	meet_said = 0;
}

/* The exit signals' names (sigabbrev_np is glibc 2.32's: not a cluster's
 * RHEL 8). */
static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	case SIGXCPU: return "SIGXCPU";
	case SIGUSR1: return "SIGUSR1";
	case SIGUSR2: return "SIGUSR2";
	case SIGALRM: return "SIGALRM";
	case SIGVTALRM: return "SIGVTALRM";
	case SIGPROF: return "SIGPROF";
	case SIGPIPE: return "SIGPIPE";
	default: return "a signal";
	}
}

static void meet_watch(void *arg)
{
	struct meet_watch *w = arg;
	struct timespec now;
	if (w->said || !signalled || clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		return;
	int64_t at = (int64_t)atomic_load(&signalled_at);
	int64_t since = at > w->began ? at : w->began;
	if (mono_ns(&now) - since < MEET_SAY_NS)
		return;
	w->said = 1;
	meet_said = 1;
	char head[160];
	snprintf(head, sizeof head, "scope-profiler: run: rank %d: ended by %s, and the other ranks have not "
		 "come to merge the profile yet", sp_mpi_rank(), signal_name((int)signalled));
	if (w->file)
		fprintf(stderr, "%s; its calls are in %s should the job end first (scope-profiler recover %s "
			"merges the ranks' files)\n", head, w->file, w->job);
	else
		fprintf(stderr, "%s; its calls, not streamed yet (the run was shorter than its first flush), are "
			"lost should the job end first\n", head);
}

/* The end of a session under MPI when its calls may have streamed: the
 * ranks meet (sp_mpi_meet); when any rank streamed, each leaves its own
 * file and rank 0 merges them into f->path (sp_mpi_merge), says what
 * became of ranks killed or failed, and shows the merged profile. 0, or
 * -1 with an exception; 1 when no rank streamed (the caller writes the
 * profile whole, sp_mpi_collect). */
static int final_mpi(struct sp_final *f, int64_t now)
{
	int mine = sp_spill_streamed(), any = 0, state = SP_MERGE_NONE, rank = sp_mpi_rank(), rc = -1, met;
	struct sp_profile *own = NULL, *back = NULL;
	struct sp_h5_stream *st = NULL;
	char *job = NULL;
	struct sp_merge_report rep = {0};
	struct sp_error err = {0};
	double wait_s;
	sp_mpi_wait_seconds(&wait_s);   /* checked by `run` before the script */
	files_kept = 0;
	int want_own = f->snapshot && rank != 0;
	/* Where this rank's file goes (absolute), for a rank left alone. */
	char *mine_file = sp_stream_target() ? strdup(sp_stream_target()) : NULL;
	/* A rank that streamed finishes its file first: a job killed while
	 * the ranks wait for each other keeps it finished. */
	if (mine)
		state = finish_own(f, now, want_own ? &own : NULL);
	else
		sp_spill_hold();
	char *merged = NULL;
	int of;
	struct timespec began;
	clock_gettime(CLOCK_MONOTONIC, &began);
	struct meet_watch watch = {.began = mono_ns(&began)};
	char kept[PATH_MAX];
	if (state != SP_MERGE_NONE && mine_file && sp_merge_rank_of(mine_file, &merged, &of) &&
	    (size_t)snprintf(kept, sizeof kept, "%s%s", mine_file,
			     state == SP_MERGE_PARTIAL ? ".partial" : "") < sizeof kept) {
		watch.file = kept;   /* finished, or left partial (its finish failed, said) */
		watch.job = merged;
	}
	Py_BEGIN_ALLOW_THREADS
	met = sp_mpi_meet(mine, f->failed, wait_s, &any, f->path ? meet_watch : NULL, &watch);
	Py_END_ALLOW_THREADS
	free(merged);
	if (met != 0 && mine)
		sp_mpi_abandon(mine_file ? mine_file : "its own file", wait_s);
	if (met != 0 || !any) {
		free(mine_file);
		return 1;
	}
	if (!mine)
		state = finish_own(f, now, want_own ? &own : NULL);
	/* The rank files are named after the path the stream started with
	 * (a script's setup() may have named another since). */
	int of_rank;
	if (mine_file && !sp_merge_rank_of(mine_file, &job, &of_rank))
		job = NULL;
	Py_BEGIN_ALLOW_THREADS
	met = sp_mpi_merge(job, f->path, state, &rep, &err) == SP_OK;
	Py_END_ALLOW_THREADS
	for (int k = 0; k < rep.nranks; k++)
		if (rep.ranks[k].note[0])
			fprintf(stderr, "scope-profiler: warning: %s\n", rep.ranks[k].note);
	if (!met) {
		files_kept = 1;
		PyErr_Format(PyExc_OSError, "%s; the ranks' profiles stay in %s.rank<N> (scope-profiler recover %s "
			     "merges them)", err.msg, job ? job : f->path, job ? job : f->path);
		goto out;
	}
	meet_ended(f->path);
	const struct sp_profile *show = own;
	if (rank == 0 && (f->render || f->render_lines || f->snapshot)) {
		if (merged_show(f, &rep, &back, &st) != 0)
			goto out;
		show = back ? back : sp_h5_stream_profile(st);
	}
	if ((f->render && show && !(f->summary = sp_py_render(show, f->path, 0))) ||
	    (f->render_lines && show && !(f->lines = sp_py_render(show, f->path, f->lines_width))) ||
	    (f->snapshot && (back || own) && !(f->data = sp_results_data(back ? back : own))))
		goto out;
	rc = 0;
out:
	free(job);
	free(mine_file);
	sp_merge_report_free(&rep);
	sp_h5_stream_close(st);
	sp_profile_free(back);
	sp_profile_free(own);
	return rc;
}

/* The end of sp_final_run for a file already written (rc 0) or failed
 * (-1: nothing of f is handed back). */
static int final_done(struct sp_final *f, int rc)
{
	writing = 0;
	if (rc != 0) {
		Py_CLEAR(f->summary);
		Py_CLEAR(f->lines);
		Py_CLEAR(f->data);
	}
	return rc;
}

int sp_final_run(struct sp_final *f)
{
	int collective = sp_mpi_active(), rc = -1;
	f->summary = f->lines = f->data = NULL;
	f->skipped = 0;
	f->calls = -1;
	/* Threads still running (daemon threads at exit) record nothing more:
	 * the events below are read without the GIL. */
	sp_mode_freeze();
	writing = 1;   /* until the events are no longer read */
	int64_t now = sp_clock_ns();
	/* Under run --subprocesses each process whose calls could stream ends
	 * its file through the stream, as an MPI job's ranks do, so that the
	 * run's process merges the files a group at a time. */
	if ((f->children_dir || f->parent_pid) && f->path && !collective && sp_stream_on())
		sp_stream_want_file();
	if (sp_spill_streamed() && f->path && !collective)
		return final_done(f, final_streamed(f, now));
	if (collective && (rc = final_mpi(f, now)) != 1)
		return final_done(f, rc);
	rc = -1;
	sp_spill_cancel();   /* nothing was streamed: the file is written whole */
	/* The statistics and the call tree cost passes over every event: only
	 * when something is written or shown. */
	enum need need = f->path || f->render || f->snapshot || collective ? NEED_ALL
			 : f->render_lines ? NEED_LINES : NEED_LOSSES;
	struct sp_profile *p = live_profile(now, f->run_start_ns, f->meta, f->nmeta, need);
	if (!p && collective) {
		/* The other ranks wait for this one in the merge: it takes part
		 * with no regions, as a failed rank, and says why after. */
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		struct sp_profile *empty = empty_profile(now, f->run_start_ns);
		if (empty) {
			struct sp_error ignored = {0};
			double wait_s;
			sp_mpi_wait_seconds(&wait_s);
			Py_BEGIN_ALLOW_THREADS
			sp_mpi_collect(empty, f->path, f->path != NULL, 1, wait_s, f->fallback, &ignored);
			Py_END_ALLOW_THREADS
			sp_profile_free(empty);
		}
		PyErr_Restore(type, value, tb);
		goto out;
	}
	if (!p)
		goto out;
	int64_t calls = 0;
	for (size_t i = 0; i < p->ranks[0].nregions; i++) {
		const struct sp_region_data *rd = &p->ranks[0].regions[i];
		if (!f->root || (strcmp(rd->name, f->root) != 0 && strcmp(rd->name, "__main__.<module>") != 0))
			calls += rd->stats.num_calls;
	}
	f->calls = calls;
	if (f->skip_if_empty && calls <= 0 && !collective && !f->children_dir) {
		f->skipped = 1;   /* the last good profile stays where it is */
		rc = 0;
		goto out;
	}
	p->ranks[0].parent_pid = f->parent_pid;
	p->compression = f->compression;  /* the file's event columns: 0 contiguous, 1..9 deflate */
	report_losses(p, collective);
	struct sp_error err = {0};
	if (f->children_dir && need == NEED_ALL) {
		/* run --subprocesses: each child process that wrote its profile
		 * joins this one as a process of its own. */
		struct sp_children_found found = {0};
		if (sp_children_merge(p, f->children_dir, &found, &err) != SP_OK) {
			sp_py_err(err.code, err.msg);
			goto out;
		}
		f->children_merged = found.processes;   /* processes, as the shim counts them */
		f->children_recovered = found.recovered;
	}
	enum sp_err wrc = SP_OK;
	if (collective) {
		double wait_s;
		sp_mpi_wait_seconds(&wait_s);   /* checked by `run` before the script */
		Py_BEGIN_ALLOW_THREADS
		wrc = sp_mpi_collect(p, f->path, f->path != NULL, f->failed, wait_s, f->fallback, &err);
		Py_END_ALLOW_THREADS
		if (wrc == SP_OK)
			meet_ended(f->path);
	} else if (f->path) {
		Py_BEGIN_ALLOW_THREADS
		sp_test_pause("SCOPE_PROFILER_TEST_WRITE_PAUSE_MS", "writing");   /* another thread runs */
		wrc = sp_h5_write(p, f->path, &err);
		if (wrc == SP_OK)
			sp_test_pause("SCOPE_PROFILER_TEST_WRITTEN_PAUSE_MS", "written");
		Py_END_ALLOW_THREADS
	}
	if (wrc != SP_OK) {
		/* A file that cannot be written is an OSError, whatever the cause. */
		PyErr_SetString(PyExc_OSError, err.msg);
		goto out;
	}
	const char *title = f->path ? f->path : "(in memory)";
	if ((f->render && !(f->summary = sp_py_render(p, title, 0))) ||
	    (f->render_lines && !(f->lines = sp_py_render(p, title, f->lines_width))) ||
	    (f->snapshot && !(f->data = sp_results_data(p))))
		goto out;
	rc = 0;
out:
	sp_profile_free(p);
	return final_done(f, rc);
}
