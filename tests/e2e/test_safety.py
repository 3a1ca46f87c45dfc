"""Safety of the commands that read files: damaged files found by fuzzing
(tests/fuzz/fuzz-regress/, see `make fuzz`), files whose values contradict each
other, and a standard output that cannot be written. Each gives exactly one
line on stderr, `scope-profiler: CMD: ...`, and status 1; never a crash or
a hang (the timeout below detects a hang; it is no performance bound)."""
import subprocess

import h5py
import pytest

from conftest import BINARY, ROOT, regions

HANG = 60
FINDINGS = sorted((ROOT / "tests" / "fuzz" / "fuzz-regress").iterdir())

SCRIPT = """\
import scope_profiler as sp

@sp.profile("solve")
def solve(n):
    x = 0
    for i in range(n):
        x += i
    return x

for step in range(3):
    with sp.region("timestep"):
        solve(100)
"""


def commands(path, other):
    """Every command that reads a profile, with the file in each place."""
    return [
        ["summary", path],
        ["summary", "--json", path],
        ["line-profile", path],
        ["export", path, "--format", "csv"],
        ["export", path, "--format", "json"],
        ["export", path, "--format", "chrome"],
        ["export", path, "--format", "folded"],
        ["diff", path, path],
        ["diff", other, path],
        ["diff", path, other],
    ]


def run(args, cwd, stdout=subprocess.DEVNULL):
    return subprocess.run([BINARY, *map(str, args)], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=HANG, cwd=cwd)


def assert_one_error(proc, cmd, *fragments):
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"scope-profiler: {cmd}: "), lines[0]
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.fixture
def good(sp):
    """A real profile, with line timings, written by the tool."""
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--line-profile", "-o", "good.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / "good.h5"


def test_findings_are_kept():
    # Two heap overflows in libhdf5 (damaged chunk indexes), three endless
    # loops (a damaged global heap under a variable-length string), a
    # superblock whose driver information block claims a gigabyte, a
    # group whose local heap is at the undefined address (a NULL read), and
    # a call tree with negative totals (an overflow in summary's tree).
    names = {f.name[:14] for f in FINDINGS}
    assert {"crash-c8f7790f", "crash-de4aafe7", "timeout-47c5c8", "timeout-541ff5",
            "timeout-bb2a4f", "timeout-8b54c7", "crash-aa38b54c", "crash-981eadbd"} <= names


# Findings damaged only in the stored call tree (negative totals, on which
# summary's "(own)" row once overflowed): export streams the events and
# never reads the tree, so it succeeds; every other command refuses them.
TREE_ONLY = ("crash-981eadbd",)


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda p: p.name[:16])
def test_fuzz_findings_fail_cleanly(sp, good, finding):
    for args in commands(finding, good):
        proc = run(args, sp.tmp)
        if finding.name.startswith(TREE_ONLY) and args[0] == "export":
            assert proc.returncode == 0 and proc.stderr == "", (args, proc.stderr)
            continue
        assert_one_error(proc, args[0], "cannot read", finding.name)


def inconsistent(path, **values):
    """Rewrites values of region 'timestep' in its rank's table."""
    with h5py.File(path, "r+") as f:
        row = list(regions(f)).index("timestep")
        for k, v in values.items():
            f[f"rank0/regions/{k}"][row] = v


@pytest.mark.parametrize("values,where,says", [
    ({"num_calls": 2**62}, "rank0/events", "start_times holds "),
    ({"num_calls": -3}, "rank0/regions/timestep", "num_calls is negative"),
    ({"min_ns": -1}, "rank0/regions/timestep", "min_ns and max_ns"),
    ({"total_ns": 1}, "rank0/regions/timestep", "total_ns is not between max_ns and num_calls * max_ns"),
    ({"first_event": 1}, "rank0/regions/timestep", "first_event is 1"),
])
def test_inconsistent_values_fail_cleanly(sp, good, values, where, says):
    bad = sp.tmp / "bad.h5"
    bad.write_bytes(good.read_bytes())
    inconsistent(bad, **values)
    for args in commands(bad, good):
        proc = run(args, sp.tmp)
        assert_one_error(proc, args[0], where, says)
    # Untouched, the same file reads.
    assert run(["summary", good], sp.tmp).returncode == 0


def test_events_ending_before_they_start(sp, good):
    bad = sp.tmp / "bad.h5"
    bad.write_bytes(good.read_bytes())
    with h5py.File(bad, "r+") as f:
        at = int(f["rank0/regions/first_event"][list(regions(f)).index("timestep")]) + 1
        f["rank0/events/end_times"][at] = f["rank0/events/start_times"][at] - 1
    for fmt in ("csv", "json", "chrome", "folded"):
        proc = run(["export", bad, "--format", fmt], sp.tmp)
        assert_one_error(proc, "export", "rank0/regions/timestep", "call 1 ends before it starts")
    # The summary reads the summary attributes alone (its cost does not grow
    # with the events), which are consistent here.
    assert run(["summary", bad], sp.tmp).returncode == 0


def test_times_at_the_ends_of_64_bits_are_no_overflow(sp, good):
    """A call whose times are at INT64_MIN (a crafted file) beside calls of
    today: every reader works out times relative to the earliest with
    saturating arithmetic (speedscope's and plot's overflowed: undefined
    behaviour, which the sanitizer build of the tests reports as "runtime
    error"); each ends 0 or with one clear line."""
    bad = sp.tmp / "bad.h5"
    bad.write_bytes(good.read_bytes())
    with h5py.File(bad, "r+") as f:
        f["rank0/events/start_times"][0] = -2**63
        f["rank0/events/end_times"][0] = -2**63 + 1
    readers = commands(bad, good) + [["export", bad, "--format", "speedscope"],
                                     ["plot", bad, "-o", "charts", "--export-data"]]
    for args in readers:
        proc = run(args, sp.tmp)
        assert "runtime error" not in proc.stderr and "Sanitizer" not in proc.stderr, (args, proc.stderr)
        assert proc.returncode == 0 or (proc.returncode == 1 and len(proc.stderr.splitlines()) == 1), \
            (args, proc.returncode, proc.stderr)


def test_a_full_stdout_is_one_line(sp, good):
    for args in commands(good, good)[:-2] + [["--help"], ["--version"]]:
        with open("/dev/full", "w") as full:
            proc = run(args, sp.tmp, stdout=full)
        assert proc.returncode == 1, (args, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, (args, proc.stderr)
        cmd = args[0] if not args[0].startswith("--") else None
        prefix = f"scope-profiler: {cmd}: " if cmd else "scope-profiler: "
        assert lines[0] == prefix + "cannot write to standard output: No space left on device", lines[0]
