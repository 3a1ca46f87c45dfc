"""`scope-profiler summary`: the tree and table, from any profile file."""
import pathlib

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
    for col in ("calls", "total [s]", "mean [s]", "min [s]", "max [s]", "std [s]"):
        assert col in table
    assert max(len(l) for l in lines) <= 80


def test_summary_reads_no_event_columns(sp):
    make_example(sp)
    before = sp("summary", "ts.h5").stdout
    with h5py.File(sp.tmp / "ts.h5", "a") as f:
        for g in f["rank0/regions"].values():
            del g["start_times"], g["end_times"]
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
