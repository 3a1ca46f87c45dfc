"""Runs of hours under `run --mpi-calls`: each intercepted MPI function's
calls stream to the rank's file with their bytes (the bytes column written
with each block), handed over at every flush, and, past a block's size, by
the thread that made the call (which may not hold the GIL). Each streamed
job is compared with the same job written whole (--memory-budget 0); a
rank killed keeps its calls and their bytes up to its last flush, which
`recover` merges."""
import h5py
import numpy as np
import pytest

from conftest import regions
from test_mpi import mpirun
from test_stream_memory import table

STREAM = ("--memory-budget", "1M", "--flush-interval", "0.01")

# Each Allreduce moves 8 to 32 bytes; a Barrier (no bytes) every 100 steps.
LOOP = """
import sys
import numpy as np
import scope_profiler as sp
from mpi4py import MPI
comm = MPI.COMM_WORLD
n = int(sys.argv[1])
a, b = np.ones(4), np.empty(4)
with sp.region("main"):
    for i in range(n):
        with sp.region("step"):
            comm.Allreduce(a[: i % 4 + 1], b[: i % 4 + 1])
        if i % 100 == 0:
            comm.Barrier()
print("done", comm.rank, flush=True)
"""

# Rank 1 kills itself once its calls were flushed.
DIES = """
import os, signal, sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
a, b = np.ones(4), np.empty(4)
for i in range(int(sys.argv[1])):
    comm.Allreduce(a[: i % 4 + 1], b[: i % 4 + 1])
time.sleep(1.5)            # flushed every 0.1 s meanwhile
if comm.rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
while True:                # mpirun takes the others down
    time.sleep(0.1)
"""


@pytest.mark.script_imports("mpi4py", "numpy")
def test_mpi_calls_stream_with_their_bytes_as_written_whole(sp):
    n = 30_000
    script = sp.script(LOOP, name="loop.py")
    streamed = mpirun(sp, 2, "run", "-q", "--mpi-calls", *STREAM, "-o", "s.h5", script, n)
    whole = mpirun(sp, 2, "run", "-q", "--mpi-calls", "--memory-budget", "0", "-o", "w.h5", script, n)
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    with h5py.File(sp.tmp / "s.h5") as s, h5py.File(sp.tmp / "w.h5") as w:
        assert s.attrs["format_version"] == 3 and w.attrs["format_version"] == 2
        for r in (0, 1):
            dropped = int(s[f"rank{r}"].attrs["dropped_events"])
            if dropped:   # a loaded machine's writer fell behind: said, counted
                assert "writer fell behind" in streamed.stderr, streamed.stderr
                continue
            rs, rw = regions(s, r), regions(w, r)
            assert sorted(rs) == sorted(rw) == ["MPI_Allreduce", "MPI_Barrier", "main", "step"]
            ts, tw = table(s), table(w)
            for name in rs:
                assert rs[name].attrs["num_calls"] == rw[name].attrs["num_calls"], (r, name)
            if r == 0:   # table() reads rank 0
                assert ts == tw
            a, b = rs["MPI_Allreduce"]["bytes"], rw["MPI_Allreduce"]["bytes"]
            assert len(a) == n and np.array_equal(a, b) and set(np.unique(a)) == {8, 16, 24, 32}
            # Each call inside its step, as its time says.
            st, en = rs["step"]["start_times"], rs["step"]["end_times"]
            ast, aen = rs["MPI_Allreduce"]["start_times"], rs["MPI_Allreduce"]["end_times"]
            assert (ast >= st).all() and (aen <= en).all()
    a, b = sp("summary", "s.h5"), sp("summary", "w.h5")
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    mpi = lambda out: [l.split()[:3] for l in out.split("MPI calls")[1].splitlines()[3:5]]
    assert mpi(a.stdout) == mpi(b.stdout), a.stdout


@pytest.mark.script_imports("mpi4py", "numpy")
def test_a_killed_rank_keeps_its_mpi_calls_bytes(sp):
    n = 20_000
    proc = mpirun(sp, 2, "run", "-q", "--mpi-calls", "--flush-interval", "0.1", "-o", "k.h5",
                  sp.script(DIES), n, env={"SCOPE_PROFILER_MPI_WAIT": "5"})
    assert proc.returncode != 0
    partial = sp.tmp / "k.h5.rank1.partial"
    assert partial.exists() and not (sp.tmp / "k.h5.rank1").exists()
    with h5py.File(partial, "r", swmr=True) as f:
        ev = f["rank1/events"]
        e = int(ev["block_calls"][:].sum())
        assert len(ev["bytes"]) >= e >= n
    rec = sp("recover", "k.h5")
    assert rec.returncode == 0, rec.stderr
    want = 8 * (np.arange(n) % 4 + 1)
    with h5py.File(sp.tmp / "k.h5") as f:
        for r in (0, 1):
            allreduce = regions(f, r)["MPI_Allreduce"]
            assert allreduce.attrs["num_calls"] == n, r
            assert np.array_equal(allreduce["bytes"], want), r
