/* likwid_standin.c - a recording stand-in for LIKWID's liblikwid.so.5, for
 * the tests and the benchmark only: these machines' CPUs cannot be read by
 * LIKWID, so tests/e2e/test_likwid.py builds this as liblikwid.so.5 and
 * puts its folder first on LD_LIBRARY_PATH. It has LIKWID's marker
 * functions; each call is appended as one line to the file named by
 * $LIKWID_STANDIN_LOG (nothing is logged when unset: no-op markers), and
 * likwid_markerGetRegion returns made-up deterministic counters of the
 * calling thread: count = the region's completed start/stop pairs in that
 * thread, time = count * 0.5 s, event k = count * (k + 1) * 1000.5, with
 * $LIKWID_STANDIN_NEVENTS events (default 3). For the tests of bad
 * readings, $LIKWID_STANDIN_BAD=nan makes the time and event 1 NaN, =neg
 * makes the time negative and event 0 -inf.
 *
 * The derived metrics, as likwid-perfctr -m sets them up: with
 * $LIKWID_FILEPATH set, likwid_markerClose writes every thread's counters
 * of every region to that file (one line per region and thread, threads
 * in markerThreadInit order, as LIKWID's marker file lists them), and the
 * perfmon functions read it back and evaluate two made-up formulas of
 * "group 0": "Runtime (RDTSC) [s]" = time and "Event 0 rate [1/s]" =
 * event 0 / time (NaN for a thread that did not run the region). Built
 * with -DNO_PERFMON it has no perfmon functions (an old library). */
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REGIONS 64
#define MAX_THREADS 64

/* Each thread's regions, kept after it exits (the marker file lists them). */
struct thread {
	int id;                        /* 1, 2, ... in markerThreadInit order; 0 before */
	size_t n;
	char names[MAX_REGIONS][128];
	int started[MAX_REGIONS];
	int count[MAX_REGIONS];
};
static struct thread all[MAX_THREADS + 1];   /* [0]: threads never inited */
static _Thread_local struct thread *mine;
#define me (*(mine ? mine : &all[0]))

static atomic_int threads;

static void say(const char *fmt, const char *tag)
{
	const char *path = getenv("LIKWID_STANDIN_LOG");
	if (!path)
		return;
	char line[300];
	int n = snprintf(line, sizeof line, fmt, tag ? tag : "", me.id);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

static int slot(const char *tag)
{
	for (size_t i = 0; i < me.n; i++)
		if (strcmp(me.names[i], tag) == 0)
			return (int)i;
	if (me.n == MAX_REGIONS)
		return -1;
	snprintf(me.names[me.n], sizeof me.names[0], "%s", tag);
	return (int)me.n++;
}

void likwid_markerInit(void)
{
	say("init%s %d\n", NULL);
}

void likwid_markerThreadInit(void)
{
	int id = atomic_fetch_add(&threads, 1) + 1;
	mine = &all[id <= MAX_THREADS ? id : 0];
	me.id = id;
	say("thread_init%s %d\n", NULL);
}

static double event(int count, int k)
{
	return count * (k + 1) * 1000.5;
}

/* The marker file: "threads regions groups", "i:tag-0" per region, then
 * "region group thread count time nevents events..." per region and
 * thread. */
static void write_marker_file(const char *path)
{
	const char *env = getenv("LIKWID_STANDIN_NEVENTS");
	int nev = env ? atoi(env) : 3, nthreads = atomic_load(&threads);
	char names[MAX_REGIONS][128];
	int nregions = 0;
	for (int t = 1; t <= nthreads && t <= MAX_THREADS; t++)
		for (size_t i = 0; i < all[t].n; i++) {
			int known = 0;
			for (int r = 0; r < nregions && !known; r++)
				known = strcmp(names[r], all[t].names[i]) == 0;
			if (!known && nregions < MAX_REGIONS)
				snprintf(names[nregions++], sizeof names[0], "%s", all[t].names[i]);
		}
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "%d %d 1\n", nthreads, nregions);
	for (int r = 0; r < nregions; r++)
		fprintf(f, "%d:%s-0\n", r, names[r]);
	for (int r = 0; r < nregions; r++)
		for (int t = 1; t <= nthreads && t <= MAX_THREADS; t++) {
			int c = 0;
			for (size_t i = 0; i < all[t].n; i++)
				if (strcmp(all[t].names[i], names[r]) == 0)
					c = all[t].count[i];
			fprintf(f, "%d 0 %d %d %e %d", r, t - 1, c, c * 0.5, nev);
			for (int k = 0; k < nev; k++)
				fprintf(f, " %e", event(c, k));
			fputc('\n', f);
		}
	fclose(f);
}

void likwid_markerClose(void)
{
	say("close%s %d\n", NULL);
	const char *path = getenv("LIKWID_FILEPATH");
	if (path)
		write_marker_file(path);
}

#ifndef NO_PERFMON
/* What perfmon_readMarkerFile read. */
static struct {
	int nthreads, nregions;
	char tags[MAX_REGIONS][128];
	int count[MAX_REGIONS][MAX_THREADS];
	double time[MAX_REGIONS][MAX_THREADS], ev0[MAX_REGIONS][MAX_THREADS];
} file;

int topology_init(void)
{
	say("topology_init%s %d\n", NULL);
	return 0;
}

int numa_init(void)
{
	return 0;
}

void affinity_init(void)
{
}

int perfmon_getNumberOfGroups(void)
{
	return 1;
}

int perfmon_readMarkerFile(const char *path)
{
	say("perfmon_readMarkerFile %s %d\n", path);
	FILE *f = fopen(path, "r");
	char line[4096];
	int groups;
	if (!f || !fgets(line, sizeof line, f) ||
	    sscanf(line, "%d %d %d", &file.nthreads, &file.nregions, &groups) != 3) {
		if (f)
			fclose(f);
		return -22;
	}
	while (fgets(line, sizeof line, f)) {
		int r, g, t, c, nev;
		double time, ev0 = 0;
		char *colon = strchr(line, ':');
		if (colon) {
			r = atoi(line);
			char *dash = strrchr(colon, '-');
			if (r >= 0 && r < MAX_REGIONS && dash)
				snprintf(file.tags[r], sizeof file.tags[0], "%.*s", (int)(dash - colon - 1), colon + 1);
		} else if (sscanf(line, "%d %d %d %d %le %d %le", &r, &g, &t, &c, &time, &nev, &ev0) >= 6 &&
			   r >= 0 && r < MAX_REGIONS && t >= 0 && t < MAX_THREADS) {
			file.count[r][t] = c;
			file.time[r][t] = time;
			file.ev0[r][t] = ev0;
		}
	}
	fclose(f);
	return file.nregions;
}

int perfmon_getNumberOfRegions(void)
{
	return file.nregions;
}

char *perfmon_getTagOfRegion(int r)
{
	return r >= 0 && r < file.nregions ? file.tags[r] : NULL;
}

int perfmon_getGroupOfRegion(int r)
{
	return 0;
}

int perfmon_getThreadsOfRegion(int r)
{
	return file.nthreads;
}

int perfmon_getCountOfRegion(int r, int t)
{
	return r >= 0 && r < MAX_REGIONS && t >= 0 && t < MAX_THREADS ? file.count[r][t] : 0;
}

int perfmon_getNumberOfMetrics(int g)
{
	return 2;
}

char *perfmon_getMetricName(int g, int m)
{
	static char *names[] = {"Runtime (RDTSC) [s]", "Event 0 rate [1/s]"};
	return m >= 0 && m < 2 ? names[m] : NULL;
}

double perfmon_getMetricOfRegionThread(int r, int m, int t)
{
	if (r < 0 || r >= MAX_REGIONS || t < 0 || t >= MAX_THREADS || !file.count[r][t])
		return NAN;
	return m == 0 ? file.time[r][t] : file.ev0[r][t] / file.time[r][t];
}
#endif

int likwid_markerRegisterRegion(const char *tag)
{
	say("register %s %d\n", tag);
	return 0;
}

int likwid_markerStartRegion(const char *tag)
{
	int i = slot(tag);
	say("start %s %d\n", tag);
	if (i < 0 || me.started[i])
		return -1;
	me.started[i] = 1;
	return 0;
}

int likwid_markerStopRegion(const char *tag)
{
	int i = slot(tag);
	say("stop %s %d\n", tag);
	if (i < 0 || !me.started[i])
		return -1;
	me.started[i] = 0;
	me.count[i]++;
	return 0;
}

void likwid_markerGetRegion(const char *tag, int *nevents, double *events, double *time, int *count)
{
	const char *env = getenv("LIKWID_STANDIN_NEVENTS");
	int want = env ? atoi(env) : 3, i = slot(tag);
	say("get %s %d\n", tag);
	if (want > *nevents)
		want = *nevents;
	int c = i < 0 ? 0 : me.count[i];
	for (int k = 0; k < want; k++)
		events[k] = event(c, k);
	*nevents = want;
	*time = c * 0.5;
	*count = c;
	const char *bad = getenv("LIKWID_STANDIN_BAD");
	if (bad && strcmp(bad, "nan") == 0) {
		*time = NAN;
		if (want > 1)
			events[1] = NAN;
	} else if (bad && strcmp(bad, "neg") == 0) {
		*time = -*time;
		if (want > 0)
			events[0] = -INFINITY;
	}
}
