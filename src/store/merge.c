/* merge.c - the one profile of an MPI job whose ranks streamed, from the
 * ranks' own files (sp_merge.h), with bounded memory: nothing here grows
 * with the calls. A finished rank file's group is copied whole by HDF5
 * (H5Ocopy copies a chunked column a chunk at a time, its chunks as
 * stored: 160 MB in 0.7 s for 2 MiB of memory, docs/PERFORMANCE.md), with
 * its regions table, call tree, line tables and LIKWID counters. A partial
 * one (a rank killed, or one that could not finish its file) is recovered
 * into OUT as the reader sees it (h5read_v3.c: the consistent prefix, calls
 * open at the last flush ending there), a slice at a time, its regions
 * table computed on the way. The files are surveyed first (attributes,
 * metadata, calls), so that OUT's metadata is written when OUT is created;
 * OUT appears by rename only once complete (outpath.c). On the reader's
 * primitives (sp_h5read*.h) and the writer's (sp_h5write*.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_clock.h"
#include "sp_h5read.h"
#include "sp_h5read_file.h"
#include "sp_h5read_v3.h"
#include "sp_h5write.h"
#include "sp_h5write_table.h"
#include "sp_hosts.h"
#include "sp_merge.h"
#include "sp_stream.h"

/* Calls of a partial rank gathered per write into OUT. */
#define STAGE ((size_t)1 << 16)

char *sp_merge_rank_file(const char *out, int rank)
{
	size_t len = strlen(out) + 24;
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s.rank%d", out, rank);
	return p;
}

/* What the survey found of one rank's file. */
struct part {
	char *path;                    /* the file that goes into OUT */
	char *gname;                   /* its rank group's link name */
	char *hostname;
	int64_t run_start_ns;
	int64_t mpi_size;              /* its rank attribute; 0: none */
	int64_t job;                   /* its rank attribute mpi_job; 0: none */
	int tree;
};

struct merge {
	const char *job;               /* the rank files' base */
	const char *const *files;      /* or each part's finished file (sp_merge_processes) */
	int size;                      /* the job's ranks; 0 while not known (recover) */
	int64_t job_id;                /* the job's id (its newest file's mpi_job); 0: not known */
	const enum sp_merge_state *said;
	struct sp_merge_report *rep;
	struct part *parts;
	int cap;                       /* parts and rep->ranks allocated */
	struct sp_kv *meta;            /* the lowest finished rank's /metadata */
	size_t nmeta;
	struct sp_h5_writer *w;
	struct sp_error *err;
};

/* What the notes call a part: a rank, or a process of a run
 * (sp_merge_processes). */
static const char *unit(const struct merge *m)
{
	return m->files ? "process" : "rank";
}

/* ---- reading the rank files ------------------------------------------ */

/* Opens path for reading as sp_h5_read does (a partial file for reading
 * while written, as after a kill), with small caches. */
static enum sp_err open_read(struct reader *r, const char *path, struct sp_error *err, hid_t *file)
{
	*r = (struct reader){.path = path, .err = err, .file = -1, .fd = -1};
	*file = -1;
	enum sp_err rc = sp_h5r_check_path(r);
	if (rc != SP_OK)
		return rc;
	hid_t fapl = sp_h5_fapl();
	if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 || sp_h5w_small_caches(fapl) < 0)
		rc = sp_h5r_fail(r, SP_EIO, "cannot set up HDF5");
	else
		rc = sp_h5r_open_file(r, fapl, file);
	if (fapl >= 0)
		H5Pclose(fapl);
	r->file = *file;
	return rc;
}

static void close_read(struct reader *r, hid_t file)
{
	if (file >= 0)
		H5Fclose(file);
	sp_h5r_release(r);
}

/* A rank file's survey: the reader first (the callback gets it). */
struct survey {
	struct reader r;
	int finished, tree;
	uint64_t calls;
	int64_t flushed_ns, mpi_size, job;
	char *gname;
};

/* sp_h5r_read_file's rank callback: the rank's attributes, table or
 * names, blocks (checked), but no call. */
static enum sp_err survey_rank(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	struct survey *s = (struct survey *)r;
	struct sp_h5r_v3 v;
	enum sp_err rc;
	hid_t g;
	sp_h5r_v3_init(&v);
	if (r->version != 3)
		return sp_h5r_fail(r, SP_ENOTPROF, "not a streamed rank's file (format version %d)", r->version);
	if (s->gname)
		return sp_h5r_fail(r, SP_ECORRUPT, "more than one rank group");
	if ((g = sp_h5r_open_group(r, file, gname)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = sp_h5r_v3_open(r, g, gname, rk, 0, &v)) == SP_OK) {
		s->finished = !v.partial;
		s->calls = v.total;
		s->flushed_ns = v.flushed_ns;
		s->tree = sp_h5r_hard_link(g, "tree") == 1;
		if (sp_h5r_attr_num(g, "mpi_size", H5T_NATIVE_INT64, &s->mpi_size) < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: unreadable attribute mpi_size", gname);
		else if (sp_h5r_attr_num(g, "mpi_job", H5T_NATIVE_INT64, &s->job) < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: unreadable attribute mpi_job", gname);
		else if (!(s->gname = strdup(gname)))
			rc = sp_h5r_fail(r, SP_ENOMEM, "out of memory");
	}
	sp_h5r_v3_free(&v);
	sp_h5r_close(g);
	return rc;
}

/* Room for rank k in m. 0, or -1 (out of memory). */
static int room(struct merge *m, int k)
{
	if (k < m->cap)
		return 0;
	int cap = m->cap ? m->cap : 8;
	while (cap <= k)
		cap *= 2;
	struct part *parts = realloc(m->parts, (size_t)cap * sizeof *parts);
	if (parts)
		m->parts = parts;
	struct sp_merge_rank *ranks = parts ? realloc(m->rep->ranks, (size_t)cap * sizeof *ranks) : NULL;
	if (!ranks)
		return -1;
	m->rep->ranks = ranks;
	memset(parts + m->cap, 0, (size_t)(cap - m->cap) * sizeof *parts);
	memset(ranks + m->cap, 0, (size_t)(cap - m->cap) * sizeof *ranks);
	for (int i = m->cap; i < cap; i++)
		ranks[i].state = SP_MERGE_NONE;
	m->cap = cap;
	return 0;
}

/* Reads the survey of the file at path into *s and *pp (a new profile:
 * the rank's attributes and metadata, no call; NULL when out of memory).
 * e says why it could not. */
static enum sp_err read_survey(const char *path, struct survey *s, struct sp_profile **pp, struct sp_error *e)
{
	hid_t file = -1;
	enum sp_err rc = SP_ENOMEM;
	*s = (struct survey){.gname = NULL};
	if (!(*pp = calloc(1, sizeof **pp)))
		return SP_ENOMEM;
	if ((rc = open_read(&s->r, path, e, &file)) == SP_OK)
		rc = sp_h5r_read_file(&s->r, file, *pp, survey_rank);
	close_read(&s->r, file);
	/* A rank killed while it finished its file left it marked as open for
	 * writing: marked closed, it reads as any partial file (as recover
	 * reads one). */
	if (rc != SP_OK && rc != SP_ENOMEM && sp_stream_unmark_dead(path) == 1) {
		sp_profile_free(*pp);
		free(s->gname);
		*s = (struct survey){.gname = NULL};
		if (!(*pp = calloc(1, sizeof **pp)))
			return SP_ENOMEM;
		if ((rc = open_read(&s->r, path, e, &file)) == SP_OK)
			rc = sp_h5r_read_file(&s->r, file, *pp, survey_rank);
		close_read(&s->r, file);
	}
	return rc;
}

/* Surveys the file at path for rank k: 1 when it goes into OUT (m's part
 * and report filled), 0 when not (the note says why), -1 out of memory. */
static int survey_file(struct merge *m, int k, const char *path)
{
	struct survey s;
	struct sp_error e = {0};
	struct sp_profile *p = NULL;
	struct sp_merge_rank *mr = &m->rep->ranks[k];
	int ok = 0;
	enum sp_err rc = read_survey(path, &s, &p, &e);
	if (!p) {
		free(s.gname);
		return -1;
	}
	if (rc == SP_ENOMEM) {
		ok = -1;
	} else if (rc != SP_OK) {
		snprintf(mr->note, sizeof mr->note, "%s %d: %.440s; left out", unit(m), k, e.msg);
	} else if (p->nranks != 1 || (p->ranks[0].rank != k && !m->files)) {
		snprintf(mr->note, sizeof mr->note, "rank %d: '%s' holds rank %d, not rank %d; left out", k, path,
			 p->nranks ? p->ranks[0].rank : -1, k);
	} else if (m->size > 0 && s.mpi_size > 0 && s.mpi_size != m->size) {
		snprintf(mr->note, sizeof mr->note, "rank %d: '%s' is another run's (a job of %lld ranks, this "
			 "one has %d); left out", k, path, (long long)s.mpi_size, m->size);
	} else if (m->job_id && s.job != m->job_id) {
		snprintf(mr->note, sizeof mr->note, "rank %d: '%s' is another run's (an earlier job on the same "
			 "output); left out", k, path);
	} else {
		struct part *pt = &m->parts[k];
		pt->path = strdup(path);
		pt->gname = s.gname;
		s.gname = NULL;
		pt->hostname = p->ranks[0].hostname;
		p->ranks[0].hostname = NULL;
		pt->run_start_ns = p->ranks[0].run_start_ns;
		pt->mpi_size = s.mpi_size;
		pt->job = s.job;
		pt->tree = s.tree;
		if (!pt->path)
			ok = -1;
		else
			ok = 1;
		mr->state = s.finished ? SP_MERGE_FINISHED : SP_MERGE_PARTIAL;
		mr->calls = (int64_t)s.calls;
		mr->partial_until_ns = s.finished ? 0 : s.flushed_ns;
		if (m->size == 0 && s.mpi_size > 0 && s.mpi_size <= INT32_MAX)
			m->size = (int)s.mpi_size;
		if (s.finished && !m->meta) {
			m->meta = p->meta;
			m->nmeta = p->nmeta;
			p->meta = NULL;
			p->nmeta = 0;
		}
	}
	free(s.gname);
	sp_profile_free(p);
	return ok;
}

/* Rank k's file: the one it said it left, else (not said) its finished
 * file, else its partial one. 0, or -1 out of memory. */
static int survey(struct merge *m, int k)
{
	enum sp_merge_state said = m->said ? m->said[k] : SP_MERGE_UNKNOWN;
	struct sp_merge_rank *mr = &m->rep->ranks[k];
	char *fin = m->files ? strdup(m->files[k]) : sp_merge_rank_file(m->job, k);
	char *par = fin ? sp_stream_partial_path(fin) : NULL;
	struct stat st;
	int rc = 0, got = 0;
	if (!fin || !par) {
		rc = -1;
		goto out;
	}
	mr->state = SP_MERGE_NONE;
	if (said == SP_MERGE_NONE) {
		snprintf(mr->note, sizeof mr->note, "rank %d: no file of its own (its calls could not be "
			 "streamed); left out", k);
		goto out;
	}
	if (said != SP_MERGE_PARTIAL && stat(fin, &st) == 0)
		got = survey_file(m, k, fin);
	if (got == 0 && said != SP_MERGE_FINISHED && stat(par, &st) == 0) {
		char keep[sizeof mr->note];
		memcpy(keep, mr->note, sizeof keep);
		got = survey_file(m, k, par);
		if (got == 0 && keep[0])   /* both unreadable: the first one's reason */
			memcpy(mr->note, keep, sizeof keep);
		else if (got == 1)         /* in OUT: no line saying it is left out */
			mr->note[0] = '\0';
	}
	if (got < 0)
		rc = -1;
	else if (got == 0 && !mr->note[0] && said == SP_MERGE_FINISHED)
		snprintf(mr->note, sizeof mr->note, "rank %d: it finished '%s', which is not there for the "
			 "merge (a folder the nodes do not share?); left out", k, fin);
	else if (got == 0 && !mr->note[0])
		snprintf(mr->note, sizeof mr->note, "%s %d: no file ('%s' nor '%s'): it never streamed a call, "
			 "or died before its first flush; left out", unit(m), k, fin, par);
out:
	free(fin);
	free(par);
	return rc;
}

/* The largest N + 1 of the files OUT.rank{N} and OUT.rank{N}.partial beside
 * OUT (0: none), or -1 when OUT's folder cannot be listed. */
static int discover(const char *out)
{
	const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
	char *dir = slash ? strndup(out, (size_t)(slash - out) + 1) : strdup(".");
	size_t blen = strlen(base);
	long most = -1;
	DIR *d = dir ? opendir(dir) : NULL;
	free(dir);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		const char *n = e->d_name;
		if (strncmp(n, base, blen) != 0 || strncmp(n + blen, ".rank", 5) != 0)
			continue;
		char *end;
		const char *digits = n + blen + 5;
		if (*digits < '0' || *digits > '9')
			continue;
		errno = 0;
		long k = strtol(digits, &end, 10);
		if (errno || k > INT32_MAX - 1 || (*end && strcmp(end, ".partial") != 0))
			continue;
		most = k > most ? k : most;
	}
	closedir(d);
	return (int)(most + 1);
}

/* The job whose profile is merged: the newest of the rank files below
 * rank `found` (the last job that ran on this output: an earlier one may
 * have left files that this one's ranks did not replace) sets m's job_id
 * and, when not known, its size. 0, or -1 out of memory; a file that
 * cannot be read sets nothing (each rank's survey says why). */
static int pick_job(struct merge *m, int found)
{
	struct timespec newest = {0};
	char *path = NULL;
	for (int k = 0; k < found; k++) {
		char *fin = sp_merge_rank_file(m->job, k), *par = fin ? sp_stream_partial_path(fin) : NULL;
		char *both[2] = {fin, par};
		if (!fin || !par) {
			free(fin);
			free(par);
			free(path);
			return -1;
		}
		for (int i = 0; i < 2; i++) {
			struct stat st;
			if (stat(both[i], &st) == 0 && S_ISREG(st.st_mode) &&
			    (!path || st.st_mtim.tv_sec > newest.tv_sec ||
			     (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec))) {
				free(path);
				path = both[i];
				both[i] = NULL;
				newest = st.st_mtim;
			}
		}
		free(both[0]);
		free(both[1]);
	}
	if (!path)
		return 0;
	struct survey s;
	struct sp_error e = {0};
	struct sp_profile *p = NULL;
	enum sp_err rc = read_survey(path, &s, &p, &e);
	if (rc == SP_OK) {
		m->job_id = s.job;
		if (m->size == 0 && s.mpi_size > 0 && s.mpi_size <= INT32_MAX)
			m->size = (int)s.mpi_size;
	}
	free(s.gname);
	sp_profile_free(p);
	free(path);
	return rc == SP_ENOMEM ? -1 : 0;
}

/* ---- writing OUT ------------------------------------------------------ */

/* Sets key of the metadata (replacing it when there). 0, or -1. */
static int meta_set(struct merge *m, const char *key, const char *value, enum sp_kv_type type)
{
	return sp_kv_set(&m->meta, &m->nmeta, key, value, type);
}

/* The ranks in state (PARTIAL: recovered; NONE: left out) as a list
 * ("1,3-5") into buf; their count. */
static int ranks_in(const struct merge *m, enum sp_merge_state state, char *buf, size_t len, int *nums)
{
	int n = 0;
	for (int k = 0; k < m->rep->nranks; k++)
		if (m->rep->ranks[k].state == state)
			nums[n++] = k;
	sp_rank_list(buf, len, nums, (size_t)n);
	return n;
}

/* OUT's metadata: the lowest finished rank's (else a minimal one), the
 * hosts of the ranks in OUT, the ranks recovered or left out. 0, or -1. */
static int merged_meta(struct merge *m)
{
	int n = m->rep->nranks, *nums = malloc((size_t)(n ? n : 1) * sizeof *nums);
	struct sp_rank *ranks = calloc((size_t)(n ? n : 1), sizeof *ranks);
	size_t len = 12 * (size_t)n + 16;
	char *list = malloc(len), size[24];
	int rc = -1;
	if (!nums || !ranks || !list)
		goto out;
	snprintf(size, sizeof size, "%d", n);
	if (!m->meta && (meta_set(m, "tool", "scope-profiler", SP_KV_TEXT) != 0 ||
			 (!m->files && meta_set(m, "mpi_size", size, SP_KV_INT) != 0)))
		goto out;
	struct sp_profile hp = {.ranks = ranks};
	for (int k = 0; k < n; k++)
		if (m->rep->ranks[k].state != SP_MERGE_NONE)
			ranks[hp.nranks++] = (struct sp_rank){.rank = k, .hostname = m->parts[k].hostname};
	char *hosts = sp_profile_hosts(&hp);
	if (!hosts || meta_set(m, "hostnames", hosts, SP_KV_TEXT) != 0) {
		free(hosts);
		goto out;
	}
	free(hosts);
	if (ranks_in(m, SP_MERGE_PARTIAL, list, len, nums) > 0) {
		int64_t until = INT64_MAX;
		char v[24];
		for (int k = 0; k < n; k++)
			if (m->rep->ranks[k].state == SP_MERGE_PARTIAL && m->rep->ranks[k].partial_until_ns < until)
				until = m->rep->ranks[k].partial_until_ns;
		snprintf(v, sizeof v, "%lld", (long long)until);
		if (meta_set(m, "incomplete_ranks", list, SP_KV_TEXT) != 0 ||
		    meta_set(m, "partial_until_ns", v, SP_KV_INT) != 0)
			goto out;
	}
	if (ranks_in(m, SP_MERGE_NONE, list, len, nums) > 0 && meta_set(m, "missing_ranks", list, SP_KV_TEXT) != 0)
		goto out;
	rc = 0;
out:
	free(nums);
	free(ranks);
	free(list);
	return rc;
}

/* Rank k's finished group, copied whole into OUT. */
static enum sp_err copy_finished(struct merge *m, int k)
{
	struct reader r;
	struct sp_error e = {0};
	hid_t file = -1;
	char dst[32];
	snprintf(dst, sizeof dst, "rank%d", k);
	enum sp_err rc = open_read(&r, m->parts[k].path, &e, &file);
	if (rc != SP_OK)
		rc = sp_h5w_fail(m->w, rc, "rank %d: %s", k, e.msg);
	else if (H5Ocopy(file, m->parts[k].gname, m->w->file, dst, H5P_DEFAULT, m->w->lcpl) < 0 ||
		 (H5Aexists_by_name(m->w->file, dst, "children_dir", H5P_DEFAULT) > 0 &&
		  H5Adelete_by_name(m->w->file, dst, "children_dir", H5P_DEFAULT) < 0))
		rc = sp_h5w_fail(m->w, SP_EIO, "cannot copy rank %d from '%s'", k, m->parts[k].path);
	close_read(&r, file);
	return rc;
}

/* A partial rank's calls on their way into OUT, and its statistics. */
struct sink {
	struct sp_h5_writer *w;
	const char *gname;
	hid_t cols[4];                 /* OUT's start_times, end_times, lanes, values (-1: none) */
	int64_t *s, *e;
	int32_t *l;
	int kind;                      /* the values' kind (0: none; the reader's rule for a partial file) */
	int64_t *v;                    /* staged values (kind > 0) */
	uint64_t *sum;                 /* per region: its values' sum (wrapping) */
	size_t n;                      /* staged */
	uint64_t at;                   /* written */
	struct sp_stats_acc *acc;      /* per region */
	int64_t *first;                /* per region: its earliest start */
	int wfail;                     /* writing failed (not reading) */
};

static int sink_flush(struct sink *k)
{
	if (k->n && (sp_h5w_span(k->w, k->cols[0], H5T_NATIVE_INT64, k->at, k->n, k->s) < 0 ||
		     sp_h5w_span(k->w, k->cols[1], H5T_NATIVE_INT64, k->at, k->n, k->e) < 0 ||
		     (k->cols[2] >= 0 && sp_h5w_span(k->w, k->cols[2], H5T_NATIVE_INT32, k->at, k->n, k->l) < 0) ||
		     (k->cols[3] >= 0 && sp_h5w_span(k->w, k->cols[3], H5T_NATIVE_INT64, k->at, k->n, k->v) < 0))) {
		k->wfail = 1;
		return -1;
	}
	k->at += k->n;
	k->n = 0;
	return 0;
}

/* sp_h5r_v3_scan's callback: a run of one block's calls, closed. */
static enum sp_err sink_run(struct reader *r, void *ctx, const struct sp_h5r_v3_run *run)
{
	struct sink *k = ctx;
	struct sp_stats_acc *a = &k->acc[run->region];
	int64_t *first = &k->first[run->region];
	for (size_t i = 0; i < run->n; i++) {
		uint64_t d = (uint64_t)run->ends[i] - (uint64_t)run->starts[i];
		if (d > INT64_MAX)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: durations overflow 64 bits", k->gname);
		sp_stats_acc_add(a, (int64_t)d, run->ends[i]);
		if (run->starts[i] < *first)
			*first = run->starts[i];
	}
	for (size_t i = 0; i < run->n;) {
		if (k->n == STAGE && sink_flush(k) < 0)
			return SP_EIO;
		size_t take = run->n - i < STAGE - k->n ? run->n - i : STAGE - k->n;
		memcpy(k->s + k->n, run->starts + i, take * sizeof *k->s);
		memcpy(k->e + k->n, run->ends + i, take * sizeof *k->e);
		if (k->l && run->lanes)
			memcpy(k->l + k->n, run->lanes + i, take * sizeof *k->l);
		else if (k->l)
			memset(k->l + k->n, 0, take * sizeof *k->l);
		if (k->v) {
			const int64_t *v = run->values[k->kind];
			for (size_t j = 0; j < take; j++) {
				k->v[k->n + j] = v ? v[i + j] : 0;
				k->sum[run->region] += (uint64_t)k->v[k->n + j];
			}
		}
		k->n += take;
		i += take;
	}
	return SP_OK;
}

/* The deflate level of column ds (0: none). */
static int deflate_level(hid_t ds)
{
	hid_t dcpl = H5Dget_create_plist(ds);
	unsigned flags = 0, cd[4] = {0};
	size_t ncd = 4;
	int level = 0;
	if (dcpl >= 0 && H5Pget_filter_by_id2(dcpl, H5Z_FILTER_DEFLATE, &flags, &ncd, cd, 0, NULL, NULL) >= 0 &&
	    ncd >= 1 && cd[0] <= 9)
		level = (int)cd[0];
	if (dcpl >= 0)
		H5Pclose(dcpl);
	H5Eclear2(H5E_DEFAULT);
	return level;
}

/* The attributes of a recovered rank: its own, ended at its last flush. */
static int recovered_attrs(hid_t g, const struct sp_rank *rk, const struct part *pt)
{
	return (rk->run_start_ns != SP_NO_TIME && sp_h5w_attr_i64(g, "run_start_time", rk->run_start_ns) < 0) ||
	       (rk->pid != 0 && sp_h5w_attr_i64(g, "pid", rk->pid) < 0) ||
	       (rk->parent_pid != 0 && sp_h5w_attr_i64(g, "parent_pid", rk->parent_pid) < 0) ||
	       (rk->hostname && sp_h5w_attr_str(g, "hostname", rk->hostname) < 0) ||
	       sp_h5w_attr_i64(g, "clock_offset_ns", rk->clock_offset_ns) < 0 ||
	       sp_h5w_attr_i64(g, "dropped_events", rk->dropped) < 0 ||
	       (pt->mpi_size > 0 && sp_h5w_attr_i64(g, "mpi_size", pt->mpi_size) < 0) ||
	       (pt->job && sp_h5w_attr_i64(g, "mpi_job", pt->job) < 0) ? -1 : 0;
}

/* Rank k's partial file recovered into OUT as group rank{k}: what reading
 * it fails on leaves the rank out (its note says why, SP_OK); a failure to
 * write is OUT's (returned). */
static enum sp_err recover_partial(struct merge *m, int k)
{
	struct sp_h5_writer *w = m->w;
	struct part *pt = &m->parts[k];
	struct sp_merge_rank *mr = &m->rep->ranks[k];
	struct reader r;
	struct sp_error e = {0};
	struct sp_rank rk = {.rank = k};
	struct sp_h5r_v3 v;
	struct sink s = {.w = w, .gname = pt->gname, .cols = {-1, -1, -1, -1}};
	hid_t file = -1, g = -1, dg = -1, ev = -1;
	char dst[32];
	enum sp_err rc, wrc = SP_OK;
	snprintf(dst, sizeof dst, "rank%d", k);
	sp_h5r_v3_init(&v);
	if ((rc = open_read(&r, pt->path, &e, &file)) != SP_OK)
		goto out;
	if ((g = sp_h5r_open_group(&r, file, pt->gname)) < 0) {
		rc = sp_h5r_fail(&r, SP_ECORRUPT, "%s is not a group", pt->gname);
		goto out;
	}
	if ((rc = sp_h5r_v3_open(&r, g, pt->gname, &rk, 1, &v)) != SP_OK)
		goto out;
	rk.rank = k;
	size_t nr = rk.nregions ? rk.nregions : 1;
	s.acc = malloc(nr * sizeof *s.acc);
	s.first = malloc(nr * sizeof *s.first);
	s.s = malloc(STAGE * sizeof *s.s);
	s.e = malloc(STAGE * sizeof *s.e);
	s.l = v.cols[2] >= 0 ? malloc(STAGE * sizeof *s.l) : NULL;
	s.kind = rk.nregions ? rk.regions[0].value_kind : 0;
	s.v = s.kind ? malloc(STAGE * sizeof *s.v) : NULL;
	s.sum = calloc(nr, sizeof *s.sum);
	if (!s.acc || !s.first || !s.s || !s.e || (v.cols[2] >= 0 && !s.l) || (s.kind && !s.v) || !s.sum) {
		rc = sp_h5r_fail(&r, SP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < rk.nregions; i++) {
		sp_stats_acc_init(&s.acc[i]);
		s.first[i] = INT64_MAX;
	}
	int level = deflate_level(v.cols[0]);
	if ((dg = H5Gcreate2(w->file, dst, w->lcpl, w->gcpl, H5P_DEFAULT)) < 0 ||
	    recovered_attrs(dg, &rk, pt) < 0 ||
	    (ev = H5Gcreate2(dg, "events", w->lcpl, w->gcpl, H5P_DEFAULT)) < 0 ||
	    (s.cols[0] = sp_h5w_dataset(w, ev, "start_times", H5T_STD_I64LE, (size_t)v.total, level)) < 0 ||
	    (s.cols[1] = sp_h5w_dataset(w, ev, "end_times", H5T_STD_I64LE, (size_t)v.total, level)) < 0 ||
	    (s.l && (s.cols[2] = sp_h5w_dataset(w, ev, "lanes", H5T_STD_I32LE, (size_t)v.total, level)) < 0) ||
	    (s.v && (s.cols[3] = sp_h5w_dataset(w, ev, sp_value_kind_name(s.kind), H5T_STD_I64LE, (size_t)v.total,
						level)) < 0)) {
		wrc = sp_h5w_fail(w, SP_EIO, "cannot create group %s", dst);
		goto out;
	}
	rc = sp_h5r_v3_scan(&r, pt->gname, &v, rk.nregions, s.l != NULL || s.v != NULL, sink_run, &s);
	if (rc == SP_OK && sink_flush(&s) < 0)
		rc = SP_EIO;
	if (s.wfail) {
		wrc = sp_h5w_fail(w, SP_EIO, "cannot write the calls of %s", dst);
		goto out;
	}
	if (rc != SP_OK)
		goto out;
	for (int c = 0; c < 4; c++) {
		int bad = s.cols[c] >= 0 && sp_h5w_dataset_close(w, s.cols[c]) < 0;
		s.cols[c] = -1;
		if (bad) {
			wrc = sp_h5w_fail(w, SP_EIO, "cannot write the calls of %s", dst);
			goto out;
		}
	}
	if (sp_h5w_column(w, ev, "block_region", H5T_STD_I32LE, H5T_NATIVE_INT32, v.nblocks, v.region) < 0 ||
	    sp_h5w_column(w, ev, "block_calls", H5T_STD_I64LE, H5T_NATIVE_INT64, v.nblocks, v.calls) < 0) {
		wrc = sp_h5w_fail(w, SP_EIO, "cannot write the blocks of %s", dst);
		goto out;
	}
	/* The rank's run ends at its last flush, or at its last call's end
	 * when a block written after that flush holds a later one. */
	int64_t end = v.flushed_ns;
	for (size_t i = 0; i < rk.nregions; i++) {
		struct sp_region_data *rd = &rk.regions[i];
		rd->values_total = (int64_t)s.sum[i];   /* its value_kind: the partial file's */
		if (sp_stats_from_acc(&rd->stats, &s.acc[i], s.first[i]) < 0) {
			rc = sp_h5r_fail(&r, SP_ECORRUPT, "%s/regions/%.200s: durations overflow 64 bits",
					 pt->gname, rd->name);
			goto out;
		}
		if (rd->stats.num_calls && rd->stats.last_end_ns > end)
			end = rd->stats.last_end_ns;
	}
	if (sp_h5w_attr_i64(dg, "run_end_time", end) < 0) {
		wrc = sp_h5w_fail(w, SP_EIO, "cannot write attributes of %s", dst);
		goto out;
	}
	if ((wrc = sp_h5w_regions_v3(w, dg, &rk)) != SP_OK)
		goto out;
	mr->calls = (int64_t)v.total;
	mr->partial_until_ns = v.flushed_ns;
out:
	for (int c = 0; c < 4; c++)
		if (s.cols[c] >= 0)
			H5Dclose(s.cols[c]);
	if (ev >= 0)
		H5Gclose(ev);
	if (dg >= 0)
		H5Gclose(dg);
	if (wrc == SP_OK && rc != SP_OK) {
		/* The file could not be read: the rank is left out of OUT. */
		if (dg >= 0 && H5Ldelete(w->file, dst, H5P_DEFAULT) < 0)
			wrc = sp_h5w_fail(w, SP_EIO, "cannot remove the group %s", dst);
		mr->state = SP_MERGE_NONE;
		mr->calls = 0;
		snprintf(mr->note, sizeof mr->note, "%s %d: %.440s; left out", unit(m), k, e.msg);
	}
	free(s.acc);
	free(s.first);
	free(s.s);
	free(s.e);
	free(s.l);
	free(s.v);
	free(s.sum);
	sp_h5r_v3_free(&v);
	sp_h5r_close(g);
	close_read(&r, file);
	sp_rank_clear(&rk);
	return wrc;
}

/* The line of a rank recovered from its partial file. */
static void note_partial(struct merge *m, int k)
{
	struct sp_merge_rank *mr = &m->rep->ranks[k];
	int64_t start = m->parts[k].run_start_ns;
	char when[64] = "";
	if (start != SP_NO_TIME && mr->partial_until_ns >= start)
		snprintf(when, sizeof when, ", %.1f s after its start,", (double)(mr->partial_until_ns - start) / 1e9);
	snprintf(mr->note, sizeof mr->note, "%s %d did not finish its profile (killed, or it failed): its "
		 "%lld call%s up to its last flush%s are in the profile", unit(m), k, (long long)mr->calls,
		 mr->calls == 1 ? "" : "s", when);
}

static void parts_free(struct merge *m)
{
	for (int k = 0; k < m->cap; k++) {
		free(m->parts[k].path);
		free(m->parts[k].gname);
		free(m->parts[k].hostname);
	}
	free(m->parts);
	for (size_t i = 0; i < m->nmeta; i++) {
		free(m->meta[i].key);
		free(m->meta[i].value);
	}
	free(m->meta);
}

void sp_merge_report_free(struct sp_merge_report *rep)
{
	if (!rep)
		return;
	free(rep->ranks);
	*rep = (struct sp_merge_report){0};
}

/* Surveys m's n parts, then writes out from them (sp_merge_ranks,
 * sp_merge_processes); with `remove`, the rank files that went into OUT
 * go once it is there. */
static enum sp_err merge_parts(struct merge *m, int n, const char *out, int remove)
{
	struct sp_merge_report *rep = m->rep;
	struct sp_error *err = m->err;
	enum sp_err rc = SP_OK;
	for (int k = 0; k < n; k++) {
		if (room(m, k) != 0 || (rep->nranks = k + 1, survey(m, k)) != 0)
			return sp_error_set(err, SP_ENOMEM, "cannot merge into '%s': out of memory", out);
	}
	for (int k = 0; k < rep->nranks; k++)
		rep->in_out += rep->ranks[k].state != SP_MERGE_NONE;
	if (rep->in_out == 0)
		return sp_error_set(err, SP_ENOENT, "no rank's profile could be read for '%s'", out);
	if (merged_meta(m) != 0)
		return sp_error_set(err, SP_ENOMEM, "cannot merge into '%s': out of memory", out);
	struct sp_profile mp = {.meta = m->meta, .nmeta = m->nmeta};
	if ((rc = sp_h5w_open(out, &mp, 3, &m->w, err)) != SP_OK)
		return rc;
	rep->all_trees = 1;
	for (int k = 0; k < rep->nranks && rc == SP_OK; k++) {
		struct sp_merge_rank *mr = &rep->ranks[k];
		if (mr->state == SP_MERGE_FINISHED) {
			rc = copy_finished(m, k);
			rep->all_trees &= m->parts[k].tree;
		} else if (mr->state == SP_MERGE_PARTIAL) {
			rc = recover_partial(m, k);
			rep->all_trees = 0;
			if (rc == SP_OK && mr->state == SP_MERGE_PARTIAL)
				note_partial(m, k);
			else if (rc == SP_OK)
				rep->in_out--;
		}
		rep->calls += mr->state == SP_MERGE_NONE ? 0 : mr->calls;
	}
	if (rc != SP_OK) {
		if (err)
			*err = m->w->failure;
		sp_h5_writer_abort(m->w);
		return rc;
	}
	if (rep->in_out == 0) {
		sp_h5_writer_abort(m->w);
		return sp_error_set(err, SP_ENOENT, "no rank's profile could be read for '%s'", out);
	}
	if ((rc = sp_h5_writer_commit(m->w, err)) != SP_OK)
		return rc;
	for (int k = 0; remove && k < rep->nranks; k++) {
		if (rep->ranks[k].state == SP_MERGE_NONE)
			continue;
		char *fin = sp_merge_rank_file(m->job, k), *par = fin ? sp_stream_partial_path(fin) : NULL;
		if (fin)
			unlink(fin);
		if (par)
			unlink(par);
		free(fin);
		free(par);
	}
	return SP_OK;
}

enum sp_err sp_merge_ranks(const char *job, const char *out, int nranks, int64_t job_id,
			   const enum sp_merge_state *said, int remove, struct sp_merge_report *rep, struct sp_error *err)
{
	struct merge m = {.job = job, .size = nranks > 0 ? nranks : 0, .job_id = job_id, .said = said, .rep = rep,
			  .err = err};
	enum sp_err rc = SP_OK;
	*rep = (struct sp_merge_report){0};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	int found = nranks > 0 ? nranks : discover(job);
	if (found < 0)
		return sp_error_set(err, SP_EIO, "cannot merge '%s': cannot list its folder: %s", job,
				    strerror(errno));
	if (found == 0)
		return sp_error_set(err, SP_ENOENT, "no rank files '%s.rank<N>' or '%s.rank<N>.partial' to merge",
				    job, job);
	/* Recover: the job's size from its files (its newest file's mpi_size,
	 * else the lowest rank's), which may name ranks that left no file. */
	if (!m.job_id && pick_job(&m, found) != 0)
		rc = sp_error_set(err, SP_ENOMEM, "cannot merge into '%s': out of memory", out);
	else
		rc = merge_parts(&m, m.size ? m.size : found, out, remove);
	parts_free(&m);
	return rc;
}

enum sp_err sp_merge_processes(const char *const *files, int n, const char *out,
			       const enum sp_merge_state *said, struct sp_merge_report *rep, struct sp_error *err)
{
	struct merge m = {.files = files, .said = said, .rep = rep, .err = err};
	*rep = (struct sp_merge_report){0};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (n <= 0)
		return sp_error_set(err, SP_EINVAL, "sp_merge_processes: no file");
	enum sp_err rc = merge_parts(&m, n, out, 0);
	parts_free(&m);
	return rc;
}

/* Whether the file at path is a serial run's profile (a version 1 or 2
 * file, or a streamed one whose rank has no mpi_size): 1, else 0 (an MPI
 * rank's, or not readable: the merge says why). */
static int serial_file(const char *path)
{
	struct survey s;
	struct sp_error e = {0};
	struct sp_profile *p = NULL;
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	enum sp_err rc = read_survey(path, &s, &p, &e);
	int serial = (rc == SP_OK && s.mpi_size == 0) || (rc != SP_OK && (s.r.version == 1 || s.r.version == 2));
	free(s.gname);
	sp_profile_free(p);
	return serial;
}

int sp_merge_rank_of(const char *path, char **job, int *rank)
{
	size_t n = strlen(path), k = strlen(".partial");
	char *q = strdup(path);
	*job = NULL;
	*rank = -1;
	if (!q)
		return 0;
	if (n > k && strcmp(q + n - k, ".partial") == 0)
		q[n - k] = '\0';
	/* OUT.rank{N}: digits after the last ".rank", a base before it. */
	char *dot = strrchr(q, '.'), *end;
	const char *slash = strrchr(q, '/');
	if (dot && strncmp(dot, ".rank", 5) == 0 && dot[5] >= '0' && dot[5] <= '9' &&
	    dot > (slash ? slash + 1 : q)) {
		errno = 0;
		long r = strtol(dot + 5, &end, 10);
		/* A serial run told -o OUT.rank{N} (each rank profiled apart)
		 * is not an MPI job's. */
		if (!errno && !*end && r <= INT32_MAX && !serial_file(path)) {
			*dot = '\0';
			*job = q;
			*rank = (int)r;
			return 1;
		}
	}
	free(q);
	if (n > k && strcmp(path + n - k, ".partial") == 0)
		return 0;
	if (discover(path) > 0 && (*job = strdup(path)))
		return 1;
	return 0;
}
