"""`scope-profiler summary`: the tree and table, from any profile file."""
import json

import h5py
import numpy as np

from conftest import ROOT, one_line_error


def make_example(sp):
    proc = sp("run", "-q", "-o", "ts.h5", ROOT / "examples" / "timestep.py", "--steps", "20",
              "--size", "2000")
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / "ts.h5"


def test_tree_and_table_of_example(sp):
    make_example(sp)
    proc = sp("summary", "ts.h5")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "timestep (20x)" in out
    assert "assemble (20x)" in out and "solve (20x)" in out
    assert "checkpoint (2x)" in out
    assert "(own)" in out
    lines = out.splitlines()
    # The tree nests assemble and solve under timestep.
    ts = next(i for i, l in enumerate(lines) if "timestep (20x)" in l)
    assert any("assemble (20x)" in l for l in lines[ts + 1:ts + 5])
    table = "\n".join(lines[next(i for i, l in enumerate(lines) if l.startswith("Regions")):])
    for col in ("calls", "total", "self", "mean", "min", "max", "std"):
        assert col in table
    assert max(len(l) for l in lines) <= 80


def test_summary_reads_no_event_columns(sp):
    make_example(sp)
    before = sp("summary", "ts.h5").stdout
    with h5py.File(sp.tmp / "ts.h5", "a") as f:
        # Every call now ends before it starts: a read of the events
        # would refuse the file.
        f["rank0/events/end_times"][...] = 0
    after = sp("summary", "ts.h5")
    assert after.returncode == 0, after.stderr
    assert after.stdout == before


def test_hand_written_two_rank_file(sp):
    # The file of 003_680d190f190136c5.txt, "Several ranks".
    NS = 1_000_000_000
    with h5py.File(sp.tmp / "two_ranks.h5", "w") as h5file:
        for rank, factor in enumerate([1.0, 1.6]):
            regions = h5file.create_group(f"rank{rank}").create_group("regions")
            starts = np.array([0.0, 0.5, 1.0]) * NS
            durations = np.array([0.2, 0.25, 0.2]) * factor * NS
            group = regions.create_group("solve")
            group.create_dataset("start_times", data=starts.astype(np.int64))
            group.create_dataset("end_times", data=(starts + durations).astype(np.int64))
    proc = sp("summary", "two_ranks.h5")
    assert proc.returncode == 0, proc.stderr
    assert "2 ranks" in proc.stdout
    assert "1.60x" in proc.stdout


def test_bad_files(sp):
    proc = sp("summary", "missing.h5")
    assert proc.returncode == 1
    one_line_error(proc, "summary", "missing.h5")
    (sp.tmp / "empty.h5").write_bytes(b"")
    (sp.tmp / "text.h5").write_text("hello, not HDF5\n" * 100)
    path = make_example(sp)
    data = path.read_bytes()
    (sp.tmp / "trunc.h5").write_bytes(data[: len(data) // 2])
    with h5py.File(sp.tmp / "other.h5", "w") as f:
        f.create_dataset("x", data=[1, 2, 3])
    for name in ("empty.h5", "text.h5", "trunc.h5", "other.h5"):
        proc = sp("summary", name)
        assert proc.returncode != 0 and proc.returncode < 128, (name, proc.returncode)
        one_line_error(proc, "summary", name)
    proc = sp("summary")
    assert proc.returncode == 2
    proc = sp("summary", "--nope", "x.h5")
    assert proc.returncode == 2


def hosted_file(path, hosts, meta=None, factors=None):
    """One rank per entry of hosts (None: no hostname attribute); solve takes
    0.2 + 0.25 + 0.2 s times the rank's factor; /metadata from meta."""
    NS = 1_000_000_000
    factors = factors or [1.0] * len(hosts)
    with h5py.File(path, "w") as f:
        for rank, host in enumerate(hosts):
            group = f.create_group(f"rank{rank}")
            if host is not None:
                group.attrs["hostname"] = host
            g = group.create_group("regions").create_group("solve")
            starts = np.array([0.0, 0.5, 1.0]) * NS
            durations = np.array([0.2, 0.25, 0.2]) * factors[rank] * NS
            g.create_dataset("start_times", data=starts.astype(np.int64))
            g.create_dataset("end_times", data=(starts + durations).astype(np.int64))
        if meta is not None:
            m = f.create_group("metadata")
            for key, value in meta.items():
                m.attrs[key] = value


FOUR = {"mpi_size": "4", "omp_num_threads": "2"}


def summary_ok(sp, *args):
    proc = sp("summary", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_hosts_and_cores(sp):
    hosted_file(sp.tmp / "h.h5", ["nodeA", "nodeA", "nodeB", "nodeB"], FOUR,
                [1.0, 1.6, 1.2, 1.0])
    out = summary_ok(sp, "h.h5")
    lines = out.splitlines()
    assert lines[1] == "4 ranks on 2 hosts, 1 region, 12 calls, run span 1.32 s"
    assert lines[2] == "hosts: nodeA: 0,1; nodeB: 2,3"
    assert lines[3] == "cores: 4 ranks × 2 OpenMP threads = 8"
    assert "1.60x" in out
    # The selected ranks only.
    out = summary_ok(sp, "h.h5", "--ranks", "0-1")
    assert "2 ranks on 1 host, " in out
    assert "\nhosts: nodeA: 0,1\n" in out
    assert "\ncores: 2 ranks × 2 OpenMP threads = 4\n" in out
    assert "Selection: 1 of 1 region; ranks 0,1 of 4" in out
    out = summary_ok(sp, "h.h5", "--ranks", "1")
    assert "\n1 rank(s), 1 region, 3 calls" in out
    assert "hosts:" not in out and "cores:" not in out and " host" not in out
    # JSON: host -> ranks.
    doc = json.loads(summary_ok(sp, "h.h5", "--json"))
    assert doc["hosts"] == {"nodeA": [0, 1], "nodeB": [2, 3]}
    assert list(doc).index("hosts") == list(doc).index("ranks") + 1
    doc = json.loads(summary_ok(sp, "h.h5", "--json", "--ranks", "1-3"))
    assert doc["hosts"] == {"nodeA": [1], "nodeB": [2, 3]}


def test_cores_from_metadata_of_either_type(sp):
    # Earlier files hold the counts as fixed-length strings (h5py: bytes),
    # files written now as integers, as the original package writes them.
    for meta in ({"mpi_size": np.bytes_(b"4"), "omp_num_threads": np.bytes_(b"2")},
                 {"mpi_size": np.int64(4), "omp_num_threads": np.int64(2)}):
        hosted_file(sp.tmp / "t.h5", ["A", "A", "B", "B"], meta)
        out = summary_ok(sp, "t.h5")
        assert "\ncores: 4 ranks × 2 OpenMP threads = 8\n" in out, meta
        doc = json.loads(summary_ok(sp, "t.h5", "--json"))
        assert doc["hosts"] == {"A": [0, 1], "B": [2, 3]}


def test_hosts_interleaved_and_unknown(sp):
    hosted_file(sp.tmp / "i.h5", ["A", "B", "A", "B"], {"omp_num_threads": "1"})
    out = summary_ok(sp, "i.h5")
    assert "\n4 ranks on 2 hosts, " in out
    assert "\nhosts: A: 0,2; B: 1,3\n" in out
    assert "\ncores: 4 ranks × 1 OpenMP thread = 4\n" in out
    # A rank without a hostname: listed under "?", the count is a floor.
    hosted_file(sp.tmp / "u.h5", ["nodeB", "nodeA", "nodeB", None, None])
    out = summary_ok(sp, "u.h5")
    assert "\n5 ranks on at least 2 hosts, " in out
    assert "\nhosts: nodeB: 0,2; nodeA: 1; ?: 3,4\n" in out
    assert "cores:" not in out                       # no metadata
    doc = json.loads(summary_ok(sp, "u.h5", "--json"))
    assert doc["hosts"] == {"nodeB": [0, 2], "nodeA": [1], "?": [3, 4]}


def test_no_hosts_no_cores(sp):
    # No hostnames: the counts line as before, no hosts line, no JSON hosts;
    # omp_num_threads empty or not a number: no cores line.
    for meta in (None, {"omp_num_threads": ""}, {"omp_num_threads": "two"},
                 {"omp_num_threads": "0"}, {"mpi_size": "3"}):
        hosted_file(sp.tmp / "n.h5", [None, None, None], meta)
        out = summary_ok(sp, "n.h5")
        assert "\n3 rank(s), 1 region, 9 calls" in out
        assert "hosts:" not in out and "cores:" not in out and " host" not in out
        assert "hosts" not in json.loads(summary_ok(sp, "n.h5", "--json"))
    # Without hostnames the cores line still comes from the metadata.
    hosted_file(sp.tmp / "n.h5", [None, None, None], {"omp_num_threads": "8"})
    out = summary_ok(sp, "n.h5")
    assert "\n3 rank(s), " in out and "hosts:" not in out
    assert "\ncores: 3 ranks × 8 OpenMP threads = 24\n" in out


def test_hosts_line_fits_80_columns(sp):
    hosts = [f"compute-node-{r:04d}.cluster.example.org" for r in range(16)]
    hosted_file(sp.tmp / "w.h5", hosts, FOUR)
    out = summary_ok(sp, "w.h5")
    line = next(l for l in out.splitlines() if l.startswith("hosts: "))
    assert len(line) == 80 and line.endswith("…")
    assert line.startswith("hosts: compute-node-0000.cluster.example.org: 0; compute-node-0001")
    assert "\n16 ranks on 16 hosts, " in out
    assert max(len(l) for l in out.splitlines()) <= 80


def test_one_rank_has_no_hosts_or_cores(sp):
    hosted_file(sp.tmp / "one.h5", ["nodeA"], {"mpi_size": "1", "omp_num_threads": "2"})
    out = summary_ok(sp, "one.h5")
    assert out.splitlines()[1] == "1 rank(s), 1 region, 3 calls, run span 1.20 s"
    assert "hosts:" not in out and "cores:" not in out and " host" not in out
    # A real run: the same header as ever.
    make_example(sp)
    out = summary_ok(sp, "ts.h5")
    assert out.splitlines()[1].startswith("1 rank(s), ")
    assert "hosts:" not in out and "cores:" not in out
