/* cudart_standin.c - a recording stand-in for the CUDA runtime
 * (libcudart.so), for the tests of run --gpu (tests/e2e/test_gpu.py):
 * these machines have the CUDA toolkit but no GPU, so the real library's
 * cudaGetDeviceCount fails. This one has the two functions --gpu opens:
 * cudaGetDeviceCount gives $CUDART_STANDIN_DEVICES devices (default 1),
 * cudaDeviceSynchronize appends "sync TID" to $CUDART_STANDIN_LOG and
 * stands for device work by sleeping $CUDART_STANDIN_SYNC_US microseconds
 * (default 0). Loading the library appends "loaded", so a test sees that
 * it is opened only when asked for. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The settings, read once at load (a benchmark counts the syncs' cost). */
static const char *log_path;
static long sync_us;

static void say(const char *what)
{
	FILE *f = log_path ? fopen(log_path, "a") : NULL;
	if (f) {
		fprintf(f, "%s %ld\n", what, (long)syscall(SYS_gettid));
		fclose(f);
	}
}

__attribute__((constructor)) static void loaded(void)
{
	const char *us = getenv("CUDART_STANDIN_SYNC_US");
	log_path = getenv("CUDART_STANDIN_LOG");
	sync_us = us ? atol(us) : 0;
	say("loaded");
}

int cudaGetDeviceCount(int *count)
{
	const char *n = getenv("CUDART_STANDIN_DEVICES");
	*count = n ? atoi(n) : 1;
	say("count");
	return *count > 0 ? 0 : 100;   /* cudaErrorNoDevice */
}

int cudaDeviceSynchronize(void)
{
	say("sync");
	if (sync_us > 0) {
		struct timespec ts = {sync_us / 1000000, (sync_us % 1000000) * 1000};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	return 0;
}
