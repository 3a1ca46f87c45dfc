"""run --subprocesses: the script's Python child processes (os.fork,
multiprocessing's fork, spawn and forkserver, python started through
subprocess) each recorded as a process of their own in the run's one file,
with their pid and their parent's; children that write nothing (killed)
are counted in one line. Real processes, the file read back with h5py."""
import os
import pathlib
import signal
import sys
import textwrap

import h5py
import pytest

from conftest import BINARY, embedded, regions, sanitizer_env, small_tmpfs
from test_memory import ASAN, peak_rss


def child_env():
    """The environment of a run whose spawned children load the module
    beside the binary: an ASan build's module (`make asan`) needs the
    sanitizer's runtime first in a plain python, as test_module_install."""
    mods = list(pathlib.Path(BINARY).parent.glob("scope_profiler*.so"))
    return sanitizer_env(mods[0] if mods else None)


ENV = child_env()


def processes(path):
    """{rank: (pid, parent_pid, {region: calls})} of every group."""
    out = {}
    with h5py.File(path) as f:
        for name in f:
            if name.startswith("rank"):
                g = f[name]
                r = int(name[4:])
                out[r] = (int(g.attrs["pid"]), int(g.attrs.get("parent_pid", 0)),
                          {n: int(reg.attrs["num_calls"]) for n, reg in regions(f, r).items()})
    return out


PRELUDE = """
    import multiprocessing as mp, os, signal, subprocess, sys, time
    import scope_profiler as sp

    @sp.profile("work")
    def work(n):
        for _ in range(n):
            with sp.region("step"):
                pass
"""

WORK = PRELUDE + """
    if __name__ == "__main__":
        with sp.region("main"):
            {body}
"""


def run(sp, body, *options, name="script.py"):
    body = textwrap.dedent(body).strip().replace("\n", "\n" + " " * 12)
    script = sp.script(WORK.replace("{body}", body), name=name)
    proc = sp("run", "-q", "--subprocesses", *options, "-o", "out.h5", script, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return proc, processes(sp.tmp / "out.h5")


def children(procs, direct=True):
    """The child processes' calls, sorted; each child's parent is the run
    (direct) or, for forkserver's, the fork server the run started."""
    parent = procs[0][0]
    kids = [v for r, v in procs.items() if r != 0]
    if direct:
        assert all(ppid == parent for _, ppid, _ in kids), procs
    else:
        assert all(ppid not in (0, pid) for pid, ppid, _ in kids), procs
    assert procs[0][1] == 0
    return sorted((calls for _, _, calls in kids), key=lambda c: sorted(c.items()))


def test_forked_children_are_processes_of_their_own(sp):
    proc, procs = run(sp, """
        for n, how in ((2, "os._exit"), (3, "sys.exit"), (4, "return")):
            pid = os.fork()
            if pid == 0:
                work(n)
                if how == "os._exit":
                    os._exit(0)
                if how == "sys.exit":
                    sys.exit(0)
                break
            os.waitpid(pid, 0)
    """)
    assert proc.stderr == ""
    # The parent recorded main once and no work; each child only its own.
    assert procs[0][2] == {"main": 1}
    kids = children(procs)
    assert [k.get("work") for k in kids] == [1, 1, 1]
    assert sorted(k["step"] for k in kids) == [2, 3, 4]
    # The third child left `main` (opened in the parent) in its own copy:
    # a call the child did not start is not the child's.
    assert all("main" not in k for k in kids)


def test_the_readers_name_processes_not_ranks(sp):
    """summary and diff of a run's processes say processes (its columns,
    its notes, a selection): ranks are an MPI job's."""
    for out in ("a.h5", "b.h5"):
        proc = sp("run", "-q", "--subprocesses", "-o", out, sp.script(WORK.replace("{body}", """
            pid = os.fork()
            if pid == 0:
                work(3)
                os._exit(0)
            os.waitpid(pid, 0)
        """.strip()), name="script.py"), env=ENV)
        assert proc.returncode == 0, proc.stderr
    summary = sp("summary", sp.tmp / "a.h5")
    assert summary.returncode == 0, summary.stderr
    assert "2 processes (this run and 1 child process)" in summary.stdout
    assert "mean/process" in summary.stdout and "processes 1/2" in summary.stdout
    assert "rank" not in summary.stdout.replace(str(sp.tmp), ""), summary.stdout
    picked = sp("summary", "--ranks", "1", sp.tmp / "a.h5")
    assert "; process 1 of 2\n" in picked.stdout, picked.stdout
    diff = sp("diff", sp.tmp / "a.h5", sp.tmp / "b.h5")
    assert diff.returncode == 0, diff.stderr
    assert " (2 processes 0,1, run span " in diff.stdout, diff.stdout
    assert "total/process [s]" in diff.stdout
    assert "rank" not in diff.stdout.replace(str(sp.tmp), ""), diff.stdout
    for command in ("summary", "diff", "export"):
        args = [sp.tmp / "a.h5"] + ([sp.tmp / "b.h5"] if command == "diff" else []) + \
            (["--format", "csv", "-o", sp.tmp / "x.csv"] if command == "export" else [])
        none = sp(command, "--ranks", "7", *args)
        assert none.returncode != 0
        assert none.stderr.endswith("no process selected: the profile has processes 0,1\n"), none.stderr


def test_a_child_that_execs_python_keeps_its_calls_before_and_after(sp):
    """A forked child that runs another Python program through os.execv
    (the same pid) writes its profile before the exec, and the program it
    became writes one of its own: two processes of the profile, neither
    replacing the other (the second had taken the first one's file)."""
    proc, procs = run(sp, """
        pid = os.fork()
        if pid == 0:
            work(5)
            os.execv(sys.executable, [sys.executable, "-c", "import scope_profiler as sp\\n"
                                      "with sp.region('after_exec'):\\n    pass"])
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    """)
    assert proc.stderr == ""
    kids = [v for r, v in procs.items() if r != 0]
    assert sorted((calls for _, _, calls in kids), key=lambda c: sorted(c)) == \
        [{"after_exec": 1}, {"step": 5, "work": 1}], procs
    assert kids[0][0] == kids[1][0]   # one pid, two programs
    assert (sp.tmp / "out.h5").exists()


@pytest.mark.parametrize("budget", ["0", "64M"])   # the profile written whole, or streamed
def test_a_killed_child_is_counted_beside_one_that_ran_a_second_program(sp, budget):
    """A child killed before it wrote anything is said, beside a child that
    ran a second Python program through os.execv (two profiles of one
    process): the count was of files, and the second program's made up for
    the killed child's, without a word."""
    proc, procs = run(sp, """
        pid = os.fork()
        if pid == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import scope_profiler as sp\\n"
                                      "with sp.region('after_exec'):\\n    pass"])
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        pid = os.fork()
        if pid == 0:
            work(1)
            os.kill(os.getpid(), signal.SIGKILL)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == -signal.SIGKILL
    """, "--memory-budget", budget)
    assert proc.stderr == ("scope-profiler: run: warning: 1 of 2 profiled child processes wrote no profile "
                           "(killed, still running at the end, or it failed): their calls are not in this profile\n")
    assert [calls for r, (_, _, calls) in sorted(procs.items()) if r != 0] == [{}, {"after_exec": 1}], procs


def sigterm_to_the_group(sp, options, script, marks, n, stopped_s=0):
    """`run -q --subprocesses OPTIONS script` in a session of its own, sent
    SIGTERM to its whole process group (a batch system's end) once n files
    matching marks (the workers', named MARK-PID) are there: (status,
    stdout, stderr). With stopped_s, one worker is stopped before the
    signal and continued stopped_s later (a loaded machine that does not
    run it meanwhile)."""
    import subprocess
    import time
    proc = subprocess.Popen([BINARY, "run", "-q", "--subprocesses", *options, "-o", "out.h5", str(script)],
                            cwd=sp.tmp, env=dict(os.environ, **ENV), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            if len(list(sp.tmp.glob(marks))) == n:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the workers never got ready ({marks})")
        late = int(sorted(sp.tmp.glob(marks))[0].name.rsplit("-", 1)[1]) if stopped_s else 0
        if late:
            os.kill(late, signal.SIGSTOP)
        os.killpg(proc.pid, signal.SIGTERM)
        if late:
            time.sleep(stopped_s)
            os.kill(late, signal.SIGCONT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize("method", ["spawn"])
def test_no_worker_starts_after_the_signal_that_ends_the_run(sp, method):
    """SIGTERM to the process group while a spawn pool works: plain python
    ends at once, its pool starting nothing more. The run writes its
    profile meanwhile; the pool's thread that replaces the workers the
    signal ended now waits for the end (before: new workers, started after
    the signal, that never got it: tracebacks from workers that found the
    run's module folder gone, and workers left running). (A forkserver
    pool asks its server, which the signal ended, over a socket: the
    thread's EOFError can still show while a slow write lasts.)"""
    import time
    script = sp.script(textwrap.dedent(PRELUDE + """
    def task(_):
        open("worker-%d" % os.getpid(), "a").close()
        for _ in range(20000):
            work(1)
            time.sleep(0.001)

    if __name__ == "__main__":
        pool = mp.get_context(METHOD).Pool(3)
        pool.map_async(task, range(12))
        time.sleep(300)
    """).replace("METHOD", repr(method)))
    rc, _, err = sigterm_to_the_group(sp, [], script, "worker-*", 3)
    assert rc == -signal.SIGTERM, (rc, err)
    assert "Traceback" not in err, err
    workers = [int(p.name.split("-")[1]) for p in sp.tmp.glob("worker-*")]
    assert len(workers) == 3, workers   # none started after the signal
    for pid in workers:
        for _ in range(100):   # each ended by the signal (a zombie's parent is gone: reaped)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"worker {pid} outlived the run")


@pytest.mark.parametrize("method,stopped_s", [("fork", 0), ("spawn", 0), ("fork", 2)],
                         ids=["fork", "spawn", "fork-a-worker-not-run-for-2-s"])
def test_sigterm_to_the_process_group_keeps_every_process_s_calls(sp, method, stopped_s):
    """SIGTERM to the job's whole process group (a batch system's end)
    while a pool's workers run: each worker writes its profile at the
    signal, and the pool's terminate() (the run's `with` block unwinding)
    sends it SIGTERM again meanwhile, which lets the write finish (it had
    killed it half-way); the run waits for its children (a few seconds at
    most) before it merges. Every call is in, none cut at a last flush (a
    day's interval: nothing was flushed), and no line says a child did not
    finish. Also when one worker is not run for 2 s after the signal (a
    loaded machine; here stopped, then continued): the run waits for a
    child that still has the signal to take, as for one that said it
    writes. Before, it waited only the first second for a child that had
    said nothing, then merged without it ("1 of 2 profiled child processes
    wrote no profile"), as one CI run on a loaded machine saw."""
    script = sp.script(textwrap.dedent(PRELUDE + """
    def task(_):
        work(3)
        open("ready-%d" % os.getpid(), "w").close()
        time.sleep(600)

    if __name__ == "__main__":
        work(1)
        with mp.get_context(METHOD).Pool(2) as pool:
            pool.map(task, range(2), chunksize=1)
    """).replace("METHOD", repr(method)))
    rc, out, err = sigterm_to_the_group(sp, ["--flush-interval", "86400"], script, "ready-*", 2, stopped_s)
    assert rc == -signal.SIGTERM, (rc, err)
    assert "child process" not in err, err
    assert "Traceback" not in err, err
    procs = processes(sp.tmp / "out.h5")
    assert procs[0][2] == {"work": 1, "step": 1}
    assert children(procs) == [{"work": 1, "step": 3}, {"work": 1, "step": 3}]


def test_a_process_of_few_calls_takes_little_room(sp):
    """Each process's calls stream into chunked columns, whose chunk is
    stored whole from its first call: a process whose file is made at its
    end sizes them to its calls, so four children of a few calls each and
    the run make a file of under 32 KiB a process (1.1 MB each before)."""
    proc, procs = run(sp, """
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                work(3)
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    assert proc.stderr == ""
    assert len(procs) == 5
    assert (sp.tmp / "out.h5").stat().st_size < 5 * 32 * 1024


@pytest.mark.parametrize("option", ["--track-threads", "--memory"])
def test_a_forked_child_records_in_the_mode_of_the_run(sp, option):
    """The child's session starts with its events reset: the mode is
    applied again, so the regions' lanes (or allocation) columns are there
    when the child records (it crashed at its first call once)."""
    proc, procs = run(sp, """
        import threading
        pid = os.fork()
        if pid == 0:
            work(2)
            t = threading.Thread(target=work, args=(3,))
            t.start()
            t.join()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
    """, option)
    assert proc.stderr == ""
    assert children(procs) == [{"step": 5, "work": 2}]


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_children(sp, method):
    proc, procs = run(sp, f"""
        ctx = mp.get_context("{method}")
        ps = [ctx.Process(target=work, args=(n,)) for n in (2, 5)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        assert [p.exitcode for p in ps] == [0, 0]
    """)
    assert proc.stderr == ""
    assert procs[0][2] == {"main": 1}
    assert children(procs, direct=method != "forkserver") == \
        [{"work": 1, "step": 2}, {"work": 1, "step": 5}]


def test_a_pool_s_calls_all_arrive(sp):
    proc, procs = run(sp, """
        with mp.get_context("fork").Pool(2) as pool:
            assert pool.map(work, [1] * 8) == [None] * 8
            pool.close()
            pool.join()
    """)
    assert proc.stderr == ""
    kids = children(procs)
    assert sum(k.get("work", 0) for k in kids) == 8
    assert sum(k.get("step", 0) for k in kids) == 8


def test_python_started_by_subprocess(sp):
    sp.script("""
        import scope_profiler as sp
        for _ in range(4):
            with sp.region("sub"):
                pass
    """, name="child.py")
    proc, procs = run(sp, """
        subprocess.run([sys.executable, "child.py"], check=True)
        subprocess.run([sys.executable, "-c", "pass"], check=True)   # no scope_profiler: no process
    """)
    assert proc.stderr == ""
    assert children(procs) == [{"sub": 4}]


def test_a_killed_child_is_counted(sp):
    proc, procs = run(sp, """
        import signal
        for kill in (False, True):
            pid = os.fork()
            if pid == 0:
                work(1)
                if kill:
                    os.kill(os.getpid(), signal.SIGKILL)
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    assert proc.stderr == ("scope-profiler: run: warning: 1 of 2 profiled child processes wrote no "
                           "profile (killed, still running at the end, or it failed): their calls are not in "
                           "this profile\n")
    assert children(procs) == [{"work": 1, "step": 1}]


def test_recursive_children(sp):
    script = sp.script("""
        import os
        def leaf():
            pass
        def main():
            pid = os.fork()
            if pid == 0:
                leaf(); leaf()
                os._exit(0)
            os.waitpid(pid, 0)
            leaf()
        main()
    """)
    proc = sp("run", "-q", "--subprocesses", "--recursive", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    procs = processes(sp.tmp / "out.h5")
    assert procs[0][2]["__main__.leaf"] == 1
    assert children(procs) == [{"__main__.leaf": 2}]


def test_recursive_children_record_their_own_program(sp):
    """run --recursive --subprocesses: a Python child's own program is the
    user's code too, whatever it is: `python -c CODE`, a script in another
    folder, `python -m module` (the -c child and the other folder's script
    recorded nothing before: only the run's own folder counted)."""
    (sp.tmp / "elsewhere").mkdir()
    (sp.tmp / "elsewhere" / "tool.py").write_text("def h():\n    pass\nfor _ in range(5):\n    h()\n")
    (sp.tmp / "elsewhere" / "modtool.py").write_text("def m():\n    pass\nm()\n")
    script = sp.script("""
        import os, subprocess, sys
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, "-c", "def g():\\n    pass\\nfor _ in range(7):\\n    g()\\n"],
                       check=True)
        subprocess.run([sys.executable, "-B", os.path.join(here, "elsewhere", "tool.py")], check=True)
        subprocess.run([sys.executable, "-m", "modtool"], cwd=os.path.join(here, "elsewhere"), check=True)
    """)
    proc = sp("run", "-q", "--subprocesses", "--recursive", "-o", "out.h5", script, env=ENV)
    assert proc.returncode == 0, proc.stderr
    kids = children(processes(sp.tmp / "out.h5"))
    assert [{k: v for k, v in c.items() if k != "__main__.<module>"} for c in kids] == \
        [{"__main__.g": 7}, {"__main__.h": 5}, {"__main__.m": 1}], kids


def test_spawned_children_take_the_run_s_settings(sp):
    """A Python child started through subprocess records on the settings
    the run's command line gave (its own setup() cannot change them, as
    the run's script cannot), the memory budget it streams within among
    them, and prints no summary of its own: the run's shows it (here -q:
    none at all)."""
    sp.script("""
        import scope_profiler as sp
        sp.setup(buffer_limit=5, track_threads=False, memory_budget=2 << 20)
        c = sp.get_config()
        print("child", c.buffer_limit, c.track_threads, c.memory_budget)
        with sp.region("sub"):
            pass
    """, name="child.py")
    proc, procs = run(sp, """
        subprocess.run([sys.executable, "child.py"], check=True)
    """, "--buffer-limit", "7", "--track-threads", "--memory-budget", "3M")
    assert proc.stdout == f"child 7 True {3 << 20}\n"
    assert proc.stderr == ""
    assert children(procs) == [{"sub": 1}]


POOL = """
    import multiprocessing as mp, sys

    def work(n):
        return sum(range(n))

    if __name__ == "__main__":
        with mp.get_context(sys.argv[1]).Pool(2) as pool:
            assert pool.map(work, [10] * 6) == [45] * 6
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_recursive_reaches_spawned_children_that_never_import_it(sp, method):
    """run --subprocesses --recursive on a program that never imports
    scope_profiler: each spawned or forkserver's worker is profiled from its
    start (a sitecustomize in the run's folder), its functions named as in
    the run (__main__, not multiprocessing's __mp_main__); multiprocessing's
    own helpers (the fork server, the resource tracker) are not counted as
    children that wrote nothing."""
    script = sp.script(POOL, name="pool.py")
    proc = sp("run", "-q", "--subprocesses", "--recursive", "-o", "out.h5", script, method, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    procs = processes(sp.tmp / "out.h5")
    kids = children(procs, direct=method == "spawn")
    assert sum(k.get("__main__.work", 0) for k in kids) == 6
    assert not any(name.startswith(("scope_profiler", "sitecustomize")) for k in kids for name in k)


def test_the_sitecustomize_the_run_s_hides_still_runs(sp):
    """Under --recursive the run's folder, first on the children's
    PYTHONPATH, holds a sitecustomize: the one it hides (the next on
    sys.path) runs in the child as it would have."""
    site = sp.tmp / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nMARK = os.getpid()\n")
    sp.script("""
        import os, sitecustomize
        print("site", sitecustomize.MARK == os.getpid())
    """, name="child.py")
    env = dict(ENV or {}, PYTHONPATH=str(site))
    script = sp.script("""
        import subprocess, sys
        subprocess.run([sys.executable, "child.py"], check=True)
    """)
    plain = sp("run", "-q", "--no-output", script, env=env)
    proc = sp("run", "-q", "--subprocesses", "--recursive", "-o", "out.h5", script, env=env)
    assert plain.returncode == 0 and proc.returncode == 0, (plain.stderr, proc.stderr)
    assert plain.stdout == proc.stdout == "site True\n"
    assert proc.stderr == ""
    assert children(processes(sp.tmp / "out.h5")) == [{"__main__.<module>": 1}]


def test_without_the_option_children_stay_out(sp):
    script = sp.script(WORK.replace("{body}", """pid = os.fork()
            if pid == 0:
                work(1)
                os._exit(0)
            os.waitpid(pid, 0)"""))
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert "1 child process imported scope_profiler and was not profiled" in proc.stderr
    assert list(processes(sp.tmp / "out.h5")) == [0]


def test_refused_under_an_mpi_launcher(sp):
    proc = sp("run", "--subprocesses", sp.script("pass\n"), env={"OMPI_COMM_WORLD_RANK": "0"})
    assert proc.returncode == 2
    assert "--subprocesses cannot be used under an MPI launcher" in proc.stderr


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_pool_terminated_by_its_with_block_ends(sp, method):
    """The most common Pool: its `with` block's end terminates the workers
    with SIGTERM, one of them maybe holding the task queue's lock. Each
    worker writes its profile, then SIGTERM ends it (no Python code
    unwound: a spawned worker that turned SIGTERM into SystemExit once left
    its siblings waiting forever), so every call arrives and no line is
    said (all were lost, said for spawn and forkserver workers not even).
    A spawned worker ended before its handler came had recorded nothing
    and is not counted."""
    for _ in range(3):
        proc, procs = run(sp, f"""
            with mp.get_context("{method}").Pool(3) as pool:
                assert pool.map(work, [1] * 6) == [None] * 6
        """)
        assert proc.stderr == ""
        assert procs[0][2] == {"main": 1}
        kids = children(procs, direct=method != "forkserver")
        assert sum(k.get("work", 0) for k in kids) == 6
        assert sum(k.get("step", 0) for k in kids) == 6


def test_a_child_ended_by_sigterm_writes_then_ends_by_it(sp):
    """A child with no handler of its own: its profile is written, and it
    ends as plain python's would, killed by the signal. One whose script
    set a handler keeps it (here, one that leaves by os._exit(3), which
    writes the profile too). The child waits in short sleeps, not
    signal.pause(): a signal that comes after Python's last look and before
    pause() is entered leaves pause() waiting for ever (under python too;
    the wider for a thread that takes the GIL meanwhile, as the stream's
    flush does): this test hung once in a loaded `make check`."""
    proc, procs = run(sp, """
        import signal
        def leave(signum, frame):
            os._exit(3)
        for own in (False, True):
            signal.signal(signal.SIGTERM, leave if own else signal.SIG_DFL)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                work(2 if own else 1)
                os.write(w, b"x")
                while True:
                    time.sleep(0.05)
            os.read(r, 1)
            os.kill(pid, signal.SIGTERM)
            status = os.waitpid(pid, 0)[1]
            assert os.waitstatus_to_exitcode(status) == (3 if own else -signal.SIGTERM), status
    """)
    assert proc.stderr == ""
    assert children(procs) == [{"work": 1, "step": 1}, {"work": 1, "step": 2}]


@pytest.mark.parametrize("begun_by", ["os._exit", "SIGTERM"])
def test_sigterm_while_a_child_writes_lets_the_write_finish(sp, begun_by):
    """SIGTERM that comes while a child writes its profile, begun at its
    os._exit (a Pool's terminate() as its workers end) or by an earlier
    SIGTERM (the process group's, then the pool's terminate()): the write
    goes on to its end, however long (here 3 s, the test's pause inside
    it), then the signal ends the child. Before, the first case gave the
    write 2 s and lost it, and the second did too, silently; a second
    signal now gives the write as long as the run waits for its children
    (10 s), and a child that deadline ends says so."""
    begin = "os._exit(0)" if begun_by == "os._exit" else 'os.write(w, b"ready"); sleep_on()'
    first = "" if begun_by == "os._exit" else 'said = wait_for(b"ready", said); os.kill(pid, signal.SIGTERM)'
    proc, procs = run(sp, """
        def sleep_on():
            while True:
                time.sleep(0.05)
        def wait_for(what, said):
            while what not in said:
                more = os.read(r, 100)
                assert more, said
                said += more
            return said
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            work(1000)
            os.dup2(w, 2)   # the pause's line, and what the child says, come here
            os.environ["SCOPE_PROFILER_TEST_FINISH_PAUSE_MS"] = "3000"
            BEGIN
        os.close(w)
        said = b""
        FIRST
        said = wait_for(b"test: finishing", said)
        os.kill(pid, signal.SIGTERM)
        status = os.waitpid(pid, 0)[1]
        while more := os.read(r, 100):
            said += more
        assert os.waitstatus_to_exitcode(status) == -signal.SIGTERM, (status, said)
        assert b"child process" not in said, said
    """.replace("BEGIN", begin).replace("FIRST", first))
    assert proc.stderr == ""
    assert children(procs) == [{"work": 1, "step": 1000}]


def test_a_child_ended_as_soon_as_it_is_forked_ends(sp):
    """SIGTERM sent the moment a fork returns (a Pool ending a worker it
    just made) reaches the child once its handlers are in place: it ends by
    it as under plain python (caught before them, it was forgotten, and a
    Pool waited forever for the worker)."""
    proc, procs = run(sp, """
        import collections, signal, time
        ends = collections.Counter()
        for _ in range(20):
            pid = os.fork()
            if pid == 0:
                time.sleep(0.5)
                os._exit(7)
            os.kill(pid, signal.SIGTERM)
            ends[os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])] += 1
        assert ends == {-signal.SIGTERM: 20}, ends
    """)
    assert proc.stderr == ""
    assert len(children(procs)) == 20


def test_a_child_s_own_handlers_are_kept(sp):
    """A handler the child sets that calls the one it replaced (plain
    python's SIG_DFL, which it cannot call) goes on to its own cleanup; a
    signal faulthandler holds stays faulthandler's; a child that fails
    before recording anything is still a process of the profile, and says
    nothing."""
    proc, procs = run(sp, """
        import faulthandler, signal, time
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            prev = signal.getsignal(signal.SIGTERM)
            def leave(signum, frame):
                if callable(prev):
                    prev(signum, frame)
                sys.exit(5)
            signal.signal(signal.SIGTERM, leave)
            try:   # the signal may come as the write returns: inside the try
                os.write(w, b"x")
                time.sleep(30)
            finally:
                os.write(1, b"cleanup\\n")
        os.read(r, 1)
        os.kill(pid, signal.SIGTERM)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 5
        faulthandler.register(signal.SIGUSR1, file=sys.stdout)
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGUSR1)   # a traceback, not the end
            os._exit(0)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    """)
    assert proc.stdout.startswith("cleanup\n"), proc.stdout
    assert "Current thread" in proc.stdout or "Stack (most recent call first)" in proc.stdout
    assert proc.stderr == ""
    assert children(procs) == [{}, {}]


def test_a_child_that_never_returns_to_python_still_ends_at_sigterm(sp):
    """A child stuck in one C call (sum over an endless iterator never
    checks for signals) cannot run the handler that writes its profile:
    two seconds after SIGTERM it ends by it all the same, as plain python's
    would have at once, unwritten, saying so, and counted (or, had its
    stream flushed before it went into that call, with its calls up to that
    flush). Should
    the signal come before the child is in that call, its handler writes
    the profile: a rare ordering, allowed."""
    proc, procs = run(sp, """
        import itertools, signal, time
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            work(1)
            os.write(w, b"x")
            sum(itertools.repeat(0))
        os.read(r, 1)
        time.sleep(0.2)   # into sum(), almost always
        os.kill(pid, signal.SIGTERM)
        for _ in range(600):   # at most a minute; never a stray child spinning on
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise SystemExit("the child did not end at SIGTERM")
        assert os.waitstatus_to_exitcode(status) == -signal.SIGTERM, status
        print(pid, sorted(os.listdir(os.environ["SCOPE_PROFILER_CHILDREN"])))   # what the run will count
    """)
    said = (f"scope-profiler: run: child process {proc.stdout.split()[0]} did not come back to Python within 2 s "
            "of the signal to write its profile: ended unwritten\n")
    unwritten = (said + "scope-profiler: run: warning: 1 of 1 profiled child processes wrote no profile "
                 "(killed, still running at the end, or it failed): their calls are not in this profile\n")
    recovered = (said + "scope-profiler: run: warning: 1 of 1 profiled child processes did not finish their "
                 "profile (killed, still running at the end, or it failed): their calls up to their last flush are in "
                 "this profile\n")
    assert (proc.stderr, children(procs)) in ((unwritten, []), ("", [{"work": 1, "step": 1}]),
                                              (recovered, [{"work": 1, "step": 1}]), (recovered, [{}])), \
        (proc.stderr, procs, proc.stdout)


FLUSHED = """
    def flushed(partial, steps):
        \"\"\"Waits until the stream's file partial holds that many step calls.\"\"\"
        for _ in range(600):
            out = subprocess.run([BINARY, "export", "--format", "csv", partial],
                                 capture_output=True, text=True).stdout
            if out.count("\\nstep,") == steps:
                return
            time.sleep(0.1)
        raise SystemExit(f"{partial}: the calls were never flushed")
"""

KILLED = PRELUDE + FLUSHED + """
    def killed():
        work(5)
        # Until its stream flushed those calls (the test reads the file the
        # child streams to), then SIGKILL: nothing of its own runs after.
        flushed(os.path.join(os.environ["SCOPE_PROFILER_CHILDREN"], "proc-%d.h5.partial" % os.getpid()), 5)
        os.kill(os.getpid(), signal.SIGKILL)

    if __name__ == "__main__":
        p = mp.get_context(METHOD).Process(target=killed)
        p.start()
        p.join()
        assert p.exitcode == -signal.SIGKILL, p.exitcode
        work(1)
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_killed_by_sigkill_keeps_its_calls_up_to_its_last_flush(sp, method):
    """A child streams to its own file: killed with SIGKILL (the OOM
    killer), it still is a process of the profile, with every call up to its
    last flush, and one line says so; the file says which process is
    incomplete, as an MPI job's merge does for a rank."""
    text = textwrap.dedent(KILLED).replace("BINARY", repr(str(BINARY))).replace("METHOD", repr(method))
    script = sp.script(text)
    proc = sp("run", "-q", "--subprocesses", "--flush-interval", "0.1", "-o", "out.h5", script, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("scope-profiler: run: warning: 1 of 1 profiled child processes did not finish their "
                           "profile (killed, still running at the end, or it failed): their calls up to their last flush "
                           "are in this profile\n")
    procs = processes(sp.tmp / "out.h5")
    assert procs[0][2] == {"work": 1, "step": 1}
    assert children(procs) == [{"work": 1, "step": 5}]
    with h5py.File(sp.tmp / "out.h5") as f:
        meta = f["metadata"].attrs
        assert meta["incomplete_ranks"] in ("1", b"1") and int(meta["partial_until_ns"]) > 0
    summary = sp("summary", sp.tmp / "out.h5")
    assert summary.returncode == 0, summary.stderr


def test_a_spawned_child_flushes_at_the_run_s_interval(sp):
    """A spawned child streams at the run's --flush-interval, not at the
    default second: under a day's interval nothing of its calls is in its
    file three seconds on (a second's would have flushed them), and all of
    them are in the profile at its end."""
    text = textwrap.dedent(PRELUDE + """
    def child():
        work(5)
        time.sleep(3)
        partial = os.path.join(os.environ["SCOPE_PROFILER_CHILDREN"], "proc-%d.h5.partial" % os.getpid())
        if os.path.exists(partial):
            out = subprocess.run([BINARY, "export", "--format", "csv", partial],
                                 capture_output=True, text=True).stdout
            assert "\\nstep," not in out, out

    if __name__ == "__main__":
        p = mp.get_context("spawn").Process(target=child)
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
    """).replace("BINARY", repr(str(BINARY)), 1)
    proc = sp("run", "-q", "--subprocesses", "--flush-interval", "86400", "-o", "out.h5", sp.script(text),
              env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert children(processes(sp.tmp / "out.h5")) == [{"work": 1, "step": 5}]


KILLED_RUN = PRELUDE + FLUSHED + """
    if __name__ == "__main__":
        work(2)
        for method in ("fork", "spawn"):
            p = mp.get_context(method).Process(target=work, args=(3,))
            p.start()
            p.join()
            assert p.exitcode == 0, p.exitcode
        flushed("out.h5.partial", 2)   # the run's own calls, then SIGKILL
        os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_run(sp, tmpdir=None):
    """A run of --subprocesses killed with SIGKILL after its two children
    (fork, spawn) finished: its temporary folder (under the test's own
    TMPDIR, or tmpdir: relative to the run's folder) and the environment
    that finds it."""
    env = dict(ENV, TMPDIR=tmpdir or str(sp.tmp / "tmp"))
    (sp.tmp / "tmp").mkdir()
    script = sp.script(textwrap.dedent(KILLED_RUN).replace("BINARY", repr(str(BINARY))))
    proc = sp("run", "-q", "--subprocesses", "--flush-interval", "0.1", "-o", "out.h5", script, env=env)
    assert proc.returncode == -9, proc.stderr
    assert not (sp.tmp / "out.h5").exists()
    folders = list((sp.tmp / "tmp").iterdir())
    assert len(folders) == 1, folders
    return folders[0], env


def test_a_run_killed_is_recovered_with_its_children(sp):
    """The run itself killed (SIGKILL, the OOM killer): recover merges its
    own calls up to its last flush with its children's files, which its
    partial file finds in its folder; a later run on the host keeps that
    folder (it is a dead run's, but holds its children's profiles)."""
    folder, env = killed_run(sp)
    later = sp("run", "-q", "--subprocesses", "-o", "later.h5", sp.script("print('hi')\n", name="later.py"),
               env=env)
    assert later.returncode == 0, later.stderr
    assert folder.is_dir()
    proc = sp("recover", "out.h5.partial", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("scope-profiler: recover: process 0 did not finish"), lines
    assert lines[1] == ("scope-profiler: recover: wrote out.h5: 11 calls of 3 processes of 3, 1 of them up "
                        "to its last flush")
    procs = processes(sp.tmp / "out.h5")
    assert procs[0][2] == {"work": 1, "step": 2}
    assert children(procs) == [{"work": 1, "step": 3}, {"work": 1, "step": 3}]
    assert (sp.tmp / "out.h5.partial").exists()   # only read


MERGED_END = PRELUDE + """
    if __name__ == "__main__":
        work(2)
        p = mp.get_context("fork").Process(target=work, args=(3,))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
"""


def test_a_run_killed_while_it_merges_keeps_the_old_file_and_recovers(sp):
    """The end merges the children's files with the run's own profile,
    finished in place as OUT.partial: killed then (SIGKILL, or a second
    Ctrl-C abandoning the end), OUT is as it was, and recover of OUT.partial
    merges every process. Before, OUT already held the run's own calls
    alone, and nothing pointed to the children's files. A run that ends
    leaves no OUT.partial, and its OUT names no folder."""
    import subprocess
    script = sp.script(textwrap.dedent(MERGED_END))
    env = dict(ENV, TMPDIR=str(sp.tmp / "tmp"))
    (sp.tmp / "tmp").mkdir()
    ended = sp("run", "-q", "--subprocesses", "--flush-interval", "0.1", "-o", "old.h5", script, env=env)
    assert ended.returncode == 0, ended.stderr
    assert not (sp.tmp / "old.h5.partial").exists()
    with h5py.File(sp.tmp / "old.h5") as f:
        assert "children_dir" not in f["rank0"].attrs
    (sp.tmp / "old.h5").rename(sp.tmp / "out.h5")
    before = (sp.tmp / "out.h5").read_bytes()
    proc = subprocess.Popen([BINARY, "run", "-q", "--subprocesses", "--flush-interval", "0.1", "-o", "out.h5",
                             str(script)], cwd=sp.tmp, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **env, SCOPE_PROFILER_TEST_MERGE_PAUSE_MS="60000"))
    try:
        assert proc.stderr.readline() == "scope-profiler: test: merging\n"
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert (sp.tmp / "out.h5").read_bytes() == before
    rec = sp("recover", "-o", "rec.h5", "out.h5.partial", env=env)
    assert rec.returncode == 0, rec.stderr
    procs = processes(sp.tmp / "rec.h5")
    assert procs[0][2] == {"work": 1, "step": 2}
    assert children(procs) == [{"work": 1, "step": 3}]


def test_a_run_killed_under_a_relative_tmpdir_is_recovered_from_elsewhere(sp):
    """TMPDIR relative to the run's folder: the folder its partial file
    names is absolute, so recover finds the children from another folder;
    an OUT in that folder, among the files recover reads, is refused."""
    folder, env = killed_run(sp, tmpdir="tmp")
    sub = sp.tmp / "elsewhere"
    sub.mkdir()
    refused = sp("recover", "--force", "-o", folder / "proc-1.h5", sp.tmp / "out.h5.partial", env=env, cwd=sub)
    assert refused.returncode == 2, refused.stderr
    assert "is in the folder of the child processes' files to recover" in refused.stderr
    proc = sp("recover", "-o", "x.h5", sp.tmp / "out.h5.partial", env=env, cwd=sub)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1].endswith("11 calls of 3 processes of 3, 1 of them up to its last flush")
    assert children(processes(sub / "x.h5")) == [{"work": 1, "step": 3}, {"work": 1, "step": 3}]


def test_a_run_killed_whose_folder_is_gone_recovers_its_own_calls(sp):
    """The run's folder gone (the system's cleaning of its temporary
    folder): one line says so, and its own calls are recovered."""
    import shutil
    folder, env = killed_run(sp)
    shutil.rmtree(folder)
    proc = sp("recover", "out.h5.partial", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"scope-profiler: recover: warning: the run's child processes streamed into "
                        f"'{folder}', which is gone (runs on this host remove it a day after): only the "
                        f"run's own calls are recovered"), lines
    assert lines[1].startswith("scope-profiler: recover: wrote out.h5: 3 calls of 2 regions"), lines
    assert processes(sp.tmp / "out.h5")[0][2] == {"work": 1, "step": 2}


def test_a_fork_of_a_child_that_streamed_streams_from_nothing_of_its_parent_s(sp):
    """A child whose calls streamed forks a grandchild: the grandchild's
    own stream takes nothing of its parent's (call indexes, the end of a
    call still open at a flush), so its call held open across flushes is
    in the profile, with its parent's calls, and nothing is said (the
    parent's pending state had made the grandchild's file unreadable)."""
    proc, procs = run(sp, """
        import time
        pid = os.fork()
        if pid == 0:
            work(10)
            time.sleep(0.3)            # flushes hand the calls over
            g = os.fork()
            if g == 0:
                with sp.region("slow"):
                    time.sleep(0.35)   # open across flushes
                os._exit(0)
            assert os.waitstatus_to_exitcode(os.waitpid(g, 0)[1]) == 0
            os._exit(0)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    """, "--flush-interval", "0.1")
    assert proc.stderr == ""
    assert children(procs, direct=False) == [{"slow": 1}, {"work": 1, "step": 10}]
    with h5py.File(sp.tmp / "out.h5") as f:
        slow = next(regions(f, r)["slow"] for r in procs if "slow" in regions(f, r))
        assert slow["end_times"][0] - slow["start_times"][0] >= 300_000_000


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_every_process_streams_within_the_budget(sp, method):
    """Under --subprocesses the run's own process and each child stream
    their calls to files of their own within the run's --memory-budget (a
    spawned child takes the run's budget too), and the end merges the files
    into the one profile (format version 3, a group at a time): no line
    about the budget, and every call arrives (but for those the writer,
    behind at so small a budget, dropped and counted)."""
    n = 200_000    # 3.2 MB of calls, past a 1M budget
    body = f"""
        p = mp.get_context("{method}").Process(target=work, args=({n},))
        p.start()
        p.join()
        work({n})
    """
    proc, procs = run(sp, body, "--memory-budget", "1M")
    # At most the writer's losses are said (by either process).
    assert all("calls were not recorded: the profile's writer fell behind" in line
               for line in proc.stderr.splitlines()), proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert int(f.attrs["format_version"]) == 3
        for rank in (0, 1):
            step = regions(f, rank)["step"].attrs
            assert step["num_calls"] + step.get("dropped_events", 0) == n, (rank, dict(step))
        assert "parent_pid" not in f["rank0"].attrs
        assert int(f["rank1"].attrs["parent_pid"]) == procs[0][0]
    # --memory-budget 0 keeps every call in memory by request: the file is
    # written whole, each child's joining it.
    proc, procs = run(sp, body, "--memory-budget", "0")
    assert proc.stderr == "", proc.stderr
    assert procs[0][2]["step"] == n and children(procs) == [{"work": 1, "step": n}]


FORKED = """
import os, sys
import scope_profiler as sp
n = int(sys.argv[1])
step = sp.region("step")
pid = os.fork()
if pid == 0:
    for _ in range(n):
        with step:
            pass
    os._exit(0)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
"""


def test_a_long_child_and_the_run_s_end_stay_within_the_budget(sp):
    """A child's 2M calls (32 MB held whole) stream within the budget, and
    the run's end merges its file a group at a time: the run's peak (its
    process's and its children's) stays within a few MiB of a 100-call
    run's, and every call is there."""
    script = sp.script(FORKED, name="forked.py")
    n = 200_000 if ASAN else 2_000_000
    base, _ = peak_rss(sp, script, 100, "--subprocesses", "--memory-budget", "4M")
    peak, out = peak_rss(sp, script, n, "--subprocesses", "--memory-budget", "4M")
    print(f"peak {peak / 2**20:.1f} MiB, 100 calls {base / 2**20:.1f} MiB", file=sys.stderr)
    assert ASAN or peak - base < 12 << 20, (peak, base)
    with h5py.File(out) as f:
        step = regions(f, 1)["step"].attrs
        assert step["num_calls"] + step.get("dropped_events", 0) == n, dict(step)
    # Within the default budget and shorter than a flush, the child holds
    # its calls to its end, which writes them to its file a block at a
    # time: about their 16 bytes a call at the peak, not twice that (a
    # copy of the whole buffer, then the calls read back for the tree).
    base, _ = peak_rss(sp, script, 100, "--subprocesses")
    whole, out = peak_rss(sp, script, n, "--subprocesses")
    per = (whole - base) / n
    print(f"held to the end: {per:.1f} bytes a call", file=sys.stderr)
    assert ASAN or per < 24, per
    with h5py.File(out) as f:
        assert regions(f, 1)["step"].attrs["num_calls"] == n


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_child_that_ends_a_session_and_opens_another_keeps_both(sp, start):
    """A child whose own code finalize()s a session and opens another (two
    ProfileManager.session() blocks): both sessions' calls are in the run's
    file, and the child prints nothing (before: its second session wrote
    over its first, and the child0 calls were lost)."""
    sp.script(f"""
        import multiprocessing as mp
        import scope_profiler as sp

        def job(i):
            for k in range(2):
                with sp.ProfileManager.session(verbose=False):
                    with sp.region(f"child{{k}}"):
                        pass
            return i

        if __name__ == "__main__":
            with mp.get_context("{start}").Pool(1) as pool:
                print(pool.map(job, range(1)))
    """)
    proc = sp("run", "-q", "--subprocesses", "-o", "out.h5", "script.py", env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[0]\n" and proc.stderr == ""
    calls = {}
    for _, _, regs in processes(sp.tmp / "out.h5").values():
        for name, n in regs.items():
            calls[name] = calls.get(name, 0) + n
    assert calls == {"child0": 1, "child1": 1}


def test_python_m_scope_profiler_in_a_child_runs_the_installed_command_line(sp):
    """`python -m scope_profiler ARGS` started by the script (the seed's
    notebook drives the CLI so) runs the installed package's command line,
    found past the run's stand-in module, as under plain python; with none
    installed, python's "No module named" and status 1 (before: the
    stand-in ran, printed nothing and exited 0, so the script went on with
    no profile)."""
    import subprocess
    installed = sp.tmp / "site" / "scope_profiler"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    (installed / "__main__.py").write_text("import sys\nprint('installed command line', sys.argv[1:])\n")
    script = sp.script("""
        import subprocess, sys
        p = subprocess.run([sys.executable, "-m", "scope_profiler", "--version"],
                           capture_output=True, text=True)
        print(p.returncode, p.stdout.strip(), p.stderr.strip().split(": ")[-1])
    """)
    for pythonpath, want in ((str(sp.tmp / "site"), "0 installed command line ['--version']"),
                             ("", "1  No module named scope_profiler")):
        env = dict(os.environ, PYTHONPATH=pythonpath)
        proc = subprocess.run([BINARY, "run", "-q", "--no-output", str(script)], capture_output=True,
                              text=True, cwd=sp.tmp, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == want, proc.stdout


def other_pythons():
    """Pythons 3.7+ of another X.Y than the embedded one found here
    (pyenv's, Debian's python3.X)."""
    import glob
    import shutil
    import subprocess
    mine = tuple(embedded().version[:2])
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = {}
    for exe in sorted(glob.glob(f"{root}/versions/3.*/bin/python3")) + \
            [shutil.which(f"python3.{m}") or "" for m in range(7, 16)]:
        if not exe or not os.access(exe, os.X_OK):
            continue
        v = subprocess.run([exe, "-c", "import sys; print('%d %d' % sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=60).stdout.split()
        if len(v) == 2 and (3, 7) <= tuple(map(int, v)) != mine:
            found.setdefault(tuple(map(int, v)), exe)
    return list(found.values())[:2]


@pytest.mark.parametrize("options", [[], ["--subprocesses"]])
def test_a_child_of_another_python_version_is_left_as_it_is(sp, options):
    """A child the script starts with a Python of another X.Y that imports
    scope_profiler gets what plain python gives it (ModuleNotFoundError
    here, nothing being installed for it), and is no child the run counts
    (before: the run's 3.X module imported there, or under --subprocesses
    its extension failed to load with a warning and the end said the child
    was killed)."""
    others = other_pythons()
    if not others:
        pytest.skip("no Python of another version here (pyenv's, python3.X)")
    script = sp.script("""
        import subprocess, sys
        for exe in sys.argv[1:]:
            r = subprocess.run([exe, "-c", "import scope_profiler"], capture_output=True, text=True)
            print(r.returncode, r.stderr.strip().splitlines()[-1])
    """)
    env = dict(ENV, PYTHONPATH="")
    proc = sp("run", "-q", *options, "--no-output", script, *others, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 ModuleNotFoundError: No module named 'scope_profiler'\n" * len(others)
    assert proc.stderr == "", proc.stderr


def old_pythons():
    """pyenv's Python 2.7 and 3.6 (the oldest a cluster still has)."""
    import glob
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    return sorted(glob.glob(f"{root}/versions/2.7*/bin/python2.7"))[:1] + \
        sorted(glob.glob(f"{root}/versions/3.6*/bin/python3.6"))[:1]


@pytest.mark.parametrize("options", [[], ["--subprocesses", "--recursive"]])
def test_a_child_of_python_2_that_imports_scope_profiler_gets_pythons_own_words(sp, options):
    """Python 2.7 or 3.6 children that import scope_profiler: plain python's
    ImportError, or the scope_profiler they have further along sys.path
    (the run's stand-in module was a SyntaxError for Python 2: f-strings)."""
    olds = old_pythons()
    if not olds:
        pytest.skip("no Python 2.7 or 3.6 here (pyenv's)")
    (sp.tmp / "site").mkdir()
    (sp.tmp / "site" / "scope_profiler.py").write_text("import sys\nsys.stdout.write('their own\\n')\n")
    script = sp.script("""
        import subprocess, sys
        for exe in sys.argv[1:]:
            r = subprocess.run([exe, "-c", "import scope_profiler"], capture_output=True, text=True)
            print(r.returncode, r.stdout.strip(), (r.stderr.strip().splitlines() or [""])[-1])
    """)
    import subprocess
    seen = []
    for pythonpath in ("", str(sp.tmp / "site")):
        env = dict(ENV, PYTHONPATH=pythonpath)
        plain = subprocess.run([embedded().executable, str(script), *olds], capture_output=True, text=True,
                               env=env, timeout=120)
        assert plain.returncode == 0, plain.stderr
        proc = sp("run", "-q", *options, "--no-output", script, *olds, env=env)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, plain.stdout, ""), pythonpath
        seen.append(plain.stdout)
    assert all(line.startswith("1  ") and "No module named" in line for line in seen[0].splitlines())
    assert seen[1] == "0 their own \n" * len(olds)


def test_sigterm_to_the_run_alone_leaves_a_streaming_child_running(sp):
    """SIGTERM to the run's process alone (`kill PID`, docker stop): python
    ends at once and its forked child goes on by itself. The run writes its
    profile and ends without waiting for a child that never got the signal
    and streams on (it waited up to 10 s for it, till the child's end)."""
    import subprocess
    script = sp.script("""
        import os, signal, time
        import scope_profiler as sp
        pid = os.fork()
        if pid == 0:
            for _ in range(80):
                with sp.region("tick"):
                    time.sleep(0.1)
            open("child-done", "w").close()
            os._exit(0)
        open("child-%d" % pid, "w").close()
        time.sleep(1)   # the child has streamed by now
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)
    """)
    with open(sp.tmp / "err", "w") as err:   # not a pipe: the child holds it open
        proc = subprocess.Popen([BINARY, "run", "-q", "--subprocesses", "--flush-interval", "0.2", "-o",
                                 "out.h5", str(script)], cwd=sp.tmp, env=dict(os.environ, **ENV),
                                stdout=subprocess.DEVNULL, stderr=err)
        proc.wait(timeout=120)
    proc.stderr = (sp.tmp / "err").read_text()
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    child = int(next(sp.tmp.glob("child-*")).name.split("-")[1])
    try:
        assert not (sp.tmp / "child-done").exists(), "the run waited for the child's end"
        os.kill(child, 0)   # still running on its own
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert "did not finish their profile" in proc.stderr, proc.stderr


def test_a_child_whose_profile_cannot_be_written_says_why(sp):
    """$TMPDIR full (a small tmpfs): a spawned child's profile fails at its
    exit. The child says why in one line (the run could only guess that it
    was killed); the run's count names that a child may have failed; the
    script's status stays its own."""
    script = sp.script("""
        import subprocess, sys
        import scope_profiler as sp
        child = "import scope_profiler as sp\\nfor i in range(100000):\\n    with sp.region('c%d' % (i % 100)): pass\\n"
        with sp.region("r"):
            print(subprocess.run([sys.executable, "-c", child]).returncode, flush=True)
    """)
    with small_tmpfs(sp.tmp / "full", "100k") as full:
        proc = sp("run", "-q", "--subprocesses", "-o", "u.h5", script, env=dict(ENV, TMPDIR=str(full)))
    assert (proc.returncode, proc.stdout) == (0, "0\n"), proc.stderr
    lines = proc.stderr.splitlines()
    said = [l for l in lines if l.startswith("scope-profiler: run: child process ")]
    assert len(said) == 1, proc.stderr
    assert said[0].endswith(": No space left on device; its calls after its last flush are not in the run's "
                            "profile"), said
    assert any("profiled child processes" in l and "or it failed" in l for l in lines), proc.stderr


def test_a_run_abandoned_while_it_merges_names_its_partial_file(sp):
    """Ctrl-C twice while the end merges the children's files: the run's
    own profile was finished in place as OUT.partial, which the abandon
    line names for recover (it said the profile was written to
    OUT.partial, as if that were the output)."""
    import subprocess
    script = sp.script(textwrap.dedent(MERGED_END))
    env = dict(ENV, TMPDIR=str(sp.tmp / "tmp"))
    (sp.tmp / "tmp").mkdir()
    proc = subprocess.Popen([BINARY, "run", "-q", "--subprocesses", "--flush-interval", "0.1", "-o", "out.h5",
                             str(script)], cwd=sp.tmp, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **env, SCOPE_PROFILER_TEST_MERGE_PAUSE_MS="60000"))
    try:
        assert proc.stderr.readline() == "scope-profiler: test: merging\n"
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
    partial = sp.tmp / "out.h5.partial"
    assert err == (f"scope-profiler: run: abandoned: the calls streamed so far stay in {partial} "
                   "(scope-profiler recover finishes it)\n"), err
    assert not (sp.tmp / "out.h5").exists()
    rec = sp("recover", "-o", "rec.h5", "out.h5.partial", env=env)
    assert rec.returncode == 0, rec.stderr
