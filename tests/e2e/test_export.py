"""`scope-profiler export`: CSV, JSON, Chrome trace and folded stacks, read
back with the tools that consume them and checked against the HDF5 columns."""
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal

import h5py
import numpy as np
import pytest

from conftest import BINARY, one_line_error, regions, tree

NS = 1_000_000_000

NESTED = """
    import scope_profiler as sp

    @sp.profile("leaf")
    def leaf():
        return sum(range(300))

    for step in range(4):
        with sp.region("outer"):
            with sp.region('inner, "quoted"'):
                leaf()
                leaf()
            with sp.region("semi;colon"):
                leaf()
    with sp.region("gr\u00f6\u00dfe \\\\ back\\x01slash"):
        with sp.region("line\\nbreak"):
            leaf()
"""

THREADS = """
    import threading, time
    import scope_profiler as sp

    def work(n):
        for _ in range(n):
            with sp.region("work"):
                with sp.region("step"):
                    time.sleep(0.001)

    # One thread after the other: what nests in what does not depend on the
    # scheduler, and each thread still gets its own lane.
    with sp.region("main"):
        for i in range(2):
            t = threading.Thread(target=work, args=(3,), name=f"worker-{i}")
            t.start()
            t.join()
"""


def ns(text):
    """Seconds (or microseconds, scale=1000) printed with decimals -> exact integer ns."""
    return int(Decimal(text) * NS)


def h5_calls(path):
    """Every call in the file: {(name, rank): (starts, ends, lanes)} and the
    per-rank run_start_time (None when absent)."""
    calls, run_start, order = {}, {}, []
    with h5py.File(path) as f:
        for rname in sorted((k for k in f if k.startswith("rank")), key=lambda k: int(k[4:])):
            rank = int(rname[4:])
            g = f[rname]
            run_start[rank] = int(g.attrs["run_start_time"]) if "run_start_time" in g.attrs else None
            # Format version 2 (what the tool writes), or the plain layout
            # of the hand-written files: a group per region.
            v2 = f.attrs.get("format_version") == 2
            for link, rg in (regions(f, rank) if v2 else g["regions"]).items():
                name = link if v2 else rg.attrs["name"].decode() if "name" in rg.attrs else link
                starts, ends = rg["start_times"][:], rg["end_times"][:]
                lanes = rg["lanes"][:] if "lanes" in rg else np.zeros(len(starts), np.int32)
                calls[(name, rank)] = (starts.astype(np.int64), ends.astype(np.int64),
                                       lanes.astype(np.int64))
                order.append((name, rank))
    return calls, run_start, order


def origins(calls, run_start):
    first = min(int(s.min()) for s, _, _ in calls.values() if len(s))
    return {r: (v if v is not None else first) for r, v in run_start.items()}


def expected_rows(path, ranks=None):
    """(name, rank, lane, call_index, start_ns, end_ns) in the Python read
    API's order: regions by first entry over all ranks, then rank, then call."""
    calls, run_start, order = h5_calls(path)
    origin = origins(calls, run_start)
    firsts = {}
    for (name, rank), (s, _, _) in calls.items():
        if len(s):
            firsts[name] = min(firsts.get(name, int(s.min())), int(s.min()))
    names = []
    for name, _ in order:
        if name not in names:
            names.append(name)
    names.sort(key=lambda n: firsts.get(n, 0))
    rows = []
    for name in names:
        for rank in sorted(r for (n, r) in calls if n == name):
            if ranks is not None and rank not in ranks:
                continue
            s, e, l = calls[(name, rank)]
            for i in range(len(s)):
                rows.append((name, rank, int(l[i]), i, int(s[i]) - origin[rank],
                             int(e[i]) - origin[rank]))
    return rows


def folded_expected(path, ranks=None):
    """Self time per stack, by containment per rank and lane (tree.c's rules)."""
    calls, _, order = h5_calls(path)
    selfs = {}
    for rank in sorted({r for _, r in calls}):
        if ranks is not None and rank not in ranks:
            continue
        ev = []
        idx = [n for n, r in order if r == rank]
        for k, name in enumerate(idx):
            s, e, l = calls[(name, rank)]
            ev += [(int(l[i]), int(s[i]), -int(e[i]), k, name) for i in range(len(s))]
        ev.sort()
        stack, lane_now = [], None
        for lane, s, neg_e, _, name in ev:
            e = -neg_e
            if lane != lane_now:
                stack, lane_now = [], lane
            while stack and not (e <= stack[-1][1] and s < stack[-1][1]):
                stack.pop()
            label = name.replace(";", ":").replace("\n", " ").replace("\r", " ")
            path_ = (stack[-1][0] + ";" if stack else "") + label
            selfs[path_] = selfs.get(path_, 0) + (e - s)
            if stack:
                selfs[stack[-1][0]] -= e - s
            stack.append((path_, e))
    return selfs


def parse_folded(text):
    out = {}
    for line in text.splitlines():
        stack, value = line.rsplit(" ", 1)
        assert stack not in out, line
        out[stack] = int(value)
    return out


def run_script(sp, text, out, *opts):
    proc = sp("run", "-q", *opts, "-o", out, sp.script(text))
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / out


def export(sp, path, fmt, *args):
    proc = sp("export", path, "--format", fmt, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def two_ranks(sp, name="two.h5"):
    """A hand-written two-rank file (the plain layout of the seed pages), no
    run_start_time: times count from the first region entry of all ranks."""
    with h5py.File(sp.tmp / name, "w") as f:
        for rank, base in enumerate([2.0, 1.5]):
            regions = f.create_group(f"rank{rank}").create_group("regions")
            starts = (base + np.array([0.0, 0.5, 1.0])) * NS
            solve = regions.create_group("solve")
            solve.create_dataset("start_times", data=starts.astype(np.int64))
            solve.create_dataset("end_times", data=(starts + 0.2 * NS * (1 + rank)).astype(np.int64))
            inner = regions.create_group("inner")
            inner.create_dataset("start_times", data=(starts + 0.05 * NS).astype(np.int64))
            inner.create_dataset("end_times", data=(starts + 0.1 * NS).astype(np.int64))
    return sp.tmp / name


# ---- csv --------------------------------------------------------------------

def test_csv_rows_match_the_columns(sp):
    path = run_script(sp, NESTED, "n.h5")
    text = export(sp, "n.h5", "csv")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["name", "rank", "lane", "call_index", "start_s", "end_s", "duration_s"]
    got = [(r[0], int(r[1]), int(r[2]), int(r[3]), ns(r[4]), ns(r[5])) for r in rows[1:]]
    assert got == expected_rows(path)
    for r in rows[1:]:
        assert ns(r[6]) == ns(r[5]) - ns(r[4])
        assert len(r[4].split(".")[1]) == 9     # every nanosecond printed
    names = [r[0] for r in rows[1:]]
    assert names.count('inner, "quoted"') == 4
    assert names.count("leaf") == 4 * 3 + 1
    assert "line\nbreak" in names
    assert rows[1][0] == "outer"             # first entered, first listed
    # The raw text quotes per RFC 4180.
    assert '"inner, ""quoted"""' in text


def test_csv_relative_to_run_start(sp):
    path = run_script(sp, NESTED, "n.h5")
    with h5py.File(path) as f:
        run_start = int(f["rank0"].attrs["run_start_time"])
        first = int(regions(f)["outer"]["start_times"][0])
    row = next(csv.DictReader(io.StringIO(export(sp, "n.h5", "csv"), newline="")))
    assert row["name"] == "outer" and ns(row["start_s"]) == first - run_start


def test_csv_same_as_python_read_api(sp):
    run_script(sp, NESTED, "n.h5")
    dump = sp.script("""
        import json, sys, scope_profiler as sp
        res = sp.read_h5(sys.argv[1])
        json.dump([[e["name"], e["rank"], e["call_index"], round(e["start"] * 1e9)]
                   for e in res.events()], sys.stdout)
    """, name="dump.py")
    proc = sp("run", "-q", "--no-output", dump, "n.h5")
    assert proc.returncode == 0, proc.stderr
    api = json.loads(proc.stdout)
    rows = list(csv.reader(io.StringIO(export(sp, "n.h5", "csv"), newline="")))[1:]
    assert [[r[0], int(r[1]), int(r[3])] for r in rows] == [a[:3] for a in api]
    for r, a in zip(rows, api):
        assert abs(ns(r[4]) - a[3]) <= 1


def test_csv_include_exclude(sp):
    run_script(sp, NESTED, "n.h5")
    rows = list(csv.reader(io.StringIO(export(sp, "n.h5", "csv", "--include", "re:^(inner|semi)"),
                                       newline="")))[1:]
    assert {r[0] for r in rows} == {'inner, "quoted"', "semi;colon"}
    rows = list(csv.reader(io.StringIO(export(sp, "n.h5", "csv", "--exclude", "re:leaf|outer"),
                                       newline="")))[1:]
    assert "leaf" not in {r[0] for r in rows} and "outer" not in {r[0] for r in rows}
    assert len(rows) == 4 + 4 + 1 + 1


def test_csv_two_ranks_and_ranks_option(sp):
    path = two_ranks(sp)
    rows = list(csv.reader(io.StringIO(export(sp, "two.h5", "csv"), newline="")))[1:]
    got = [(r[0], int(r[1]), int(r[2]), int(r[3]), ns(r[4]), ns(r[5])) for r in rows]
    assert got == expected_rows(path)
    # No run_start_time: rank 1's first call (the earliest of all) is zero.
    assert ("solve", 1, 0, 0, 0, int(0.4 * NS)) in got
    assert [(r[0], r[1]) for r in rows[:6]] == [("solve", "0")] * 3 + [("solve", "1")] * 3
    rows = list(csv.reader(io.StringIO(export(sp, "two.h5", "csv", "--ranks", "1"),
                                       newline="")))[1:]
    assert {r[1] for r in rows} == {"1"} and len(rows) == 6
    # Selecting a rank does not move the origin.
    assert [ns(r[4]) for r in rows if r[0] == "solve"] == [0, NS // 2, NS]


def test_csv_lanes_with_track_threads(sp):
    path = run_script(sp, THREADS, "t.h5", "--track-threads")
    rows = list(csv.DictReader(io.StringIO(export(sp, "t.h5", "csv"), newline="")))
    lanes = {r["name"]: set() for r in rows}
    for r in rows:
        lanes[r["name"]].add(int(r["lane"]))
    assert lanes["main"] == {0}
    assert lanes["work"] == {1, 2} and lanes["step"] == {1, 2}
    got = [(r["name"], int(r["rank"]), int(r["lane"]), int(r["call_index"]), ns(r["start_s"]),
            ns(r["end_s"])) for r in rows]
    assert got == expected_rows(path)


# ---- json -------------------------------------------------------------------

def test_json_events_and_escaping(sp):
    path = run_script(sp, NESTED, "n.h5")
    proc = sp("export", "n.h5", "--format", "json", "-o", "n.json")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    raw = (sp.tmp / "n.json").read_bytes()
    assert "gr\u00f6\u00dfe".encode() in raw        # non-ASCII stays UTF-8
    assert b"\\u0001" in raw and b"\\\\" in raw and b"\\n" in raw
    doc = json.loads(raw)
    with h5py.File(path) as f:
        run_start = int(f["rank0"].attrs["run_start_time"])
    assert doc["file"] == "n.h5"
    assert doc["time_origin_ns"] == run_start
    assert doc["ranks"] == [{"rank": 0, "time_origin_ns": run_start}]
    assert set(doc["events"][0]) == {"name", "rank", "lane", "call_index", "start", "end",
                                     "duration"}
    calls, _, _ = h5_calls(path)
    assert {e["name"] for e in doc["events"]} == {n for n, _ in calls}
    assert "gr\u00f6\u00dfe \\ back\x01slash" in {e["name"] for e in doc["events"]}
    # Exact to the ns: compare the printed decimals, not the floats.
    text = raw.decode()
    rows = expected_rows(path)
    assert len(doc["events"]) == len(rows)
    starts = [ns(t.split(",")[0]) for t in text.split('"start": ')[1:]]
    assert starts == [r[4] for r in rows]
    for e, r in zip(doc["events"], rows):
        assert (e["name"], e["rank"], e["lane"], e["call_index"]) == r[:4]
        assert e["duration"] == pytest.approx((r[5] - r[4]) / NS, abs=1e-12)


def test_json_two_ranks_and_bad_utf8(sp):
    path = two_ranks(sp)
    with h5py.File(path, "a") as f:
        g = f["rank0/regions"].create_group("odd")
        g.attrs["name"] = np.bytes_(b"bad\xffname")
        g.create_dataset("start_times", data=np.array([3 * NS], np.int64))
        g.create_dataset("end_times", data=np.array([3 * NS + 5], np.int64))
    doc = json.loads(export(sp, "two.h5", "json"))
    first = int(1.5 * NS)
    assert doc["time_origin_ns"] == first
    assert doc["ranks"] == [{"rank": 0, "time_origin_ns": first}, {"rank": 1, "time_origin_ns": first}]
    assert "bad\ufffdname" in {e["name"] for e in doc["events"]}
    assert len(doc["events"]) == 13
    doc = json.loads(export(sp, "two.h5", "json", "--include", "nothing"))
    assert doc["events"] == []


# ---- chrome -----------------------------------------------------------------

def chrome(sp, path, *args):
    doc = json.loads(export(sp, path, "chrome", *args))
    assert doc["displayTimeUnit"] == "ns"
    ev = doc["traceEvents"]
    meta = {(e["name"], e["pid"], e.get("tid")): e["args"] for e in ev if e["ph"] == "M"}
    xs = [e for e in ev if e["ph"] == "X"]
    assert all(set(e) == {"ph", "name", "pid", "tid", "ts", "dur"} for e in xs)
    return doc, xs, meta


def test_chrome_threads(sp):
    path = run_script(sp, THREADS, "t.h5", "--track-threads")
    doc, xs, meta = chrome(sp, "t.h5")
    with h5py.File(path) as f:
        lanes = dict(item.split("=", 1) for item in f["metadata"].attrs["lanes"].split("; "))
    assert meta[("process_name", 0, 0)] == {"name": "rank 0"}
    tids = {e["tid"] for e in xs}
    assert tids == {0, 1, 2}
    for tid in tids:
        assert meta[("thread_name", 0, tid)] == {"name": lanes[str(tid)]}
    assert {meta[("thread_name", 0, t)]["name"] for t in (1, 2)} == {"worker-0", "worker-1"}
    assert {e["tid"] for e in xs if e["name"] == "main"} == {0}
    # ts and dur are microseconds printed to the nanosecond.
    text = export(sp, "t.h5", "chrome")
    ts = [Decimal(t.split(",")[0]) for t in text.split('"ts":')[1:]]
    rows = expected_rows(path)
    assert [(e["name"], e["pid"], e["tid"]) for e in xs] == [(r[0], r[1], r[2]) for r in rows]
    assert [int(t * 1000) for t in ts] == [r[4] for r in rows]
    for e, r in zip(xs, rows):
        assert e["dur"] == pytest.approx((r[5] - r[4]) / 1000, abs=1e-6)


def test_chrome_two_ranks(sp):
    two_ranks(sp)
    doc, xs, meta = chrome(sp, "two.h5")
    assert {e["pid"] for e in xs} == {0, 1}
    assert meta[("process_name", 0, 0)] == {"name": "rank 0"}
    assert meta[("process_name", 1, 0)] == {"name": "rank 1"}
    assert meta[("thread_name", 1, 0)] == {"name": "lane 0"}
    solve1 = sorted(e["ts"] for e in xs if e["pid"] == 1 and e["name"] == "solve")
    assert solve1 == [0, 500000, 1000000]
    assert {e["dur"] for e in xs if e["pid"] == 1 and e["name"] == "solve"} == {400000}
    doc, xs, meta = chrome(sp, "two.h5", "--ranks", "0")
    assert {e["pid"] for e in xs} == {0} and ("process_name", 1, 0) not in meta


# ---- folded -----------------------------------------------------------------

def root_total(path, ranks=None):
    """The summed durations of the calls that nest in no other call of their
    rank and lane."""
    calls, _, _ = h5_calls(path)
    total = 0
    for rank in {r for _, r in calls}:
        if ranks is not None and rank not in ranks:
            continue
        ev = sorted((int(l[i]), int(s[i]), -int(e[i]))
                    for (n, r), (s, e, l) in calls.items() if r == rank for i in range(len(s)))
        stack, lane_now = [], None
        for lane, s, neg_e in ev:
            e = -neg_e
            if lane != lane_now:
                stack, lane_now = [], lane
            while stack and not (e <= stack[-1] and s < stack[-1]):
                stack.pop()
            if not stack:
                total += e - s
            stack.append(e)
    return total


def test_folded_nested(sp):
    path = run_script(sp, NESTED, "n.h5")
    got = parse_folded(export(sp, "n.h5", "folded"))
    assert got == folded_expected(path)
    assert "outer;semi:colon;leaf" in got and "outer;inner, \"quoted\";leaf" in got
    assert all(v >= 0 for v in got.values())
    assert sum(got.values()) == root_total(path)
    # Against the call tree the recorder stored: a node's total is the sum
    # of the self times of its stack and every stack below it.
    with h5py.File(path) as f:
        parent, region, _, total = zip(*tree(f))
    paths = []
    for i in range(len(parent)):
        name = region[i].replace(";", ":").replace("\n", " ")
        paths.append(name if parent[i] < 0 else paths[parent[i]] + ";" + name)
    for p, tot in zip(paths, total):
        assert sum(v for k, v in got.items() if k == p or k.startswith(p + ";")) == tot, p


def test_folded_threads_are_roots_in_their_lanes(sp):
    path = run_script(sp, THREADS, "t.h5", "--track-threads")
    got = parse_folded(export(sp, "t.h5", "folded"))
    assert set(got) == {"main", "work", "work;step"}
    assert got == folded_expected(path)
    assert sum(got.values()) == root_total(path)


def test_folded_ranks_merge_and_narrow(sp):
    path = two_ranks(sp)
    got = parse_folded(export(sp, "two.h5", "folded"))
    assert got == folded_expected(path)
    assert set(got) == {"solve", "solve;inner"}
    assert sum(got.values()) == root_total(path) == int(3 * 0.2 * NS + 3 * 0.4 * NS)
    one = parse_folded(export(sp, "two.h5", "folded", "--ranks", "1"))
    assert one == folded_expected(path, ranks={1})
    assert sum(one.values()) == root_total(path, ranks={1}) == int(3 * 0.4 * NS)
    # A region left out hands its children to its parent.
    assert parse_folded(export(sp, "two.h5", "folded", "--exclude", "solve")) == {
        "inner": 6 * int(0.05 * NS)}


# ---- output and errors ------------------------------------------------------

def test_output_file_equals_stdout(sp):
    run_script(sp, NESTED, "n.h5")
    for fmt in ("csv", "json", "chrome", "folded"):
        out = export(sp, "n.h5", fmt)
        proc = sp("export", "n.h5", "-f", fmt, "-o", f"out.{fmt}")
        assert proc.returncode == 0 and proc.stdout == "", proc.stderr
        assert (sp.tmp / f"out.{fmt}").read_text() == out
    assert not list(sp.tmp.glob("*.tmp.*"))


def test_output_unwritable_leaves_nothing(sp):
    run_script(sp, NESTED, "n.h5")
    before = sorted(p.name for p in sp.tmp.iterdir())
    proc = sp("export", "n.h5", "--format", "csv", "-o", "missing/out.csv")
    assert proc.returncode == 1
    one_line_error(proc, "export", "missing/out.csv")
    (sp.tmp / "afile").write_text("x")
    proc = sp("export", "n.h5", "--format", "csv", "-o", "afile/out.csv")
    assert proc.returncode == 1
    one_line_error(proc, "export", "afile/out.csv")
    assert sorted(p.name for p in sp.tmp.iterdir()) == sorted(before + ["afile"])
    # A typo must not turn the profile into its own export.
    data = (sp.tmp / "n.h5").read_bytes()
    proc = sp("export", "n.h5", "--format", "csv", "-o", "./n.h5")
    assert proc.returncode == 1
    one_line_error(proc, "export", "./n.h5")
    assert (sp.tmp / "n.h5").read_bytes() == data


def test_output_replaces_an_earlier_export_and_nothing_else(sp):
    """-o replaces an earlier export of any format (exporting again), an
    empty file, a FIFO or /dev/stdout in place; a file that is no export (the
    user's script, notes, a symlink to one) is refused with one line and
    left as it was, unless --force (a typo clobbered the script before)."""
    run_script(sp, NESTED, "n.h5")
    fmts = ("csv", "json", "chrome", "folded", "speedscope")
    for first in fmts:
        assert sp("export", "n.h5", "-f", first, "-o", "out.x").returncode == 0
        for then in fmts:
            proc = sp("export", "n.h5", "-f", then, "-o", "out.x")
            assert proc.returncode == 0, (first, then, proc.stderr)
            assert (sp.tmp / "out.x").read_text() == export(sp, "n.h5", then)
            assert sp("export", "n.h5", "-f", first, "-o", "out.x").returncode == 0
    (sp.tmp / "empty.csv").write_text("")
    assert sp("export", "n.h5", "-f", "csv", "-o", "empty.csv").returncode == 0
    # Names of any script, a name of digits alone among them: its folded export again
    run_script(sp, "import scope_profiler as sp\nfor n in ['расчёт', '计算', '1', 'β']:\n"
               "    with sp.region(n):\n        pass\n", "names.h5")
    for fmt in fmts:
        for _ in range(2):
            proc = sp("export", "names.h5", "-f", fmt, "-o", f"names.{fmt}")
            assert proc.returncode == 0, (fmt, proc.stderr)
    script = "import numpy\nprint('my analysis')\n"
    for name, text in (("analysis.py", script), ("notes.txt", "to do: profile the solver\n"),
                       ("data.csv", "a,b\n1,2\n"), ("data.txt", "1.5 2\n3.5 4\n")):
        (sp.tmp / name).write_text(text)
        (sp.tmp / f"link-{name}").symlink_to(name)
        for target in (name, f"link-{name}"):
            for fmt in fmts:
                proc = sp("export", "n.h5", "-f", fmt, "-o", target)
                assert proc.returncode == 1, (target, fmt)
                one_line_error(proc, "export", target, "not an export", "--force")
                assert (sp.tmp / name).read_text() == text
    assert not list(sp.tmp.glob("*.tmp.*"))
    proc = sp("export", "n.h5", "-f", "csv", "-o", "analysis.py", "--force")
    assert proc.returncode == 0, proc.stderr
    assert (sp.tmp / "analysis.py").read_text() == export(sp, "n.h5", "csv")


def test_failure_midway_keeps_old_output(sp):
    # The second region's summary attributes are fine, its columns are not:
    # this shows only once the first region has been written.
    with h5py.File(sp.tmp / "bad.h5", "w") as f:
        regions = f.create_group("rank0").create_group("regions")
        for name, s, e in [("good", [10, 20], [15, 25]), ("bad", [30, 40], [35, 39])]:
            g = regions.create_group(name)
            g.create_dataset("start_times", data=np.array(s, np.int64))
            g.create_dataset("end_times", data=np.array(e, np.int64))
            for k, v in dict(num_calls=2, total_ns=10, min_ns=5, max_ns=5, first_start_ns=s[0],
                             last_end_ns=e[-1]).items():
                g.attrs[k] = np.int64(v)
            g.attrs["mean_ns"], g.attrs["std_ns"] = 5.0, 0.0
    old = "name,rank,lane,call_index,start_s,end_s,duration_s\nold,0,0,0,1,2,1\n"   # an earlier export
    (sp.tmp / "out.csv").write_text(old)
    proc = sp("export", "bad.h5", "--format", "csv", "-o", "out.csv")
    assert proc.returncode == 1
    one_line_error(proc, "export", "bad", "ends before it starts")
    assert (sp.tmp / "out.csv").read_text() == old
    assert not list(sp.tmp.glob("*.tmp.*"))


def test_full_stdout_is_an_error(sp):
    run_script(sp, NESTED, "n.h5")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([BINARY, "export", "n.h5", "--format", "csv"], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=sp.tmp)
    assert proc.returncode == 1
    assert "standard output" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_usage_and_file_errors(sp):
    run_script(sp, NESTED, "n.h5")
    proc = sp("export", "n.h5", "--format", "xml")
    assert proc.returncode == 2
    one_line_error(proc, "export", "xml")
    for args in (["n.h5"], [], ["n.h5", "n.h5", "-f", "csv"], ["n.h5", "-f", "csv", "--nope"],
                 ["n.h5", "-f"], ["n.h5", "-f", "csv", "--include", "re:("],
                 ["n.h5", "-f", "csv", "--ranks", "x"]):
        proc = sp("export", *args)
        assert proc.returncode == 2, args
        one_line_error(proc, "export")
    proc = sp("export", "missing.h5", "--format", "csv")
    assert proc.returncode == 1
    one_line_error(proc, "export", "missing.h5")
    assert proc.stdout == ""
    proc = sp("export", "n.h5", "--format", "csv", "--ranks", "3")
    assert proc.returncode == 1
    one_line_error(proc, "export", "rank")
    proc = sp("export", "--help")
    assert proc.returncode == 0 and "--format" in proc.stdout
    assert max(len(l) for l in proc.stdout.splitlines()) <= 80


def test_region_without_events_is_an_error(sp):
    with h5py.File(sp.tmp / "agg.h5", "w") as f:
        f.attrs["format"] = np.bytes_("scope-profiler")
        f.attrs["format_version"] = np.int32(1)
        g = f.create_group("rank0").create_group("regions").create_group("solve")
        for k, v in dict(num_calls=3, total_ns=30, min_ns=10, max_ns=10, first_start_ns=0,
                         last_end_ns=50).items():
            g.attrs[k] = np.int64(v)
        g.attrs["mean_ns"], g.attrs["std_ns"] = 10.0, 0.0
    for fmt in ("csv", "folded"):
        proc = sp("export", "agg.h5", "--format", fmt)
        assert proc.returncode == 1
        one_line_error(proc, "export", "solve", "start_times")
        assert proc.stdout == ""


def big_profile(sp, n):
    """A file of n calls of one region, written with h5py (quick)."""
    starts = np.arange(n, dtype=np.int64) * 1000 + 10**12
    with h5py.File(sp.tmp / "big.h5", "w") as f:
        f.attrs["format"] = np.bytes_("scope-profiler")
        f.attrs["format_version"] = np.int32(1)
        g = f.create_group("rank0").create_group("regions").create_group("tick")
        g.create_dataset("start_times", data=starts)
        g.create_dataset("end_times", data=starts + 500)
    return sp.tmp / "big.h5"


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_while_exporting_leaves_no_temporary_file(sp, sig):
    """Ctrl-C (or SIGTERM, SIGHUP) while export -o writes: the process ends
    by the signal and its OUT.tmp.PID goes with it (it stayed, until the
    next export to that OUT); OUT keeps what it had."""
    big_profile(sp, 3_000_000)
    old = "name,rank,lane,call_index,start_s,end_s,duration_s\n"
    (sp.tmp / "out.csv").write_text(old)
    proc = subprocess.Popen([BINARY, "export", "big.h5", "--format", "csv", "-o", "out.csv"], cwd=sp.tmp,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list(sp.tmp.glob("out.csv.tmp.*")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)   # the export has its temporary file open
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -getattr(signal, sig), err
    assert sorted(p.name for p in sp.tmp.iterdir()) == ["big.h5", "out.csv"]
    assert (sp.tmp / "out.csv").read_text() == old


def test_bounded_memory_two_million_events(sp):
    n = 2_000_000
    starts = np.arange(n, dtype=np.int64) * 1000 + 10**12
    ends = starts + 500
    with h5py.File(sp.tmp / "big.h5", "w") as f:
        f.attrs["format"] = np.bytes_("scope-profiler")
        f.attrs["format_version"] = np.int32(1)
        r = f.create_group("rank0")
        r.attrs["run_start_time"] = np.int64(10**12)
        g = r.create_group("regions").create_group("tick")
        g.create_dataset("start_times", data=starts)
        g.create_dataset("end_times", data=ends)
        for k, v in dict(num_calls=n, total_ns=500 * n, min_ns=500, max_ns=500,
                         first_start_ns=int(starts[0]), last_end_ns=int(ends[-1])).items():
            g.attrs[k] = np.int64(v)
        g.attrs["mean_ns"], g.attrs["std_ns"] = 500.0, 0.0
    # A fresh process measures only the export's peak RSS.
    probe = ("import resource, subprocess, sys\n"
             "rc = subprocess.run(sys.argv[1:]).returncode\n"
             "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", probe, BINARY, "export", "big.h5", "--format", "csv",
                           "-o", "big.csv"], capture_output=True, text=True, cwd=sp.tmp, timeout=300)
    rc, peak_kb = map(int, proc.stdout.split())
    assert rc == 0, proc.stderr
    size = os.path.getsize(sp.tmp / "big.csv")
    with open(sp.tmp / "big.csv") as f:
        assert next(f) == "name,rank,lane,call_index,start_s,end_s,duration_s\n"
        assert next(f) == "tick,0,0,0,0.000000000,0.000000500,0.000000500\n"
        lines = 2 + sum(1 for _ in f)
    assert lines == n + 1
    # All rows as text would be ~100 MB; the columns alone 32 MB.
    assert size > 90 * 2**20
    assert peak_kb * 1024 < size / 2.5, (peak_kb, size)


# ---- speedscope ---------------------------------------------------------------

def speedscope(sp, path, *args):
    """speedscope's file, loaded, each evented profile checked by structure:
    events in time order within [startValue, endValue], every open closed by
    a close of the same frame, innermost first. Returns (doc, {profile name:
    [(frame name, open at, close at, depth)]})."""
    doc = json.loads(export(sp, path, "speedscope", *args))
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = [f["name"] for f in doc["shared"]["frames"]]
    assert len(set(frames)) == len(frames)
    calls = {}
    for p in doc["profiles"]:
        assert p["type"] == "evented" and p["unit"] == "nanoseconds"
        assert p["startValue"] <= p["endValue"]
        stack, last, got = [], p["startValue"], []
        for e in p["events"]:
            assert e["type"] in ("O", "C") and 0 <= e["frame"] < len(frames)
            assert isinstance(e["at"], int) and last <= e["at"] <= p["endValue"]
            last = e["at"]
            if e["type"] == "O":
                stack.append((e["frame"], e["at"]))
            else:
                frame, at = stack.pop()
                assert frame == e["frame"]
                got.append((frames[frame], at, e["at"], len(stack)))
        assert stack == []
        calls[p["name"]] = sorted(got)
    return doc, calls


def test_speedscope_nested_calls_are_the_files(sp):
    path = run_script(sp, NESTED, "n.h5")
    doc, calls = speedscope(sp, "n.h5")
    assert list(calls) == ["rank 0"] and doc["name"] == "n.h5"
    h5, run_start, _ = h5_calls(path)
    origin = origins(h5, run_start)[0]
    want = sorted((name, int(s) - origin, int(e) - origin)
                  for (name, _), (ss, es, _) in h5.items() for s, e in zip(ss, es))
    assert [c[:3] for c in calls["rank 0"]] == want
    # The nesting is the folded export's: leaf two deep under inner, three
    # in all under outer's regions.
    depth = {}
    for name, _, _, d in calls["rank 0"]:
        depth.setdefault(name, set()).add(d)
    assert depth["outer"] == {0} and depth['inner, "quoted"'] == {1} and depth["leaf"] == {2}


def test_speedscope_a_profile_per_rank_and_lane(sp):
    run_script(sp, THREADS, "t.h5", "--track-threads")
    _, calls = speedscope(sp, "t.h5")
    assert list(calls) == ["rank 0, lane 0", "rank 0, lane 1", "rank 0, lane 2"]
    assert {c[0] for c in calls["rank 0, lane 0"]} == {"main"}
    for lane in ("rank 0, lane 1", "rank 0, lane 2"):
        assert [(c[0], c[3]) for c in calls[lane]] == [("step", 1), ("step", 1), ("step", 1),
                                                       ("work", 0), ("work", 0), ("work", 0)]
    two_ranks(sp)
    _, calls = speedscope(sp, "two.h5")
    assert list(calls) == ["rank 0", "rank 1"]
    _, calls = speedscope(sp, "two.h5", "--ranks", "1", "--include", "solve")
    assert list(calls) == ["rank 1"] and {c[0] for c in calls["rank 1"]} == {"solve"}


def test_speedscope_of_aggregates_says_why_not(sp):
    run_script(sp, NESTED, "a.h5", "--aggregate")
    proc = sp("export", "a.h5", "--format", "speedscope")
    assert proc.returncode == 1 and proc.stdout == ""
    one_line_error(proc, "export", "aggregates", "speedscope")
