"""Calls of different threads never nest in each other, with no option: the
lanes go on as soon as a second thread records (--track-threads only has
them from the first call). Likewise asyncio tasks, once an event loop runs.

The scripts order the calls with events, not sleeps: each thread (task)
enters the region while the previous one is inside it and leaves before it,
so by time alone every call would lie inside the previous thread's, on any
machine, however loaded."""
import json
import os
import re
import subprocess

import h5py
import pytest

from conftest import BINARY, regions, tree

# Four threads in `job` (decorated) and `step` (a `with` block) at once,
# thread k's call inside thread k-1's by time; the main thread calls `job`
# before and after, while no other thread records.
THREADS = """
import threading
import scope_profiler as sp

N = 4
entered = [threading.Event() for _ in range(N)]
left = [threading.Event() for _ in range(N)]

def wait_inner(i):
    if i + 1 < N:
        entered[i + 1].wait()
        left[i + 1].wait()

@sp.profile
def job(i):
    with sp.region("step"):
        entered[i].set()
        wait_inner(i)

def worker(i):
    if i:
        entered[i - 1].wait()
    job(i)
    left[i].set()

def main_alone():
    with sp.region("main_alone"):
        pass

main_alone()
threads = [threading.Thread(target=worker, args=(i,), name=f"w{i}") for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
main_alone()
"""

NAMES = {"job", "step", "main_alone"}


def run(sp, script, *flags, out="t.h5"):
    proc = sp("run", "-q", *flags, "-o", out, script)
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / out


def folded_stacks(sp, path):
    proc = sp("export", path, "-f", "folded")
    assert proc.returncode == 0, proc.stderr
    return [line.rsplit(" ", 1)[0].split(";") for line in proc.stdout.splitlines()]


def ancestors(nodes, i):
    while nodes[i][0] >= 0:
        i = nodes[i][0]
        yield nodes[i][1]


def check_no_region_in_itself(nodes, names):
    """No node of a region under a node of the same region (nothing recurses
    in these scripts: only another thread's or task's call could be there)."""
    for i, (_, name, _, _) in enumerate(nodes):
        if name in names:
            assert name not in set(ancestors(nodes, i)), (name, nodes)


def tree_rows(text):
    """The summary's call tree rows: (name, calls, % run)."""
    lines = text.splitlines()
    at = lines.index("Call tree") if "Call tree" in lines else \
        next(i for i, l in enumerate(lines) if l.startswith("Call tree"))
    rows = []
    for line in lines[at + 3:]:
        if not line.strip():
            break
        m = re.match(r"^[\s│├└─]*(.*?)(?: \((\d+)x\))?\s{2,}(\d*)\s+[\d.]+ ?(?:[nµum]?s)?\s+([\d.]+)$",
                     line)
        if m:
            rows.append((m.group(1), int(m.group(3) or m.group(2) or 1), float(m.group(4))))
    return rows


def check_threads_file(sp, path, flags=()):
    with h5py.File(path) as f:
        nodes = tree(f)
        regs = regions(f)
        lane_names = f["metadata"].attrs["lanes"]
        job_lanes = [int(x) for x in regs["job"]["lanes"]]
        step_lanes = [int(x) for x in regs["step"]["lanes"]]
        main_lanes = [int(x) for x in regs["main_alone"]["lanes"]]
    check_no_region_in_itself(nodes, NAMES)
    # One node for job, holding the four calls (one per thread), step below it.
    jobs = [n for n in nodes if n[1] == "job"]
    assert [n[2] for n in jobs] == [4]
    steps = [n for n in nodes if n[1] == "step"]
    assert [n[2] for n in steps] == [4] and nodes[steps[0][0]][1] == "job"
    # Each thread its lane; the main thread's calls (before any other thread
    # recorded, and after) in lane 0.
    assert sorted(job_lanes) == sorted(set(job_lanes)) and 0 not in job_lanes
    assert sorted(step_lanes) == sorted(job_lanes)
    assert main_lanes == [0, 0]
    named = dict(part.split("=", 1) for part in lane_names.split("; "))
    assert named["0"] == "MainThread"
    assert sorted(named[str(l)].split(" ")[0] for l in job_lanes) == ["w0", "w1", "w2", "w3"]
    # The folded export: no stack holds a region twice.
    for stack in folded_stacks(sp, path):
        assert len(stack) == len(set(stack)), stack
    # The summary: each thread's call lies within the run.
    proc = sp("summary", path)
    assert proc.returncode == 0, proc.stderr
    rows = tree_rows(proc.stdout)
    assert {r[0] for r in rows} >= {"job", "step"}
    for name, calls, pct in rows:
        assert pct <= 100.0 * calls + 0.05, (name, calls, pct, proc.stdout)


@pytest.mark.parametrize("flags", [(), ("--recursive",), ("--memory",), ("--track-threads",)],
                         ids=["default", "recursive", "memory", "track-threads"])
def test_threads_in_one_region_never_nest(sp, flags):
    script = sp.script(THREADS, name="threads.py")
    check_threads_file(sp, run(sp, script, *flags), flags)


def test_chrome_trace_has_each_call_on_its_thread(sp):
    script = sp.script(THREADS, name="threads.py")
    path = run(sp, script)
    proc = sp("export", path, "-f", "chrome")
    assert proc.returncode == 0, proc.stderr
    events = json.loads(proc.stdout)
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    jobs = [e for e in events if e.get("ph") == "X" and e.get("name") == "job"]
    assert sorted(names[e["tid"]].split(" ")[0] for e in jobs) == ["w0", "w1", "w2", "w3"]


def test_flame_chart_has_a_block_per_thread(sp):
    script = sp.script(THREADS, name="threads.py")
    path = run(sp, script)
    proc = sp("plot", path, "-o", "charts")
    svg = (sp.tmp / "charts" / "flame.svg").read_text()
    with h5py.File(path) as f:
        job_lanes = {int(x) for x in regions(f)["job"]["lanes"]}
    blocks = {int(n) for n in re.findall(r"rank 0, thread (\d+)", svg)}
    assert blocks == job_lanes | {0}, (blocks, proc.stderr)


def test_recursive_main_thread_keeps_lane_zero_after_the_switch(sp):
    # The --recursive hook of a thread already running when the lanes go on
    # records its later calls with its lane (0) too.
    script = sp.script(THREADS + """
def after():
    pass
for _ in range(3):
    after()
""", name="threads.py")
    path = run(sp, script, "--recursive")
    with h5py.File(path) as f:
        regs = regions(f)
        assert [int(x) for x in regs["__main__.after"]["lanes"]] == [0, 0, 0]
        assert [int(x) for x in regs["__main__.main_alone"]["lanes"]] == [0, 0]
        workers = {int(x) for x in regs["__main__.worker"]["lanes"]}
        assert len(workers) == 4 and 0 not in workers


def test_aggregate_keeps_threads_apart(sp):
    script = sp.script(THREADS, name="threads.py")
    path = run(sp, script, "--aggregate")
    with h5py.File(path) as f:
        nodes = tree(f)
    check_no_region_in_itself(nodes, NAMES)
    assert [n[2] for n in nodes if n[1] == "job"] == [4]
    proc = sp("summary", path)
    rows = tree_rows(proc.stdout)
    assert {r[0] for r in rows} >= {"job", "step"}, proc.stdout
    for name, calls, pct in rows:
        assert pct <= 100.0 * calls + 0.05, (name, calls, pct, proc.stdout)


def test_one_thread_keeps_no_lanes_column(sp):
    # The single-threaded case records as before: 16 bytes per call, no lanes.
    script = sp.script("""
        import scope_profiler as sp
        for _ in range(10):
            with sp.region("a"):
                pass
    """)
    path = run(sp, script)
    with h5py.File(path) as f:
        assert "lanes" not in f["rank0/events"]
        assert regions(f)["a"].attrs["num_calls"] == 10


def test_threads_one_after_another_still_get_lanes(sp):
    # A second thread that records after the first has ended: lanes as well
    # (one rule, whatever the timing).
    script = sp.script("""
        import threading
        import scope_profiler as sp
        def work():
            with sp.region("w"):
                pass
        for _ in range(2):
            t = threading.Thread(target=work)
            t.start()
            t.join()
        work()
    """)
    path = run(sp, script)
    with h5py.File(path) as f:
        lanes = [int(x) for x in regions(f)["w"]["lanes"]]
    assert len(set(lanes[:2])) == 2 and 0 not in lanes[:2] and lanes[2] == 0


def mpirun(sp, n, *args):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(n), BINARY, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=sp.tmp,
                          env=dict(os.environ))


def test_mpi_ranks_keep_their_threads_apart(sp):
    sp.script(THREADS, name="threads.py")
    proc = mpirun(sp, 2, "run", "-q", "-o", "mpi.h5", "threads.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "mpi.h5") as f:
        for rank in (0, 1):
            nodes = tree(f, rank)
            check_no_region_in_itself(nodes, NAMES)
            assert [n[2] for n in nodes if n[1] == "job"] == [4]
            lanes = [int(x) for x in regions(f, rank)["job"]["lanes"]]
            assert len(set(lanes)) == 4 and 0 not in lanes
    stacks = folded_stacks(sp, "mpi.h5")
    for stack in stacks:
        assert len(stack) == len(set(stack)), stack


# Four tasks in one region across awaits (a `with` block and a decorated
# coroutine), task k's call inside task k-1's by time; each task measures
# how long it stayed inside its own block.
TASKS = """
import asyncio, json, time
import scope_profiler as sp

N = 4

@sp.profile
async def leg(i, entered, left):
    entered[i].set()
    if i + 1 < N:
        await entered[i + 1].wait()
        await left[i + 1].wait()

async def task(i, entered, left, inside):
    if i:
        await entered[i - 1].wait()
    with sp.region("block"):
        t0 = time.perf_counter_ns()
        await leg(i, entered, left)
        inside[i] = time.perf_counter_ns() - t0
    left[i].set()

async def main():
    entered = [asyncio.Event() for _ in range(N)]
    left = [asyncio.Event() for _ in range(N)]
    inside = [0] * N
    await asyncio.gather(*(task(i, entered, left, inside) for i in range(N)))
    with open("inside.json", "w") as f:
        json.dump(inside, f)

with sp.region("before"):
    pass
asyncio.run(main())
"""


@pytest.mark.parametrize("flags", [(), ("--recursive",)], ids=["default", "recursive"])
def test_asyncio_tasks_across_awaits_never_nest(sp, flags):
    script = sp.script(TASKS, name="tasks.py")
    path = run(sp, script, *flags)
    inside = json.loads((sp.tmp / "inside.json").read_text())
    with h5py.File(path) as f:
        nodes = tree(f)
        regs = regions(f)
        block = regs["block"]
        durations = [int(e) - int(s) for s, e in zip(block["start_times"], block["end_times"])]
        lanes = [int(x) for x in block["lanes"]]
        leg_lanes = [int(x) for x in regs["leg"]["lanes"]]
    check_no_region_in_itself(nodes, {"block", "leg"})
    assert [n[2] for n in nodes if n[1] == "block"] == [4]
    assert [n[2] for n in nodes if n[1] == "leg"] == [4]
    # A lane per task, and each task's block closed its own call: task k
    # entered k-th (calls are in entry order), and its recorded call lasted
    # at least what it measured inside the block.
    assert len(set(lanes)) == 4 and sorted(leg_lanes) == sorted(lanes)
    for k in range(4):
        assert durations[k] >= inside[k], (durations, inside)
    for stack in folded_stacks(sp, path):
        assert len(stack) == len(set(stack)), stack


OVERLAP = """
import threading, time
import scope_profiler as sp

gate = threading.Barrier(4)

def worker():
    gate.wait()
    with sp.region("job"):
        time.sleep(0.5)

threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_summary_says_when_threads_ran_at_once(sp):
    """Threads in a region at once: their calls stand side by side at the
    tree's top, so % run adds their times past 100; the header says so, and
    only then (its condition read back from the file: the outermost calls'
    total against the run span)."""
    over = run(sp, sp.script(OVERLAP, name="overlap.py"), out="over.h5")
    alone = run(sp, sp.script("""
        import scope_profiler as sp
        with sp.region("job"):
            pass
    """, name="alone.py"), out="alone.h5")
    for path in (over, alone):
        with h5py.File(path) as f:
            span = int(f["rank0"].attrs["run_end_time"]) - int(f["rank0"].attrs["run_start_time"])
            roots = sum(n[3] for n in tree(f) if n[0] < 0)
        header = sp("summary", "--tree", path).stdout.splitlines()[3]
        if roots > span * 1.001:
            assert header == "Call tree (threads ran at once: their times add up, so % run passes 100)"
        else:
            assert header == "Call tree"
    with h5py.File(over) as f:   # four 0.5 s sleeps side by side in a run of about 0.5 s
        assert sum(n[3] for n in tree(f) if n[0] < 0) > \
            int(f["rank0"].attrs["run_end_time"]) - int(f["rank0"].attrs["run_start_time"])


def test_summary_says_when_calls_of_one_thread_overlapped(sp):
    """One thread whose calls overlap without nesting (a region left while
    one entered inside it is still open): each is a root, their times add
    past 100 % of the run; the header says so without naming threads the
    run never had (before: "threads ran at once")."""
    path = run(sp, sp.script("""
        import time
        import scope_profiler as sp
        a, b = sp.region("A"), sp.region("B")
        for i in range(3):
            a.__enter__()
            time.sleep(0.05)
            b.__enter__()
            time.sleep(0.05)
            a.__exit__(None, None, None)
            time.sleep(0.05)
            b.__exit__(None, None, None)
    """, name="overlap_one.py"), out="one.h5")
    with h5py.File(path) as f:
        span = int(f["rank0"].attrs["run_end_time"]) - int(f["rank0"].attrs["run_start_time"])
        roots = sum(n[3] for n in tree(f) if n[0] < 0)
        assert f["metadata"].attrs["lanes"] == "0=MainThread"
    # 0.15 s of the roots' 0.6 s are counted twice; the span adds the start.
    assert roots > span * 1.001
    header = sp("summary", "--tree", path).stdout.splitlines()[3]
    assert header == "Call tree (calls overlapped without nesting: their times add up, so % run passes 100)"


def test_summary_says_when_calls_overlapped_inside_another(sp):
    """Calls that overlap without nesting inside a third (their roots never
    pass the run span): each is a child of the call that contains it, so
    they add up past it (its own time shows 0); the header says so, at the
    end of run and in summary, and the file keeps the count (the tree's
    overlaps attribute). Before: a plain "Call tree" header over children
    larger than their parent. A run of nested calls keeps the plain one."""
    script = sp.script("""
        import time
        import scope_profiler as sp
        a, b = sp.region("a"), sp.region("b")
        with sp.region("top"):
            a.__enter__(); time.sleep(0.002); b.__enter__(); time.sleep(0.002)
            a.__exit__(None, None, None); time.sleep(0.002); b.__exit__(None, None, None)
            with a:
                with b:
                    pass
    """, name="overlap_inside.py")
    said = "Call tree (calls overlapped without nesting: a call's children can add up past it)"
    proc = sp("run", "-o", "in.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert said in (proc.stdout + proc.stderr).splitlines()
    with h5py.File(sp.tmp / "in.h5") as f:
        assert int(f["rank0/tree"].attrs["overlaps"]) == 1
    assert sp("summary", "--tree", "in.h5").stdout.splitlines()[3] == said
    nested = sp.script("""
        import scope_profiler as sp
        with sp.region("top"):
            with sp.region("a"):
                with sp.region("b"):
                    pass
    """, name="nested.py")
    assert sp("run", "-q", "-o", "n.h5", nested).returncode == 0
    assert sp("summary", "--tree", "n.h5").stdout.splitlines()[3] == "Call tree"
    with h5py.File(sp.tmp / "n.h5") as f:
        assert "overlaps" not in f["rank0/tree"].attrs
