"""`run --likwid` / `setup(use_likwid=True)`: every region call a LIKWID
marker region, the counters stored beside the timings.

These machines' CPUs cannot be read by LIKWID (likwid-perfctr stops with
"Unsupported Processor"), so these tests do not use Debian's liblikwid.so.5:
they build a recording stand-in (tests/e2e/likwid_standin.c) as
liblikwid.so.5 in the build folder and put that folder first on
LD_LIBRARY_PATH. The stand-in logs every marker call to $LIKWID_STANDIN_LOG
and returns made-up deterministic counters from likwid_markerGetRegion:
count = the thread's completed start/stop pairs of the region, time =
count * 0.5 s, event k = count * (k + 1) * 1000.5."""
import os
import pathlib
import signal
import subprocess

import h5py
import numpy
import pytest

from conftest import build_standin, one_line_error, regions
from test_mpi import mpirun

STANDIN_SRC = pathlib.Path(__file__).with_name("likwid_standin.c")
EVENTS = "INSTR_RETIRED_ANY:FIXC0,CPU_CLK_UNHALTED_CORE:FIXC1,FP_ARITH_DOUBLE:PMC0"
NAMES = ["INSTR_RETIRED_ANY", "CPU_CLK_UNHALTED_CORE", "FP_ARITH_DOUBLE"]

SCRIPT = """
    import threading
    import scope_profiler as sp

    @sp.profile("kernel")
    def kernel(n):
        return sum(range(n))

    for i in range(3):
        with sp.region("step"):
            kernel(100)

    def worker():
        for i in range(2):
            with sp.region("step"):
                pass

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    print("script ran")
"""

# Rank r runs region "exchange" r + 2 times.
MPI_SCRIPT = """
    from mpi4py import MPI
    import scope_profiler as sp
    comm = MPI.COMM_WORLD
    for i in range(comm.rank + 2):
        with sp.region("exchange"):
            pass
    comm.Barrier()
"""


@pytest.fixture(scope="module")
def standin():
    """The stand-in's folder: build/likwid-standin/liblikwid.so.5."""
    return build_standin(STANDIN_SRC.name, "likwid-standin", "liblikwid.so.5").parent


def likwid_env(standin, sp, **more):
    env = {"LD_LIBRARY_PATH": f"{standin}:{os.environ.get('LD_LIBRARY_PATH', '')}",
           "LIKWID_STANDIN_LOG": str(sp.tmp / "markers.log"), "LIKWID_EVENTS": EVENTS,
           "LIKWID_STANDIN_NEVENTS": "3"}
    env.update(more)
    return env


def marker_log(sp):
    return [line.split() for line in (sp.tmp / "markers.log").read_text().splitlines()]


def expected_events(count, n=3):
    return [count * (k + 1) * 1000.5 for k in range(n)]


def likwid_tables(f, rank=0):
    """region name -> its group rank{N}/likwid/{k}."""
    return {g.attrs["region"].decode(): g for g in f[f"rank{rank}/likwid"].values()}


def test_marker_calls_in_order(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    log = marker_log(sp)
    ops = [l[0] for l in log]
    # likwid_markerInit once, first; likwid_markerClose once, last.
    assert log[0] == ["init", "0"] and ops.count("init") == 1
    assert log[-1][0] == "close" and ops.count("close") == 1
    # Each region registered once, before any of its starts.
    registered = [l[1] for l in log if l[0] == "register"]
    assert sorted(registered) == ["kernel", "step"]
    for name in registered:
        first_start = next(i for i, l in enumerate(log) if l[:2] == ["start", name])
        assert log.index(["register", name, "0"]) < first_start
    # markerThreadInit once per thread that entered a region: main, worker.
    assert [l for l in log if l[0] == "thread_init"] == [["thread_init", "1"], ["thread_init", "2"]]
    # Start/stop pairs around each call, nested, per thread.
    for thread, calls in (("1", {"step": 3, "kernel": 3}), ("2", {"step": 2})):
        stack, starts = [], {}
        for op, *rest in log:
            if op in ("start", "stop") and rest[1] == thread:
                if op == "start":
                    stack.append(rest[0])
                    starts[rest[0]] = starts.get(rest[0], 0) + 1
                else:
                    assert stack.pop() == rest[0]
        assert stack == [] and starts == calls
    # The counters read for each region in each thread (the worker's as it
    # exited), after every stop and before the close.
    gets = {(l[1], l[2]) for l in log if l[0] == "get"}
    assert gets == {("step", "1"), ("kernel", "1"), ("step", "2"), ("kernel", "2")}
    last_stop = max(i for i, l in enumerate(log) if l[0] == "stop")
    assert all(i > last_stop for i, l in enumerate(log) if l[0] == "get" and l[2] == "1")


def test_file_holds_counters_per_region_and_thread(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        meta = f["metadata"].attrs
        assert meta["likwid_events"] == EVENTS
        assert meta["likwid_event_names"] == ",".join(NAMES)
        tables = likwid_tables(f)
        assert set(tables) == {"step", "kernel"}
        step, kernel = tables["step"], tables["kernel"]
        # One row per thread that ran the region: the main thread, then the worker.
        assert step["likwid_events"].dtype == numpy.float64
        assert step["likwid_events"].shape == (2, 3)
        assert step.attrs["likwid_count"].tolist() == [3, 2]
        assert step.attrs["likwid_time"].tolist() == [1.5, 1.0]
        assert step["likwid_events"][()].tolist() == [expected_events(3), expected_events(2)]
        assert kernel["likwid_events"].shape == (1, 3)
        assert kernel.attrs["likwid_count"].tolist() == [3]
        # LIKWID's calls are the recorded calls.
        regs = regions(f, 0)
        for name, g in tables.items():
            assert g.attrs["likwid_count"].sum() == regs[name].attrs["num_calls"]


def test_event_names_from_the_group_file(sp, standin):
    """A group name in LIKWID_EVENTS: its EVENTSET, from the CPU folder whose
    group has as many events as LIKWID returned."""
    groups = sp.tmp / "groups"
    (groups / "zen9").mkdir(parents=True)
    (groups / "zen9" / "MEM.txt").write_text(
        "SHORT Memory\n\nEVENTSET\nFIXC0 INSTR\nPMC0  LOADS\nPMC1  STORES\n\nMETRICS\nRuntime time\n")
    (groups / "old1").mkdir()
    (groups / "old1" / "MEM.txt").write_text("SHORT Memory\n\nEVENTSET\nPMC0 LOADS_OLD\n\nMETRICS\n")
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py",
              env=likwid_env(standin, sp, LIKWID_EVENTS="MEM", SCOPE_PROFILER_LIKWID_GROUPS=str(groups)))
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert f["metadata"].attrs["likwid_events"] == "MEM"
        assert f["metadata"].attrs["likwid_event_names"] == "INSTR,LOADS,STORES"
    summary = sp("summary", "out.h5")
    assert summary.returncode == 0, summary.stderr
    assert "INSTR" in summary.stdout and "STORES" in summary.stdout


def test_summary_shows_counters_summed_over_threads(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    out = sp("summary", "out.h5")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "LIKWID counters (summed over threads)" in text
    table = text[text.index("LIKWID counters"):].splitlines()
    assert table[1].split() == ["region", "threads", "calls", "time", "[s]", *NAMES]
    rows = {l.split()[0]: l.split()[1:] for l in table[3:] if l.strip()}
    # step: 5 calls in 2 threads; each event summed over the threads.
    assert rows["step"] == ["2", "5", "2.500000", "%.6g" % (5 * 1000.5), "%.6g" % (10 * 1000.5),
                            "%.6g" % (15 * 1000.5)]
    assert rows["kernel"][:3] == ["1", "3", "1.500000"]


@pytest.mark.script_imports("numpy")
def test_read_api(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    sp.script("""
        import scope_profiler as sp
        r = sp.read_h5("out.h5")
        c = r.likwid("step")
        print(c["event_names"])
        print(c["events"].shape, c["events"].dtype, c["events"].sum(axis=0).tolist())
        print(c["count"].tolist(), c["time"].tolist())
        try:
            r.likwid("nowhere")
        except KeyError as e:
            print("KeyError", e)
    """, "reader.py")
    out = sp("run", "-q", "--no-output", "reader.py")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == str(NAMES)
    assert lines[1] == f"(2, 3) float64 {[5 * 1000.5, 10 * 1000.5, 15 * 1000.5]}"
    assert lines[2] == "[3, 2] [1.5, 1.0]"
    assert lines[3].startswith("KeyError") and "nowhere" in lines[3]


def test_setup_use_likwid(sp, standin):
    sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(use_likwid=True, file_path="setup.h5")
        for i in range(4):
            with sp.region("solve"):
                pass
        sp.ProfileManager.finalize()
    """)
    proc = sp("run", "-q", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "setup.h5") as f:
        solve = likwid_tables(f)["solve"]
        assert solve.attrs["likwid_count"].tolist() == [4]
        assert solve["likwid_events"][()].tolist() == [expected_events(4)]


def test_setup_use_likwid_without_library_raises(sp):
    sp.script("""
        import scope_profiler as sp
        try:
            sp.ProfileManager.setup(use_likwid=True)
        except RuntimeError as e:
            print(e)
    """)
    proc = sp("run", "-q", "--no-output", "script.py",
              env={"SCOPE_PROFILER_LIKWID_LIB": str(sp.tmp / "empty" / "liblikwid.so.5")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("use_likwid: cannot load LIKWID's library")


def test_no_library_is_one_line_before_the_script(sp):
    """No loadable LIKWID: one line, status 2, and the script never ran. The
    real library is installed here, so the tests name a path that does not
    exist (SCOPE_PROFILER_LIKWID_LIB) besides an empty LD_LIBRARY_PATH."""
    (sp.tmp / "empty").mkdir()
    sp.script("open('side_effect', 'w').write('ran')\n")
    proc = sp("run", "--likwid", "-o", "out.h5", "script.py",
              env={"LD_LIBRARY_PATH": str(sp.tmp / "empty"),
                   "SCOPE_PROFILER_LIKWID_LIB": str(sp.tmp / "empty" / "liblikwid.so.5")})
    assert proc.returncode == 2
    one_line_error(proc, "run: --likwid: cannot load LIKWID's library", "liblikwid.so.5")
    assert not (sp.tmp / "side_effect").exists()
    assert not (sp.tmp / "out.h5").exists()


@pytest.mark.parametrize("other", ["--aggregate", "--recursive", "--track-async", "--line-profile",
                                   "--memory"])
def test_refused_combinations(sp, standin, other):
    sp.script("open('side_effect', 'w').write('ran')\n")
    proc = sp("run", "--likwid", other, "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 2
    one_line_error(proc, f"--likwid cannot be combined with {other}")
    assert not (sp.tmp / "side_effect").exists()


def test_with_track_threads(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "--track-threads", "-o", "out.h5", "script.py",
              env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert likwid_tables(f)["step"].attrs["likwid_count"].tolist() == [3, 2]
        assert sorted(set(f["rank0/events/lanes"][()].tolist())) == [0, 1]


def test_damaged_counters_are_one_line(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5", "r+") as f:
        g = likwid_tables(f)["step"]
        g["likwid_events"][0, 1] = numpy.nan
    out = sp("summary", "out.h5")
    assert out.returncode != 0
    one_line_error(out, "likwid_events", "not finite")
    with h5py.File(sp.tmp / "out.h5", "r+") as f:
        g = likwid_tables(f)["step"]
        g["likwid_events"][0, 1] = 1.0
        del g.attrs["likwid_count"]
        g.attrs["likwid_count"] = numpy.array([1, 2, 3], dtype=numpy.int64)
    out = sp("summary", "out.h5")
    assert out.returncode != 0
    one_line_error(out, "likwid_count")


@pytest.mark.script_imports("mpi4py")
def test_mpi_ranks_counters_merge(sp, standin):
    sp.script(MPI_SCRIPT)
    proc = mpirun(sp, 2, "run", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert "LIKWID counters, rank 0" in proc.stderr and "LIKWID counters, rank 1" in proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert f["metadata"].attrs["likwid_event_names"] == ",".join(NAMES)
        for rank in (0, 1):
            ex = likwid_tables(f, rank)["exchange"]
            assert ex.attrs["likwid_count"].tolist() == [rank + 2]
            assert ex["likwid_events"][()].tolist() == [expected_events(rank + 2)]


def test_region_inside_itself_is_one_marker_region(sp, standin):
    """LIKWID's regions do not nest in themselves: a recursive function's
    region starts at the outermost call and stops at its return."""
    sp.script("""
        import scope_profiler as sp

        @sp.profile("fact")
        def fact(n):
            return 1 if n < 2 else n * fact(n - 1)

        print(fact(5), fact(3))
        with sp.region("outer"):
            with sp.region("outer"):
                pass
    """)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "120 6\n"
    log = marker_log(sp)
    assert [l[:2] for l in log if l[0] in ("start", "stop")] == [
        ["start", "fact"], ["stop", "fact"], ["start", "fact"], ["stop", "fact"],
        ["start", "outer"], ["stop", "outer"]]
    with h5py.File(sp.tmp / "out.h5") as f:
        tables = likwid_tables(f)
        assert tables["fact"].attrs["likwid_count"].tolist() == [2]
        assert regions(f, 0)["fact"].attrs["num_calls"] == 8
        assert tables["outer"].attrs["likwid_count"].tolist() == [1]


def test_profile_recursive_is_refused(sp, standin):
    """@profile(recursive=True) records nested calls that would be marker
    regions of no LIKWID call: refused, as run --likwid --recursive is."""
    sp.script("""
        import scope_profiler as sp
        try:
            @sp.profile(recursive=True)
            def rec():
                inner()
        except ValueError as e:
            print(e)
        def inner():
            pass
    """)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("profile(recursive=True) cannot be combined with --likwid")


def test_setup_likwid_after_a_recursive_decorator_is_refused(sp, standin):
    """Decorated first, LIKWID asked for afterwards: refused the same way,
    and the session goes on recording as before (no call silently lost)."""
    sp.script("""
        import scope_profiler as sp
        @sp.profile(recursive=True)
        def outer():
            return inner()
        def inner():
            return 1
        try:
            sp.setup(use_likwid=True, file_path="out.h5")
        except ValueError as e:
            print(e)
        outer()
    """)
    proc = sp("run", "-q", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("use_likwid cannot be combined with a function decorated with "
                                  "profile(recursive=True)"), proc.stdout
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        names = {bytes(n).decode() for n in f["rank0/regions/name"][:]}
    assert "outer" in names and any(n.endswith("inner") for n in names), names


def test_async_def_is_timed_without_a_marker_region(sp, standin):
    """A decorated `async def` function's calls interleave in one thread
    (LIKWID's regions nest): both calls recorded, no marker region for
    them, while the plain function stays one."""
    sp.script("""
        import asyncio
        import scope_profiler as sp

        @sp.profile
        async def f(i):
            await asyncio.sleep(0.01 * i)

        @sp.profile
        def g():
            pass

        async def main():
            await asyncio.gather(f(1), f(2))
            g()

        asyncio.run(main())
    """)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    log = marker_log(sp)
    assert [l[:2] for l in log if l[0] in ("start", "stop")] == [["start", "g"], ["stop", "g"]]
    with h5py.File(sp.tmp / "out.h5") as f:
        regs = regions(f, 0)
        assert regs["f"].attrs["num_calls"] == 2 and regs["g"].attrs["num_calls"] == 1
        tables = likwid_tables(f)
        assert "f" not in tables
        assert tables["g"].attrs["likwid_count"].tolist() == [1]


@pytest.mark.parametrize("bad", ["nan", "neg"])
def test_bad_readings_stored_as_zero_with_one_warning(sp, standin, bad):
    """LIKWID's values the file may not hold (a time not finite or negative,
    an event not finite) are stored as 0, said in one warning line: the
    profile is written and its own reader takes it."""
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py",
              env=likwid_env(standin, sp, LIKWID_STANDIN_BAD=bad))
    assert proc.returncode == 0, proc.stderr
    warnings = [l for l in proc.stderr.splitlines() if "LIKWID" in l]
    # step in 2 threads, kernel in 1: a time and an event each.
    assert warnings == ["scope-profiler: warning: rank 0: LIKWID gave 6 values not finite or a "
                        "negative time: stored as 0"], proc.stderr
    bad_event = 1 if bad == "nan" else 0
    with h5py.File(sp.tmp / "out.h5") as f:
        step = likwid_tables(f)["step"]
        assert step.attrs["likwid_count"].tolist() == [3, 2]
        assert step.attrs["likwid_time"].tolist() == [0.0, 0.0]
        events = step["likwid_events"][()]
        for row, count in enumerate((3, 2)):
            want = expected_events(count)
            want[bad_event] = 0.0
            assert events[row].tolist() == want
    out = sp("summary", "out.h5")
    assert out.returncode == 0, out.stderr
    assert "LIKWID counters" in out.stdout


METRIC_NAMES = ["Runtime (RDTSC) [s]", "Event 0 rate [1/s]"]


def perfctr_env(standin, sp, **more):
    """As under likwid-perfctr -m: LIKWID_FILEPATH names the marker file."""
    return likwid_env(standin, sp, LIKWID_FILEPATH=str(sp.tmp / "marker.txt"), **more)


@pytest.mark.script_imports("numpy")
def test_derived_metrics_from_likwid(sp, standin):
    """Under likwid-perfctr -m, LIKWID's own formulas give the metrics: the
    marker API is closed first (LIKWID writes its marker file, which
    likwid-perfctr reads too), then LIKWID reads that file back and
    evaluates each metric per region and thread. The stand-in's formulas:
    time, and event 0 / time; its threads in markerThreadInit order (the
    main thread first here)."""
    sp.script(SCRIPT)
    proc = sp("run", "--likwid", "-o", "out.h5", "script.py", env=perfctr_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    ops = [l[0] for l in marker_log(sp)]
    assert ops.count("close") == 1
    assert ops.index("close") < ops.index("perfmon_readMarkerFile")
    assert ops[-1] == "perfmon_readMarkerFile"   # no marker call after the close
    assert (sp.tmp / "marker.txt").exists()
    with h5py.File(sp.tmp / "out.h5") as f:
        assert f["metadata"].attrs["likwid_metric_names"].split("\n") == METRIC_NAMES
        t = likwid_tables(f)
        counts = {name: g.attrs["likwid_count"].tolist() for name, g in t.items()}
        assert counts == {"step": [3, 2], "kernel": [3]}
        # a row per thread that ran the region: (time, event 0 / time)
        assert t["step"]["likwid_metrics"][()].tolist() == [[1.5, 2001.0], [1.0, 2001.0]]
        assert t["kernel"]["likwid_metrics"][()].tolist() == [[1.5, 2001.0]]
    # summary (also at the end of the run): the metrics table
    for text in (proc.stderr, sp("summary", "out.h5").stdout):
        table = text[text.index("LIKWID metrics"):].splitlines()
        assert "min, mean and max over threads" in table[0]
        rows = {tuple(l.split()[:1]) + (" ".join(l.split()[1:-3]),): l.split()[-3:]
                for l in table[3:] if l.strip() and not l.startswith(" ")}
        assert rows[("step", METRIC_NAMES[0])] == ["1", "1.25", "1.5"]
        assert rows[("kernel", METRIC_NAMES[0])] == ["1.5", "1.5", "1.5"]
    sp.script("""
        import scope_profiler as sp
        c = sp.read_h5("out.h5").likwid("step")
        print(c["metric_names"])
        print(c["metrics"].tolist())
    """, "reader.py")
    out = sp("run", "-q", "--no-output", "reader.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [str(METRIC_NAMES), "[[1.5, 2001.0], [1.0, 2001.0]]"]


@pytest.mark.script_imports("numpy")
def test_no_metrics_without_perfctr_m(sp, standin):
    """Without likwid-perfctr -m (no LIKWID_FILEPATH) there is no marker
    file to evaluate: raw counters only, the API closed at exit as before,
    and the read API gives an empty metrics table."""
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert "perfmon_readMarkerFile" not in [l[0] for l in marker_log(sp)]
    assert "LIKWID metrics" not in sp("summary", "out.h5").stdout
    with h5py.File(sp.tmp / "out.h5") as f:
        assert "likwid_metric_names" not in f["metadata"].attrs
        assert all("likwid_metrics" not in g for g in likwid_tables(f).values())
    sp.script("""
        import scope_profiler as sp
        c = sp.read_h5("out.h5").likwid("step")
        print(c["metric_names"], c["metrics"].shape)
    """, "reader.py")
    out = sp("run", "-q", "--no-output", "reader.py")
    assert out.stdout.strip() == "[] (0, 0)", out.stderr


def test_library_without_perfmon_keeps_counters_with_one_warning(sp, standin):
    """A LIKWID library lacking the perfmon functions: the counters are
    kept, and one warning line says why the metrics are missing."""
    old = sp.tmp / "old"
    old.mkdir()
    subprocess.run(["cc", "-shared", "-fPIC", "-DNO_PERFMON", "-o", str(old / "liblikwid.so.5"),
                    str(STANDIN_SRC)], check=True)
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=perfctr_env(old, sp))
    assert proc.returncode == 0, proc.stderr
    warn = [l for l in proc.stderr.splitlines() if "derived metrics" in l]
    assert warn == ["scope-profiler: warning: rank 0: LIKWID's derived metrics are not in the profile: "
                    "LIKWID's library has no perfmon_getNumberOfGroups"]
    with h5py.File(sp.tmp / "out.h5") as f:
        assert likwid_tables(f)["step"].attrs["likwid_count"].tolist() == [3, 2]
        assert "likwid_metric_names" not in f["metadata"].attrs


def test_second_likwid_session_after_metrics_is_refused(sp, standin):
    """The marker file is written once per process: after a session whose
    metrics were read, setup(use_likwid=True) again raises, saying why."""
    sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(use_likwid=True, file_path="one.h5")
        with sp.region("a"):
            pass
        sp.ProfileManager.finalize()
        try:
            sp.ProfileManager.setup(use_likwid=True, file_path="two.h5")
        except Exception as e:
            print(type(e).__name__, e)
    """)
    proc = sp("run", "-q", "script.py", env=perfctr_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert "once per process" in proc.stdout and "closed" in proc.stdout
    with h5py.File(sp.tmp / "one.h5") as f:
        assert likwid_tables(f)["a"]["likwid_metrics"][()].tolist() == [[0.5, 2001.0]]


def test_damaged_metrics_are_one_line(sp, standin):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=perfctr_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5", "r+") as f:
        likwid_tables(f)["step"]["likwid_metrics"][1, 0] = numpy.inf
    out = sp("summary", "out.h5")
    assert out.returncode != 0
    one_line_error(out, "likwid_metrics", "infinity")


@pytest.mark.script_imports("mpi4py")
def test_mpi_ranks_metrics_merge(sp, standin):
    """likwid-mpirun gives each rank its own marker file: each rank's
    metrics reach the one file through the gather."""
    sp.script(MPI_SCRIPT)
    env = likwid_env(standin, sp)
    proc = mpirun(sp, 2, "run", "--likwid", "-o", "out.h5", "script.py", env=env,
                  wrap='LIKWID_FILEPATH="$PWD/marker.$OMPI_COMM_WORLD_RANK" exec')
    assert proc.returncode == 0, proc.stderr
    assert "LIKWID metrics, rank 1" in proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert f["metadata"].attrs["likwid_metric_names"].split("\n") == METRIC_NAMES
        for rank in (0, 1):
            ex = likwid_tables(f, rank)["exchange"]
            assert ex["likwid_metrics"][()].tolist() == [[(rank + 2) * 0.5, 2001.0]]


def test_names_likwid_cannot_read_back_leave_metrics_out(sp, standin):
    """LIKWID's marker file reader takes a region's name up to its first
    space, into 100 bytes: with such a name the file is not read back (no
    crash, no region silently missing), the counters are kept, one line says
    why."""
    sp.script("""
        import scope_profiler as sp
        with sp.region("two words"):
            pass
        with sp.region("step"):
            pass
    """)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=perfctr_env(standin, sp))
    assert proc.returncode == 0, proc.stderr
    assert "perfmon_readMarkerFile" not in [l[0] for l in marker_log(sp)]
    warn = [l for l in proc.stderr.splitlines() if "derived metrics" in l]
    assert len(warn) == 1 and "'two words'" in warn[0], proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert sorted(likwid_tables(f)) == ["step", "two words"]
        assert "likwid_metric_names" not in f["metadata"].attrs


@pytest.mark.parametrize("how", ["SIGTERM", "finalize"])
def test_regions_open_at_the_end_are_stopped_before_their_counters_are_read(sp, standin, how):
    """A session that ends inside a decorated call and a block (SIGTERM, a
    batch job's walltime; finalize() in the block): the open marker regions
    are stopped before the counters are read, so theirs are in the profile,
    and under SIGTERM likwid_markerClose still runs (its marker file), the
    run then ending by the signal. Before: no stop for them, their counters
    missing, and no close at all after a signal."""
    end = ("os.kill(os.getpid(), signal.SIGTERM); sum(range(100))"
           if how == "SIGTERM" else "sp.finalize(verbose=False)")
    sp.script(f"""
        import os, signal
        import scope_profiler as sp

        @sp.profile("main")
        def main():
            for step in range(5):
                with sp.region("step"):
                    if step == 3:
                        {end}

        main()
    """)
    proc = sp("run", "-q", "--likwid", "-o", "out.h5", "script.py", env=likwid_env(standin, sp))
    assert proc.returncode == (-signal.SIGTERM if how == "SIGTERM" else 0), proc.stderr
    log = marker_log(sp)
    ops = [(l[0], l[1]) for l in log if l[0] in ("start", "stop", "get", "close")]
    first_get = next(i for i, o in enumerate(ops) if o[0] == "get")
    before = ops[:first_get]
    for name, calls in (("main", 1), ("step", 4)):
        assert before.count(("start", name)) == before.count(("stop", name)) == calls, before
    assert {o[1] for o in ops[first_get:] if o[0] == "get"} == {"main", "step"}
    assert [o for o in ops[first_get:] if o[0] in ("start", "stop")] == []
    assert ops.count(("close", "1")) == 1
    with h5py.File(sp.tmp / "out.h5") as f:
        assert set(likwid_tables(f)) == {"main", "step"}
