/* likwid.c - LIKWID's marker API opened at run time (include/sp_likwid.h):
 * loading, per-thread initialisation, the registered names, and the
 * counters read at the end (GetRegion answers for the calling thread only,
 * so a thread's are read when it exits, by a thread-specific destructor). */
#include <dirent.h>
#include <dlfcn.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sp_likwid.h"

struct sp_likwid_api sp_lw;
_Thread_local int sp_likwid_thread_ready;
_Thread_local struct sp_likwid_depth sp_likwid_depth;

/* Events per region that GetRegion may return (LIKWID's groups have far
 * fewer). */
#define MAX_EVENTS 256

/* How long the end of a session waits for threads that ran marker regions
 * to finish exiting (only while some have not). */
#define WAIT_S 1

/* One thread's counters of one region. */
struct reading {
	size_t name;                   /* index into lw.names */
	int nevents, count;
	double time;
	double events[];
};

static struct {
	int state;                     /* 0 not tried, 1 loaded, -1 failed, 2 closed (metrics read) */
	char why[200];
	void *lib;
	pthread_key_t key;             /* a thread that ran regions: its exit reads them */
	pthread_mutex_t lock;          /* names and the exited threads' readings */
	pthread_cond_t exited;         /* a thread's readings were taken */
	size_t live;                   /* threads inited whose readings are not taken */
	char **names;
	size_t nnames, cap;
	struct reading **done;         /* exited threads' readings, a thread's in a row */
	size_t ndone, capdone;
	size_t nthreads_done;          /* threads whose readings are in done */
	size_t *thread_of;             /* done[i]'s thread number */
	size_t replaced;               /* values read not finite (or a negative time): 0 */
} lw = {.lock = PTHREAD_MUTEX_INITIALIZER, .exited = PTHREAD_COND_INITIALIZER};

static void close_markers(void);

static void at_exit_close(void)
{
	if (lw.state == 1)
		sp_lw.close();
}

void sp_likwid_close_now(void)
{
	if (lw.state == 1)
		close_markers();
}

void sp_likwid_stop_open(void)
{
	pthread_mutex_lock(&lw.lock);
	for (size_t i = sp_likwid_depth.cap; i-- > 0;)
		if (sp_likwid_depth.v[i]) {
			sp_likwid_depth.v[i] = 0;
			if (i < lw.nnames)
				sp_lw.stop(lw.names[i]);
		}
	pthread_mutex_unlock(&lw.lock);
}

static void thread_exit(void *unused);

/* A function of the library to look up, and where its pointer goes. */
struct symbol {
	const char *name;
	size_t off;                    /* in the struct of pointers */
};

/* Each of the n symbols of lw.lib into the struct at api; NULL, or the
 * name of the first one missing. */
static const char *resolve(void *api, const struct symbol *fns, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(lw.lib, fns[i].name);
		if (!f)
			return fns[i].name;
		memcpy((char *)api + fns[i].off, &f, sizeof f);
	}
	return NULL;
}

int sp_likwid_load(char *err, size_t len)
{
	if (lw.state == 1)
		return 0;
	if (lw.state == 2) {
		snprintf(err, len, "LIKWID's marker API was closed at the end of the previous --likwid session "
			 "(under likwid-perfctr -m its marker file is written once per process)");
		return -1;
	}
	if (lw.state < 0) {
		snprintf(err, len, "%s", lw.why);
		return -1;
	}
	const char *path = getenv("SCOPE_PROFILER_LIKWID_LIB");
	if (!path || !*path)
		path = "liblikwid.so.5";
	lw.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lw.lib) {
		const char *e = dlerror();
		snprintf(lw.why, sizeof lw.why, "cannot load LIKWID's library (%s); install likwid "
			 "(Debian: apt-get install likwid)", e ? e : path);
		goto fail;
	}
	static const struct symbol fns[] = {
		{"likwid_markerInit", offsetof(struct sp_likwid_api, init)},
		{"likwid_markerThreadInit", offsetof(struct sp_likwid_api, thread_init)},
		{"likwid_markerClose", offsetof(struct sp_likwid_api, close)},
		{"likwid_markerRegisterRegion", offsetof(struct sp_likwid_api, register_region)},
		{"likwid_markerStartRegion", offsetof(struct sp_likwid_api, start)},
		{"likwid_markerStopRegion", offsetof(struct sp_likwid_api, stop)},
		{"likwid_markerGetRegion", offsetof(struct sp_likwid_api, get)},
	};
	struct sp_likwid_api api;
	const char *missing = resolve(&api, fns, sizeof fns / sizeof fns[0]);
	if (missing) {
		snprintf(lw.why, sizeof lw.why, "LIKWID's library %s has no %s", path, missing);
		dlclose(lw.lib);
		lw.lib = NULL;
		goto fail;
	}
	if (pthread_key_create(&lw.key, thread_exit) != 0) {
		snprintf(lw.why, sizeof lw.why, "cannot create a thread-specific key");
		goto fail;
	}
	sp_lw = api;
	sp_lw.init();
	lw.state = 1;
	atexit(at_exit_close);
	return 0;
fail:
	lw.state = -1;
	snprintf(err, len, "%s", lw.why);
	return -1;
}

int sp_likwid_loaded(void)
{
	return lw.state == 1;
}

void sp_likwid_thread_init(void)
{
	sp_likwid_thread_ready = 1;
	pthread_mutex_lock(&lw.lock);   /* not while sp_likwid_metrics closes the API */
	lw.live++;
	sp_lw.thread_init();
	pthread_mutex_unlock(&lw.lock);
	pthread_setspecific(lw.key, &sp_likwid_thread_ready);
}

int sp_likwid_depth_grow(int32_t id)
{
	if (id < 0)
		return -1;
	size_t cap = sp_likwid_depth.cap ? sp_likwid_depth.cap : 16;
	while (cap <= (size_t)id)
		cap *= 2;
	uint32_t *v = realloc(sp_likwid_depth.v, cap * sizeof *v);
	if (!v)
		return -1;
	memset(v + sp_likwid_depth.cap, 0, (cap - sp_likwid_depth.cap) * sizeof *v);
	sp_likwid_depth.v = v;
	sp_likwid_depth.cap = cap;
	return 0;
}

int32_t sp_likwid_register(const char *name)
{
	int32_t rc = -1;
	pthread_mutex_lock(&lw.lock);
	for (size_t i = 0; i < lw.nnames; i++)
		if (strcmp(lw.names[i], name) == 0) {
			rc = (int32_t)i;
			goto out;
		}
	if (lw.nnames >= INT32_MAX)
		goto out;
	if (lw.nnames == lw.cap) {
		size_t cap = lw.cap ? 2 * lw.cap : 16;
		char **v = realloc(lw.names, cap * sizeof *v);
		if (!v)
			goto out;
		lw.names = v;
		lw.cap = cap;
	}
	if (!(lw.names[lw.nnames] = strdup(name)))
		goto out;
	rc = (int32_t)lw.nnames++;
	sp_lw.register_region(name);
out:
	pthread_mutex_unlock(&lw.lock);
	return rc;
}

/* The calling thread's counters of region i, or NULL when it did not run
 * it (or out of memory). */
static struct reading *read_region(size_t i)
{
	struct reading *rd = malloc(sizeof *rd + MAX_EVENTS * sizeof(double));
	if (!rd)
		return NULL;
	rd->name = i;
	rd->nevents = MAX_EVENTS;
	rd->count = 0;
	rd->time = 0;
	sp_lw.get(lw.names[i], &rd->nevents, rd->events, &rd->time, &rd->count);
	if (rd->count <= 0 || rd->nevents < 0 || rd->nevents > MAX_EVENTS) {
		free(rd);
		return NULL;
	}
	/* What the file may hold (h5read_likwid.c): a finite, non-negative
	 * time, finite events; anything else from the library is kept as 0,
	 * counted for the warning of the collection. */
	if (!isfinite(rd->time) || rd->time < 0) {
		rd->time = 0;
		lw.replaced++;
	}
	for (int k = 0; k < rd->nevents; k++)
		if (!isfinite(rd->events[k])) {
			rd->events[k] = 0;
			lw.replaced++;
		}
	return rd;
}

static int done_add(struct reading *rd, size_t thread)
{
	if (lw.ndone == lw.capdone) {
		size_t cap = lw.capdone ? 2 * lw.capdone : 16;
		struct reading **v = realloc(lw.done, cap * sizeof *v);
		size_t *t = realloc(lw.thread_of, cap * sizeof *t);
		if (v)
			lw.done = v;
		if (t)
			lw.thread_of = t;
		if (!v || !t)
			return -1;
		lw.capdone = cap;
	}
	lw.done[lw.ndone] = rd;
	lw.thread_of[lw.ndone++] = thread;
	return 0;
}

/* A thread that ran marker regions exits: its readings are kept. */
static void thread_exit(void *unused)
{
	pthread_mutex_lock(&lw.lock);
	size_t thread = lw.nthreads_done++;
	for (size_t i = 0; i < lw.nnames; i++) {
		struct reading *rd = read_region(i);
		if (rd && done_add(rd, thread) != 0)
			free(rd);
	}
	lw.live--;
	pthread_cond_broadcast(&lw.exited);
	pthread_mutex_unlock(&lw.lock);
	free(sp_likwid_depth.v);
	sp_likwid_depth = (struct sp_likwid_depth){NULL, 0};
}

static void done_clear(void)
{
	for (size_t i = 0; i < lw.ndone; i++)
		free(lw.done[i]);
	lw.ndone = 0;
	lw.nthreads_done = 0;
}

int sp_likwid_collect(struct sp_rank *rk, size_t *running, size_t *replaced)
{
	*running = 0;
	*replaced = 0;
	if (lw.state != 1)
		return 0;
	int rc = -1;
	pthread_mutex_lock(&lw.lock);
	/* A joined thread may still be on its way out (Python's join returns
	 * before the thread's destructors run): they are waited for, a while. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_S;
	size_t self = sp_likwid_thread_ready ? 1 : 0;
	while (lw.live > self && pthread_cond_timedwait(&lw.exited, &lw.lock, &until) == 0)
		;
	*running = lw.live - self;
	struct reading **mine = calloc(lw.nnames ? lw.nnames : 1, sizeof *mine);
	struct sp_likwid_region *out = calloc(lw.nnames ? lw.nnames : 1, sizeof *out);
	size_t n = 0;
	if (!mine || !out)
		goto out;
	for (size_t i = 0; i < lw.nnames && sp_likwid_thread_ready; i++)
		mine[i] = read_region(i);
	for (size_t i = 0; i < lw.nnames; i++) {
		if (!sp_rank_has_region(rk, lw.names[i]))
			continue;
		size_t rows = mine[i] ? 1 : 0, nev = mine[i] ? (size_t)mine[i]->nevents : 0;
		for (size_t k = 0; k < lw.ndone; k++)
			if (lw.done[k]->name == i) {
				rows++;
				if ((size_t)lw.done[k]->nevents > nev)
					nev = (size_t)lw.done[k]->nevents;
			}
		if (!rows)
			continue;
		struct sp_likwid_region *t = &out[n];
		if (!(t->region = strdup(lw.names[i])) ||
		    !(t->events = calloc(rows * (nev ? nev : 1), sizeof *t->events)) ||
		    !(t->count = calloc(rows, sizeof *t->count)) || !(t->time = calloc(rows, sizeof *t->time))) {
			sp_likwid_region_clear(t);
			goto out;
		}
		n++;
		t->nevents = nev;
		/* The calling thread first, then the exited ones in exit order. */
		for (size_t k = 0; k <= lw.ndone; k++) {
			const struct reading *rd = k == 0 ? mine[i] : lw.done[k - 1];
			if (!rd || rd->name != i)
				continue;
			size_t row = t->nthreads++;
			memcpy(&t->events[row * nev], rd->events, (size_t)rd->nevents * sizeof(double));
			t->count[row] = rd->count;
			t->time[row] = rd->time;
		}
	}
	rk->likwid = out;
	rk->nlikwid = n;
	out = NULL;
	rc = 0;
	*replaced = lw.replaced;
	lw.replaced = 0;
	done_clear();
out:
	if (out) {
		for (size_t i = 0; i < n; i++)
			sp_likwid_region_clear(&out[i]);
		free(out);
	}
	if (mine)
		for (size_t i = 0; i < lw.nnames; i++)
			free(mine[i]);
	free(mine);
	pthread_mutex_unlock(&lw.lock);
	return rc;
}

/* ---- derived metrics ---- */

/* What marker calls do once the API is closed: nothing. */
static void noop_void(void)
{
}

static int noop_tag(const char *tag)
{
	(void)tag;
	return 0;
}

static void noop_get(const char *tag, int *nevents, double *events, double *time, int *count)
{
	(void)tag;
	(void)events;
	*nevents = 0;
	*time = 0;
	*count = 0;
}

/* LIKWID's perfmon functions the metrics need (likwid.h's prototypes). */
struct perfmon_api {
	int (*groups)(void);
	int (*read_marker_file)(const char *filename);
	int (*regions)(void);
	char *(*tag)(int region);
	int (*group)(int region);
	int (*threads)(int region);
	int (*count)(int region, int thread);
	int (*nmetrics)(int group);
	char *(*metric_name)(int group, int metric);
	double (*metric)(int region, int metric, int thread);
};

/* The library's perfmon functions into *api; 0, or -1 naming the first
 * missing one in why. */
static int perfmon_resolve(struct perfmon_api *api, char *why, size_t len)
{
	static const struct symbol fns[] = {
		{"perfmon_getNumberOfGroups", offsetof(struct perfmon_api, groups)},
		{"perfmon_readMarkerFile", offsetof(struct perfmon_api, read_marker_file)},
		{"perfmon_getNumberOfRegions", offsetof(struct perfmon_api, regions)},
		{"perfmon_getTagOfRegion", offsetof(struct perfmon_api, tag)},
		{"perfmon_getGroupOfRegion", offsetof(struct perfmon_api, group)},
		{"perfmon_getThreadsOfRegion", offsetof(struct perfmon_api, threads)},
		{"perfmon_getCountOfRegion", offsetof(struct perfmon_api, count)},
		{"perfmon_getNumberOfMetrics", offsetof(struct perfmon_api, nmetrics)},
		{"perfmon_getMetricName", offsetof(struct perfmon_api, metric_name)},
		{"perfmon_getMetricOfRegionThread", offsetof(struct perfmon_api, metric)},
	};
	const char *missing = resolve(api, fns, sizeof fns / sizeof fns[0]);
	if (missing)
		snprintf(why, len, "LIKWID's library has no %s", missing);
	return missing ? -1 : 0;
}

/* The marker API closed: LIKWID writes its marker file; later marker calls
 * do nothing. */
static void close_markers(void)
{
	sp_lw.close();
	sp_lw.init = noop_void;
	sp_lw.thread_init = noop_void;
	sp_lw.close = noop_void;
	sp_lw.register_region = noop_tag;
	sp_lw.start = noop_tag;
	sp_lw.stop = noop_tag;
	sp_lw.get = noop_get;
	lw.state = 2;
	/* The topology, NUMA and affinity modules the formulas consult: newer
	 * LIKWIDs release the last two when closing (each init is idempotent). */
	void *f;
	int (*init_int)(void);
	void (*init_void)(void);
	if ((f = dlsym(lw.lib, "topology_init"))) {
		memcpy(&init_int, &f, sizeof f);
		init_int();
	}
	if ((f = dlsym(lw.lib, "numa_init"))) {
		memcpy(&init_int, &f, sizeof f);
		init_int();
	}
	if ((f = dlsym(lw.lib, "affinity_init"))) {
		memcpy(&init_void, &f, sizeof f);
		init_void();
	}
}

/* Appends name to the newline-separated list *out (its length *n). */
static int names_add(char **out, size_t *n, const char *name)
{
	size_t add = strlen(name) + (*n ? 1 : 0);
	char *v = realloc(*out, *n + add + 1);
	if (!v)
		return -1;
	if (*n)
		v[(*n)++] = '\n';
	memcpy(v + *n, name, strlen(name) + 1);
	*n += strlen(name);
	*out = v;
	return 0;
}

/* Whether LIKWID's reader of its marker file cannot take a registered
 * name: it takes a region's name up to the first white space, into 100
 * bytes (longer ones overflow it). 1 after saying which in why[len], or 0.
 * Under lw.lock. */
static int names_unreadable(char *why, size_t len)
{
	for (size_t i = 0; i < lw.nnames; i++) {
		const char *n = lw.names[i];
		if (strlen(n) >= 99 || n[strcspn(n, " \t\n\r\f\v")]) {
			snprintf(why, len, "LIKWID's marker file reader cannot take region '%.60s%s' (white space, "
				 "or 99 bytes or more)", n, strlen(n) > 60 ? "…" : "");
			return 1;
		}
	}
	return 0;
}

/* The rank's table of the region named tag, or NULL. */
static struct sp_likwid_region *tagged(struct sp_rank *rk, const char *tag)
{
	for (size_t k = 0; k < rk->nlikwid; k++)
		if (strcmp(rk->likwid[k].region, tag) == 0)
			return &rk->likwid[k];
	return NULL;
}

/* Region r's nm metrics into t: a row per LIKWID thread of the nt that ran
 * the region (its file lists every thread under every region); none when
 * none did. 0, or -1 out of memory. */
static int read_rows(const struct perfmon_api *pm, int r, int nt, int nm, struct sp_likwid_region *t)
{
	size_t rows = 0;
	for (int th = 0; th < nt; th++)
		rows += pm->count(r, th) > 0;
	if (!rows)
		return 0;
	if (!(t->metrics = malloc(rows * (size_t)nm * sizeof *t->metrics)))
		return -1;
	for (int th = 0, row = 0; th < nt; th++) {
		if (pm->count(r, th) <= 0)
			continue;
		for (int m = 0; m < nm; m++) {
			double v = pm->metric(r, m, th);
			t->metrics[(size_t)row * (size_t)nm + (size_t)m] = isfinite(v) ? v : NAN;
		}
		row++;
	}
	t->nmrows = rows;
	t->nmetrics = (size_t)nm;
	return 0;
}

int sp_likwid_metrics(struct sp_rank *rk, char **names, char *why, size_t len)
{
	struct perfmon_api pm;
	*names = NULL;
	why[0] = '\0';
	const char *path = getenv("LIKWID_FILEPATH");
	if (lw.state != 1 || !path || !*path || !rk->nlikwid)
		return 0;
	if (perfmon_resolve(&pm, why, len) != 0)
		return 0;
	/* The marker API closes under the lock that thread initialisation and
	 * registration take, once no thread that ran marker regions runs (the
	 * caller holds the GIL too: no Python thread enters a region then). */
	pthread_mutex_lock(&lw.lock);
	if (names_unreadable(why, len)) {
		pthread_mutex_unlock(&lw.lock);
		return 0;
	}
	size_t live = lw.live - (sp_likwid_thread_ready ? 1 : 0);
	if (!live && pm.groups() > 0)
		close_markers();
	pthread_mutex_unlock(&lw.lock);
	if (live) {
		snprintf(why, len, "threads that ran marker regions still run");
		return 0;
	}
	if (lw.state != 2) {
		snprintf(why, len, "LIKWID's perfmon module has no event set");
		return 0;
	}
	if (pm.read_marker_file(path) < 0) {
		snprintf(why, len, "LIKWID cannot read its marker file %.200s", path);
		return 0;
	}
	size_t nlen = 0;
	int group = -1, nm = 0;
	for (int r = 0, nr = pm.regions(); r < nr; r++) {
		const char *tag = pm.tag(r);
		int g = pm.group(r), nt = pm.threads(r);
		struct sp_likwid_region *t = tag ? tagged(rk, tag) : NULL;
		if (!t || t->nmetrics || nt <= 0 || g < 0)
			continue;
		if (group < 0) {   /* the first region's group names the metrics */
			nm = pm.nmetrics(g);
			if (nm <= 0 || nm > MAX_EVENTS)
				break;
			for (int m = 0; m < nm; m++) {
				const char *mn = pm.metric_name(g, m);
				if (names_add(names, &nlen, mn && *mn ? mn : "?") != 0)
					goto nomem;
			}
			group = g;
		}
		if (g != group)    /* only one group is measured in a run */
			continue;
		if (read_rows(&pm, r, nt, nm, t) != 0)
			goto nomem;
	}
	if (group < 0) {
		free(*names);
		*names = NULL;
		snprintf(why, len, "LIKWID's group defines no metrics for the regions of its marker file");
	}
	return 0;
nomem:
	free(*names);
	*names = NULL;
	return -1;
}

/* ---- event names ---- */

/* Appends the event names of an explicit list "EV:CTR,EV:CTR" (the part
 * before each ':') to *out, comma-separated. */
static char *names_of_list(const char *list)
{
	char *out = malloc(strlen(list) + 1), *p = out;
	if (!out)
		return NULL;
	for (const char *s = list; *s;) {
		size_t item = strcspn(s, ","), name = strcspn(s, ":,");
		if (name > item)
			name = item;
		if (name) {
			if (p != out)
				*p++ = ',';
			memcpy(p, s, name);
			p += name;
		}
		s += item;
		if (*s == ',')
			s++;
	}
	*p = '\0';
	return out;
}

/* The events of a group file's EVENTSET section ("COUNTER EVENT" lines),
 * comma-separated, and their number in *n; NULL when unreadable. */
static char *names_of_group(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char line[512], *out = NULL;
	size_t len = 0;
	int in = 0;
	*n = 0;
	FILE *m = open_memstream(&out, &len);
	if (!m) {
		fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof line, f)) {
		char ctr[128], ev[256];
		if (strncmp(line, "EVENTSET", 8) == 0) {
			in = 1;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "%127s %255s", ctr, ev) != 2)
			break;   /* the blank line that ends the section */
		fprintf(m, "%s%s", *n ? "," : "", ev);
		(*n)++;
	}
	fclose(f);
	if (fclose(m) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

char *sp_likwid_event_names(size_t nevents)
{
	const char *events = getenv("LIKWID_EVENTS");
	if (!events || !*events)
		return strdup("");
	if (strchr(events, ':'))
		return names_of_list(events);
	/* A group name (several, '|'-separated, when LIKWID switches groups:
	 * the first is the one measured). */
	char group[128];
	size_t glen = strcspn(events, "|");
	if (glen >= sizeof group || strchr(events, '/'))
		return strdup("");
	memcpy(group, events, glen);
	group[glen] = '\0';
	const char *dir = getenv("SCOPE_PROFILER_LIKWID_GROUPS");
	if (!dir || !*dir)
		dir = "/usr/share/likwid/perfgroups";
	DIR *d = opendir(dir);
	if (!d)
		return strdup("");
	char *found = NULL;
	int ambiguous = 0;
	struct dirent *e;
	while ((e = readdir(d)) && !ambiguous) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		size_t n = 0;
		snprintf(path, sizeof path, "%s/%s/%s.txt", dir, e->d_name, group);
		char *names = names_of_group(path, &n);
		if (!names || n != nevents) {
			free(names);
			continue;
		}
		if (found && strcmp(found, names) != 0)
			ambiguous = 1;
		free(found);
		found = names;
	}
	closedir(d);
	if (!found || ambiguous) {
		free(found);
		return strdup("");
	}
	return found;
}
