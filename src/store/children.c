/* children.c - merging the profiles of a run's child processes
 * (dir/proc-<PID>.h5, or what a child killed while streaming left in
 * dir/proc-<PID>.h5.partial; run --subprocesses) into the parent's
 * (sp_children.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sp_children.h"
#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_h5.h"
#include "sp_hosts.h"
#include "sp_stream.h"
#include "sp_stream_file.h"

/* A file name of the folder that names a child profile. */
struct child {
	int64_t pid;
	int64_t seq;                   /* 1, or k of proc-<PID>-<k>.h5: the k-th program the pid ran (os.exec*) */
	int partial;                   /* proc-<PID>.h5.partial: the child did not finish it */
	char *name;
};

/* The digits at s (at most 18) into *v; how many, 0 for none or too many. */
static size_t digits(const char *s, int64_t *v)
{
	size_t n = 0;
	for (*v = 0; s[n] >= '0' && s[n] <= '9'; n++) {
		if (n >= 18)
			return 0;
		*v = *v * 10 + (s[n] - '0');
	}
	return n;
}

/* The pid of a child profile's name "proc-<digits>.h5" (or, for a later
 * program the same process ran after os.exec*, "proc-<digits>-<k>.h5",
 * *seq k, else 1) or, with *partial set, that name + ".partial"; -1 for any
 * other name (a temporary file "proc-12.h5.tmp.34", a pid too long for
 * int64). */
static int64_t child_pid(const char *name, int *partial, int64_t *seq)
{
	if (strncmp(name, "proc-", 5) != 0)
		return -1;
	const char *s = name + 5;
	int64_t pid;
	size_t n = digits(s, &pid), k = 0;
	*seq = 1;
	if (n > 0 && s[n] == '-' && ((k = digits(s + n + 1, seq)) == 0 || *seq < 2))
		return -1;
	s += n + (k ? k + 1 : 0);
	*partial = strcmp(s, ".h5.partial") == 0;
	return n > 0 && (*partial || strcmp(s, ".h5") == 0) ? pid : -1;
}

int64_t sp_children_file_pid(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	int partial;
	int64_t seq;
	return path ? child_pid(slash ? slash + 1 : path, &partial, &seq) : -1;
}

/* Whether two names are the same child's (its finished and partial files). */
static int same_child(const struct child *x, const struct child *y)
{
	return x->pid == y->pid && x->seq == y->seq;
}

static int by_pid(const void *a, const void *b)
{
	const struct child *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->partial != y->partial)
		return x->partial - y->partial;   /* a finished file first */
	return strcmp(x->name, y->name);  /* proc-7.h5 before proc-07.h5: any fixed order */
}

/* Lists the child profiles of dir into *out (*n of them), sorted by pid. A
 * folder that cannot be opened holds none. Returns SP_OK or SP_ENOMEM. */
static enum sp_err list_children(const char *dir, struct child **out, size_t *n, struct sp_error *err)
{
	struct child *v = NULL;
	size_t nv = 0, cap = 0;
	enum sp_err rc = SP_OK;
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int partial;
		int64_t seq, pid = child_pid(e->d_name, &partial, &seq);
		if (pid < 0)
			continue;
		if (SP_GROW(&v, &cap, nv + 1) < 0 || !(v[nv].name = strdup(e->d_name))) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory listing the child profiles in %s", dir);
			break;
		}
		v[nv].partial = partial;
		v[nv].seq = seq;
		v[nv++].pid = pid;
	}
	if (d)
		closedir(d);
	if (rc != SP_OK) {
		for (size_t i = 0; i < nv; i++)
			free(v[i].name);
		free(v);
		return rc;
	}
	if (nv > 1)
		qsort(v, nv, sizeof *v, by_pid);
	*out = v;
	*n = nv;
	return SP_OK;
}

enum sp_err sp_children_files(const char *dir, char ***files, size_t *n, struct sp_error *err)
{
	struct child *v = NULL;
	size_t nv = 0, nf = 0;
	char **f = NULL;
	*files = NULL;
	*n = 0;
	enum sp_err rc = list_children(dir, &v, &nv, err);
	if (rc != SP_OK)
		return rc;
	if (nv && !(f = calloc(nv, sizeof *f)))
		rc = sp_error_set(err, SP_ENOMEM, "out of memory listing the child profiles in %s", dir);
	for (size_t i = 0; rc == SP_OK && i < nv; i++) {
		if (i > 0 && same_child(&v[i], &v[i - 1]))
			continue;   /* its finished and partial files: one child */
		/* The finished file's name (the merge looks for its partial one). */
		size_t name = strlen(v[i].name) - (v[i].partial ? strlen(".partial") : 0), len = strlen(dir) + name + 2;
		if (!(f[nf] = malloc(len))) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory listing the child profiles in %s", dir);
			break;
		}
		snprintf(f[nf++], len, "%s/%.*s", dir, (int)name, v[i].name);
	}
	for (size_t i = 0; i < nv; i++)
		free(v[i].name);
	free(v);
	if (rc != SP_OK) {
		sp_children_files_free(f, nf);
		return rc;
	}
	*files = f;
	*n = nf;
	return SP_OK;
}

void sp_children_files_free(char **files, size_t n)
{
	for (size_t i = 0; files && i < n; i++)
		free(files[i]);
	free(files);
}

static int there(const char *dir, const char *prefix, long pid, const char *suffix);
static int signal_waiting(long pid, int sig);

/* How many children in dir still stream into their partial file (a live
 * process holds it: one that has not finished it yet); after the first
 * second (!fresh) only those that said they write (writing-PID: they got
 * the signal, a child that did not goes on by itself as under python) or
 * have a signal (or sig) still to take;
 * 0 for none, no folder, or out of memory. */
static size_t children_streaming(const char *dir, int fresh, int sig)
{
	struct child *v = NULL;
	size_t nv = 0, live = 0, dlen = strlen(dir);
	struct sp_error err = {0};
	if (list_children(dir, &v, &nv, &err) != SP_OK)
		return 0;
	for (size_t i = 0; i < nv; i++) {
		/* A partial file only: its finished one sorts before it. */
		if (!v[i].partial || (i > 0 && same_child(&v[i], &v[i - 1])) ||
		    (!fresh && !there(dir, "writing-", (long)v[i].pid, "") && !signal_waiting((long)v[i].pid, sig)))
			continue;
		char *path = malloc(dlen + strlen(v[i].name) + 2);
		if (path) {
			sprintf(path, "%s/%s", dir, v[i].name);
			int l = sp_sfile_live(path);   /* 2: no locks there, the process says */
			live += l == 1 || (l == 2 && !sp_process_gone((long)v[i].pid));
			free(path);
		}
	}
	for (size_t i = 0; i < nv; i++)
		free(v[i].name);
	free(v);
	return live;
}

int sp_process_gone(long pid)
{
	if (kill((pid_t)pid, 0) != 0)
		return errno == ESRCH;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

/* Whether process pid has a signal it will take (pending, neither blocked
 * nor ignored) and has not taken yet, or has sig (> 0) blocked, as it is
 * from the moment its handler is entered until it returns: a child the
 * machine's load has not run since the process group's signal (or one
 * stopped meanwhile) before its handler said it writes; 0 where its /proc
 * entry cannot be read. */
static int signal_waiting(long pid, int sig)
{
	char path[64], line[128];
	unsigned long long pnd = 0, shd = 0, blk = 0, ign = 0, v;
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		char name[16];
		if (sscanf(line, "%15[A-Za-z]:%llx", name, &v) != 2)
			continue;
		if (!strcmp(name, "SigPnd"))
			pnd = v;
		else if (!strcmp(name, "ShdPnd"))
			shd = v;
		else if (!strcmp(name, "SigBlk"))
			blk = v;
		else if (!strcmp(name, "SigIgn"))
			ign = v;
	}
	fclose(f);
	return ((pnd | shd) & ~blk & ~ign) != 0 || (sig > 0 && sig <= 64 && (blk >> (sig - 1) & 1));
}

/* Whether dir/<prefix><pid><suffix> is there. */
static int there(const char *dir, const char *prefix, long pid, const char *suffix)
{
	char path[PATH_MAX];
	return (size_t)snprintf(path, sizeof path, "%s/%s%ld%s", dir, prefix, pid, suffix) < sizeof path &&
	       access(path, F_OK) == 0;
}

size_t sp_children_ending(const char *dir, int fresh, int sig)
{
	size_t ending = children_streaming(dir, fresh, sig);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int64_t pid;
		if (strncmp(e->d_name, "child-", 6) != 0 || digits(e->d_name + 6, &pid) == 0 ||
		    e->d_name[6 + digits(e->d_name + 6, &pid)] != '\0' || pid <= 0)
			continue;
		if (there(dir, "proc-", (long)pid, ".h5") || there(dir, "proc-", (long)pid, ".h5.partial") ||
		    sp_process_gone((long)pid))
			continue;   /* finished, streaming (counted above), or gone */
		ending += fresh || there(dir, "writing-", (long)pid, "") || signal_waiting((long)pid, sig);
	}
	if (d)
		closedir(d);
	return ending;
}

/* Moves every rank of c to the end of p, numbered from *next on (each
 * whole, or none when memory runs out); c keeps no ranks. */
static enum sp_err take_ranks(struct sp_profile *p, struct sp_profile *c, int *next, struct sp_error *err)
{
	if (c->nranks > SIZE_MAX / sizeof *p->ranks - p->nranks)
		return sp_error_set(err, SP_ENOMEM, "out of memory merging a child profile");
	struct sp_rank *r = realloc(p->ranks, (p->nranks + c->nranks) * sizeof *r);
	if (!r)
		return sp_error_set(err, SP_ENOMEM, "out of memory merging a child profile");
	p->ranks = r;
	for (size_t i = 0; i < c->nranks; i++) {
		struct sp_rank *rk = &p->ranks[p->nranks++];
		*rk = c->ranks[i];
		rk->rank = (*next)++;
		memset(&c->ranks[i], 0, sizeof c->ranks[i]);
	}
	c->nranks = 0;
	return SP_OK;
}

enum sp_err sp_children_merge(struct sp_profile *p, const char *dir, struct sp_children_found *found,
			      struct sp_error *err)
{
	struct sp_children_found f = {0};
	struct child *v = NULL;
	size_t nv = 0;
	enum sp_err rc;
	char *path = NULL;
	int *recovered = NULL;         /* the ranks merged from partial files */
	int64_t until = INT64_MAX;     /* their earliest last flush */

	if (found)
		*found = f;
	if (!p || !dir)
		return sp_error_set(err, SP_EINVAL, "sp_children_merge: NULL argument");
	if ((rc = list_children(dir, &v, &nv, err)) != SP_OK)
		return rc;
	int next = 0;
	for (size_t r = 0; r < p->nranks; r++)
		if (p->ranks[r].rank >= next)
			next = p->ranks[r].rank + 1;

	size_t dlen = strlen(dir);
	if (!(recovered = malloc((nv ? nv : 1) * sizeof *recovered))) {
		rc = sp_error_set(err, SP_ENOMEM, "out of memory merging the child profiles");
		goto out;
	}
	const struct child *merged = NULL;   /* the last child merged */
	for (size_t i = 0; i < nv; i++) {
		struct sp_profile *c = NULL;
		struct sp_error cerr = {0};
		if (merged && same_child(&v[i], merged))
			continue;   /* its finished file is in, or a second name of the same one */
		free(path);
		if (!(path = malloc(dlen + strlen(v[i].name) + 2))) {
			rc = sp_error_set(err, SP_ENOMEM, "out of memory merging the child profiles");
			goto out;
		}
		sprintf(path, "%s/%s", dir, v[i].name);
		enum sp_err crc = sp_h5_read(path, SP_READ_EVENTS, &c, &cerr);
		/* A child killed while it finished its file left it marked as
		 * open for writing: marked closed, it reads as a partial file. */
		if (v[i].partial && crc != SP_OK && crc != SP_ENOMEM && sp_stream_unmark_dead(path) == 1) {
			sp_profile_free(c);
			c = NULL;
			crc = sp_h5_read(path, SP_READ_EVENTS, &c, &cerr);
		}
		if (crc == SP_ENOMEM) {
			rc = sp_error_set(err, SP_ENOMEM, "%s", cerr.msg);
			goto out;
		}
		if (crc != SP_OK || c->nranks == 0 || c->nranks > (size_t)(INT32_MAX - next)) {
			f.unreadable++;
			sp_profile_free(c);
			continue;
		}
		int first = next, partial = c->partial;
		if (partial) {
			/* Its calls up to its last flush, a call open then ending
			 * there, as `recover` reads it; the child ended there, or
			 * at the end of a call a block written after it holds. */
			for (size_t k = 0; k < c->nranks; k++) {
				struct sp_rank *rk = &c->ranks[k];
				if (rk->run_end_ns != SP_NO_TIME)
					continue;
				rk->run_end_ns = c->partial_until_ns;
				for (size_t g = 0; g < rk->nregions; g++)
					if (rk->regions[g].stats.num_calls &&
					    rk->regions[g].stats.last_end_ns > rk->run_end_ns)
						rk->run_end_ns = rk->regions[g].stats.last_end_ns;
			}
			until = c->partial_until_ns < until ? c->partial_until_ns : until;
		}
		rc = take_ranks(p, c, &next, err);
		sp_profile_free(c);
		if (rc != SP_OK)
			goto out;
		f.processes += !merged || merged->pid != v[i].pid;   /* v is sorted by pid */
		merged = &v[i];
		f.merged++;
		if (partial)
			recovered[f.recovered++] = first;
	}
	rc = SP_OK;
	if (f.recovered) {
		/* As an MPI job's merge marks the ranks it recovered. */
		size_t len = 12 * f.recovered + 16;   /* every rank named, as merge.c's */
		char *list = malloc(len), at[24];
		snprintf(at, sizeof at, "%lld", (long long)until);
		if (!list || sp_kv_set(&p->meta, &p->nmeta, "incomplete_ranks",
				       sp_rank_list(list, len, recovered, f.recovered), SP_KV_TEXT) != 0 ||
		    sp_kv_set(&p->meta, &p->nmeta, "partial_until_ns", at, SP_KV_INT) != 0)
			rc = sp_error_set(err, SP_ENOMEM, "out of memory merging the child profiles");
		free(list);
	}
out:
	free(recovered);
	free(path);
	for (size_t i = 0; i < nv; i++)
		free(v[i].name);
	free(v);
	if (found)
		*found = f;
	return rc;
}
