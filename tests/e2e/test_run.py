"""`scope-profiler run` behaves like `python script.py`, with regions on."""
import json
import os
import signal
import subprocess
import time

import h5py
import pytest

from conftest import embedded, one_line_error, regions


def test_argv_name_path_and_stdio(sp):
    script = sp.script("""
        import os, sys
        print("name", __name__)
        print("argv", sys.argv)
        print("path0", sys.path[0])
        print("stdin", sys.stdin.read().strip())
        print("to stderr", file=sys.stderr)
    """, name="sub/prog.py")
    proc = sp("run", "-q", script, "a", "--help", "-o", "x", input="hello\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "name __main__"
    assert out[1] == f"argv [{str(script)!r}, 'a', '--help', '-o', 'x']"
    assert out[2] == f"path0 {script.parent}"
    assert out[3] == "stdin hello"
    assert "to stderr" in proc.stderr
    # The script's own -o went to the script: the profile has the default name.
    assert (sp.tmp / "profiling_data.h5").exists()
    assert not (sp.tmp / "x").exists()


def test_orig_argv_is_pythons_command_line(sp):
    """sys.orig_argv is what python's command line for the same run would
    be ([sys.executable, SCRIPT | -m MOD | -c CODE, ARGS...]): a script that
    restarts itself with os.execv(sys.executable, sys.orig_argv) runs what
    it ran (before: ['-m', 'y'], without the interpreter nor the module)."""
    sp.script("import sys\nprint(sys.orig_argv == [sys.executable] + sys.argv[:1] + sys.argv[1:], "
              "sys.orig_argv[1:])\n", name="oa.py")
    proc = sp("run", "-q", "--no-output", "oa.py", "x", "-o")
    assert (proc.returncode, proc.stdout) == (0, "True ['oa.py', 'x', '-o']\n"), proc.stderr
    proc = sp("run", "-q", "--no-output", "-m", "oa", "y")
    assert proc.stdout.split(" ", 1)[1] == "['-m', 'oa', 'y']\n", proc.stderr
    code = "import sys; print(sys.orig_argv[0] == sys.executable, sys.orig_argv[1:])"
    proc = sp("run", "-q", "--no-output", "-c", code, "z")
    assert proc.stdout == f"True ['-c', {code!r}, 'z']\n", proc.stderr


def test_sys_exit_status_and_profile_written(sp):
    script = sp.script("""
        import sys, scope_profiler as sp
        with sp.region("before_exit"):
            pass
        sys.exit(3)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 3
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["before_exit"].attrs["num_calls"] == 1


def test_uncaught_exception_traceback_status_1(sp):
    script = sp.script("""
        import scope_profiler as sp
        @sp.profile("fails")
        def fails():
            raise ValueError("boom")
        fails()
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "ValueError: boom" in proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["fails"].attrs["num_calls"] == 1


def test_dash_m_runs_module(sp):
    sp.script("""
        import sys
        print("module main", __name__, sys.argv[1:])
    """, name="pkg/tool.py")
    (sp.tmp / "pkg" / "__init__.py").write_text("")
    proc = sp("run", "-q", "-m", "pkg.tool", "x", "--flag")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "module main __main__ ['x', '--flag']"
    # A module file whose name is not UTF-8 (bytes of another locale's), as
    # python -m runs it ("cannot look up module" before); one not found is
    # named as python names it.
    (sp.tmp / os.fsdecode(b"m\xe9.py")).write_text("print('module', __name__)\n")
    proc = sp("run", "-q", "-o", "m.h5", "-m", os.fsdecode(b"m\xe9"))
    assert (proc.returncode, proc.stdout) == (0, "module __main__\n"), proc.stderr
    assert (sp.tmp / "m.h5").exists()
    proc = sp("run", "-q", "-o", "m2.h5", "-m", os.fsdecode(b"nosuch\xe9"))
    assert proc.returncode == 1
    one_line_error(proc, "scope-profiler: run: No module named nosuch\\udce9")


def good_profile(sp, name="profiling_data.h5"):
    """A profile from a successful run; returns its bytes."""
    script = sp.script("""
        import scope_profiler as sp
        with sp.region("good"):
            pass
    """, name="good.py")
    assert sp("run", "-q", "-o", name, script).returncode == 0
    return (sp.tmp / name).read_bytes()


@pytest.mark.parametrize("module, message", [
    ("json.tol", "No module named json.tol"),
    ("nosuchmodule", "No module named nosuchmodule"),
    ("xml", "'xml' is a package and cannot be directly executed"),
    ("pkg.missing", "No module named pkg.missing"),
])
def test_dash_m_unknown_module_is_one_line_and_keeps_the_profile(sp, module, message):
    (sp.tmp / "pkg").mkdir()
    (sp.tmp / "pkg" / "__init__.py").write_text("print('pkg imported')\n")
    before = good_profile(sp)
    proc = sp("run", "-m", module)
    one_line_error(proc, "scope-profiler: run: ", message)
    # The same status and output as python -m (which imports a parent
    # package before it finds its submodule missing).
    plain = subprocess.run([embedded().executable, "-m", module], capture_output=True, text=True, cwd=sp.tmp)
    assert (proc.returncode, proc.stdout) == (plain.returncode, plain.stdout) == (1, plain.stdout)
    assert message in plain.stderr
    assert (sp.tmp / "profiling_data.h5").read_bytes() == before
    assert sorted(p.name for p in sp.tmp.iterdir()) == ["good.py", "pkg", "profiling_data.h5"]


def test_dash_m_package_init_runs_once(sp):
    # The look-up before the run imports nothing: the package's __init__
    # runs once, inside the profiled run.
    sp.script("print('main')\n", name="pkg/sub/__main__.py")
    (sp.tmp / "pkg" / "__init__.py").write_text("print('pkg init')\n")
    (sp.tmp / "pkg" / "sub" / "__init__.py").write_text("print('sub init')\n")
    proc = sp("run", "-q", "-m", "pkg.sub")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["pkg init", "sub init", "main"]


@pytest.mark.script_imports("numpy")
def test_site_packages_numpy_importable(sp):
    script = sp.script("import numpy; print(numpy.arange(3).sum())")
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"


def test_sys_executable_is_the_real_interpreter(sp):
    script = sp.script("""
        import subprocess, sys
        print(subprocess.run([sys.executable, "-c", "print(6*7)"], capture_output=True, text=True).stdout.strip())
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.stdout.strip() == "42", proc.stderr


MODULES = """
import json, sys
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("options", [[], ["--line-profile"], ["--aggregate"], ["--track-threads"],
                                     ["--recursive"], ["--disable"]])
def test_script_starts_with_plain_pythons_modules(sp, options):
    """The profiler changes nothing the script can see at its start: the
    modules loaded are plain python's plus scope_profiler (its earlier
    releases' submodules, h5reader and region_profiler, are made on their
    first import; numpy, h5py and
    the read API load on first use; importing numpy early would, among
    other things, make settings it reads at import time not apply). Under
    3.11, --recursive also needs threading, for threads started later."""
    script = sp.script(MODULES)
    plain = subprocess.run([embedded().executable, script], capture_output=True, text=True, check=True)
    proc = sp("run", "-q", "--no-output", *options, script)
    assert proc.returncode == 0, proc.stderr
    extra = set(json.loads(proc.stdout.splitlines()[-1])) - set(json.loads(plain.stdout))
    allowed = {"scope_profiler"}
    if options == ["--recursive"] and embedded().version < (3, 12):
        allowed |= {"threading", "_weakrefset"}
    assert extra <= allowed and "scope_profiler" in extra


@pytest.mark.script_imports("numpy")
def test_read_api_loads_numpy_on_first_use(sp):
    script = sp.script("""
        import sys
        import scope_profiler as sp
        with sp.region("r"):
            pass
        print("numpy" in sys.modules)
        sp.finalize()
        d = sp.read_h5("profiling_data.h5")["r"][0].durations_ns
        print("numpy" in sys.modules, type(d).__module__, len(d))
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()   # finalize() prints its summary between
    assert lines[0] == "False" and lines[-1] == "True numpy 1"


def test_summary_printed_unless_quiet(sp):
    script = sp.script("""
        import scope_profiler as sp
        for _ in range(3):
            with sp.region("work"):
                pass
    """)
    proc = sp("run", "-o", "out.h5", script)
    assert proc.returncode == 0
    assert "work (3x)" in proc.stderr
    assert "profile written to" in proc.stderr and "out.h5" in proc.stderr
    assert proc.stdout == ""  # the script's stdout stays the script's
    quiet = sp("run", "-q", "-o", "out2.h5", script)
    assert quiet.stderr == "" and quiet.stdout == ""


def test_sigint_writes_profile_and_dies_of_sigint(sp):
    script = sp.script("""
        import os, signal, scope_profiler as sp
        with sp.region("interrupted"):
            os.kill(os.getpid(), signal.SIGINT)
            while True:
                pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == -signal.SIGINT  # a shell reports 130
    assert "KeyboardInterrupt" in proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["interrupted"].attrs["num_calls"] == 1


def test_sigterm_writes_profile_then_kills_as_python(sp):
    script = sp.script("""
        import os, signal, time, scope_profiler as sp
        with sp.region("terminated"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == -signal.SIGTERM  # killed by it, as python (a shell: 143)
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["terminated"].attrs["num_calls"] == 1


def test_forked_child_never_writes(sp):
    script = sp.script("""
        import os, sys, scope_profiler as sp
        pid = os.fork()
        if pid == 0:
            with sp.region("child"):
                pass
            sys.exit(0)
        os.waitpid(pid, 0)
        with sp.region("parent"):
            pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert list(regions(f)) == ["parent"]


def test_bad_inputs_one_line_nonzero(sp):
    proc = sp("run", "missing.py")
    assert proc.returncode == 2
    one_line_error(proc, "run", "missing.py", "No such file")

    (sp.tmp / "adir").mkdir()
    proc = sp("run", "adir")
    assert proc.returncode == 1   # python's status for a folder without __main__.py
    one_line_error(proc, "adir", "directory")

    bad = sp.script("def f(:\n    pass\n", name="bad.py")
    proc = sp("run", "-o", "bad.h5", bad)
    assert proc.returncode == 1
    one_line_error(proc, "bad.py", "SyntaxError")
    assert not (sp.tmp / "bad.h5").exists()

    ok = sp.script("open('ran', 'w').write('yes')", name="ok.py")
    proc = sp("run", "-o", "/nonexistent/dir/out.h5", ok)
    assert proc.returncode == 2
    one_line_error(proc, "cannot write the profile", "/nonexistent/dir/out.h5")
    assert not (sp.tmp / "ran").exists()  # refused before the script ran

    proc = sp("run", "--bogus", ok)
    assert proc.returncode == 2
    one_line_error(proc, "--bogus")
    proc = sp("run", "--buffer-limit", "0", ok)
    assert proc.returncode == 2
    one_line_error(proc, "--buffer-limit")
    proc = sp("run")
    assert proc.returncode == 2
    one_line_error(proc, "no script")


def test_unreadable_script(sp):
    if os.geteuid() == 0:
        # root reads any file; a folder that vanishes is the closest test.
        proc = sp("run", "gone/script.py")
        assert proc.returncode == 2
        one_line_error(proc, "gone/script.py")
        return
    script = sp.script("pass")
    script.chmod(0)
    proc = sp("run", script)
    assert proc.returncode == 2
    one_line_error(proc, "cannot read script")


def test_help_and_version(sp):
    for args in (("--help",), ("run", "--help"), ("summary", "--help")):
        proc = sp(*args)
        assert proc.returncode == 0 and "usage: scope-profiler" in proc.stdout
    proc = sp("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("scope-profiler ")
    proc = sp("nosuchcommand")
    assert proc.returncode == 2
    one_line_error(proc, "nosuchcommand")


def test_output_path_survives_chdir(sp):
    script = sp.script("""
        import os, scope_profiler as sp
        os.makedirs("elsewhere", exist_ok=True)
        os.chdir("elsewhere")
        with sp.region("r"):
            pass
    """)
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert (sp.tmp / "out.h5").exists()


def test_write_failure_at_end_falls_back(sp):
    script = sp.script("""
        import os, shutil, scope_profiler as sp
        with sp.region("r"):
            pass
        shutil.rmtree("outdir")
    """)
    (sp.tmp / "outdir").mkdir()
    proc = sp("run", "-q", "-o", "outdir/out.h5", script, env={"TMPDIR": str(sp.tmp)})
    assert proc.returncode == 1
    assert "saved to" in proc.stderr
    fallback = [p for p in sp.tmp.iterdir() if p.name.startswith("scope-profiler-")]
    assert len(fallback) == 1
    with h5py.File(fallback[0]) as f:
        assert regions(f)["r"].attrs["num_calls"] == 1


def test_a_tmpdir_that_cannot_be_used_is_passed_over_as_python_does(sp):
    """$TMPDIR missing: the folders for temporary files are tried as Python's
    tempfile tries them ($TEMP, $TMP, /tmp, ...): spawned children still get
    the run's module (a Pool's workers died with ModuleNotFoundError and were
    started again for ever), and a profile that cannot be written where asked
    still goes to one (lost)."""
    script = sp.script("""
        import multiprocessing as mp, os, shutil, sys
        import scope_profiler as sp

        @sp.profile("work")
        def work(x):
            return x * 2

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(2) as pool:
                print(sum(pool.map(work, range(10))))
            if len(sys.argv) > 1:
                shutil.rmtree("outdir")
    """)
    from test_subprocesses import ENV   # spawned children get the sanitizer's runtime (make asan)
    alt = sp.tmp / "alt"
    alt.mkdir()
    env = dict(ENV, TMPDIR=str(sp.tmp / "missing"), TEMP=str(alt))
    for options in ([], ["--subprocesses"]):
        proc = sp("run", "-q", *options, "-o", "out.h5", script, env=env, timeout=300)
        assert (proc.returncode, proc.stdout) == (0, "90\n"), proc.stderr
        assert "ModuleNotFoundError" not in proc.stderr, proc.stderr
        with h5py.File(sp.tmp / "out.h5") as f:
            calls = sum(int(regions(f, int(name[4:]))["work"].attrs["num_calls"]) for name in f
                        if name.startswith("rank") and "work" in regions(f, int(name[4:])))
        assert calls == (10 if options else 0), proc.stderr
    (sp.tmp / "outdir").mkdir()
    proc = sp("run", "-q", "-o", "outdir/out.h5", script, "gone", env=env, timeout=300)
    assert proc.returncode == 1 and "saved to" in proc.stderr, proc.stderr
    [fallback] = [p for p in alt.iterdir() if p.name.startswith("scope-profiler-") and p.suffix == ".h5"]
    assert str(fallback) in proc.stderr


def test_help_readme_and_man_page_agree(sp):
    """Every option `--help` lists is documented in the README and man page."""
    import re
    from conftest import ROOT
    readme = (ROOT / "README.md").read_text()
    for command in ("run", "summary"):
        page = f"scope-profiler-{command}.1"
        man = (ROOT / "man" / page).read_text().replace("\\-", "-")
        text = sp(command, "--help").stdout
        options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", text)) - {"--help"}
        assert options, text
        for opt in options:
            assert opt in readme, f"{command} {opt} missing from README.md"
            assert opt in man, f"{command} {opt} missing from man/{page}"


def test_python_subprocesses_import_a_no_op_module(sp):
    # multiprocessing's spawn children and sys.executable subprocesses run
    # plain Python: the script's `import scope_profiler` must work there too.
    script = sp.script("""
        import multiprocessing as mp, subprocess, sys
        import scope_profiler as sp

        @sp.profile("square")
        def square(x):
            with sp.region("inside"):
                return x * x

        if __name__ == "__main__":
            with sp.region("pool"):
                with mp.get_context("spawn").Pool(2) as pool:
                    print(pool.map(square, range(4)))
            out = subprocess.run([sys.executable, "-c",
                                  "import scope_profiler as s; print(s.profile('x')(len)([1]))"],
                                 capture_output=True, text=True)
            print(out.stdout.strip(), out.returncode)
    """)
    proc = sp("run", "-q", "-o", "mp.h5", script, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[0, 1, 4, 9]", "1 0"]
    with h5py.File(sp.tmp / "mp.h5") as f:
        assert regions(f)["pool"].attrs["num_calls"] == 1   # the parent's only


def test_help_fits_80_columns(sp):
    for command in ("run", "summary", "diff", "export", "line-profile"):
        text = sp(command, "--help").stdout
        assert max(len(line) for line in text.splitlines()) <= 80, command


def test_shim_folder_removed_even_after_a_kill(sp):
    # The no-op module's folder lives in $TMPDIR while the run lasts; it is
    # removed at the end, and a run that could not (SIGKILL) has its
    # folder removed by the next run on this host. A live process's stays,
    # and so does another user's.
    tmp = sp.tmp / "t"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    script = sp.script("""
        import os, sys
        folder = os.environ["PYTHONPATH"].split(os.pathsep)[0]
        print(os.path.basename(folder), os.path.isfile(os.path.join(folder, "scope_profiler.py")),
              oct(os.stat(folder).st_mode & 0o777))
        sys.stdout.flush()
        if sys.argv[1:] == ["hard"]:
            os.kill(os.getpid(), 9)
    """)
    host = os.uname().nodename
    proc = sp("run", "-q", "--no-output", script, env=env)
    assert proc.returncode == 0, proc.stderr
    name, present, mode = proc.stdout.split()
    assert name.startswith(f"scope-profiler-shim-{host}-") and present == "True" and mode == "0o700"
    assert list(tmp.iterdir()) == []
    live = tmp / f"scope-profiler-shim-{host}-{os.getpid()}-0000"
    live.mkdir()
    keep = [live]
    if os.geteuid() == 0:
        # A dead process's folder that belongs to another user.
        other = tmp / f"scope-profiler-shim-{host}-4194303-ffff"   # a pid no process has here
        other.mkdir()
        os.chown(other, 65534, 65534)
        keep.append(other)
    # A dead run's folder stays while a child of it runs (its mark names a
    # live process that started before it), and for a day after a child's
    # profile was written there (for recover); an older one goes.
    running = tmp / f"scope-profiler-shim-{host}-4194302-0001"
    running.mkdir()
    (running / f"child-{os.getpid()}").touch()
    recent = tmp / f"scope-profiler-shim-{host}-4194301-0002"
    recent.mkdir()
    (recent / "proc-5.h5").touch()
    keep += [running, recent]
    old = tmp / f"scope-profiler-shim-{host}-4194300-0003"
    old.mkdir()
    (old / "proc-5.h5").touch()
    os.utime(old / "proc-5.h5", (time.time() - 25 * 3600,) * 2)
    (old / "child-4194299").touch()   # a child that ended
    # A mark older than the live process that holds its pid now: the pid
    # was taken over since, that process is no child of the dead run.
    reused = tmp / f"scope-profiler-shim-{host}-4194298-0004"
    reused.mkdir()
    (reused / f"child-{os.getpid()}").touch()
    os.utime(reused / f"child-{os.getpid()}", (time.time() - 3 * 24 * 3600,) * 2)
    proc = sp("run", "-q", "--no-output", script, "hard", env=env)
    assert proc.returncode == -9, proc.stderr
    left = tmp / proc.stdout.split()[0]
    assert left.is_dir()   # the kill left no time for a clean-up
    proc = sp("run", "-q", "--no-output", script, env=env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(tmp.iterdir()) == sorted(keep)


ZIP_MAIN = """
import sys
import helper
import scope_profiler as sp
with sp.region("work"):
    print("zip", helper.x, sys.argv[1:])
"""


def test_a_zipapp_a_zip_and_a_pyc_run_as_under_python(sp):
    """What python runs that is no source: a zipapp (.pyz, with its #! line),
    a zip with a __main__.py, a .pyc (compiled by the embedded python: its
    magic number). Before, run compiled each as source first: 'source code
    string cannot contain null bytes', status 1."""
    import shutil
    import zipapp
    app = sp.tmp / "app"
    app.mkdir()
    (app / "__main__.py").write_text(ZIP_MAIN)
    (app / "helper.py").write_text("x = 42\n")
    zipapp.create_archive(app, sp.tmp / "app.pyz", interpreter="/usr/bin/env python3")
    shutil.copy(sp.tmp / "app.pyz", sp.tmp / "app.zip")
    sp.script(ZIP_MAIN.replace("import helper\n", "").replace("helper.x", "'pyc'"), name="c.py")
    made = sp("run", "-q", "--no-output", "-c", "import py_compile; py_compile.compile('c.py', cfile='c.pyc')")
    assert made.returncode == 0, made.stderr
    shutil.rmtree(app)
    (sp.tmp / "c.py").unlink()
    for name, says in (("app.pyz", "zip 42"), ("app.zip", "zip 42"), ("c.pyc", "zip pyc")):
        proc = sp("run", "-q", "-o", f"{name}.h5", name, "a", "b")
        assert proc.returncode == 0, (name, proc.stderr)
        assert proc.stdout == f"{says} ['a', 'b']\n"
        with h5py.File(sp.tmp / f"{name}.h5") as f:
            assert regions(f)["work"].attrs["num_calls"] == 1


STDIN = """
import sys
import scope_profiler as sp
def f():
    return 1
with sp.region("s"):
    print("stdin", f(), sys.argv)
"""


def test_the_script_from_standard_input(sp):
    """`run -` reads the script from standard input, as `python -` does
    (sys.argv[0] '-', code named '<stdin>', traced by --recursive as the
    program's own). Before: "cannot open script '-'", status 2."""
    proc = sp("run", "-q", "-o", "s.h5", "-", "a", input=STDIN)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "stdin 1 ['-', 'a']\n"
    with h5py.File(sp.tmp / "s.h5") as f:
        assert regions(f)["s"].attrs["num_calls"] == 1
    proc = sp("run", "-q", "--recursive", "-o", "r.h5", "-", input=STDIN)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "r.h5") as f:
        names = set(regions(f))
    assert {"<stdin>", "__main__.<module>", "__main__.f", "s"} <= names, names
    proc = sp("run", "-q", "-o", "e.h5", "-", input="raise SystemExit(3)\n")
    assert proc.returncode == 3, proc.stderr


def test_a_script_from_a_named_pipe_is_read_once_as_python_reads_it(sp):
    """`run FIFO` (a named pipe, what bash's <(...) gives): python reads it
    once; the run read it first to check its syntax, left python nothing
    to read, and waited for ever."""
    import threading
    fifo = sp.tmp / "script.fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as out:
            out.write(STDIN)
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    proc = sp("run", "-q", "-o", "s.h5", fifo, "a", timeout=60)
    writer.join(timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"stdin 1 [{str(fifo)!r}, 'a']\n"
    with h5py.File(sp.tmp / "s.h5") as f:
        assert regions(f)["s"].attrs["num_calls"] == 1


def test_the_functions_run_watches_pickle_as_pythons_do(sp):
    """os._exit, os.execv, os.fork and sys.exit, which run wraps, keep
    their module, signature and doc (help() shows python's) and pickle to
    themselves, as under python: a spawned
    multiprocessing Process can take os._exit as its target (before: the
    worker died of AttributeError, exit code 1 instead of 3;
    pickle.dumps(sys.exit) raised PicklingError)."""
    script = sp.script('''
import multiprocessing as mp, os, pickle, sys

if __name__ == "__main__":
    p = mp.get_context("spawn").Process(target=os._exit, args=(3,))
    p.start()
    p.join()
    print(p.exitcode)
    import _posixsubprocess, _thread, inspect
    for f in (sys.exit, os._exit, os.execv, os.execve, os.fork, os.posix_spawn, os.posix_spawnp,
              _posixsubprocess.fork_exec, _thread.interrupt_main):
        try:
            sig = inspect.signature(f)
        except ValueError:
            sig = None
        print(f.__module__, f.__name__, pickle.loads(pickle.dumps(f)) is f)
        print("  ", sig, repr(f.__doc__ if f is not sys.exit else ""))
''')
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    assert want.returncode == 0, want.stderr
    proc = sp("run", "-q", "-o", "p.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want.stdout
    lines = proc.stdout.splitlines()
    assert lines[0] == "3" and all(s.endswith(" True") for s in lines[1::2]), lines


TRACED = '''
import sys, trace

def f():
    return sum(range(3))

t = trace.Trace(countfuncs=1, trace=0)
t.runfunc(f)
print(sorted(k[2] for k in t.results().calledfuncs))
try:
    sys.settrace()
except TypeError as e:
    print(e)
print(sys.settrace.__name__, sys.settrace.__module__, sys.gettrace(), sys.getprofile())
events = []

def tracer(frame, event, arg):
    events.append((frame.f_code.co_name, event))
    return tracer

def g():
    sys.settrace(None)

sys.settrace(tracer)
g()
print(events)
'''


@pytest.mark.parametrize("mode", ["--recursive", "--line-profile"])
def test_a_trace_function_sees_no_code_of_ours(sp, mode):
    """sys.settrace/setprofile/gettrace/getprofile under run are builtins
    of sys, as python's: a trace function of the script's (trace,
    coverage, a debugger) sees no frame of ours, and a wrong call says
    python's words (before: 'replacement' and 'hidden' frames in
    trace.Trace's counts and a trace's events, and
    "_warn_hook_replaced.<locals>.replacement() missing 1 required
    positional argument")."""
    script = sp.script(TRACED)
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    assert want.returncode == 0, want.stderr
    proc = sp("run", "-q", "--no-output", mode, script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want.stdout
    assert "takes exactly one argument (0 given)" in proc.stdout


def test_faulthandler_shows_the_scripts_threads_only(sp):
    """faulthandler's dump (a hung job's traceback) lists the script's
    threads as under python: the stream's ticker holds a thread state only
    while it flushes (before: an extra `Thread ... <no Python frame>`
    block in every dump of a run writing a file). Under --memory it keeps
    one, which run(1) says."""
    script = sp.script('''
import faulthandler, sys
faulthandler.dump_traceback(file=sys.stdout)
''')
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    assert want.returncode == 0, want.stderr
    proc = sp("run", "-q", "-o", "f.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Thread 0x") == want.stdout.count("Thread 0x") == 0
    assert proc.stdout.count("Current thread 0x") == 1


@pytest.mark.parametrize("status, code", [("256", 0), ("512 + 3", 3), ("2 ** 70", 255)])
def test_the_exit_status_is_the_processs_as_python_ends(sp, status, code):
    """sys.exit(n) ends python with n's low byte: 256 is a success, whose
    profile run writes as any run's that succeeds (before: "the script
    failed before recording anything", no file, though the status was 0)."""
    script = sp.script(f"import sys\nsys.exit({status})\n")
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    assert want.returncode == code
    proc = sp("run", "-q", "-o", "e.h5", script)
    assert proc.returncode == code
    written = (sp.tmp / "e.h5").exists()
    assert written == (code == 0), proc.stderr
    assert ("failed before recording anything" in proc.stderr) == (code != 0)


ENDINGS = {
    "raise SystemExit(2)": 2,
    "def main():\n    return 2\nraise SystemExit(main())": 2,
    "raise SystemExit('usage: x')": 1,
    "exit(3)": 3,
    "import sys\nsys.exit(3)": 3,
    "import sys\nsys.exit(SystemExit(4))": 4,   # the instance itself, as python raises it
    "raise SystemExit": 0,
    # subclasses (docopt's DocoptExit, with its own __init__; one with __new__; a subclass's subclass)
    "class Usage(SystemExit):\n    def __init__(self, m=''):\n        SystemExit.__init__(self, m.strip())\n"
    "raise Usage('usage: x ')": 1,
    "import sys\nclass E(SystemExit):\n    pass\nsys.exit(E(5))": 5,
    "class A(SystemExit):\n    pass\nclass B(A):\n    pass\nraise B(6)": 6,
    "class N(SystemExit):\n    def __new__(cls, *a):\n        return super().__new__(cls, *a)\nraise N(7)": 7,
    # a SystemExit the script caught, one in a thread (python ignores it): success
    "import sys\ntry:\n    sys.exit(1)\nexcept SystemExit as e:\n    print(e.code)": 0,
    "class E(SystemExit):\n    pass\ntry:\n    raise E(1)\nexcept SystemExit as e:\n    print(e.code)": 0,
    "import sys, threading\nt = threading.Thread(target=sys.exit, args=(5,))\nt.start(); t.join()": 0,
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_a_failure_status_however_it_is_raised_keeps_the_previous_profile(sp, ending):
    """Whatever ends the script with a failure status before it recorded
    anything (`raise SystemExit(main())`, exit(), sys.exit, a subclass's
    such as docopt's DocoptExit) keeps the
    previous profile at -o, with one line (only sys.exit did: a raised
    SystemExit replaced it with an empty one); a success writes this run's
    (a SystemExit the script caught, or one in a thread, is none)."""
    good = sp.script("import scope_profiler as sp\nwith sp.region('r'):\n    pass\n", name="good.py")
    assert sp("run", "-q", "-o", "f.h5", good).returncode == 0
    before = (sp.tmp / "f.h5").read_bytes()
    script = sp.script(ending + "\n")
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    proc = sp("run", "-q", "-o", "f.h5", script)
    assert (proc.returncode, proc.stdout) == (want.returncode, want.stdout) == (ENDINGS[ending], want.stdout)
    kept = (sp.tmp / "f.h5").read_bytes() == before
    assert kept == (want.returncode != 0), proc.stderr
    assert ("keeps its previous profile" in proc.stderr) == kept, proc.stderr


TUPLE_EXITS = {
    "plain": "sys.exit({status})",
    "finally": "try:\n    sys.exit({status})\nfinally:\n    pass",
    "reraise": "try:\n    sys.exit({status})\nexcept SystemExit:\n    raise",
    "caught": "try:\n    sys.exit({status})\nexcept SystemExit as e:\n    print(repr(e.code), e.args)",
}


@pytest.mark.parametrize("form", TUPLE_EXITS)
@pytest.mark.parametrize("status", ["(0,)", "()", "(3,)", "('usage',)", "(None,)"])
def test_sys_exit_of_a_tuple_ends_as_pythons(sp, status, form):
    """sys.exit(main()) where main returns a tuple (a stray comma): the run
    ends as python does, whose status and words change with the version and
    with the handlers the exception went through (3.11, uncaught: the tuple
    printed, status 1; through a finally or an except, or on 3.12+: its
    first item). Under 3.11 the run ended as 3.12 does (status 0 for
    `return 0,`). A failure keeps the previous profile, but for 3.11's
    uncaught tuple, whose end python reads no code of (the run sees no
    failure there)."""
    good = sp.script("import scope_profiler as sp\nwith sp.region('r'):\n    pass\n", name="good.py")
    assert sp("run", "-q", "-o", "f.h5", good).returncode == 0
    before = (sp.tmp / "f.h5").read_bytes()
    script = sp.script("import sys\n" + TUPLE_EXITS[form].format(status=status) + "\n")
    want = subprocess.run([embedded().executable, str(script)], capture_output=True, text=True,
                          cwd=sp.tmp, timeout=120)
    proc = sp("run", "-q", "-o", "f.h5", script)
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("scope-profiler:")]
    assert (proc.returncode, proc.stdout, lines) == (want.returncode, want.stdout, want.stderr.splitlines())
    kept = (sp.tmp / "f.h5").read_bytes() == before
    if not (embedded().version < (3, 12) and form == "plain"):
        assert kept == (want.returncode != 0), proc.stderr


def test_a_failure_before_recording_says_what_the_output_path_holds(sp):
    """An empty file at -o is no previous profile: the line says no profile
    was written (it said the file kept its previous profile); a too long
    absolute -o is not told to be made absolute."""
    (sp.tmp / "empty.h5").write_bytes(b"")
    proc = sp("run", "-q", "-o", "empty.h5", sp.script("raise SystemExit(2)\n"))
    assert proc.returncode == 2
    assert proc.stderr == ("scope-profiler: run: the script failed before recording anything: no profile "
                           f"written to {sp.tmp / 'empty.h5'}\n"), proc.stderr
    assert (sp.tmp / "empty.h5").read_bytes() == b""
    long_path = "/" + "/".join(["d" * 200] * 25) + "/out.h5"
    proc = sp("run", "-q", "-o", long_path, sp.script("pass\n"))
    assert proc.returncode != 0
    assert len(proc.stderr.splitlines()) == 1 and "absolute" not in proc.stderr, proc.stderr
