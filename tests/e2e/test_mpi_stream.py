"""Runs of hours under MPI: each rank streams its calls to a file of its own
(OUT.rank{r}.partial, on rank 0's clock), finishes it into OUT.rank{r} at the
end, and rank 0 merges the ranks' files into OUT with bounded memory. A rank
that dies leaves the others' calls, and a job killed at its time limit leaves
a complete profile or rank files that `recover` merges. Real Open MPI,
oversubscribed (this machine has two cores); streaming made certain by a
small --memory-budget or a short --flush-interval."""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import h5py
import pytest

from conftest import BINARY, regions, small_tmpfs, tick_hwm
from test_memory import ASAN
from test_mpi import mpirun as mpirun_env

# These jobs' ranks meet through shared memory: Open MPI 5 (Debian 13's) in
# a chroot otherwise tries TCP too and prints "Unable to find reachable
# pairing between local and remote interfaces" on stderr, which these tests
# read line by line as the tool's. (Not for every test: Open MPI 4's ofi
# transport, taken then, lacks the atomics of test_mpi_calls.)
ONE_NODE = {"OMPI_MCA_btl": "^tcp"}


def mpirun(sp, n, *args, env=None, **kw):
    return mpirun_env(sp, n, *args, env=dict(ONE_NODE, **(env or {})), **kw)
from test_stream import FOREVER, running, wait_flushed, wait_started

NODE = os.uname().nodename

# Rank r records n * (r + 1) nested calls; rank 1 records none at all.
LOOP = """
import os, sys
import scope_profiler as sp
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
n = int(sys.argv[1]) * (rank + 1)
if rank != 1:
    step, outer = sp.region("step"), sp.region("outer")
    with sp.region("main"):
        for i in range(n):
            with outer:
                with step:
                    pass
print("done", rank, flush=True)
"""

# Each rank records `n` calls, then waits to be killed; rank 1 kills itself
# once its calls were flushed (a node failure, the OOM killer).
DIES = """
import os, signal, sys, time
import scope_profiler as sp
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
n = int(sys.argv[1])
work = sp.region("work")
for _ in range(n):
    with work:
        pass
time.sleep(1.5)            # flushed every 0.1 s meanwhile
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
while True:                # mpirun takes the others down
    time.sleep(0.1)
"""


def rank_files(tmp, out):
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(out + ".rank"))


def calls_and_dropped(f, r):
    """{region: (calls, dropped)} of rank r of an open file."""
    return {name: (int(g.attrs["num_calls"]), int(g.attrs.get("dropped_events", 0)))
            for name, g in regions(f, r).items()}


def test_a_streamed_job_merges_into_one_file_with_every_call(sp):
    n = 20_000 if ASAN else 100_000
    script = sp.script(LOOP, name="loop.py")
    streamed = mpirun(sp, 4, "run", "-q", "--memory-budget", "2M", "-o", "s.h5", script, n)
    whole = mpirun(sp, 4, "run", "-q", "--memory-budget", "0", "-o", "w.h5", script, n)
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    # Each rank's line, in any order; mpirun may interleave two ranks' lines
    # within a line ("donedone 0", " 1"), so their characters are compared.
    assert sorted(streamed.stdout) == sorted(whole.stdout)
    assert streamed.stdout.count("\n") == 4 and streamed.stdout.count("done") == 4
    # A writer slowed by a loaded machine may drop calls, said and counted.
    assert all("writer fell behind" in l for l in streamed.stderr.splitlines()), streamed.stderr
    # One file, no rank file or temporary file left.
    assert sorted(p.name for p in sp.tmp.iterdir()) == ["loop.py", "s.h5", "w.h5"]
    with h5py.File(sp.tmp / "s.h5") as s, h5py.File(sp.tmp / "w.h5") as w:
        assert s.attrs["format_version"] == 3 and w.attrs["format_version"] == 2
        assert sorted(k for k in s if k.startswith("rank")) == [f"rank{r}" for r in range(4)]
        meta = s["metadata"].attrs
        assert meta["mpi_size"] == 4 and meta["hostnames"] == f"{NODE}: 0-3"
        assert "clock_sync_error_ns" in meta and "incomplete_ranks" not in meta
        for r in range(4):
            g = s[f"rank{r}"]
            assert "stream" not in g and g.attrs["mpi_size"] == 4
            assert "clock_offset_ns" in g.attrs and g.attrs["run_end_time"] > g.attrs["run_start_time"]
            got, want = calls_and_dropped(s, r), calls_and_dropped(w, r)
            assert sorted(got) == sorted(want) == ([] if r == 1 else ["main", "outer", "step"])
            for name, (calls, dropped) in got.items():
                assert calls + dropped == want[name][0], (r, name, got, want)
            if r == 3:
                assert want["step"][0] == 4 * n
    # Every reader reads it as any profile.
    summary = sp("summary", "s.h5")
    assert summary.returncode == 0, summary.stderr
    assert "4 ranks on 1 host" in summary.stdout and "step" in summary.stdout
    csv = sp("export", "s.h5", "--format", "csv", "-o", "s.csv")
    assert csv.returncode == 0, csv.stderr
    with h5py.File(sp.tmp / "s.h5") as s:
        total = sum(c for r in range(4) for c, _ in calls_and_dropped(s, r).values())
    assert len((sp.tmp / "s.csv").read_text().splitlines()) == total + 1
    diff = sp("diff", "w.h5", "s.h5")
    assert diff.returncode == 0, diff.stderr
    assert any(l.startswith("step ") for l in diff.stdout.splitlines()), diff.stdout
    plot = sp("plot", "s.h5", "-o", "charts")
    assert plot.returncode == 0, plot.stderr
    assert (sp.tmp / "charts" / "report.html").exists()
    sp.script("import scope_profiler as s\nr = s.read_h5('s.h5')\nprint(r.num_ranks, r['step'].num_calls)\n",
              name="api.py")
    api = sp("run", "-q", "--no-output", "api.py")
    assert api.returncode == 0, api.stderr
    ranks, steps = map(int, api.stdout.split())
    with h5py.File(sp.tmp / "s.h5") as s:
        assert (ranks, steps) == (4, sum(calls_and_dropped(s, r)["step"][0] for r in (0, 2, 3)))


TICK_HWM = tick_hwm(stream="sys.stdout")


# argv: log prefix, command...: runs the command (a rank: its log is the
# prefix and the rank) and prints the rank, its exit status and its peak RSS
# (KiB), ru_maxrss of os.wait4 (see test_memory.py).
LAUNCH = """
import os, sys
rank = os.environ["OMPI_COMM_WORLD_RANK"]
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1] + rank, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
print(rank, os.waitstatus_to_exitcode(status), ru.ru_maxrss, flush=True)
"""


def peaks(sp, n, budget):
    """Per rank: (peak RSS of the whole process, VmHWM after a quarter of its
    calls, after all of them), in bytes, of a 4-rank run of TICK_HWM."""
    out = f"m{n}.h5"
    proc = mpirun(sp, 4, "run", "-q", "--memory-budget", budget, "-o", out, "tick.py", n, timeout=600,
                  wrap=f"exec {sys.executable} -I -S launch.py log{n}.")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = {}
    for line in proc.stdout.splitlines():
        rank, status, maxrss_kib = map(int, line.split())
        log = (sp.tmp / f"log{n}.{rank}").read_text()
        assert status == 0, log
        quarter, whole = map(int, log.split("hwm ")[1].split()[:2])
        result[rank] = (maxrss_kib * 1024, quarter * 1024, whole * 1024)
    assert sorted(result) == [0, 1, 2, 3], proc.stdout
    return result, sp.tmp / out


def test_every_ranks_memory_is_bounded_by_its_budget_rank_0_merging_too(sp):
    """Within one run: the last three quarters of each rank's calls add next
    to nothing to its peak, and rank 0's end (finishing its own file, then
    merging every rank's into OUT) adds next to nothing to its peak either.
    Beside a run of 100 calls: the budget and a fixed part (HDF5's caches,
    the writer's stage and its thread's malloc arena), as serially."""
    sp.script(TICK_HWM, name="tick.py")
    sp.script(LAUNCH, name="launch.py")
    n = 300_000 if ASAN else 3_000_000   # the end reads back no call for a tree (131,072 at most)
    budget = 4 << 20
    base, _ = peaks(sp, 100, "4M")
    runs, out = peaks(sp, n, "4M")
    for r, (peak, quarter, whole) in sorted(runs.items()):
        print(f"rank {r}: {n} calls streamed: peak {peak / 2**20:.1f} MiB (after a quarter of the calls "
              f"{quarter / 2**20:.1f} MiB, after all {whole / 2**20:.1f} MiB), baseline "
              f"{base[r][0] / 2**20:.1f} MiB", file=sys.stderr)
        assert ASAN or whole - quarter <= 4 << 20, (r, quarter, whole)
        assert ASAN or peak - base[r][0] <= budget + (20 << 20), (r, (peak - base[r][0]) / 2**20)
    # Rank 0's end: its own file finished, 4 x n calls merged.
    peak0, _, whole0 = runs[0]
    assert ASAN or peak0 - whole0 <= 4 << 20, (peak0, whole0)
    with h5py.File(out) as f:
        assert f.attrs["format_version"] == 3
        for r in range(4):
            calls, dropped = calls_and_dropped(f, r)["tick"]
            assert calls + dropped == n and calls > 0


def test_a_rank_killed_leaves_the_others_calls_and_recover_names_it(sp):
    n = 20_000
    proc = mpirun(sp, 4, "run", "-q", "--flush-interval", "0.1", "-o", "k.h5", sp.script(DIES), n,
                  env={"SCOPE_PROFILER_MPI_WAIT": "5"})
    assert proc.returncode != 0
    assert not (sp.tmp / "k.h5").exists()
    left = rank_files(sp.tmp, "k.h5")
    assert "k.h5.rank1.partial" in left and "k.h5.rank1" not in left, left
    rec = sp("recover", "k.h5")
    assert rec.returncode == 0, rec.stderr
    lines = rec.stderr.splitlines()
    assert any(l.startswith("scope-profiler: recover: rank 1 did not finish its profile") for l in lines), lines
    assert lines[-1].startswith("scope-profiler: recover: wrote k.h5: ") and "of 4 ranks of 4" in lines[-1]
    assert rank_files(sp.tmp, "k.h5") == left            # only read
    with h5py.File(sp.tmp / "k.h5") as f:
        assert f.attrs["format_version"] == 3
        assert "1" in f["metadata"].attrs["incomplete_ranks"].split(",")
        for r in range(4):
            # Every call was flushed before rank 1 died.
            assert calls_and_dropped(f, r) == {"work": (n, 0)}, r
    summary = sp("summary", "k.h5")
    assert summary.returncode == 0 and "4 ranks" in summary.stdout, summary.stderr
    # Recover given the dead rank's own file merges the same job.
    again = sp("recover", "-o", "k2.h5", "k.h5.rank1.partial")
    assert again.returncode == 0, again.stderr
    with h5py.File(sp.tmp / "k2.h5") as f:
        assert sorted(k for k in f if k.startswith("rank")) == [f"rank{r}" for r in range(4)]


def ranks_flushed(tmp, out, n, proc):
    """Waits until each of n ranks' partial files holds flushed calls."""
    for _ in range(1200):
        ready = 0
        for r in range(n):
            try:
                with h5py.File(tmp / f"{out}.rank{r}.partial", "r", swmr=True) as f:
                    ready += int(f[f"rank{r}/events/block_calls"][:].sum()) > 0
            except (OSError, KeyError):
                pass
        if ready == n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the ranks never flushed")


def test_a_job_killed_at_its_time_limit_leaves_a_complete_or_recoverable_profile(sp):
    # kill -TERM to mpirun, as a batch system does at the walltime: Open MPI
    # passes it to the ranks (and SIGKILLs them shortly after).
    script = sp.script(FOREVER)
    proc = subprocess.Popen(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "4", BINARY, "run",
                             "-q", "--flush-interval", "0.1", "-o", "t.h5", str(script)],
                            cwd=sp.tmp, env=dict(os.environ, **ONE_NODE),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ranks_flushed(sp.tmp, "t.h5", 4, proc)
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not (sp.tmp / "t.h5").exists():
        rec = sp("recover", "t.h5")
        assert rec.returncode == 0, err + rec.stderr
    with h5py.File(sp.tmp / "t.h5") as f:
        assert sorted(k for k in f if k.startswith("rank")) == [f"rank{r}" for r in range(4)]
        for r in range(4):
            got = calls_and_dropped(f, r)
            assert got["main"][0] == 1 and got["step"][0] > 0, (r, got)


# Rank 1 never comes to the end (hung; or dead, its launcher slow to take
# the job down); rank 0 is ended by SIGTERM. Waiting for rank 1 to merge,
# rank 0 says where its calls are: when mpirun takes a job down (SIGTERM to
# the ranks left, SIGKILL a second later) nothing else would have said it.
HANGS = """
import os, time
import scope_profiler as sp
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
work = sp.region("work")
for _ in range(2000):
    with work:
        pass
open(f"pid{rank}", "w").write(str(os.getpid()))
while not os.path.exists("go"):
    time.sleep(0.05)
"""


class TwoRanks:
    """`mpirun -n 2 scope-profiler run -q --flush-interval F -o OUT SCRIPT`,
    its stderr read line by line as it comes (lines); the script writes each
    rank's pid to pid<rank> once it recorded. Leaving the block is the job's
    end: the ranks SIGKILLed, mpirun reaped."""

    def __init__(self, sp, script, out, interval):
        self.sp, self.out, self.lines = sp, out, []
        self.pids = [sp.tmp / f"pid{r}" for r in range(2)]
        self.proc = subprocess.Popen(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", BINARY, "run",
                                      "-q", "--flush-interval", interval, "-o", out, str(script)],
                                     cwd=sp.tmp, env=dict(os.environ, **ONE_NODE), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=lambda: [self.lines.append(l) for l in self.proc.stderr],
                                       daemon=True)
        self.reader.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.pids:
            if p.exists() and p.read_text():
                try:
                    os.kill(int(p.read_text()), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(timeout=10)

    def recorded(self, flushed):
        """Waits until both ranks recorded (and, flushed: streamed some)."""
        for _ in range(1200):
            if all(p.exists() and p.read_text() for p in self.pids):
                break
            assert self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.1)
        if flushed:
            ranks_flushed(self.sp.tmp, self.out, 2, self.proc)

    def signal_rank0(self, sig=signal.SIGTERM):
        os.kill(int(self.pids[0].read_text()), sig)

    def said(self, head, running=True):
        """The first line starting with head, waited for (while mpirun runs)."""
        for _ in range(1200):
            line = next((l for l in self.lines if l.startswith(head)), None)
            if line:
                return line
            assert not running or self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.1)
        raise AssertionError("".join(self.lines))


@pytest.mark.parametrize("streamed, late", [(True, False), (False, False), (True, True)],
                         ids=["streamed", "not-streamed-yet", "streamed-the-other-comes-late"])
def test_a_rank_ended_by_a_signal_that_waits_for_a_rank_never_coming_says_where_its_calls_are(sp, streamed,
                                                                                             late):
    with TwoRanks(sp, sp.script(HANGS), "h.h5", "0.1" if streamed else "3600") as job:
        job.recorded(flushed=streamed)
        job.signal_rank0()
        said = job.said("scope-profiler: run: rank 0: ended by")
        assert job.proc.poll() is None       # still waiting: rank 1 may yet come
        if late:                             # it comes: the job merges, said
            (sp.tmp / "go").touch()
            job.proc.wait(timeout=120)
            job.reader.join(timeout=60)
            assert (f"scope-profiler: run: rank 0: the other ranks came after all; the profile is merged "
                    f"into {sp.tmp / 'h.h5'}\n") in job.lines, "".join(job.lines)
            with h5py.File(sp.tmp / "h.h5") as f:
                for r in range(2):
                    assert calls_and_dropped(f, r) == {"work": (2000, 0)}, r
            assert rank_files(sp.tmp, "h.h5") == []
            return
        # Again, more than a second later: rank 0 abandons the wait.
        time.sleep(1.1)
        job.signal_rank0()
        abandoned = job.said("scope-profiler: run: abandoned:", running=False)
    assert said.startswith("scope-profiler: run: rank 0: ended by SIGTERM, and the other ranks have not come "
                           "to merge the profile yet; "), said
    if not streamed:
        assert said.endswith("its calls, not streamed yet (the run was shorter than its first flush), "
                             "are lost should the job end first\n"), said
        assert abandoned == "scope-profiler: run: abandoned: no profile written\n", abandoned
        assert rank_files(sp.tmp, "h.h5") == []
        return
    assert abandoned == (f"scope-profiler: run: abandoned: this rank's calls are in {sp.tmp / 'h.h5.rank0'} "
                         f"(scope-profiler recover {sp.tmp / 'h.h5'} merges the ranks' files)\n"), abandoned
    assert said.endswith(f"its calls are in {sp.tmp / 'h.h5.rank0'} should the job end first "
                         f"(scope-profiler recover {sp.tmp / 'h.h5'} merges the ranks' files)\n"), said
    assert "h.h5.rank0" in rank_files(sp.tmp, "h.h5")
    rec = sp("recover", "h.h5")
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "h.h5") as f:
        assert calls_and_dropped(f, 0) == {"work": (2000, 0)}


@pytest.mark.script_imports("mpi4py")
def test_a_rank_blocked_in_an_mpi_call_at_a_signal_says_where_its_calls_are(sp):
    """Rank 0 waits in MPI_Barrier (a C call that never comes back to Python)
    for rank 1, which never comes; SIGTERM to rank 0 (mpirun's, when a rank
    died: SIGKILL follows a second later). Within 0.3 s it says where its
    streamed calls are (it waited 10 s for the script before saying anything,
    long after mpirun's SIGKILL)."""
    script = sp.script("""
        import os, time
        import scope_profiler as sp
        from mpi4py import MPI
        work = sp.region("work")
        for _ in range(2000):
            with work:
                pass
        rank = MPI.COMM_WORLD.Get_rank()
        open(f"pid{rank}", "w").write(str(os.getpid()))
        if rank == 0:
            MPI.COMM_WORLD.Barrier()
        while True:
            time.sleep(0.05)
    """)
    with TwoRanks(sp, script, "b.h5", "0.1") as job:
        job.recorded(flushed=True)
        job.signal_rank0()
        said = job.said("scope-profiler: run: rank 0:")
        assert job.proc.poll() is None       # still waiting for the script
    partial = sp.tmp / "b.h5.rank0.partial"
    assert said == ("scope-profiler: run: rank 0: the script has not come back to Python since the signal "
                    "(blocked in a call: an MPI wait for a rank that ended?); the calls streamed so far are "
                    f"in {partial} (scope-profiler recover {partial} merges the job's ranks); still waiting "
                    "for it\n"), said
    rec = sp("recover", "-o", "r.h5", partial.name)
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "r.h5") as f:
        assert 0 < calls_and_dropped(f, 0)["work"][0] <= 2000


@pytest.mark.script_imports("mpi4py")
def test_a_failed_rank_the_others_wait_for_keeps_its_finished_file(sp):
    # Rank 1 fails while the others wait for it in an allreduce: it waits
    # SCOPE_PROFILER_MPI_WAIT seconds, says where its profile is and takes
    # the job down; recover merges its file with what the others streamed.
    sp.script("""
        import time
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        work = sp.region("work")
        for _ in range(5000):
            with work:
                pass
        time.sleep(1)
        if comm.rank == 1:
            raise RuntimeError("rank 1 failed")
        comm.allreduce(1)
    """)
    proc = mpirun(sp, 3, "run", "-q", "--flush-interval", "0.1", "-o", "f.h5", "script.py",
                  env={"SCOPE_PROFILER_MPI_WAIT": "2"}, timeout=60)
    assert proc.returncode != 0
    line = next(l for l in proc.stderr.splitlines() if l.startswith("scope-profiler: rank 1:"))
    assert "did not reach the end within 2 s" in line and "aborting the job" in line, line
    assert f"this rank's profile is in {sp.tmp / 'f.h5.rank1'}" in line, line
    assert "f.h5.rank1" in rank_files(sp.tmp, "f.h5")
    rec = sp("recover", "f.h5")
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "f.h5") as f:
        for r in range(3):
            assert calls_and_dropped(f, r) == {"work": (5000, 0)}, r


def test_a_merge_that_cannot_write_keeps_the_rank_files(sp):
    # OUT cannot be written at the end (a folder took its name): one line,
    # status 1, and the ranks' files stay for recover.
    sp.script("""
        import os, time
        import scope_profiler as sp
        work = sp.region("work")
        for _ in range(3000):
            with work:
                pass
        time.sleep(0.5)
        if os.environ["OMPI_COMM_WORLD_RANK"] == "0":
            os.mkdir("b.h5")
    """)
    proc = mpirun(sp, 3, "run", "-q", "--flush-interval", "0.1", "-o", "b.h5", "script.py")
    assert proc.returncode == 1, proc.stderr
    said = [l for l in proc.stderr.splitlines() if l.startswith("scope-profiler:")]
    assert len(said) == 1, proc.stderr
    assert "it is a directory" in said[0] and "scope-profiler recover" in said[0], said[0]
    assert rank_files(sp.tmp, "b.h5") == ["b.h5.rank0", "b.h5.rank1", "b.h5.rank2"]
    (sp.tmp / "b.h5").rmdir()
    rec = sp("recover", "b.h5")
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "b.h5") as f:
        assert [calls_and_dropped(f, r)["work"][0] for r in range(3)] == [3000] * 3


def test_a_session_that_names_another_file_after_streaming_writes_that_one(sp):
    # The ranks' files are named after the path the stream began with; the
    # merge finds them there and writes the file the session names at its end.
    sp.script("""
        import time
        import scope_profiler as sp
        sp.setup(file_path="first.h5")
        work = sp.region("work")
        for _ in range(3000):
            with work:
                pass
        time.sleep(0.5)
        sp.setup(file_path="other.h5")
        for _ in range(10):
            with work:
                pass
    """)
    proc = mpirun(sp, 3, "run", "-q", "--flush-interval", "0.1", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in sp.tmp.iterdir() if ".h5" in p.name) == ["other.h5"]
    with h5py.File(sp.tmp / "other.h5") as f:
        assert f.attrs["format_version"] == 3
        assert [calls_and_dropped(f, r) for r in range(3)] == [{"work": (3010, 0)}] * 3


def test_ranks_killed_while_they_finish_their_files_are_recovered(sp):
    # A time limit's SIGKILL lands while the ranks finish their files (the
    # tests' hook holds them there): each file is left marked as open for
    # writing; recover clears the mark, as for a serial run, and merges them.
    sp.script("""
        import os, time
        import scope_profiler as sp
        with open(f"pid{os.environ['OMPI_COMM_WORLD_RANK']}", "w") as f:
            f.write(str(os.getpid()))
        work = sp.region("work")
        for _ in range(4000):
            with work:
                pass
        time.sleep(0.5)
    """)
    env = dict(os.environ, SCOPE_PROFILER_TEST_FINISH_PAUSE_MS="60000", **ONE_NODE)
    proc = subprocess.Popen(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "3", BINARY, "run", "-q",
                             "--flush-interval", "0.1", "-o", "p.h5", "script.py"], cwd=sp.tmp, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(3):
            line = proc.stderr.readline()
            assert line == "scope-profiler: test: finishing\n", line + proc.stderr.read()
        for r in range(3):
            os.kill(int((sp.tmp / f"pid{r}").read_text()), signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert rank_files(sp.tmp, "p.h5") == [f"p.h5.rank{r}.partial" for r in range(3)]
    rec = sp("recover", "p.h5")
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "p.h5") as f:
        assert [calls_and_dropped(f, r) for r in range(3)] == [{"work": (4000, 0)}] * 3


@pytest.mark.script_imports("h5py")
def test_recover_leaves_out_what_an_earlier_job_on_the_same_output_left(sp):
    # Job A's merge fails (a folder took OUT's name): its finished rank files
    # stay. Job B, as many ranks, on the same -o: rank 0 streams, rank 1
    # records nothing (no file of its own yet) and dies. recover merges job
    # B's files, never A's rank 1 (which passes for B's by its name and size).
    sp.script("""
        import os, time
        import scope_profiler as sp
        a = sp.region("job_a")
        for _ in range(3000):
            with a:
                pass
        time.sleep(0.5)
        if os.environ["OMPI_COMM_WORLD_RANK"] == "0":
            os.mkdir("j.h5")
    """, name="a.py")
    first = mpirun(sp, 2, "run", "-q", "--flush-interval", "0.1", "-o", "j.h5", "a.py")
    assert first.returncode == 1, first.stderr
    assert rank_files(sp.tmp, "j.h5") == ["j.h5.rank0", "j.h5.rank1"]
    (sp.tmp / "j.h5").rmdir()
    sp.script("""
        import os, signal, time
        import h5py
        import scope_profiler as sp
        if os.environ["OMPI_COMM_WORLD_RANK"] == "0":
            b = sp.region("job_b")
            for _ in range(3000):
                with b:
                    pass
            while True:
                time.sleep(0.1)
        # Rank 1: dies once rank 0's calls are in its partial file.
        while True:
            try:
                with h5py.File("j.h5.rank0.partial", "r", swmr=True) as f:
                    if f["rank0/events/block_calls"][:].sum() > 0:
                        break
            except (OSError, KeyError):
                pass
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    """, name="b.py")
    second = mpirun(sp, 2, "run", "-q", "--flush-interval", "0.1", "-o", "j.h5", "b.py")
    assert second.returncode != 0
    rec = sp("recover", "j.h5")
    assert rec.returncode == 0, rec.stderr
    assert "rank 1: " in rec.stderr and "left out" in rec.stderr, rec.stderr
    with h5py.File(sp.tmp / "j.h5") as f:
        assert sorted(k for k in f if k.startswith("rank")) == ["rank0"]
        assert list(regions(f, 0)) == ["job_b"]
        assert f["metadata"].attrs["missing_ranks"] == "1"


def test_a_serial_run_whose_output_ends_in_rank_n_is_recovered_as_one(sp):
    # A run of its own (not under MPI) told -o prof.rank3, as a job script
    # that profiles each rank apart names them, is killed: recover reads
    # prof.rank3.partial as the serial run's file it is, not as rank 3 of
    # an MPI job.
    sp.script(FOREVER, name="forever.py")
    with running(sp, "run", "-q", "--flush-interval", "0.05", "-o", "prof.rank3", "forever.py") as proc:
        wait_started(proc)
        calls, _, _ = wait_flushed(sp.tmp / "prof.rank3.partial", 0, proc)
        proc.kill()
        proc.wait()
    rec = sp("recover", "prof.rank3.partial")
    assert rec.returncode == 0, rec.stderr
    assert rec.stderr.startswith("scope-profiler: recover: wrote prof.rank3: "), rec.stderr
    with h5py.File(sp.tmp / "prof.rank3") as f:
        assert f.attrs["format_version"] == 2
        assert calls_and_dropped(f, 0)["step"][0] >= calls["step"]


# Records until the file "stop" is there.
UNTIL_STOP = """
import os
import scope_profiler as sp
step = sp.region("step")
with sp.region("main"):
    while not os.path.exists("stop"):
        for _ in range(1000):
            with step:
                pass
"""


def ended(proc, timeout=120):
    """(stdout, stderr, status) of proc once it ends; status "still
    running after TIMEOUT s" (and proc killed) when it does not."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, err, proc.returncode
    except subprocess.TimeoutExpired:
        where = ""
        try:
            if shutil.which("gdb"):   # where it waits, for the report
                where = subprocess.run(["gdb", "-batch", "-p", str(proc.pid), "-ex", "bt"],
                                       capture_output=True, text=True, timeout=60).stdout
        except subprocess.TimeoutExpired:
            where = "(gdb did not answer)"
        proc.kill()
        out, err = proc.communicate()
        return out, err, f"still running after {timeout} s\n{where}"


def test_summary_follow_follows_a_streaming_job_to_its_merged_file(sp):
    """summary --follow OUT (rank 0's partial file meanwhile) and --follow
    OUT.rank1.partial redraw while the job runs, then show the merged OUT
    once the job ends (status 0). Before: OUT was "No such file" while the
    job ran, and the rank's follow ended in "cannot read 'OUT.rank1'"
    (status 1) when its file was finished and merged."""
    script = sp.script(UNTIL_STOP)
    job = subprocess.Popen(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "3", BINARY, "run",
                            "-q", "--flush-interval", "0.1", "-o", "t.h5", str(script)],
                           cwd=sp.tmp, env=dict(os.environ, **ONE_NODE),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    follows = []
    try:
        ranks_flushed(sp.tmp, "t.h5", 3, job)
        for target in ("t.h5", "t.h5.rank1.partial"):
            follows.append(subprocess.Popen([BINARY, "summary", "--follow", "--flat", target], cwd=sp.tmp,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        firsts = [f.stdout.readline() for f in follows]
        (sp.tmp / "stop").touch()
        _, job_err = job.communicate(timeout=300)
        outs = [(first, *ended(f)) for first, f in zip(firsts, follows)]
        outs = [(first + out, err, rc) for first, out, err, rc in outs]
    finally:
        for p in [job, *follows]:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert job.returncode == 0, job_err
    assert firsts == ["Profile: t.h5.rank0.partial\n", "Profile: t.h5.rank1.partial\n"], outs
    for out, err, rc in outs:
        assert rc == 0, (rc, err, out[-2000:], sorted(p.name for p in sp.tmp.iterdir()))
        heads = [b.splitlines()[0] for b in out.split("\n\n") if b.startswith("Profile:")]
        assert heads[-1] == "Profile: t.h5", out
    with h5py.File(sp.tmp / "t.h5") as f:
        assert sorted(k for k in f if k.startswith("rank")) == ["rank0", "rank1", "rank2"]


FULL = """
import os
import scope_profiler as sp
from mpi4py import MPI
for i in range(1000):
    with sp.region("outer"):
        for j in range(1000):
            with sp.region("inner"):
                pass
MPI.COMM_WORLD.Barrier()
"""


@pytest.mark.script_imports("mpi4py")
def test_each_rank_counts_the_calls_a_full_disk_lost(sp):
    """A disk that fills while the ranks stream: each rank counts its own
    calls lost, with its rank (rank 0 spoke for every rank with its own
    count alone); with the calls recover finds, they are every rank's calls."""
    with small_tmpfs(sp.tmp / "small", "24m"):
        proc = mpirun(sp, 2, "run", "-q", "--memory-budget", "1M", "--flush-interval", "0.2",
                      "-o", "small/m.h5", sp.script(FULL), timeout=600)
        assert proc.returncode != 0
        lost = {}
        for line in proc.stderr.splitlines():
            words = line.split()
            if line.startswith("scope-profiler: warning: rank ") and "not recorded" in line:
                lost[int(words[3].rstrip(":"))] = int(words[4])
        rec = sp("recover", "-o", "rec.h5", "small/m.h5")
        assert rec.returncode == 0, rec.stderr
        with h5py.File(sp.tmp / "rec.h5") as f:
            for r in range(2):
                kept = sum(int(g.attrs["num_calls"]) for g in regions(f, r).values())
                assert kept + lost.get(r, 0) == 1000 * 1001, (r, kept, lost, proc.stderr)
        assert lost, proc.stderr   # the disk filled: some rank lost calls
