"""`mpirun -n N scope-profiler run`: one merged profile for all ranks, on the
real Open MPI and mpi4py from Debian (oversubscribed: this machine has two
cores)."""
import json
import os
import subprocess

import h5py
import pytest

from conftest import BINARY, ROOT, one_line_error, regions

EXAMPLE = ROOT / "examples" / "mpi_timestep.py"


def mpirun(sp, n, *args, env=None, timeout=120, wrap=None):
    """Runs `mpirun -n N scope-profiler ARGS` in the test's folder."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(n)]
    tool = [BINARY, *map(str, args)]
    if wrap:
        cmd += ["sh", "-c", wrap + ' "$@"', "sh", *tool]
    else:
        cmd += tool
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env,
                          cwd=sp.tmp)


def rank_total_s(group):
    return (group["end_times"][:] - group["start_times"][:]).sum() / 1e9


@pytest.mark.script_imports("mpi4py")
@pytest.mark.parametrize("n", [1, 2, 4])
def test_ranks_merge_into_one_file_with_mpi4py(sp, n):
    proc = mpirun(sp, n, "run", "-o", "out.h5", EXAMPLE, env={"STEPS": "5", "OMP_NUM_THREADS": "2"})
    assert proc.returncode == 0, proc.stderr
    if n > 1:  # total cores = ranks x OpenMP threads
        assert f"cores: {n} ranks × 2 OpenMP threads = {2 * n}" in proc.stderr
    assert f"5 steps on {n} rank(s), allreduce = {float(n)}" in proc.stdout
    # Rank 0 speaks for all: one summary, one "written" line.
    assert proc.stderr.count("Regions (") + proc.stderr.count("Regions\n") == 1, proc.stderr
    assert proc.stderr.count("profile written to") == 1
    assert sorted(os.listdir(sp.tmp)) == ["out.h5"]  # no temporary files left
    with h5py.File(sp.tmp / "out.h5") as f:
        assert sorted(k for k in f if k.startswith("rank")) == [f"rank{r}" for r in range(n)]
        meta = f["metadata"].attrs
        assert meta["mpi_size"] == n
        ranks = {1: "0", 2: "0,1", 4: "0-3"}[n]
        assert meta["hostnames"] == f"{os.uname().nodename}: {ranks}"
        assert meta["mpi_library"].startswith("Open MPI")
        assert meta["omp_num_threads"] == 2
        for r in range(n):
            g = f[f"rank{r}"]
            assert g.attrs["hostname"] == os.uname().nodename.encode()
            assert "clock_offset_ns" in g.attrs
            regs = regions(f, r)
            assert set(regs) == {"timestep", "solve", "exchange"}
            for reg in regs.values():
                assert reg.attrs["num_calls"] == 5
                assert len(reg["start_times"]) == 5


@pytest.mark.script_imports("mpi4py")
def test_recorded_imbalance_is_the_one_made(sp):
    # Rank r sleeps (1 + r) * 20 ms per step inside "solve" and measures,
    # with perf_counter_ns, how long its sleeps really took (on a loaded
    # machine a sleep overshoots by a varying amount). The profile must hold
    # that imbalance: what one run measured, compared with what it recorded.
    sp.script("""
        import os, time
        import scope_profiler as sp
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        slept = 0
        for step in range(6):
            with sp.region("solve"):
                t0 = time.perf_counter_ns()
                time.sleep(0.02 * (1 + rank))
                slept += time.perf_counter_ns() - t0
        with open(f"slept{rank}.txt", "w") as f:
            f.write(str(slept / 1e9))
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "imb.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    slept = [float((sp.tmp / f"slept{r}.txt").read_text()) for r in range(3)]
    with h5py.File(sp.tmp / "imb.h5") as f:
        totals = [rank_total_s(regions(f, r)["solve"]) for r in range(3)]
    for r in range(3):
        # The region holds the sleep it timed, and the sleep lasted at least
        # what was asked.
        assert totals[r] >= slept[r] >= 6 * 0.02 * (1 + r), (totals, slept)
    # Between the region's edges and the script's own clock reads there is
    # only a little bookkeeping, unless the machine preempts the rank there:
    # the recorded ratio is the measured one within 15 %.
    assert totals[2] / totals[0] == pytest.approx(slept[2] / slept[0], rel=0.15), (totals, slept)
    assert totals[1] / totals[0] == pytest.approx(slept[1] / slept[0], rel=0.15), (totals, slept)
    out = sp("summary", "--flat", "imb.h5")
    assert out.returncode == 0, out.stderr
    row = next(l for l in out.stdout.splitlines() if l.startswith("solve "))
    imbalance = float(row.split()[-1].rstrip("x"))
    assert imbalance == pytest.approx(totals[2] / totals[0], abs=0.01)
    # The per-rank view: rank 2 alone.
    one = sp("summary", "--ranks", "2", "--json", "imb.h5")
    assert one.returncode == 0, one.stderr
    doc = json.loads(one.stdout)
    solve = next(r for r in doc["regions"] if r["name"] == "solve")
    assert solve["calls"] == 6
    assert solve["total_s"] == pytest.approx(totals[2], rel=1e-6)
    assert doc["ranks"] == [2]


def test_without_mpi4py_ranks_with_different_regions_and_one_with_none(sp):
    sp.script("""
        import os
        import scope_profiler as sp
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        if rank == 1:
            pass                       # records nothing
        else:
            for i in range(rank + 1):
                with sp.region(f"r{rank}"):
                    pass
            with sp.region("common"):
                pass
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "d.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "d.h5") as f:
        assert {k: sorted(regions(f, r)) for r, k in enumerate(["rank0", "rank1", "rank2"])} == {
            "rank0": ["common", "r0"], "rank1": [], "rank2": ["common", "r2"]}
        assert regions(f, 2)["r2"].attrs["num_calls"] == 3
    out = sp("summary", "d.h5")
    assert "3 ranks on 1 host" in out.stdout


@pytest.mark.script_imports("mpi4py")
def test_script_that_finalizes_mpi_itself(sp):
    sp.script("""
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        with sp.region("before"):
            comm.Barrier()
        MPI.Finalize()
        with open(f"fin{comm.rank}.txt", "w") as f:
            print("finalized:", MPI.Is_finalized(), file=f)
        with sp.region("after"):  # still recorded: the write comes later
            pass
    """)
    proc = mpirun(sp, 2, "run", "-q", "-o", "fin.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    for r in range(2):
        assert (sp.tmp / f"fin{r}.txt").read_text() == "finalized: True\n"
    with h5py.File(sp.tmp / "fin.h5") as f:
        for r in range(2):
            assert sorted(regions(f, r)) == ["after", "before"]


@pytest.mark.script_imports("mpi4py")
def test_script_sees_the_same_world_and_thread_level(sp):
    sp.script("""
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        with open(f"world{rank}.txt", "w") as f:  # mpirun may interleave stdout
            print(rank, MPI.COMM_WORLD.Get_size(), MPI.Query_thread() == MPI.THREAD_MULTIPLE,
                  file=f)
    """)
    proc = mpirun(sp, 2, "run", "-q", "--no-output", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert [(sp.tmp / f"world{r}.txt").read_text() for r in range(2)] == ["0 2 True\n",
                                                                        "1 2 True\n"]


@pytest.mark.script_imports("mpi4py")
def test_script_level_sessions_are_collective(sp):
    sp.script("""
        import scope_profiler as sp
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.rank
        for name in ("first", "second"):
            sp.setup(file_path=f"{name}.h5", verbose=False)
            for _ in range(rank + 1):
                with sp.region(name):
                    pass
            sp.finalize()
        results = sp.read_h5("second.h5") if rank == 0 else None
        if rank == 0:
            print(results.num_ranks, results["second"].num_calls)
    """)
    proc = mpirun(sp, 3, "run", "-q", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "6"]
    with h5py.File(sp.tmp / "first.h5") as f:
        assert [regions(f, r)["first"].attrs["num_calls"] for r in range(3)] == [1, 2, 3]
    assert not (sp.tmp / "profiling_data.h5").exists()


@pytest.mark.script_imports("mpi4py")
def test_an_exception_on_one_rank_still_writes_every_rank(sp):
    sp.script("""
        import scope_profiler as sp
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.rank
        with sp.region("work"):
            pass
        if rank == 1:
            raise RuntimeError("rank 1 failed")
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "exc.h5", "script.py")
    assert proc.returncode != 0
    assert "RuntimeError: rank 1 failed" in proc.stderr
    with h5py.File(sp.tmp / "exc.h5") as f:
        assert [regions(f, r)["work"].attrs["num_calls"] for r in range(3)] == [1, 1, 1]


@pytest.mark.script_imports("mpi4py")
def test_a_failed_rank_others_wait_for_aborts_instead_of_hanging(sp):
    # Rank 1 fails while ranks 0 and 2 wait for it in an allreduce: it
    # waits SCOPE_PROFILER_MPI_WAIT seconds for them, keeps its own profile
    # and takes the job down (as MPI does when a rank dies).
    sp.script("""
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        with sp.region("work"):
            pass
        if comm.rank == 1:
            raise RuntimeError("rank 1 failed")
        comm.allreduce(1)
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "never.h5", "script.py",
                  env={"SCOPE_PROFILER_MPI_WAIT": "2", "TMPDIR": str(sp.tmp)}, timeout=60)
    assert proc.returncode != 0
    line = next(l for l in proc.stderr.splitlines() if l.startswith("scope-profiler: rank 1:"))
    assert "did not reach the end within 2 s" in line and "aborting the job" in line
    saved = line.split("saved to ")[1].split(";")[0]
    with h5py.File(saved) as f:
        assert list(k for k in f if k.startswith("rank")) == ["rank1"]
        assert regions(f, 1)["work"].attrs["num_calls"] == 1
    assert not (sp.tmp / "never.h5").exists()


@pytest.mark.script_imports("mpi4py")
def test_a_rank_exiting_with_a_failure_status_does_not_hang_the_job(sp):
    # sys.exit(3) on rank 0 while rank 1 waits for it in a barrier: as for
    # an exception, it waits SCOPE_PROFILER_MPI_WAIT seconds, then aborts.
    sp.script("""
        import sys
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        with sp.region("work"):
            pass
        if comm.rank == 0:
            sys.exit(3)
        comm.Barrier()
    """)
    proc = mpirun(sp, 2, "run", "-q", "-o", "x.h5", "script.py",
                  env={"SCOPE_PROFILER_MPI_WAIT": "2", "TMPDIR": str(sp.tmp)}, timeout=60)
    assert proc.returncode != 0
    assert "scope-profiler: rank 0: the script failed" in proc.stderr
    assert list(sp.tmp.glob("scope-profiler-*.h5"))


@pytest.mark.script_imports("mpi4py")
def test_clocks_of_ranks_are_aligned_on_rank_0(sp):
    # Each rank runs in its own time namespace, its monotonic clock r * 1000 s
    # ahead of rank 0's: what separate nodes look like. After the merge, the
    # offsets are measured and the regions entered right after a barrier
    # line up.
    sp.script("""
        import time
        import scope_profiler as sp
        from mpi4py import MPI
        MPI.COMM_WORLD.Barrier()
        with sp.region("after_barrier"):
            time.sleep(0.01)
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "clk.h5", "script.py",
                  wrap="exec unshare --time --monotonic $((OMPI_COMM_WORLD_RANK * 1000)) --fork")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "clk.h5") as f:
        offsets = [int(f[f"rank{r}"].attrs["clock_offset_ns"]) for r in range(3)]
        starts = [int(regions(f, r)["after_barrier"]["start_times"][0]) for r in range(3)]
        run_starts = [int(f[f"rank{r}"].attrs["run_start_time"]) for r in range(3)]
        sync_error = int(f["metadata"].attrs["clock_sync_error_ns"])
    for r in range(3):
        assert abs(offsets[r] - r * 1000 * 10**9) < 5 * 10**6, offsets
    assert max(starts) - min(starts) < 0.5e9, starts       # not 1000 s apart
    assert max(run_starts) - min(run_starts) < 5e9, run_starts
    assert 0 <= sync_error < 5 * 10**6


def test_version_says_mpi_is_built_in(sp):
    out = sp("--version")
    assert out.returncode == 0
    assert "MPI: Open MPI v" in out.stdout


def test_outside_a_launcher_mpi_is_not_touched(sp):
    sp.script("""
        import scope_profiler as sp
        with sp.region("a"):
            pass
    """)
    env = {k: "" for k in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")}
    proc = sp("run", "-q", "-o", "serial.h5", "script.py", env=env)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "serial.h5") as f:
        assert f["metadata"].attrs["mpi_size"] == 1
        assert "hostnames" not in f["metadata"].attrs


MAPS_SCRIPT = """
    def libmpi_mapped():
        with open("/proc/self/maps") as maps:
            return any("/libmpi.so" in line for line in maps)
    # One write per line: mpirun interleaves the ranks' writes.
    print(f"at start: {libmpi_mapped()}", flush=True)
"""


def test_outside_a_launcher_libmpi_is_not_even_loaded(sp):
    # Loading Open MPI costs every start 20-500 ms: only a launcher's
    # ranks pay it.
    sp.script(MAPS_SCRIPT)
    env = {k: "" for k in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")}
    proc = sp("run", "--no-output", "-q", "script.py", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "at start: False\n"
    out = mpirun(sp, 2, "run", "--no-output", "-q", "script.py")
    assert out.returncode == 0, out.stderr
    # mpirun may cut and interleave the ranks' lines: count the answers.
    assert out.stdout.count("True") == 2 and "False" not in out.stdout, out.stdout


@pytest.mark.script_imports("mpi4py")
def test_mpi4py_without_a_launcher_finalizes_through_the_library_it_loaded(sp):
    # The executable's MPI_Finalize (which defers a launcher rank's
    # finalize) must reach the library a script loaded on its own.
    sp.script(MAPS_SCRIPT + """
    from mpi4py import MPI
    print(f"{MPI.COMM_WORLD.Get_size()} {libmpi_mapped()}", flush=True)
    MPI.Finalize()
    print(f"finalized: {MPI.Is_finalized()}", flush=True)
    """)
    env = {k: "" for k in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")}
    proc = sp("run", "-q", "-o", "single.h5", "script.py", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "at start: False\n1 True\nfinalized: True\n"
    with h5py.File(sp.tmp / "single.h5") as f:
        assert f["metadata"].attrs["mpi_size"] == 1


def test_an_mpi_library_without_mpi_is_one_line_before_the_script(sp):
    # A stand-in libmpi.so.40 that lacks MPI's functions, found first on
    # LD_LIBRARY_PATH by a process a launcher started (its environment is
    # enough: OMPI_COMM_WORLD_RANK): one line, status 1, the script never
    # runs, no file.
    (sp.tmp / "fake.c").write_text("int not_mpi(void) { return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libmpi.so.40", "-o",
                    str(sp.tmp / "libmpi.so.40"), str(sp.tmp / "fake.c")], check=True)
    sp.script('print("the script ran")')
    proc = sp("run", "-o", "out.h5", "script.py",
              env={"OMPI_COMM_WORLD_RANK": "0", "LD_LIBRARY_PATH": str(sp.tmp)})
    assert proc.returncode == 1, proc.stderr
    one_line_error(proc, "scope-profiler: run: the MPI library libmpi.so.40 lacks PMPI_Init_thread")
    assert proc.stdout == ""
    assert not (sp.tmp / "out.h5").exists()


@pytest.mark.script_imports("mpi4py")
def test_a_write_error_on_rank_0_reaches_every_rank(sp):
    # The output folder vanishes during the run: rank 0 cannot write, every
    # rank learns it, the profile goes to rank 0's $TMPDIR, the status is 1.
    (sp.tmp / "gone").mkdir()
    (sp.tmp / "keep").mkdir()
    sp.script("""
        import os
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        with sp.region("work"):
            pass
        if comm.rank == 0:
            os.rmdir("gone")
        comm.Barrier()
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "gone/p.h5", "script.py",
                  env={"TMPDIR": str(sp.tmp / "keep")})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("cannot") == 1, proc.stderr  # said once, by rank 0
    saved = [l for l in proc.stderr.splitlines() if "profile saved to" in l]
    assert len(saved) == 1, proc.stderr
    (path,) = list((sp.tmp / "keep").glob("scope-profiler-*.h5"))
    assert str(path) in saved[0]
    with h5py.File(path) as f:
        assert [regions(f, r)["work"].attrs["num_calls"] for r in range(3)] == [1, 1, 1]


def test_diff_of_two_mpi_runs_shows_the_imbalance(sp):
    for name, imbalance in (("a.h5", "0"), ("b.h5", "1")):
        # Sleeps long enough that a loaded machine's late wake-ups (a few
        # ms each) stay small beside them.
        proc = mpirun(sp, 2, "run", "-q", "-o", name, EXAMPLE,
                      env={"STEPS": "4", "SOLVE_SECONDS": "0.05", "IMBALANCE": imbalance})
        assert proc.returncode == 0, proc.stderr
    out = sp("diff", "a.h5", "b.h5")
    assert out.returncode == 0, out.stderr
    assert "imbalance" in out.stdout
    row = next(l for l in out.stdout.splitlines() if l.startswith("solve "))
    imb_a, imb_b = (float(x.rstrip("x")) for x in row.split()[-2:])
    # The imbalance of each file is its slowest rank's total over its
    # fastest's, as stored.
    for name, shown in (("a.h5", imb_a), ("b.h5", imb_b)):
        with h5py.File(sp.tmp / name) as f:
            totals = [rank_total_s(regions(f, r)["solve"]) for r in range(2)]
        assert shown == pytest.approx(max(totals) / min(totals), abs=0.01), (name, row)
    # Rank 1 sleeps twice as long as rank 0 in b, as long in a: late
    # wake-ups on a loaded machine blur both ratios, never by that much.
    assert imb_b > imb_a + 0.3, row


@pytest.mark.parametrize("wait", ["soon", "0x10"])
def test_a_bad_wait_is_refused_before_the_script_runs(sp, wait):
    sp.script("open('ran', 'w').close()\n")
    proc = mpirun(sp, 2, "run", "-q", "script.py", env={"SCOPE_PROFILER_MPI_WAIT": wait})
    assert proc.returncode != 0
    errors = [l for l in proc.stderr.splitlines() if l.startswith("scope-profiler:")]
    assert errors and all(l == "scope-profiler: run: SCOPE_PROFILER_MPI_WAIT must be a number "
                          f"of seconds, not '{wait}'" for l in errors), proc.stderr
    assert not (sp.tmp / "ran").exists()


SELF_INIT = """
import sys
import mpi4py
mpi4py.rc.initialize = False
mpi4py.rc.finalize = False
from mpi4py import MPI
import scope_profiler as sp
if sys.argv[1] == "thread":
    ok = MPI.Init_thread(MPI.THREAD_FUNNELED) >= MPI.THREAD_FUNNELED
    sys.stdout.write("provided %s\\n" % ok)   # one write: the ranks share the pipe
    sys.stdout.flush()
else:
    MPI.Init()
with sp.region("a"):
    MPI.COMM_WORLD.Barrier()
MPI.Finalize()
sys.stdout.write("finalized %s\\n" % MPI.Is_finalized())
sys.stdout.flush()
"""


@pytest.mark.script_imports("mpi4py")
@pytest.mark.parametrize("how", ["init", "thread"])
def test_a_script_that_starts_mpi_itself(sp, how):
    """mpi4py.rc.initialize = False, then MPI.Init() or MPI.Init_thread():
    the run started MPI already under the launcher; the script's call
    succeeds (before, Open MPI aborted the job: 'initialize MPI more than
    once'), and one file holds both ranks."""
    sp.script(SELF_INIT)
    proc = mpirun(sp, 2, "run", "-q", "-o", "out.h5", "script.py", how)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("finalized True") == 2, proc.stdout
    if how == "thread":
        assert proc.stdout.count("provided True") == 2, proc.stdout
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            assert int(regions(f, r)["a"].attrs["num_calls"]) == 1


def test_a_second_session_of_every_rank_goes_to_its_own_file_said_once(sp):
    """run -o X.h5 under MPI, a script that finalize()s and sets up again on
    every rank: the second session's merged profile is X-2.h5, and rank 0
    alone says so (the others print nothing), as it speaks for every rank."""
    script = sp.script("""
        import scope_profiler as sp
        for k, name in enumerate(("first", "second")):
            sp.setup()
            with sp.region(name):
                pass
            sp.finalize(verbose=False)
    """)
    proc = mpirun(sp, 3, "run", "-q", "-o", "X.h5", script)
    assert proc.returncode == 0, proc.stderr
    said = [l for l in proc.stderr.splitlines() if "profiling session" in l]
    assert said == [f"scope-profiler: run: the script's profiling session 2 is written to {sp.tmp}/X-2.h5 "
                    f"(-o {sp.tmp}/X.h5 holds its first)"], proc.stderr
    for path, name in (("X.h5", "first"), ("X-2.h5", "second")):
        with h5py.File(sp.tmp / path) as f:
            for r in range(3):
                assert {n: int(g.attrs["num_calls"]) for n, g in regions(f, r).items()} == {name: 1}


@pytest.mark.script_imports("mpi4py")
@pytest.mark.parametrize("budget", [[], ["--memory-budget", "0"]])
def test_every_ranks_overlap_count_reaches_the_file(sp, budget):
    """Calls that overlapped without nesting on rank 1 only: its tree in the
    merged file keeps the count (the overlaps attribute, carried in the
    ranks' packed profiles), and summary says so for that rank (before:
    rank 0's alone survived the gather)."""
    script = sp.script("""
        from mpi4py import MPI
        import scope_profiler as sp
        a, b = sp.region("a"), sp.region("b")
        with sp.region("top"):
            if MPI.COMM_WORLD.Get_rank() == 1:
                a.__enter__(); b.__enter__(); a.__exit__(None, None, None); b.__exit__(None, None, None)
            else:
                with a:
                    with b:
                        pass
    """)
    proc = mpirun(sp, 2, "run", "-q", *budget, "-o", "o.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "o.h5") as f:
        assert "overlaps" not in f["rank0/tree"].attrs
        assert int(f["rank1/tree"].attrs["overlaps"]) == 1
    one = subprocess.run([BINARY, "summary", "--tree", "--ranks", "1", "o.h5"], capture_output=True,
                         text=True, cwd=sp.tmp, timeout=120)
    [head] = [l for l in one.stdout.splitlines() if l.startswith("Call tree")]
    assert "calls overlapped without nesting" in head, one.stdout
