"""Decorated generator functions, async generator functions and coroutines
under `scope-profiler run`: each resume of a generator (next(), send(),
throw(), close() of a suspended one; the first run up to the first yield and
the last one that returns) is one call of the region, the time it is
suspended is not, and creating it records nothing; an async generator's
each awaited step is one call; a coroutine's awaited run is one call.
Counts, nesting and orderings against marks the scripts take, checked in the
written file; durations only as lower bounds the script's own sleeps give,
or as ratios within one run."""
import json

import h5py
import pytest

from conftest import regions, tree

NS = 1_000_000_000

MARK = """
    import json as _json, time as _time
    MARKS = {}

    def mark(key):
        MARKS[key] = _time.perf_counter_ns()

    def save_marks():
        with open("marks.json", "w") as out:
            _json.dump(MARKS, out)
"""


def run(sp, text, *flags, out="g.h5"):
    script = sp.script(text)
    proc = sp("run", "-q", "-o", out, *flags, script)
    assert proc.returncode == 0, proc.stderr
    return sp.tmp / out, proc


def calls(f, name):
    """[(start, end)] in ns of a region's calls, in start order."""
    r = regions(f)[name]
    return sorted(zip(r["start_times"].tolist(), r["end_times"].tolist()))


def marks(sp):
    return json.loads((sp.tmp / "marks.json").read_text())


def inside(call, lo, hi):
    return lo <= call[0] <= call[1] <= hi


CONSUMED = f"""
    import time
    import scope_profiler as sp
    {MARK}
    @sp.profile("gen")
    def gen(n):
        for i in range(n):
            time.sleep(0.01)
            yield i
        time.sleep(0.01)

    mark("create 0")
    g = gen(5)
    mark("create 1")
    got = []
    with sp.region("outer"):
        for k, x in enumerate(g):
            got.append(x)
            mark(f"pause {{k}} 0")
            time.sleep(0.02)          # the consumer's time, not the generator's
            mark(f"pause {{k}} 1")
    print(got)
    save_marks()
"""


def test_each_resume_is_one_call(sp):
    path, proc = run(sp, CONSUMED)
    assert proc.stdout == "[0, 1, 2, 3, 4]\n"
    m = marks(sp)
    with h5py.File(path) as f:
        gen = calls(f, "gen")
        # Five runs up to a yield and the last one that returns.
        assert len(gen) == 6
        # Creation records nothing: the first call begins after it.
        assert gen[0][0] >= m["create 1"]
        # Each resume lies between two of the consumer's pauses, never over one.
        for i, call in enumerate(gen):
            lo = m["create 1"] if i == 0 else m[f"pause {i - 1} 1"]
            hi = m[f"pause {i} 0"] if i < 5 else float("inf")
            assert inside(call, lo, hi), (i, call)
        # The body's sleeps are in the calls (each run sleeps 10 ms at least),
        # the consumer's pauses are not: within the one "outer" call, the
        # generator's total is most of what is not a pause.
        total = sum(e - s for s, e in gen)
        assert total >= 6 * 0.01 * NS
        [(o0, o1)] = calls(f, "outer")
        pauses = sum(m[f"pause {k} 1"] - m[f"pause {k} 0"] for k in range(5))
        assert total <= (o1 - o0) - pauses
        assert total >= 0.5 * ((o1 - o0) - pauses)
        # The resumes nest under the enclosing `with`, as a block would.
        t = tree(f)
        [outer] = [i for i, row in enumerate(t) if row[1] == "outer"]
        assert [(p, n, c) for p, n, c, _ in t if n == "gen"] == [(outer, "gen", 6)]


def test_yield_from_send_throw_close(sp):
    path, proc = run(sp, """
        import collections.abc
        import scope_profiler as sp

        @sp.profile
        def inner():
            yield 1
            yield 2
            return "r"

        def delegating():
            r = yield from inner()
            yield r

        print(list(delegating()))

        closed = []

        @sp.profile("acc")
        def acc():
            total = 0
            try:
                while True:
                    try:
                        x = yield total
                    except ValueError:
                        x = 100
                    total += x
            finally:
                closed.append(total)

        g = acc()
        print(isinstance(g, collections.abc.Generator), iter(g) is g, g.__name__, g.gi_frame is not None)
        print(next(g), g.send(5), g.throw(ValueError), closed)
        g.close()
        g.close()                   # finished: nothing runs, nothing recorded
        print(closed, g.gi_frame)
        acc().close()               # never started: nothing runs, nothing recorded

        @sp.profile("ret")
        def ret():
            x = yield
            return x * 2

        r = ret()
        next(r)
        try:
            r.send(21)
        except StopIteration as stop:
            print("returned", stop.value)
    """)
    assert proc.stdout.splitlines() == [
        "[1, 2, 'r']",
        "True True acc True",
        "0 5 105 []",
        "[105] None",
        "returned 42",
    ]
    with h5py.File(path) as f:
        regs = regions(f)
        [inner] = [n for n in regs if n.endswith("inner")]
        assert regs[inner].attrs["num_calls"] == 3       # two yields and the return
        # next, send, throw, and the close that ran the finally block.
        assert regs["acc"].attrs["num_calls"] == 4
        assert regs["ret"].attrs["num_calls"] == 2


ABANDONED = f"""
    import gc
    import time
    import scope_profiler as sp
    {MARK}
    @sp.profile("gen")
    def gen():
        try:
            for i in range(100):
                time.sleep(0.005)
                yield i
        finally:
            time.sleep(0.01)        # cleanup when closed by the collector

    g = gen()
    next(g), next(g)
    del g
    gc.collect()
    for x in gen():                 # a loop left half-way
        if x == 2:
            break
    gc.collect()
    mark("abandoned")
    time.sleep(0.05)
    save_marks()
"""


def test_an_abandoned_generator_leaves_no_open_call_and_its_cleanup_is_one(sp):
    path, proc = run(sp, ABANDONED)
    m = marks(sp)
    with h5py.File(path) as f:
        gen = calls(f, "gen")
        # Two resumes, then three; each one's cleanup on collection (its
        # finally block) is one call more, as an explicit close() and as
        # cProfile count it (it was no call before); none stays open.
        assert len(gen) == 7
        assert all(s < e <= m["abandoned"] for s, e in gen), gen
        assert all(e - s >= 0.005 * NS for s, e in gen)
        assert sum(e - s >= 0.01 * NS for s, e in gen) >= 2   # the two cleanups


def test_a_resume_that_runs_no_body_code_is_no_call(sp):
    """next() or send() on a finished generator, a value sent to a fresh
    one, a resume from within its own run: python runs none of the body
    (StopIteration, TypeError, ValueError), cProfile counts no call, nor
    does the region (each was a call before)."""
    path, proc = run(sp, """
        import scope_profiler as sp

        @sp.profile("gen")
        def gen():
            yield 1
            yield 2

        g = gen()
        print(list(g))                          # three calls
        for _ in range(5):
            next(g, None)
        try:
            g.send(None)
        except StopIteration:
            print("stop")
        try:
            gen().send(5)
        except TypeError:
            print("type")

        @sp.profile("me")
        def me():
            yield next(it)

        it = me()
        try:
            next(it)                            # one call: the inner next runs nothing
        except ValueError:
            print("value")
    """)
    assert proc.stdout == "[1, 2]\nstop\ntype\nvalue\n"
    with h5py.File(path) as f:
        assert len(calls(f, "gen")) == 3
        assert len(calls(f, "me")) == 1


ASYNC = f"""
    import asyncio
    import time
    import scope_profiler as sp
    {MARK}
    @sp.profile("agen")
    async def agen(n):
        for i in range(n):
            await asyncio.sleep(0.01)
            yield i

    @sp.profile("coro")
    async def coro(k):
        await asyncio.sleep(0.01)
        await asyncio.sleep(0.01)
        return k

    async def main():
        got = []
        with sp.region("outer"):
            mark("create 0")
            a = agen(3)
            mark("create 1")
            k = 0
            async for x in a:
                got.append(x)
                mark(f"pause {{k}} 0")
                await asyncio.sleep(0.02)
                mark(f"pause {{k}} 1")
                k += 1
        print(got, await coro(1), await coro(2))
        c = coro(3)
        c.close()                     # never awaited: nothing recorded
        b = agen(10)
        print(await b.__anext__(), await b.asend(None))
        await b.aclose()              # suspended: its cleanup is one call
        await agen(1).aclose()        # never started: nothing recorded

    asyncio.run(main())
    save_marks()
"""


@pytest.mark.parametrize("flags", [(), ("--track-async",)], ids=["default", "track-async"])
def test_async_generators_and_coroutines(sp, flags):
    path, proc = run(sp, ASYNC, *flags)
    assert proc.stdout == "[0, 1, 2] 1 2\n0 1\n"
    m = marks(sp)
    with h5py.File(path) as f:
        agen = calls(f, "agen")
        # Three steps up to a yield, the last that ends the loop; then two
        # steps and the aclose() of the second generator.
        assert len(agen) == 4 + 3
        assert agen[0][0] >= m["create 1"]
        for k in range(4):
            lo = m["create 1"] if k == 0 else m[f"pause {k - 1} 1"]
            hi = m[f"pause {k} 0"] if k < 3 else float("inf")
            assert inside(agen[k], lo, hi), (k, agen[k])
        # Each of the first three steps awaits its 10 ms sleep.
        assert all(e - s >= 0.009 * NS for s, e in agen[:3]) and all(e - s >= 0.009 * NS for s, e in agen[4:6])
        # A coroutine's awaited run is one call, its awaits included.
        coro = calls(f, "coro")
        assert len(coro) == 2
        assert all(e - s >= 0.019 * NS for s, e in coro)


@pytest.mark.parametrize("flags", [("--aggregate",), ("--line-profile",), ("--track-threads",), ("--recursive",)],
                         ids=["aggregate", "line-profile", "threads", "recursive"])
def test_other_modes_count_resumes(sp, flags):
    path, proc = run(sp, """
        import scope_profiler as sp

        def helper(i):
            return i * 2

        @sp.profile("gen")
        def gen(n):
            for i in range(n):
                yield helper(i)

        with sp.region("outer"):
            print(sum(gen(4)))
    """, *flags)
    assert proc.stdout == "12\n"
    with h5py.File(path) as f:
        assert regions(f)["gen"].attrs["num_calls"] == 5
        t = tree(f)
        [outer] = [i for i, row in enumerate(t) if row[1] == "outer"]
        [gen] = [i for i, row in enumerate(t) if row[1] == "gen"]
        assert t[gen][0] == outer and t[gen][2] == 5
        if "--recursive" in flags:
            # The hook sees the body's calls under each resume.
            helpers = [row for row in t if row[1].endswith("helper")]
            assert helpers and all(t[p][1] in ("gen",) for p, *_ in helpers)
            assert sum(c for _, _, c, _ in helpers) == 4
        if "--line-profile" in flags:
            lines = sp("line-profile", path.name)
            assert lines.returncode == 0 and "yield helper(i)" in lines.stdout


def test_the_generator_object_and_the_disabled_mode(sp):
    """Recording, the decorated function returns a generator of its own type
    (no generator for inspect, one for collections.abc); disabled, the
    decorator returns the function itself, whose generators are the plain ones."""
    script = sp.script("""
        import collections.abc
        import inspect
        import scope_profiler as sp

        @sp.profile("gen")
        def gen():
            yield 1

        g = gen()
        print(type(gen).__name__, type(g).__name__, inspect.isgenerator(g),
              isinstance(g, collections.abc.Generator), list(g))
    """)
    proc = sp("run", "-q", "--disable", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "function generator True True [1]\n"
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ProfiledFunction TimedGenerator False True [1]\n"


def test_a_decorated_async_generator_adds_no_frame_to_tracebacks(sp):
    """The steps of a decorated async generator run through no Python
    frame of the profiler: a traceback through it is python's (a frame
    `<scope_profiler>` ... `_step` was in it), and each step that ran is
    still one call, the one that raised too."""
    script = sp.script("""
        import asyncio
        import scope_profiler as sp

        @sp.profile("ag")
        async def ag():
            yield 1
            await asyncio.sleep(0)
            raise ValueError("boom")

        async def main():
            async for x in ag():
                print(x)

        asyncio.run(main())
    """)
    proc = sp("run", "-q", "-o", "g.h5", script)
    assert proc.returncode == 1
    assert proc.stdout == "1\n"
    assert "scope_profiler" not in proc.stderr and proc.stderr.endswith("ValueError: boom\n"), proc.stderr
    with h5py.File(sp.tmp / "g.h5") as f:
        assert len(calls(f, "ag")) == 2


def test_a_collected_generator_that_ignores_generatorexit_is_finalized_once(sp):
    """Its cleanup on collection runs once, and python says what went
    wrong in its own words, naming the generator (the timed cleanup ran it
    a second time, the generator's finalizer after the wrapper's)."""
    script = sp.script("""
        import scope_profiler as sp

        @sp.profile("stubborn")
        def stubborn():
            while True:
                try:
                    yield 1
                except GeneratorExit:
                    print("cleanup ran")

        s = stubborn()
        next(s)
        del s
        print("end")
    """)
    proc = sp("run", "-q", "-o", "g.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "cleanup ran\nend\n"
    assert proc.stderr.count("Exception ignored") == 1, proc.stderr
    assert "<generator object stubborn" in proc.stderr and "RuntimeError: generator ignored GeneratorExit" \
        in proc.stderr, proc.stderr
    with h5py.File(sp.tmp / "g.h5") as f:
        assert len(calls(f, "stubborn")) == 2   # the first resume and the cleanup


def test_a_wrapper_the_collector_cleared_raises_instead_of_crashing(sp):
    """The collector clears each object of a reference cycle (tp_clear)
    before freeing it; a wrapper that is touched after (its generator gone)
    says so as a finished one would, never dereferences what is gone. The
    clear is called as the collector calls it (the type's tp_clear slot)."""
    script = sp.script("""
        import asyncio, ctypes
        import scope_profiler as sp

        get_slot = ctypes.pythonapi.PyType_GetSlot
        get_slot.restype = ctypes.c_void_p
        get_slot.argtypes = [ctypes.py_object, ctypes.c_int]
        PY_TP_CLEAR = 51

        def clear(obj):
            fn = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(get_slot(type(obj), PY_TP_CLEAR))
            assert fn(obj) == 0

        def outcome(f):
            try:
                f()
            except BaseException as e:
                return type(e).__name__
            return "ok"

        @sp.profile("g")
        def g():
            yield 1

        @sp.profile("ag")
        async def ag():
            yield 1

        gen = g()
        clear(gen)
        print("gen", outcome(lambda: next(gen)), outcome(lambda: gen.gi_frame), outcome(lambda: repr(gen)))

        agen = ag()
        step = agen.__anext__()
        clear(agen)
        print("agen", outcome(agen.__anext__), outcome(lambda: agen.asend(None)), outcome(agen.athrow),
              outcome(agen.aclose), outcome(lambda: agen.ag_frame), outcome(lambda: repr(agen)))

        clear(step)
        print("step", outcome(lambda: step.send(None)), outcome(lambda: step.throw(ValueError)),
              outcome(step.close), outcome(lambda: step.gi_frame), outcome(lambda: repr(step)))

        async def main():
            async for x in ag():
                print("still", x)
        asyncio.run(main())
    """)
    proc = sp("run", "-q", "-o", "g.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "gen StopIteration AttributeError ok",
        "agen RuntimeError RuntimeError RuntimeError RuntimeError AttributeError ok",
        "step RuntimeError RuntimeError ok AttributeError ok",
        "still 1",
    ], proc.stdout
    with h5py.File(sp.tmp / "g.h5") as f:
        assert len(calls(f, "ag")) == 2   # the last loop's two steps; nothing of the cleared ones
