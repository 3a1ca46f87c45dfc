"""The end of a run: threads still recording, and SIGINT/SIGTERM at any
moment after the script, never corrupt or lose the profile, never show a
traceback of the tool's own, and end with the status the signal asks for
(killed by the signal, as python is: a shell's 130 for SIGINT, 143 for SIGTERM)."""
import os
import random
import signal
import subprocess
import time

import h5py
import pytest

from conftest import BINARY, embedded, regions

# Four daemon threads enter regions (and a decorated function) in a loop,
# and create new regions, while the main script ends and the profile is
# written.
DAEMONS = """
    import sys, threading, time
    import scope_profiler as sp

    @sp.profile("work")
    def work(i):
        return i * 2

    def spin(k):
        r = sp.region(f"spin{k}")
        i = 0
        while True:
            with r:
                work(i)
            i += 1
            if i % 500 == 0:
                sp.region(f"new{k}_{i}")

    for k in range(4):
        threading.Thread(target=spin, args=(k,), daemon=True).start()
    time.sleep(0.05)
"""


@pytest.mark.parametrize("options", [[], ["--track-threads"], ["--aggregate"], ["--recursive"]])
def test_daemon_threads_recording_at_exit(sp, options):
    script = sp.script(DAEMONS)
    for i in range(6):
        out = f"d{i}.h5"
        proc = sp("run", "-q", "-o", out, *options, script)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        # The tool's own readers accept every file: each call ends after it
        # starts, stats agree with the events.
        for args in (["summary", out], ["export", out, "--format", "csv", "-o", f"d{i}.csv"]):
            check = sp(*args)
            assert check.returncode == 0, (args, check.stderr)
        with h5py.File(sp.tmp / out) as f:
            regs = regions(f)
            spins = [regs[n] for n in regs if n.startswith("spin")]
            assert spins and all(g.attrs["num_calls"] > 0 for g in spins)
            for g in spins:
                if "start_times" in g:
                    starts, ends = g["start_times"][:], g["end_times"][:]
                    assert len(starts) == g.attrs["num_calls"]
                    assert (ends >= starts).all()


# A million calls make the write last a while; a daemon thread sends the
# signals (argv[1]: SIGTERM, or SIGTERM,SIGINT) as soon as the regions stop
# recording (the profile is being written).
SIGNAL_IN_WRITE = """
    import os, signal, sys, threading, time
    import scope_profiler as sp
    sigs = [getattr(signal, name) for name in sys.argv[1].split(",")]
    r = sp.region("many")
    for _ in range(1_000_000):
        with r:
            pass
    def watcher():
        while type(r).__name__ != "DisabledProfileRegion":
            pass  # waiting for the GIL the write releases, not asleep
        for i, sig in enumerate(sigs):
            if i:
                time.sleep(0.02)   # the first one taken (else the two merge into one)
            os.kill(os.getpid(), sig)
    threading.Thread(target=watcher, daemon=True).start()
    if len(sys.argv) > 2:
        os._exit(int(sys.argv[2]))   # the script ends so: the run's profile is written first
"""

STATUS = {"SIGINT": -signal.SIGINT, "SIGTERM": -signal.SIGTERM}

# The profile written whole at the end, as these tests of its write need
# (never streamed, whatever the run's length on a loaded machine).
WHOLE = ("--memory-budget", "0")


def complete(path):
    with h5py.File(path) as f:
        g = regions(f)["many"]
        return g.attrs["num_calls"] == 1_000_000 and len(g["end_times"]) == 1_000_000


@pytest.mark.parametrize("sigs,exit", [("SIGINT", ()), ("SIGTERM", ()), ("SIGTERM,SIGTERM", ()),
                                       ("SIGHUP,SIGHUP,SIGHUP", ()), ("SIGTERM", ("3",)), ("SIGINT", ("3",))])
def test_signal_while_writing_completes_the_profile(sp, sigs, exit):
    """One signal while the profile is written: it is completed, then the
    signal ends the run. The same one again at once (GNU timeout sends it to
    the run and then to its process group; a batch system to every process
    of the job) is the same request: it abandoned the write before. So too
    where the script ends with os._exit(3), whose write a signal ended
    unwritten, without a word."""
    script = sp.script(SIGNAL_IN_WRITE)
    proc = sp("run", "-q", *WHOLE, "-o", "out.h5", script, sigs, *exit)
    assert proc.returncode == -getattr(signal, sigs.split(",")[0]), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.count("scope-profiler: run: finishing the profile") == 1
    assert "abandon" not in proc.stderr.replace("interrupt again to abandon", "")
    assert complete(sp.tmp / "out.h5")


@pytest.mark.parametrize("sigs", ["SIGINT,SIGINT", "SIGTERM,SIGINT", "SIGTERM,SIGHUP"])
def test_second_signal_abandons_the_write_and_keeps_the_old_profile(sp, sigs):
    """Ctrl-C again, or another signal, abandons the write."""
    first, second = sigs.split(",")
    script = sp.script(SIGNAL_IN_WRITE)
    assert sp("run", "-q", *WHOLE, "-o", "out.h5", script, first).returncode == -getattr(signal, first)
    before = (sp.tmp / "out.h5").read_bytes()
    for _ in range(3):
        proc = sp("run", "-q", *WHOLE, "-o", "out.h5", script, sigs)
        assert proc.returncode in (-getattr(signal, first), -getattr(signal, second)), proc.stderr
        assert "Traceback" not in proc.stderr
        # Abandoned: the previous file, byte for byte. (On a loaded machine
        # the write may finish before the signals come: then the new file,
        # complete.) Never a partial one.
        after = (sp.tmp / "out.h5").read_bytes()
        assert after == before or complete(sp.tmp / "out.h5")
        if after == before:   # one line says so
            assert "scope-profiler: run: abandoned: no profile written\n" in proc.stderr, proc.stderr
        assert sorted(p.name for p in sp.tmp.iterdir()) == ["out.h5", "script.py"]


def test_abandoned_after_the_write_says_the_profile_was_written(sp):
    """A second signal once the profile is in place (the end prints, or
    removes the ranks' files): the line names the file written (it said
    "no profile written" of a complete profile)."""
    script = sp.script("""
        import scope_profiler as sp
        with sp.region("a"):
            pass
    """)
    proc = subprocess.Popen([BINARY, "run", "-q", *WHOLE, "-o", "out.h5", str(script)], cwd=sp.tmp,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SCOPE_PROFILER_TEST_WRITTEN_PAUSE_MS="60000"))
    try:
        assert proc.stderr.readline() == "scope-profiler: test: written\n"
        proc.send_signal(signal.SIGINT)
        assert proc.stderr.readline() == "scope-profiler: run: finishing the profile; interrupt again to abandon it\n"
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == -signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert err == f"scope-profiler: run: abandoned after the profile was written to {sp.tmp / 'out.h5'}\n", err
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["a"].attrs["num_calls"] == 1


def test_ctrl_c_while_finalize_prints_its_summary_ends_the_script(sp):
    """Ctrl-C while the script's own finalize() writes and prints: the
    profile is written, then KeyboardInterrupt ends the script, status 130,
    as python ends it (the summary's print swallowed it: the script went on,
    status 0)."""
    script = sp.script("""
        import time
        import scope_profiler as sp
        with sp.region("a"):
            pass
        sp.finalize()
        time.sleep(0.5)
        print("went on")
    """)
    proc = subprocess.Popen([BINARY, "run", "-q", *WHOLE, "-o", "out.h5", str(script)], cwd=sp.tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SCOPE_PROFILER_TEST_WRITTEN_PAUSE_MS="5000"))
    try:
        assert proc.stderr.readline() == "scope-profiler: test: written\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)   # as python ends at it
    assert "went on" not in out and err.endswith("KeyboardInterrupt\n"), (out, err)
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["a"].attrs["num_calls"] == 1


def test_no_subprocess_starts_once_an_exit_signal_came(sp):
    """SIGTERM while the main thread is in a long C call (it answers the
    signal when the call returns) and another thread starts processes in a
    loop: python would have ended at the signal, starting none; the run
    starts none either (subprocess, os.system: one in flight at most). They
    went on starting until the main thread came back to Python."""
    script = sp.script("""
        import hashlib, os, signal, subprocess, threading
        import scope_profiler as sp
        def spawn():
            n = 0
            while True:
                if n % 2:
                    subprocess.run(["sh", "-c", "echo x >> spawned"])
                else:
                    os.system("echo x >> spawned")
                n += 1
                if n == 4:
                    with open("spawned") as f:
                        open("at_signal", "w").write(str(len(f.readlines())))
                    os.kill(os.getpid(), signal.SIGTERM)
        with sp.region("busy"):
            threading.Thread(target=spawn, daemon=True).start()
            data = bytes(256 << 20)
            while not os.path.exists("at_signal"):
                hashlib.sha256(data)   # a C call, the GIL released: the signal lands in one
            hashlib.sha256(data)
    """)
    proc = sp("run", "-q", *WHOLE, "-o", "out.h5", script, timeout=300)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    at_signal = int((sp.tmp / "at_signal").read_text())
    spawned = len((sp.tmp / "spawned").read_text().splitlines())
    assert spawned - at_signal <= 1, (at_signal, spawned)
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["busy"].attrs["num_calls"] == 1


def test_a_keyboard_interrupt_from_stderr_at_exit_keeps_the_written_profile(sp):
    """A sys.stderr whose write raises KeyboardInterrupt (the run's end says
    its lines there): the profile written is kept as written, status 0 as
    before (the end took the interrupt for a failed write: status 1)."""
    script = sp.script("""
        import sys
        import scope_profiler as sp
        class Interrupting:
            def write(self, s):
                raise KeyboardInterrupt
            def flush(self):
                pass
        with sp.region("a"):
            pass
        sys.stderr = Interrupting()
    """)
    proc = sp("run", *WHOLE, "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert "cannot finish the profile" not in proc.stderr, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["a"].attrs["num_calls"] == 1


def test_abandoned_streamed_run_names_only_a_partial_file_that_exists(sp):
    """A streamed run (the default) abandoned by a second signal: the line
    names PATH.partial only where the stream made it (a run shorter than a
    flush named a file that never was); else it says no profile was
    written. Either way the line is true of the folder."""
    script = sp.script("""
        import scope_profiler as sp
        for k in range(1000):
            for i in range(500):
                with sp.region("r%d" % i):
                    pass
        print("end", flush=True)
    """)
    abandoned = 0
    for delay in (0.0, 0.01, 0.0, 0.01, 0.0, 0.03, 0.0, 0.01, 0.0, 0.02):
        if abandoned >= 2:
            break
        proc = subprocess.Popen([BINARY, "run", "-q", "-o", "out.h5", str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=sp.tmp,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert proc.stdout.readline() == "end\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, -signal.SIGINT), err   # 0: it had ended before the signals
        partial = sp.tmp / "out.h5.partial"
        # The run's line (the script's own traceback, when the first
        # signal came during its last print, names this test's folder).
        if "scope-profiler: run: abandoned" in err:
            abandoned += 1
            named = "stay in " + str(partial) in err
            assert named == partial.exists(), (err, sorted(p.name for p in sp.tmp.iterdir()))
            assert named or "abandoned: no profile written" in err
        for leftover in sp.tmp.glob("out.h5*"):
            leftover.unlink()
    assert abandoned, "no run was abandoned: the signals all came after the write"


REPEATS = """
    import scope_profiler as sp
    r = sp.region("step")
    for _ in range(300_000):
        with r:
            pass
"""


@pytest.mark.parametrize("sig", ["SIGXCPU", "SIGALRM"])
def test_a_signal_that_repeats_by_itself_does_not_abandon_the_write(sp, sig):
    """The kernel sends SIGXCPU again every CPU second past RLIMIT_CPU's soft
    limit, an interval timer its signal every interval: a repeat, even more
    than a second after the first, is no request to abandon the write (the
    profile was lost: "abandoned")."""
    script = sp.script(REPEATS)
    env = dict(os.environ, SCOPE_PROFILER_TEST_FINISH_PAUSE_MS="2500")
    proc = subprocess.Popen([BINARY, "run", "-q", "--memory-budget", "8M", "-o", "out.h5", str(script)],
                            stderr=subprocess.PIPE, text=True, cwd=sp.tmp, env=env)
    line = proc.stderr.readline()
    assert line == "scope-profiler: test: finishing\n", line + proc.stderr.read()
    proc.send_signal(getattr(signal, sig))
    time.sleep(1.3)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -getattr(signal, sig), err
    assert "abandoned" not in err, err
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] == 300_000


def test_a_timer_the_script_handles_itself_does_not_abandon_the_write(sp):
    """A script's own handler of an interval timer (a sampling profiler's
    SIGALRM or SIGPROF every few milliseconds) stays the script's through
    the write: its ticks are no request to stop (the run's end took them
    over, and a tick a second on abandoned the write: the profile lost).
    Once Python's shutdown has put SIG_DFL back, a tick ends the process
    as it ends python's when its shutdown outlasts the interval."""
    script = sp.script(REPEATS + """
    import signal
    ticks = []
    signal.signal(signal.SIGALRM, lambda *a: ticks.append(1))
    signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
    while len(ticks) < 3:
        pass
    print("sampled", flush=True)
    """)
    env = dict(os.environ, SCOPE_PROFILER_TEST_FINISH_PAUSE_MS="1500")
    proc = subprocess.run([BINARY, "run", "-q", "--memory-budget", "8M", "-o", "out.h5", str(script)],
                          capture_output=True, text=True, cwd=sp.tmp, env=env, timeout=120)
    # python's own race: a tick after its shutdown put SIG_DFL back, or none
    assert proc.returncode in (0, -signal.SIGALRM) and proc.stdout == "sampled\n", proc.stderr
    assert proc.stderr == "scope-profiler: test: finishing\n", proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] == 300_000


def test_a_timer_a_c_library_handles_goes_on_after_the_run(sp):
    """A C library's own handler of SIGPROF (vmprof, gperftools: sigaction,
    under the handler the run gave Python at its start) and its interval
    timer: the run ends as python does, status 0 (Python, thinking the
    signal its own, put SIG_DFL back at its end, and the next tick ended the
    run: status 155)."""
    script = sp.script("""
        import ctypes, signal, time
        import scope_profiler as sp
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal(signal.SIGPROF, ctypes.cast(libc.getpid, ctypes.c_void_p).value)   # a C handler
        signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)

        @sp.profile("work")
        def work():
            return sum(range(20000))

        t = time.process_time()
        while time.process_time() - t < 0.3:
            work()
        print("done")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "done\n", "")
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["work"].attrs["num_calls"] >= 1


# The signal comes from outside at a random moment from the script's last
# line on: before the exit phase (Python's own handling, as plain python),
# at its start, or while the profile is written.
LAST_LINE = """
    import scope_profiler as sp
    r = sp.region("many")
    for _ in range(1_000_000):
        with r:
            pass
    print("done", flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signal_at_any_moment_after_the_script(sp, sig):
    script = sp.script(LAST_LINE)

    def start(out):
        p = subprocess.Popen([BINARY, "run", "-q", "-o", str(out), str(script)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout.readline() == "done\n"
        return p

    # How long this machine takes from the last line to the exit, now: the
    # signals come within half the fastest of three runs, so that each
    # comes before the end (a run twice as fast as the fastest of these is
    # not seen even on a loaded machine).
    ends = []
    for i in range(3):
        p = start(sp.tmp / f"m{i}.h5")
        t0 = time.monotonic()
        p.communicate(timeout=120)
        ends.append(time.monotonic() - t0)
        assert p.returncode == 0
    rnd = random.Random(sig)   # the same spread every run
    judged = 0
    for i in range(40):
        if judged == 12:
            break
        out = sp.tmp / f"s{i}.h5"
        p = start(out)
        time.sleep(rnd.uniform(0, 0.5 * min(ends)))
        if p.poll() is not None:
            # This run ended before the signal (a loaded machine ran it
            # faster than those measured): nothing to judge, draw again.
            p.communicate(timeout=120)
            continue
        p.send_signal(getattr(signal, sig))
        _, err = p.communicate(timeout=120)
        if p.returncode == 0 and err == "" and complete(out):
            # Ended between the poll and the signal (the kernel drops a
            # signal to a process that has exited): not judged either. A
            # run that swallowed every signal would leave too few judged.
            continue
        judged += 1
        # Killed by it, as plain python is, whenever it comes.
        assert p.returncode == STATUS[sig], err
        # Python may report the interrupt of its own shutdown; never a
        # traceback through the tool's code.
        for name in ("_run_end", "_finish", "_run_exit", "scope_profiler"):
            assert name not in err, err
        assert complete(out), err
    assert judged == 12


def test_exit_from_another_thread_is_said(sp):
    # A region entered in one thread and exited in another: the call stays
    # open until the end of the run, and one line says so.
    script = sp.script("""
        import threading
        import scope_profiler as sp
        r = sp.region("handover")
        r.__enter__()
        t = threading.Thread(target=r.__exit__, args=(None, None, None))
        t.start()
        t.join()
        with sp.region("after"):
            pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("scope-profiler: warning: 1 region exit came from a thread that had "
                           "not entered the call (first: 'handover'); such calls stay open until "
                           "the end\n")
    with h5py.File(sp.tmp / "out.h5") as f:
        end = regions(f)["handover"]["end_times"][0]
        assert end >= regions(f)["after"]["end_times"][0]
        assert end == f["rank0"].attrs["run_end_time"]


def test_exit_after_a_disabled_entry_is_no_warning(sp):
    # Entered while profiling was off (nothing opened), exited once it is
    # on: nothing is open, nothing to say.
    script = sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(deactivate_profiling=True)
        r = sp.region("later")
        r.__enter__()
        sp.ProfileManager.setup(deactivate_profiling=False)
        r.__exit__(None, None, None)
        with r:
            pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["later"].attrs["num_calls"] == 1


def test_setup_from_another_thread_while_writing_is_refused(sp):
    # A thread that calls setup() while the profile is being written would
    # switch recording back on under the writer: it gets a RuntimeError, and
    # the profile is complete.
    script = sp.script("""
        import sys, threading, time
        import scope_profiler as sp
        r = sp.region("many")
        for _ in range(1_000_000):
            with r:
                pass
        def meddler():
            while type(r).__name__ != "DisabledProfileRegion":
                pass  # waiting for the GIL the write releases, not asleep
            try:
                sp.ProfileManager.setup()
                with r:
                    pass
            except RuntimeError as e:
                sys.stderr.write(f"refused: {e}\\n")
        threading.Thread(target=meddler, daemon=True).start()
    """)
    proc = sp("run", "-q", *WHOLE, "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert complete(sp.tmp / "out.h5")
    # The meddler either ran while the profile was written (refused) or
    # only after the session ended; never in between.
    assert proc.stderr in ("", "refused: scope_profiler: the profile is being written (finalize() in "
                           "another thread); the session cannot change until it is done\n"), proc.stderr


def test_a_failed_finalize_keeps_recording(sp):
    # finalize() cannot write (its folder is gone): OSError, the events are
    # kept, and the session goes on recording until the run's end writes it.
    (sp.tmp / "sub").mkdir()
    script = sp.script("""
        import os
        import scope_profiler as sp
        with sp.region("a"):
            pass
        sp.ProfileManager.setup(file_path="sub/x.h5")
        os.rmdir("sub")
        try:
            sp.ProfileManager.finalize(verbose=False)
        except OSError as e:
            print("finalize failed")
        b = sp.region("b")
        for _ in range(5):
            with b:
                pass
        print(type(b).__name__)
        sp.ProfileManager.setup(file_path="out.h5")
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["finalize failed", "TimeOnlyProfileRegion"]
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["a"].attrs["num_calls"] == 1
        assert regions(f)["b"].attrs["num_calls"] == 5


def test_sigterm_while_python_waits_for_threads_ends_killed_by_it(sp):
    # SIGTERM while Python's shutdown waits for a non-daemon thread: the
    # wait ends (as under plain python) and Python swallows the run's
    # SystemExit there; the run ends killed by it all the same, and the
    # profile is written with what was recorded by then.
    script = sp.script("""
        import os, signal, threading, time
        import scope_profiler as sp
        def worker():
            time.sleep(0.3)
            with sp.region("worker"):
                pass
        threading.Thread(target=worker).start()
        with sp.region("main"):
            pass
        print("main done", flush=True)
    """)
    p = subprocess.Popen([BINARY, "run", "-q", "-o", "out.h5", str(script)], cwd=sp.tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "main done\n"
    time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == -signal.SIGTERM, err
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["main"].attrs["num_calls"] == 1


def test_a_traceback_through_sys_exit_has_no_frame_of_the_tool(sp):
    """sys.exit under run notes the status for MPI's end in C: a traceback
    through it (an atexit callback's, which Python prints) shows the
    script's frames only, as under plain python (before: a frame
    '<scope_profiler>', in exit)."""
    script = sp.script("""
        import atexit, sys
        import scope_profiler as sp
        with sp.region("r"):
            pass
        atexit.register(lambda: sys.exit(5))
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert "SystemExit: 5" in proc.stderr, proc.stderr
    assert "scope_profiler" not in proc.stderr, proc.stderr


def test_ctrl_c_while_the_run_starts_shows_no_frame_of_the_tool(sp):
    """Ctrl-C while the run sets up its hooks, before the script's first
    line: python's KeyboardInterrupt alone, killed by SIGINT, nothing
    written (a traceback through `<scope_profiler>` _run_hooks showed)."""
    script = sp.script("import scope_profiler as sp\nprint('ran')\n")
    proc = subprocess.Popen([BINARY, "run", "-q", "-o", "out.h5", str(script)], cwd=sp.tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SCOPE_PROFILER_TEST_START_PAUSE_MS="2000"),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr.readline() == "scope-profiler: test: starting\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out) == (-signal.SIGINT, ""), err
    assert err == "KeyboardInterrupt\n", err
    assert not (sp.tmp / "out.h5").exists()


def test_ctrl_c_while_the_script_compiles_ends_as_python_does(sp):
    """Ctrl-C before the script's first line (here while its 6 MB compile):
    python prints the KeyboardInterrupt and ends killed by SIGINT; so does
    the run, writing nothing (it said `script.py: KeyboardInterrupt:`, a
    compile error, status 1)."""
    body = "".join(f"def f{i}(a, b):\n    return a + b * {i}\n" for i in range(150_000))
    script = sp.script("import scope_profiler as sp\n" + body, name="big.py")
    # SIGINT as a terminal has it (a job started in the background of a
    # script inherits it ignored)
    proc = subprocess.Popen([BINARY, "run", "-q", "-o", "out.h5", str(script)], cwd=sp.tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGINT, err
    assert "scope-profiler" not in err, err   # python's words alone
    assert not (sp.tmp / "out.h5").exists()


def test_a_ctrl_c_python_swallowed_during_the_script_is_no_exit_signal(sp):
    """A SIGINT whose KeyboardInterrupt Python swallows in a __del__ during
    the script (printed, "Exception ignored") is python's, ignored: the
    script goes on, and the run ends as python does, status 0 (it ended
    130: any swallowed KeyboardInterrupt after any real SIGINT counted)."""
    script = sp.script("""
        import contextlib, os, signal, time
        try:
            from scope_profiler import region
        except ImportError:   # plain python
            region = lambda name: contextlib.nullcontext()
        class D:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
        D()
        with region("after"):
            print("went on")
    """)
    runs = [subprocess.run(argv + [str(script)], cwd=sp.tmp, capture_output=True, text=True, timeout=120,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            for argv in ([embedded().executable], [BINARY, "run", "-q", "-o", "out.h5"])]
    want, proc = runs
    assert "KeyboardInterrupt" in want.stderr and want.stdout == "went on\n", want.stderr
    assert (proc.returncode, proc.stdout) == (want.returncode, want.stdout) == (0, "went on\n"), proc.stderr
    assert "Exception ignored" in proc.stderr, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert list(regions(f)) == ["after"]


@pytest.mark.parametrize("options", [(), ("--subprocesses",)])
def test_os_exit_from_a_thread_while_the_profile_is_written_waits_for_it(sp, options):
    """A watchdog thread's os._exit while the main thread writes the profile
    at the end: the write completes first (the run ended with nothing
    written and "cannot finish the profile: ... being written"), then the
    process ends with the watchdog's status, as python's would (it ended
    with the main thread's: the waiting thread never got the GIL back),
    once the run's end is done: the run's temporary folder (made with or
    without --subprocesses) is gone from $TMPDIR."""
    script = sp.script("""
        import atexit, os, threading, time
        import scope_profiler as sp
        for i in range(20_000):
            with sp.region("a"):
                pass
        go = threading.Event()
        def watchdog():
            go.wait()
            time.sleep(0.2)   # well within the write's pause below, whatever the load
            os._exit(3)
        threading.Thread(target=watchdog, daemon=True).start()
        atexit.register(go.set)
        print("script done")
    """)
    (sp.tmp / "tmp").mkdir()
    proc = sp("run", "-q", *options, "--memory-budget", "0", "-o", "out.h5", script,
              env={"SCOPE_PROFILER_TEST_WRITE_PAUSE_MS": "3000", "TMPDIR": str(sp.tmp / "tmp")})
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "script done\n"
    assert list((sp.tmp / "tmp").iterdir()) == []
    assert proc.stderr == "scope-profiler: test: writing\n", proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["a"].attrs["num_calls"] == 20_000


def test_a_fork_while_the_profile_is_written_ends_at_once(sp):
    """A process forked by a thread while finalize() writes the profile is
    not writing: its os._exit ends it at once (it waited for a write of its
    parent's, 10 s, in every fork worker's os._exit)."""
    script = sp.script("""
        import os, threading, time
        import scope_profiler as sp
        with sp.region("a"):
            pass
        res = {}
        done = threading.Event()
        def forker():
            time.sleep(0.3)   # within finalize()'s write (its pause below)
            pid = os.fork()
            if pid == 0:
                os._exit(7)
            res["status"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            res["during the write"] = not done.is_set()
        t = threading.Thread(target=forker)
        t.start()
        sp.finalize()
        done.set()
        t.join()
        print(res)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script, env={"SCOPE_PROFILER_TEST_WRITE_PAUSE_MS": "3000"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "{'status': 7, 'during the write': True}", proc.stdout
