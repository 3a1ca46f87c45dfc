"""Runs of hours under `run --memory`: the calls stream with their
allocated bytes (the alloc_bytes column written with each block, a call
handed over open getting its value when it ends), so that memory stays
within --memory-budget (24 bytes a call counted), a killed run's partial
file holds the column, and `recover` keeps it. Each streamed run is
compared with the same script written whole (--memory-budget 0): the
allocation counter is the process's, so the stream's own threads must not
add to any call."""
import os
import signal
import sys

import h5py
import numpy as np

from conftest import regions, tick_hwm
from test_memory import ASAN, peak_rss
from test_stream import partial_calls, running, wait_flushed, wait_started

# Each step allocates a list of i % 9 items (8 bytes each): values that
# differ from call to call, the same in every run.
LOOP = """
import sys
import scope_profiler as sp
n = int(sys.argv[1])
step, outer = sp.region("step"), sp.region("outer")
keep = []
with sp.region("main"):
    for i in range(n):
        with outer:
            with step:
                x = [None] * (i % 9)
            if i % 1000 == 0:
                keep.append(bytearray(i % 5000))
print("done", n)
"""

# --recursive: <module> and work() stay open through every flush.
RECURSIVE = """
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work(k):
    out = []
    for i in range(k):
        out.append([i] * (i % 5))
        fib(8)
    return out
work(int(sys.argv[1]))
"""

FOREVER = """
import scope_profiler as sp
step = sp.region("step")
print("started", flush=True)
with sp.region("main"):
    i = 0
    while True:
        for _ in range(1000):
            with step:
                x = [None] * (i % 9 + 1)
                i += 1
"""

STREAM = ("--memory-budget", "1M", "--flush-interval", "0.01")


def table(f):
    g = f["rank0/regions"]
    return {bytes(n).decode(): {k: g[k][i] for k in ("num_calls", "values_total", "value_kind")}
            for i, n in enumerate(g["name"][:])}


def same_values(streamed, whole, skip=(), shifted=0):
    """Every region's calls and alloc_bytes, call by call, and its table row;
    {name: alloc_bytes}. shifted: how many calls of a region may hold
    another call's bytes (the interpreter's own allocations, whose moment
    the flushes move), the region's total the same."""
    with h5py.File(streamed) as s, h5py.File(whole) as w:
        assert s.attrs["format_version"] == 3 and w.attrs["format_version"] == 2
        assert "stream" not in s["rank0"] and "bytes" not in s["rank0/events"]
        rs, rw = regions(s), regions(w)
        ts, tw = table(s), table(w)
        assert sorted(rs) == sorted(rw)
        for name in rs:
            if name in skip:
                continue
            a, b = rs[name]["alloc_bytes"], rw[name]["alloc_bytes"]
            assert len(a) == len(b) == rs[name].attrs["num_calls"] == rw[name].attrs["num_calls"]
            moved = np.nonzero(a != b)[0]
            assert len(moved) <= shifted, (name, moved[:10], a[moved][:10], b[moved][:10])
            assert ts[name] == tw[name]
            assert int(ts[name]["values_total"]) == int(a.sum())
        return {name: rs[name]["alloc_bytes"] for name in rs}


def test_a_long_memory_run_streams_the_same_values(sp):
    n = 100_000 if ASAN else 300_000
    script = sp.script(LOOP, name="loop.py")
    streamed = sp("run", "-q", "--memory", *STREAM, "-o", "s.h5", script, n)
    whole = sp("run", "-q", "--memory", "--memory-budget", "0", "-o", "w.h5", script, n)
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    assert streamed.stdout == whole.stdout == f"done {n}\n"
    if streamed.stderr:   # a loaded machine's writer may fall behind: said, counted
        assert "writer fell behind" in streamed.stderr, streamed.stderr
        return
    rs = same_values(sp.tmp / "s.h5", sp.tmp / "w.h5")
    assert rs["step"].max() > 0
    # main was handed over open many times: its value came with its end.
    assert rs["main"][0] >= rs["outer"].sum() > 0
    # The readers show the same allocations.
    a, b = sp("summary", "s.h5"), sp("summary", "w.h5")
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    alloc = lambda out: out.split("Allocations")[1].splitlines()[4:7]
    assert [l.split()[:4] for l in alloc(a.stdout)] == [l.split()[:4] for l in alloc(b.stdout)], a.stdout


def test_a_recursive_memory_run_streams_its_open_calls_with_their_values(sp):
    # The tracer keeps a call's counter at its start in its value slot:
    # handed over open, it goes as 0 and the end patches the value.
    script = sp.script(RECURSIVE, name="rec.py")
    streamed = sp("run", "-q", "--recursive", "--memory", *STREAM, "-o", "s.h5", script, 3000)
    whole = sp("run", "-q", "--recursive", "--memory", "--memory-budget", "0", "-o", "w.h5", script, 3000)
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    if streamed.stderr:
        assert "writer fell behind" in streamed.stderr, streamed.stderr
        return
    # The script's own region holds the start-up, which differs by a few
    # bytes from run to run (its environment).
    # Python 3.12 allocates 91 bytes of its own inside one fib call of
    # about 50,000, which calls the flushes move by a few hundred.
    rs = same_values(sp.tmp / "s.h5", sp.tmp / "w.h5", skip=("rec.py",), shifted=32)
    # work's lists are in its value; fib allocates nothing on 3.14 (its
    # small ints are cached; 3.11-3.13 counted a few bytes there).
    assert rs["__main__.work"][0] > rs["__main__.fib"].max() >= 0


def test_a_killed_memory_run_keeps_the_column_and_recover_keeps_it(sp):
    script = sp.script(FOREVER, name="forever.py")
    partial = sp.tmp / "k.h5.partial"
    with running(sp, "run", "-q", "--memory", "--memory-budget", "1M", "--flush-interval", "0.05",
                 "-o", "k.h5", script) as proc:
        wait_started(proc)
        calls, flushed, _ = wait_flushed(partial, 0, proc)
        wait_flushed(partial, flushed, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    calls, _, _ = partial_calls(partial)
    with h5py.File(partial, "r", swmr=True) as f:
        ev = f["rank0/events"]
        e = int(ev["block_calls"][:].sum())
        values = ev["alloc_bytes"][:]
        assert len(values) >= e == calls["step"] + calls.get("main", 0)
        names = bytes(f["rank0/stream/names"][:]).split(b"\0")[:-1]
        step = names.index(b"step")
        ends = np.cumsum(ev["block_calls"][:])
        mine = np.concatenate([np.arange(end - c, end) for r, c, end in
                               zip(ev["block_region"][:], ev["block_calls"][:], ends) if r == step])
        # Every step allocates its list's items (1 to 9, 8 bytes each); a
        # call still open at the last flush (its end INT64_MIN, or before
        # its start: man 5 scope-profiler-format) has the value 0 that its
        # end would have filled in, had the run not been killed.
        got = values[mine]
        ends, starts = ev["end_times"][:][mine], ev["start_times"][:][mine]
        closed = got[(ends != np.iinfo(np.int64).min) & (ends >= starts)]
        assert len(got) - len(closed) <= 1, len(got) - len(closed)
        assert closed.min() >= 8 and len(np.unique(closed)) >= 5, np.unique(closed)[:20]
    rec = sp("recover", str(partial))
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "k.h5") as f:
        rs, t = regions(f), table(f)
        assert np.array_equal(rs["step"]["alloc_bytes"], got)
        assert t["step"]["value_kind"] == 1 and int(t["step"]["values_total"]) == int(got.sum())
    summary = sp("summary", "k.h5")
    assert summary.returncode == 0 and "Allocations" in summary.stdout, summary.stderr


TICK_HWM = tick_hwm("x = [None] * (i & 3)")


def test_a_streamed_memory_run_stays_within_its_budget(sp):
    """As test_memory's streamed run: the last three quarters of the calls
    (24 bytes each with their values: 72 MiB held written whole) add next
    to nothing to the peak, which stays within the budget over a small
    run's."""
    n = 500_000 if ASAN else 4_000_000
    budget = 8 << 20
    base, _ = peak_rss(sp, sp.script(TICK_HWM), 100, "--memory", "--memory-budget", "8M")
    peak, out = peak_rss(sp, sp.script(TICK_HWM), n, "--memory", "--memory-budget", "8M")
    quarter, whole = map(int, (sp.tmp / f"run{n}.log").read_text().split("hwm ")[1].split()[:2])
    print(f"{n} --memory calls streamed: peak {peak / 2**20:.1f} MiB (after a quarter "
          f"{quarter / 2**10:.1f} MiB, after all {whole / 2**10:.1f} MiB), baseline {base / 2**20:.1f} MiB",
          file=sys.stderr)
    assert ASAN or (whole - quarter) * 1024 <= 4 << 20, (quarter, whole)
    assert ASAN or peak - base <= budget + (20 << 20), (peak - base) / 2**20
    with h5py.File(out, "r") as f:
        assert f.attrs["format_version"] == 3
        dropped = int(f["rank0"].attrs["dropped_events"])
        assert not dropped or "the profile's writer fell behind" in (sp.tmp / f"run{n}.log").read_text()
        tick = regions(f)["tick"]
        assert len(tick["alloc_bytes"]) == tick.attrs["num_calls"] == n - dropped
        assert 0 <= tick["alloc_bytes"].min() and tick["alloc_bytes"].max() <= 64


# Under MPI each rank streams to its own file, merged at the end; rank 1 of
# DIES kills itself once its calls were flushed, and recover merges its
# partial file with its values.
MPI_LOOP = """
import os, sys
import scope_profiler as sp
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
n = int(sys.argv[1]) * (rank + 1)
step = sp.region("step")
with sp.region("main"):
    for i in range(n):
        with step:
            x = [None] * (i % 9 + rank)
print("done", rank, flush=True)
"""

DIES = """
import os, signal, sys, time
import scope_profiler as sp
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
work = sp.region("work")
for i in range(int(sys.argv[1])):
    with work:
        x = [None] * (i % 4 + 1)
time.sleep(1.5)            # flushed every 0.1 s meanwhile
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
while True:                # mpirun takes the others down
    time.sleep(0.1)
"""


def test_mpi_ranks_stream_their_values_and_merge_them(sp):
    from test_mpi import mpirun
    n = 30_000
    script = sp.script(MPI_LOOP, name="loop.py")
    streamed = mpirun(sp, 2, "run", "-q", "--memory", *STREAM, "-o", "s.h5", script, n)
    whole = mpirun(sp, 2, "run", "-q", "--memory", "--memory-budget", "0", "-o", "w.h5", script, n)
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    with h5py.File(sp.tmp / "s.h5") as s, h5py.File(sp.tmp / "w.h5") as w:
        assert s.attrs["format_version"] == 3
        for r in (0, 1):
            rs, rw = regions(s, r), regions(w, r)
            dropped = int(s[f"rank{r}"].attrs["dropped_events"])
            assert not dropped or "writer fell behind" in streamed.stderr
            for name in ("main", "step"):
                a, b = rs[name]["alloc_bytes"], rw[name]["alloc_bytes"]
                assert len(a) == rs[name].attrs["num_calls"]
                if not dropped:
                    assert np.array_equal(a, b), (r, name)


def test_a_killed_rank_is_recovered_with_its_values(sp):
    from test_mpi import mpirun
    n = 20_000
    proc = mpirun(sp, 2, "run", "-q", "--memory", "--flush-interval", "0.1", "-o", "k.h5", sp.script(DIES), n,
                  env={"SCOPE_PROFILER_MPI_WAIT": "5"})
    assert proc.returncode != 0
    assert (sp.tmp / "k.h5.rank1.partial").exists() and not (sp.tmp / "k.h5.rank1").exists()
    rec = sp("recover", "k.h5")
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "k.h5") as f:
        for r in (0, 1):
            t = {bytes(k).decode(): (int(c), int(v), int(tot)) for k, c, v, tot in zip(
                f[f"rank{r}/regions/name"][:], f[f"rank{r}/regions/num_calls"][:],
                f[f"rank{r}/regions/value_kind"][:], f[f"rank{r}/regions/values_total"][:])}
            work = regions(f, r)["work"]["alloc_bytes"]
            assert t["work"] == (n, 1, int(work.sum())), r
            assert work.min() >= 8, r     # every call allocated its list's items
