"""The habits users bring from python, cProfile, kernprof and pyinstrument
(issue 30): `run -c CODE`, an unmodified program profiled with no hint
needed, --recursive on a module run with -m, kernprof's bare @profile, a
run that fails at once keeping the last good profile."""
import json
import os
import subprocess
import sys

import h5py
import pytest

from conftest import BINARY, embedded, regions


def names(path):
    with h5py.File(path) as f:
        return {n: int(r.attrs["num_calls"]) for n, r in regions(f).items()}


# ---- run -c CODE ----

def test_run_c_is_python_c(sp):
    """`run -c CODE ARGS` runs CODE as `python -c CODE ARGS` would:
    __main__, sys.argv[0] '-c', sys.path[0] the current folder ('')."""
    code = ("import sys, json\n"
            "print(json.dumps([__name__, sys.argv, sys.path[0]]))\n"
            "import scope_profiler as sp\n"
            "with sp.region('work'):\n    sum(range(100))\n")
    proc = sp("run", "-q", "-o", "c.h5", "-c", code, "a", "--b")
    assert proc.returncode == 0, proc.stderr
    want = subprocess.run([embedded().executable, "-c", code, "a", "--b"], capture_output=True,
                          text=True, cwd=sp.tmp).stdout
    assert proc.stdout == want
    assert json.loads(proc.stdout) == ["__main__", ["-c", "a", "--b"], ""]
    assert names(sp.tmp / "c.h5") == {"work": 1}


def test_run_c_recursive_records_the_code_s_functions(sp):
    code = "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\nprint(f(10))\n"
    proc = sp("run", "-q", "--recursive", "-o", "c.h5", "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "55\n"
    calls = names(sp.tmp / "c.h5")
    assert calls["__main__.f"] == 177


def test_run_c_recursive_leaves_out_code_that_exec_makes(sp):
    """-c's code is named "<string>", as is the code exec() and eval() make
    at run time (dataclasses' __init__, namedtuple's __new__, those of the
    stdlib modules imported): only the command's own functions are its."""
    code = ("import collections, dataclasses\n"
            "@dataclasses.dataclass\n"
            "class P:\n    x: int\n    y: int = 2\n"
            "T = collections.namedtuple('T', 'a b')\n"
            "def f(n):\n    return [P(i) for i in range(n)] + [T(1, 2)]\n"
            "g = lambda: f(3)\n"
            "print(len(g()))\n")
    proc = sp("run", "-q", "--recursive", "-o", "c.h5", "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "4\n"
    calls = names(sp.tmp / "c.h5")
    assert calls["__main__.f"] == 1 and calls["__main__.<lambda>"] == 1 and calls["__main__.P"] == 1
    assert set(calls) - {"-c", "__main__.<module>", "__main__.f", "__main__.<lambda>", "__main__.P"} \
        <= {"__main__.f.<locals>.<listcomp>",   # a comprehension's own frame before 3.12
            "__main__.P.__annotate__"}, calls  # 3.14 (PEP 649): P's annotations, the command's own


def test_run_c_recursive_says_a_compile_warning_no_more_than_without(sp):
    """Telling -c's code objects apart compiles the command once more, quietly:
    --recursive adds no copy of its compile-time warnings."""
    code = "x = 1\nprint(x is 1)\n"
    plain = sp("run", "-q", "--no-output", "-c", code)
    traced = sp("run", "-q", "--no-output", "--recursive", "-c", code)
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stderr.count("SyntaxWarning") == plain.stderr.count("SyntaxWarning") >= 1, traced.stderr


def test_a_script_s_compile_warning_is_said_once_as_python_says_it(sp):
    """run compiles the script before running it (a syntax error is one
    line): quietly, so that its compile-time warnings come once, from
    Python's own compile, as under plain python."""
    script = sp.script("x = 1\nprint(x is 1)\n", name="w.py")
    plain = subprocess.run([embedded().executable, "w.py"], capture_output=True, text=True, cwd=sp.tmp)
    for opts in ((), ("--recursive",), ("--line-profile",)):
        proc = sp("run", "-q", "--no-output", *opts, script)
        assert proc.returncode == 0 and proc.stdout == plain.stdout, proc.stderr
        assert proc.stderr.count("SyntaxWarning") == plain.stderr.count("SyntaxWarning") == 1, proc.stderr


def test_run_c_status_and_errors(sp):
    proc = sp("run", "-q", "--no-output", "-c", "import sys; sys.exit(4)")
    assert proc.returncode == 4, proc.stderr
    proc = sp("run", "-q", "--no-output", "-c", "def (:")
    assert proc.returncode == 1
    assert "SyntaxError" in proc.stderr and "Traceback" not in proc.stderr
    assert not (sp.tmp / "profiling_data.h5").exists()


def test_run_c_in_help(sp):
    out = sp("run", "--help").stdout
    assert "-c CODE" in out


# ---- --recursive: the program being run is the user's code, installed or not ----

def installed_package(sp):
    """A package `mypkg` (with __main__) and a dependency `helper`, both in a
    site-packages folder put on PYTHONPATH: installed code."""
    site = sp.tmp / "env" / "lib" / "site-packages"
    sp.script("""
        def work(n):
            return sum(step(i) for i in range(n))

        def step(i):
            return i * 2
        """, name=f"{site.relative_to(sp.tmp)}/mypkg/core.py")
    sp.script("", name=f"{site.relative_to(sp.tmp)}/mypkg/__init__.py")
    sp.script("""
        import sys
        import helper
        from mypkg.core import work
        print(work(int(sys.argv[1])), helper.twice(1))
        """, name=f"{site.relative_to(sp.tmp)}/mypkg/__main__.py")
    sp.script("""
        def twice(x):
            return 2 * x
        """, name=f"{site.relative_to(sp.tmp)}/helper.py")
    return site


def test_recursive_module_installed_is_the_users_code(sp):
    site = installed_package(sp)
    proc = sp("run", "-q", "--recursive", "-o", "m.h5", "-m", "mypkg", "5",
              env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "20 2\n"
    calls = names(sp.tmp / "m.h5")
    assert calls["mypkg.core.work"] == 1 and calls["mypkg.core.step"] == 5
    # Another installed package it calls is not the user's code.
    assert not any(n.startswith("helper.") for n in calls), calls


def test_recursive_script_in_site_packages_is_the_users_code(sp):
    site = installed_package(sp)
    proc = sp("run", "-q", "--recursive", "-o", "s.h5", site / "mypkg" / "__main__.py", "3",
              env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    calls = names(sp.tmp / "s.h5")
    assert calls["mypkg.core.work"] == 1 and calls["mypkg.core.step"] == 3
    assert not any(n.startswith("helper.") for n in calls), calls


def test_recursive_script_folder_with_a_venv_inside(sp):
    """The script's folder is the user's; a virtual environment inside it is not."""
    site = installed_package(sp)
    script = sp.script("""
        import helper
        def main():
            return helper.twice(3)
        print(main())
        """, name="main.py")
    proc = sp("run", "-q", "--recursive", "-o", "v.h5", script, env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    calls = names(sp.tmp / "v.h5")
    assert calls["__main__.main"] == 1
    assert "helper.twice" not in calls, calls


def test_recursive_m_pyflakes(sp):
    """Debian's pyflakes (dist-packages) run with -m: its own functions recorded."""
    probe = subprocess.run([embedded().executable, "-c", "import pyflakes"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the embedded Python has no pyflakes")
    sp.script("import os\n", name="src/a.py")
    proc = sp("run", "-q", "--recursive", "-o", "p.h5", "-m", "pyflakes", "src")
    assert proc.returncode == 1, proc.stderr   # 'os' imported but unused
    calls = names(sp.tmp / "p.h5")
    assert len(calls) > 20, calls
    assert any(n.startswith("pyflakes.checker.Checker.") for n in calls), calls


# ---- a script with no regions: a hint ----

HINT = "--recursive"


def test_no_regions_hints_at_recursive(sp):
    script = sp.script("print(sum(range(10)))\n")
    proc = sp("run", script)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    at = lines.index("(no regions)")
    hint = lines[at + 1]
    assert hint.startswith("scope-profiler: hint: ") and "run --recursive" in hint, proc.stderr
    assert "--line-profile" in hint
    assert sum("hint:" in l for l in lines) == 1
    # Not when there are regions, not under -q, not under --recursive.
    with_region = sp.script("import scope_profiler as sp\nwith sp.region('r'):\n    pass\n",
                            name="r.py")
    for args in (("run", with_region), ("run", "-q", script), ("run", "--recursive", script)):
        proc = sp(*args)
        assert proc.returncode == 0, proc.stderr
        assert "hint:" not in proc.stderr, proc.stderr


# ---- a script that fails at once keeps the last good profile ----

ARGPARSE = """
import argparse
import scope_profiler as sp

@sp.profile
def work(n):
    return sum(range(n))

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, required=True)
args = parser.parse_args()
work(args.n)
"""


@pytest.mark.parametrize("recursive", [False, True])
def test_failure_before_recording_keeps_the_last_profile(sp, recursive):
    script = sp.script(ARGPARSE)
    opts = ["--recursive"] if recursive else []
    proc = sp("run", *opts, "-o", "out.h5", script, "--n", "1000")
    assert proc.returncode == 0, proc.stderr
    good = (sp.tmp / "out.h5").read_bytes()
    assert names(sp.tmp / "out.h5")["work"] == 1
    proc = sp("run", *opts, "-o", "out.h5", script)    # argparse: --n is required
    assert proc.returncode == 2, proc.stderr
    assert (sp.tmp / "out.h5").read_bytes() == good
    ours = [l for l in proc.stderr.splitlines() if l.startswith("scope-profiler")]
    assert len(ours) == 1, proc.stderr
    assert "out.h5" in ours[0] and "previous profile" in ours[0], ours
    assert "Regions" not in proc.stderr    # no empty summary
    assert "required" in proc.stderr       # argparse's own message
    # No profile there before: none is written, and that is said.
    proc = sp("run", *opts, "-o", "new.h5", script)
    assert proc.returncode == 2
    assert not (sp.tmp / "new.h5").exists()
    ours = [l for l in proc.stderr.splitlines() if l.startswith("scope-profiler")]
    assert len(ours) == 1 and "no profile written" in ours[0], proc.stderr
    # --no-output writes no file: there is none to speak of, the script's
    # own message is all, as under plain python.
    proc = sp("run", *opts, "--no-output", script)
    assert proc.returncode == 2
    assert not [l for l in proc.stderr.splitlines() if l.startswith("scope-profiler")], proc.stderr
    assert "required" in proc.stderr


def test_failure_after_recording_writes_the_profile(sp):
    script = sp.script(ARGPARSE + "raise SystemExit(3)\n")
    proc = sp("run", "-q", "-o", "out.h5", script, "--n", "10")
    assert proc.returncode == 3
    assert names(sp.tmp / "out.h5")["work"] == 1


# ---- kernprof's habit: a bare @profile, no import ----

KERNPROF = """
@profile
def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

print(work(1000))
"""


def test_bare_profile_under_line_profile(sp):
    script = sp.script(KERNPROF)
    proc = sp("run", "-q", "--line-profile", "-o", "l.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "332833500\n"
    out = sp("line-profile", "l.h5")
    assert out.returncode == 0, out.stderr
    assert "total += i * i" in out.stdout
    assert any(n.endswith("work") for n in names(sp.tmp / "l.h5"))


def test_bare_profile_under_recursive(sp):
    script = sp.script(KERNPROF)
    proc = sp("run", "-q", "--recursive", "-o", "r.h5", script)
    assert proc.returncode == 0, proc.stderr
    calls = names(sp.tmp / "r.h5")
    assert sum(c for n, c in calls.items() if n.endswith("work")) == 1, calls


def test_script_s_own_profile_wins(sp):
    script = sp.script('def profile(f):\n    print("own profile")\n    return f\n' + KERNPROF)
    proc = sp("run", "-q", "--line-profile", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("own profile\n")


def test_no_builtin_profile_without_line_profile_or_recursive(sp):
    script = sp.script("import builtins\nprint(hasattr(builtins, 'profile'))\n")
    proc = sp("run", "-q", "--no-output", script)
    assert proc.stdout == "False\n", proc.stderr


# ---- --recursive --all records the program's calls, not the tool's start-up ----

def test_recursive_all_empty_script_records_none_of_the_start_up(sp):
    script = sp.script("x = 1\n", name="empty.py")
    proc = sp("run", "-q", "--recursive", "--all", "-o", "e.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert names(sp.tmp / "e.h5") == {"empty.py": 1, "__main__.<module>": 1}
    # The script's own calls are all there, threads' too.
    sp.script("VALUE = 1\n", name="local_mod.py")
    script = sp.script("""
        import threading
        import local_mod
        def work():
            return sum(range(10))
        t = threading.Thread(target=work)
        t.start()
        t.join()
        """, name="threads.py")
    proc = sp("run", "-q", "--recursive", "--all", "-o", "t.h5", script)
    assert proc.returncode == 0, proc.stderr
    calls = names(sp.tmp / "t.h5")
    assert calls["__main__.work"] == 1
    assert calls["threading.Thread.start"] == 1
    # The script's import (importlib._bootstrap, 3.12+: _frozen_importlib).
    assert sum(c for n, c in calls.items() if n.endswith("._find_and_load")) >= 1, calls
    assert calls["local_mod.<module>"] == 1


def test_recursive_thread_started_with_thread_module(sp):
    """Threads get the hook whether threading was imported or not."""
    script = sp.script("""
        import _thread, time
        done = []
        def work():
            done.append(sum(range(10)))
        _thread.start_new_thread(work, ())
        while not done:
            time.sleep(0.001)
        """, name="raw.py")
    proc = sp("run", "-q", "--recursive", "-o", "r.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert names(sp.tmp / "r.h5")["__main__.work"] == 1


def test_recursive_thread_module_keeps_its_errors(sp):
    """_thread.start_new_thread under --recursive refuses what plain python
    refuses, in the calling thread (not a crash in the new one)."""
    script = sp.script("""
        import _thread
        def work(*a):
            pass
        for args in ((work, [1]), (work, (1,), None), (work, (1,), [])):
            try:
                _thread.start_new_thread(*args)
            except TypeError as e:
                print("refused:", e)
        """, name="bad.py")
    proc = sp("run", "-q", "--recursive", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "refused: 2nd arg must be a tuple",
        "refused: optional 3rd arg must be a dictionary",
        "refused: optional 3rd arg must be a dictionary"]


# ---- the original package's API ----

def test_profile_recursive_in_aggregate_mode(sp):
    """@profile(name, recursive=True) under aggregation_mode (the original's
    test suite): the entry and what it calls, counted."""
    script = sp.script("""
        import scope_profiler as sp
        sp.setup(aggregation_mode=True, file_path="agg.h5")

        def leaf(i):
            return i + 1

        @sp.profile("entry", recursive=True)
        def entry(n):
            return sum(leaf(i) for i in range(n))

        for _ in range(3):
            entry(4)
        sp.finalize(verbose=False)
        """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    calls = names(sp.tmp / "agg.h5")
    assert calls["entry"] == 3 and calls["__main__.leaf"] == 12, calls


def test_setup_again_resets_options_not_given(sp):
    """setup() while a session is open starts from the defaults, as the
    original's does: a failed test's use_line_profiler=True does not leak
    into the next test's setup(). What the run's command line fixed stays."""
    script = sp.script("""
        import scope_profiler as sp
        sp.setup(use_line_profiler=True, buffer_limit=64, file_path="first.h5")
        sp.setup(deactivate_file_output=True)
        c = sp.get_config()
        print(c.use_line_profiler, c.buffer_limit, c.file_path, c.track_threads)
        """)
    proc = sp("run", "-q", "--track-threads", script)
    assert proc.returncode == 0, proc.stderr
    line_profile, limit, path, threads = proc.stdout.split()
    assert line_profile == "False" and path.endswith("profiling_data.h5"), proc.stdout
    assert limit != "64", proc.stdout
    assert threads == "True", proc.stdout   # --track-threads, fixed by the command line


# ---- a recursive generator's calls (issue 30: sympy's _preorder_traversal) ----

WALK = """
import atexit, gc, sys
C = [0]    # the frame's real entries: its start, and each resume (next() or close())

class Node:
    def __init__(self, args):
        self.args = args

def walk(node):
    C[0] += 1
    try:
        yield node
    except GeneratorExit:
        C[0] += 1
        raise
    C[0] += 1
    for a in node.args:
        for sub in walk(a):
            try:
                yield sub
            except GeneratorExit:
                C[0] += 1
                raise
            C[0] += 1

def tree(d):
    return Node([tree(d - 1) for _ in range(2)] if d else [])

class Holder:
    pass

t = tree(4)
for k in range(2000):
    h = Holder()
    h.self = h                 # a cycle: the collector closes the walk, inside any call
    h.it = walk(t)
    next(h.it); next(h.it); next(h.it)
    del h
    len([str(i) for i in range(5)])
if sys.argv[1:] == ["collect"]:
    gc.collect()
    print(C[0])
else:
    atexit.register(lambda: print(C[0]))
"""


def test_recursive_generator_calls_are_its_frame_entries(sp):
    """Every start and every resume of a generator frame is a call (cProfile's
    rule), also a close by the garbage collector inside another function (the
    'impossible parents' of sympy's _preorder_traversal: where the collector
    ran). The count is the frame's real entries in that run; cProfile's run
    differs only where its allocations move the collector's passes: with
    every abandoned walk collected before the end, the counts are equal."""
    script = sp.script(WALK, name="walk.py")
    for args in ([], ["collect"]):
        proc = sp("run", "-q", "--recursive", "-o", "w.h5", script, *args)
        assert proc.returncode == 0, proc.stderr
        assert names(sp.tmp / "w.h5")["__main__.walk"] == int(proc.stdout), proc.stdout
    cprofile = subprocess.run(
        [embedded().executable, "-c",
         "import cProfile, pstats, sys\n"
         "sys.argv = ['walk.py', 'collect']\n"
         "cProfile.run(open('walk.py').read(), 'cp.out')\n"
         "print([v[1] for (f, l, n), v in pstats.Stats('cp.out').stats.items() if n == 'walk'][0])"],
        capture_output=True, text=True, cwd=sp.tmp)
    assert cprofile.returncode == 0, cprofile.stderr
    truth, counted = cprofile.stdout.split()
    assert truth == counted == proc.stdout.strip()
