/* sp_gpu.h - run --gpu / setup(use_gpu=True) (gpu.c): region times that
 * include the device work they launched. At each call's entry and exit
 * the current CUDA device is synchronised (cudaDeviceSynchronize), so a
 * call's interval holds the kernels it launched; the time its exit waited
 * is added to the region's gpu_wait_ns. The CUDA runtime (libcudart) is
 * opened with dlopen when --gpu is asked for, never linked nor loaded
 * otherwise: SCOPE_PROFILER_CUDART names the library to open, else
 * libcudart.so (and its sonames 13, 12, 11) on the library search path.
 * The paths that synchronise are chosen at setup (sp_mode.gpu). Include
 * <Python.h> first. */
#ifndef SP_GPU_H
#define SP_GPU_H

#include <stdint.h>

#include "sp_clock.h"

/* cudaDeviceSynchronize, once sp_gpu_open said 1. */
extern int (*sp_gpu_sync_fn)(void);

/* The runtime opened (once) and a device found: 1; 0 when there is none
 * usable (no library, no device): said once on stderr in one line, and
 * regions are then timed without synchronising. */
int sp_gpu_open(void);

/* Synchronises the device at a call's entry. */
static inline void sp_gpu_sync(void)
{
	sp_gpu_sync_fn();
}

/* Synchronises the device at a call's exit: the nanoseconds waited. */
static inline int64_t sp_gpu_wait(void)
{
	int64_t t0 = sp_clock_ns();
	sp_gpu_sync_fn();
	return sp_clock_ns() - t0;
}

#endif
