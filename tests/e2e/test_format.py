"""The profile as plain h5py reads it (format version 2, man 5
scope-profiler-format): the same calls as `export --format csv` gives, the
table's summaries agreeing with them; and a file of format version 1, as
earlier releases wrote it, read by every reader as before."""
import csv
import io
import json
from decimal import Decimal

import h5py
import numpy as np
import pytest

NS = 1_000_000_000

# Nested regions, a recursion, a worker thread (lanes), a region lost to
# nothing, names with a slash and a percent sign.
SCRIPT = """
    import threading
    import scope_profiler as sp

    @sp.profile("fib")
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def work():
        for _ in range(30):
            with sp.region("io/write"):
                pass

    t = threading.Thread(target=work)
    t.start()
    for step in range(50):
        with sp.region("timestep"):
            with sp.region("solve 100%"):
                fib(6)
    t.join()
"""


def h5py_calls(path):
    """Every call, as a plain h5py user reads it (the man page's recipe):
    [(name, rank, lane, call_index, start_ns, end_ns)] per rank, region
    after region in the table's order."""
    out = []
    with h5py.File(path) as f:
        assert f.attrs["format_version"] == 2
        ranks = sorted(int(k[4:]) for k in f if k.startswith("rank"))
        for rank in ranks:
            t, ev = f[f"rank{rank}/regions"], f[f"rank{rank}/events"]
            starts, ends = ev["start_times"][:], ev["end_times"][:]
            lanes = ev["lanes"][:] if "lanes" in ev else np.zeros(len(starts), np.int32)
            for name, first, n, agg in zip(t["name"].asstr()[:], t["first_event"][:], t["num_calls"][:],
                                           t["aggregate"][:]):
                assert not agg
                for k in range(n):
                    out.append((name, rank, int(lanes[first + k]), k, int(starts[first + k]),
                                int(ends[first + k])))
    return out


def csv_calls(sp, path):
    """The same from `export --format csv` (seconds from the run's start,
    printed exactly), back in nanoseconds."""
    proc = sp("export", path, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / path) as f:
        origin = min(int(f[k].attrs["run_start_time"]) for k in f if k.startswith("rank"))
    rows = csv.DictReader(io.StringIO(proc.stdout, newline=""))
    return [(r["name"], int(r["rank"]), int(r["lane"]), int(r["call_index"]),
             origin + int(Decimal(r["start_s"]) * NS), origin + int(Decimal(r["end_s"]) * NS))
            for r in rows]


@pytest.mark.parametrize("compression", ["none", "auto"])
def test_h5py_reads_the_calls_export_csv_writes(sp, compression):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--track-threads", "--compression", compression, "-o", "p.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    ours = h5py_calls(sp.tmp / "p.h5")
    theirs = csv_calls(sp, "p.h5")
    assert len(ours) == 50 + 50 + 50 * 25 + 30
    assert sorted(ours) == sorted(theirs)
    # Each row's summary is that of its calls, and the tree names rows.
    with h5py.File(sp.tmp / "p.h5") as f:
        t = f["rank0/regions"]
        names = list(t["name"].asstr()[:])
        assert sorted(names) == ["fib", "io/write", "solve 100%", "timestep"]
        for i, name in enumerate(names):
            d = [e - s for n, _, _, _, s, e in ours if n == name]
            assert t["num_calls"][i] == len(d) and t["total_ns"][i] == sum(d)
            assert t["min_ns"][i] == min(d) and t["max_ns"][i] == max(d)
            assert t["mean_ns"][i] == pytest.approx(np.mean(d)) and t["std_ns"][i] == pytest.approx(np.std(d))
            assert t["first_start_ns"][i] == min(s for n, *_, s, e in ours if n == name)
        tree = f["rank0/tree"]
        per_region = {}
        for r, c in zip(tree["region"][:], tree["calls"][:]):
            per_region[names[r]] = per_region.get(names[r], 0) + int(c)
        assert per_region == {n: int(t["num_calls"][i]) for i, n in enumerate(names)}
        # The worker's calls in their own lane, the main thread's in lane 0.
        assert {lane for n, _, lane, *_ in ours if n == "io/write"} == {1}
        assert {lane for n, _, lane, *_ in ours if n != "io/write"} == {0}


def escape(name):
    """A region name as version 1's link (the reader unescapes it)."""
    name = name.replace("%", "%25").replace("/", "%2F")
    return "%2E" if name == "." else name


def to_version_1(src, dst):
    """Rewrites a version 2 profile in the layout of format version 1: a
    group per region with its summary as attributes and its own columns,
    the tree's regions by name."""
    with h5py.File(src) as f, h5py.File(dst, "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        g.attrs["format_version"] = np.int32(1)
        f.copy("metadata", g)
        for rk in (k for k in f if k.startswith("rank")):
            out = g.create_group(rk)
            for k, v in f[rk].attrs.items():
                out.attrs[k] = v
            t, ev = f[rk]["regions"], f[rk]["events"]
            names = list(t["name"][:])
            regions = out.create_group("regions", track_order=True)
            for i, name in enumerate(names):
                r = regions.create_group(escape(name.decode()))
                r.attrs["name"] = np.bytes_(name)
                for k in ("num_calls", "total_ns", "min_ns", "max_ns", "first_start_ns", "last_end_ns"):
                    r.attrs[k] = np.int64(t[k][i])
                for k in ("mean_ns", "std_ns"):
                    r.attrs[k] = np.float64(t[k][i])
                if t["dropped_events"][i]:
                    r.attrs["dropped_events"] = np.int64(t["dropped_events"][i])
                first, n = int(t["first_event"][i]), int(t["num_calls"][i])
                for col in ev:
                    r.create_dataset(col, data=ev[col][first:first + n])
            tree = out.create_group("tree")
            for col in ("parent", "calls", "total_ns"):
                tree.create_dataset(col, data=f[rk]["tree"][col][:])
            tree.create_dataset("region", data=np.array([names[r] for r in f[rk]["tree"]["region"][:]]))


def test_version_1_files_read_as_before(sp):
    sp.script(SCRIPT)
    proc = sp("run", "-q", "--track-threads", "-o", "v2.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    to_version_1(sp.tmp / "v2.h5", sp.tmp / "v1.h5")
    for command in (["summary"], ["summary", "--json"], ["export", "--format", "csv"],
                    ["export", "--format", "folded"], ["export", "--format", "chrome"]):
        a, b = sp(*command, "v1.h5"), sp(*command, "v2.h5")
        assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
        assert a.stdout.replace("v1.h5", "v2.h5") == b.stdout, command
    # The Python read API: the same calls and summaries.
    reader = sp.script("""
        import json, sys, scope_profiler as sp
        r = sp.read_h5(sys.argv[1])
        print(json.dumps({"format": r.format_version,
                          "events": [[e["name"], e["start"], e["end"]] for e in r.events()]}))
    """, name="reader.py")
    docs = []
    for name in ("v1.h5", "v2.h5"):
        out = sp("run", "-q", "--no-output", reader, name)
        assert out.returncode == 0, out.stderr
        docs.append(json.loads(out.stdout))
    assert [d["format"] for d in docs] == [1, 2]
    assert docs[0]["events"] == docs[1]["events"]
    # diff between the two versions of one run: nothing changed.
    d = sp("diff", "--json", "v1.h5", "v2.h5")
    assert d.returncode == 0, d.stderr
    regions = json.loads(d.stdout)["regions"]
    assert len(regions) == 4 and all(r["a"]["total_s"] == r["b"]["total_s"] for r in regions)
