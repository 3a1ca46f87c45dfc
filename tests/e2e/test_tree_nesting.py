"""The call tree a run writes is the one its events imply: the end of the
run nests the recorded calls by containment (sp_tree_build), and the file's
tree, the printed summary and a later `summary` of the file must be exactly
the tree that the report layer's one rule (sp_nest.h, the read API's
call_stack()) gives on the same events: calls and nanoseconds per node, node
for node, in the same order. Checked on programs where nesting is subtle:
generators, coroutines, exceptions, recursion, threads with and without
lanes, asyncio tasks, line timing, a block closed in another thread, calls
still open at the end."""
import json

import h5py
import pytest

from conftest import tree

# The tree by containment, from the read API's call_stack(): nodes in the
# order a sweep of the calls creates them (lanes one by one, each in start
# order), each (parent index, name, calls, total ns).
CONTAINMENT = r'''
import json, sys, scope_profiler as sp
res = sp.read_h5(sys.argv[1])
out = {}
for rank in res.ranks:
    calls = res.call_stack(rank=rank)
    index, nodes, node_of = {}, [], []
    for c in calls:
        parent = node_of[c["parent_id"]] if c["parent_id"] >= 0 else -1
        key = (parent, c["name"])
        if key not in index:
            index[key] = len(nodes)
            nodes.append([parent, c["name"], 0, 0])
        n = index[key]
        nodes[n][2] += 1
        nodes[n][3] += round(c["duration"] * 1e9)
        node_of.append(n)
    out[rank] = nodes
json.dump(out, sys.stdout)
'''

# One thread: recursion, generators, a generator closed early, exceptions
# caught at several depths, decorated functions and `with` blocks (nested,
# around calls, in a loop), methods, closures, comprehensions.
ONE_THREAD = '''
import scope_profiler as sp

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def gen(n):
    for i in range(n):
        yield leaf(i)

def leaf(x):
    return x * 2

def raises(n):
    if n == 0:
        raise ValueError("bottom")
    return raises(n - 1)

def catcher(n):
    try:
        raises(n)
    except ValueError:
        return leaf(n)

@sp.profile("decorated")
def decorated(k):
    with sp.region("inside_decorated"):
        return sum(leaf(i) for i in range(k))

class Shape:
    def __init__(self, k):
        self.k = k
    def area(self):
        return leaf(self.k)

def outer(n):
    def inner(k):
        return fib(k)
    return [inner(k) for k in range(n)]

def main():
    fib(8)
    for v in gen(4):
        leaf(v)
    g = gen(10)
    next(g)
    g.close()
    for n in range(4):
        catcher(n)
    with sp.region("block"):
        for k in range(3):
            decorated(k)
            with sp.region("nested_block"):
                Shape(k).area()
    outer(5)

main()
'''

# A `with` block held open across a generator's yields: its call overlaps
# the generator's steps instead of nesting in one.
BLOCK_ACROSS_YIELDS = '''
import scope_profiler as sp

def leaf():
    pass

def stepper():
    with sp.region("held"):
        yield 1
        leaf()
        yield 2
    leaf()

def main():
    for _ in stepper():
        leaf()

main()
'''

# Threads doing the same nested work at the same time.
THREADS = '''
import threading
import scope_profiler as sp

def leaf(x):
    return x + 1

def work(n):
    total = 0
    for i in range(n):
        with sp.region("step"):
            total += leaf(i)
    return total

def worker(n):
    for _ in range(20):
        work(n)

def main():
    ts = [threading.Thread(target=worker, args=(50 + 10 * i,)) for i in range(3)]
    for t in ts:
        t.start()
    worker(30)
    for t in ts:
        t.join()

main()
'''

# Coroutines of several tasks interleaving on one thread.
TASKS = '''
import asyncio
import scope_profiler as sp

def leaf(x):
    return x

async def task(k):
    for i in range(3):
        with sp.region("task_step"):
            leaf(i)
        await asyncio.sleep(0)
    return k
'''

ASYNC = TASKS + '''
@sp.profile("timed_coroutine")
async def timed(k):
    await asyncio.sleep(0)
    return leaf(k)

async def main():
    await asyncio.gather(*(task(k) for k in range(3)), timed(1), timed(2))

asyncio.run(main())
'''

# The same without a decorated coroutine: each step of a coroutine is a
# call of its own under the event loop's.
ASYNC_STEPS = TASKS + '''
async def main():
    await asyncio.gather(*(task(k) for k in range(3)))

asyncio.run(main())
'''

# A block entered in the main thread and left in another, and one left
# open when the script ends.
HANDOVER = '''
import threading
import scope_profiler as sp

def leaf():
    pass

r = sp.region("handover")
r.__enter__()
t = threading.Thread(target=r.__exit__, args=(None, None, None))
t.start()
t.join()
with sp.region("after"):
    leaf()
sp.region("left_open").__enter__()
leaf()
'''

# Line timing of a decorated function, with regions around and inside.
LINES = '''
import scope_profiler as sp

@sp.profile
def body(n):
    total = 0
    for i in range(n):
        with sp.region("line_block"):
            total += i
    return total

def main():
    with sp.region("outer"):
        for _ in range(3):
            body(20)

main()
'''

CASES = [
    ("one_thread", ONE_THREAD, ("--recursive",)),
    ("one_thread_all", ONE_THREAD, ("--recursive", "--all")),
    ("one_thread_regions_only", ONE_THREAD, ()),
    ("block_across_yields", BLOCK_ACROSS_YIELDS, ("--recursive",)),
    ("threads_lanes", THREADS, ("--recursive", "--track-threads")),
    ("threads_one_lane", THREADS, ("--recursive",)),
    ("threads_regions_lanes", THREADS, ("--track-threads",)),
    ("async_recursive", ASYNC, ("--recursive",)),
    ("async_steps", ASYNC_STEPS, ("--recursive",)),
    ("async_lanes", ASYNC, ("--recursive", "--track-async")),
    ("handover", HANDOVER, ("--recursive",)),
    ("lines", LINES, ("--line-profile",)),
]


def containment(sp, path):
    dump = sp.script(CONTAINMENT, name="containment.py")
    proc = sp("run", "-q", "--no-output", dump, path)
    assert proc.returncode == 0, proc.stderr
    return {int(k): [tuple(n) for n in v] for k, v in json.loads(proc.stdout).items()}


def call_tree_section(text):
    """The "Call tree" section of a rendered summary (its title may carry a
    note: threads that ran at once)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Call tree"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("name,program,flags", CASES, ids=[c[0] for c in CASES])
def test_written_tree_is_the_events_nesting(sp, name, program, flags):
    script = sp.script(program, name=f"{name}.py")
    proc = sp("run", *flags, "-o", "run.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "run.h5") as f:
        written = [t for t in tree(f)]
    expected = containment(sp, "run.h5")
    assert written == expected[0]
    assert sum(n[2] for n in written) > 0
    # The summary printed at the end of the run is the file's.
    later = sp("summary", "run.h5")
    assert later.returncode == 0, later.stderr
    assert call_tree_section(proc.stderr) == call_tree_section(later.stdout)


def test_the_tree_of_a_session_that_goes_on_after_finalize(sp):
    # finalize() inside an open block: the block's call ends there; the
    # session recorded after it has a tree of its own.
    script = sp.script('''
        import scope_profiler as sp

        def leaf():
            pass

        sp.setup(file_path="first.h5")
        with sp.region("open_across"):
            leaf()
            sp.finalize(verbose=False)
            sp.setup(file_path="second.h5")
            with sp.region("after_setup"):
                leaf()
        with sp.region("last"):
            leaf()
        sp.finalize(verbose=False)
    ''', name="sessions.py")
    proc = sp("run", "-q", "--recursive", script)
    assert proc.returncode == 0, proc.stderr
    for path in ("first.h5", "second.h5"):
        with h5py.File(sp.tmp / path) as f:
            written = tree(f)
        assert written == containment(sp, path)[0], path
