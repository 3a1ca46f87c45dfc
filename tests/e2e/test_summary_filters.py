"""`scope-profiler summary` options: --sort, --include/--exclude, --ranks and
--json, on hand-written several-rank files and on a real run."""
import json
import re

import h5py
import numpy as np
import pytest

from conftest import ROOT, one_line_error, regions

NS = 1_000_000_000
ODD = 'odd "q" \\ tab\t Ω'          # quotes, a backslash, a tab, non-ASCII


def write_layout(path, ranks):
    """The plain hand-written layout: {rank: {name: [(start_s, end_s), ...]}}."""
    with h5py.File(path, "w") as f:
        for rank, named in ranks.items():
            group = f.create_group(f"rank{rank}").create_group("regions")
            for name, events in named.items():
                g = group.create_group(name)
                g.create_dataset("start_times",
                                 data=np.array([round(s * NS) for s, _ in events], np.int64))
                g.create_dataset("end_times",
                                 data=np.array([round(e * NS) for _, e in events], np.int64))


def two_rank_file(sp):
    """step (2 calls of 1 s) holds solve and assemble (20 short calls); io (a
    long and a short call) and init (one call) are top-level; rank 1 is
    slower in solve and has the odd name. Every sort key orders them apart."""
    ranks = {}
    for rank in (0, 1):
        k = 1.0 if rank == 0 else 1.6
        ranks[rank] = {
            "step": [(0.0, 1.0), (1.0, 2.0)],
            "solve": [(0.1, 0.1 + 0.3 * k), (1.1, 1.1 + 0.3 * k)],
            "assemble": [(0.6 + 0.01 * i, 0.605 + 0.01 * i) for i in range(20)],
            "io": [(2.0, 3.5), (3.6, 3.7)],
            "init": [(5.0, 6.2)],
        }
    ranks[1][ODD] = [(4.0, 4.001)]
    path = sp.tmp / "two.h5"
    write_layout(path, ranks)
    return path


def table_rows(out):
    """Region names of the flat table, in order."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Regions"))
    rows = []
    for line in lines[start + 3:]:
        if not line.strip() or line.startswith("ranks k/"):
            break
        rows.append(re.split(r"\s{2,}", line.strip())[0])
    return rows


def tree_lines(out):
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Call tree"))
    result = []
    for line in lines[start + 3:]:
        if not line.strip():
            break
        result.append(line)
    return result


def run_ok(sp, *args):
    proc = sp("summary", *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def test_sort_keys_on_two_ranks(sp):
    two_rank_file(sp)
    odd = ODD.replace("\t", "?")   # as the table shows it
    # total (default): step 4 s, io 3.2, init 2.4, solve 1.56, assemble 0.2
    total = ["step", "io", "init", "solve", "assemble", odd]
    assert table_rows(run_ok(sp, "two.h5", "--flat")) == total
    assert table_rows(run_ok(sp, "two.h5", "--flat", "--sort", "total")) == total
    # calls: assemble 40; step, io, solve 4 each (ties: by total); init 2
    assert table_rows(run_ok(sp, "two.h5", "--flat", "--sort", "calls")) == \
        ["assemble", "step", "io", "solve", "init", odd]
    # mean per call: init 1.2 s, step 1.0, io 0.8, solve 0.39, assemble 0.005
    assert table_rows(run_ok(sp, "two.h5", "--flat", "--sort", "mean")) == \
        ["init", "step", "io", "solve", "assemble", odd]
    # the longest call: io 1.5, init 1.2, step 1.0, solve 0.48 (rank 1)
    assert table_rows(run_ok(sp, "two.h5", "--flat", "--sort", "max")) == \
        ["io", "init", "step", "solve", "assemble", odd]
    assert table_rows(run_ok(sp, "two.h5", "--flat", "--sort", "name")) == \
        ["assemble", "init", "io", odd, "solve", "step"]
    # The tree keeps its own order whatever the table's.
    assert tree_lines(run_ok(sp, "two.h5", "--tree", "--sort", "name")) == \
        tree_lines(run_ok(sp, "two.h5", "--tree"))


def test_include_exclude_table_and_tree(sp):
    two_rank_file(sp)
    # A glob: the whole name; re: a regular expression, searched.
    for pattern in ("s*", "re:^s"):
        out = run_ok(sp, "two.h5", "--include", pattern)
        assert table_rows(out) == ["step", "solve"], pattern
        assert "Selection: 2 of 6 regions" in out
        assert "2 rank(s), 2 regions, 8 calls" in out
    assert "(no regions)" in run_ok(sp, "two.h5", "--include", "sol")
    assert table_rows(run_ok(sp, "two.h5", "--include", "re:sol")) == ["solve"]
    out = run_ok(sp, "two.h5", "--include", "s*", "--include", "io")
    assert table_rows(out) == ["step", "io", "solve"]
    out = run_ok(sp, "two.h5", "--exclude", "re:o")    # solve, io, odd
    assert table_rows(out) == ["step", "init", "assemble"]
    assert run_ok(sp, "two.h5", "--exclude", "*o*") == out
    # Exclude wins over include.
    out = run_ok(sp, "two.h5", "--include", "s*", "--exclude", "solve")
    assert table_rows(out) == ["step"]
    # Without step, its children move up to the top level.
    tree = tree_lines(run_ok(sp, "two.h5", "--exclude", "step", "--tree"))
    assert not any("step" in l for l in tree)
    assert any(l.startswith("solve (4x) ") for l in tree), tree
    assert any(l.startswith("assemble (40x) ") for l in tree), tree
    assert any(l.startswith("io (4x) ") for l in tree), tree
    # Without solve, step's (own) row takes solve's time: 4 s - 0.2 s of assemble.
    tree = tree_lines(run_ok(sp, "two.h5", "--exclude", "re:^solve$", "--tree"))
    own = next(l for l in tree if "(own)" in l)
    assert " 3.80 s " in own, tree
    full = tree_lines(run_ok(sp, "two.h5", "--tree"))
    own_full = next(l for l in full if "(own)" in l)
    assert " 2.24 s " in own_full, full   # 4 - 1.56 - 0.2
    # Nothing selected: empty tables, status 0.
    out = run_ok(sp, "two.h5", "--include", "nothing-matches")
    assert "(no regions)" in out and "(no calls recorded)" in out
    assert "Selection: 0 of 6 regions" in out


def test_ranks(sp):
    two_rank_file(sp)
    out = run_ok(sp, "two.h5", "--ranks", "1", "--flat")
    assert "1 rank(s)" in out
    assert "Selection: 6 of 6 regions; rank 1 of 2" in out
    solve = next(l for l in out.splitlines() if l.startswith("solve "))
    assert " 960 ms " in solve        # rank 1 alone: 2 x 0.48 s
    assert "mean/rank" not in out     # one rank: the one-rank columns
    out = run_ok(sp, "two.h5", "--ranks", "0")
    assert ODD.replace("\t", "?") not in out   # recorded on rank 1 only
    out = run_ok(sp, "two.h5", "--ranks", "0-1,7")   # 7 is not there: ignored
    assert "2 rank(s)" in out and "1.60x" in out
    proc = sp("summary", "two.h5", "--ranks", "7")
    assert proc.returncode == 1
    one_line_error(proc, "summary", "two.h5", "no rank selected", "ranks 0,1")


def test_json_two_ranks(sp):
    two_rank_file(sp)
    doc = json.loads(run_ok(sp, "two.h5", "--json"))
    assert doc["file"] == "two.h5"
    assert doc["ranks"] == [0, 1]
    assert doc["sort"] == "total"
    assert doc["calls"] == 2 * (2 + 2 + 20 + 2 + 1) + 1
    names = [r["name"] for r in doc["regions"]]
    assert names == ["step", "io", "init", "solve", "assemble", ODD]   # exact, escaped
    solve = doc["regions"][3]
    assert solve["calls"] == 4
    assert solve["total_s"] == pytest.approx(1.56)
    assert solve["mean_s"] == pytest.approx(0.39)
    assert solve["min_s"] == pytest.approx(0.3)
    assert solve["max_s"] == pytest.approx(0.48)
    assert solve["std_s"] == pytest.approx(np.std([0.3, 0.3, 0.48, 0.48]))
    assert solve["rank_totals_s"] == pytest.approx([0.6, 0.96])
    assert solve["rank_total_min_s"] == pytest.approx(0.6)
    assert solve["rank_total_mean_s"] == pytest.approx(0.78)
    assert solve["rank_total_max_s"] == pytest.approx(0.96)
    assert solve["imbalance"] == pytest.approx(1.6)
    assert solve["ranks_present"] == 2
    odd = doc["regions"][5]
    assert odd["ranks_present"] == 1 and odd["imbalance"] is None
    assert odd["rank_totals_s"] == pytest.approx([0.0, 0.001])
    # Options apply to JSON too; --flat/--tree do not matter.
    doc = json.loads(run_ok(sp, "two.h5", "--json", "--ranks", "1", "--sort", "name",
                            "--exclude", "io", "--tree"))
    assert doc["ranks"] == [1] and doc["sort"] == "name"
    assert [r["name"] for r in doc["regions"]] == ["assemble", "init", ODD, "solve", "step"]
    assert doc["regions"][3]["rank_totals_s"] == pytest.approx([0.96])
    doc = json.loads(run_ok(sp, "two.h5", "--json", "--include", "none"))
    assert doc["regions"] == []


def test_json_malformed_utf8_and_controls(sp):
    name = b"bad\xffbyte\x01ctl"
    with h5py.File(sp.tmp / "odd.h5", "w") as f:
        g = f.create_group("rank0/regions").create_group(name)
        g.create_dataset("start_times", data=np.array([0], np.int64))
        g.create_dataset("end_times", data=np.array([5], np.int64))
    proc = sp("summary", "--json", "odd.h5")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["regions"][0]["name"] == "bad\ufffdbyte\x01ctl"


def make_example(sp):
    proc = sp("run", "-q", "-o", "ts.h5", ROOT / "examples" / "timestep.py", "--steps", "10",
              "--size", "2000")
    assert proc.returncode == 0, proc.stderr


def test_real_run(sp):
    make_example(sp)
    full = run_ok(sp, "ts.h5")
    assert table_rows(full)[0] == "timestep"
    assert table_rows(run_ok(sp, "ts.h5", "--sort", "name")) == \
        ["assemble", "checkpoint", "setup", "solve", "timestep"]
    assert set(table_rows(run_ok(sp, "ts.h5", "--sort", "calls"))[-2:]) == {"checkpoint", "setup"}
    # Only solve and assemble: they become top-level nodes of the tree.
    out = run_ok(sp, "ts.h5", "--include", "re:^(solve|assemble)$")
    tree = tree_lines(out)
    assert [l.split()[0] for l in tree] == ["assemble", "solve"], tree
    assert table_rows(out) in (["solve", "assemble"], ["assemble", "solve"])
    # The JSON agrees with the table and with the stored attributes.
    doc = json.loads(run_ok(sp, "ts.h5", "--json"))
    assert doc["ranks"] == [0]
    with h5py.File(sp.tmp / "ts.h5") as f:
        for r in doc["regions"]:
            attrs = regions(f)[r["name"]].attrs
            assert r["calls"] == int(attrs["num_calls"])
            assert r["total_s"] == pytest.approx(int(attrs["total_ns"]) / NS, abs=1e-9)
            assert r["max_s"] == pytest.approx(int(attrs["max_ns"]) / NS, abs=1e-9)
    assert [r["name"] for r in doc["regions"]] == table_rows(full)
    # Filters never read the event columns either.
    before = run_ok(sp, "ts.h5", "--exclude", "setup", "--sort", "mean")
    with h5py.File(sp.tmp / "ts.h5", "a") as f:
        # Every call now ends before it starts: a read of the events
        # would refuse the file.
        f["rank0/events/end_times"][...] = 0
    assert run_ok(sp, "ts.h5", "--exclude", "setup", "--sort", "mean") == before
    assert max(len(l) for l in before.splitlines()) <= 80


@pytest.mark.parametrize("args,fragments", [
    (["--sort", "speed"], ["--sort", "speed"]),
    (["--sort"], ["--sort", "argument"]),
    (["--include", "re:solve("], ["--include", "re:solve("]),
    (["--exclude", "re:[a-"], ["--exclude", "re:[a-"]),
    (["--ranks", "3-1"], ["--ranks", "3-1", "backwards"]),
    (["--ranks", "x"], ["--ranks", "'x'"]),
    (["--ranks", ""], ["--ranks", "empty"]),
    (["--ranks", "-2"], ["--ranks", "-2"]),
    (["--ranks", "0,,1"], ["--ranks", "empty"]),
    (["--ranks", "99999999999"], ["--ranks", "too large"]),
    (["--json=1"], ["--json", "no argument"]),
])
def test_usage_errors(sp, args, fragments):
    two_rank_file(sp)
    proc = sp("summary", "two.h5", *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    one_line_error(proc, "summary", *fragments)


def test_help_lists_the_options(sp):
    text = sp("summary", "--help").stdout
    for opt in ("--sort KEY", "--include PATTERN", "--exclude PATTERN", "--ranks LIST", "--json",
                "--flat", "--tree"):
        assert opt in text
    assert max(len(l) for l in text.splitlines()) <= 80
