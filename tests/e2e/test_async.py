"""--track-async and setup(track_async=True): a lane per asyncio task, so
regions of interleaved tasks nest per task; and decorated `async def`
functions timed for their awaited run (in every mode). Real scripts under
the real executable, checked in the HDF5 file, the summary tree and the
Chrome trace."""
import json
import re
import sys

import h5py
import pytest

from conftest import regions

NS = 1_000_000_000
# asyncio.wait_for(coro) wraps the coroutine in a task of its own up to Python 3.11;
# from 3.12 it awaits it in the calling task. The tests run under the Python the
# executable embeds (make e2e passes the same interpreter).
WAIT_FOR_OWN_TASK = sys.version_info < (3, 12)
DELAYS = (0.06, 0.12, 0.18)
# A region lasts its own sleep: at least that, and less than the gap to the
# next task's, so a call closed by another task is caught.
SLACK = 0.05

INTERLEAVED = f"""
    import asyncio
    import scope_profiler as sp

    @sp.profile("step")
    def step():
        return 1

    async def worker(delay):
        with sp.region("outer"):
            await asyncio.sleep(delay)
            step()
            with sp.region("inner"):
                await asyncio.sleep(delay)

    async def main():
        with sp.region("main"):
            # All three are inside "outer" at once, and inside "inner" at once.
            await asyncio.gather(*(asyncio.create_task(worker(d), name=f"w{{i}}")
                                   for i, d in enumerate({DELAYS!r})))

    with sp.region("before"):
        pass
    asyncio.run(main())
"""


def run(sp, text, out, *flags, name="script.py"):
    script = sp.script(text, name=name)
    proc = sp("run", "-q", "-o", out, *flags, script)
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / out, proc


def lane_names(f):
    """{lane: name} from the /metadata "lanes" attribute."""
    text = f["metadata"].attrs["lanes"].decode()
    return {int(k): v for k, v in (item.split("=", 1) for item in text.split("; "))}


def calls(f, region):
    """[(lane, duration in s, start, end)] of a region, in call order."""
    g = regions(f)[region]
    starts, ends = g["start_times"][:].tolist(), g["end_times"][:].tolist()
    lanes = g["lanes"][:].tolist() if "lanes" in g else [0] * len(starts)
    return [(lane, (e - s) / NS, s, e) for lane, s, e in zip(lanes, starts, ends)]


def lasts(duration, seconds):
    return seconds - 0.002 <= duration < seconds + SLACK


def tree_rows(text):
    """The rows of `summary --tree`: [(label with its tree prefix, calls)]."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(.*?\S)\s{2,}(\d+)\s+\d+\.\d+", line)
        if m:
            rows.append((m.group(1), int(m.group(2))))
    return rows


# ---- interleaved tasks --------------------------------------------------------

def test_interleaved_tasks_get_a_lane_each(sp):
    path, _ = run(sp, INTERLEAVED, "a.h5", "--track-async")
    with h5py.File(path) as f:
        names = lane_names(f)
        assert f["metadata"].attrs["mode"].decode() == "async"
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
        # Each task's calls last its own sleeps, although the three tasks
        # were inside the same region at the same time.
        for lane, dur, start, end in outer:
            delay = DELAYS[int(names[lane][1])]
            assert lasts(dur, 2 * delay), (names[lane], dur)
            [(_, idur, istart, iend)] = [c for c in inner if c[0] == lane]
            assert lasts(idur, delay), (names[lane], idur)
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

    # Without lanes the tasks mix: one task's "outer" lands in another's.
    run(sp, INTERLEAVED, "mixed.h5")
    with h5py.File(sp.tmp / "mixed.h5") as f:
        assert "lanes" not in regions(f)["outer"] and "lanes" not in f["rank0/events"]
    mixed = [r[0] for r in tree_rows(sp("summary", "--tree", "mixed.h5").stdout)]
    assert any(re.search(r"[└├]─ outer", l) for l in mixed)


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

DECORATED = f"""
    import asyncio, functools, inspect
    import scope_profiler as sp

    @sp.profile("fetch")
    async def fetch(delay):
        await asyncio.sleep(delay)
        return delay

    class Client:
        @sp.profile("method")
        async def get(self, delay):
            await asyncio.sleep(delay)
            return 2 * delay

    async def plain(delay):
        await asyncio.sleep(delay)
        return -delay

    partial = sp.profile("partial")(functools.partial(plain, 0.03))

    @sp.profile("fails")
    async def fails():
        await asyncio.sleep(0.02)
        raise KeyError("gone")

    async def main():
        assert inspect.iscoroutinefunction(fetch)
        coro = fetch(0)
        assert inspect.iscoroutine(coro) and coro.__qualname__ == "fetch"
        await coro
        assert await asyncio.gather(*(fetch(d) for d in {DELAYS!r})) == list({DELAYS!r})
        assert await Client().get(0.03) == 0.06
        assert await partial() == -0.03
        try:
            await fails()
        except KeyError:
            pass
        else:
            raise AssertionError("no KeyError")

    asyncio.run(main())
    print("ok")
"""


@pytest.mark.parametrize("flags", [(), ("--track-threads",), ("--track-async",)],
                         ids=["time-only", "threads", "async"])
def test_decorated_coroutines_time_their_awaited_run(sp, flags):
    path, proc = run(sp, DECORATED, "d.h5", *flags)
    assert proc.stdout == "ok\n"
    with h5py.File(path) as f:
        fetch = calls(f, "fetch")
        assert len(fetch) == 4
        assert lasts(fetch[0][1], 0)
        # The gathered three ran interleaved; each lasts its own sleep.
        for (lane, dur, _, _), delay in zip(fetch[1:], DELAYS):
            assert lasts(dur, delay), (delay, dur)
        assert lasts(calls(f, "method")[0][1], 0.03)
        assert lasts(calls(f, "partial")[0][1], 0.03)
        [(_, dur, _, _)] = calls(f, "fails")
        assert lasts(dur, 0.02)
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

ENDINGS = """
    import asyncio
    import scope_profiler as sp

    async def boom():
        with sp.region("boom"):
            await asyncio.sleep(0.02)
            raise ValueError("boom")

    async def sleeper():
        with sp.region("cancelled"):
            with sp.region("cancelled_inner"):
                await asyncio.sleep(10)

    @sp.profile("deco_cancelled")
    async def deco_sleeper():
        await asyncio.sleep(10)

    async def main():
        with sp.region("main"):
            tasks = [asyncio.create_task(boom(), name="boom"),
                     asyncio.create_task(sleeper(), name="sleeper"),
                     asyncio.create_task(deco_sleeper(), name="deco")]
            await asyncio.sleep(0.05)
            tasks[1].cancel()
            tasks[2].cancel()
            res = await asyncio.gather(*tasks, return_exceptions=True)
            print([type(r).__name__ for r in res])
            with sp.region("after"):
                await asyncio.sleep(0.01)
            try:
                await asyncio.wait_for(sleeper(), 0.03)
            except asyncio.TimeoutError:
                print("timed out")

    asyncio.run(main())
"""


def test_exceptions_and_cancellation_close_regions(sp):
    path, proc = run(sp, ENDINGS, "e.h5", "--track-async")
    assert proc.stdout == "['ValueError', 'CancelledError', 'CancelledError']\ntimed out\n"
    with h5py.File(path) as f:
        names = lane_names(f)
        [(lane, dur, _, _)] = calls(f, "boom")
        assert names[lane] == "boom (boom)" and lasts(dur, 0.02)
        cancelled, inner = calls(f, "cancelled"), calls(f, "cancelled_inner")
        assert len(cancelled) == len(inner) == 2
        assert names[cancelled[0][0]] == names[inner[0][0]] == "sleeper (sleeper)"
        assert lasts(cancelled[0][1], 0.05) and lasts(inner[0][1], 0.05)
        [(lane, dur, _, _)] = calls(f, "deco_cancelled")
        assert names[lane] == "deco (deco_sleeper)" and lasts(dur, 0.05)
        # The main task's own stack is intact: "after" closes inside "main".
        [(main_lane, main_dur, main_start, main_end)] = calls(f, "main")
        # wait_for's coroutine is cancelled at 30 ms. Python 3.11 runs it in a task
        # of its own; 3.12 and later await it in the calling task (asyncio.timeout),
        # so there it is main's lane and nests in "main".
        if WAIT_FOR_OWN_TASK:
            assert cancelled[1][0] == inner[1][0] not in (cancelled[0][0], main_lane, 0)
        else:
            assert cancelled[1][0] == inner[1][0] == main_lane
            assert main_start < cancelled[1][2] < cancelled[1][3] <= main_end
        assert lasts(cancelled[1][1], 0.03) and lasts(inner[1][1], 0.03)
        [(after_lane, after_dur, after_start, after_end)] = calls(f, "after")
        assert after_lane == main_lane and lasts(after_dur, 0.01)
        assert main_start < after_start < after_end < main_end
        assert lasts(main_dur, 0.05 + 0.01 + 0.03)
    tree = tree_rows(sp("summary", "--tree", "e.h5").stdout)
    labels = [r[0] for r in tree]
    at = labels.index("main")
    assert any(re.fullmatch(r"[└├]─ after", l) for l in labels[at + 1:])
    if WAIT_FOR_OWN_TASK:
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
