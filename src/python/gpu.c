/* gpu.c - the CUDA runtime of run --gpu (sp_gpu.h), opened with dlopen
 * only when asked for. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "sp_gpu.h"

int (*sp_gpu_sync_fn)(void);

static struct {
	int tried, usable;
} gpu;

/* The library: SCOPE_PROFILER_CUDART, else libcudart's names in turn. */
static void *open_cudart(char *why, size_t len)
{
	const char *given = getenv("SCOPE_PROFILER_CUDART");
	static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
					    "libcudart.so.11.0"};
	if (given && *given) {
		void *h = dlopen(given, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(why, len, "cannot open SCOPE_PROFILER_CUDART=%s: %s", given, dlerror());
		return h;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	snprintf(why, len, "the CUDA runtime (libcudart.so) is not on the library search path "
		 "(LD_LIBRARY_PATH, or SCOPE_PROFILER_CUDART=PATH)");
	return NULL;
}

int sp_gpu_open(void)
{
	if (gpu.tried)
		return gpu.usable;
	gpu.tried = 1;
	char why[512] = "";
	void *h = open_cudart(why, sizeof why);
	int (*count)(int *) = h ? (int (*)(int *))dlsym(h, "cudaGetDeviceCount") : NULL;
	int (*sync)(void) = h ? (int (*)(void))dlsym(h, "cudaDeviceSynchronize") : NULL;
	int n = 0, rc = 0;
	if (h && (!count || !sync))
		snprintf(why, sizeof why, "the CUDA runtime has no cudaGetDeviceCount or cudaDeviceSynchronize");
	else if (h && ((rc = count(&n)) != 0 || n < 1))
		snprintf(why, sizeof why, "no usable CUDA device (cudaGetDeviceCount: error %d, %d devices)", rc, n);
	if (!h || !count || !sync || rc != 0 || n < 1) {
		fprintf(stderr, "scope-profiler: warning: --gpu (use_gpu): %s; regions are timed without "
			"synchronising the device\n", why);
		return 0;
	}
	sp_gpu_sync_fn = sync;
	return gpu.usable = 1;
}
