"""`run --line-profile` and `scope-profiler line-profile`: per-line hits and
time of chosen functions, checked against the interpreter's own line events."""
import json
import os
import pathlib
import subprocess

import h5py
import pytest

from conftest import BINARY, duration_s, embedded, one_line_error, regions, sanitizer_env

# Functions under test, in a module of their own so that a plain-Python
# sys.settrace run can count the interpreter's line events for them.
TARGETS = '''
def loop_branch(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += 1
        elif i % 3 == 1:
            total -= 1
        else:
            pass
    return total

def raises_inside(n):
    caught = 0
    for i in range(n):
        try:
            if i % 2:
                raise ValueError(i)
            caught -= 1
        except ValueError:
            caught += 1
    return caught

def gen(n):
    for i in range(n):
        yield i * 2
    return None

def consume(n):
    return sum(gen(n))

def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)

def one_line_loops(n):
    t = 0
    for i in range(n): t += i
    while t > 0: t -= 7
    return t
'''

CALLS = "loop_branch(100); raises_inside(20); consume(15); fact(12); one_line_loops(30)"

REFERENCE = '''
import json, sys
import targets
counts = {}
codes = {f.__code__: f.__name__ for f in (targets.loop_branch, targets.raises_inside,
                                          targets.gen, targets.fact, targets.one_line_loops)}
def tracer(frame, event, arg):
    if frame.f_code not in codes:
        return None
    if event == "line":
        key = codes[frame.f_code] + ":" + str(frame.f_lineno)
        counts[key] = counts.get(key, 0) + 1
    return tracer
sys.settrace(tracer)
from targets import *
''' + CALLS + '''
sys.settrace(None)
print(json.dumps(counts))
'''

PROFILED = '''
import scope_profiler as sp
import targets
for name in ("loop_branch", "raises_inside", "gen", "fact", "one_line_loops"):
    setattr(targets, name, sp.profile(name)(getattr(targets, name)))
from targets import *
''' + CALLS + '''
'''


def line_tables(path):
    out = {}
    with h5py.File(path) as f:
        for g in f["rank0/lines"].values():
            name = g.attrs["function"].decode()
            first = int(g.attrs["first_line"])
            out[name] = {first + i: int(h) for i, h in enumerate(g["hits"][:]) if h}
            out[name + ":time"] = {first + i: int(t) for i, t in enumerate(g["time_ns"][:])}
            out[name + ":source"] = [s.decode() for s in g["source"][:]]
    return out


def test_hits_equal_the_interpreters_line_events(sp):
    sp.script(TARGETS, name="targets.py")
    ref = sp.script(REFERENCE, name="reference.py")
    expected = json.loads(subprocess.run([embedded().executable, ref], capture_output=True, text=True,
                                         cwd=sp.tmp, check=True).stdout)
    script = sp.script(PROFILED, name="profiled.py")
    proc = sp("run", "--line-profile", "-q", "-o", "lines.h5", script)
    assert proc.returncode == 0, proc.stderr
    tables = line_tables(sp.tmp / "lines.h5")
    got = {}
    for name in ("loop_branch", "raises_inside", "gen", "fact", "one_line_loops"):
        # The decorated functions were wrapped after import: the module's
        # functions keep their own names in the table.
        for line, hits in tables[name].items():
            got[f"{name}:{line}"] = hits
    assert got == expected
    # A for line over n items: n + 1 hits.
    src = tables["loop_branch:source"]
    for_index = next(i for i, s in enumerate(src) if "for i in range(n)" in s)
    with h5py.File(sp.tmp / "lines.h5") as f:
        g = next(g for g in f["rank0/lines"].values() if g.attrs["function"] == b"loop_branch")
        assert int(g["hits"][for_index]) == 101


def test_seed_hot_function_and_report(sp):
    script = sp.script('''
import time

import scope_profiler as sp


@sp.profile("hot_function")
def hot_function(n):
    total = 0.0
    for i in range(n):
        total += i**0.5
    time.sleep(0.001)
    return total


hot_function(20_000)
''', name="line_demo.py")
    proc = sp("run", "--line-profile", "-q", "-o", "line.h5", script)
    assert proc.returncode == 0, proc.stderr
    tables = line_tables(sp.tmp / "line.h5")
    assert tables["hot_function"] == {9: 1, 10: 20001, 11: 20000, 12: 1, 13: 1}
    report = sp("line-profile", "line.h5")
    assert report.returncode == 0, report.stderr
    out = report.stdout
    assert "hot_function (line_demo.py:7)" in out
    for col in ("line", "hits", "time [µs]", "per hit [µs]", "% time", "source"):
        assert col in out
    row10 = next(l for l in out.splitlines() if "for i in range(n):" in l)
    assert "20001" in row10
    assert "total += i**0.5" in out and "time.sleep(0.001)" in out


def test_line_times_match_known_sleeps(sp):
    script = sp.script('''
import time
import scope_profiler as sp

@sp.profile("sleepy")
def sleepy():
    time.sleep(0.02)
    time.sleep(0.06)
    x = 1
    return x

sleepy()
''')
    proc = sp("run", "--line-profile", "-q", "-o", "s.h5", script)
    assert proc.returncode == 0, proc.stderr
    times = line_tables(sp.tmp / "s.h5")["sleepy:time"]
    with h5py.File(sp.tmp / "s.h5") as f:
        g = regions(f)["sleepy"]
        [call_ns] = (g["end_times"][:] - g["start_times"][:]).tolist()
    # Each sleep's line gets at least its sleep, and all the lines together no
    # more than the call they ran in: a time moved to another line, or counted
    # on two, breaks one or the other (no wall-clock upper bound: a loaded
    # machine stretches the run, never the call past itself).
    assert times[7] >= 0.02e9 and times[8] >= 0.06e9, times
    assert sum(times.values()) <= call_ns, (times, call_ns)


def test_a_recursive_functions_lines_add_up_to_its_time_once(sp):
    """A line that calls its own function leaves that call's time to the
    call's own lines, directly or through a function not timed: the lines
    add up to the outermost call's time (cProfile's cumtime), each sleep on
    its line. Before, every level of the recursion counted the levels under
    it again: fib(6)'s lines summed to about five times its time."""
    script = sp.script('''
import time
import scope_profiler as sp

def through(n):
    return fib(n)

@sp.profile("fib")
def fib(n):
    if n < 2:
        time.sleep(0.002)
        return n
    return fib(n - 1) + through(n - 2)

fib(6)
''')
    proc = sp("run", "--line-profile", "-q", "-o", "r.h5", script)
    assert proc.returncode == 0, proc.stderr
    tables = line_tables(sp.tmp / "r.h5")
    hits, times = tables["fib"], tables["fib:time"]
    with h5py.File(sp.tmp / "r.h5") as f:
        g = regions(f)["fib"]
        outermost_ns = max((g["end_times"][:] - g["start_times"][:]).tolist())
    assert hits == {10: 25, 11: 13, 12: 13, 13: 12}, hits
    assert times[11] >= 13 * 0.002e9, times
    assert sum(times.values()) <= outermost_ns, (times, outermost_ns)
    assert times[13] < times[11] / 4, times


def test_region_functions_form_and_threads(sp):
    script = sp.script('''
import threading
import scope_profiler as sp
from scope_profiler import ProfileManager

def work(n):
    s = 0
    for i in range(n):
        s += i
    return s

ProfileManager.setup(use_line_profiler=True, file_path="r.h5")
with ProfileManager.region("block", functions=[work]):
    work(10)
t = [threading.Thread(target=sp.profile("threaded")(work), args=(5,)) for _ in range(2)]
for x in t: x.start()
for x in t: x.join()
work(1000)   # outside any region: not timed
ProfileManager.finalize(verbose=False, verbose_line_profiler=True)
''')
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    tables = line_tables(sp.tmp / "r.h5")
    # 10 iterations in the block, 5 in each of two threads: 20 loop bodies.
    assert tables["work"][9] == 20 and tables["work"][8] == 11 + 6 + 6
    # one table, under both regions that chose work
    assert "Rank 0 | block, threaded | work" in proc.stdout


def test_line_profile_with_recursive_is_refused(sp):
    script = sp.script("pass")
    proc = sp("run", "--line-profile", "--recursive", script)
    assert proc.returncode == 2
    one_line_error(proc, "--line-profile", "--recursive")


def test_line_profile_command_on_file_without_lines(sp):
    script = sp.script('''
import scope_profiler as sp
with sp.region("r"):
    pass
''')
    sp("run", "-q", "-o", "plain.h5", script)
    proc = sp("line-profile", "plain.h5")
    assert proc.returncode == 1
    one_line_error(proc, "line-profile", "no line timings")
    proc = sp("line-profile", "missing.h5")
    assert proc.returncode == 1
    one_line_error(proc, "line-profile", "missing.h5")


def test_setup_line_mode_rewraps_earlier_decorations(sp):
    script = sp.script('''
import scope_profiler as sp
from scope_profiler import ProfileManager

@sp.profile("early")
def early(n):
    return sum(range(n))

early(3)   # before line mode: not line-timed
ProfileManager.setup(use_line_profiler=True, file_path="w.h5")
early(3)
ProfileManager.finalize(verbose=False)
''')
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    tables = line_tables(sp.tmp / "w.h5")
    assert tables["early"] == {7: 1}
    with h5py.File(sp.tmp / "w.h5") as f:
        assert regions(f)["early"].attrs["num_calls"] == 2


def test_line_profile_and_recursive_options_refused_in_setup(sp):
    script = sp.script('''
from scope_profiler import ProfileManager
try:
    ProfileManager.setup(use_line_profiler=True, recursive_profile=True)
except ValueError as e:
    print("refused:", e)
''')
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused: use_line_profiler and recursive_profile")


ASYNC_TARGETS = '''
import asyncio

async def fetch(n):
    total = 0
    for i in range(n):
        await asyncio.sleep(0)
        total += i
    return total
'''


def test_coroutines_are_line_timed_at_each_step(sp):
    sp.script(ASYNC_TARGETS, name="atargets.py")
    runner = '''
import asyncio
import atargets
async def main():
    a, b = await asyncio.gather(atargets.fetch(3), atargets.fetch(4))
    return a + b + await atargets.fetch(2)
'''
    ref = sp.script(runner + '''
import json, sys
counts = {}
def tracer(frame, event, arg):
    if frame.f_code is not atargets.fetch.__code__:
        return None
    if event == "line":
        counts[frame.f_lineno] = counts.get(frame.f_lineno, 0) + 1
    return tracer
sys.settrace(tracer)
total = asyncio.run(main())
sys.settrace(None)
print(json.dumps({"total": total, "counts": counts}))
''', name="aref.py")
    expected = json.loads(subprocess.run([embedded().executable, ref], capture_output=True, text=True,
                                         cwd=sp.tmp, check=True).stdout)
    prof = sp.script('''
import scope_profiler as sp
import atargets
atargets.fetch = sp.profile("fetch")(atargets.fetch)
''' + runner + '''
print(asyncio.run(main()))
''', name="aprof.py")
    proc = sp("run", "--line-profile", "-q", "-o", "a.h5", prof)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == expected["total"] == 10
    got = line_tables(sp.tmp / "a.h5")["fetch"]
    assert {str(k): v for k, v in got.items()} == expected["counts"]


def test_a_call_under_the_scripts_trace_function(sp):
    """A call made while a trace function of the script's (coverage, a
    debugger) holds the thread: on 3.12+ its lines are timed all the same
    (sys.monitoring); on 3.11 the thread is the script's, and one warning
    says that those calls' lines are not timed (before: nothing said, and
    the table disagreed with the region's count)."""
    script = sp.script("""
        import sys
        import scope_profiler as sp

        @sp.profile("work")
        def work(n):
            s = 0
            for i in range(n):
                s += i
            return s

        work(10)
        sys.settrace(lambda frame, event, arg: None)
        work(10)
        work(10)
        sys.settrace(None)
    """)
    proc = sp("run", "--line-profile", "-q", "-o", "l.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "l.h5") as f:
        assert int(regions(f)["work"].attrs["num_calls"]) == 3
    hits = line_tables(sp.tmp / "l.h5")["work"]
    first = min(hits)   # s = 0
    if embedded().version >= (3, 12):
        assert proc.stderr == ""
        assert hits[first] == 3 and hits[first + 1] == 33, hits
    else:
        assert proc.stderr == (
            "scope-profiler: warning: a trace function of the script's (sys.settrace: a debugger, "
            "coverage) traces a thread: the lines of calls made under it are not timed (Python "
            "3.11; 3.12 and later time them)\n")
        assert hits[first] == 1 and hits[first + 1] == 11, hits


def test_a_recursive_function_under_line_timing_is_said(sp):
    """A profile(recursive=True) function under --line-profile records its
    callees, its lines are not timed: one warning says so (before:
    nothing, the function simply had no table)."""
    script = sp.script("""
        import scope_profiler as sp

        def work():
            return 1

        @sp.profile("entry", recursive=True)
        def entry():
            for _ in range(5):
                work()

        @sp.profile("plain")
        def plain():
            return 2

        entry()
        plain()
    """)
    proc = sp("run", "--line-profile", "-q", "-o", "l.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("scope-profiler: warning: line timing: the lines of 'entry' are not timed: "
                           "it is profile(recursive=True), which records every call under it\n")
    tables = line_tables(sp.tmp / "l.h5")
    assert "plain" in tables and "entry" not in tables
    with h5py.File(sp.tmp / "l.h5") as f:
        assert int(regions(f)["__main__.work"].attrs["num_calls"]) == 5


# The source column as the file says it, however the file is written: UTF-8
# with or without a BOM, CRLF line ends, another declared encoding, and lines
# a script registered in linecache for code without a file. The function
# starts on the file's first line, where a BOM or a declaration sits.
SOURCE_LINES = [
    '@__import__("scope_profiler").profile("f")',
    "def f():",
    "    s = 'caf\u00e9 \u2713'",
    "    return len(s)",
]


@pytest.mark.parametrize("form", ["utf-8", "bom", "crlf", "latin-1", "lone-cr"])
def test_source_column_as_written(sp, form):
    lines = list(SOURCE_LINES)
    if form == "latin-1":
        lines = ["# -*- coding: latin-1 -*-"] + lines
        lines[3] = "    s = 'caf\u00e9'"
    # A second function of the same file: each table gets its own lines.
    g_lines = ['@__import__("scope_profiler").profile("g")', "def g():", "    return 7"]
    text = "\n".join(lines + g_lines + ["f()", "g()", ""])
    if form == "latin-1":
        data = text.encode("latin-1")
    elif form == "crlf":
        data = text.replace("\n", "\r\n").encode()
    elif form == "lone-cr":   # old Mac line ends: Python reads them as lines too
        data = text.replace("\n", "\r").encode()
    else:
        data = ("\ufeff" if form == "bom" else "").encode() + text.encode()
    (sp.tmp / "script.py").write_bytes(data)
    proc = sp("run", "-q", "--line-profile", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    want = lines[1:] if form == "latin-1" else lines
    tables = line_tables(sp.tmp / "out.h5")
    assert tables["f:source"] == want
    assert tables["g:source"] == g_lines


def test_source_column_of_code_registered_in_linecache(sp):
    sp.script("""
        import linecache
        import scope_profiler as sp
        text = "def g():\\n    x = 41\\n    return x + 1\\n"
        linecache.cache["<generated>"] = (len(text), None, text.splitlines(True), "<generated>")
        ns = {}
        exec(compile(text, "<generated>", "exec"), ns)
        sp.profile("g")(ns["g"])()
    """)
    proc = sp("run", "-q", "--line-profile", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    src = line_tables(sp.tmp / "out.h5")["g:source"]
    assert "    x = 41" in src and "    return x + 1" in src, src


KERNPROF = '''
import scope_profiler as sp

@sp.profile("hot")
def hot_function(n):
    total = 0.0
    for i in range(n):
        total += i ** 0.5  # a comment long enough to pass the old forty-eight character cut
    return total

class Mesh:
    @sp.profile("refine")
    def refine(self):
        return sum(range(1000))

hot_function(2000)
Mesh().refine()
'''


def test_line_profile_reads_as_kernprof_does(sp):
    """One timer unit for every table, said once; each function's total
    time; whole source lines where COLUMNS allows, cut where it does not;
    --include/--exclude on the function's name and --ranks as the other
    commands have them."""
    script = sp.script(KERNPROF, name="kp.py")
    proc = sp("run", "--line-profile", "-q", "-o", "kp.h5", script)
    assert proc.returncode == 0, proc.stderr
    wide = sp("line-profile", "kp.h5", env={"COLUMNS": "200"})
    assert wide.returncode == 0, wide.stderr
    out = wide.stdout
    assert out.count("Timer unit: 1e-06 s") == 1
    assert "total += i ** 0.5  # a comment long enough to pass the old forty-eight character cut" in out
    # Each table's total time, in the summary's format, and its rows' times in
    # the unit: the rows add up to the total.
    blocks = out.split("\nRank 0 | ")[1:]
    assert len(blocks) == 2
    for block in blocks:
        total = duration_s(block.splitlines()[1].removeprefix("Total time: "))
        cells = [l.split("│") for l in block.splitlines() if l.startswith("│ ") and "line" not in l]
        rows_us = sum(float(c[3]) for c in cells if c[3].strip())
        assert abs(rows_us * 1e-6 - total) <= max(0.01 * total, 1e-6 * len(cells)), block
    narrow = sp("line-profile", "kp.h5", env={"COLUMNS": "80"}).stdout
    assert max(len(l) for l in narrow.splitlines()) <= 80
    assert "total += i ** 0.5" in narrow and "cut" not in narrow and "\u2026 │" in narrow
    only = sp("line-profile", "kp.h5", "--include", "Mesh.*", "--ranks", "0").stdout
    assert "Mesh.refine" in only and "hot_function" not in only
    rest = sp("line-profile", "kp.h5", "--exclude", "Mesh.*").stdout
    assert "Mesh.refine" not in rest and "hot_function" in rest
    none = sp("line-profile", "kp.h5", "--include", "nothing")
    assert none.returncode == 1
    one_line_error(none, "line-profile", "selected")
    bad = sp("line-profile", "kp.h5", "--ranks", "x")
    assert bad.returncode == 2
    helptext = sp("line-profile", "--help").stdout
    assert "--include" in helptext and "--ranks" in helptext and "COLUMNS" in helptext
    # --json: every line of the selected tables, exact to the nanosecond.
    doc = json.loads(sp("line-profile", "kp.h5", "--json", "--exclude", "Mesh.*").stdout)
    assert [t["function"] for t in doc["tables"]] == ["hot_function"]
    [t] = doc["tables"]
    want = line_tables(sp.tmp / "kp.h5")
    assert {l["line"]: l["hits"] for l in t["lines"] if l["hits"]} == want["hot_function"]
    assert {l["line"]: round(l["time_s"] * 1e9) for l in t["lines"]} == want["hot_function:time"]
    assert [l["source"] for l in t["lines"]] == want["hot_function:source"]
    assert round(t["total_s"] * 1e9) == sum(want["hot_function:time"].values())


# What the script sees of trace and profile functions, and what it sets.
HOOKS_SEEN = """
import sys, threading
import scope_profiler as sp

def a():
    return b()

def b():
    return (sys.gettrace(), sys.getprofile())

@sp.profile("f")
def f(n):
    seen = (sys.gettrace(), sys.getprofile())
    old = sys.gettrace()
    sys.settrace(old)              # a debugger's save and restore
    sys.settrace(None)             # no trace function of the script's: none to remove
    sys.setprofile(sys.getprofile())
    s = 0
    for i in range(n):
        s += i
    return s, seen

out = []
t = threading.Thread(target=lambda: out.append(b()))
t.start()
t.join()
print(f(3), a(), out)
sys.setprofile(None)               # likewise
a()
a()
print(f(2)[0])
"""


@pytest.mark.parametrize("mode", ["--line-profile", "--recursive"])
def test_the_script_sees_no_hook_of_ours(sp, mode):
    """sys.gettrace() and sys.getprofile() are None where only ours is, in
    decorated functions, plain ones and threads, as under python; a
    save-and-restore of them, settrace(None) and setprofile(None) leave ours
    recording. Before (3.11): the hook's internal object came back, and
    setting it again raised TypeError; setprofile(None) ended --recursive
    without a word, settrace(None) in a decorated function lost its lines."""
    script = sp.script(HOOKS_SEEN)
    build = pathlib.Path(BINARY).parent    # the module built for plain python, beside it
    module = next(iter(build.glob("scope_profiler*.so")), None)
    plain = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                           cwd=sp.tmp, env=dict(os.environ, PYTHONPATH=str(build),
                                                **sanitizer_env(module)))
    proc = sp("run", mode, "-q", "-o", "h.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout == "(3, (None, None)) (None, None) [(None, None)]\n1\n"
    assert plain.stdout == proc.stdout, plain.stderr
    if mode == "--line-profile":
        [(_, hits)] = [(k, v) for k, v in line_tables(sp.tmp / "h.h5").items() if k == "f"]
        loop = [line for line, h in hits.items() if h == 3 + 1 + 2 + 1]   # for: n + 1 per call
        assert len(loop) == 1 and hits[loop[0] + 1] == 3 + 2, hits
    else:
        with h5py.File(sp.tmp / "h.h5") as f:
            calls = {n: int(g.attrs["num_calls"]) for n, g in regions(f).items()}
        assert calls["__main__.a"] == 3 and calls["__main__.b"] == 4, calls


def test_bound_methods_are_line_timed_as_line_profiler_takes_them(sp):
    """A bound method decorated (sp.profile("step")(solver.step)) or given
    to region(functions=[...]), a classmethod through its class, and a
    staticmethod object: their function's lines are timed (before: no
    table, no word)."""
    script = sp.script('''
import time
import scope_profiler as sp

class Solver:
    def step(self, d):
        time.sleep(d)
        return d

    @classmethod
    def build(cls, d):
        time.sleep(d)
        return cls()

    @staticmethod
    def norm(d):
        time.sleep(d)
        return d

s = Solver()
step = sp.profile("step")(s.step)
step(0.002)
with sp.region("setup", functions=[Solver.build, Solver.__dict__["norm"]]):
    Solver.build(0.003)
    Solver.norm(0.001)
''')
    proc = sp("run", "--line-profile", "-q", "-o", "m.h5", script)
    assert proc.returncode == 0, proc.stderr
    tables = line_tables(sp.tmp / "m.h5")
    assert tables["Solver.step"] == {7: 1, 8: 1}, tables.keys()
    assert tables["Solver.build"] == {12: 1, 13: 1}
    assert tables["Solver.norm"] == {17: 1, 18: 1}
    assert tables["Solver.step:time"][7] >= 0.002e9
    assert tables["Solver.build:time"][12] >= 0.003e9


def test_a_plain_function_returning_a_generator_hands_it_back_as_it_is(sp):
    """Under --line-profile a decorated function that returns another
    function's generator or coroutine returns that object itself, as
    under python (before: a proxy that inspect.isgenerator and
    inspect.iscoroutine said no to, which asyncio and frameworks check)."""
    script = sp.script('''
import asyncio, inspect
import scope_profiler as sp

def gen():
    yield 1

async def real(n):
    return n

@sp.profile("make_gen")
def make_gen():
    return gen()

@sp.profile("handler")
def handler(n):
    return real(n)

g = make_gen()
c = handler(2)
print(inspect.isgenerator(g), list(g), inspect.iscoroutine(c), asyncio.run(c))
''')
    proc = sp("run", "--line-profile", "-q", "-o", "g.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True [1] True 2\n"
    tables = line_tables(sp.tmp / "g.h5")
    assert tables["make_gen"] == {13: 1} and tables["handler"] == {17: 1}, tables.keys()


def test_a_decorated_async_generator_has_its_lines_timed_at_each_step(sp):
    """Each awaited step of a decorated async generator runs with its lines
    timed, as a coroutine's steps are (before: no table at all)."""
    script = sp.script('''
import asyncio, time
import scope_profiler as sp

@sp.profile("agen")
async def agen(n):
    for i in range(n):
        await asyncio.sleep(0.001)
        time.sleep(0.002)
        yield i

async def consume():
    return [x async for x in agen(3)]

print(asyncio.run(consume()))
''')
    proc = sp("run", "--line-profile", "-q", "-o", "a.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[0, 1, 2]\n"
    tables = line_tables(sp.tmp / "a.h5")
    assert tables["agen"] == {7: 4, 8: 3, 9: 3, 10: 3}, tables
    assert tables["agen:time"][9] >= 3 * 0.002e9


LONG_SOURCE = "x = 'a line of source that runs on past the hundred columns a table takes by default, and on'"


@pytest.mark.parametrize("where", ["COLUMNS=300", "a file"])
def test_the_tables_at_the_end_of_run_show_whole_lines_where_there_is_room(sp, where):
    """The tables run prints at its end take the width `line-profile`
    takes: COLUMNS when set, the terminal's, whole lines into a file or
    pipe (a job's log). Before: always cut at 100 columns."""
    script = sp.script(f'''
import scope_profiler as sp

@sp.profile("w")
def w():
    {LONG_SOURCE}
    return x

w()
''')
    env = {"COLUMNS": "300"} if where == "COLUMNS=300" else {"COLUMNS": ""}
    proc = sp("run", "--line-profile", "-o", "w.h5", script, env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "Rank 0 | w | w" in out and LONG_SOURCE in out, out
    narrow = sp("run", "--line-profile", "-o", "w.h5", script, env={"COLUMNS": "80"})
    text = narrow.stdout + narrow.stderr
    assert "Rank 0 | w | w" in text and LONG_SOURCE not in text
    assert max(len(line) for line in text.splitlines() if line.startswith("│")) <= 80


def test_a_function_chosen_by_two_regions_has_one_table_naming_both(sp):
    """A function that two regions time (in both functions= lists) has one
    table, its lines counted under either, headed by both names; each
    region's print_stats() and get_stats() show it (before: the table was
    the first region's alone, holding the second's calls too, and the
    second region said it had no timed lines)."""
    script = sp.script('''
import time
import scope_profiler as sp

def helper(d):
    time.sleep(d)

with sp.region("setup", functions=[helper]):
    helper(0.001)
with sp.region("solve", functions=[helper]):
    helper(0.02)
for name in ("setup", "solve"):
    print(name, list(sp.get_region(name).get_stats().timings.values())[0][0][:2])
sp.get_region("solve").print_stats()
''')
    proc = sp("run", "--line-profile", "-q", "-o", "t.h5", script)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == ["setup (6, 2)", "solve (6, 2)"], proc.stdout
    assert "Rank 0 | setup, solve | helper (script.py:5)" in out
    with h5py.File(sp.tmp / "t.h5") as f:
        [g] = f["rank0/lines"].values()
        assert g.attrs["region"] == b"setup, solve" and g.attrs["function"] == b"helper"


def test_a_table_that_gets_its_first_hits_while_the_tables_are_read(sp):
    """Reading the tables runs Python (linecache, which may call a module
    loader's get_source): a chosen function that runs there for the first
    time is not written past the tables counted (before: a heap overflow,
    which AddressSanitizer reports, the plain build's malloc aborts)."""
    script = sp.script('''
import linecache
import scope_profiler as sp

def h():
    return 2

SRC = "def f():\\n    return 1\\n"

class Loader:
    def get_source(self, name):
        h()   # a chosen function's first hits, while the tables are filled
        return SRC

g = {"__name__": "fakemod", "__loader__": Loader()}
exec(compile(SRC, "fakemod_not_a_file.py", "exec"), g)
linecache.lazycache("fakemod_not_a_file.py", g)
r = sp.region("r", functions=[g["f"], h])
with r:
    g["f"]()
    stats = r.get_stats()
print(sorted(k[2] for k in stats.timings))
with r:
    h()
print(sorted(k[2] for k in r.get_stats().timings))
''')
    proc = sp("run", "--line-profile", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "['f']\n['f', 'h']\n"


def test_a_decorated_function_in_a_regions_functions_is_timed_there_too(sp):
    """region(functions=[f]) where f is decorated (or a decorated method,
    bound): its lines are timed under that region too, one table headed by
    both names (before: the region's list left it out)."""
    script = sp.script('''
import scope_profiler as sp

@sp.profile("a")
def f():
    return 1

class C:
    @sp.profile("m")
    def m(self):
        return 2

c = C()
r = sp.region("r", functions=[f, c.m])
with r:
    f()
    c.m()
r.print_stats()
''')
    proc = sp("run", "--line-profile", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    heads = [l for l in proc.stdout.splitlines() if l.startswith("Rank 0 |")]
    assert heads == ["Rank 0 | a, r | f (script.py:4)", "Rank 0 | m, r | C.m (script.py:9)"], proc.stdout
