"""`run --memory` and setup(use_memray=True): each call's bytes allocated
(dataset alloc_bytes beside the start and end times, nested calls included)
and each region's peak of live bytes, read back with h5py, the summary and
the read API. The sizes are the script's own (a bytearray of a known size);
everything else allocates far less."""
import json

import h5py
import pytest

from conftest import one_line_error, regions
from test_mpi import mpirun

N = 20_000_000   # bytes of the big block; the script's others are far fewer

SCRIPT = f"""
import sys
import scope_profiler as sp

big, small, outer = sp.region("big"), sp.region("small"), sp.region("outer")
nothing = sp.region("nothing")

@sp.profile
def make(n):
    return len(bytearray(n))

for _ in range(3):
    with outer:
        with big:
            b = bytearray({N})
            del b
        with nothing:
            pass
        with small:
            x = sum(range(10))
        make({N} // 2)
print("script output", x)
"""


def alloc(f, name, rank=0):
    return [int(v) for v in regions(f, rank)[name]["alloc_bytes"]]


def peak(f, name, rank=0):
    table = f[f"rank{rank}/regions"]
    row = [bytes(n).decode() for n in table["name"][:]].index(name)
    return int(table["peak_live_bytes"][row]) if "peak_live_bytes" in table else None


def has_alloc_data(f):
    found = []
    f.visit(lambda n: found.append(n) if n.rsplit("/", 1)[-1] == "alloc_bytes" else None)
    return found


def test_a_known_block_counts_in_its_call_nested_calls_in_the_outer_one(sp):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--memory", "-o", "m.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "m.h5") as f:
        big, small, outer, make = (alloc(f, n) for n in ("big", "small", "outer", "make"))
        assert len(big) == len(small) == len(outer) == len(make) == 3
        assert all(v >= N for v in big)
        assert all(0 <= v < N // 100 for v in small)
        assert all(v >= N // 2 for v in make)
        for i in range(3):
            assert outer[i] >= big[i] + small[i] + make[i]
        # The big block lived and was freed inside `big`: its peak saw it,
        # that of `small` (opened when it was gone) did not: it stays near
        # that of a region around nothing (the interpreter's own live bytes).
        assert peak(f, "big") >= N
        assert peak(f, "outer") >= N
        assert peak(f, "small") < peak(f, "nothing") + N // 2


def test_script_output_and_status_unchanged(sp):
    sp.script(SCRIPT + "sys.exit(3)\n")
    plain = sp("run", "-q", "--no-output", "script.py")
    mem = sp("run", "-q", "--memory", "--no-output", "script.py")
    assert plain.returncode == mem.returncode == 3
    assert plain.stdout == mem.stdout == "script output 45\n"


def test_without_the_option_no_allocation_data(sp):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "-o", "t.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "t.h5") as f:
        assert has_alloc_data(f) == []
    summary = sp("summary", "t.h5")
    assert "Allocations" not in summary.stdout
    assert "alloc_bytes" not in sp("summary", "--json", "t.h5").stdout


def test_summary_shows_the_allocated_bytes(sp):
    sp.script(SCRIPT)
    assert sp("run", "-q", "--memory", "-o", "m.h5", "script.py").returncode == 0
    proc = sp("summary", "m.h5")
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout[proc.stdout.index("Allocations"):]
    line = next(l for l in table.splitlines() if l.startswith("big "))
    assert "MiB" in line   # 3 x 20 MB
    data = {r["name"]: r for r in json.loads(sp("summary", "--json", "m.h5").stdout)["regions"]}
    assert data["big"]["alloc_bytes"] >= 3 * N
    assert data["big"]["peak_live_bytes"] >= N
    assert data["small"]["alloc_bytes"] < N // 10


def test_recursive_functions_get_their_allocations(sp):
    sp.script(f"""
        def leaf():
            return len(bytearray({N}))

        def top():
            return leaf() + len(str(list(range(10))))

        for _ in range(2):
            top()
    """)
    proc = sp("run", "-q", "--memory", "--recursive", "-o", "r.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "r.h5") as f:
        leaf, top = alloc(f, "__main__.leaf"), alloc(f, "__main__.top")
        assert len(leaf) == len(top) == 2
        assert all(v >= N for v in leaf)
        assert all(t >= l for t, l in zip(top, leaf))
        assert peak(f, "__main__.leaf") >= N


def test_threads_each_call_sees_at_least_its_own_block(sp):
    sp.script(f"""
        import threading
        import scope_profiler as sp

        r = sp.region("work")

        def work():
            for _ in range(3):
                with r:
                    len(bytearray({N}))

        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    """)
    for extra in ([], ["--track-threads"]):
        proc = sp("run", "-q", "--memory", *extra, "-o", "th.h5", "script.py")
        assert proc.returncode == 0, proc.stderr
        with h5py.File(sp.tmp / "th.h5") as f:
            work = alloc(f, "work")
            assert len(work) == 6 and all(v >= N for v in work)


def test_async_tasks_calls_and_decorated_coroutines(sp):
    sp.script(f"""
        import asyncio
        import scope_profiler as sp

        @sp.profile
        async def job():
            with sp.region("block"):
                b = bytearray({N})
                await asyncio.sleep(0)
                return len(b)

        async def main():
            await asyncio.gather(job(), job())

        asyncio.run(main())
    """)
    proc = sp("run", "-q", "--memory", "--track-async", "-o", "as.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "as.h5") as f:
        for name in ("block", "job"):
            v = alloc(f, name)
            assert len(v) == 2 and all(x >= N for x in v)


def test_setup_use_memray_from_a_script_under_plain_run(sp):
    # As a script written for the seed does it: the allocators are wrapped
    # after the interpreter started, so the bytes count but peaks are unknown.
    sp.script(SCRIPT.replace("import scope_profiler as sp\n",
                             "import scope_profiler as sp\nsp.setup(use_memray=True)\n"))
    proc = sp("run", "-q", "-o", "late.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "script output 45\n"
    with h5py.File(sp.tmp / "late.h5") as f:
        assert all(v >= N for v in alloc(f, "big"))
        assert all(0 <= v < N // 100 for v in alloc(f, "small"))
        assert peak(f, "big") in (None, -1)


@pytest.mark.script_imports("mpi4py")
def test_the_values_go_through_mpi(sp):
    sp.script(f"""
        from mpi4py import MPI
        import scope_profiler as sp

        n = {N} * (MPI.COMM_WORLD.Get_rank() + 1)
        for _ in range(2):
            with sp.region("big"):
                len(bytearray(n))
        MPI.COMM_WORLD.Barrier()
    """)
    proc = mpirun(sp, 2, "run", "-q", "--memory", "-o", "mpi.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "mpi.h5") as f:
        for rank in (0, 1):
            v = alloc(f, "big", rank)
            assert len(v) == 2 and all(N * (rank + 1) <= x < N * (rank + 2) for x in v)


def test_combinations_it_cannot_record_are_refused(sp):
    sp.script("print('never')\n")
    for other in ("--aggregate", "--line-profile"):
        proc = sp("run", "--memory", other, "script.py")
        assert proc.returncode == 2
        one_line_error(proc, "--memory", other)
        assert "never" not in proc.stdout
    sp.script("""
        import scope_profiler as sp
        try:
            sp.setup(use_memray=True, aggregation_mode=True)
        except ValueError as e:
            print("refused:", e)
    """, name="s2.py")
    proc = sp("run", "-q", "--no-output", "s2.py")
    assert proc.returncode == 0, proc.stderr
    assert "refused: use_memray cannot be combined with aggregation_mode" in proc.stdout


def test_the_read_api_gives_each_call_and_the_peak(sp):
    sp.script(SCRIPT)
    assert sp("run", "-q", "--memory", "-o", "m.h5", "script.py").returncode == 0
    sp.script("""
        from scope_profiler import read_h5
        res = read_h5("m.h5")
        big, small = res["big"][0], res["small"][0]
        print([int(v) for v in big.alloc_bytes], big.peak_live_bytes)
        print([int(v) for v in small.alloc_bytes])
    """, name="read.py")
    proc = sp("run", "-q", "--no-output", "read.py")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    big_values, big_peak = first.rsplit(" ", 1)
    assert all(v >= N for v in json.loads(big_values))
    assert int(big_peak) >= N
    assert all(v < N // 100 for v in json.loads(second))


def test_a_block_freed_through_the_other_domain(sp):
    # C extensions do this and CPython's default allocators allow it: a raw
    # block freed with PyMem_Free, a large PyMem_Malloc block (pymalloc
    # takes it from the raw allocator) freed with PyMem_RawFree, and
    # reallocated across too. Each block counts once, in the call that made it.
    sp.script(f"""
        import ctypes
        import scope_profiler as sp
        api = ctypes.pythonapi
        for f in ("PyMem_RawMalloc", "PyMem_Malloc"):
            getattr(api, f).restype = ctypes.c_void_p
            getattr(api, f).argtypes = [ctypes.c_size_t]
        for f in ("PyMem_RawRealloc", "PyMem_Realloc"):
            getattr(api, f).restype = ctypes.c_void_p
            getattr(api, f).argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        for f in ("PyMem_RawFree", "PyMem_Free"):
            getattr(api, f).argtypes = [ctypes.c_void_p]
        for _ in range(200):
            for size in (100, 100_000):
                api.PyMem_Free(api.PyMem_RawMalloc(size))
                api.PyMem_RawFree(api.PyMem_Realloc(api.PyMem_RawMalloc(size), 2 * size))
            # (pymalloc's own small blocks are not the raw allocator's.)
            api.PyMem_RawFree(api.PyMem_Malloc(100_000))
            api.PyMem_Free(api.PyMem_RawRealloc(api.PyMem_Malloc(100_000), 200_000))
        with sp.region("raw"):
            p = api.PyMem_RawMalloc({N})
        with sp.region("mem"):
            q = api.PyMem_Malloc({N})
        api.PyMem_Free(p)
        api.PyMem_RawFree(q)
        print("freed")
    """)
    for env in ({}, {"PYTHONMALLOC": "malloc"}):
        proc = sp("run", "-q", "--memory", "-o", "x.h5", "script.py", env=env)
        assert proc.returncode == 0, (env, proc.stderr)
        assert proc.stdout == "freed\n"
        with h5py.File(sp.tmp / "x.h5") as f:
            assert N <= alloc(f, "raw")[0] < N + N // 100
            assert N <= alloc(f, "mem")[0] < N + N // 100


def test_use_memray_stays_on_once_on_until_the_events_are_written(sp):
    # A later setup(use_memray=False) keeps counting: the region's calls
    # so far carry allocation values, so every later call gets its own.
    sp.script(f"""
        import scope_profiler as sp
        sp.setup(use_memray=True)
        r = sp.region("r")
        with r:
            x = bytearray(1000)
        sp.setup(use_memray=False)
        for _ in range(50):
            with r:
                y = bytearray({N // 100})
        try:
            sp.setup(use_memray=False, aggregation_mode=True)
        except ValueError as e:
            print("refused:", e)
    """)
    # The script's own use_memray=True keeps it on: its aggregation_mode is
    # refused. Under run --memory the command line's wins: the keyword is
    # left out with one warning, as python alone would take it.
    for args in ((), ("--memory",)):
        proc = sp("run", "-q", *args, "-o", "s.h5", "script.py")
        assert proc.returncode == 0, proc.stderr
        if args:
            assert proc.stdout == ""
            assert proc.stderr.startswith("scope-profiler: warning: setup(aggregation_mode=...) is "
                                          "left out: the scope-profiler command line's settings win")
        else:
            assert proc.stdout.startswith("refused: use_memray cannot be combined with aggregation_mode")
        with h5py.File(sp.tmp / "s.h5") as f:
            values = alloc(f, "r")
            assert len(values) == 51
            assert 1000 <= values[0] < N // 100
            assert all(N // 100 <= v < N // 50 for v in values[1:])


def test_a_late_install_does_not_depend_on_the_allocators_context(sp):
    # setup(use_memray=True) swaps the allocators while threads without
    # the GIL may be inside PyMem_RawMalloc: such a thread can see the new
    # function with the old context (NULL for the default raw allocator).
    # The wrappers then must not need their context: call them with NULL
    # (with the GIL held, as the mem and object domains need it).
    sp.script("""
        import ctypes
        import scope_profiler as sp
        sp.setup(use_memray=True)
        V, S = ctypes.c_void_p, ctypes.c_size_t
        class Allocator(ctypes.Structure):
            _fields_ = [("ctx", V), ("malloc", V), ("calloc", V), ("realloc", V), ("free", V)]
        for domain in range(3):   # raw, mem, object
            a = Allocator()
            ctypes.pythonapi.PyMem_GetAllocator(domain, ctypes.byref(a))
            malloc = ctypes.PYFUNCTYPE(V, V, S)(a.malloc)
            calloc = ctypes.PYFUNCTYPE(V, V, S, S)(a.calloc)
            realloc = ctypes.PYFUNCTYPE(V, V, V, S)(a.realloc)
            free = ctypes.PYFUNCTYPE(None, V, V)(a.free)
            for size in (100, 100_000):
                free(None, realloc(None, malloc(None, size), 2 * size))
                free(None, calloc(None, size, 2))
        print("called")
    """)
    proc = sp("run", "-q", "--no-output", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "called\n"


def test_a_block_closed_below_the_innermost_keeps_each_calls_counters(sp):
    # `a` closes while `b`, opened inside it, is still open (as generators
    # can do): each call keeps the counters of its own start.
    sp.script(f"""
        import scope_profiler as sp
        a, b, c = sp.region("a"), sp.region("b"), sp.region("c")
        for _ in range(2):
            with c:
                a.__enter__()
                x = bytearray({N})
                b.__enter__()
                y = bytearray({N // 2})
                a.__exit__(None, None, None)
                z = bytearray({N // 4})
                b.__exit__(None, None, None)
                del x, y, z
    """)
    for args in ((), ("--track-async",)):
        proc = sp("run", "-q", "--memory", *args, "-o", "b.h5", "script.py")
        assert proc.returncode == 0, proc.stderr
        with h5py.File(sp.tmp / "b.h5") as f:
            for va, vb in zip(alloc(f, "a"), alloc(f, "b")):
                assert N + N // 2 <= va < N + N // 2 + N // 100
                assert N // 2 + N // 4 <= vb < N // 2 + N // 4 + N // 100


def test_reset_keeps_the_mode_consistent(sp):
    """_reset() forgets the events and the lanes: the regions' classes and
    the decorated functions' calls are chosen again for the settings in
    force, so the next calls record (before: a crash writing into freed
    columns)."""
    script = sp.script("""
        import scope_profiler as sp
        sp.setup(use_memray=True, track_threads=True, deactivate_file_output=True)
        r = sp.region("r")
        @sp.profile("f")
        def f():
            return bytearray(100000)
        with r:
            f()
        sp._reset()
        for i in range(3):
            with r:
                f()
        res = sp.finalize(verbose=False, return_results=True)
        rr, ff = res["r"][0], res["f"][0]
        print(rr.num_calls, ff.num_calls, min(ff.alloc_bytes) >= 100000, [int(x) for x in rr.lanes])
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3 3 True [0, 0, 0]\n"
