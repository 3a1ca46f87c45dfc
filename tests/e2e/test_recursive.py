"""`run --recursive`: every Python function of an unmodified script, from a
C profile hook; counts checked against cProfile on the same program."""
import os
import pstats
import re
import subprocess

import h5py
import pytest

from conftest import embedded, one_line_error, regions

CALL_HEAVY = """
import asyncio
import sys

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def countdown(n):
    for i in range(n):
        yield i

class Shape:
    def __init__(self, k):
        self.k = k
    def area(self):
        return helper_square(self.k)
    @staticmethod
    def unit():
        return Shape(1)
    @classmethod
    def make(cls, k):
        return cls(k)

def helper_square(x):
    return x * x

def raises(n):
    if n % 3 == 0:
        raise ValueError(n)
    return n

def catcher(n):
    try:
        return raises(n)
    except ValueError:
        return -1

def outer(n):
    def inner(k):
        return k + 1
    return sum(inner(i) for i in range(n))

def deep(n):
    return 0 if n == 0 else 1 + deep(n - 1)

async def tick(k):
    await asyncio.sleep(0)
    return k

async def gather_ticks():
    return sum(await asyncio.gather(*(tick(k) for k in range(5))))

def main():
    sys.setrecursionlimit(5000)
    total = fib(15)
    total += sum(countdown(50))
    total += sum(Shape.make(i).area() for i in range(30))
    total += Shape.unit().area()
    total += sum(catcher(i) for i in range(40))
    total += outer(25)
    total += deep(600)
    squares = [helper_square(i) for i in range(10)]
    total += asyncio.run(gather_ticks())
    print(total, len(squares))

main()
"""


def regions_of(path):
    with h5py.File(path) as f:
        return {name: int(g.attrs["num_calls"]) for name, g in regions(f).items()}


def test_seed_two_function_script(sp):
    script = sp.script("""
        import time


        def leaf():
            time.sleep(0.001)


        def main():
            for _ in range(3):
                leaf()


        main()
    """, name="my_script.py")
    proc = sp("run", "--recursive", "-q", "-o", "script.h5", script)
    assert proc.returncode == 0, proc.stderr
    tree = sp("summary", "--tree", "script.h5").stdout
    lines = [l for l in tree.splitlines() if "__main__" in l or "my_script.py" in l or "(own)" in l]
    labels = [re.match(r"^(.*?)\s{2,}\d", l).group(1).strip() for l in lines]
    assert labels == ["my_script.py", "├─ (own)", "└─ __main__.<module>", "├─ (own)",
                      "└─ __main__.main", "├─ (own)", "└─ __main__.leaf (3x)"], tree
    assert regions_of(sp.tmp / "script.h5") == {
        "my_script.py": 1, "__main__.<module>": 1, "__main__.main": 1, "__main__.leaf": 3}


def test_counts_equal_cprofile(sp):
    script = sp.script(CALL_HEAVY, name="heavy.py")
    proc = sp("run", "--recursive", "-q", "-o", "heavy.h5", script)
    assert proc.returncode == 0, proc.stderr
    ours = regions_of(sp.tmp / "heavy.h5")

    prof = sp.tmp / "heavy.prof"
    # cProfile under the very Python the executable embeds.
    subprocess.run([embedded().executable, "-m", "cProfile", "-o", prof, script], check=True,
                   capture_output=True, cwd=sp.tmp)
    theirs = {}
    for (filename, _, funcname), (_, ncalls, *_rest) in pstats.Stats(str(prof)).stats.items():
        if filename == str(script):
            theirs[funcname] = theirs.get(funcname, 0) + ncalls
    # Our names are <module>.<qualname>; cProfile's are co_name.
    by_code_name = {}
    for name, calls in ours.items():
        if name.startswith("__main__."):
            code_name = name.rsplit(".", 1)[-1]
            by_code_name[code_name] = by_code_name.get(code_name, 0) + calls
    assert by_code_name == theirs
    assert ours["__main__.deep"] == 601
    assert ours["__main__.fib"] == 1973
    assert ours["__main__.countdown"] == 51  # each resume is a call
    assert ours["__main__.tick"] == 10       # a coroutine: two steps each


def test_nesting_under_exceptions_and_recursion(sp):
    script = sp.script(CALL_HEAVY, name="heavy.py")
    sp("run", "--recursive", "-q", "-o", "heavy.h5", script)
    with h5py.File(sp.tmp / "heavy.h5") as f:
        r = regions(f)
        for g in r.values():
            s, e = g["start_times"][:], g["end_times"][:]
            assert (e >= s).all(), g.attrs["name"]
        # Every raises() call lies inside a catcher() call.
        cs, ce = r["__main__.catcher"]["start_times"], r["__main__.catcher"]["end_times"]
        rs, re_ = r["__main__.raises"]["start_times"], r["__main__.raises"]["end_times"]
        assert ((cs <= rs) & (re_ <= ce)).all()
        # The outermost deep() call spans all 600 nested ones.
        ds, de = r["__main__.deep"]["start_times"], r["__main__.deep"]["end_times"]
        assert ds[0] == ds.min() and de[0] == de.max()
    tree = sp("summary", "--tree", "--all", "heavy.h5").stdout
    assert "__main__.deep" in tree and "__main__.catcher (40x)" in tree


def test_own_code_only_by_default_all_includes_stdlib(sp):
    script = sp.script("""
        import json
        def encode():
            return json.dumps({"a": [1, 2, 3]})
        encode()
    """)
    sp("run", "--recursive", "-q", "-o", "own.h5", script)
    own = regions_of(sp.tmp / "own.h5")
    assert "__main__.encode" in own
    assert not any(n.startswith("json") for n in own)
    sp("run", "--recursive", "--all", "-q", "-o", "all.h5", script)
    everything = regions_of(sp.tmp / "all.h5")
    assert "json.dumps" in everything and "json.encoder.JSONEncoder.encode" in everything


def test_include_exclude_globs(sp):
    script = sp.script("""
        def solve_a(): pass
        def solve_b(): pass
        def io_read(): pass
        solve_a(); solve_b(); io_read()
    """)
    sp("run", "--recursive", "--include", "*solve_*", "--exclude", "*_b", "-q", "-o", "g.h5", script)
    names = set(regions_of(sp.tmp / "g.h5"))
    assert "__main__.solve_a" in names
    assert "__main__.solve_b" not in names and "__main__.io_read" not in names
    proc = sp("run", "--include", "x", script)
    assert proc.returncode == 2
    one_line_error(proc, "--recursive")
    # A pattern that is not UTF-8 (a byte of another locale's): one line
    # before the script (a traceback from the tool's own code and status 1).
    for opt, pattern in (("--include", "\udcff"), ("--exclude", "re:a\udcff")):
        proc = sp("run", "--recursive", opt, pattern, "-q", "-o", "u.h5", script)
        assert proc.returncode == 2
        one_line_error(proc, f"{opt}: the pattern is not UTF-8 text")
        assert not (sp.tmp / "u.h5").exists()


def test_seed_recursive_decorator(sp):
    # 001_4a6f8ec3cb02df95.txt, "Recursive profiling", unchanged but for the print.
    script = sp.script("""
        import time
        from scope_profiler import ProfileManager
        ProfileManager.setup(file_path="recursive.h5")


        def leaf():
            time.sleep(0.001)


        def middle():
            for _ in range(2):
                leaf()


        @ProfileManager.profile("entry", recursive=True)
        def entry():
            middle()


        entry()
        leaf()  # outside the region: not traced
        results = ProfileManager.finalize(verbose=False, return_results=True)
        print(sorted((r.name, r.num_calls) for r in results.get_regions()))
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "[('__main__.leaf', 2), ('__main__.middle', 1), ('entry', 1)]")
    tree = sp("summary", "--tree", "recursive.h5").stdout
    assert "entry" in tree and "└─ __main__.middle" in tree and "__main__.leaf (2x)" in tree


def test_code_run_outside_a_recursive_call_is_no_region(sp):
    """Once a profile(recursive=True) call ran, functions called outside
    it (at the top level, in a region that is not recursive, a decorated
    callable object's __call__) are no regions: before, on 3.12+ (whose
    hook stays on) each got an empty region in get_all_regions()."""
    script = sp.script("""
        import scope_profiler as sp

        class Call:
            def __call__(self):
                return 5

        def g():
            return 2

        @sp.profile(recursive=True)
        def rec():
            return g()

        @sp.profile
        def h():
            return g()

        c = sp.profile(Call())
        print(rec(), g(), h(), c(), sorted(sp.get_all_regions()))
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "2 2 2 5 ['Call', '__main__.g', 'h', 'rec']\n"
    assert regions_of(sp.tmp / "out.h5") == {"rec": 1, "__main__.g": 1, "h": 1, "Call": 1}


@pytest.mark.embedded_at_least((3, 12), "sys.monitoring's events exist from Python 3.12")
def test_code_outside_a_recursive_call_runs_without_the_hook(sp):
    """3.12+ keeps the hook's events on once a profile(recursive=True) call
    ran. Code that is not the script's (the standard library) first run
    outside such a call turns them off at its first call, as inside one:
    before, each of its calls paid two callbacks for ever (1.8x the time of
    a small library function's call). Seen in the code itself, as the
    interpreter runs it (its instructions instrumented for the events, or
    not), not in timings a loaded machine stretches. The script's own
    function first run outside (h) is no region then, and recorded once it
    runs inside a call."""
    script = sp.script("""
        import dis, posixpath
        import scope_profiler as sp

        def instrumented(f):
            # the instructions the interpreter runs now (3.12+: the
            # events' INSTRUMENTED_* in place of the plain ones)
            names = getattr(dis, "_all_opname", dis.opname)
            code = f.__code__._co_code_adaptive
            return any(names[code[i]].startswith("INSTRUMENTED_") for i in range(0, len(code), 2))

        def g():
            return 2

        def h():
            return 3

        @sp.profile(recursive=True)
        def rec():
            return g()

        @sp.profile(recursive=True)
        def rec2():
            return h()

        g()
        rec()
        posixpath.normcase("/a")   # first run outside every call: its events go off
        h()                 # first run outside every call: classified, no region yet
        names = sorted(sp.get_all_regions())
        rec2()              # recorded there
        # the events are on (h keeps them, to be recorded in a call), and
        # off in the library's code
        print(instrumented(posixpath.normcase), instrumented(h), names, sorted(sp.get_all_regions()))
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("False True ['__main__.g', 'rec', 'rec2'] "
                           "['__main__.g', '__main__.h', 'rec', 'rec2']\n"), proc.stdout
    assert regions_of(sp.tmp / "out.h5") == {"rec": 1, "__main__.g": 1, "rec2": 1, "__main__.h": 1}


def test_a_recursive_call_in_a_new_thread_records_only_the_scripts_calls(sp):
    """The first recursive=True call of a thread: its lane is named
    (threading.current_thread().name) before the hook starts, so the
    tool's own lookup is no region (before: threading.current_thread and
    threading.Thread.name, one call each, in every such thread)."""
    script = sp.script("""
        import threading
        import scope_profiler as sp

        def work():
            return 1

        @sp.profile("entry", recursive=True)
        def entry():
            work()

        t = threading.Thread(target=entry)
        t.start()
        t.join()
        entry()
        print(sorted(sp.get_all_regions()))
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "['__main__.work', 'entry']\n"
    assert regions_of(sp.tmp / "out.h5") == {"entry": 2, "__main__.work": 2}


def test_recursive_async_functions_record_their_callees(sp):
    """profile(recursive=True) on an `async def` function and on an async
    generator function: the calls each step makes are recorded, under the
    region in the call tree, and not those of another task that runs while
    it waits (before: nothing was recorded under either)."""
    script = sp.script("""
        import asyncio
        import scope_profiler as sp

        def work():
            return sum(range(100))

        def leaf():
            return 1

        @sp.profile("async_entry", recursive=True)
        async def async_entry():
            work()
            await asyncio.sleep(0)
            work()

        @sp.profile("agen", recursive=True)
        async def agen():
            for i in range(2):
                leaf()
                leaf()
                yield i

        async def other():   # not under either
            for _ in range(3):
                leaf()
                await asyncio.sleep(0)

        async def main():
            await asyncio.gather(async_entry(), other())
            async for _ in agen():
                await asyncio.sleep(0)

        asyncio.run(main())
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    got = regions_of(sp.tmp / "out.h5")
    assert {k: got[k] for k in ("async_entry", "agen", "__main__.work", "__main__.leaf")} == \
        {"async_entry": 1, "agen": 3, "__main__.work": 2, "__main__.leaf": 4}
    tree = sp("summary", "--tree", "--all", "out.h5").stdout.splitlines()
    at = next(i for i, l in enumerate(tree) if l.startswith("async_entry "))
    assert any(l.startswith("├─ __main__.work (2x)") for l in tree[at + 1:at + 4]), tree
    at = next(i for i, l in enumerate(tree) if l.startswith("agen (3x)"))
    assert any(l.startswith("└─ __main__.leaf (4x)") for l in tree[at + 1:at + 3]), tree


def test_setup_recursive_profile_option(sp):
    script = sp.script("""
        from scope_profiler import ProfileManager
        ProfileManager.setup(recursive_profile=True, file_path="r.h5")
        def helper():
            pass
        @ProfileManager.profile("work")
        def work():
            helper()
        work(); work()
        ProfileManager.finalize(verbose=False)
    """)
    assert sp("run", "-q", script).returncode == 0
    assert regions_of(sp.tmp / "r.h5") == {"work": 2, "__main__.helper": 2}


def test_explicit_region_not_counted_twice(sp):
    script = sp.script("""
        import scope_profiler as sp
        @sp.profile("solve")
        def solve():
            return inner()
        def inner():
            return 1
        for _ in range(4):
            solve()
    """)
    sp("run", "--recursive", "-q", "-o", "x.h5", script)
    names = regions_of(sp.tmp / "x.h5")
    assert names["solve"] == 4 and names["__main__.inner"] == 4
    assert "__main__.solve" not in names


def test_sys_exit_deep_inside(sp):
    script = sp.script("""
        import sys
        def down(n):
            if n == 0:
                sys.exit(7)
            down(n - 1)
        down(50)
    """)
    proc = sp("run", "--recursive", "-q", "-o", "exit.h5", script)
    assert proc.returncode == 7
    with h5py.File(sp.tmp / "exit.h5") as f:
        g = regions(f)["__main__.down"]
        assert g.attrs["num_calls"] == 51
        assert (g["end_times"][:] >= g["start_times"][:]).all()


def test_threads_each_on_own_stack(sp):
    script = sp.script("""
        import threading
        def work(n):
            return sum(step(i) for i in range(n))
        def step(i):
            return i
        threads = [threading.Thread(target=work, args=(100,)) for _ in range(3)]
        for t in threads: t.start()
        for t in threads: t.join()
        work(10)
    """)
    proc = sp("run", "--recursive", "-q", "-o", "t.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    names = regions_of(sp.tmp / "t.h5")
    assert names["__main__.work"] == 4
    assert names["__main__.step"] == 310


def test_script_setting_its_own_profiler(sp):
    """3.11 has one profile hook per thread: a script's own replaces ours,
    with a warning. From 3.12 ours is a sys.monitoring tool of its own and
    both run (the embedded Python's version decides)."""
    script = sp.script("""
        import sys
        def f(): pass
        f()
        seen = []
        sys.setprofile(lambda frame, event, arg: seen.append(event))
        f()
        sys.setprofile(None)
        print("done", "call" in seen)
    """)
    proc = sp("run", "--recursive", "-q", "-o", "w.h5", script)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "done True"
    if embedded().version < (3, 12):
        assert "warning: the script called sys.setprofile()" in proc.stderr
        assert regions_of(sp.tmp / "w.h5")["__main__.f"] >= 1
    else:
        assert proc.stderr == ""
        assert regions_of(sp.tmp / "w.h5")["__main__.f"] == 2


@pytest.mark.embedded_at_least((3, 12), "sys.monitoring exists from Python 3.12")
def test_cprofile_inside_a_recursive_run(sp):
    """cProfile (sys.monitoring's profiler id from 3.12) runs inside a
    --recursive run, and both count the same calls."""
    script = sp.script("""
        import cProfile, pstats
        def leaf(): pass
        def work():
            for _ in range(50):
                leaf()
        p = cProfile.Profile()
        p.enable()
        work()
        p.disable()
        st = pstats.Stats(p).stats
        print(sum(v[1] for k, v in st.items() if k[2] == "leaf"))
    """)
    proc = sp("run", "--recursive", "-q", "-o", "c.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "50"
    assert regions_of(sp.tmp / "c.h5")["__main__.leaf"] == 50


@pytest.mark.embedded_at_least((3, 12), "sys.monitoring exists from Python 3.12")
def test_no_free_tool_id_is_one_clear_error(sp):
    """profile(recursive=True) needs a sys.monitoring tool id; when the
    script holds every id we may take, the call raises a RuntimeError that
    names the holders, and the script can go on."""
    script = sp.script("""
        import sys
        import scope_profiler as sp
        sys.monitoring.use_tool_id(3, "mine")
        sys.monitoring.use_tool_id(4, "theirs")
        @sp.profile("deep", recursive=True)
        def deep():
            return 1
        try:
            deep()
        except RuntimeError as e:
            print("error:", e)
        sys.monitoring.free_tool_id(3)
        print(deep())
    """)
    proc = sp("run", "-q", "-o", "t.h5", script)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("error: ") and "3 (mine)" in lines[0] and "4 (theirs)" in lines[0]
    assert lines[1] == "1"


THREADED = """
import threading, time
def outer():
    time.sleep(0.2)
    inner()
def inner():
    pass
def other():
    time.sleep(0.01)
t = threading.Thread(target=outer, name="worker")
t.start()
time.sleep(0.05)
other()   # runs while outer() sleeps in the other thread
t.join()
"""


def test_track_threads_keeps_threads_apart(sp):
    script = sp.script(THREADED, name="threads.py")
    proc = sp("run", "--recursive", "--track-threads", "-q", "-o", "lanes.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # threading's own setprofile call is not the script's
    with h5py.File(sp.tmp / "lanes.h5") as f:
        r = regions(f)
        assert list(r["__main__.outer"]["lanes"]) == [1]
        assert list(r["__main__.inner"]["lanes"]) == [1]
        assert list(r["__main__.other"]["lanes"]) == [0]
        assert "1=worker" in f["metadata"].attrs["lanes"]
    tree = sp("summary", "--tree", "lanes.h5").stdout
    rows = {re.match(r"^(.*?)\s{2,}\d", l).group(1).strip(): l for l in tree.splitlines()
            if "__main__." in l}
    # other() belongs under the main thread's module; outer() is a root of
    # its own lane, with inner() under it.
    assert "└─ __main__.other" in rows or "├─ __main__.other" in rows
    assert "__main__.outer" in rows and rows["__main__.outer"].startswith("__main__.outer")
    assert any(k.endswith("__main__.inner") for k in rows)
    order = [k for k in rows]
    assert order.index("__main__.outer") < [i for i, k in enumerate(order) if k.endswith("inner")][0]

    # Without the option the threads are kept apart just the same (lanes go
    # on when the second thread records): other() never lands inside outer().
    proc = sp("run", "--recursive", "-q", "-o", "default.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "default.h5") as f:
        r = regions(f)
        assert list(r["__main__.outer"]["lanes"]) == [1]
        assert list(r["__main__.inner"]["lanes"]) == [1]
        assert list(r["__main__.other"]["lanes"]) == [0]
    default = sp("summary", "--tree", "default.h5").stdout
    def shape(text):   # each row's place in the tree and name, without the times
        return [re.match(r"^(.*?)\s{2,}\d", l).group(1) for l in text.splitlines() if "__main__." in l]
    assert shape(default) == shape(tree)


def test_setup_track_threads_explicit_regions(sp):
    script = sp.script("""
        import threading
        from scope_profiler import ProfileManager
        ProfileManager.setup(track_threads=True, file_path="t.h5")
        print(type(ProfileManager.region("work")).__name__)
        def body():
            for _ in range(5):
                with ProfileManager.region("work"):
                    pass
        threads = [threading.Thread(target=body) for _ in range(3)]
        for t in threads: t.start()
        for t in threads: t.join()
        body()
        results = ProfileManager.finalize(verbose=False, return_results=True)
        print(sorted(set(results["work"][0].lanes.tolist())))
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["ThreadsProfileRegion", "[0, 1, 2, 3]"]


def test_calls_still_running_at_exit_are_closed(sp):
    script = sp.script("""
        import threading, time
        def forever():
            while True:
                time.sleep(0.01)
        threading.Thread(target=forever, daemon=True).start()
        time.sleep(0.05)
    """)
    proc = sp("run", "--recursive", "-q", "-o", "open.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "open.h5") as f:
        g = regions(f)["__main__.forever"]
        assert g.attrs["num_calls"] == 1
        start, end = int(g["start_times"][0]), int(g["end_times"][0])
        # Closed at the end of the run: it lasted most of the 50 ms.
        assert end - start >= 30_000_000
        assert end <= int(f["rank0"].attrs["run_end_time"])


def test_run_recursive_leaves_the_scripts_setup_free(sp):
    # --recursive is the hook over the whole run, not the script's
    # recursive_profile keyword: a setup() of its own stays the script's.
    script = sp.script("""
        import scope_profiler as sp
        sp.setup(aggregation_mode=True)
        print(type(sp.region("a")).__name__)
        for i in range(3):
            with sp.region("a"):
                pass
        print(sp.finalize(verbose=False, return_results=True)["a"].num_calls)
    """)
    proc = sp("run", "-q", "--no-output", "--recursive", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["AggregateProfileRegion", "3"]


@pytest.mark.parametrize("flags,value", [((), "false"), (("--recursive",), "true"),
                                         (("--recursive", "--all"), "all")])
def test_metadata_says_how_the_run_traced(sp, flags, value):
    script = sp.script("def f():\n    return 1\nf()\n")
    proc = sp("run", "-q", *flags, "-o", "m.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "m.h5") as f:
        assert f["metadata"].attrs["recursive"] == value


def test_functions_whose_names_utf8_cannot_hold_are_recorded_escaped(sp):
    # A module file whose name is not UTF-8 (os.fsdecode's lone surrogates),
    # a qualname with a surrogate or a NUL (code.replace): each recorded
    # under an escaped name (they were left out without a word).
    (sp.tmp / os.fsdecode(b"m\xe9.py")).write_text("def g():\n    return 2\n")
    script = sp.script("""
        import os
        m = __import__(os.fsdecode(b"m\\xe9"))
        m.g()
        def f(): return 1
        f.__code__ = f.__code__.replace(co_qualname="a\\udcffb")
        f()
        def h(): return 3
        h.__code__ = h.__code__.replace(co_qualname="a\\0b")
        h()
    """)
    proc = sp("run", "--recursive", "-q", "-o", "e.h5", script)
    assert proc.returncode == 0, proc.stderr
    names = set(regions_of(sp.tmp / "e.h5"))
    assert {"m\\udce9.<module>", "m\\udce9.g", "__main__.a\\udcffb", "__main__.a\\x00b"} <= names, names
    assert "'__main__.a\\udcffb' is not valid text (UTF-8 cannot hold it); it is recorded as " \
           "'__main__.a\\\\udcffb'" in proc.stderr, proc.stderr
