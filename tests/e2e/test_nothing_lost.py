"""Nothing recorded is lost without a word (issue 25): region names UTF-8
cannot hold, the signals batch systems and terminals send, os.exec*, the
processes the script starts, regions used after finalize(), script names
that are not UTF-8, and signals in Python's own shutdown. Real signals,
real child processes, real mpirun; the files read back with h5py."""
import re
import os
import signal
import subprocess

import h5py
import pytest

from conftest import BINARY, embedded, regions
from test_memory import ASAN
from test_mpi import mpirun
from test_subprocesses import ENV


def calls(path):
    with h5py.File(path) as f:
        return {name: int(r.attrs["num_calls"]) for name, r in regions(f).items()}


# ---- 1. a region name UTF-8 cannot hold ----

BAD_NAME = """
    import os
    import scope_profiler as sp
    name = os.fsdecode(b"bad\\xff")          # 'bad\\udcff', a lone surrogate
    for _ in range(3):
        with sp.region("good"):
            pass
        with sp.region(name):
            pass
    assert sp.get_region(name).num_calls == 3
    for _ in range(2):
        with sp.region("bad\\\\udcff"):      # the escaped form's text: another region
            pass
    assert sp.get_region("bad\\\\udcff").num_calls == 2
    print("done")
"""


def test_a_long_name_utf8_cannot_hold_is_said_in_a_short_line(sp):
    """The warning about a long invalid name shows its start, its end and
    its length: one short line (a 1,000-character name made a 12 KB line)."""
    script = sp.script("""
        import scope_profiler as sp
        with sp.region("x" * 1000 + "\\udcff"):
            pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stderr.splitlines()
    assert len(line) < 300 and "(1001 characters)" in line and "udcff" in line, line
    assert calls(sp.tmp / "out.h5") == {"x" * 1000 + "\\udcff": 1}


def test_a_name_utf8_cannot_hold_keeps_the_profile(sp):
    """The invalid name is recorded as its escaped form, said once; a
    region named by that form's text stays a region of its own, stored with
    a suffix, said too (before, the two were merged into one)."""
    script = sp.script(BAD_NAME)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n"
    warnings = [l for l in proc.stderr.splitlines() if "not valid text" in l]
    assert len(warnings) == 1, proc.stderr
    assert "'bad\\udcff'" in warnings[0] and "'bad\\\\udcff'" in warnings[0]
    taken = [l for l in proc.stderr.splitlines() if "taken by an invalid name's escaped form" in l]
    assert len(taken) == 1 and "'bad\\\\udcff [2]'" in taken[0], proc.stderr
    assert calls(sp.tmp / "out.h5") == {"good": 3, "bad\\udcff": 3, "bad\\udcff [2]": 2}


def test_an_invalid_name_whose_escaped_form_is_taken_gets_a_suffix(sp):
    """The other order: a region named "bad\\udcff" first, then the invalid
    name whose escaped form that is: it is recorded as "bad\\udcff [2]"."""
    sp.script("""
        import os
        import scope_profiler as sp
        with sp.region("bad\\\\udcff"):
            pass
        for _ in range(2):
            with sp.region(os.fsdecode(b"bad\\xff")):
                pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert "it is recorded as 'bad\\\\udcff [2]'" in proc.stderr
    assert calls(sp.tmp / "out.h5") == {"bad\\udcff": 1, "bad\\udcff [2]": 2}


@pytest.mark.script_imports("mpi4py")
def test_a_name_utf8_cannot_hold_on_one_mpi_rank_does_not_hang(sp):
    sp.script("""
        import os
        from mpi4py import MPI
        import scope_profiler as sp
        rank = MPI.COMM_WORLD.Get_rank()
        with sp.region("step"):
            pass
        if rank == 1:
            with sp.region(os.fsdecode(b"bad\\xff")):
                pass
    """)
    proc = mpirun(sp, 2, "run", "-q", "-o", "out.h5", "script.py", timeout=100,
                  env={"SCOPE_PROFILER_MPI_WAIT": "20"})
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert {n: int(r.attrs["num_calls"]) for n, r in regions(f, 0).items()} == {"step": 1}
        assert {n: int(r.attrs["num_calls"]) for n, r in regions(f, 1).items()} == \
            {"step": 1, "bad\\udcff": 1}


# ---- 3. the signals of terminals and batch systems ----

LOOP = """
    import sys, time
    import scope_profiler as sp
    r = sp.region("loop")
    with r:
        pass
    print("started", flush=True)
    while True:
        with r:
            time.sleep(0.001)
"""


def start(script, out, *options):
    p = subprocess.Popen([BINARY, "run", "-q", *options, "-o", str(out), str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "started\n"
    return p


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGXCPU", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGALRM", "SIGVTALRM",
                                 "SIGPROF"])
def test_exit_signals_write_the_profile_and_end_as_the_signal_asks(sp, sig):
    script = sp.script(LOOP)
    p = start(script, sp.tmp / "out.h5")
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=120)
    assert p.returncode == -getattr(signal, sig), err
    assert "Traceback" not in err, err
    assert calls(sp.tmp / "out.h5")["loop"] >= 1


@pytest.mark.parametrize("timer", ["signal.alarm(1)", "signal.setitimer(signal.ITIMER_VIRTUAL, 0.3)",
                                   "signal.setitimer(signal.ITIMER_PROF, 0.3)"])
def test_a_time_limit_the_script_sets_itself_writes_the_profile(sp, timer):
    """signal.alarm() or a CPU timer with no handler: the script's own hard
    time limit ends python by SIGALRM, SIGVTALRM or SIGPROF; the run ends so
    too, its profile written first (it was lost without a word)."""
    script = sp.script(f"""
        import signal
        import scope_profiler as sp
        {timer}
        print("started", flush=True)
        while True:
            with sp.region("spin"):
                sum(range(1000))
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    want = {"alarm": signal.SIGALRM, "VIRTUAL": signal.SIGVTALRM, "PROF": signal.SIGPROF}
    sig = next(v for k, v in want.items() if k in timer)
    assert (proc.returncode, proc.stdout) == (-sig, "started\n"), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert calls(sp.tmp / "out.h5")["spin"] >= 1


def test_ctrl_c_left_at_sig_dfl_by_the_script_writes_the_profile(sp):
    """A script that sets SIGINT to SIG_DFL (so that Ctrl-C ends it at
    once, with no traceback) ends so under the run too, its profile written
    first (it was lost without a word); the script still sees SIG_DFL."""
    script = sp.script("""
        import os, signal, time
        import scope_profiler as sp
        print(signal.signal(signal.SIGINT, signal.SIG_DFL) is signal.default_int_handler,
              signal.getsignal(signal.SIGINT) == signal.SIG_DFL, flush=True)
        with sp.region("r"):
            pass
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        print("not reached")
    """)
    # SIGINT as a terminal has it (a job started in the background of a
    # non-interactive shell has it ignored)
    dfl = dict(preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), capture_output=True,
               text=True, timeout=120)
    proc = subprocess.run([BINARY, "run", "-q", "-o", str(sp.tmp / "out.h5"), str(script)], **dfl)
    assert (proc.returncode, proc.stdout) == (-signal.SIGINT, "True True\n"), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert calls(sp.tmp / "out.h5") == {"r": 1}


NO_CLEANUP = """
    import atexit, multiprocessing as mp, sys, time
    import scope_profiler as sp

    def serve():
        while True:
            time.sleep(0.05)

    if __name__ == "__main__":
        atexit.register(lambda: print("atexit ran", flush=True))
        mp.get_context("fork").Process(target=serve).start()   # never ends, not a daemon
        try:
            with sp.region("main"):
                print("started", flush=True)
                time.sleep(600)
        finally:
            print("finally ran", flush=True)
"""


def test_an_exit_signal_runs_none_of_the_script_s_code(sp):
    """SIGTERM to the run alone while a non-daemon multiprocessing child
    runs: the profile is written and the run ends killed by it, running no
    finally block or atexit callback, as plain python ends at once. Before,
    the signal unwound the script (SystemExit): its cleanup ran, and
    multiprocessing's exit waited for the child for ever (so did a Pool's
    terminate() on a lock a worker killed by the same signal held)."""
    script = sp.script(NO_CLEANUP)
    p = start(script, sp.tmp / "out.h5")
    try:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    finally:
        # The child, orphaned as under python (it holds the pipes open).
        subprocess.run(["pkill", "-9", "-f", str(script)])
    out, err = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGTERM, err
    assert out == "", out
    assert "Traceback" not in err, err
    assert calls(sp.tmp / "out.h5") == {"main": 1}


@pytest.mark.parametrize("again", [False, True], ids=["once", "again-after-1.5-s"])
def test_an_exit_signal_while_python_never_returns_ends_the_run(sp, again):
    """SIGTERM while the main thread is in one C call that never checks for
    signals (an MPI wait for a rank that is gone; here, hashlib's key
    derivation, minutes of C without the GIL): the run cannot write its
    profile, and ends by the signal 10 s later with one line (before: it
    ran on until the call ended). The signal is sent by a thread of the
    script once the main thread is inside the call. The same signal again
    more than a second later (a user who asks twice) ends the run at once,
    with its own line (before, it changed nothing: the run waited out the
    10 s, where python had ended at the first)."""
    script = sp.script("""
        import hashlib, os, signal, sys, threading, time
        import scope_profiler as sp
        with sp.region("x"):
            pass
        main = threading.main_thread().ident

        def kill():
            while sys._current_frames()[main].f_code.co_name != "derive":
                time.sleep(0.01)
            time.sleep(0.5)   # inside the call, the GIL let go
            os.kill(os.getpid(), signal.SIGTERM)
            if AGAIN:
                time.sleep(1.5)   # not the same request (that is within a second)
                os.kill(os.getpid(), signal.SIGTERM)

        def derive():
            return hashlib.pbkdf2_hmac("sha256", b"x", b"y", 2 ** 31 - 1)

        threading.Thread(target=kill, daemon=True).start()
        derive()
    """.replace("AGAIN", repr(again)))
    proc = sp("run", "-q", "--flush-interval", "0.05", "-o", "out.h5", script, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    # The calls streamed by then are where the line says (it did not say).
    partial = sp.tmp / "out.h5.partial"
    why = ("a second signal came before the script was back in Python to write the profile" if again else
           "the script did not come back to Python within 10 s of the signal to write the profile")
    assert proc.stderr == (f"scope-profiler: run: {why}: ended unwritten; the calls streamed so far "
                           f"stay in {partial} (scope-profiler recover finishes it)\n")
    assert sp("recover", partial).returncode == 0
    assert calls(sp.tmp / "out.h5") == {"x": 1}


@pytest.mark.parametrize("options", [(), ("--subprocesses",)])
def test_no_fork_once_an_exit_signal_came(sp, options):
    """A thread of the script that forks after an exit signal came, before
    the main thread's handler ends the run (a Pool replacing the workers a
    process-group SIGTERM ended): plain python, ended at once, forked
    nothing; the run's thread waits for the end instead (before, the child
    missed the group's signal and outlived the run: a fork Pool's worker
    waits on its pool for ever). The main thread holds SIGTERM, so the
    thread that sends it takes it."""
    script = sp.script("""
        import os, signal, threading, time
        import scope_profiler as sp
        with sp.region("x"):
            pass
        go = threading.Event()

        def start_after_the_signal():
            go.wait()
            os.kill(os.getpid(), signal.SIGTERM)
            if os.fork() == 0:
                os.write(1, b"started after the signal\\n")
                time.sleep(5)
                os._exit(0)

        t = threading.Thread(target=start_after_the_signal)
        t.start()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        go.set()
        t.join(10)
    """)
    proc = sp("run", "-q", *options, "-o", "out.h5", script, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert "started after the signal" not in proc.stdout
    assert proc.stderr == ""
    assert calls(sp.tmp / "out.h5") == {"x": 1}


def test_the_script_sees_the_exit_signals_as_plain_python_shows_them(sp):
    """signal.getsignal() and signal.signal()'s return say SIG_DFL where
    the run put its handler, as under plain python: a handler that chains
    to the one it found when that is callable (PyTorch Lightning's SLURM
    requeue at SIGUSR1) goes on (before: it called the run's, and the run
    ended, status 138)."""
    script = sp.script("""
        import os, signal
        sigs = [signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
                signal.SIGVTALRM, signal.SIGPROF]
        print([repr(signal.getsignal(s)) for s in sigs])
        prev = signal.getsignal(signal.SIGUSR1)

        def requeue(signum, frame):
            print("requeue", flush=True)
            if callable(prev):
                prev(signum, frame)

        print(repr(signal.signal(signal.SIGUSR1, requeue)))
        os.kill(os.getpid(), signal.SIGUSR1)
        print("went on", signal.signal(signal.SIGUSR1, signal.SIG_DFL) is requeue)
        for bad in (2 ** 64, -2 ** 70, "x"):   # python's own errors, nothing changed
            try:
                signal.signal(signal.SIGTERM, bad)
            except (TypeError, ValueError, OverflowError) as e:
                print(type(e).__name__, e)
        print(repr(signal.getsignal(signal.SIGTERM)))
    """)
    plain = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    proc = sp("run", "-q", "--no-output", script)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, plain.stdout, "")


def test_a_fork_sets_sig_dfl_as_under_python(sp):
    """A fork of the run whose parent had its own disposition of a signal
    (SIG_IGN here): SIG_DFL set in the child is the real SIG_DFL (before:
    the run's handler, which ended the child through the run's end)."""
    script = sp.script("""
        import ctypes, os, signal
        libc = ctypes.CDLL(None, use_errno=True)

        def c_handler(sig):
            sa = ctypes.create_string_buffer(256)
            assert libc.sigaction(sig, None, sa) == 0
            return int.from_bytes(sa.raw[:8], "little")   # sa_handler comes first

        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGUSR1, signal.SIG_DFL)
            os.write(1, b"child %d\\n" % c_handler(signal.SIGUSR1))
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    for options in ((), ("--subprocesses",)):
        proc = sp("run", "-q", "--no-output", *options, script)
        assert (proc.returncode, proc.stdout) == (0, "child 0\n"), proc.stderr


def test_sig_dfl_set_by_the_script_still_writes_the_profile(sp):
    """signal.signal(SIGTERM, SIG_DFL) (a library restoring what it found):
    the run's handler is put back, so SIGTERM still writes the profile
    before it ends the run as the default action would."""
    script = sp.script("""
        import os, signal, time
        import scope_profiler as sp
        with sp.region("x"):
            pass
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        print(repr(signal.signal(signal.SIGTERM, signal.SIG_DFL)) != "<Handlers.SIG_DFL: 0>",
              repr(signal.getsignal(signal.SIGTERM)), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
        print("not reached")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert proc.stdout == "True <Handlers.SIG_DFL: 0>\n"
    assert calls(sp.tmp / "out.h5") == {"x": 1}


PIPE_DFL = """
    import contextlib, signal, sys
    try:
        import scope_profiler as sp
        line = sp.region("line")
    except ImportError:   # plain python, for comparison
        line = contextlib.nullcontext()
    print(repr(signal.signal(signal.SIGPIPE, signal.SIG_DFL)), repr(signal.getsignal(signal.SIGPIPE)),
          flush=True)
    if len(sys.argv) > 1:   # set back to what python had: a closed pipe raises BrokenPipeError
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    for i in range(10 ** 6):
        with line:
            print(i, flush=True)
"""


def first_line_then_close(cmd, cwd):
    """Runs cmd with its stdout read as `| head -1` does: one line, then
    the pipe closed. (status, the line, stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        proc.stdout.close()
        proc.stdout = None   # communicate reads stderr alone
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, line, err


def test_sigpipe_set_to_sig_dfl_writes_the_profile_then_ends_as_python(sp):
    """A script that sets SIGPIPE to SIG_DFL (a command-line tool's habit,
    so that `| head` ends it silently) piped into a reader that stops: the
    profile is written and said, then the run is killed by SIGPIPE as
    plain python is (before: killed at the write, the profile lost without
    a word). The script sees SIG_DFL as under python; set back to SIG_IGN,
    the closed pipe raises BrokenPipeError as under python."""
    script = sp.script(PIPE_DFL, name="pipe.py")
    plain = first_line_then_close([embedded().executable, str(script)], sp.tmp)
    run = first_line_then_close([BINARY, "run", "-o", "out.h5", str(script)], sp.tmp)
    assert plain[:2] == (-signal.SIGPIPE, "<Handlers.SIG_IGN: 1> <Handlers.SIG_DFL: 0>\n"), plain
    assert run[:2] == plain[:2], run
    assert f"profile written to {sp.tmp / 'out.h5'}" in run[2], run[2]
    assert "BrokenPipeError" not in run[2], run[2]   # python is killed at the write: no traceback
    assert calls(sp.tmp / "out.h5")["line"] >= 1
    # Set back to SIG_IGN: BrokenPipeError and python's status (1; 120 where 3.13
    # cannot flush stdout at its end either); the profile written.
    plain = first_line_then_close([embedded().executable, str(script), "ign"], sp.tmp)
    run = first_line_then_close([BINARY, "run", "-o", "ign.h5", str(script), "ign"], sp.tmp)
    assert plain[0] in (1, 120) and "BrokenPipeError" in plain[2], plain
    assert run[0] == plain[0] and "BrokenPipeError" in run[2], (run, plain)
    assert calls(sp.tmp / "ign.h5")["line"] >= 1


LEAK_FDS = """
    import os
    import scope_profiler as sp
    with sp.region("a"):
        pass
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as e:
        print(e.strerror)
"""


@pytest.mark.parametrize("hard, limit", [(False, 128), (True, 128), (True, 20)],
                         ids=["soft_limit", "hard_limit", "hard_limit_of_20"])
def test_a_script_that_uses_every_descriptor_keeps_its_profile(sp, hard, limit):
    """A script that leaks descriptors up to its limit ("Too many open
    files") and ends: the profile is written over the earlier one at -o,
    status 0 as under python (before: "cannot write ...: Too many open
    files" twice, the profile lost, status 1; with an earlier profile
    there, the end even called it "not a scope-profiler profile"). Under a
    soft limit the end raises it for its write; at the hard one (`ulimit -n
    N` sets both) two descriptors kept at the top of the limit since the
    start are given up for it."""
    import resource
    script = sp.script(LEAK_FDS, name="leak.py")

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (limit, limit if hard else resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    for out in ("first.h5", "first.h5"):   # the second over the first's profile
        proc = subprocess.run([BINARY, "run", "-q", "-o", out, str(script)], cwd=sp.tmp, preexec_fn=lower,
                              capture_output=True, text=True, timeout=120)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "Too many open files\n", ""), proc.stderr
        assert calls(sp.tmp / out) == {"a": 1}


def test_a_stream_that_could_not_make_its_file_says_nothing_was_flushed(sp):
    """Every descriptor held past the first flush: the stream cannot make
    OUT.partial, and the line says the profile is lost (it named the
    partial file, which did not exist, for recover)."""
    import resource
    script = sp.script("""
        import os, time
        import scope_profiler as sp
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        t = time.monotonic()
        while time.monotonic() - t < 2:   # tries to flush every 0.05 s meanwhile
            with sp.region("a"):
                pass
    """, name="held.py")

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    proc = subprocess.run([BINARY, "run", "-q", "--flush-interval", "0.05", "-o", "h.h5", str(script)],
                          cwd=sp.tmp, preexec_fn=lower, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.splitlines()[-1]
    assert last.startswith(f"scope-profiler: run: cannot stream to '{sp.tmp / 'h.h5.partial'}': Too many "
                           "open files; nothing was flushed before it: the profile is lost"), proc.stderr
    assert sorted(p.name for p in sp.tmp.iterdir()) == ["held.py"]


@pytest.mark.skipif(ASAN, reason="AddressSanitizer's shadow memory cannot run under an address-space limit")
def test_a_script_that_takes_all_its_address_space_keeps_its_profile(sp):
    """ulimit -v: the script ends holding every byte it could allocate (its
    MemoryError caught). The end still writes the profile (HDF5's start
    exited the process with status 255 and no word, or crashed)."""
    import resource
    script = sp.script("""
        import scope_profiler as sp
        for i in range(1000):
            with sp.region("r%d" % (i % 10)):
                pass
        hold, size = [], 1 << 20
        while size >= 64:
            try:
                hold.append(bytearray(size))
            except MemoryError:
                size //= 2
        print("full", flush=True)
    """, name="hog.py")

    def lower():
        resource.setrlimit(resource.RLIMIT_AS, (200_000 * 1024, 200_000 * 1024))

    proc = subprocess.run([BINARY, "run", "-q", "-o", "hog.h5", str(script)], cwd=sp.tmp, preexec_fn=lower,
                          capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "full\n", ""), proc.stderr
    assert calls(sp.tmp / "hog.h5") == {f"r{k}": 100 for k in range(10)}


def test_descriptors_of_the_script_s_in_place_of_the_kept_ones_are_never_closed(sp):
    """At the hard limit, a script that closed every descriptor first (a
    daemon's start), then leaked them all: the numbers of the two kept for
    the end are the script's files now, which the end never closes (it
    knows its own by their inode): the write fails, said for what it is,
    never calling the earlier profile at -o "not a profile"."""
    import resource
    script = sp.script("""
        import os, resource
        import scope_profiler as sp
        with sp.region("a"):
            pass
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError as e:
            print(e.strerror, held[-1], flush=True)
    """, name="daemon.py")
    first = sp("run", "-q", "-o", "first.h5", sp.script("import scope_profiler as sp\nsp.region('x').__enter__()\n"))
    assert first.returncode == 0, first.stderr

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    proc = subprocess.run([BINARY, "run", "-q", "-o", "first.h5", str(script)], cwd=sp.tmp, preexec_fn=lower,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("Too many open files 127\n"), proc.stdout
    assert "not a scope-profiler profile" not in proc.stderr
    assert "cannot tell whether it is a profile: Too many open files" in proc.stderr, proc.stderr
    # Had the end closed two of the script's, the write would have had them.
    assert proc.returncode == 1
    assert "x" in calls(sp.tmp / "first.h5")   # the earlier profile stays


def test_a_scripts_own_handler_is_kept(sp):
    script = sp.script("""
        import os, signal, sys, time
        import scope_profiler as sp
        def bye(signum, frame):
            # os.write: the signal may land while print("started") is still
            # flushing, and a second print would be a reentrant call.
            os.write(1, b"own handler\\n")
            sys.exit(7)
        signal.signal(signal.SIGHUP, bye)
        with sp.region("r"):
            pass
        print("started", flush=True)
        while True:
            time.sleep(0.01)
    """)
    p = start(script, sp.tmp / "out.h5")
    p.send_signal(signal.SIGHUP)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 7, err
    assert out == "own handler\n"
    assert calls(sp.tmp / "out.h5") == {"r": 1}


def test_an_ignored_sighup_stays_ignored(sp):
    # nohup: SIGHUP ignored before the run starts; the run keeps it so.
    script = sp.script("""
        import os, signal
        import scope_profiler as sp
        with sp.region("r"):
            os.kill(os.getpid(), signal.SIGHUP)
        print("survived")
    """)
    proc = subprocess.run([BINARY, "run", "-q", "-o", "out.h5", str(script)], cwd=sp.tmp,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "survived\n"
    assert calls(sp.tmp / "out.h5") == {"r": 1}


def test_a_signal_the_script_blocks_stays_blocked_to_the_end(sp):
    """Exit signals the script blocked and that are still pending when it
    ends are never delivered under python (status 0); the run ended killed
    by the first of them after writing."""
    script = sp.script("""
        import os, signal
        import scope_profiler as sp
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1])
        with sp.region("r"):
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
                os.kill(os.getpid(), sig)
        print("end")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "end\n" and proc.stderr == ""
    assert calls(sp.tmp / "out.h5") == {"r": 1}


@pytest.mark.parametrize("where", ["script", "atexit"])
def test_os_exit_writes_the_profile_first(sp, where):
    """os._exit(n) in the run's own process (the script's last line, or an
    atexit callback; a thread still running): the profile is written as at
    the end, then the process ends with n, printing what python prints
    (nothing was written, without a word, before)."""
    script = sp.script(f"""
        import atexit, os, threading, time
        import scope_profiler as sp
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        with sp.region("r"):
            pass
        print("bye", flush=True)
        if {where!r} == "atexit":
            atexit.register(os._exit, 3)
        else:
            os._exit(3)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "bye\n" and proc.stderr == ""
    assert calls(sp.tmp / "out.h5") == {"r": 1}


def test_os_exit_called_wrongly_raises_and_the_run_goes_on(sp):
    """os._exit() without a status, or with one that is no int, raises and
    the script goes on, as under python: nothing is written then (the
    profile was written there and every later fork waited for ever), and
    os._exit(status=3) is the failure os._exit(3) is (an empty profile took
    the place of the previous one)."""
    script = sp.script("""
        import os, sys
        import scope_profiler as sp
        for bad in ((), ("x",)):
            try:
                os._exit(*bad)
            except TypeError:
                print("raised")
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        with sp.region("r"):
            pass
        print("forked", flush=True)
        if sys.argv[1] == "kw":
            os._exit(status=3)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script, "ok", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "raised\nraised\nforked\n" and proc.stderr == "", proc.stderr
    assert calls(sp.tmp / "out.h5") == {"r": 1}
    quiet = sp.script("import os\nos._exit(status=3)\n", name="quiet.py")
    before = (sp.tmp / "out.h5").read_bytes()
    proc = sp("run", "-q", "-o", "out.h5", quiet)
    assert proc.returncode == 3
    assert (sp.tmp / "out.h5").read_bytes() == before   # a failure that recorded nothing keeps it


# ---- 11. signals in Python's own shutdown ----

ATEXIT = """
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


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_in_a_scripts_atexit_callback_ends_as_it_asks(sp, sig):
    # Python swallows an exception raised in an atexit callback and would
    # exit 0; the run ends as the signal asks, with the profile written.
    script = sp.script(ATEXIT)
    p = start(script, sp.tmp / "out.h5")
    assert p.stdout.readline() == "in atexit\n"   # the script is over
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=120)
    want = -getattr(signal, sig)
    assert p.returncode == want, err
    assert "scope_profiler" not in err, err   # no traceback through the tool
    assert calls(sp.tmp / "out.h5") == {"r": 1}


def test_a_keyboardinterrupt_raised_by_code_at_exit_is_ignored_as_python_does(sp):
    """No SIGINT came: a KeyboardInterrupt that a __del__ or an atexit
    callback raises is printed and ignored, status 0, as under python (the
    run ended with 130 before); a SIGINT there still ends the run (above)."""
    script = sp.script("""
        import atexit
        import scope_profiler as sp
        class Late:
            def __del__(self):
                raise KeyboardInterrupt
        def callback():
            raise KeyboardInterrupt
        atexit.register(callback)
        with sp.region("r"):
            pass
        late = Late()
        print("end")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "end\n"
    assert proc.stderr.count("Exception ignored") == 2, proc.stderr   # both printed, as python does
    assert calls(sp.tmp / "out.h5") == {"r": 1}


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGUSR1"])
def test_interrupt_main_with_a_signal_left_at_its_default_does_nothing(sp, sig):
    """_thread.interrupt_main(sig) does nothing under python for a signal
    with no Python handler; the run's own handler in its place ended the
    run (status 128 + sig before). SIGINT's still interrupts."""
    script = sp.script(f"""
        import _thread, signal, time
        import scope_profiler as sp
        with sp.region("r"):
            _thread.interrupt_main(signal.{sig})
            time.sleep(0.05)
        print("after", _thread.interrupt_main.__module__)
        try:
            _thread.interrupt_main()
            time.sleep(5)
        except KeyboardInterrupt:
            print("interrupted")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "after _thread\ninterrupted\n"
    assert calls(sp.tmp / "out.h5") == {"r": 1}


# ---- 4. os.exec* ----

@pytest.mark.parametrize("call", [
    "os.execv(sys.executable, [sys.executable, '-c', 'print(\"replaced\")'])",
    "os.execl(sys.executable, sys.executable, '-c', 'print(\"replaced\")')",
    "os.execlp('python3', 'python3', '-c', 'print(\"replaced\")')",
    "os.execve(sys.executable, [sys.executable, '-c', 'print(\"replaced\")'], dict(os.environ))",
])
def test_exec_writes_the_profile_first(sp, call):
    (sp.tmp / "out.h5").write_bytes(b"")   # an older file: it must not stay
    sp("run", "-q", "-o", "out.h5", sp.script("import scope_profiler as sp\nwith sp.region('old'): pass\n"))
    script = sp.script(f"""
        import os, sys
        import scope_profiler as sp
        for _ in range(5):
            with sp.region("before"):
                pass
        sys.stdout.flush()
        {call}
    """, name="exec.py")
    proc = sp("run", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "replaced\n"
    assert "the profile is written before the process is replaced" in proc.stderr
    assert calls(sp.tmp / "out.h5") == {"before": 5}


def test_execvp_that_misses_in_some_path_folders_is_no_failure(sp):
    """os.execvp tries each folder of PATH in turn: a miss in the first ones
    says nothing (before: 'os.exec*() failed', then the exec succeeded); a
    program found nowhere is said once."""
    script = sp.script("""
        import os, sys
        import scope_profiler as sp
        with sp.region("before"):
            pass
        sys.stdout.flush()
        if sys.argv[1] == "missing":
            try:
                os.execvp("no-such-program-anywhere", ["x"])
            except OSError:
                print("exec failed")
        else:
            os.execvp("python3", ["python3", "-c", "print('replaced')"])
    """)
    env = {"PATH": f"{sp.tmp}/no-such-folder:{sp.tmp}/nor-this:{os.environ['PATH']}"}
    proc = sp("run", "-q", "-o", "out.h5", script, "found", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "replaced\n"
    assert "failed" not in proc.stderr, proc.stderr
    assert calls(sp.tmp / "out.h5") == {"before": 1}
    proc = sp("run", "-q", "-o", "out.h5", script, "missing", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "exec failed\n"
    assert proc.stderr.count("os.exec*() failed") == 1, proc.stderr


def test_a_failed_exec_is_said(sp):
    script = sp.script("""
        import os
        import scope_profiler as sp
        with sp.region("before"):
            pass
        try:
            os.execv("/nonexistent/program", ["x"])
        except OSError:
            print("exec failed")
        with sp.region("after"):
            pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "exec failed\n"
    lines = [l for l in proc.stderr.splitlines() if l]
    assert len(lines) == 1 and "os.exec*() failed" in lines[0] and "not recorded" in lines[0], proc.stderr
    assert calls(sp.tmp / "out.h5") == {"before": 1}


# ---- 5. child processes ----

def test_children_that_import_scope_profiler_are_counted(sp):
    script = sp.script("""
        import multiprocessing as mp, os, subprocess, sys
        import scope_profiler as sp

        @sp.profile("work")
        def work(x):
            return x * x

        if __name__ == "__main__":
            with sp.region("main"):
                pid = os.fork()                                        # 1
                if pid == 0:
                    work(1)
                    os._exit(0)
                os.waitpid(pid, 0)
                for method in ("fork", "spawn"):                        # 2 + 2
                    ctx = mp.get_context(method)
                    procs = [ctx.Process(target=work, args=(i,)) for i in range(2)]
                    for p in procs:
                        p.start()
                    for p in procs:
                        p.join()
                subprocess.run([sys.executable, "-c", "import scope_profiler"], check=True)  # 1
                subprocess.run([sys.executable, "-c", "pass"], check=True)   # not counted
            print("done")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l]
    assert lines == ["scope-profiler: run: warning: 6 child processes imported scope_profiler and "
                     "were not profiled: their calls are not in this profile"], proc.stderr
    assert calls(sp.tmp / "out.h5") == {"main": 1}


def test_a_child_imports_the_scope_profiler_it_would_under_python(sp):
    """A Python child that finds a scope_profiler of its own (installed in
    its venv, on the user's PYTHONPATH) imports that one, as under plain
    python, not the run's stand-in that records nothing (before: the
    stand-in, first on PYTHONPATH, shadowed it: the child's own profile
    was never written, and read_h5 was missing). Still counted."""
    lib = sp.tmp / "lib"
    lib.mkdir()
    (lib / "scope_profiler.py").write_text("WHICH = 'installed'\n")
    script = sp.script("""
        import subprocess, sys
        code = "import scope_profiler as s; print(getattr(s, 'WHICH', 'stand-in'))"
        subprocess.run([sys.executable, "-c", code], check=True)
    """)
    env = dict(os.environ, PYTHONPATH=str(lib))
    plain = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True, env=env)
    assert (plain.returncode, plain.stdout) == (0, "installed\n"), plain.stderr
    proc = sp("run", "-q", "--no-output", script, env=env)
    assert (proc.returncode, proc.stdout) == (0, "installed\n"), proc.stderr
    assert proc.stderr == ("scope-profiler: run: warning: 1 child process imported scope_profiler and "
                           "was not profiled: its calls are not in this profile\n")


def test_forks_that_never_could_record_are_not_counted(sp):
    """Forks of a script that had made no region (a Pool's workers of a
    program that never used scope_profiler) are no children that lost
    calls: no line (before: each was counted, with the line, even under
    -q). One that makes a region after the fork is counted."""
    script = sp.script("""
        import multiprocessing as mp, os, sys, warnings

        # 3.12+: the Pool's threads, joined, may not have left the process
        # yet at the fork (plain python warns so too, now and then)
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)

        def plain(x):
            return x

        def lazy():
            import scope_profiler as sp
            with sp.region("task"):
                pass

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                pool.map(plain, range(4))
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            if sys.argv[1] == "lazy":
                p = mp.get_context("fork").Process(target=lazy)
                p.start()
                p.join()
            print("done")
    """)
    proc = sp("run", "-q", "--no-output", script, "plain")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "done\n", "")
    proc = sp("run", "-q", "--no-output", script, "lazy")
    assert (proc.returncode, proc.stdout) == (0, "done\n"), proc.stderr
    assert proc.stderr == ("scope-profiler: run: warning: 1 child process imported scope_profiler and "
                           "was not profiled: its calls are not in this profile\n")


def test_no_child_no_line(sp):
    script = sp.script("""
        import subprocess, sys
        import scope_profiler as sp
        with sp.region("main"):
            subprocess.run([sys.executable, "-c", "pass"], check=True)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# ---- 6. after finalize() ----

def test_regions_after_finalize_are_said_once(sp):
    script = sp.script("""
        import scope_profiler as sp
        @sp.profile("f")
        def f():
            pass
        with sp.region("a"):
            f()
        sp.finalize(verbose=False)
        for _ in range(3):
            with sp.region("a"):
                f()
        f()
        print("end")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l]
    assert len(lines) == 1 and "used after finalize()" in lines[0] and "not recorded" in lines[0], proc.stderr
    assert calls(sp.tmp / "out.h5") == {"a": 1, "f": 1}


def test_a_region_in_pythons_shutdown_after_the_write_is_said_once(sp):
    """A module global's __del__ runs in Python's shutdown, after the run
    wrote the profile: its regions are not recorded, and one line says so
    (nothing did). A daemon thread still recording at the end is not said
    (the documented end: it records nothing more)."""
    script = sp.script("""
        import scope_profiler as sp

        class Late:
            def __del__(self):
                for _ in range(3):
                    with sp.region("late"):
                        pass

        keep = Late()
        with sp.region("r"):
            pass
        print("end")
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert (proc.returncode, proc.stdout) == (0, "end\n"), proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l]
    assert len(lines) == 1 and "'late' used in Python's shutdown" in lines[0] and "not recorded" in lines[0], \
        proc.stderr
    assert calls(sp.tmp / "out.h5") == {"r": 1}
    daemon = sp.script("""
        import threading, time
        import scope_profiler as sp

        def background():
            while True:
                with sp.region("bg"):
                    time.sleep(0.001)

        threading.Thread(target=background, daemon=True).start()
        time.sleep(0.05)
    """, name="daemon.py")
    proc = sp("run", "-q", "-o", "out.h5", daemon)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert calls(sp.tmp / "out.h5")["bg"] >= 1


def test_a_decorated_call_after_finalize_is_said(sp):
    script = sp.script("""
        import scope_profiler as sp
        @sp.profile("f")
        def f():
            pass
        f()
        sp.finalize(verbose=False)
        f()
        sp.setup()                 # a new session: recorded again, nothing said
        f()
        sp.finalize(verbose=False)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("region 'f' used after finalize()") == 1, proc.stderr
    assert calls(sp.tmp / "out.h5") == {"f": 1}


# ---- 9. a script name that is not UTF-8 ----

@pytest.mark.parametrize("options", [[], ["--recursive"]])
def test_a_script_name_that_is_not_utf8_runs(sp, options):
    name = os.fsencode(sp.tmp) + b"/n\xe9.py"
    with open(name, "wb") as f:
        f.write(b"import scope_profiler as sp\n"
                b"def f():\n    pass\n"
                b"with sp.region('r'):\n    f()\n"
                b"print('ok')\n")
    proc = subprocess.run([os.fsencode(BINARY), b"run", b"-q", *map(os.fsencode, options),
                           b"-o", b"out.h5", name], cwd=sp.tmp, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"ok\n" and proc.stderr == b""
    got = calls(sp.tmp / "out.h5")
    if options:
        assert got == {"n\\udce9.py": 1, "__main__.<module>": 1, "__main__.f": 1, "r": 1}
    else:
        assert got == {"r": 1}


@pytest.mark.parametrize("where", ["script", "cwd"])
def test_a_folder_that_is_not_utf8_runs_recursive(sp, where):
    """run --recursive in a folder whose name is not UTF-8 (the script's
    own folder, or the working one): the folders that tell the script's
    code from the rest are its bytes (a traceback through the tool and no
    profile before)."""
    folder = os.fsencode(sp.tmp) + b"/bad\xff"
    os.mkdir(folder)
    with open(folder + b"/s.py", "wb") as f:
        f.write(b"def f():\n    pass\nf()\nprint('ok')\n")
    script = folder + b"/s.py" if where == "script" else b"s.py"
    proc = subprocess.run([os.fsencode(BINARY), b"run", b"-q", b"--recursive", b"-o",
                           os.fsencode(sp.tmp) + b"/out.h5", script],
                          cwd=folder, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"ok\n" and proc.stderr == b""
    assert calls(sp.tmp / "out.h5") == {"s.py": 1, "__main__.<module>": 1, "__main__.f": 1}


def test_subprocesses_under_a_tmpdir_that_is_not_utf8(sp):
    """The children's folder lives in $TMPDIR: one whose name is not UTF-8
    holds it too (the session did not start before: a traceback, no
    profile)."""
    tmpdir = os.fsencode(sp.tmp) + b"/tmp\xfe"
    os.mkdir(tmpdir)
    script = sp.script("""
        import multiprocessing as mp
        import scope_profiler as sp

        def job(i):
            with sp.region("child"):
                return i

        if __name__ == "__main__":
            with sp.region("parent"):
                with mp.get_context("spawn").Pool(1) as pool:
                    print(pool.map(job, range(3)))
    """)
    env = dict(os.environb)
    env.update({k.encode(): v.encode() for k, v in ENV.items()})   # an ASan build's module too
    env[b"TMPDIR"] = tmpdir
    proc = subprocess.run([os.fsencode(BINARY), b"run", b"-q", b"--subprocesses", b"-o", b"out.h5",
                           os.fsencode(script)], cwd=sp.tmp, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"[0, 1, 2]\n", proc.stderr
    summary = sp("summary", "out.h5").stdout
    assert re.search(r"^child\s+3\b", summary, re.M), summary
    assert re.search(r"^parent\s+1\b", summary, re.M), summary
    assert os.listdir(tmpdir) == []   # the children's folder is gone
