import ctypes, os, time
import scope_profiler as sp

lib = ctypes.CDLL(os.environ["KERNEL_SO"])
lib.spin.argtypes = [ctypes.c_longlong]
CYCLES = 40_000_000          # about 20 ms at 1.98 GHz
assert lib.spin(1000) == 0 and lib.sync_all() == 0   # the context is made here, outside the regions
for i in range(5):
    with sp.region("gpu_step"):
        assert lib.spin(CYCLES) == 0                 # a launch returns at once
    with sp.region("cpu_step"):
        time.sleep(0.002)
assert lib.sync_all() == 0
t0 = time.perf_counter()
lib.spin(CYCLES)
lib.sync_all()
print("one kernel, launched and synchronised by the script: %.2f ms" % ((time.perf_counter() - t0) * 1e3))
