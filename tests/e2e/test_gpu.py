"""`run --gpu` / `setup(use_gpu=True)`: the CUDA device synchronised at
each region call's entry and exit, the time the exits waited stored per
region (gpu_wait_ns) and shown by `summary` as "GPU wait".

These machines have the CUDA toolkit but no GPU (the real libcudart's
cudaGetDeviceCount fails), so the tests build a recording stand-in
(tests/e2e/cudart_standin.c) as libcudart.so in the build folder and name it
with SCOPE_PROFILER_CUDART (or put its folder on LD_LIBRARY_PATH): it logs
every call, gives one device and stands for device work by sleeping in
cudaDeviceSynchronize."""
import json
import os
import pathlib

import h5py
import pytest

from conftest import build_standin, one_line_error, regions

STANDIN_SRC = pathlib.Path(__file__).with_name("cudart_standin.c")
SYNC_US = 2000

SCRIPT = """
    import scope_profiler as sp

    @sp.profile("kernel")
    def kernel():
        pass

    for i in range(3):
        with sp.region("step"):
            kernel()
            kernel()
"""


@pytest.fixture(scope="module")
def standin():
    """build/cudart-standin/libcudart.so"""
    return build_standin(STANDIN_SRC.name, "cudart-standin", "libcudart.so", "-Werror")


def gpu_env(sp, lib, **more):
    env = {"SCOPE_PROFILER_CUDART": str(lib), "CUDART_STANDIN_LOG": str(sp.tmp / "cudart.log"),
           "CUDART_STANDIN_SYNC_US": str(SYNC_US)}
    env.update(more)
    return env


def log(sp):
    path = sp.tmp / "cudart.log"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def test_gpu_syncs_each_call_and_stores_the_wait(sp, standin):
    """Two synchronisations per call (entry and exit), in the calling
    thread; each region's gpu_wait_ns holds its exits' waits (a stand-in
    sync sleeps SYNC_US), inside its total; `summary` shows them."""
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--gpu", "script.py", env=gpu_env(sp, standin))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert log(sp) == ["loaded", "count"] + ["sync"] * (2 * (3 + 6))
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        rs = regions(f)
        table = f["rank0/regions"]
        assert "gpu_wait_ns" in table
        for name, calls in (("step", 3), ("kernel", 6)):
            r = rs[name]
            wait = int(table["gpu_wait_ns"][list(rs).index(name)])
            assert int(r.attrs["num_calls"]) == calls
            assert calls * SYNC_US * 1000 <= wait <= int(r.attrs["total_ns"])
        # A step holds its own exit's wait and its kernels' entry and exit
        # waits: at least 5 syncs each.
        assert int(rs["step"].attrs["min_ns"]) >= 5 * SYNC_US * 1000
    # The read API has it too (seconds and ns), the same as the file's.
    sp.script("""
        import json, sys
        import scope_profiler as sp
        r = sp.read_h5("profiling_data.h5")
        print(json.dumps({n: [r.get_region(n)[0].gpu_wait_ns, r.get_region(n).gpu_wait]
                          for n in ("step", "kernel")}))
    """, name="read.py")
    read = sp("run", "-q", "--no-output", "read.py")
    assert read.returncode == 0, read.stderr
    got = json.loads(read.stdout.splitlines()[-1])
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        names = list(regions(f))
        for name in ("step", "kernel"):
            ns = int(f["rank0/regions"]["gpu_wait_ns"][names.index(name)])
            assert got[name] == [ns, ns / 1e9]
    out = sp("summary", "profiling_data.h5")
    assert out.returncode == 0, out.stderr
    gpu = out.stdout.split("\nGPU wait")[1].splitlines()
    kernel = next(ln.split() for ln in gpu if ln.startswith("kernel"))
    # kernel, calls, total (value unit), GPU wait (value unit), %
    assert kernel[1] == "6" and kernel[3] == kernel[5] == "ms", kernel
    assert float(kernel[4]) >= 6 * SYNC_US / 1000


def test_without_gpu_the_runtime_is_never_loaded(sp, standin):
    """No --gpu: libcudart is not opened, and the file has no gpu_wait_ns
    column (readers then show no GPU wait)."""
    sp.script(SCRIPT)
    proc = sp("run", "script.py", env=gpu_env(sp, standin))
    assert proc.returncode == 0, proc.stderr
    assert log(sp) == []
    assert "GPU wait" not in proc.stdout
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        assert "gpu_wait_ns" not in f["rank0/regions"]


def test_no_device_warns_once_and_does_not_sync(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--gpu", "script.py", env=gpu_env(sp, standin, CUDART_STANDIN_DEVICES="0"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "--gpu" in lines[0] and "no usable CUDA device" in lines[0], lines
    assert "sync" not in log(sp)
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        assert "gpu_wait_ns" not in f["rank0/regions"]


def test_no_runtime_warns_once(sp):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--gpu", "script.py",
              env={"SCOPE_PROFILER_CUDART": str(sp.tmp / "missing" / "libcudart.so")})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "cannot open SCOPE_PROFILER_CUDART" in lines[0], lines


def test_library_search_path_and_setup(sp, standin):
    """Without SCOPE_PROFILER_CUDART, libcudart.so is looked up on the
    library search path; setup(use_gpu=True) from a script does the same."""
    sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(use_gpu=True, file_path="out.h5")
        for i in range(4):
            with sp.region("r"):
                pass
        sp.ProfileManager.finalize(verbose=False)
    """)
    env = gpu_env(sp, standin, LD_LIBRARY_PATH=f"{standin.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    env["SCOPE_PROFILER_CUDART"] = ""
    proc = sp("run", "script.py", env=env)
    assert proc.returncode == 0, proc.stderr
    assert log(sp).count("sync") == 8
    with h5py.File(sp.tmp / "out.h5") as f:
        assert int(f["rank0/regions/gpu_wait_ns"][0]) >= 4 * SYNC_US * 1000


@pytest.mark.parametrize("other", ["--aggregate", "--recursive", "--track-async"])
def test_gpu_refuses(sp, other):
    sp.script("pass\n")
    proc = sp("run", "--gpu", other, "script.py")
    one_line_error(proc, "--gpu cannot be combined with", other)
    assert proc.returncode == 2


def test_gpu_refuses_recursive_decorators(sp, standin):
    """profile(recursive=True) would make every nested call wait for the
    device: refused under use_gpu, either way round."""
    sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(use_gpu=True, deactivate_file_output=True)
        try:
            sp.profile("f", recursive=True)(lambda: None)
        except ValueError as e:
            print("refused:", e)
        sp.ProfileManager.finalize(verbose=False)
        g = sp.profile("g", recursive=True)(lambda: None)
        try:
            sp.ProfileManager.setup(use_gpu=True, deactivate_file_output=True)
        except ValueError as e:
            print("refused:", e)
    """)
    proc = sp("run", "-q", "--no-output", "script.py", env=gpu_env(sp, standin))
    assert proc.returncode == 0, proc.stderr
    assert "refused: profile(recursive=True) cannot be combined with --gpu" in proc.stdout
    assert "refused: use_gpu cannot be combined with a function decorated with profile(recursive=True)" \
        in proc.stdout


def test_overlapping_runs_of_a_decorated_coroutine_keep_their_own_times(sp, standin):
    """Two runs of a decorated async def that overlap on one thread: each
    call ends at its own run's end, with the device synchronised at its
    start and end (two syncs each) and its wait in gpu_wait_ns. Before,
    --gpu ended whichever call was innermost: the 0.05 s run was stored as
    the 0.3 s one and the other way round."""
    sp.script("""
        import asyncio, time
        import scope_profiler as sp

        @sp.profile("co")
        async def co(secs):
            await asyncio.sleep(secs)

        async def main():
            await asyncio.gather(co(0.05), co(0.3))

        asyncio.run(main())
    """)
    proc = sp("run", "-q", "--gpu", "-o", "g.h5", "script.py", env=gpu_env(sp, standin))
    assert proc.returncode == 0, proc.stderr
    assert log(sp) == ["loaded", "count"] + ["sync"] * 4
    with h5py.File(sp.tmp / "g.h5") as f:
        r = regions(f)["co"]
        starts, ends = r["start_times"][:], r["end_times"][:]
        short, long_ = sorted(int(e - s) for s, e in zip(starts, ends))
        # the run started first is the short one: it ends first
        first = int(starts.argmin())
        assert int(ends[first]) == int(ends.min())
        assert short < long_ and long_ >= 299_000_000 and short >= 49_000_000
        wait = int(f["rank0/regions"]["gpu_wait_ns"][list(regions(f)).index("co")])
        assert wait >= 2 * SYNC_US * 1000
