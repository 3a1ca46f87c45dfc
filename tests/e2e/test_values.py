"""Per-call values in the file (format version 2): bytes allocated during
each call (`run --memory`, column events/alloc_bytes) or moved by an MPI call
(`run --mpi-calls`, events/bytes), with per region their kind, total and peak
of live bytes in the regions table. Here the columns are added with h5py to
a profile of a real run, as scope-profiler-format(5) documents them, and
what the tool reads back is checked: summary's tables and JSON, the read
API's arrays, and a damaged column refused with one line."""
import json

import h5py
import numpy as np

from conftest import one_line_error

SCRIPT = """
import scope_profiler as sp
for i in range(3):
    with sp.region("solve"):
        with sp.region("MPI_Allreduce"):
            pass
with sp.region("io"):
    pass
"""


def profile_with_values(sp):
    script = sp.script(SCRIPT)
    run = sp("run", "-q", "-o", "p.h5", script)
    assert run.returncode == 0, run.stderr
    path = sp.tmp / "p.h5"
    with h5py.File(path, "r+") as f:
        reg, ev = f["rank0/regions"], f["rank0/events"]
        names = [n.decode() for n in reg["name"][:]]
        first, calls = reg["first_event"][:], reg["num_calls"][:]
        n = len(ev["start_times"])
        kind = np.zeros(len(names), np.int8)
        total = np.zeros(len(names), np.int64)
        peak = np.full(len(names), -1, np.int64)
        alloc = np.zeros(n, np.int64)
        moved = np.zeros(n, np.int64)
        s, m, i = names.index("solve"), names.index("MPI_Allreduce"), names.index("io")
        alloc[first[s]:first[s] + calls[s]] = [1 << 20, 2 << 20, 3 << 20]
        kind[s], total[s], peak[s] = 1, 6 << 20, 9 << 20
        moved[first[m]:first[m] + calls[m]] = [8, 16, 24]
        kind[m], total[m] = 2, 48
        peak[i] = 4096
        reg["value_kind"], reg["values_total"], reg["peak_live_bytes"] = kind, total, peak
        ev["alloc_bytes"], ev["bytes"] = alloc, moved
    return path


def test_summary_shows_values(sp):
    path = profile_with_values(sp)
    out = sp("summary", "--flat", path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    alloc = text[text.index("Allocations"):text.index("MPI calls")]
    solve = next(l for l in alloc.splitlines() if l.startswith("solve "))
    assert solve.split()[1:] == ["3", "6.00", "MiB", "2.00", "MiB", "9.00", "MiB"]
    io = next(l for l in alloc.splitlines() if l.startswith("io "))
    assert io.split()[1:] == ["1", "-", "-", "4.00", "KiB"]
    mpi = text[text.index("MPI calls"):]
    row = next(l for l in mpi.splitlines() if l.startswith("MPI_Allreduce "))
    assert row.split()[1:] == ["3", "48", "B", "16", "B"]
    js = json.loads(sp("summary", "--json", path).stdout)
    by = {r["name"]: r for r in js["regions"]}
    assert by["solve"]["alloc_bytes"] == 6 << 20 and by["solve"]["peak_live_bytes"] == 9 << 20
    assert by["MPI_Allreduce"]["bytes"] == 48 and "peak_live_bytes" not in by["MPI_Allreduce"]
    assert "alloc_bytes" not in by["io"] and by["io"]["peak_live_bytes"] == 4096


def test_read_api_values(sp):
    path = profile_with_values(sp)
    check = sp.script(f"""
import scope_profiler as sp
r = sp.read_h5({str(path)!r})
solve, mpi, io = r["solve"][0], r["MPI_Allreduce"][0], r["io"][0]
assert list(solve.alloc_bytes) == [1 << 20, 2 << 20, 3 << 20], solve.alloc_bytes
assert solve.bytes is None and solve.values_total == 6 << 20
assert solve.peak_live_bytes == 9 << 20
assert list(mpi.bytes) == [8, 16, 24] and mpi.alloc_bytes is None
assert io.alloc_bytes is None and io.peak_live_bytes == 4096
s = sp.read_h5_summary({str(path)!r})
assert s["solve"][0].values_total == 6 << 20 and s["solve"][0].alloc_bytes is None
print("ok")
""", name="check.py")
    out = sp("run", "--no-output", "-q", check)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_damaged_values_refused(sp):
    path = profile_with_values(sp)
    with h5py.File(path, "r+") as f:
        k = f["rank0/regions/value_kind"]
        k[0] = 7
    out = sp("summary", path)
    assert out.returncode != 0
    one_line_error(out, "value_kind 7")
    path = profile_with_values(sp)
    with h5py.File(path, "r+") as f:
        del f["rank0/events/bytes"]
        f["rank0/events/bytes"] = np.zeros(2, np.int64)
    for cmd in (("summary", path), ("plot", path, "-o", sp.tmp / "charts")):
        out = sp(*cmd)
        if cmd[0] == "summary":
            assert out.returncode == 0, out.stderr   # a summary reads no event column
        else:
            assert out.returncode != 0
            one_line_error(out, "bytes holds 2 calls")


def test_values_total_checked_against_the_column(sp):
    """A row whose values do not sum to its values_total (summed wrapping,
    as the end of a run sums them) is damage once the events are loaded;
    a summary, reading no event column, goes on."""
    path = profile_with_values(sp)
    with h5py.File(path, "r+") as f:
        names = [n.decode() for n in f["rank0/regions/name"][:]]
        f["rank0/regions/values_total"][names.index("MPI_Allreduce")] = 47
    out = sp("summary", path)
    assert out.returncode == 0, out.stderr
    out = sp("plot", path, "-o", sp.tmp / "charts")
    assert out.returncode != 0
    one_line_error(out, "rank0/regions/MPI_Allreduce", "sum to 48, values_total says 47")
    # Values whose sum wraps past int64: their total is the wrapped sum.
    path = profile_with_values(sp)
    with h5py.File(path, "r+") as f:
        reg, ev = f["rank0/regions"], f["rank0/events"]
        names = [n.decode() for n in reg["name"][:]]
        m = names.index("MPI_Allreduce")
        first = reg["first_event"][m]
        moved = ev["bytes"][:]
        moved[first:first + 3] = [np.iinfo(np.int64).max, 2, 0]
        ev["bytes"][:] = moved
        total = reg["values_total"][:]
        total[m] = np.iinfo(np.int64).min + 1
        reg["values_total"][:] = total
    out = sp("plot", path, "-o", sp.tmp / "charts2")
    assert out.returncode == 0, out.stderr


def test_export_values(sp):
    """export: a column per kind of values in CSV (empty for the calls of
    regions without), the region's kind as a key in JSON and in a Chrome
    event's args."""
    import csv
    import io
    path = profile_with_values(sp)
    out = sp("export", "--format", "csv", path)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert list(rows[0])[-2:] == ["alloc_bytes", "bytes"]
    solve = [r for r in rows if r["name"] == "solve"]
    assert [int(r["alloc_bytes"]) for r in solve] == [1 << 20, 2 << 20, 3 << 20]
    assert all(r["bytes"] == "" for r in solve)
    mpi = [r for r in rows if r["name"] == "MPI_Allreduce"]
    assert [int(r["bytes"]) for r in mpi] == [8, 16, 24]
    assert all(r["alloc_bytes"] == "" for r in rows if r["name"] == "io")
    js = json.loads(sp("export", "--format", "json", path).stdout)
    js = js["events"] if isinstance(js, dict) else js
    assert [e["alloc_bytes"] for e in js if e["name"] == "solve"] == [1 << 20, 2 << 20, 3 << 20]
    assert all("alloc_bytes" not in e and "bytes" not in e for e in js if e["name"] == "io")
    tr = json.loads(sp("export", "--format", "chrome", path).stdout)["traceEvents"]
    assert [e["args"]["bytes"] for e in tr if e.get("name") == "MPI_Allreduce"] == [8, 16, 24]
    # Without values: the columns of before, unchanged.
    plain = sp.tmp / "plain.h5"
    assert sp("run", "-q", "-o", plain, sp.script(SCRIPT, "plain.py")).returncode == 0
    head = sp("export", "--format", "csv", plain).stdout.splitlines()[0]
    assert head == "name,rank,lane,call_index,start_s,end_s,duration_s"
