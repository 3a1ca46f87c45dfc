// A kernel that keeps one GPU thread busy for a given number of clock cycles.
#include <cuda_runtime.h>
__global__ void spin_kernel(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles) {
	}
}
extern "C" int spin(long long cycles)
{
	spin_kernel<<<1, 1>>>(cycles);
	return (int)cudaGetLastError();
}
extern "C" int sync_all(void)
{
	return (int)cudaDeviceSynchronize();
}
