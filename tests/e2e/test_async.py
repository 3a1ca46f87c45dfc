"""--track-async and setup(track_async=True): a lane per asyncio task, so
regions of interleaved tasks nest per task; and decorated `async def`
functions timed for their awaited run (in every mode). Real scripts under
the real executable, checked in the HDF5 file, the summary tree and the
Chrome trace."""
import json
import os
import re

import h5py
import pytest

from conftest import embedded, regions, tree

NS = 1_000_000_000
# asyncio.wait_for(coro) wraps the coroutine in a task of its own up to Python 3.11;
# from 3.12 it awaits it in the calling task: the embedded Python's version
# decides, not that of the Python running these tests.
def wait_for_own_task():
    return embedded().version < (3, 12)

DELAYS = (0.06, 0.12, 0.18)

# Where a call of a task's region begins and ends is checked against marks the
# script itself takes, never against a wall-clock limit (a loaded machine
# stretches any run): mark(key, 0) and mark(key, 1) read time.perf_counter_ns()
# (the profile's clock, CLOCK_MONOTONIC) just before and just after the
# region's enter, mark(key, 2) and mark(key, 3) just before and just after its
# exit, in the same task with no await in between, so no other task runs
# between two marks of a pair. A call ended by another task's exit (the bug
# lanes prevent) ends while that other task runs: outside its own pair.
MARK = """
    import json as _json, time as _time
    MARKS = {}

    def mark(*key):
        MARKS[" ".join(map(str, key))] = _time.perf_counter_ns()

    def save_marks():
        with open("marks.json", "w") as out:
            _json.dump(MARKS, out)
"""

INTERLEAVED = f"""
    import asyncio
    import scope_profiler as sp
    {MARK}
    @sp.profile("step")
    def step():
        return 1

    async def worker(delay):
        me = asyncio.current_task().get_name()
        mark(me, "outer", 0)
        with sp.region("outer"):
            mark(me, "outer", 1)
            await asyncio.sleep(delay)
            step()
            mark(me, "inner", 0)
            with sp.region("inner"):
                mark(me, "inner", 1)
                await asyncio.sleep(delay)
                mark(me, "inner", 2)
            mark(me, "inner", 3)
            mark(me, "outer", 2)
        mark(me, "outer", 3)

    async def main():
        with sp.region("main"):
            # All three are inside "outer" at once, and inside "inner" at once.
            await asyncio.gather(*(asyncio.create_task(worker(d), name=f"w{{i}}")
                                   for i, d in enumerate({DELAYS!r})))

    with sp.region("before"):
        pass
    asyncio.run(main())
    save_marks()
"""


def run(sp, text, out, *flags, name="script.py"):
    script = sp.script(text, name=name)
    proc = sp("run", "-q", "-o", out, *flags, script)
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / out, proc


def lane_names(f):
    """{lane: name} from the /metadata "lanes" attribute."""
    text = f["metadata"].attrs["lanes"]
    return {int(k): v for k, v in (item.split("=", 1) for item in text.split("; "))}


def calls(f, region):
    """[(lane, duration in s, start, end)] of a region, in call order."""
    g = regions(f)[region]
    starts, ends = g["start_times"][:].tolist(), g["end_times"][:].tolist()
    lanes = g["lanes"][:].tolist() if "lanes" in g else [0] * len(starts)
    return [(lane, (e - s) / NS, s, e) for lane, s, e in zip(lanes, starts, ends)]


def marks(sp):
    """{key: perf_counter_ns()} of the script's mark() calls."""
    return json.loads((sp.tmp / "marks.json").read_text())


def bracketed(call, m, key):
    """Whether the call began between the marks `key 0` and `key 1` and ended
    between `key 2` and `key 3` (see MARK)."""
    _, _, start, end = call
    return (m[f"{key} 0"] <= start <= m[f"{key} 1"]
            and m[f"{key} 2"] <= end <= m[f"{key} 3"])


def at_least(duration, seconds):
    """A region around `await asyncio.sleep(seconds)` lasts that long (a lower
    bound holds however loaded the machine; 2 ms of grace for the loop)."""
    return duration >= seconds - 0.002


def tree_rows(text):
    """The rows of `summary --tree`: [(label with its tree prefix, calls)]."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(.*?\S)\s{2,}(\d+)\s+\d+(?:\.\d+)? (?:ns|µs|ms|s)\s", line)
        if m:
            rows.append((m.group(1), int(m.group(2))))
    return rows


# ---- interleaved tasks --------------------------------------------------------

def test_interleaved_tasks_get_a_lane_each(sp):
    path, _ = run(sp, INTERLEAVED, "a.h5", "--track-async")
    with h5py.File(path) as f:
        names = lane_names(f)
        assert f["metadata"].attrs["mode"] == "async"
        outer, inner = calls(f, "outer"), calls(f, "inner")
        assert len(outer) == len(inner) == 3
        # One lane per task, named after the task and its coroutine.
        assert {names[c[0]] for c in outer} == {"w0 (worker)", "w1 (worker)", "w2 (worker)"}
        assert {c[0] for c in inner} == {c[0] for c in outer}
        # A decorated plain function called in a task: the task's lane.
        assert sorted(c[0] for c in calls(f, "step")) == sorted(c[0] for c in outer)
        # The task asyncio.run() makes; code outside any task: the thread's lane.
        [(main_lane, *_)] = calls(f, "main")
        assert names[main_lane] == "Task-1 (main)"
        [(before_lane, *_)] = calls(f, "before")
        assert before_lane == 0 and names[0] == "MainThread"
        assert len(names) == 5 and sorted(names) == list(range(5))
        # Each task's calls begin and end in its own task's steps and last its
        # own sleeps, although the three tasks were inside the same region at
        # the same time.
        m = marks(sp)
        for call in outer:
            lane, dur, start, end = call
            task = names[lane].split()[0]
            delay = DELAYS[int(task[1])]
            assert bracketed(call, m, f"{task} outer"), (task, call)
            assert at_least(dur, 2 * delay), (task, dur)
            [icall] = [c for c in inner if c[0] == lane]
            _, idur, istart, iend = icall
            assert bracketed(icall, m, f"{task} inner"), (task, icall)
            assert at_least(idur, delay), (task, idur)
            assert start < istart < iend <= end
        assert max(c[2] for c in outer) < min(c[3] for c in outer)  # they overlap


def test_tree_nests_per_task(sp):
    run(sp, INTERLEAVED, "a.h5", "--track-async")
    proc = sp("summary", "--tree", "a.h5")
    assert proc.returncode == 0, proc.stderr
    rows = tree_rows(proc.stdout)
    labels = [r[0] for r in rows]
    assert ("outer (3x)", 3) in rows, proc.stdout
    at = labels.index("outer (3x)")
    children = [r for r in rows[at + 1:] if r[0][:1] in "│├└ "]
    assert any(re.fullmatch(r"[└├]─ inner \(3x\)", r[0]) and r[1] == 3 for r in children), proc.stdout
    assert any(re.fullmatch(r"[└├]─ step \(3x\)", r[0]) and r[1] == 3 for r in children), proc.stdout
    # Never a region of one task inside another task's.
    assert not any("outer" in l for l in labels[at + 1:]), proc.stdout

    # Without the option the same tree: task lanes go on once the event loop
    # runs ("before", entered earlier, stays in the thread's lane 0).
    run(sp, INTERLEAVED, "default.h5")
    with h5py.File(sp.tmp / "default.h5") as f:
        assert len(set(int(x) for x in regions(f)["outer"]["lanes"])) == 3
        assert [int(x) for x in regions(f)["before"]["lanes"]] == [0]
    default = tree_rows(sp("summary", "--tree", "default.h5").stdout)
    assert [(r[0], r[1]) for r in default] == [(r[0], r[1]) for r in rows]


def test_chrome_trace_has_a_thread_per_task(sp):
    run(sp, INTERLEAVED, "a.h5", "--track-async")
    proc = sp("export", "a.h5", "--format", "chrome")
    assert proc.returncode == 0, proc.stderr
    events = json.loads(proc.stdout)["traceEvents"]
    thread_names = {e["tid"]: e["args"]["name"] for e in events
                    if e["ph"] == "M" and e["name"] == "thread_name"}
    xs = [e for e in events if e["ph"] == "X"]
    outer_tids = {e["tid"] for e in xs if e["name"] == "outer"}
    assert len(outer_tids) == 3
    assert {thread_names[t] for t in outer_tids} == {"w0 (worker)", "w1 (worker)", "w2 (worker)"}
    for t in outer_tids:
        assert sorted(e["name"] for e in xs if e["tid"] == t) == ["inner", "outer", "step"]
    assert [thread_names[e["tid"]] for e in xs if e["name"] == "main"] == ["Task-1 (main)"]
    assert [thread_names[e["tid"]] for e in xs if e["name"] == "before"] == ["MainThread"]


def test_setup_track_async(sp):
    script = INTERLEAVED.replace(
        "import scope_profiler as sp\n",
        "import scope_profiler as sp\n"
        "    sp.setup(track_async=True, file_path='s.h5')\n"
        "    print(type(sp.region('outer')).__name__)\n")
    script += """
    res = sp.finalize(verbose=False, return_results=True)
    print(sorted(set(res["outer"][0].lanes.tolist())) == sorted(set(res["inner"][0].lanes.tolist())),
          len(set(res["outer"][0].lanes.tolist())))
    print(res.metadata["mode"])
"""
    script = sp.script(script)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["AsyncProfileRegion", "True 3", "async"], proc.stdout


# ---- decorated coroutine functions ------------------------------------------

# The decorated call is open from the coroutine's first step to its end:
# marks 1 and 2 are the body's first and last step, 0 and 3 the awaiting
# caller's, just before and after its await.
DECORATED = f"""
    import asyncio, functools, inspect
    import scope_profiler as sp
    {MARK}
    @sp.profile("fetch")
    async def fetch(delay):
        mark("fetch", delay, 1)
        await asyncio.sleep(delay)
        mark("fetch", delay, 2)
        return delay

    class Client:
        @sp.profile("method")
        async def get(self, delay):
            mark("method", 1)
            await asyncio.sleep(delay)
            mark("method", 2)
            return 2 * delay

    async def plain(delay):
        mark("partial", 1)
        await asyncio.sleep(delay)
        mark("partial", 2)
        return -delay

    partial = sp.profile("partial")(functools.partial(plain, 0.03))

    @sp.profile("fails")
    async def fails():
        mark("fails", 1)
        await asyncio.sleep(0.02)
        mark("fails", 2)
        raise KeyError("gone")

    async def main():
        assert inspect.iscoroutinefunction(fetch)
        coro = fetch(0)
        assert inspect.iscoroutine(coro) and coro.__qualname__ == "fetch"
        mark("fetch", 0, 0)
        await coro
        mark("fetch", 0, 3)
        mark("gather")
        assert await asyncio.gather(*(fetch(d) for d in {DELAYS!r})) == list({DELAYS!r})
        mark("gathered")
        mark("method", 0)
        assert await Client().get(0.03) == 0.06
        mark("method", 3)
        mark("partial", 0)
        assert await partial() == -0.03
        mark("partial", 3)
        mark("fails", 0)
        try:
            await fails()
        except KeyError:
            mark("fails", 3)
        else:
            raise AssertionError("no KeyError")

    asyncio.run(main())
    save_marks()
    print("ok")
"""


@pytest.mark.parametrize("flags", [(), ("--track-threads",), ("--track-async",)],
                         ids=["time-only", "threads", "async"])
def test_decorated_coroutines_time_their_awaited_run(sp, flags):
    path, proc = run(sp, DECORATED, "d.h5", *flags)
    assert proc.stdout == "ok\n"
    m = marks(sp)
    with h5py.File(path) as f:
        fetch = sorted(calls(f, "fetch"), key=lambda c: c[2])
        assert len(fetch) == 4
        assert bracketed(fetch[0], m, "fetch 0"), fetch[0]
        # The gathered three ran interleaved; each lasts its own sleep and ends
        # in its own task's last step. No caller step follows that step in the
        # same task (the task ends there), so the bounds come from the loop's
        # order: the tasks start in gather's order, their sleeps' deadlines are
        # in that order too, so they end in it; each call ends after its own
        # last step began and before the next task's did.
        starts = [m["gather"]] + [m[f"fetch {d} 1"] for d in DELAYS]
        ends = [m[f"fetch {d} 2"] for d in DELAYS] + [m["gathered"]]
        for i, ((_, dur, start, end), delay) in enumerate(zip(fetch[1:], DELAYS)):
            assert starts[i] <= start <= starts[i + 1], (delay, start, starts)
            assert ends[i] <= end <= ends[i + 1], (delay, end, ends)
            assert at_least(dur, delay), (delay, dur)
        for name, seconds in (("method", 0.03), ("partial", 0.03), ("fails", 0.02)):
            [call] = calls(f, name)
            assert bracketed(call, m, name) and at_least(call[1], seconds), (name, call)
        if "--track-async" in flags:
            names = lane_names(f)
            assert len({c[0] for c in fetch[1:]}) == 3
            assert {names[c[0]] for c in fetch[1:]} == {f"Task-{n} (fetch)" for n in (2, 3, 4)}
            assert names[fetch[0][0]] == "Task-1 (main)"


def test_decorated_coroutine_with_profiling_off(sp):
    script = sp.script("""
        import asyncio
        import scope_profiler as sp
        sp.setup(deactivate_profiling=True)

        @sp.profile("fetch")
        async def fetch():
            await asyncio.sleep(0)
            return 7

        print(asyncio.run(fetch()), type(fetch).__name__)
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "7 function\n"


# ---- exceptions, cancellation, threads ------------------------------------------

ENDINGS = f"""
    import asyncio
    import scope_profiler as sp
    {MARK}
    async def boom():
        mark("boom", 0)
        try:
            with sp.region("boom"):
                mark("boom", 1)
                await asyncio.sleep(0.02)
                mark("boom", 2)
                raise ValueError("boom")
        finally:
            mark("boom", 3)

    async def sleeper(key):
        mark(key, 0)
        try:
            with sp.region("cancelled"):
                with sp.region("cancelled_inner"):
                    mark(key, 1)
                    try:
                        await asyncio.sleep(10)
                    finally:
                        mark(key, 2)
        finally:
            mark(key, 3)

    @sp.profile("deco_cancelled")
    async def deco_sleeper():
        mark("deco", 1)
        try:
            await asyncio.sleep(10)
        finally:
            mark("deco", 2)

    async def main():
        mark("main", 0)
        with sp.region("main"):
            mark("main", 1)
            tasks = [asyncio.create_task(boom(), name="boom"),
                     asyncio.create_task(sleeper("sleeper"), name="sleeper"),
                     asyncio.create_task(deco_sleeper(), name="deco")]
            mark("nap")
            await asyncio.sleep(0.05)
            tasks[1].cancel()
            tasks[2].cancel()
            res = await asyncio.gather(*tasks, return_exceptions=True)
            mark("gathered")
            print([type(r).__name__ for r in res])
            mark("after", 0)
            with sp.region("after"):
                mark("after", 1)
                await asyncio.sleep(0.01)
                mark("after", 2)
            mark("after", 3)
            mark("wait_for")
            try:
                await asyncio.wait_for(sleeper("wait_for"), 0.03)
            except asyncio.TimeoutError:
                print("timed out")
            mark("main", 2)
        mark("main", 3)

    asyncio.run(main())
    save_marks()
"""


def test_exceptions_and_cancellation_close_regions(sp):
    path, proc = run(sp, ENDINGS, "e.h5", "--track-async")
    assert proc.stdout == "['ValueError', 'CancelledError', 'CancelledError']\ntimed out\n"
    m = marks(sp)
    s = 1 / NS
    with h5py.File(path) as f:
        names = lane_names(f)
        [(lane, dur, _, _)] = boom = calls(f, "boom")
        assert names[lane] == "boom (boom)" and at_least(dur, 0.02)
        assert bracketed(boom[0], m, "boom"), boom
        cancelled, inner = calls(f, "cancelled"), calls(f, "cancelled_inner")
        assert len(cancelled) == len(inner) == 2
        assert names[cancelled[0][0]] == names[inner[0][0]] == "sleeper (sleeper)"
        # Open until the cancel, which came 50 ms after the mark "nap" at the
        # earliest, and closed in the cancelled task's own last step.
        for call in (cancelled[0], inner[0]):
            assert bracketed(call, m, "sleeper"), call
            assert at_least((call[3] - m["nap"]) * s, 0.05), call
        [deco] = calls(f, "deco_cancelled")
        assert names[deco[0]] == "deco (deco_sleeper)"
        # Tasks take their first step in creation order and their cancelled
        # step in cancel order, and the gather resumes main only after both.
        assert m["sleeper 1"] <= deco[2] <= m["deco 1"], (deco, m)
        assert m["deco 2"] <= deco[3] <= m["gathered"], (deco, m)
        assert at_least((deco[3] - m["nap"]) * s, 0.05), deco
        # The main task's own stack is intact: "after" closes inside "main".
        [(main_lane, main_dur, main_start, main_end)] = main = calls(f, "main")
        assert bracketed(main[0], m, "main") and at_least(main_dur, 0.05 + 0.01 + 0.03), main
        # wait_for's coroutine is cancelled at 30 ms. Python 3.11 runs it in a task
        # of its own; 3.12 and later await it in the calling task (asyncio.timeout),
        # so there it is main's lane and nests in "main".
        if wait_for_own_task():
            assert cancelled[1][0] == inner[1][0] not in (cancelled[0][0], main_lane, 0)
        else:
            assert cancelled[1][0] == inner[1][0] == main_lane
            assert main_start < cancelled[1][2] < cancelled[1][3] <= main_end
        # Open until the timeout, 30 ms after the mark "wait_for" at the earliest.
        for call in (cancelled[1], inner[1]):
            assert bracketed(call, m, "wait_for"), call
            assert at_least((call[3] - m["wait_for"]) * s, 0.03), call
        [(after_lane, after_dur, after_start, after_end)] = after = calls(f, "after")
        assert after_lane == main_lane and at_least(after_dur, 0.01)
        assert bracketed(after[0], m, "after"), after
        assert main_start < after_start < after_end < main_end
    tree = tree_rows(sp("summary", "--tree", "e.h5").stdout)
    labels = [r[0] for r in tree]
    at = labels.index("main")
    assert any(re.fullmatch(r"[└├]─ after", l) for l in labels[at + 1:])
    if wait_for_own_task():
        assert ("cancelled (2x)", 2) in tree
        assert any(re.fullmatch(r"[└├]─ cancelled_inner \(2x\)", l) for l in labels)
    else:   # one call at the top (the cancelled task), one under "main"
        assert ("cancelled", 1) in tree[at + 1:]
        assert any(re.fullmatch(r"[└├]─ cancelled", l) and n == 1 for l, n in tree[at + 1:])
        assert sum(re.fullmatch(r"\s*[└├]─ cancelled_inner", l) is not None and n == 1
                   for l, n in tree) == 2


def test_threads_and_tasks_share_the_lanes(sp):
    path, _ = run(sp, """
        import asyncio, threading
        import scope_profiler as sp

        async def job(tag):
            with sp.region("job"):
                await asyncio.sleep(0.01)

        async def many(tag):
            await asyncio.gather(*(asyncio.create_task(job(tag), name=f"{tag}{i}")
                                   for i in range(2)))

        def in_thread():
            with sp.region("thread_code"):   # no loop in this thread yet
                pass
            asyncio.run(many("t"))

        def callback():
            with sp.region("callback"):      # the loop runs, but no task
                pass

        async def main():
            asyncio.get_running_loop().call_soon(callback)
            t = threading.Thread(target=in_thread, name="helper")
            t.start()
            await many("m")
            await asyncio.to_thread(t.join)

        asyncio.run(main())
    """, "t.h5", "--track-async")
    with h5py.File(path) as f:
        names = lane_names(f)
        assert sorted(names) == list(range(len(names)))
        job = calls(f, "job")
        assert len(job) == 4 and len({c[0] for c in job}) == 4
        assert {names[c[0]] for c in job} == {"m0 (job)", "m1 (job)", "t0 (job)", "t1 (job)"}
        [(lane, *_)] = calls(f, "thread_code")
        assert names[lane] == "helper" and lane not in {c[0] for c in job}
        [(lane, *_)] = calls(f, "callback")
        assert lane == 0


def test_ended_tasks_are_not_kept_alive(sp):
    script = sp.script("""
        import asyncio, gc, weakref
        import scope_profiler as sp

        refs = []

        async def work():
            with sp.region("work"):
                await asyncio.sleep(0)

        async def main():
            for _ in range(50):
                task = asyncio.create_task(work())
                refs.append(weakref.ref(task))
                await task
            del task

        asyncio.run(main())
        gc.collect()
        print(sum(r() is not None for r in refs), sp.get_region("work").num_calls)
    """)
    proc = sp("run", "-q", "--track-async", "-o", "k.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "0 50\n"
    with h5py.File(sp.tmp / "k.h5") as f:
        assert len({c[0] for c in calls(f, "work")}) == 50


def test_track_async_where_asyncio_keeps_no_task_dict(sp):
    # Where asyncio.tasks._current_tasks is not a plain dict (other Python
    # builds), the lanes come from asyncio.current_task(): the same lanes.
    script = INTERLEAVED.replace(
        "import scope_profiler as sp\n",
        "import scope_profiler as sp\n"
        "    import asyncio.tasks\n"
        "    class View:  # a mapping, but no dict\n"
        "        real = asyncio.tasks._current_tasks\n"
        "        def get(self, loop):\n"
        "            return self.real.get(loop)\n"
        "    asyncio.tasks._current_tasks = View()\n"
        "    sp.setup(track_async=True, file_path='s.h5')\n")
    script += """
    res = sp.finalize(verbose=False, return_results=True)
    print(len(set(res["outer"][0].lanes.tolist())))
"""
    proc = sp("run", "-q", "--no-output", sp.script(script))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "3", proc.stdout


def test_a_coroutine_token_given_back_twice_ends_its_call_once(sp):
    # The coroutine wrapper's private enter/exit pair: an exit repeated
    # with the same token must not end the call again (the end of the run
    # counts every ended call once), so the call still open at the end is
    # closed there and the file reads back whole.
    sp.script("""
        import scope_profiler as sp
        r = sp.region("x")
        t1 = sp._coroutine_enter(r)
        sp._coroutine_exit(r, t1)
        sp._coroutine_exit(r, t1)
        sp._coroutine_enter(r)
    """)
    proc = sp("run", "-q", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    exported = sp("export", "out.h5", "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    rows = [l.split(",") for l in exported.stdout.splitlines()[1:]]
    assert [r[0] for r in rows] == ["x", "x"]
    assert all(float(r[5]) >= float(r[4]) for r in rows)


NEVER_AWAITED = """
import sys, warnings
import scope_profiler as sp
warnings.simplefilter("always")

@sp.profile("c")
async def coro():
    pass

if sys.argv[1] == "closed":
    coro().close()
else:
    c = coro()
    del c
print("end")
"""


@pytest.mark.parametrize("how", ["closed", "dropped"])
def test_a_decorated_coroutine_never_awaited_warns_as_plain_python(sp, how):
    """A decorated coroutine closed before it started warns of nothing, one
    dropped unawaited warns once, named as the function's: as the same
    script under plain python (a no-op scope_profiler beside it). Before: a
    warning after close(), two when dropped (the function's own coroutine,
    held by the timed one, warned too)."""
    import subprocess
    script = sp.script(NEVER_AWAITED, name="never.py")
    proc = sp("run", "-q", "--no-output", script, how)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "end\n"
    stub = sp.tmp / "stub"
    stub.mkdir()
    (stub / "scope_profiler.py").write_text("def profile(name=None):\n    return lambda f: f\n")
    plain = subprocess.run([embedded().executable, str(script), how], capture_output=True, text=True,
                           timeout=120, cwd=sp.tmp, env={**os.environ, "PYTHONPATH": str(stub)})
    assert plain.returncode == 0 and plain.stdout == "end\n", plain.stderr
    warning = "RuntimeWarning: coroutine 'coro' was never awaited"
    assert proc.stderr.count(warning) == plain.stderr.count(warning) == (0 if how == "closed" else 1), \
        (proc.stderr, plain.stderr)


@pytest.mark.parametrize("flags", [(), ("--memory",)], ids=["plain", "memory"])
def test_recursive_calls_after_an_event_loop_ran_keep_their_lanes(sp, flags):
    """run --recursive: the event loop starting turns task lanes on during
    the run; the main thread's hook, already installed, records lanes from
    then on too. Before (3.11), its calls after asyncio.run() left their
    lane slots unwritten: lanes no thread or task had, the recursion split
    into roots in the tree."""
    out, _ = run(sp, """
        import asyncio

        def deep(n):
            if n:
                deep(n - 1)

        async def main():
            await asyncio.sleep(0)

        asyncio.run(main())
        for i in range(50):
            deep(5)
    """, "out.h5", "--recursive", *flags)
    with h5py.File(out) as f:
        named = set(lane_names(f))
        for name, g in regions(f).items():
            if "lanes" in g:
                assert set(int(x) for x in g["lanes"]) <= named, name
        nodes = tree(f)
        assert all(lane == 0 for lane, *_ in calls(f, "__main__.deep"))
    chain = [i for i, (_, name, _, _) in enumerate(nodes) if name == "__main__.deep"]
    assert [nodes[i][2] for i in chain] == [50] * 6
    top = nodes[chain[0]][0]
    assert top != -1 and nodes[top][1] != "__main__.deep"
    for parent, child in zip(chain, chain[1:]):
        assert nodes[child][0] == parent


def test_a_profiler_of_the_scripts_sees_no_code_of_ours_around_the_loop(sp):
    """run watches asyncio.events._set_running_loop (task lanes once a loop
    runs) with a builtin of _asyncio's, as python's own: a cProfile of
    asyncio.run() inside the script shows the same rows as under python
    (before: a `<scope_profiler> _set_running_loop` row of a Python
    wrapper)."""
    import subprocess
    script = sp.script('''
import asyncio, cProfile, io, pstats

async def main():
    await asyncio.sleep(0)

pr = cProfile.Profile()
pr.enable()
asyncio.run(main())
pr.disable()
s = io.StringIO()
pstats.Stats(pr, stream=s).print_stats()
print(sorted(l.split(None, 5)[-1] for l in s.getvalue().splitlines()
             if "set_running_loop" in l or "scope_profiler" in l))
''')
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    assert want.returncode == 0, want.stderr
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want.stdout and "_set_running_loop" in proc.stdout
