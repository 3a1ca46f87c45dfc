"""Fixtures for the end-to-end tests: they drive the real scope-profiler
executable (SCOPE_PROFILER, set by `make e2e`) on real scripts.

The tests themselves run under a Python with pytest, h5py and numpy
(/usr/bin/python3 here); the executable runs the scripts with the Python it
embeds, which may be another (make PYTHON=..., `make check-pythons`). What a
script sees is that one's: embedded() says which it is and what it can
import, once per session. A test whose script imports a package marks it
@pytest.mark.script_imports("numpy", ...) and is skipped, naming the
package, only where the embedded Python lacks it; a test that loads the
extension module built beside the executable into this process is marked
same_python."""
import contextlib
import functools
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import types

import pytest

BINARY = os.environ.get("SCOPE_PROFILER") or str(
    pathlib.Path(__file__).resolve().parents[2] / "build" / "scope-profiler")
ROOT = pathlib.Path(__file__).resolve().parents[2]

# The packages scripts of these tests import (beside the standard library).
PACKAGES = ("numpy", "h5py", "mpi4py", "matplotlib", "pandas")
PROBE = f"""
import importlib.util, json, sys
print(json.dumps({{"version": list(sys.version_info[:3]), "executable": sys.executable,
                  "packages": {{p: importlib.util.find_spec(p) is not None for p in {PACKAGES!r}}}}}))
"""


@functools.cache
def embedded():
    """The Python the executable embeds, as its scripts see it: version (a
    tuple like sys.version_info[:3]), executable (sys.executable there, the
    `python` to compare a run with) and packages ({name: importable})."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = pathlib.Path(tmp, "probe.py")
        probe.write_text(PROBE)
        proc = subprocess.run([BINARY, "run", "-q", "--no-output", probe], capture_output=True,
                              text=True, timeout=120, cwd=tmp)
    if proc.returncode != 0:
        pytest.fail(f"{BINARY} cannot run a script: {proc.stderr.strip()}")
    info = json.loads(proc.stdout.splitlines()[-1])
    return types.SimpleNamespace(version=tuple(info["version"]), executable=info["executable"],
                                 packages=info["packages"])


def pytest_addoption(parser):
    parser.addoption("--other-python", action="store_true",
                     help="this run checks a build against another Python than the host's "
                          "(make check-pythons, check-pyenv): leave out the tests marked any_python, "
                          "which the host's suite runs")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--other-python"):
        return
    kept = [i for i in items if not i.get_closest_marker("any_python")]
    config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("any_python")])
    items[:] = kept


def pytest_configure(config):
    # Started in the background by a shell without job control (a make
    # recipe's `cmd &`, check-pythons' suites side by side), the tests
    # inherit SIGINT and SIGQUIT ignored, and so would every process they
    # start, where a run keeps an ignored signal ignored (nohup's case): the
    # signals' tests need them as a terminal delivers them. Here they are
    # set as python's own start sets them; exec gives the processes SIG_DFL.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    config.addinivalue_line("markers", "any_python: the test's outcome does not depend on the "
                            "Python the tool embeds (the browser, the docs, the layers, builds "
                            "against another HDF5): --other-python leaves it out")
    config.addinivalue_line("markers", "script_imports(*packages): the test's scripts import "
                            "these packages in the embedded Python; skipped where it lacks one")
    config.addinivalue_line("markers", "same_python: the test loads the extension module built "
                            "beside the executable into this Python; skipped where they differ")
    config.addinivalue_line("markers", "embedded_at_least(version, why): skipped where the "
                            "embedded Python is older than version (a tuple)")


def pytest_report_header(config):
    """What was built against what: the executable's --version (the Python it
    embeds, HDF5, MPI), what its scripts can import, and this Python."""
    if not os.access(BINARY, os.X_OK):
        return [f"scope-profiler: {BINARY} is not built"]
    version = subprocess.run([BINARY, "--version"], capture_output=True, text=True).stdout
    e = embedded()
    has = [p for p, ok in e.packages.items() if ok]
    lacks = [p for p, ok in e.packages.items() if not ok]
    return ([f"scope-profiler: {BINARY}"] + ["  " + l for l in version.splitlines()]
            + [f"  embedded Python's packages: {', '.join(has) or 'none'}"
               + (f" (lacks {', '.join(lacks)}: tests whose scripts import them skip)" if lacks else ""),
               f"  tests run under: Python {sys.version.split()[0]} ({sys.executable})"])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    names = {m.name for m in item.iter_markers()}
    if not names & {"script_imports", "same_python", "embedded_at_least"} or not os.access(BINARY, os.X_OK):
        return
    e = embedded()
    v = ".".join(map(str, e.version))
    for mark in item.iter_markers("embedded_at_least"):
        if e.version < mark.args[0]:
            pytest.skip(f"{mark.args[1]}; the embedded Python is {v}")
    for mark in item.iter_markers("script_imports"):
        missing = [p for p in mark.args if not e.packages[p]]
        if missing:
            pytest.skip(f"the embedded Python {v} ({e.executable}) has no {', '.join(missing)}")
    if item.get_closest_marker("same_python") and e.version[:2] != sys.version_info[:2]:
        pytest.skip(f"the module beside the executable is for the embedded Python {v}, "
                    f"not this one ({sys.version.split()[0]})")


class Tool:
    def __init__(self, tmp_path):
        self.tmp = tmp_path

    def script(self, text, name="script.py"):
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def __call__(self, *args, input=None, timeout=120, env=None, cwd=None):
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        return subprocess.run([BINARY, *map(str, args)], input=input, capture_output=True,
                              text=True, timeout=timeout, env=full_env, cwd=cwd or self.tmp)


@pytest.fixture
def sp(tmp_path):
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"{BINARY} is not built; run `make`")
    return Tool(tmp_path)


# The text view's times: "472 ns", "12.3 µs", "1.20 ms", "3.00 s" (three
# significant digits; --json has exact seconds).
UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
DURATION = r"-?\d+(?:\.\d+)? (?:ns|µs|ms|s)"


# What `make e2e` (a sub-make) adds to the environment and a user's shell has
# not: make's job server, and the variables make exports from its command
# line (`make asan`'s CFLAGS and LDFLAGS, `make check-pyenv`'s PYTHON would
# build a module, or binary, that is not what a user gets).
MAKE_ENV = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CFLAGS", "CPPFLAGS", "LDFLAGS", "CC", "BUILD",
            "PYTHON", "PYTHON_CONFIG", "TEST_PYTHON", "ASAN_OPTIONS")


def build_standin(src, folder, lib, *flags):
    """A stand-in library built from tests/e2e/SRC into build/FOLDER/LIB
    (beside the binary; each test module's fixture builds it once) with
    -Wall -Wextra and flags (-Werror, libraries); its path."""
    where = pathlib.Path(BINARY).resolve().parent / folder
    where.mkdir(exist_ok=True)
    tmp = where / f"{lib}.{os.getpid()}"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", *flags, "-o", str(tmp),
                    str(pathlib.Path(__file__).with_name(src))], check=True)
    os.replace(tmp, where / lib)
    return where / lib


def sanitizer_env(module):
    """What a plain python needs to load module (a path) when it is an ASan
    build's (`make asan`): the sanitizer's runtime first (LD_PRELOAD), leaks
    not checked; {} for a normal build or no module."""
    if not module or not os.path.exists(module):
        return {}
    ldd = subprocess.run(["ldd", str(module)], capture_output=True, text=True).stdout
    pre = [l.split("=>")[1].split()[0] for l in ldd.splitlines()
           if "=>" in l and ("libasan" in l or "libubsan" in l)]
    return {"LD_PRELOAD": " ".join(pre), "ASAN_OPTIONS": "detect_leaks=0"} if pre else {}


def shell_env(*drop):
    """os.environ as a user's shell has it (less MAKE_ENV and the names in drop)."""
    return {k: v for k, v in os.environ.items() if k not in MAKE_ENV and k not in drop}


def duration_s(text):
    """Seconds from a printed duration such as "12.3 ms"."""
    number, unit = text.split()
    return float(number) * UNITS[unit]


def durations_s(row):
    """Every printed duration in a row of the text view, in seconds."""
    return [duration_s(d) for d in re.findall(r"(?<![\w.])" + DURATION + r"(?!\w)", row)]


def one_line_error(proc, *fragments):
    """The tool's error is one line on stderr, naming what went wrong."""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("scope-profiler: "), lines[0]
    for f in fragments:
        assert f in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


# ---- reading a profile with plain h5py (format version 2) ----
# What scope-profiler-format(5) tells h5py users, written once for the tests:
# rank{N}/regions holds a table (one column per field, one row per region),
# rank{N}/events the calls of every region one region after the other (row
# i's from first_event[i], num_calls[i] of them; none for an aggregate row),
# rank{N}/tree the call tree with its regions by row.

SUMMARY = ("num_calls", "total_ns", "min_ns", "max_ns", "first_start_ns", "last_end_ns",
           "mean_ns", "std_ns")


class Region:
    """One region of one rank, as h5py reads it: attrs (its summary, name,
    dropped_events when calls were lost, aggregate and self_ns for an
    aggregate row) and its event columns by name (numpy arrays)."""

    def __init__(self, f, rank, table, row):
        self.attrs = {k: table[k][row] for k in SUMMARY}
        self.attrs["name"] = table["raw_name"][row]       # bytes, as h5py gives them
        if table["dropped_events"][row]:
            self.attrs["dropped_events"] = table["dropped_events"][row]
        self.aggregate = bool(table["aggregate"][row])
        if self.aggregate:
            self.attrs["aggregate"] = 1
            self.attrs["self_ns"] = table["self_ns"][row]
        self._events = f[f"rank{rank}/events"]
        n = 0 if self.aggregate else int(table["num_calls"][row])
        if "first_event" in table:
            first = int(table["first_event"][row])
            self._calls = slice(first, first + n)
        else:
            # Format version 3 (a streamed run): the calls of the blocks
            # whose region is this row, in block order.
            import numpy as np
            ends = np.cumsum(self._events["block_calls"][:])
            self._calls = np.concatenate(
                [np.arange(e - c, e) for r, c, e in zip(self._events["block_region"][:],
                                                       self._events["block_calls"][:], ends) if r == row]
                or [np.arange(0)])
            assert len(self._calls) == n

    def __iter__(self):
        if self.aggregate:
            return iter(())
        return iter(sorted(k for k in self._events if not k.startswith("block_")))

    def __contains__(self, column):
        return column in list(self)

    def __getitem__(self, column):
        if column not in self:
            raise KeyError(column)
        if isinstance(self._calls, slice):
            return self._events[column][self._calls]
        return self._events[column][:][self._calls]


def regions(f, rank=0):
    """{name: Region} of one rank of an open h5py.File, in the table's order."""
    g = f[f"rank{rank}/regions"]
    table = {k: g[k][:] for k in g}
    table["raw_name"] = [bytes(n) for n in table["name"]]
    table["name"] = [n.decode("utf-8", "surrogateescape") for n in table["raw_name"]]
    return {table["name"][i]: Region(f, rank, table, i) for i in range(len(table["name"]))}


def tree(f, rank=0):
    """The call tree of one rank: [(parent index or -1, region name, calls, total_ns)]."""
    names = [bytes(n).decode("utf-8", "surrogateescape") for n in f[f"rank{rank}/regions/name"][:]]
    t = f[f"rank{rank}/tree"]
    return [(int(p), names[int(r)], int(c), int(ns))
            for p, r, c, ns in zip(t["parent"][:], t["region"][:], t["calls"][:], t["total_ns"][:])]


def tick_hwm(body="pass", stream="sys.stderr"):
    """The text of a script that runs int(argv[1]) calls of the region
    "tick", each running `body` (i: the call's index), and prints
    "hwm QUARTER WHOLE" to `stream`: its peak RSS (VmHWM, KiB) after a
    quarter of the calls and after all of them (what the memory tests
    compare within one run)."""
    return f"""
import sys
import scope_profiler as sp

def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))

n = int(sys.argv[1])
r = sp.region("tick")
for i in range(n // 4):
    with r:
        {body}
quarter = hwm()
for i in range(n - n // 4):
    with r:
        {body}
print("hwm", quarter, hwm(), file={stream}, flush=True)
"""


@contextlib.contextmanager
def small_tmpfs(folder, size):
    """A tmpfs of size (mount's -o size=, "4m") mounted at the new folder
    for the block (a disk that fills), unmounted after it; the test skips
    where it cannot be mounted (not root: CI runs these tests as root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (CI runs these tests as root)")
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)
