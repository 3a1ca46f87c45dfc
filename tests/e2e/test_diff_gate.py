"""`diff --fail-above` as a CI gate: only differences above the bound and
outside the run-to-run noise fail it (the --min-time floor, the one-sided
Mann-Whitney test on the per-call durations), and the table's notes say how
each region was judged."""
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT, one_line_error, regions

MS = 1_000_000
EXAMPLE = ROOT / "examples" / "timestep.py"
# Many short calls: the test has calls to judge, and an interrupted call is
# one of 200.
ARGS = ["--steps", "200", "--size", "1000"]


def run_pair(sp, script_a=EXAMPLE, script_b=EXAMPLE):
    """a.h5 and b.h5 from two runs one after the other on one CPU, so that both meet the
    machine in the same state as far as can be: a shared machine's cores
    change speed by tens of percent for whole seconds, which no test within
    one run can tell from a slower program (man scope-profiler-diff, GATE)."""
    # One after the other on one CPU: two CPUs of a shared VM can run at
    # lastingly different speeds (1.5x was seen), and two runs side by side
    # on one CPU interrupt each other's calls.
    cpu = min(os.sched_getaffinity(0))
    for out, script in (("a.h5", script_a), ("b.h5", script_b)):
        proc = subprocess.run([BINARY, "run", "-q", "-o", out, str(script), *ARGS], cwd=sp.tmp,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=120, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        assert proc.returncode == 0, proc.stderr


def fastest(path):
    """{region: the mean of its fastest tenth of calls in ns}, and
    {region: its total in ns}, read with h5py: what the gate judges (man
    scope-profiler-diff, GATE)."""
    with h5py.File(path) as f:
        out, total = {}, {}
        for name, r in regions(f).items():
            d = np.sort(r["end_times"] - r["start_times"])
            out[name] = float(d[:-(-len(d) // 10)].mean())
            total[name] = float(d.sum())
        return out, total


def made_pair(sp, want, **kw):
    """Pairs of runs until want(fastest A, fastest B) holds for an A and a B
    of any of them, kept as a.h5 and b.h5: a pair that shows what the test
    means by its own fastest calls (a run made while a core ran slower
    throughout does not). A run takes a tenth of a second; at a load of 10
    (CI's chroot builds and benchmarks beside it) ten pairs in a row were
    all disturbed once, so it may take many, and any A may meet any B."""
    runs = {"a": [], "b": []}
    for attempt in range(100):
        run_pair(sp, **kw)
        for side in runs:
            kept = sp.tmp / f"{side}{attempt}.h5"
            os.replace(sp.tmp / f"{side}.h5", kept)
            runs[side].append((kept, fastest(kept)))
        for i, (path_a, a) in enumerate(runs["a"]):
            for j, (path_b, b) in enumerate(runs["b"]):
                if attempt in (i, j) and want(a, b):
                    shutil.copyfile(path_a, sp.tmp / "a.h5")
                    shutil.copyfile(path_b, sp.tmp / "b.h5")
                    return
    pytest.fail(f"a hundred pairs of runs were all disturbed: last {a} / {b}")


def slower_solve(sp):
    """The example with solve made twice as slow (twice the iterations)."""
    text = EXAMPLE.read_text()
    assert "for _ in range(iterations):" in text
    return sp.script(text.replace("for _ in range(iterations):", "for _ in range(2 * iterations):"),
                     name="slower.py")


def test_region_twice_as_slow_fails_and_is_named(sp):
    # solve doubled against assemble, which did not change: a pair whose
    # runs met cores of different speeds shows it too (the gate then sees
    # solve grow all the more, or a little less, but still past 10 %)
    # The pair is kept when its fastest calls show what the test means:
    # solve doubled, assemble (what the runs share) within 6 % both ways, so
    # that neither direction's gate can see it pass 10 %.
    # The gate also asks the total to grow past the bound: a run disturbed
    # throughout (a load of 10 beside it) can have A's total above B's
    # while the fastest calls show the doubling; such a pair is not kept.
    doubled = lambda a, b: 1.7 < (b[0]["solve"] / a[0]["solve"]) / (b[0]["assemble"] / a[0]["assemble"]) < 2.3 \
        and 0.94 < b[0]["assemble"] / a[0]["assemble"] < 1.06 and b[1]["solve"] > 1.3 * a[1]["solve"]
    made_pair(sp, doubled, script_a=EXAMPLE, script_b=slower_solve(sp))
    # checkpoint writes a file: on a loaded machine its fastest call can
    # grow past solve's doubling, and the gate names the largest growth
    # first; it is what the test does not control, so it is left out.
    proc = sp("diff", "a.h5", "b.h5", "--fail-above", "10", "--exclude", "checkpoint")
    assert proc.returncode == 3, proc.stdout
    one_line_error(proc, "diff", "'solve' grew by", "in its fastest calls (p < 0.001;",
                   "--fail-above 10%")
    assert proc.stderr.startswith("scope-profiler: diff: 'solve' grew by")
    notes = proc.stdout[proc.stdout.index("--fail-above 10% judges"):]
    above = next(l for l in notes.splitlines() if l.startswith("  above the bound:"))
    assert above.startswith("  above the bound: solve (")
    doc = json.loads(sp("diff", "--json", "a.h5", "b.h5", "--fail-above", "10",
                        "--exclude", "checkpoint").stdout)
    solve = next(r for r in doc["regions"] if r["name"] == "solve")
    assert solve["verdict"] == "above" and solve["above_bound"] is True
    assert solve["p_value"] < 0.01
    assert doc["min_time_s"] >= 0.001
    # Made faster: passes.
    proc = sp("diff", "b.h5", "a.h5", "--fail-above", "10", "--exclude", "checkpoint")
    assert proc.returncode == 0, proc.stderr


def write(path, regions, ranks=1):
    """regions: {name: [duration in ns, ...]}, the calls one after another."""
    with h5py.File(path, "w") as f:
        for rank in range(ranks):
            g = f.create_group(f"rank{rank}/regions")
            for name, durations in regions.items():
                d = np.asarray(durations, np.int64)
                starts = np.arange(len(d), dtype=np.int64) * 300 * MS
                r = g.create_group(name)
                r.create_dataset("start_times", data=starts)
                r.create_dataset("end_times", data=starts + d)


def notes(out):
    return out[out.index("--fail-above"):]


def test_one_slow_call_is_noise(sp):
    base = [20 * MS + i * MS // 20 for i in range(1, 81)]   # 1762 ms in all
    one_slow = base[:-1] + [base[-1] + sum(base) // 5]       # +20 %: one call
    all_slow = [d * 3 // 2 for d in base]             # +50 %: every call
    twice = base + base                               # +100 %: twice the calls
    write(sp.tmp / "a.h5", {"work": base})
    write(sp.tmp / "noise.h5", {"work": one_slow})
    write(sp.tmp / "slow.h5", {"work": all_slow})
    write(sp.tmp / "twice.h5", {"work": twice})
    proc = sp("diff", "a.h5", "noise.h5", "--fail-above", "10")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    line = next(l for l in notes(proc.stdout).splitlines() if "within the noise" in l)
    assert "work (+20.0%, fastest " in line and "p = " in line
    doc = json.loads(sp("diff", "--json", "a.h5", "noise.h5", "--fail-above", "10").stdout)
    work = doc["regions"][0]
    assert work["verdict"] == "noise" and work["above_bound"] is False
    assert work["p_value"] >= 0.01
    # Every call slower: real.
    proc = sp("diff", "a.h5", "slow.h5", "--fail-above", "10")
    assert proc.returncode == 3
    one_line_error(proc, "'work' grew by 50.0% in its fastest calls (p < 0.001")
    # But not past a bound above the growth, whatever the test says.
    proc = sp("diff", "a.h5", "slow.h5", "--fail-above", "60")
    assert proc.returncode == 0, proc.stderr
    # Called twice as often, each call as long: the total doubled, which
    # is no noise.
    proc = sp("diff", "a.h5", "twice.h5", "--fail-above", "10")
    assert proc.returncode == 3
    one_line_error(proc, "'work' grew by 100.0% in its fastest calls")
    # Without --fail-above no event column is read and nothing is judged.
    proc = sp("diff", "a.h5", "slow.h5")
    assert proc.returncode == 0 and "--fail-above" not in proc.stdout


def test_min_time_floor(sp):
    # "tiny": 80 calls of 10 us, then of 20 us; "big": 10 x 50 ms both times.
    write(sp.tmp / "a.h5", {"tiny": [10_000] * 80, "big": [50 * MS] * 10})
    write(sp.tmp / "b.h5", {"tiny": [20_000] * 80, "big": [50 * MS] * 10})
    proc = sp("diff", "a.h5", "b.h5", "--fail-above", "10")
    assert proc.returncode == 0, proc.stderr
    text = notes(proc.stdout)
    # The default: 1 % of the run span (23.7 s here) or 1 ms.
    assert "--min-time 0.237" in text
    assert "under --min-time in both files (not judged): tiny" in text
    doc = json.loads(sp("diff", "--json", "a.h5", "b.h5", "--fail-above", "10",
                        "--exclude", "checkpoint").stdout)
    by_name = {r["name"]: r for r in doc["regions"]}
    assert by_name["tiny"]["verdict"] == "below_min_time"
    assert by_name["big"]["verdict"] == "within"
    assert doc["min_time_s"] == pytest.approx(0.237, rel=0.01)
    # No floor: 80 calls each, every one twice as long: it fails.
    for t in ("0", "0s", "1us"):
        proc = sp("diff", "a.h5", "b.h5", "--fail-above", "10", "--min-time", t)
        assert proc.returncode == 3, (t, proc.stdout)
        one_line_error(proc, "'tiny' grew by 100.0% in its fastest calls (p < 0.001")
    for t in ("1s", "600ms", "2"):
        proc = sp("diff", "a.h5", "b.h5", "--fail-above", "0", "--min-time", t)
        assert proc.returncode == 0, (t, proc.stderr)
        assert "under --min-time in both files (not judged): " in proc.stdout


@pytest.mark.parametrize("value", ["", "-1ms", "abc", "1 ms", "5m", "nan", "inf", "ms", "1e300", "0x1p0s", " 1ms"])
def test_min_time_bad_values(sp, value):
    write(sp.tmp / "a.h5", {"x": [MS]})
    proc = sp("diff", "a.h5", "a.h5", "--fail-above", "10", "--min-time", value)
    assert proc.returncode == 2
    assert proc.stdout == ""
    one_line_error(proc, "diff", "--min-time")


def test_few_calls(sp):
    # One call: no test can judge it. Small in A and lifted a little over
    # the floor in B (as one interrupted call can be): not judged. Over the
    # floor in A already, or far over it in B: judged on its totals.
    # The floor here: 1 % of the 940 ms run = 9.4 ms.
    write(sp.tmp / "a.h5", {"once": [MS // 2], "step": [40 * MS], "long": [900 * MS],
                            "load": [MS // 2]})
    write(sp.tmp / "b.h5", {"once": [12 * MS], "step": [80 * MS], "long": [900 * MS],
                            "load": [300 * MS]})
    proc = sp("diff", "a.h5", "b.h5", "--fail-above", "10")
    assert proc.returncode == 3
    one_line_error(proc, "'load' grew by", "2 regions above the bound")
    text = notes(proc.stdout)
    assert "  above the bound: load (+" in text and "step (+100.0%, untested)" in text
    assert "too few calls to test, under --min-time in A (not judged): once (+" in text
    doc = json.loads(sp("diff", "--json", "a.h5", "b.h5", "--fail-above", "10",
                        "--exclude", "checkpoint").stdout)
    by_name = {r["name"]: r for r in doc["regions"]}
    assert by_name["once"]["verdict"] == "few_calls" and by_name["once"]["p_value"] is None
    assert by_name["step"]["verdict"] == "above" and by_name["step"]["p_value"] is None
    assert by_name["load"]["verdict"] == "above" and by_name["load"]["p_value"] is None


def test_aggregate_regions_are_judged_on_totals(sp):
    script = sp.script("""
        import sys, time
        import scope_profiler as sp
        for i in range(10):
            with sp.region("nap"):
                time.sleep(0.004 * float(sys.argv[1]))
    """, name="nap.py")
    for out, k in (("a.h5", "1"), ("b.h5", "3")):
        proc = sp("run", "-q", "--aggregate", "-o", out, script, k)
        assert proc.returncode == 0, proc.stderr
    proc = sp("diff", "a.h5", "b.h5", "--fail-above", "10")
    assert proc.returncode == 3, proc.stdout
    one_line_error(proc, "'nap' grew by")
    assert "fastest calls" not in proc.stderr and "p = " not in proc.stderr
    assert "above the bound: nap (+" in proc.stdout and "untested)" in proc.stdout


def fastest_tenth(path):
    """{region: the mean of its fastest tenth of calls in ns}, from h5py's
    events (regions of 10 calls or more)."""
    out = {}
    with h5py.File(path) as f:
        for name, r in regions(f).items():
            d = np.sort(r["end_times"] - r["start_times"])
            if len(d) >= 10:
                out[name] = float(d[:len(d) // 10].mean())
    return out


@pytest.mark.parametrize("pair", range(3))
def test_same_example_twice_passes(sp, pair):
    """Two runs of the same bundled example pass the gate at 10 %, pair after
    pair: neither the small regions (setup, checkpoint: under the floor) nor
    the calls interrupted in one run only (a total grown, not the calls)
    fail it. A pair is remade while its two runs met the machine at
    different speeds, which they show themselves: a region's fastest tenth
    of calls differing by more than 5 % (a shared 2-core machine's cores
    change speed for whole runs; man scope-profiler-diff, GATE: make both
    profiles on the same machine in the same state). That is the statistic
    the gate's test starts from, so what this checks is the rest: the
    floor, the totals' noise and the test not failing on what is left.
    (A screen independent of it, a fixed loop timed outside the regions
    before and after each run, disagreed with itself too often on this
    machine: two concurrent processes' cores keep different speeds.)"""
    # A pair takes a fraction of a second; on a machine at a load of 10
    # (CI's chroot builds beside it) 40 pairs in a row were all disturbed
    # once, so it may take many.
    for attempt in range(200):
        run_pair(sp)
        a, b = fastest_tenth(sp.tmp / "a.h5"), fastest_tenth(sp.tmp / "b.h5")
        if a.keys() == b.keys() and all(abs(b[k] / a[k] - 1) <= 0.05 for k in a):
            break
    else:
        pytest.fail(f"200 pairs of runs were all disturbed: last {a} / {b}")
    proc = sp("diff", "a.h5", "b.h5", "--fail-above", "10%")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""


def test_few_calls_whose_fastest_call_did_not_grow_are_noise(sp):
    """Too few calls for the test (issue 30: 4 calls of about 1 ms, a loaded
    machine lifting the total by 76 %): a region whose fastest call stayed
    within the bound is noise, whatever its total did; one whose fastest
    call grew past it, or called twice as often as fast, still fails."""
    base = [1_000_000, 1_050_000, 1_100_000, 1_250_000]
    write(sp.tmp / "a.h5", {"io.write": base, "calc": base, "more": base})
    write(sp.tmp / "b.h5", {"io.write": [1_010_000, 2_300_000, 2_200_000, 2_230_000],
                            "calc": [1_600_000, 1_650_000, 1_700_000, 1_750_000],
                            "more": base + base})
    gate = ("--fail-above", "10%", "--min-time", "1ms")
    proc = sp("diff", "a.h5", "b.h5", *gate)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    one_line_error(proc, "2 regions above the bound")
    assert "io.write" not in proc.stderr
    text = notes(proc.stdout)
    assert "within the noise (not failed): io.write (+" in text
    doc = json.loads(sp("diff", "--json", "a.h5", "b.h5", *gate).stdout)
    verdicts = {r["name"]: r["verdict"] for r in doc["regions"]}
    assert verdicts == {"io.write": "noise", "calc": "above", "more": "above"}
    # Alone, the noisy region passes the gate.
    proc = sp("diff", "a.h5", "b.h5", *gate, "--include", "io.write")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_region_whose_total_did_not_grow_past_the_bound_passes(sp):
    """The gate fails a region only where its total grew past the bound
    (as the man page says): one that got faster, or grew less, passes
    whatever its fastest calls did (before: a total down 63 % and one up
    5 % failed at 10 %, their fastest calls having doubled)."""
    write(sp.tmp / "a.h5", {"solve": [1 * MS] * 50 + [10 * MS] * 50})   # 550 ms
    write(sp.tmp / "b.h5", {"solve": [2 * MS] * 100})                     # 200 ms
    write(sp.tmp / "c.h5", {"solve": [1 * MS] * 10 + [2 * MS] * 90})     # 190 ms
    for a, b in (("a.h5", "b.h5"), ("c.h5", "b.h5")):
        proc = sp("diff", a, b, "--fail-above", "10", "--min-time", "0")
        assert proc.returncode == 0, (a, b, proc.stderr)
        [row] = json.loads(sp("diff", "--json", a, b, "--fail-above", "10", "--min-time", "0").stdout)["regions"]
        assert row["verdict"] == "within" and row["above_bound"] is False, row
    # Every call twice as long: the total grew with them, and fails.
    write(sp.tmp / "d.h5", {"solve": [2 * MS] * 50 + [20 * MS] * 50})
    assert sp("diff", "a.h5", "d.h5", "--fail-above", "10", "--min-time", "0").returncode == 3


def test_a_failure_judged_on_the_slowest_rank_says_so(sp):
    """With several ranks, a region judged by its slowest rank's growth
    (one rank slowed) says "slowest rank" in the line on stderr and under
    the table, whose figures are that rank's (before: shown as the
    region's own total)."""
    base = [1 * MS + i * 1000 for i in range(100)]
    write(sp.tmp / "a.h5", {"w": base}, ranks=3)
    with h5py.File(sp.tmp / "b.h5", "w") as f:
        for rank in range(3):
            r = f.create_group(f"rank{rank}/regions/w")
            d = np.asarray([x * 3 // 2 for x in base] if rank == 2 else base, np.int64)
            starts = np.arange(len(d), dtype=np.int64) * 300 * MS
            r.create_dataset("start_times", data=starts)
            r.create_dataset("end_times", data=starts + d)
    proc = sp("diff", "a.h5", "b.h5", "--fail-above", "20", "--min-time", "0")
    assert proc.returncode == 3
    one_line_error(proc, "'w' (slowest rank) grew by 50.0% in its fastest calls")
    line = next(l for l in notes(proc.stdout).splitlines() if "above the bound" in l)
    assert "w (slowest rank +50.0%, fastest +50.0%" in line, proc.stdout
