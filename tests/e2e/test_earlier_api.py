"""Scripts written for the earlier releases of the original package: their
setup() keywords, region_name=, scope_profiler.h5reader and
scope_profiler.region_profiler, the ProfileManager methods they call, and
the /metadata keys their post-processing reads. Each script runs through
the real binary; what it recorded is read back with h5py."""
import datetime
import json
import os

import h5py
import numpy as np
import pytest

from conftest import regions
from test_module_install import installed  # noqa: F401 (the fixture: make install DESTDIR=...)


def run_ok(sp, text, *args, env=None):
    script = sp.script(text)
    proc = sp("run", "-q", *args, script, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def last_json(stdout):
    """The script's JSON report: its last line of output."""
    return json.loads(stdout.strip().splitlines()[-1])


def test_setup_with_the_earlier_keywords_records(sp):
    """The earlier README's example: setup(use_likwid=False, time_trace=True,
    flush_to_disk=True), profile("main"), profile_region(region_name=...)."""
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager

        ProfileManager.setup(use_likwid=False, time_trace=True, flush_to_disk=True,
                             profiling_activated=True, file_path="earlier.h5")

        @ProfileManager.profile("main")
        def main():
            x = 0
            for i in range(10):
                with ProfileManager.profile_region(region_name="iteration"):
                    x += 1
            return x

        @ProfileManager.profile(region_name="named_by_keyword")
        def helper():
            pass

        assert main() == 10
        helper(); helper()
        with ProfileManager.region(region_name="plain_region"):
            pass
        c = ProfileManager.get_config()
        report = {k: getattr(c, k) for k in ("file_path", "time_trace", "flush_to_disk",
                  "profiling_activated", "deactivate_profiling", "aggregation_mode",
                  "use_likwid", "buffer_limit", "active")}
        report["regions"] = list(ProfileManager.get_all_regions())
        ProfileManager.finalize(verbose=False)
        print(json.dumps(report))
    """)
    rep = last_json(out)
    assert rep == {"file_path": "earlier.h5", "time_trace": True, "flush_to_disk": False,
                   "profiling_activated": True, "deactivate_profiling": False,
                   "aggregation_mode": False, "use_likwid": False, "buffer_limit": 1024,
                   "active": True,
                   "regions": ["main", "named_by_keyword", "iteration", "plain_region"]}
    with h5py.File(sp.tmp / "earlier.h5") as f:
        regs = regions(f)
        assert regs["main"].attrs["num_calls"] == 1
        assert regs["iteration"].attrs["num_calls"] == 10
        assert regs["named_by_keyword"].attrs["num_calls"] == 2
        assert regs["plain_region"].attrs["num_calls"] == 1
        # time_trace=True: every call's timestamps, each iteration inside main
        s, e = regs["iteration"]["start_times"][:], regs["iteration"]["end_times"][:]
        ms, me = regs["main"]["start_times"][0], regs["main"]["end_times"][0]
        assert len(s) == 10 and (s >= ms).all() and (e <= me).all()


def test_profiling_activated_false_is_deactivate_profiling(sp):
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager

        ProfileManager.setup(profiling_activated=False, file_path="off.h5")

        def work():
            return 3

        wrapped = ProfileManager.profile("work")(work)
        with ProfileManager.profile_region(region_name="block"):
            pass
        report = {"same_function": wrapped is work,
                  "class": type(ProfileManager.get_region("block")).__name__,
                  "calls": ProfileManager.get_region("block").num_calls,
                  "deactivate_profiling": ProfileManager.get_config().deactivate_profiling}
        ProfileManager.finalize(verbose=False)
        print(json.dumps(report))
    """)
    assert last_json(out) == {"same_function": True, "class": "DisabledProfileRegion",
                              "calls": 0, "deactivate_profiling": True}
    assert not (sp.tmp / "off.h5").exists()


def test_time_trace_false_counts_calls_without_a_timeline(sp):
    """time_trace=False: the earlier count-only regions; here aggregation
    mode (counts and totals, no per-call events)."""
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager
        from scope_profiler.region_profiler import NCallsOnlyProfileRegion

        ProfileManager.setup(time_trace=False, file_path="counts.h5")
        for _ in range(100):
            with ProfileManager.profile_region("tick"):
                pass
        r = ProfileManager.get_region("tick")
        report = {"counts_only": isinstance(r, NCallsOnlyProfileRegion),
                  "calls": r.num_calls, "time_trace": ProfileManager.get_config().time_trace}
        ProfileManager.finalize(verbose=False)
        print(json.dumps(report))
    """)
    assert last_json(out) == {"counts_only": True, "calls": 100, "time_trace": False}
    with h5py.File(sp.tmp / "counts.h5") as f:
        tick = regions(f)["tick"]
        assert tick.aggregate and tick.attrs["num_calls"] == 100
        assert list(tick) == []   # no per-call events


def test_contradicting_and_unknown_keywords_are_refused(sp):
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager

        report = []
        for kw in [dict(profiling_activated=True, deactivate_profiling=True),
                   dict(time_trace=True, aggregation_mode=True),
                   dict(time_trace=False, use_line_profiler=True),
                   dict(flush_to_disk=True, no_such_option=1)]:
            try:
                ProfileManager.setup(**kw)
                report.append(None)
            except (TypeError, ValueError) as exc:
                report.append([type(exc).__name__, str(exc)])
        # none of them changed the session (which `run` started)
        c = ProfileManager.get_config()
        report.append([c.deactivate_profiling, c.aggregation_mode, c.use_line_profiler])
        # agreeing ones are fine
        ProfileManager.setup(profiling_activated=False, deactivate_profiling=True,
                             deactivate_file_output=True)
        report.append(ProfileManager.get_config().deactivate_profiling)
        ProfileManager.finalize(verbose=False)
        print(json.dumps(report))
    """)
    rep = last_json(out)
    kind, msg = rep[0]
    assert kind == "ValueError" and "profiling_activated=True" in msg \
        and "deactivate_profiling=True" in msg
    kind, msg = rep[1]
    assert kind == "ValueError" and "time_trace=True" in msg and "aggregation_mode=True" in msg
    kind, msg = rep[2]
    assert kind == "ValueError" and "use_line_profiler" in msg \
        and "time_trace=False is aggregation_mode=True" in msg
    kind, msg = rep[3]
    assert kind == "TypeError" and "no_such_option" in msg
    assert rep[4:] == [[False, False, False], True]


def test_h5reader_reads_our_files(sp):
    run_ok(sp, """
        import time
        from scope_profiler import ProfileManager

        ProfileManager.setup(file_path="data.h5")
        for step in range(4):
            with ProfileManager.profile_region(region_name="timestep"):
                with ProfileManager.profile_region(region_name="solve"):
                    time.sleep(0.001)
        ProfileManager.finalize(verbose=False)
    """)
    out = run_ok(sp, """
        import json
        import scope_profiler
        import scope_profiler.h5reader
        from scope_profiler.h5reader import ProfilingH5Reader

        reader = ProfilingH5Reader("data.h5")
        solve = reader.get_region("solve")
        r0 = solve[0]
        try:
            ProfilingH5Reader("missing.h5")
            missing = None
        except FileNotFoundError as exc:
            missing = "FileNotFoundError"
        print(json.dumps({
            "same_class": scope_profiler.h5reader.ProfilingH5Reader is ProfilingH5Reader,
            "is_results": isinstance(reader, scope_profiler.ProfilingResults),
            "names": [r.name for r in reader.get_regions()],
            # the patterns of every command (a glob, or re:EXPR searched)
            "included": [r.name for r in reader.get_regions(include="sol*")],
            "excluded": [r.name for r in reader.get_regions(exclude="re:sol")],
            "num_ranks": reader.num_ranks,
            "file_name": reader.file_path.name,
            "summary": r0.get_summary(),
            "ranks": list(solve.regions),
            "average_durations": solve.average_durations(),
            "min": solve.min_duration, "max": solve.max_duration,
            "first_start_time": solve.first_start_time,
            "starts": list(r0.start_times), "ends": list(r0.end_times),
            "missing": missing,
        }))
    """)
    rep = last_json(out)
    assert rep["same_class"] and rep["is_results"]
    assert rep["names"] == ["timestep", "solve"]
    assert rep["included"] == ["solve"] and rep["excluded"] == ["timestep"]
    assert rep["num_ranks"] == 1 and rep["file_name"] == "data.h5"
    assert rep["ranks"] == [0] and rep["missing"] == "FileNotFoundError"
    with h5py.File(sp.tmp / "data.h5") as f:
        solve = regions(f)["solve"]
        s = solve["start_times"][:].astype(np.int64)
        e = solve["end_times"][:].astype(np.int64)
    d = (e - s) / 1e9
    summ = rep["summary"]
    assert summ["num_calls"] == 4
    assert np.isclose(summ["total_duration"], d.sum())
    assert np.isclose(summ["average_duration"], d.mean())
    assert np.isclose(summ["min_duration"], d.min()) and np.isclose(summ["max_duration"], d.max())
    assert np.isclose(summ["std_duration"], d.std())
    assert np.isclose(rep["average_durations"]["0"], d.mean())
    assert np.isclose(rep["min"], d.min()) and np.isclose(rep["max"], d.max())
    assert np.allclose(rep["starts"], s / 1e9) and np.allclose(rep["ends"], e / 1e9)
    assert np.isclose(rep["first_start_time"], s.min() / 1e9)


def test_region_profiler_names_load(sp):
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager
        from scope_profiler.region_profiler import (
            BaseProfileRegion, DisabledProfileRegion, FullProfileRegion, LineProfilerRegion,
            NCallsOnlyProfileRegion, TimeOnlyProfileRegion, TimeOnlyProfileRegionNoFlush)
        import scope_profiler.region_profiler as rp

        ProfileManager.setup(deactivate_file_output=True)
        on = ProfileManager.region("r")
        report = [isinstance(on, TimeOnlyProfileRegion), isinstance(on, BaseProfileRegion),
                  TimeOnlyProfileRegionNoFlush is TimeOnlyProfileRegion,
                  all(isinstance(getattr(rp, n), type) for n in rp.__all__)]
        ProfileManager.finalize(verbose=False)
        ProfileManager.setup(deactivate_profiling=True)
        report += [isinstance(on, DisabledProfileRegion), isinstance(on, BaseProfileRegion)]
        ProfileManager.finalize(verbose=False)
        print(json.dumps(report))
    """)
    assert last_json(out) == [True] * 6


def test_an_unnamed_profile_is_named_as_the_original_names_it(sp):
    """The original package names an unnamed @profile's region after
    func.__name__ (its tests look regions up by it in get_all_regions());
    the qualified name, which earlier builds gave, still finds it."""
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager

        ProfileManager.setup(file_path="plain.h5")

        class Solver:
            @ProfileManager.profile
            def step(self):
                pass

            @ProfileManager.profile()
            def assemble(self):
                pass

        class Mesh:
            @ProfileManager.profile
            def assemble(self):
                pass

        s = Solver()
        for _ in range(3):
            s.step()
        s.assemble(); Mesh().assemble()
        regions = ProfileManager.get_all_regions()
        report = {"names": sorted(regions),
                  "step": [ProfileManager.get_region("step").name,
                           ProfileManager.get_region("step").num_calls],
                  "full": ProfileManager.get_region("Solver.step").name,
                  "assemble": regions["assemble"].num_calls}
        try:
            ProfileManager.get_region("nothing")
        except KeyError as exc:
            report["missing"] = str(exc)
        ProfileManager.finalize(verbose=False)
        print(json.dumps(report))
    """)
    rep = last_json(out)
    assert rep["names"] == ["assemble", "step"]
    assert rep["step"] == ["step", 3] and rep["full"] == "step"
    assert rep["assemble"] == 2          # both classes' methods: one name, one region
    assert "nothing" in rep["missing"]


def test_num_calls_after_finalize_reads_the_recorded_count(sp):
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager

        ProfileManager.setup(file_path="calls.h5")

        @ProfileManager.profile("f")
        def f():
            pass

        for _ in range(7):
            f()
        ProfileManager.finalize(verbose=False)
        after = ProfileManager.get_region("f").num_calls
        f()   # no session: not recorded
        still = ProfileManager.get_region("f").num_calls
        ProfileManager.setup(deactivate_file_output=True)   # a new session counts afresh
        fresh = ProfileManager.get_region("f").num_calls
        f()
        counted = ProfileManager.get_region("f").num_calls
        ProfileManager.finalize(verbose=False)
        print(json.dumps([after, still, fresh, counted]))
    """)
    with h5py.File(sp.tmp / "calls.h5") as f:
        recorded = int(regions(f)["f"].attrs["num_calls"])
    assert recorded == 7
    assert last_json(out) == [recorded, recorded, 0, 1]


def test_explicit_recursive_false_wins_over_recursive_profile(sp):
    run_ok(sp, """
        from scope_profiler import ProfileManager

        ProfileManager.setup(recursive_profile=True, file_path="rec.h5")

        def below_quiet():
            pass

        def below_traced():
            pass

        @ProfileManager.profile("quiet", recursive=False)
        def quiet():
            below_quiet()

        @ProfileManager.profile("traced")
        def traced():
            below_traced()

        quiet(); traced()
        ProfileManager.finalize(verbose=False)
    """)
    with h5py.File(sp.tmp / "rec.h5") as f:
        names = set(regions(f))
    assert {"quiet", "traced", "__main__.below_traced"} <= names
    assert "__main__.below_quiet" not in names


LINES_SCRIPT = """
    import io
    import json
    from scope_profiler import ProfileManager

    ProfileManager.setup(use_line_profiler=True, file_path="lines.h5", verbose=False)

    @ProfileManager.profile("hot")
    def hot(n):
        total = 0
        for i in range(n):
            total += i
        return total

    hot(500)
    region = ProfileManager.get_region("hot")
    stats = region.get_stats()
    buf = io.StringIO()
    region.print_stats(stream=buf)
    print(json.dumps({"unit": stats.unit,
                      "timings": [[list(k), v] for k, v in stats.timings.items()],
                      "printed": buf.getvalue()}))
    print("=== finalize", flush=True)
    ProfileManager.finalize(%s)
"""


def test_line_stats_and_finalize_prints_the_line_tables(sp):
    out = run_ok(sp, LINES_SCRIPT % "verbose_line_profiler=True")
    before, printed = out.split("=== finalize\n")
    rep = last_json(before)
    assert rep["unit"] == 1e-9
    [(key, rows)] = rep["timings"]
    filename, first_line, function = key
    assert filename.endswith("script.py") and function == "hot"
    hits = {line - first_line: h for line, h, ns in rows}
    # first_line is the decorator's: @profile / def hot(n): / total = 0 /
    # for ... / total += i / return total
    assert hits == {2: 1, 3: 501, 4: 500, 5: 1}
    assert all(ns >= 0 for line, h, ns in rows)
    assert "total += i" in rep["printed"] and "region 'hot'" in rep["printed"]
    # finalize(verbose_line_profiler=True) prints the tables, with the same
    # hits as the file holds
    assert "Line profile: lines.h5" in printed and "for i in range(n):" in printed
    with h5py.File(sp.tmp / "lines.h5") as f:
        g = f["rank0/lines"]
        [name] = list(g)
        stored = g[name]["hits"][:]
    assert [int(h) for h in stored if h] == [1, 501, 500, 1]


def test_finalize_line_tables_can_be_turned_off(sp):
    out = run_ok(sp, LINES_SCRIPT % "verbose_line_profiler=False")
    assert out.split("=== finalize\n")[1] == ""


def test_finalize_of_a_quiet_session_prints_no_line_tables(sp):
    """setup(verbose=False) (or session(verbose=False)) then finalize():
    neither summary nor line tables, as the original package's published
    benchmark (a session(verbose=False, use_line_profiler=True)) shows only
    its own table (before: every line table on its stdout). verbose=True
    prints them with the summary."""
    out = run_ok(sp, LINES_SCRIPT % "")
    assert out.split("=== finalize\n")[1] == ""
    out = run_ok(sp, LINES_SCRIPT % "verbose=True")
    after = out.split("=== finalize\n")[1]
    assert "Line profile: lines.h5" in after and "for i in range(n):" in after


def test_metadata_keys_of_the_original(sp):
    before = datetime.datetime.now().astimezone()
    out = run_ok(sp, """
        import json
        import scope_profiler as sp
        from scope_profiler import ProfileManager

        ProfileManager.setup(file_path="meta.h5")
        with sp.region("r"):
            pass
        ProfileManager.finalize(verbose=False)
        m = sp.read_h5("meta.h5").metadata
        print(json.dumps({k: m[k] for k in ("total_cores", "user", "working_directory")}))
    """, env={"OMP_NUM_THREADS": "3", "LOGNAME": "earlier-user"})
    after = datetime.datetime.now().astimezone()
    version = sp("--version").stdout.split()[1]
    with h5py.File(sp.tmp / "meta.h5") as f:
        m = dict(f["metadata"].attrs)
    # As the original writes them: every string a str (h5py reads
    # variable-length UTF-8 as str, never bytes), the counts integers.
    for key, value in m.items():
        assert isinstance(value, (str, np.integer)), (key, value)
    for key in ("timestamp", "scope_profiler_version", "working_directory", "user", "hostname",
                "platform", "python_version", "mode", "tool"):
        assert isinstance(m[key], str), (key, m[key])
    for key in ("total_cores", "mpi_size", "omp_num_threads", "buffer_limit"):
        assert isinstance(m[key], np.integer), (key, m[key])
    assert m["total_cores"] == 3      # one rank x OMP_NUM_THREADS
    assert m["omp_num_threads"] == 3 and m["mpi_size"] == 1
    assert m["hostname"] == os.uname().nodename and m["mode"] == "time_only"
    assert m["user"] == "earlier-user"
    assert m["scope_profiler_version"] == version
    assert m["working_directory"] == str(sp.tmp)
    stamp = datetime.datetime.fromisoformat(m["timestamp"])
    assert before - datetime.timedelta(seconds=1) <= stamp <= after
    # h5py's Group.copy (HDF5's H5Ocopy) takes them along
    with h5py.File(sp.tmp / "meta.h5") as f, h5py.File(sp.tmp / "copy.h5", "w") as g:
        f.copy("metadata", g)
        assert dict(g["metadata"].attrs)["user"] == "earlier-user"
        assert g["metadata"].attrs["total_cores"] == 3
    # the read API gives the integer as an int
    assert last_json(out) == {"total_cores": 3, "user": "earlier-user",
                              "working_directory": str(sp.tmp)}


def test_metadata_without_omp_num_threads(sp):
    # OMP_NUM_THREADS unset: one thread, as the original falls back to.
    sp.script("import scope_profiler as sp\nwith sp.region('r'):\n    pass\n")
    proc = sp("run", "-q", "-o", "m.h5", "script.py", env={"OMP_NUM_THREADS": ""})
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "m.h5") as f:
        assert f["metadata"].attrs["omp_num_threads"] == 1
        assert f["metadata"].attrs["total_cores"] == 1


def test_subprocesses_of_a_run_load_earlier_scripts(sp):
    """A Python subprocess of a run imports the no-op module (recording
    nothing): an earlier script loads and runs there too."""
    sp.script("""
        from scope_profiler import ProfileManager
        from scope_profiler.region_profiler import TimeOnlyProfileRegion

        ProfileManager.setup(time_trace=True, flush_to_disk=True, profiling_activated=True)

        @ProfileManager.profile(region_name="child_main")
        def main():
            with ProfileManager.profile_region(region_name="child_iteration"):
                return 5

        print("child", main(), len(ProfileManager.get_all_regions()))
        ProfileManager.finalize()
    """, name="child.py")
    out = run_ok(sp, """
        import subprocess, sys
        import scope_profiler as sp
        with sp.region("parent"):
            out = subprocess.run([sys.executable, "child.py"], capture_output=True, text=True)
        print(out.stdout.strip(), out.returncode, out.stderr.strip()[-300:])
    """, "-o", "parent.h5")
    assert out.strip() == "child 5 0 0"
    with h5py.File(sp.tmp / "parent.h5") as f:
        assert set(regions(f)) == {"parent"}


@pytest.mark.same_python
def test_plain_python_runs_an_earlier_script(installed, tmp_path):
    """With the installed extension module, plain python: the same earlier
    names, scope_profiler.h5reader included."""
    proc = installed.python(tmp_path, """
        import sys
        import scope_profiler
        from scope_profiler import ProfileManager
        from scope_profiler.h5reader import ProfilingH5Reader
        from scope_profiler.region_profiler import TimeOnlyProfileRegion

        assert scope_profiler.__file__.startswith(sys.argv[1]), scope_profiler.__file__
        ProfileManager.setup(time_trace=True, flush_to_disk=True, profiling_activated=True,
                             file_path="plain.h5")

        @ProfileManager.profile(region_name="main")
        def main():
            for i in range(4):
                with ProfileManager.profile_region(region_name="iteration"):
                    pass

        main()
        assert isinstance(ProfileManager.get_region("main"), TimeOnlyProfileRegion)
        ProfileManager.finalize(verbose=False)
        reader = ProfilingH5Reader("plain.h5")
        print(ProfileManager.get_region("iteration").num_calls,
              reader.get_region("iteration")[0].num_calls,
              [r.name for r in reader.get_regions()])
    """, str(installed.site))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "4 4 ['main', 'iteration']"
    with h5py.File(tmp_path / "plain.h5") as f:
        assert regions(f)["iteration"].attrs["num_calls"] == 4
        assert f["metadata"].attrs["working_directory"] == str(tmp_path)


CONFIG_SCRIPT = """
    import json
    from scope_profiler import ProfileManager

    seen = []
    for deactivate in (False, True):
        ProfileManager.setup(deactivate_profiling=deactivate, deactivate_file_output=True,
                             buffer_limit=64)
        c = ProfileManager._config          # the original's settings object, read now
        seen.append({k: getattr(c, k) for k in (
            "deactivate_profiling", "profiling_activated", "buffer_limit", "file_path",
            "use_likwid", "use_line_profiler", "recursive_profile", "aggregation_mode",
            "deactivate_file_output", "track_threads", "track_async", "hdf5_compression_level",
            "output_mode", "comm", "use_nvtx", "use_gpu_timing", "metadata_detail")})
        ProfileManager.finalize(verbose=False)
    try:
        ProfileManager._config.deactivate_profiling = False
        seen.append("assigned")
    except AttributeError as exc:
        seen.append(str(exc))
    print(json.dumps(seen))
"""


def check_config_report(stdout):
    on, off, assigned = last_json(stdout)
    # A relative file_path is taken from the current folder at setup().
    assert on.pop("file_path").endswith("/profiling_data.h5") and off.pop("file_path")
    assert on == {"deactivate_profiling": False, "profiling_activated": True, "buffer_limit": 64,
                  "use_likwid": False,
                  "use_line_profiler": False, "recursive_profile": False,
                  "aggregation_mode": False, "deactivate_file_output": True,
                  "track_threads": False, "track_async": False, "hdf5_compression_level": None,
                  "output_mode": "auto", "comm": None, "use_nvtx": False,
                  "use_gpu_timing": False, "metadata_detail": "minimal"}
    assert off == dict(on, deactivate_profiling=True, profiling_activated=False)
    assert "read-only" in assigned


def test_profile_manager_config_is_the_current_setup(sp):
    """ProfileManager._config, as the original's tests read it after setup()."""
    check_config_report(run_ok(sp, CONFIG_SCRIPT))


def test_profile_manager_config_says_what_gpu_and_nvtx_are(sp):
    """use_gpu_timing is the original's name for use_gpu; use_nvtx is the
    setting itself (the session goes on without a device: one warning)."""
    out = run_ok(sp, """
        import json
        from scope_profiler import ProfileManager
        ProfileManager.setup(use_gpu=True, deactivate_file_output=True)
        c = ProfileManager._config
        print(json.dumps([c.use_gpu_timing, c.use_nvtx]))
        ProfileManager.finalize(verbose=False)
        ProfileManager.setup(use_nvtx=True, deactivate_file_output=True)
        c = ProfileManager._config
        print(json.dumps([c.use_gpu_timing, c.use_nvtx]))
        ProfileManager.finalize(verbose=False)
    """)
    lines = [l for l in out.splitlines() if l.startswith("[")]
    assert lines == ["[true, false]", "[false, true]"]


@pytest.mark.same_python
def test_profile_manager_config_in_plain_python(installed):  # noqa: F811
    proc = installed.python(installed.dest / "config", CONFIG_SCRIPT)
    assert proc.returncode == 0, proc.stderr
    check_config_report(proc.stdout)


MY_SCRIPT = """
import sys, time

class Point:
    pass

def leaf():
    time.sleep(0.001)

def main():
    for _ in range(3):
        leaf()

main()
print("argv", sys.argv[1:], __name__, sys.modules["__main__"].Point is Point)
"""


def test_profile_script_and_run_script_as_the_seed_names_them(sp):
    """ProfileManager.profile_script(...) is `run --recursive -q -o F
    SCRIPT` from Python and returns the results; run_script(...) the call
    inside one's own session (the seed's guide names both; before:
    AttributeError). The script runs as __main__ with its own argv, its
    tree as the command's: the file, then __main__.<module>, main, leaf.
    profile_script refuses to start a second session inside a running one."""
    sp.script(MY_SCRIPT, name="my_script.py")
    script = sp.script('''
from scope_profiler import ProfileManager
try:
    ProfileManager.profile_script("my_script.py")
except RuntimeError as e:
    print("refused", "run_script()" in str(e))
ProfileManager.finalize(verbose=False)
r = ProfileManager.profile_script("my_script.py", ["a", "b"])
print(sorted(r.region_names), r["__main__.leaf"].num_calls)
ProfileManager.setup()
g = ProfileManager.run_script("my_script.py", recursive=False)
print(sorted(ProfileManager.finalize(verbose=False, return_results=True).region_names), g["__name__"])
''', name="driver.py")
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "refused True",
        "argv ['a', 'b'] __main__ True",
        "['__main__.<module>', '__main__.Point', '__main__.leaf', '__main__.main', 'my_script.py'] 3",
        "argv [] __main__ True",
        "['my_script.py'] __main__",
    ], proc.stdout
