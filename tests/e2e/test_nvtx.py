"""`run --nvtx` / `setup(use_nvtx=True)`: every region call also an NVTX
range, checked for real: NVTX's own loader (compiled into the profiler from
NVTX3's headers) opens the tool named by NVTX_INJECTION64_PATH, as Nsight
Systems attaches. The tool here is tests/e2e/nvtx_tool.c, built by the
fixture below into the build folder: it fills NVTX's callback tables and
logs every domain, registered string, push/pop and start/end with its
thread. The tests compare that log with the profile the same run wrote:
per thread the ranges balance and nest as the calls do, and the names and
call counts are the profile's, thread by thread."""
import collections
import os
import pathlib
import shutil
import signal
import subprocess

import h5py
import pytest

from conftest import BINARY, one_line_error, regions, tree

TOOL_SRC = pathlib.Path(__file__).with_name("nvtx_tool.c")
NOT_BUILT = "built without NVTX"


def nvtx_include():
    """The folder holding nvtx3/nvToolsExt.h, found as the Makefile finds it."""
    given = os.environ.get("NVTX_INCLUDE")
    cands = [given] if given else []
    nvcc = shutil.which("nvcc")
    if nvcc:
        cands.append(str(pathlib.Path(os.path.realpath(nvcc)).parent.parent / "include"))
    cands += ["/usr/local/cuda/include", "/usr/include"]
    for c in cands:
        if c and (pathlib.Path(c) / "nvtx3" / "nvToolsExt.h").is_file():
            return c
    return None


def built_with_nvtx():
    proc = subprocess.run([BINARY, "run", "--nvtx", "--no-output", "-q", "-c", "pass"],
                          capture_output=True, text=True)
    return NOT_BUILT not in proc.stderr


@pytest.fixture(scope="module")
def tool():
    """build/nvtx-tool/libnvtxtool.so, or a skip saying what is missing."""
    inc = nvtx_include()
    if not inc:
        pytest.skip("no nvtx3/nvToolsExt.h (CUDA toolkit) here: the NVTX tool cannot be built")
    if not built_with_nvtx():
        pytest.skip("this scope-profiler was built without NVTX")
    folder = pathlib.Path(BINARY).resolve().parent / "nvtx-tool"
    folder.mkdir(exist_ok=True)
    lib = folder / "libnvtxtool.so"
    tmp = folder / f"libnvtxtool.so.{os.getpid()}"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
                    "-idirafter", inc, "-o", str(tmp), str(TOOL_SRC)], check=True)
    os.replace(tmp, lib)
    return lib


def run_traced(sp, tool, *args):
    log = sp.tmp / "nvtx.log"
    if log.exists():
        log.unlink()
    proc = sp("run", "-q", *args, env={"NVTX_INJECTION64_PATH": str(tool), "NVTX_TOOL_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    return proc, log.read_text().splitlines() if log.exists() else []


def parse(lines):
    """The log as (domains {handle: name}, per thread [(op, domain, name or id)])."""
    domains, strings, threads = {}, {}, collections.defaultdict(list)
    for line in lines:
        f = line.split(" ", 4)
        if f[0] == "domain":
            domains[f[1]] = line.split(" ", 2)[2]
        elif f[0] == "string":
            strings[f[2]] = line.split(" ", 3)[3]
        elif f[0] == "push":
            threads[f[1]].append(("push", f[2], line.split(" ", 3)[3]))
        elif f[0] == "pop":
            threads[f[1]].append(("pop", f[2], None))
        elif f[0] == "start":
            threads[f[1]].append(("start", f[2], (f[3], line.split(" ", 4)[4])))
        elif f[0] == "end":
            threads[f[1]].append(("end", f[2], f[3]))
    return domains, strings, threads


def push_pop_paths(events):
    """A thread's pushes and pops replayed: {path of names: ranges}, and
    whether they balanced (never a pop of nothing, nothing left open)."""
    stack, paths, balanced = [], collections.Counter(), True
    for op, _, name in events:
        if op == "push":
            stack.append(name)
            paths[tuple(stack)] += 1
        elif op == "pop":
            if not stack:
                balanced = False
            else:
                stack.pop()
    return paths, balanced and not stack


def file_paths(f):
    """The profile's call tree as {path of names: calls}."""
    t = tree(f)
    paths = collections.Counter()
    for i, (parent, name, calls, _) in enumerate(t):
        path, p = [name], parent
        while p >= 0:
            path.append(t[p][1])
            p = t[p][0]
        paths[tuple(reversed(path))] += calls
    return paths


def per_thread_counts(f):
    """The profile's calls per lane, as sorted [(name, calls)] per lane."""
    lanes = collections.defaultdict(collections.Counter)
    for name, r in regions(f).items():
        column = r["lanes"] if "lanes" in r else [0] * int(r.attrs["num_calls"])
        for lane in column:
            lanes[int(lane)][name] += 1
    return sorted(sorted(c.items()) for c in lanes.values())


SCRIPT = """
    import threading
    import scope_profiler as sp

    @sp.profile("kernel")
    def kernel(n):
        return sum(range(n))

    @sp.profile("producer")
    def producer():
        # Each resume is a call; a `with` block left open across a yield
        # would not nest in it (the profile says so; NVTX pops the
        # innermost range: scope-profiler-run(1)).
        for i in range(3):
            with sp.region("item"):
                v = i
            yield v

    def step(k):
        with sp.region("step"):
            kernel(10)
            with sp.region("inner"):
                kernel(k)

    def worker():
        for i in range(4):
            step(i)

    for i in range(3):
        step(i)
    for x in producer():
        kernel(x)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
"""


def test_ranges_are_the_calls_per_thread(sp, tool):
    """Each call of a `with` block, a decorated function and a decorated
    generator's resume is a range pushed and popped on its own thread, in
    the domain "scope-profiler", named by a string registered once per
    region; the ranges nest as the profile's call tree, and each thread's
    ranges are the calls of one lane of the profile."""
    sp.script(SCRIPT)
    _, lines = run_traced(sp, tool, "--nvtx", "script.py")
    domains, strings, threads = parse(lines)
    assert list(domains.values()) == ["scope-profiler"]
    names = sorted(strings.values())
    assert names == sorted(set(names)) == ["inner", "item", "kernel", "producer", "step"]
    assert len(threads) == 2
    all_paths = collections.Counter()
    for events in threads.values():
        assert {d for _, d, _ in events} == set(domains)
        paths, balanced = push_pop_paths(events)
        assert balanced, events
        all_paths += paths
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        assert f["metadata"].attrs["nvtx"] in ("true", b"true")
        assert all_paths == file_paths(f)
        per_tid = sorted(sorted(collections.Counter(n for op, _, n in ev if op == "push").items())
                         for ev in threads.values())
        assert per_tid == per_thread_counts(f)
    assert all_paths[("step", "inner", "kernel")] == 7
    assert all_paths[("producer", "item")] == 3


def test_recursive_functions_are_ranges(sp, tool):
    """--recursive: every traced function call is a range, nested as the
    calls (a recursion's depth included); the root region (the script) and
    calls still open at the end close with the run."""
    sp.script("""
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)

        def gen():
            yield fib(3)
            yield fib(2)

        fib(5)
        print(sum(gen()))
    """)
    _, lines = run_traced(sp, tool, "--recursive", "--nvtx", "script.py")
    _, _, threads = parse(lines)
    assert len(threads) == 1
    (events,) = threads.values()
    paths, balanced = push_pop_paths(events)
    assert balanced
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        assert paths == file_paths(f)
        counts = {n: int(r.attrs["num_calls"]) for n, r in regions(f).items()}
    assert counts["__main__.fib"] == 15 + 5 + 3 == sum(c for p, c in paths.items()
                                                       if p[-1] == "__main__.fib")
    assert max(len(p) for p in paths) >= 7   # script, <module>, fib x5


def test_async_lanes_are_start_end_ranges(sp, tool):
    """--track-async: a task's calls interleave with other tasks' on one
    thread, so each is a range started and ended by id (never a push): every
    start ends once, and the names and counts are the profile's."""
    sp.script("""
        import asyncio
        import scope_profiler as sp

        @sp.profile("job")
        async def job(i):
            with sp.region("phase"):
                await asyncio.sleep(0.001 * i)
            await asyncio.sleep(0)

        async def main():
            await asyncio.gather(*(job(i) for i in range(4)))

        asyncio.run(main())
    """)
    _, lines = run_traced(sp, tool, "--track-async", "--nvtx", "script.py")
    _, _, threads = parse(lines)
    events = [e for ev in threads.values() for e in ev]
    assert not [e for e in events if e[0] in ("push", "pop")]
    started = {e[2][0]: e[2][1] for e in events if e[0] == "start"}
    ended = [e[2] for e in events if e[0] == "end"]
    assert sorted(ended) == sorted(started)
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        counts = {n: int(r.attrs["num_calls"]) for n, r in regions(f).items()}
    assert collections.Counter(started.values()) == counts == {"job": 4, "phase": 4}


def test_setup_use_nvtx(sp, tool):
    """setup(use_nvtx=True) from a script: the same ranges; a run without
    --nvtx makes none and says nvtx false in its metadata."""
    sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(use_nvtx=True, file_path="out.h5")
        for i in range(5):
            with sp.region("r"):
                pass
        sp.ProfileManager.finalize(verbose=False)
    """)
    _, lines = run_traced(sp, tool, "script.py")
    _, _, threads = parse(lines)
    (events,) = threads.values()
    assert [op for op, _, _ in events] == ["push", "pop"] * 5
    sp.script(SCRIPT, name="plain.py")
    _, lines = run_traced(sp, tool, "plain.py")
    assert not [line for line in lines if line.startswith(("push", "start"))]
    with h5py.File(sp.tmp / "profiling_data.h5") as f:
        assert f["metadata"].attrs["nvtx"] in ("false", b"false")


@pytest.mark.parametrize("other", ["--aggregate", "--line-profile", "--memory", "--likwid"])
def test_nvtx_refuses_modes_without_its_ranges(sp, other):
    """--aggregate keeps no calls to make ranges of (the original: "cannot
    be combined with line, GPU, NVTX or LIKWID profiling"); the other modes
    have region classes of their own: one line, status 2, no file."""
    sp.script("pass\n")
    proc = sp("run", "--nvtx", other, "script.py")
    one_line_error(proc, "--nvtx cannot be combined with", other)
    assert proc.returncode == 2
    assert not (sp.tmp / "profiling_data.h5").exists()


def test_finalize_inside_a_block_pops_its_range_once(sp, tool):
    """finalize() inside open `with` blocks ends their ranges then
    (sp_regions_nvtx_end_open); the blocks' exits afterwards pop nothing
    more (a pop too many would close a range of the program's own)."""
    sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(use_nvtx=True, file_path="out.h5")
        with sp.region("outer"):
            with sp.region("inner"):
                sp.ProfileManager.finalize(verbose=False)
    """)
    _, lines = run_traced(sp, tool, "script.py")
    _, _, threads = parse(lines)
    (events,) = threads.values()
    assert [op for op, _, _ in events] == ["push", "push", "pop", "pop"]


@pytest.mark.parametrize("end", ["finalize", "SIGTERM"])
def test_the_end_of_a_session_inside_a_decorated_call_pops_every_range_once(sp, tool, end):
    """The session ends inside a decorated function that runs inside a
    block (finalize() there, or SIGTERM: a job's walltime): every range of
    ours on the thread is popped then, the block's and the decorated call's,
    and their later exits pop nothing. Before: the end popped the blocks'
    count only (the call's range and the outer block's were closed at the
    wrong moments), and under SIGTERM one range was never closed."""
    how = "sp.ProfileManager.finalize(verbose=False)" if end == "finalize" else \
        "os.kill(os.getpid(), signal.SIGTERM); sum(range(100))"
    sp.script(f"""
        import os, signal
        import scope_profiler as sp
        LOG = os.environ["NVTX_TOOL_LOG"]

        def mark(what):
            with open(LOG, "a") as log:
                log.write(f"mark {{what}}\\n")

        @sp.profile("f")
        def f():
            with sp.region("g"):
                {how}
                mark("ended")

        with sp.region("outer"):
            f()
    """)
    log = sp.tmp / "nvtx.log"
    proc = sp("run", "-q", "--nvtx", "-o", "out.h5", "script.py",
              env={"NVTX_INJECTION64_PATH": str(tool), "NVTX_TOOL_LOG": str(log)})
    assert proc.returncode == (0 if end == "finalize" else -signal.SIGTERM), proc.stderr
    ops = [l.split()[0] for l in log.read_text().splitlines() if l.split()[0] in ("push", "pop", "mark")]
    assert ops[:6] == ["push", "push", "push", "pop", "pop", "pop"], ops
    assert ops[6:] == (["mark"] if end == "finalize" else []), ops
