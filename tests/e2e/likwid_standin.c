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
 * makes the time negative and event 0 -inf. */
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REGIONS 64

static _Thread_local struct {
	int id;                        /* 1, 2, ... in markerThreadInit order; 0 before */
	size_t n;
	char names[MAX_REGIONS][128];
	int started[MAX_REGIONS];
	int count[MAX_REGIONS];
} me;

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
	me.id = atomic_fetch_add(&threads, 1) + 1;
	say("thread_init%s %d\n", NULL);
}

void likwid_markerClose(void)
{
	say("close%s %d\n", NULL);
}

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
		events[k] = c * (k + 1) * 1000.5;
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
