"""Aggregation mode (`run --aggregate`, `setup(aggregation_mode=True)`):
per region only calls, total, min, max and self time; the call tree is
counted while recording; no per-call events."""
import csv
import io
import json
import re
import textwrap

import h5py
import pytest

from conftest import one_line_error, regions, tree

NESTED = """
    import time
    import scope_profiler as sp

    @sp.profile("solve")
    def solve():
        time.sleep(0.002)

    for step in range(5):
        with sp.region("timestep"):
            solve()
            with sp.region("io"):
                time.sleep(0.001)
            solve()
"""


def test_the_seed_example_prints_what_the_page_shows(sp):
    sp.script("""
        from scope_profiler import ProfileManager

        ProfileManager.setup(aggregation_mode=True, deactivate_file_output=True)
        region = ProfileManager.region("probe")
        print("  region class:", type(region).__name__)
        for _ in range(100_000):
            with ProfileManager.region("tick"):
                pass

        results = ProfileManager.finalize(verbose=False, return_results=True)
        tick = results["tick"]
        print("  calls     :", tick.num_calls)
        print("  total [s] :", round(tick.total_duration, 3))
        print("  events    :", results.events())
        print("  capacity  :", ProfileManager.get_region("tick").capacity)
    """)
    proc = sp("run", "-q", "script.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "  region class: AggregateProfileRegion"
    assert lines[1] == "  calls     : 100000"
    assert lines[2].startswith("  total [s] : 0.0")
    assert lines[3] == "  events    : []"
    assert lines[4] == "  capacity  : 0"        # no event buffer was ever allocated
    assert not (sp.tmp / "profiling_data.h5").exists()


def test_the_file_holds_aggregates_and_the_tree(sp):
    sp.script(NESTED)
    proc = sp("run", "--aggregate", "-o", "agg.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "agg.h5") as f:
        assert f["metadata"].attrs["mode"] == "aggregate"
        regs = regions(f)
        assert sorted(regs) == ["io", "solve", "timestep"]
        for name in regs:
            assert list(regs[name]) == []      # no events at all
            assert regs[name].attrs["aggregate"] == 1
        assert f["rank0/events/start_times"].shape == (0,)
        solve, step, io_ = (regs[n].attrs for n in ("solve", "timestep", "io"))
        assert solve["num_calls"] == 10 and step["num_calls"] == 5 and io_["num_calls"] == 5
        assert 0.0019e9 < solve["min_ns"] <= solve["mean_ns"] <= solve["max_ns"]
        # The longest call fits in the total beside the nine others, each at least the shortest.
        assert solve["max_ns"] <= solve["total_ns"] - 9 * solve["min_ns"]
        assert solve["total_ns"] == pytest.approx(solve["mean_ns"] * 10, rel=1e-9)
        # Self time: the timestep minus what ran in its child regions.
        assert step["self_ns"] == step["total_ns"] - solve["total_ns"] - io_["total_ns"]
        assert 0 <= step["self_ns"] < 0.2 * step["total_ns"]
        assert solve["self_ns"] == solve["total_ns"]
        assert solve["std_ns"] != solve["std_ns"]      # NaN: not kept in this mode
        tree = f["rank0/tree"]
        assert list(tree["parent"]) == [-1, 0, 0]
        assert list(tree["calls"]) == [5, 10, 5]
    # The summary shows the tree with the timestep's own time.
    assert "timestep (5x)" in proc.stderr and "├─ solve (10x)" in proc.stderr
    assert "(own)" in proc.stderr
    row = next(l for l in proc.stderr.splitlines() if l.startswith("solve "))
    assert row.split()[-1] == "-"                       # no std column value


def test_self_time_with_recursion_and_generators(sp):
    sp.script("""
        import scope_profiler as sp
        sp.setup(aggregation_mode=True, file_path="rec.h5", verbose=False)

        @sp.profile("fib")
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)

        def gen():
            with sp.region("inside_gen"):
                yield 1
                yield 2

        g = gen()
        with sp.region("outer"):
            next(g)           # the generator's block is open ...
        next(g)
        g.close()             # ... and ends after outer did
        print(fib(10))
        sp.finalize()
    """)
    proc = sp("run", "-q", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "55"
    with h5py.File(sp.tmp / "rec.h5") as f:
        regs = regions(f)
        fib = regs["fib"].attrs
        assert fib["num_calls"] == 177
        assert 0 < fib["self_ns"] <= fib["total_ns"]
        assert regs["inside_gen"].attrs["num_calls"] == 1
        assert regs["outer"].attrs["num_calls"] == 1


def test_threads_nest_on_their_own_stacks(sp):
    sp.script("""
        import threading, time
        import scope_profiler as sp
        def work():
            for _ in range(20):
                with sp.region("outer"):
                    with sp.region("inner"):
                        time.sleep(0.0005)
        ts = [threading.Thread(target=work) for _ in range(3)]
        [t.start() for t in ts]; [t.join() for t in ts]
    """)
    proc = sp("run", "-q", "--aggregate", "-o", "t.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    out = sp("summary", "--json", "t.h5")
    doc = json.loads(out.stdout)
    calls = {r["name"]: r["calls"] for r in doc["regions"]}
    assert calls == {"outer": 60, "inner": 60}
    with h5py.File(sp.tmp / "t.h5") as f:
        tree = f["rank0/tree"]
        assert list(tree["parent"]) == [-1, 0] and list(tree["calls"]) == [60, 60]


def test_exports_of_aggregates(sp):
    sp.script(NESTED)
    assert sp("run", "-q", "--aggregate", "-o", "a.h5", "script.py").returncode == 0
    out = sp("export", "--format", "csv", "a.h5")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [r["name"] for r in rows] == ["timestep", "solve", "io"]
    assert {r["name"]: int(r["calls"]) for r in rows} == {"timestep": 5, "solve": 10, "io": 5}
    step = rows[0]
    assert float(step["self_s"]) < float(step["total_s"])
    doc = json.loads(sp("export", "--format", "json", "a.h5").stdout)
    assert doc["aggregate"] is True and len(doc["regions"]) == 3
    folded = sp("export", "--format", "folded", "a.h5").stdout.splitlines()
    stacks = {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in folded}
    assert set(stacks) == {"timestep", "timestep;solve", "timestep;io"}
    with h5py.File(sp.tmp / "a.h5") as f:
        total = int(regions(f)["timestep"].attrs["total_ns"])
    assert sum(stacks.values()) == total     # the stacks add up to the root
    chrome = sp("export", "--format", "chrome", "-o", "t.json", "a.h5")
    assert chrome.returncode != 0
    one_line_error(chrome, "aggregates", "Chrome")
    assert not (sp.tmp / "t.json").exists()


def test_export_of_aggregates_totals_a_recursive_region_as_summary_does(sp):
    """export's total_s of an aggregated profile is summary's: a recursive
    region counted once (before: the plain sum, 6x summary's for fib(10),
    under the same name); the plain sum is raw_total_s, as in summary."""
    sp.script('''
import scope_profiler as sp

@sp.profile("fib")
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib(10)
''')
    assert sp("run", "-q", "--aggregate", "-o", "f.h5", "script.py").returncode == 0
    [summary] = json.loads(sp("summary", "--json", "f.h5").stdout)["regions"]
    [row] = list(csv.DictReader(io.StringIO(sp("export", "--format", "csv", "f.h5").stdout)))
    [obj] = json.loads(sp("export", "--format", "json", "f.h5").stdout)["regions"]
    assert int(row["calls"]) == obj["calls"] == summary["calls"] == 177
    for key in ("total_s", "raw_total_s", "self_s"):
        assert float(row[key]) == obj[key] == summary[key], key
    assert summary["raw_total_s"] > 2 * summary["total_s"]


def test_diff_and_read_api_of_aggregates(sp):
    sp.script(NESTED)
    assert sp("run", "-q", "--aggregate", "-o", "a.h5", "script.py").returncode == 0
    assert sp("run", "-q", "--aggregate", "-o", "b.h5", "script.py").returncode == 0
    d = sp("diff", "a.h5", "b.h5")
    assert d.returncode == 0, d.stderr
    assert "3 regions in both" in d.stdout
    sp.script("""
        import scope_profiler as sp
        r = sp.read_h5("a.h5")
        s = r["timestep"][0]
        print(r["solve"].num_calls, r.events(), len(r["solve"][0].durations_ns),
              s.self_duration_ns < s.total_duration_ns, r.call_stack())
    """, name="read.py")
    proc = sp("run", "-q", "--no-output", "read.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["10", "[]", "0", "True", "[]"]


RECURSIVE = """
    import scope_profiler as sp

    def leaf(i):
        return i

    def gen(n):
        for i in range(n):
            yield leaf(i)

    @sp.profile("solve")
    def solve(n):
        return sum(gen(n))

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def boom():
        raise ValueError

    def main():
        for _ in range(3):
            solve(4)
        try:
            boom()
        except ValueError:
            pass
        fib(6)

    main()
"""


def test_recursive_aggregate_counts_what_the_timeline_records(sp):
    """`run --recursive --aggregate`: every function's calls, total, self,
    min and max, and the call tree (caller -> callee), with no events: the
    same call counts as the timeline run of the same program."""
    sp.script(RECURSIVE)
    timeline = sp("run", "--recursive", "-q", "-o", "t.h5", "script.py")
    proc = sp("run", "--recursive", "--aggregate", "-q", "-o", "a.h5", "script.py")
    assert timeline.returncode == 0 and proc.returncode == 0, timeline.stderr + proc.stderr
    summaries = {}
    for name in ("t.h5", "a.h5"):
        out = json.loads(sp("summary", "--json", name).stdout)
        summaries[name] = {r["name"]: r["calls"] for r in out["regions"]}
    assert summaries["a.h5"] == summaries["t.h5"]
    calls = summaries["a.h5"]
    assert calls["__main__.fib"] == 25 and calls["solve"] == 3 and calls["__main__.boom"] == 1
    assert calls["__main__.leaf"] == 12 and calls["__main__.gen"] == 15   # 5 resumes per solve
    with h5py.File(sp.tmp / "a.h5") as f:
        assert f["metadata"].attrs["mode"] == "aggregate"
        rows = regions(f)
        assert all(r.aggregate and list(r) == [] for r in rows.values())   # no events
        fib = rows["__main__.fib"].attrs
        assert 0 < fib["min_ns"] <= fib["max_ns"] <= fib["total_ns"]
        assert 0 < fib["self_ns"] <= fib["total_ns"]
        assert len(tree(f)) == 13   # one node per call path
    # The tree: solve (the decorated function) under main, gen under solve,
    # leaf under gen; fib's recursion nests.
    rows = [l for l in sp("summary", "--tree", "a.h5").stdout.splitlines() if "─ " in l]
    text = "\n".join(rows)
    assert "__main__.main" in text and "solve (3x)" in text
    at = next(i for i, l in enumerate(rows) if "solve (3x)" in l)
    assert "__main__.gen (15x)" in rows[at + 2] and "__main__.leaf (12x)" in rows[at + 4]
    assert sum("__main__.fib" in l for l in rows) == 6    # depths 1..6 of fib(6)


@pytest.mark.parametrize("other", ["--line-profile", "--track-async"])
def test_aggregate_refuses_per_call_modes(sp, other):
    sp.script("pass\n")
    proc = sp("run", "--aggregate", other, "script.py")
    assert proc.returncode == 2
    one_line_error(proc, "--aggregate", other)


def test_setup_refuses_aggregation_with_line_timing(sp):
    sp.script("""
        import scope_profiler as sp
        try:
            sp.setup(aggregation_mode=True, use_line_profiler=True)
        except ValueError as e:
            print(e)
    """)
    proc = sp("run", "-q", "--no-output", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert "aggregation_mode cannot be combined with use_line_profiler" in proc.stdout


def test_blocks_inside_decorated_calls_nest_and_exceptions_unwind(sp):
    sp.script("""
        import scope_profiler as sp

        @sp.profile("outer")
        def outer(fail):
            with sp.region("inner"):
                if fail:
                    raise ValueError("x")

        for i in range(6):
            try:
                outer(i % 3 == 0)
            except ValueError:
                pass
        with sp.region("after"):      # a root again: the failures unwound
            pass
    """)
    proc = sp("run", "-q", "--aggregate", "-o", "n.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "n.h5") as f:
        t = tree(f)
        nodes = {name: (t[parent][1] if parent >= 0 else None, calls) for parent, name, calls, _ in t}
        assert nodes == {"outer": (None, 6), "inner": ("outer", 6), "after": (None, 1)}


@pytest.mark.parametrize("flag,keyword", [("--aggregate", "track_async"),
                                          ("--line-profile", "aggregation_mode"),
                                          ("--memory", "aggregation_mode")])
def test_the_command_line_wins_over_a_setup_keyword_it_cannot_go_with(sp, flag, keyword):
    """setup(track_async=True) is fine under python; under run --aggregate
    the command line's choice wins and the keyword is left out, one warning
    line (before: ValueError, the script ended with status 1 and no
    profile). A conflict of the script's own keywords is still refused."""
    sp.script(f"""
        import scope_profiler as sp
        sp.setup({keyword}=True)
        with sp.region("x"):
            pass
        print("ok")
    """)
    proc = sp("run", "-q", flag, "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"
    assert proc.stderr.startswith(f"scope-profiler: warning: setup({keyword}=...) is left out: the "
                                  "scope-profiler command line's settings win (")
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        mode = f["metadata"].attrs
        assert (mode["mode"], mode["line_profile"]) == {
            "--aggregate": ("aggregate", "false"), "--line-profile": ("time_only", "true"),
            "--memory": ("time_only", "false")}[flag]
        assert regions(f)["x"].attrs["num_calls"] == 1
        # --memory: each call's allocated bytes (a value column)
        assert ("alloc_bytes" in f["rank0/events"]) == (flag == "--memory")
    sp.script("""
        import scope_profiler as sp
        sp.setup(aggregation_mode=True, track_async=True)
    """, name="own.py")
    proc = sp("run", "-q", "-o", "own.h5", "own.py")
    assert proc.returncode == 1
    assert "ValueError: aggregation_mode cannot be combined with track_async" in proc.stderr


@pytest.mark.parametrize("streamed", [False, True], ids=["in memory", "streamed"])
@pytest.mark.parametrize("order", ["events first", "aggregates first"])
def test_a_session_that_switches_aggregation_keeps_every_call(sp, order, streamed):
    """setup(aggregation_mode=True) after calls were kept as events (run
    records from the script's first line), or the other way round: the
    profile holds every call, as aggregates, in the table and in the call
    tree (before: a region with both wrote only its events, 1 call of
    1001, and the tree left the event regions out). A session that streams
    its events already (past its flush interval) keeps recording events,
    one warning; one that aggregated does not start streaming."""
    first, second = ("False", "True") if order == "events first" else ("True", "False")
    sp.script(f"""
        import time
        import scope_profiler as sp
        sp.setup(aggregation_mode={first})
        with sp.region("load"):
            with sp.region("part"):
                time.sleep({0.3 if streamed else 0})   # flush interval 0.05 s: streams
        sp.setup(aggregation_mode={second})
        for i in range(1000):
            with sp.region("load"):
                pass
        print(sp.ProfileManager.get_region("load").num_calls)
    """)
    proc = sp("run", "-q", "--flush-interval", "0.05", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1001\n"
    kept_events = streamed and order == "events first"
    assert proc.stderr == ("scope-profiler: warning: setup(aggregation_mode=True) is left out: this "
                           "session streams its calls to disk already, as events; finalize() it first "
                           "to aggregate\n" if kept_events else "")
    with h5py.File(sp.tmp / "out.h5") as f:
        regs = regions(f)
        assert {n: int(g.attrs["num_calls"]) for n, g in regs.items()} == {"load": 1001, "part": 1}
        assert f["metadata"].attrs["mode"] == ("time_only" if kept_events else "aggregate")
        nodes = tree(f)
    assert sum(c for _, name, c, _ in nodes if name == "load") == 1001
    [(parent, _, calls, _)] = [n for n in nodes if n[1] == "part"]
    assert calls == 1 and nodes[parent][1] == "load"
    summary = sp("summary", "--flat", "out.h5")
    assert re.search(r"^load\s+1001\s", summary.stdout, re.M), summary.stdout


@pytest.mark.parametrize("case", ["tasks", "generator", "nested"])
def test_aggregation_says_when_calls_interleave_in_a_thread(sp, case):
    """Aggregation nests calls on one stack per thread, which cannot keep
    interleaving asyncio tasks or a generator's block apart: one warning
    line says so (before: totals and a tree that mixed them, silently);
    well-nested calls give none."""
    body = {
        "tasks": """
            import asyncio
            async def c():
                with sp.region("ar"):
                    await asyncio.sleep(0.01)
            async def main():
                await asyncio.gather(*(c() for _ in range(5)))
            asyncio.run(main())
        """,
        "generator": """
            def g():
                with sp.region("in_gen"):
                    yield 1
                    yield 2
            it = g()
            for _ in range(2):
                with sp.region("outer"):
                    next(it)
        """,
        "nested": """
            for _ in range(3):
                with sp.region("outer"):
                    with sp.region("inner"):
                        pass
        """,
    }[case]
    sp.script("import scope_profiler as sp\n" + textwrap.dedent(body))
    proc = sp("run", "-q", "--aggregate", "-o", "a.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    said = proc.stderr.splitlines()
    if case == "nested":
        assert said == []
    else:
        assert len(said) == 1 and said[0].startswith("scope-profiler: warning: "), proc.stderr
        assert ("an asyncio event loop runs under aggregation mode" if case == "tasks"
                else "calls in one thread ended out of their nesting order") in said[0]
