"""`summary`'s region table as a cProfile user reads it: a recursive region's
total counted once (cumulative time), a self column (tottime), times in
ns/µs/ms/s, long names cut in the middle; checked against the events h5py
reads from the same file."""
import json
import re

import h5py
import numpy as np
import pytest

from conftest import durations_s, regions, tree

FIB = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def main():
    fib(16)
    fib(12)

main()
"""

NESTED = """
import time
import scope_profiler as sp

def spin(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass

for _ in range(3):
    with sp.region("outer"):
        spin(0.002)
        with sp.region("inner"):
            spin(0.003)
            with sp.region("leaf"):
                spin(0.001)
        with sp.region("leaf"):
            spin(0.001)
for _ in range(1000):
    with sp.region("tiny"):
        pass
with sp.region("importlib._bootstrap_external." + "x" * 60 + "._LoaderBasics.exec_module_of_a_long_name"):
    spin(0.001)
"""


def run_ok(sp, script, out, *opts):
    path = sp.script(script)
    proc = sp("run", "-q", *opts, "-o", out, path)
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / out


def summary_json(sp, path, *opts):
    proc = sp("summary", "--json", *opts, path)
    assert proc.returncode == 0, proc.stderr
    return {r["name"]: r for r in json.loads(proc.stdout)["regions"]}


def table_rows(text):
    """{name: row} of the region table."""
    lines = text.splitlines()
    i = lines.index("Regions") + 3               # title, header, rule
    rows = {}
    while i < len(lines) and lines[i] and not lines[i].startswith("Left out"):
        rows[re.split(r"\s{2,}", lines[i])[0]] = lines[i]
        i += 1
    return rows


def durations(reg):
    return reg["end_times"].astype(np.int64) - reg["start_times"].astype(np.int64)


def self_ns_from_events(f):
    """Each region's self time from its events: every call's duration less
    that of the calls directly inside it (one thread, one lane)."""
    calls = []
    for name, reg in regions(f).items():
        calls += [(int(s), -int(e), name) for s, e in zip(reg["start_times"], reg["end_times"])]
    calls.sort()
    self_ns, stack = {}, []                  # stack: [end, name, children's time]
    def close(until):
        while stack and stack[-1][0] <= until:
            end, name, kids, start = stack.pop()
            self_ns[name] = self_ns.get(name, 0) + (end - start) - kids
            if stack:
                stack[-1][2] += end - start
    for start, neg_end, name in calls:
        close(start)
        stack.append([-neg_end, name, 0, start])
    close(float("inf"))
    return self_ns


def test_recursive_total_is_the_outermost_call(sp):
    path = run_ok(sp, FIB, "fib.h5", "--recursive")
    with h5py.File(path) as f:
        fib = regions(f)["__main__.fib"]
        d = durations(fib)
        g = f["rank0/regions"]
        row = [bytes(n).decode() for n in g["name"][:]].index("__main__.fib")
        cumulative = int(g["cumulative_ns"][row])
        raw = int(g["total_ns"][row])
        starts = fib["start_times"].astype(np.int64)
    # fib(16) and fib(12), one after the other: the two outermost calls.
    outer = int(d.max())
    first_end = starts[np.argmax(d)] + outer
    second = int(max(x for x, s in zip(d, starts) if s >= first_end))
    assert raw == d.sum()
    assert cumulative == outer + second < raw
    j = summary_json(sp, path)["__main__.fib"]
    assert round(j["total_s"] * 1e9) == cumulative
    assert round(j["raw_total_s"] * 1e9) == raw
    assert j["calls"] == len(d) == (2 * 1597 - 1) + (2 * 233 - 1)   # every call of fib(16), fib(12)
    # The text view: the same total, to three digits.
    proc = sp("summary", "--flat", "--all", path)
    row = table_rows(proc.stdout)["__main__.fib"]
    calls, total, self_ = row.split()[1], *durations_s(row)[:2]
    assert int(calls) == len(d)
    assert total == pytest.approx(cumulative / 1e9, rel=0.006)
    # fib calls nothing else: its self time is its (counted once) total.
    assert self_ == pytest.approx(cumulative / 1e9, rel=0.006)
    # main's total holds fib's once, not the raw sum.
    main = summary_json(sp, path)["__main__.main"]
    assert main["total_s"] * 1e9 >= cumulative and main["total_s"] * 1e9 < raw


def test_self_column_matches_the_events(sp):
    path = run_ok(sp, NESTED, "n.h5")
    with h5py.File(path) as f:
        want = self_ns_from_events(f)
    got = summary_json(sp, path)
    for name, ns in want.items():
        assert round(got[name]["self_s"] * 1e9) == ns, name
    # outer's self: its own spinning, about 2 ms of its 7 per call.
    assert got["outer"]["self_s"] < got["outer"]["total_s"] - 3 * 0.004
    text = sp("summary", "--flat", "--all", path).stdout
    for name, row in table_rows(text).items():
        full = next(n for n in want if n == name or "…" in name and n.endswith(name.split("…")[1]))
        assert durations_s(row)[1] == pytest.approx(want[full] / 1e9, rel=0.006, abs=1e-9), row


def test_sort_self(sp):
    path = run_ok(sp, NESTED, "n.h5")
    got = summary_json(sp, path, "--sort", "self")
    selfs = [r["self_s"] for r in got.values()]
    assert selfs == sorted(selfs, reverse=True)
    text = sp("summary", "--flat", "--sort", "self", "--all", path).stdout
    names = list(table_rows(text))
    assert names[0] == max(got, key=lambda n: got[n]["self_s"])
    assert names == [n if len(n) < 40 else names[k] for k, n in enumerate(got)]
    proc = sp("summary", "--sort", "bogus", path)
    assert proc.returncode == 2 and "total, self, calls" in proc.stderr


def test_units_and_alignment(sp):
    path = run_ok(sp, NESTED, "n.h5")
    text = sp("summary", "--all", path).stdout
    assert "0.000000" not in text and "[s]" not in text
    rows = table_rows(text)
    tiny = summary_json(sp, path)["tiny"]
    assert tiny["calls"] == 1000
    mean, lo, hi = durations_s(rows["tiny"])[2:5]
    assert mean == pytest.approx(tiny["mean_s"], rel=0.006)
    assert lo == pytest.approx(tiny["min_s"], rel=0.006) and lo > 0
    assert hi == pytest.approx(tiny["max_s"], rel=0.006)
    # Every figure has a unit (ns, µs, ms or s) and three digits.
    for row in rows.values():
        cells = re.split(r"\s{2,}", row)[2:]
        assert len(cells) == 6, row               # total, self, mean, min, max, std
        for cell in cells:
            assert re.fullmatch(r"(\d\.\d\d|\d\d\.\d|\d{1,3}) (ns|µs|ms|s)", cell), row
    assert any("µs" in r for r in rows.values()) and any(" ms" in r for r in rows.values())
    # Each table's rows are as wide as its rule ("µ" is one column).
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("─"):
            for row in lines[i + 1:]:
                if not row or row.startswith(("Left out", "(no ")):
                    break
                assert len(row) == len(line), (row, line)


def test_long_names_keep_their_end(sp):
    path = run_ok(sp, NESTED, "n.h5")
    text = sp("summary", "--all", path).stdout
    name = "importlib._bootstrap_external." + "x" * 60 + "._LoaderBasics.exec_module_of_a_long_name"
    assert name not in text
    cut = [l for l in text.splitlines() if "…" in l and "of_a_long_name" in l]
    assert len(cut) == 2, text                    # a tree row and a table row
    for line in cut:
        label = re.sub(r"^[│├└─ ]*", "", line).split("  ")[0]
        head, tail = label.split("…")
        assert name.startswith(head) and name.endswith(tail) and len(tail) > len(head)


def test_files_without_the_cumulative_column(sp):
    """Files written before cumulative_ns: the total is recomputed from the
    stored tree, or from the events when there is none either."""
    path = run_ok(sp, FIB, "fib.h5", "--recursive")
    want = summary_json(sp, path)["__main__.fib"]
    with h5py.File(path, "a") as f:
        del f["rank0/regions/cumulative_ns"]
    assert summary_json(sp, path)["__main__.fib"] == want
    with h5py.File(path, "a") as f:
        nodes = tree(f)
        del f["rank0/tree"]
    assert nodes
    assert summary_json(sp, path)["__main__.fib"] == want
    assert "note:" not in sp("summary", path).stdout
    # A damaged column is refused in one line.
    with h5py.File(path, "a") as f:
        g = f["rank0/regions"]
        g["cumulative_ns"] = g["total_ns"][:] + 1
    proc = sp("summary", path)
    assert proc.returncode == 1 and "cumulative_ns" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_read_api_keeps_both_totals(sp):
    path = run_ok(sp, FIB, "fib.h5", "--recursive")
    check = sp.script(f"""
        import scope_profiler as sp
        r = sp.read_h5({str(path)!r})
        fib = r["__main__.fib"]
        one = fib[0]
        print(one.total_duration_ns, one.cumulative_duration_ns, one.self_duration_ns)
        print(fib.total_duration, fib.cumulative_duration, fib.self_duration)
    """, "check.py")
    proc = sp("run", "-q", "--no-output", check)
    assert proc.returncode == 0, proc.stderr
    raw, cum, self_ = map(int, proc.stdout.splitlines()[0].split())
    with h5py.File(path) as f:
        d = durations(regions(f)["__main__.fib"])
    assert raw == d.sum() and cum < raw and self_ == cum
    j = summary_json(sp, path)["__main__.fib"]
    assert round(j["total_s"] * 1e9) == cum
    totals = [float(x) for x in proc.stdout.splitlines()[1].split()]
    assert totals == pytest.approx([raw / 1e9, cum / 1e9, cum / 1e9])


@pytest.mark.parametrize("length", [10**9, 10**12])
def test_std_over_ranks_is_the_calls_std_for_long_calls(sp, length):
    """The std of a region over several ranks pools each rank's moments
    (Chan et al.): for calls of 1e12 ns with a few hundred ns of spread it
    is the calls' own std (before: a sum of squares less the squared mean,
    which cancelled: 3899 ns for 581)."""
    rng = np.random.default_rng(7)
    every = []
    with h5py.File(sp.tmp / "std.h5", "w") as f:
        for rank in range(3):
            d = length + rng.integers(0, 2000, size=1000, dtype=np.int64)
            every.append(d)
            starts = np.arange(1000, dtype=np.int64) * (length + 10_000)
            g = f.create_group(f"rank{rank}/regions/w")
            g.create_dataset("start_times", data=starts)
            g.create_dataset("end_times", data=starts + d)
    doc = json.loads(sp("summary", "--json", "std.h5").stdout)
    [w] = doc["regions"]
    want = float(np.concatenate(every).std())
    assert abs(w["std_s"] * 1e9 - want) < 1.0, (w["std_s"] * 1e9, want)


def test_a_rank_whose_calls_took_no_time_is_an_infinite_imbalance(sp):
    """A region on every rank whose calls took 0 s on one: imbalance inf in
    the table, as diff says it (before: '-', diff's 'inf'); null in JSON,
    which has no inf."""
    with h5py.File(sp.tmp / "zr.h5", "w") as f:
        for rank, (s, e) in enumerate([(0, 10_000_000), (5, 5)]):
            g = f.create_group(f"rank{rank}/regions/w")
            g.create_dataset("start_times", data=np.array([s], np.int64))
            g.create_dataset("end_times", data=np.array([e], np.int64))
    row = sp("summary", "zr.h5").stdout.splitlines()[-1].split()
    assert row[0] == "w" and row[-1] == "inf", row
    [w] = json.loads(sp("summary", "--json", "zr.h5").stdout)["regions"]
    assert w["imbalance"] is None and w["ranks_present"] == 2
