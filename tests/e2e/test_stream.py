"""Runs of hours: the calls stream to OUT.partial while the run goes (format
version 3, HDF5's single-writer/multiple-reader mode), memory stays within
the budget, a killed run keeps every call up to its last flush, the end of
the run writes only what is left. Streaming is made certain, whatever the
machine's load, by a small --memory-budget (a block is handed over when the
buffers reach it) or a short --flush-interval."""
import contextlib
import json
import os
import re
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import BINARY, one_line_error, regions, small_tmpfs

LOOP = """
import sys, time
import scope_profiler as sp
n = int(sys.argv[1])
step, outer = sp.region("step"), sp.region("outer")
with sp.region("main"):
    for i in range(n):
        with outer:
            with step:
                pass
        if n < 0:
            time.sleep(0)
print("done", n)
"""

# Records until killed; says on stdout when it started.
FOREVER = """
import sys
import scope_profiler as sp
step = sp.region("step")
print("started", flush=True)
with sp.region("main"):
    while True:
        for _ in range(1000):
            with step:
                pass
"""


def partial_calls(path):
    """{name: calls} of a partial file as plain h5py sees it (SWMR read),
    cut to its consistent prefix, and its flushed_ns."""
    with h5py.File(path, "r", swmr=True) as f:
        g = f["rank0"]
        names = bytes(g["stream/names"][:]).split(b"\0")[:-1]
        e = min(len(g["events/start_times"]), len(g["events/end_times"]))
        calls, at = {}, 0
        for r, c in zip(g["events/block_region"][:], g["events/block_calls"][:]):
            if at + c > e or r >= len(names):
                break
            calls[names[r].decode()] = calls.get(names[r].decode(), 0) + int(c)
            at += int(c)
        return calls, int(g["stream/flushed_ns"][0]), int(g.attrs["run_start_time"])


def test_a_long_run_streams_and_finishes_the_same_profile(sp):
    # 600,001 calls, 9.6 MB: past half of an 8 MiB budget, so streamed in
    # blocks of 16,384 calls; the budget holds most of them, so that a
    # writer slowed by a loaded machine drops none.
    n = 300_000
    script = sp.script(LOOP, name="loop.py")
    streamed = sp("run", "-q", "--memory-budget", "8M", "-o", "s.h5", script, n)
    whole = sp("run", "-q", "--memory-budget", "0", "-o", "w.h5", script, n)
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    assert streamed.stdout == whole.stdout == f"done {n}\n"
    assert streamed.stderr == ""
    assert not (sp.tmp / "s.h5.partial").exists()
    with h5py.File(sp.tmp / "s.h5") as s, h5py.File(sp.tmp / "w.h5") as w:
        assert s.attrs["format_version"] == 3 and w.attrs["format_version"] == 2
        assert "stream" not in s["rank0"] and "metadata" in s
        rs, rw = regions(s), regions(w)
        assert sorted(rs) == sorted(rw) == ["main", "outer", "step"]
        for name in rs:
            assert rs[name].attrs["num_calls"] == rw[name].attrs["num_calls"]
            st, en = rs[name]["start_times"], rs[name]["end_times"]
            assert len(st) == rs[name].attrs["num_calls"]
            assert (en >= st).all() and (np.diff(st) >= 0).all()
            # Each file's statistics are its calls' (the streamed ones summed
            # as their blocks left memory, the whole run's at its end).
            for r in (rs[name], rw[name]):
                st, en = r["start_times"], r["end_times"]
                d, a = en - st, r.attrs
                assert int(d.sum()) == int(a["total_ns"])
                assert (int(d.min()), int(d.max())) == (int(a["min_ns"]), int(a["max_ns"]))
                assert (int(st.min()), int(en.max())) == (int(a["first_start_ns"]), int(a["last_end_ns"]))
                assert a["mean_ns"] == pytest.approx(d.mean(), rel=1e-12)
                assert a["std_ns"] == pytest.approx(d.std(), rel=1e-9, abs=1e-6)
        # The call still open when its block went (main) got its end.
        assert rs["main"]["end_times"][0] >= rs["step"]["end_times"].max()
        # Every call is in one block, blocks follow each other.
        ev = s["rank0/events"]
        assert int(ev["block_calls"][:].sum()) == len(ev["start_times"]) == 2 * n + 1
    # The readers show it as any profile.
    summary = sp("summary", "s.h5")
    assert summary.returncode == 0, summary.stderr
    assert "step" in summary.stdout and "outer" in summary.stdout


def test_the_end_of_a_long_streamed_run_reads_no_call_back(sp):
    # More calls streamed than half the budget holds (262,144 for 8M): the
    # end of the run builds no call tree (it would read every call back),
    # and its summary says how to get it; `summary FILE` builds it.
    n = 200_000
    proc = sp("run", "--memory-budget", "8M", "-o", "s.h5", sp.script(LOOP, name="loop.py"), n)
    assert proc.returncode == 0, proc.stderr
    out = proc.stderr   # the run's summary: the script's stdout stays its own
    assert "(not built at the end of the run: `scope-profiler summary FILE` builds it)" in out
    assert "note: a rank without a call tree" in out
    assert any(l.startswith("step ") for l in out.splitlines())
    tree = sp("summary", "--tree", "s.h5").stdout
    assert "└─ outer (" in tree and "   └─ step (" in tree, tree   # nested as they ran


def test_a_recursive_run_streams_its_open_calls(sp):
    # --recursive: <module> and work() are open through every flush; their
    # calls go to the file open and get their ends when they return.
    script = sp.script("""
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work():
    t = time.monotonic()
    while time.monotonic() - t < 0.4:
        fib(12)
work()
""", name="rec.py")
    proc = sp("run", "-q", "--recursive", "--flush-interval", "0.05", "-o", "r.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "r.h5") as f:
        assert f.attrs["format_version"] == 3
        rs = regions(f)
        mod, work, fib = rs["__main__.<module>"], rs["__main__.work"], rs["__main__.fib"]
        assert mod.attrs["num_calls"] == work.attrs["num_calls"] == 1
        st, en = fib["start_times"], fib["end_times"]
        assert len(st) == fib.attrs["num_calls"] > 1000
        assert (en >= st).all()
        assert int((en - st).max()) == int(fib.attrs["max_ns"])
        assert work["start_times"][0] <= st.min() and work["end_times"][0] >= en.max()
        assert mod["end_times"][0] >= work["end_times"][0]


def test_a_short_run_writes_no_partial_file(sp):
    script = sp.script(LOOP, name="loop.py")
    proc = sp("run", "-q", "-o", "short.h5", script, 10)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in sp.tmp.iterdir() if p.name.startswith("short")) == ["short.h5"]
    with h5py.File(sp.tmp / "short.h5") as f:
        assert f.attrs["format_version"] == 2


@contextlib.contextmanager
def running(sp, *args, env=None):
    """`scope-profiler ARGS` running in sp.tmp (stdout and stderr piped,
    text); killed and reaped when the test leaves it running."""
    proc = subprocess.Popen([BINARY, *map(str, args)], cwd=sp.tmp, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def wait_started(proc):
    line = proc.stdout.readline()
    assert line == "started\n", line + proc.stderr.read()


def wait_flushed(path, after_ns, proc, timeout=120):
    """Waits until the partial file holds calls flushed after after_ns."""
    deadline = time.monotonic() + timeout
    seen = "no file"
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            try:
                calls, flushed, start = partial_calls(path)
                if calls.get("step", 0) > 0 and flushed > after_ns:
                    return calls, flushed, start
                seen = f"calls {calls}, flushed {flushed}"
            except (OSError, KeyError) as e:
                seen = repr(e)   # not created or not flushed yet
        time.sleep(0.05)
    proc.kill()
    _, err = proc.communicate()
    raise AssertionError(f"{path} never flushed after {after_ns} (last seen: {seen}); "
                         f"status {proc.returncode}, stderr: {err}")


def test_a_killed_run_keeps_its_calls_up_to_the_last_flush(sp):
    script = sp.script(FOREVER, name="forever.py")
    proc = subprocess.Popen([BINARY, "run", "-q", "--flush-interval", "0.05", "-o", "k.h5", str(script)],
                            cwd=sp.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_started(proc)
        partial = sp.tmp / "k.h5.partial"
        # Read while the run goes, twice: the file grows.
        first, flushed1, start = wait_flushed(partial, 0, proc)
        second, flushed2, _ = wait_flushed(partial, flushed1, proc)
        assert second["step"] >= first["step"] and flushed2 > flushed1 >= start
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert not (sp.tmp / "k.h5").exists()
    calls, flushed, start = partial_calls(partial)
    # Everything read before the kill is still there, and more.
    assert calls["step"] >= second["step"] and flushed >= flushed2
    with h5py.File(partial, "r", swmr=True) as f:
        g = f["rank0/events"]
        s, e = g["start_times"][:], g["end_times"][:]
        n = int(g["block_calls"][:].sum())
        # Calls flushed end before the flush; an open one (main) has no end yet.
        closed = e[:n] != np.iinfo(np.int64).min
        assert (e[:n][closed] >= s[:n][closed]).all()
        assert (s[:n] <= flushed).all()


def test_a_run_killed_while_it_finishes_the_file_is_recovered(sp):
    # Killed while the end of the run has the file open for writing (a
    # second SIGKILL, a scheduler's): HDF5 marked it so; recover clears the
    # mark and finishes it with every call.
    script = sp.script(LOOP, name="loop.py")
    env = dict(os.environ, SCOPE_PROFILER_TEST_FINISH_PAUSE_MS="60000")
    with running(sp, "run", "-q", "--memory-budget", "8M", "-o", "f.h5", script, 300000, env=env) as proc:
        line = proc.stderr.readline()
        assert line == "scope-profiler: test: finishing\n", line + proc.stderr.read()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    partial = sp.tmp / "f.h5.partial"
    with pytest.raises(OSError):   # marked as open for writing: plain readers refuse it
        h5py.File(partial, "r", swmr=True).close()
    rec = sp("recover", str(partial))
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "f.h5") as f:
        rs = regions(f)
        dropped = int(f["rank0"].attrs["dropped_events"])
        assert rs["main"].attrs["num_calls"] == 1
        assert rs["step"].attrs["num_calls"] + rs["outer"].attrs["num_calls"] + dropped == 600_000


def test_a_second_run_on_the_same_output_leaves_the_first_ones_stream_alone(sp):
    # Two runs with one -o (two jobs in one folder, the default name): the
    # second one finds the first streaming, says so, and writes its profile
    # at the end, whole; the first one's stream is untouched.
    script = sp.script(SECONDS_RUN, name="seconds.py")
    with running(sp, "run", "-q", "--flush-interval", "0.05", "-o", "same.h5", script, 60) as first:
        wait_started(first)
        partial = sp.tmp / "same.h5.partial"
        calls, flushed, _ = wait_flushed(partial, 0, first)
        second = sp("run", "-q", "--flush-interval", "0.05", "-o", "same.h5",
                    sp.script("import time, scope_profiler as sp\n"
                              "with sp.region('second'):\n    time.sleep(0.3)\n", name="second.py"))
        assert second.returncode == 0, second.stderr
        assert second.stderr == ("scope-profiler: warning: another run is streaming to "
                                 f"'{partial}'; the profile is written at the end only\n")
        with h5py.File(sp.tmp / "same.h5") as f:
            assert f.attrs["format_version"] == 2 and list(regions(f)) == ["second"]
        # The first run's stream goes on.
        later, _, _ = wait_flushed(partial, flushed, first)
        assert later["step"] >= calls["step"]
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=120) == -signal.SIGTERM
    with h5py.File(sp.tmp / "same.h5") as f:
        assert f.attrs["format_version"] == 3 and "step" in regions(f)


def test_sigterm_during_a_streamed_run_finishes_the_file(sp):
    script = sp.script(FOREVER, name="forever.py")
    proc = subprocess.Popen([BINARY, "run", "-q", "--flush-interval", "0.05", "--memory-budget", "2M",
                             "-o", "t.h5", str(script)],
                            cwd=sp.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_started(proc)
        wait_flushed(sp.tmp / "t.h5.partial", 0, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM, err
    assert not (sp.tmp / "t.h5.partial").exists()
    with h5py.File(sp.tmp / "t.h5") as f:
        assert f.attrs["format_version"] == 3
        r = regions(f)
        assert r["main"].attrs["num_calls"] == 1
        assert r["step"].attrs["num_calls"] == len(r["step"]["start_times"]) > 0


def test_a_script_that_closes_every_descriptor_keeps_its_files_and_the_stream(sp):
    """A daemon's start, or a script's os.closerange(3, ...), closes the
    stream's descriptors of OUT.partial; the script's next files take their
    numbers. The stream opens the file again and writes on: not a byte of
    HDF5 in the script's files, every call in the profile, status 0. A
    child forked then keeps the script's file as its own (a fork's stream
    points its copy of the descriptor at /dev/null only when it is still the
    stream's)."""
    script = sp.script("""
import os, sys, time
import scope_profiler as sp
step = sp.region("step")
n = 0
def record(until):
    global n
    t = time.monotonic() + 60
    while not until() and time.monotonic() < t:
        for _ in range(100):
            with step:
                n += 1
        time.sleep(0.005)
partial = "c.h5.partial"
record(lambda: os.path.exists(partial) and os.path.getsize(partial) > 0)
os.closerange(3, 65536)
a, b = open("a.txt", "w"), open("b.txt", "w")
pid = os.fork()
if pid == 0:
    b.write("child\\n")
    b.flush()
    os._exit(0)
os.waitpid(pid, 0)
size = os.path.getsize(partial)
for i in range(3):
    a.write(f"a{i}\\n"), b.write(f"b{i}\\n")
    a.flush(), b.flush()
    record(lambda: os.path.getsize(partial) > size or os.path.getsize("b.txt") > 100)
    size = os.path.getsize(partial)
a.close(), b.close()
print(n)
""", name="closer.py")
    proc = sp("run", "-q", "--flush-interval", "0.05", "-o", "c.h5", script)
    assert (sp.tmp / "a.txt").read_text() == "a0\na1\na2\n"
    assert (sp.tmp / "b.txt").read_text() == "child\nb0\nb1\nb2\n"
    assert proc.returncode == 0, proc.stderr
    # Nothing but the line on the forked child, which was not profiled.
    assert [line for line in proc.stderr.splitlines() if "was not profiled" not in line] == []
    assert not (sp.tmp / "c.h5.partial").exists()
    with h5py.File(sp.tmp / "c.h5") as f:
        assert f.attrs["format_version"] == 3
        assert int(f["rank0"].attrs["dropped_events"]) == 0
        assert regions(f)["step"].attrs["num_calls"] == int(proc.stdout) > 0


def test_a_slow_writer_is_said_and_counted_never_silent(sp):
    """A writer slower than the recording (here a test hook pauses it at
    each block): the recording holds on within the budget, then drops
    calls, counts them in the file and says so in one line."""
    script = sp.script(LOOP, name="loop.py")
    n = 400_000
    proc = sp("run", "-q", "--memory-budget", "1M", "-o", "slow.h5", script, n,
              env={"SCOPE_PROFILER_TEST_SLOW_WRITER_US": "200000"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    behind = [l for l in lines if "writer fell behind" in l]
    assert len(behind) == 1, proc.stderr
    dropped = int(behind[0].split("warning: ")[1].split()[0])
    assert dropped > 0
    with h5py.File(sp.tmp / "slow.h5") as f:
        assert f["rank0"].attrs["dropped_events"] == dropped
        kept = sum(int(g.attrs["num_calls"]) for g in regions(f).values())
        assert kept + dropped == 2 * n + 1
    # summary names the cause (before: "memory ran out").
    summary = sp("summary", "slow.h5")
    assert f"{dropped} calls not recorded: the memory budget was full (the writer fell behind)" \
        in summary.stdout, summary.stdout


def test_a_full_disk_while_streaming_is_one_line_and_keeps_the_partial(sp):
    # Room for a few flushes of the first calls, not for the 64 MB of all.
    with small_tmpfs(sp.tmp / "small", "4m") as small:
        script = sp.script(LOOP, name="loop.py")
        proc = sp("run", "-q", "--memory-budget", "1M", "--flush-interval", "0.01", "-o", "small/out.h5",
                  script, 2_000_000)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "HDF5-DIAG" not in proc.stderr
        errors = [l for l in proc.stderr.splitlines() if "run:" in l]
        assert len(errors) == 1, proc.stderr
        assert "No space left on device" in errors[0] and "small/out.h5.partial" in errors[0]
        assert not (small / "out.h5").exists()
        calls, _, _ = partial_calls(small / "out.h5.partial")
        assert calls.get("step", 0) > 0


BATCHES = """
import time
import scope_profiler as sp
r = sp.region("r")
for b in range(40):
    for i in range(20000):
        with r:
            pass
    time.sleep(0.05)
print("done")
"""


def file_size_limit(size):
    """A preexec_fn: RLIMIT_FSIZE of size bytes (a job's file size limit),
    SIGXFSZ ignored as python ignores it."""
    import resource

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def test_a_file_size_limit_while_streaming_keeps_the_partial_and_counts_the_rest(sp):
    """A file size limit (or a full disk) reached while streaming: status 1,
    one line counting the calls lost, one naming the partial file; the
    partial reads back with the calls of its last flush, and those with the
    lost are every call the script made. Before, closing the failed file
    spoiled the partial ('truncated or damaged'), the calls still held in
    memory were lost without a word, and HDF5's exit handler crashed."""
    script = sp.script(BATCHES, name="batches.py")
    proc = subprocess.run([BINARY, "run", "-q", "--flush-interval", "0.2", "-o", "out.h5", script],
                          cwd=sp.tmp, capture_output=True, text=True, timeout=120,
                          preexec_fn=file_size_limit(2_000_000))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "done\n"
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    lost = re.fullmatch(r"scope-profiler: warning: (\d+) calls were not recorded: the stream to "
                        r"the profile had failed", lines[0])
    assert lost, lines[0]
    assert lines[1].startswith("scope-profiler: run: cannot stream to ") and "File too large" in lines[1]
    assert "out.h5.partial (scope-profiler recover " in lines[1]
    rec = sp("recover", "out.h5.partial", "-o", "rec.h5")
    assert rec.returncode == 0, rec.stderr
    with h5py.File(sp.tmp / "rec.h5") as f:
        kept = {n: int(g.attrs["num_calls"]) for n, g in regions(f).items()}
    assert kept.get("r", 0) + int(lost.group(1)) == 40 * 20000, (kept, lines)


def test_a_file_at_out_partial_that_is_no_profile_is_kept(sp):
    """OUT.partial holding something else (the user's notes) is not
    replaced by the stream: one line says so, the run keeps its calls in
    memory and writes OUT whole at the end. Before, the stream replaced the
    file and then removed it."""
    script = sp.script(LOOP, name="loop.py")
    (sp.tmp / "out.h5.partial").write_text("notes\n")
    proc = sp("run", "-q", "--flush-interval", "0.01", "-o", "out.h5", script, 100_000)
    assert proc.returncode == 0, proc.stderr
    assert (sp.tmp / "out.h5.partial").read_text() == "notes\n"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "out.h5.partial' exists and is not a scope-profiler profile" in lines[0], \
        proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert int(regions(f)["step"].attrs["num_calls"]) == 100_000


@pytest.mark.parametrize("bad", ["64X", "-1", "512K", "lots"])
def test_a_bad_memory_budget_is_one_line(sp, bad):
    proc = sp("run", "--memory-budget", bad, sp.script("pass\n"))
    assert proc.returncode == 2
    one_line_error(proc, "--memory-budget")


def test_setup_takes_what_run_takes_and_refuses_an_empty_path(sp):
    """setup(memory_budget=0) is run --memory-budget 0: never streamed (it
    was a ValueError); setup(file_path="") is a ValueError at once (it
    failed at the end with two lines of internals); memory_budget=-1 and a
    budget below 1 MiB stay errors."""
    script = sp.script("""
        import os, time
        import scope_profiler as sp
        for bad in ({"file_path": ""}, {"memory_budget": -1}, {"memory_budget": 1000}):
            try:
                sp.setup(**bad)
            except ValueError as e:
                print("ValueError", e)
        sp.setup(memory_budget=0, file_path="never.h5")
        r = sp.region("step")
        for _ in range(100_000):
            with r:
                pass
        time.sleep(0.3)   # flushes every 0.01 s: a stream would have made never.h5.partial by now
        print("streamed", os.path.exists("never.h5.partial"))
    """)
    proc = sp("run", "-q", "--flush-interval", "0.01", script)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "ValueError file_path must not be empty", lines
    assert [l.split()[0] for l in lines[1:3]] == ["ValueError", "ValueError"], lines
    assert lines[3] == "streamed False", lines
    with h5py.File(sp.tmp / "never.h5") as f:
        assert int(regions(f)["step"].attrs["num_calls"]) == 100_000


@pytest.mark.parametrize("bad", ["0", "0x10", "inf", "nan", " 1", "1s", "86401"])
def test_a_bad_flush_interval_is_one_line(sp, bad):
    proc = sp("run", "--flush-interval", bad, sp.script("open('ran', 'w').close()\n"))
    assert proc.returncode == 2
    one_line_error(proc, "--flush-interval takes seconds from 0.01 to 86400")
    assert not (sp.tmp / "ran").exists()


def test_a_forked_child_never_writes_into_the_stream(sp):
    script = sp.script("""
import os, sys
import scope_profiler as sp
step = sp.region("step")
for i in range(50_000):
    with step:
        pass
pid = os.fork()
if pid == 0:
    for i in range(50_000):
        with step:
            pass
    os._exit(0)
os.waitpid(pid, 0)
for i in range(50_000):
    with step:
        pass
""", name="fork.py")
    proc = sp("run", "-q", "--memory-budget", "1M", "-o", "f.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "f.h5") as f:
        assert f.attrs["format_version"] == 3
        # The parent's calls, none of the child's (a writer slowed by a
        # loaded machine may drop some: counted).
        dropped = int(f["rank0"].attrs["dropped_events"])
        assert regions(f)["step"].attrs["num_calls"] + dropped == 100_000


def test_a_fork_finds_one_thread_as_without_the_stream(sp):
    # The stream's ticker and writer are threads: a fork (os.fork,
    # multiprocessing's fork) finds them stopped, as a plain python program
    # has none (3.12+ warns on stderr when there are several), and they run
    # again after it; no call of the parent's is lost.
    script = sp.script("""
import multiprocessing, os, sys, time
import scope_profiler as sp

def threads():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("Threads:"))

step = sp.region("step")
def burst(seconds):
    n, t = 0, time.monotonic()
    while time.monotonic() - t < seconds:
        for _ in range(1000):
            with step:
                pass
        n += 1000
    return n

n = burst(0.3)
running = threads()
at_fork = []
os.register_at_fork(after_in_parent=lambda: at_fork.append(threads()))
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
n += burst(0.3)
again = threads()
p = multiprocessing.get_context("fork").Process(target=burst, args=(0.01,))
p.start()
p.join()
n += burst(0.3)
print(running, at_fork, again, threads(), n)
""", name="forks.py")
    # The default budget (a writer slowed by a loaded machine drops no call);
    # the first flush after 0.05 s starts the writer.
    proc = sp("run", "-q", "--flush-interval", "0.05", "-o", "f.h5", script)
    assert proc.returncode == 0, proc.stderr
    # Only the line about the children (and one about calls a writer slowed
    # by a loaded machine dropped); no DeprecationWarning of Python's.
    lines = [l for l in proc.stderr.splitlines() if "the profile's writer fell behind" not in l]
    assert lines == [
        "scope-profiler: run: warning: 2 child processes imported scope_profiler and were not "
        "profiled: their calls are not in this profile"], proc.stderr
    out = proc.stdout.split()
    n = int(out[-1])
    # The main thread, the ticker, the writer; one at both forks; all three again.
    assert " ".join(out[:-1]) == "3 [1, 1] 3 3", proc.stdout
    with h5py.File(sp.tmp / "f.h5") as f:
        assert f.attrs["format_version"] == 3
        dropped = int(f["rank0"].attrs["dropped_events"])   # a loaded machine's slow writer
        assert regions(f)["step"].attrs["num_calls"] + dropped == n


# Records for a few seconds, then ends normally.
SECONDS_RUN = """
import sys, time
import scope_profiler as sp
step = sp.region("step")
print("started", flush=True)
t = time.monotonic()
with sp.region("main"):
    while time.monotonic() - t < float(sys.argv[1]):
        with step:
            pass
"""


def test_summary_follow_redraws_until_the_run_finishes(sp):
    script = sp.script(SECONDS_RUN, name="seconds.py")
    proc = subprocess.Popen([BINARY, "run", "-q", "--flush-interval", "0.05", "-o", "f.h5", str(script), "5"],
                            cwd=sp.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_started(proc)
        wait_flushed(sp.tmp / "f.h5.partial", 0, proc)
        as_json = subprocess.Popen([BINARY, "summary", "--follow", "--json", "f.h5"], cwd=sp.tmp,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        follow = sp("summary", "--follow", "--flat", "f.h5")
        proc.communicate(timeout=120)
        json_out, json_err = as_json.communicate(timeout=120)
    finally:
        for p in (proc, as_json):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert proc.returncode == 0
    assert follow.returncode == 0, follow.stderr
    # --json: one document, the finished file's (before: one a redraw,
    # run together, which no JSON reader takes).
    assert as_json.returncode == 0, json_err
    assert json.loads(json_out)["file"] == "f.h5", json_out
    blocks = follow.stdout.split("\n\n")
    heads = [b.splitlines()[0] for b in blocks if b.startswith("Profile:")]
    # The partial file at least once (not a terminal: one block after
    # another), then the finished one, last.
    assert len(heads) >= 2, follow.stdout
    assert heads[-1] == "Profile: f.h5" and all(h == "Profile: f.h5.partial" for h in heads[:-1]), heads
    partial_lines = [l for l in follow.stderr.splitlines() if "incomplete profile" in l]
    assert len(partial_lines) == len(heads) - 1, follow.stderr


def test_a_reader_of_the_partial_file_never_fails_the_end_of_the_run(sp):
    # summary --follow, or h5py, has the partial file open when the run
    # ends: HDF5's lock is theirs then, and the run finishes all the same.
    script = sp.script("""
import os, sys, time
import scope_profiler as sp
step = sp.region("step")
for _ in range(300_000):
    with step:
        pass
print("ending", flush=True)
while not os.path.exists("go"):
    time.sleep(0.01)
""", name="ending.py")
    with running(sp, "run", "-q", "--memory-budget", "1M", "-o", "r.h5", script) as proc:
        line = proc.stdout.readline()
        assert line == "ending\n", line + proc.stderr.read()
        with h5py.File(sp.tmp / "r.h5.partial", "r", swmr=True) as f:
            assert "events" in f["rank0"]
            (sp.tmp / "go").touch()
            assert proc.wait(timeout=120) == 0, proc.stderr.read()
    with h5py.File(sp.tmp / "r.h5") as f:
        dropped = int(f["rank0"].attrs["dropped_events"])
        assert regions(f)["step"].attrs["num_calls"] + dropped == 300_000


def test_summary_follow_of_a_killed_run_says_recover(sp):
    """Also where FILE is there from an earlier run (the default
    profiling_data.h5 is each run's): before, --follow took it for this
    run's end and redrew the partial file for ever."""
    earlier = sp.script("""
        import scope_profiler as sp
        with sp.region("earlier"):
            pass
    """, name="earlier.py")
    assert sp("run", "-q", "-o", "k.h5", earlier).returncode == 0
    script = sp.script(FOREVER, name="forever.py")
    proc = subprocess.Popen([BINARY, "run", "-q", "--flush-interval", "0.05", "-o", "k.h5", str(script)],
                            cwd=sp.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_started(proc)
        wait_flushed(sp.tmp / "k.h5.partial", 0, proc)
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    follow = sp("summary", "--follow", "k.h5.partial", timeout=60)
    assert follow.returncode == 1
    assert follow.stdout.startswith("Profile: k.h5.partial")
    last = follow.stderr.splitlines()[-1]
    assert "ended without finishing" in last and "recover" in last, follow.stderr
    recovered = sp("recover", "--force", "k.h5.partial")
    assert recovered.returncode == 0, recovered.stderr
    with h5py.File(sp.tmp / "k.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] > 0


@pytest.mark.parametrize("kind, said", [("garbage", "not an HDF5 file"), ("folder", "is a directory"),
                                         ("fifo", "not a regular file"), ("empty", "not an HDF5 file")])
def test_summary_follow_of_a_partial_file_no_run_writes_ends(sp, kind, said):
    """A FILE.partial that no run streams into and that is no profile
    (damaged, a folder, a FIFO, empty): --follow says why and ends, status 1
    (it said so every 2 s for ever); a file is given one more look, ending
    the follow only unchanged (a run may be about to write it)."""
    partial = sp.tmp / "x.h5.partial"
    if kind == "garbage":
        partial.write_bytes(b"garbage\n" * 100)
    elif kind == "folder":
        partial.mkdir()
    elif kind == "fifo":
        os.mkfifo(partial)
    else:
        partial.write_bytes(b"")
    follow = sp("summary", "--follow", "x.h5", timeout=60)
    assert follow.returncode == 1
    lines = follow.stderr.splitlines()
    assert set(lines) == {f"scope-profiler: summary: cannot read 'x.h5.partial': {said}"}, follow.stderr
    assert len(lines) == (2 if kind in ("garbage", "empty") else 1), follow.stderr


ATEXIT_SPIN = """
import atexit, time
import scope_profiler as sp
def slow():
    print("in atexit", flush=True)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        pass
atexit.register(slow)
with sp.region("r"):
    pass
print("started", flush=True)
"""


def test_the_end_of_a_run_during_a_flush_keeps_every_call(sp):
    """The run ends (SIGTERM in the script's atexit callback) at moments
    that meet the flushes (every 10 ms): whether the call went to the
    stream or stayed in memory, the profile holds it."""
    script = sp.script(ATEXIT_SPIN, name="spin.py")
    for i in range(20):
        out = sp.tmp / f"a{i}.h5"
        p = subprocess.Popen([BINARY, "run", "-q", "--flush-interval", "0.01", "-o", str(out), str(script)],
                             cwd=sp.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout.readline() == "started\n"
        assert p.stdout.readline() == "in atexit\n"
        time.sleep(0.002 * (i % 7))
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        assert p.returncode == -signal.SIGTERM, err
        with h5py.File(out) as f:
            assert {n: int(r.attrs["num_calls"]) for n, r in regions(f).items()} == {"r": 1}, i
        assert not (sp.tmp / f"a{i}.h5.partial").exists()


def test_summary_follow_keeps_following_a_run_of_another_host(sp):
    """A partial file whose run is on another host (a job followed from a
    login node over a shared file system): its pid means nothing here, so
    --follow keeps redrawing it, never saying the run ended (before: "the
    run (pid N) ended without finishing" at the first redraw where this
    host had no such pid, or the run of a live unrelated process). The run
    here gets a host name of its own (a UTS namespace; not root: through a
    user namespace, which a chroot cannot make), then is killed: to
    --follow, a file of elsewhere."""
    script = sp.script(FOREVER, name="forever.py")
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    proc = subprocess.Popen(["unshare", *user, "--uts", "sh", "-c",
                             'hostname node-elsewhere && exec "$@"', "sh", BINARY, "run", "-q",
                             "--flush-interval", "0.05", "-o", "h.h5", str(script)],
                            cwd=sp.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # killed, it leaves its folder for Python children behind for a
                            # later run of its host to remove: no run here is on that host
                            env=dict(os.environ, TMPDIR=str(sp.tmp)))
    try:
        wait_started(proc)
        wait_flushed(sp.tmp / "h.h5.partial", 0, proc)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    with h5py.File(sp.tmp / "h.h5.partial", "r", swmr=True) as f:
        assert f["rank0"].attrs["hostname"] in ("node-elsewhere", b"node-elsewhere")
    with running(sp, "summary", "--follow", "--flat", "h.h5.partial") as follow:
        heads = []
        while len(heads) < 2:   # two redraws, 2 s apart: judged twice
            line = follow.stdout.readline()
            assert line, follow.stderr.read()
            heads += [line] if line.startswith("Profile:") else []
        assert follow.poll() is None, follow.stderr.read()
