"""The read API inside the built-in module: the code cells of the seed page
"5. Custom analysis with the Python API" (003_680d190f190136c5.txt), run
unchanged under `scope-profiler run`, compared with what the page shows
(structure and counts exactly, timings within tolerance)."""
import os
import re

import pytest

SEED_CELLS = r'''
import tempfile
import time
from pathlib import Path

from scope_profiler import ProfileManager, read_h5

WORKDIR = Path(tempfile.mkdtemp(prefix="scope-profiler-tutorial-"))
DATA_FILE = WORKDIR / "profiling_data.h5"

ProfileManager.setup(file_path=str(DATA_FILE))


@ProfileManager.profile("assemble")
def assemble():
    time.sleep(0.002)


with ProfileManager.profile_region("setup"):
    time.sleep(0.01)

for step in range(6):
    with ProfileManager.profile_region("timestep"):
        assemble()
        with ProfileManager.profile_region("solve"):
            # The solve gets slower as the run progresses.
            time.sleep(0.002 + 0.001 * step)
    if step % 3 == 2:
        with ProfileManager.profile_region("checkpoint"):
            time.sleep(0.004)

ProfileManager.finalize(verbose=False)

results = ProfileManager.read_results()
print(results)
print("same file:", results.file_path == DATA_FILE)

events = results.events()

print(f"{len(events)} calls recorded\n")
for event in events[:4]:
    print(event)

print("relative :", [round(e["start"], 4) for e in results.events(include="timestep")])
print(
    "absolute :",
    [round(e["start"], 4) for e in results.events(include="timestep", relative=False)],
)

print("\nrun start    :", results.run_start_time)
print("first entry  :", results.minimum_start_time)
print("last exit    :", results.maximum_end_time)
print("wall clock   :", results.time_span, "s")

print(
    f"{results.startup_time * 1e3:.2f} ms elapsed before the first region was entered"
)

print("origin       :", results.time_origin)
print("is run start :", results.time_origin == results.run_start_time)

print(
    "\nfrom run start   :",
    [round(e["start"], 4) for e in results.events(include="solve")],
)
print(
    "from first entry :",
    [
        round(e["start"], 4)
        for e in results.events(include="solve", origin=results.minimum_start_time)
    ],
)

for region in results.get_regions():
    share = region.total_duration / results.time_span
    print(f"  {region.name:<11} {share:6.1%} of the run")

results.events(include="solve")             # one region
results.events(include=["solve", "assemble"])
results.events(exclude="checkpoint")
results.events(ranks=0)                     # one rank, or ranks=[0, 2]

solve_events = results.events(include="solve")
print("calls  :", len(solve_events))
print("indices:", [e["call_index"] for e in solve_events])
print("slowest:", max(solve_events, key=lambda e: e["duration"]))

frame = results.to_events_dataframe()
print(frame.head())

print(frame.groupby("name")["duration"].agg(["count", "mean", "std", "max"]).sort_values(
    "mean", ascending=False
))
print(frame.nlargest(10, "duration")[["name", "rank", "call_index", "start", "duration"]])
print(frame.pivot_table(index="rank", columns="name", values="duration", aggfunc="sum"))

solve = results["solve"]  # an MPIRegion: the region across all ranks
print("all ranks   :", len(solve.events()), "calls")
print("rank 0 only :", len(solve.events(ranks=0)), "calls")

rank0 = solve[0]  # a Region: one rank
print("\nseconds     :", rank0.durations[:3])
print("nanoseconds :", rank0.durations_ns[:3])
print("start (ns)  :", rank0.start_times_ns[:3])

calls = results.call_stack(rank=0)

for call in calls[:8]:
    indent = "  " * call["depth"]
    print(f"{indent}{call['name']:<12} {call['duration'] * 1e3:6.2f} ms")

from scope_profiler import call_stack_children, call_stack_roots

children = call_stack_children(calls)

for root in call_stack_roots(calls):
    names = [calls[child]["name"] for child in children[root]]
    print(f"{calls[root]['name']:<12} contains {names}")

from collections import defaultdict

total = defaultdict(float)
self_time = defaultdict(float)

for index, call in enumerate(calls):
    nested = sum(calls[child]["duration"] for child in children[index])
    total[call["name"]] += call["duration"]
    self_time[call["name"]] += call["duration"] - nested

print(f"{'region':<12}{'total [ms]':>12}{'self [ms]':>12}")
for name in sorted(total, key=total.get, reverse=True):
    print(f"{name:<12}{total[name] * 1e3:12.2f}{self_time[name] * 1e3:12.2f}")

import h5py
import numpy as np

MPI_FILE = WORKDIR / "two_ranks.h5"
NS = 1_000_000_000  # timestamps are stored as int64 nanoseconds

with h5py.File(MPI_FILE, "w") as h5file:
    for rank, factor in enumerate([1.0, 1.6]):  # rank 1 is the slow one
        regions = h5file.create_group(f"rank{rank}").create_group("regions")
        starts = np.array([0.0, 0.5, 1.0]) * NS
        durations = np.array([0.2, 0.25, 0.2]) * factor * NS
        group = regions.create_group("solve")
        group.create_dataset("start_times", data=starts.astype(np.int64))
        group.create_dataset("end_times", data=(starts + durations).astype(np.int64))

mpi_reader = read_h5(MPI_FILE)
print(mpi_reader)

print(mpi_reader.to_events_dataframe())

# Load imbalance: how much longer did the slowest rank take than the fastest?
per_rank = mpi_reader["solve"].total_durations()
print("total per rank:", per_rank)
print(f"imbalance     : {max(per_rank.values()) / min(per_rank.values()):.2f}x")
'''


@pytest.fixture(scope="module")
def seed_output(tmp_path_factory):
    import subprocess
    from conftest import BINARY
    d = tmp_path_factory.mktemp("seed003")
    (d / "seed.py").write_text(SEED_CELLS)
    # The page makes its folder with tempfile.mkdtemp and never removes it: its
    # TMPDIR is the test's own folder, so the test leaves nothing in /tmp.
    tmp = d / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.run([BINARY, "run", "-q", "seed.py"], cwd=d, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert any(p.name.startswith("scope-profiler-tutorial-") for p in tmp.iterdir())
    return proc.stdout


@pytest.mark.script_imports("numpy", "pandas")
def test_results_repr_and_events(seed_output):
    out = seed_output
    assert "<ProfilingResults 'profiling_data.h5': 5 region(s), 1 rank(s)>" in out
    assert "same file: True" in out
    assert "21 calls recorded" in out
    first = re.findall(r"^\{'name': '(\w+)', 'rank': 0, 'call_index': (\d), 'start': [\d.e-]+, "
                       r"'end': [\d.e-]+, 'duration': [\d.e-]+, 'call_id': (\d+), 'parent_id': (-?\d+)\}$",
                       out, re.M)[:4]
    assert first == [("setup", "0", "0", "-1"), ("timestep", "0", "1", "-1"),
                     ("timestep", "1", "4", "-1"), ("timestep", "2", "7", "-1")]


@pytest.mark.script_imports("numpy", "pandas")
def test_time_axis(seed_output):
    out = seed_output
    rel = [float(x) for x in re.search(r"^relative : \[(.*)\]$", out, re.M).group(1).split(",")]
    ab = [float(x) for x in re.search(r"^absolute : \[(.*)\]$", out, re.M).group(1).split(",")]
    assert len(rel) == len(ab) == 6
    assert rel == sorted(rel) and 0 < rel[0]
    start = float(re.search(r"^run start    : ([\d.]+)$", out, re.M).group(1))
    assert all(abs(a - r - start) < 2e-4 for a, r in zip(ab, rel))
    assert "is run start : True" in out
    startup = re.search(r"^(\d+\.\d\d) ms elapsed before the first region was entered$", out, re.M)
    startup = float(startup.group(1)) / 1e3
    span = float(re.search(r"^wall clock   : ([\d.]+) s$", out, re.M).group(1))
    # From the run start: the timesteps begin after the first entry (setup)
    # and before the last exit (rounding: 4 decimals).
    assert startup - 1e-4 <= rel[0] and rel[-1] <= startup + span + 1e-4, (rel, startup, span)
    shares = dict(re.findall(r"^  (\w+)\s+([\d.]+)% of the run$", out, re.M))
    assert list(shares) == ["setup", "timestep", "assemble", "solve", "checkpoint"]
    # Each share is the region's total over the wall clock (totals in ms from
    # the table at the end; shares rounded to 0.1 %).
    totals = dict((n, float(t)) for n, t in re.findall(r"^(\w+)\s+([\d.]+)\s+[\d.]+$", out, re.M))
    for name, share in shares.items():
        assert float(share) == pytest.approx(100 * totals[name] / 1e3 / span, abs=0.1), name


@pytest.mark.script_imports("numpy", "pandas")
def test_selection_and_dataframe(seed_output):
    out = seed_output
    assert "calls  : 6" in out
    assert "indices: [0, 1, 2, 3, 4, 5]" in out
    # Which call was slowest is the machine's say (sleeps overshoot under
    # load); the event's fields are the API's.
    assert re.search(r"slowest: \{'name': 'solve', 'rank': 0, 'call_index': [0-5], 'start': ", out)
    assert "all ranks   : 6 calls" in out and "rank 0 only : 6 calls" in out
    # DataFrame head, groupby and pivot_table printed by pandas.
    assert re.search(r"^0\s+setup\s+0\s+0\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out, re.M)
    assert re.search(r"^timestep\s+6\s+", out, re.M)
    assert re.search(r"^assemble\s+6\s+", out, re.M)


@pytest.mark.script_imports("numpy", "pandas")
def test_region_columns_and_call_stack(seed_output):
    out = seed_output
    secs = re.search(r"^seconds     : \[(.*)\]$", out, re.M).group(1).split()
    ns = re.search(r"^nanoseconds : \[(.*)\]$", out, re.M).group(1).split()
    assert len(secs) == len(ns) == 3
    # numpy prints 8 digits: seconds agree with ns to that precision.
    assert all(abs(float(s) * 1e9 - int(n)) < 1e-7 * int(n) + 10 for s, n in zip(secs, ns))
    tree = re.findall(r"^( *)(\w+)\s+[\d.]+ ms$", out, re.M)[:8]
    assert [(len(i) // 2, n) for i, n in tree] == [
        (0, "setup"), (0, "timestep"), (1, "assemble"), (1, "solve"),
        (0, "timestep"), (1, "assemble"), (1, "solve"), (0, "timestep")]
    roots = re.findall(r"^(\w+)\s+contains (\[.*\])$", out, re.M)
    assert [r[0] for r in roots] == ["setup", "timestep", "timestep", "timestep", "checkpoint",
                                     "timestep", "timestep", "timestep", "checkpoint"]
    assert roots[1][1] == "['assemble', 'solve']" and roots[0][1] == "[]"
    rows = dict((n, (float(t), float(s))) for n, t, s in
                re.findall(r"^(\w+)\s+([\d.]+)\s+([\d.]+)$", out, re.M) if n in
                ("timestep", "solve", "assemble", "setup", "checkpoint"))
    # A container: its own time is its total less its children's (each rounded to 0.01 ms).
    assert rows["timestep"][1] == pytest.approx(
        rows["timestep"][0] - rows["solve"][0] - rows["assemble"][0], abs=0.025)
    assert rows["solve"][0] == rows["solve"][1]                   # a leaf


@pytest.mark.script_imports("numpy", "pandas")
def test_hand_written_two_ranks(seed_output):
    out = seed_output
    assert "<ProfilingResults 'two_ranks.h5': 1 region(s), 2 rank(s)>" in out
    assert "total per rank: {0: 0.65, 1: 1.04}" in out
    assert "imbalance     : 1.60x" in out
    rows = re.findall(r"^(\d)\s+solve\s+(\d)\s+(\d)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", out, re.M)
    assert [(r[1], r[2], r[5]) for r in rows] == [
        ("0", "0", "0.20"), ("0", "1", "0.25"), ("0", "2", "0.20"),
        ("1", "0", "0.32"), ("1", "1", "0.40"), ("1", "2", "0.32")]


def test_bad_selections_are_clear_errors_and_an_escaped_name_is_found(sp):
    """ranks="0" and call_stack(rank="0") are TypeErrors (they selected
    nothing, []); a bytes pattern and a NUL in one are said as such; a
    pattern holding a name UTF-8 cannot hold finds its escaped region (a
    bare UnicodeEncodeError before)."""
    script = sp.script("""
        import os
        import scope_profiler as sp
        bad = os.fsdecode(b"bad\\xff")
        with sp.region(bad):
            pass
        with sp.region("good"):
            pass
        res = sp.finalize(verbose=False, return_results=True)

        def outcome(f):
            try:
                return f()
            except Exception as e:
                return type(e).__name__
        print(outcome(lambda: res.events(ranks="0")), outcome(lambda: len(res.events(ranks=[0]))),
              outcome(lambda: len(res.events(ranks=0))))
        print(outcome(lambda: res.call_stack(rank="0")), outcome(lambda: len(res.call_stack(rank=0))))
        print(outcome(lambda: res.events(include=b"good")), outcome(lambda: res.events(include="go\\0od")))
        print([e["name"] for e in res.events(include=bad)], [e["name"] for e in res.events(include="re:^" + bad)])
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "TypeError 2 2",
        "TypeError 2",
        "TypeError ValueError",
        "['bad\\\\udcff'] ['bad\\\\udcff']",
    ], proc.stdout
