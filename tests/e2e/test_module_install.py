"""`make install` puts `scope_profiler` where plain python finds it: scripts
written for the original package run with `python3 script.py` (and in an
interactive session, as a notebook's cells do), recording and writing the
same profile as under `scope-profiler run`; `make uninstall` takes it all
back. The installed module is the extension module of the build under
test (its folder, from SCOPE_PROFILER), driven by the Python it was built
for (the one running these tests, as `make e2e` does)."""
import os
import subprocess
import sys
import sysconfig
import textwrap

import h5py
import pytest

from conftest import BINARY, ROOT, regions, sanitizer_env, shell_env

PREFIX = "/usr/local"
BUILD = os.path.dirname(os.path.abspath(BINARY))
MODULE = os.path.join(BUILD, "scope_profiler" + sysconfig.get_config_var("EXT_SUFFIX"))
pytestmark = pytest.mark.same_python


def make(*args):
    """`make ARGS` in the repository with the build folder under test, whose
    executable and module are taken as they are (-o: never rebuilt here);
    the parent make's job server (make e2e) is not ours to use."""
    env = shell_env()
    assert os.path.isfile(MODULE), f"{MODULE} is not built; run `make`"
    proc = subprocess.run(["make", "-s", f"BUILD={BUILD}", f"PYTHON={sys.executable}",
                           f"BIN={BINARY}", "-o", BINARY, "-o", MODULE, *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def site_folder():
    """Where the Python under test looks for modules installed for PREFIX
    (Debian: PREFIX/lib/python3.X/dist-packages)."""
    kind = "dist-packages" if sysconfig.get_path("platlib").endswith("dist-packages") else "site-packages"
    return f"{PREFIX}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/{kind}"


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


class Installed:
    """One `make install DESTDIR=...`, and plain python with its module."""

    def __init__(self, dest):
        self.dest = dest
        self.site = dest / site_folder().lstrip("/")
        self.env = dict(os.environ, PYTHONPATH=str(self.site))
        self.env.pop("PYTHONSTARTUP", None)
        # An ASan build's module needs the sanitizer's runtime first in a
        # plain python (`make asan`).
        self.env.update(sanitizer_env(next(self.site.glob("scope_profiler/__init__*.so"), None)))

    def python(self, work, text, *args):
        """python3 script.py ARGS in the folder work, the module from the install."""
        work.mkdir(parents=True, exist_ok=True)
        (work / "script.py").write_text(textwrap.dedent(text))
        return subprocess.run([sys.executable, "script.py", *args], cwd=work, env=self.env,
                              capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("dest")
    make("install", f"DESTDIR={dest}")
    return Installed(dest)


def test_install_puts_the_module_on_pythons_own_path(installed):
    # The package scope_profiler/: the extension module its __init__, and a
    # __main__ for python -m scope_profiler (test_pip_install.py runs it).
    assert [m.name for m in installed.site.glob("scope_profiler*")] == ["scope_profiler"]
    assert sorted(m.name for m in (installed.site / "scope_profiler").iterdir()) == [
        "__init__" + sysconfig.get_config_var("EXT_SUFFIX"), "__main__.py"]
    # Without DESTDIR, that folder is on this Python's sys.path as it starts.
    path = subprocess.run([sys.executable, "-c", "import sys; print('\\n'.join(sys.path))"],
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]}).stdout
    assert site_folder() in path.splitlines()
    assert (installed.dest / PREFIX.lstrip("/") / "bin/scope-profiler").is_file()


SEED_SCRIPT = """
    import sys
    import time

    import scope_profiler as sp
    from scope_profiler import ProfileManager

    assert sp.__file__.startswith(sys.argv[1]), sp.__file__   # the installed module


    @ProfileManager.profile("solve")
    def solve(n):
        return sum(range(n))


    class Solver:
        @sp.profile
        def step(self, i):
            with ProfileManager.region("inner"):
                time.sleep(0.0005)
            return solve(100 * i)


    if __name__ == "__main__":
        ProfileManager.setup(file_path="out.h5", buffer_limit=4)
        s = Solver()
        for i in range(6):
            with sp.region("timestep"):
                s.step(i)
        print("calls", ProfileManager.get_region("solve").num_calls)
        results = ProfileManager.finalize(verbose=True, return_results=True)
        print("read back", results["timestep"].num_calls)
"""


def test_plain_python_records_and_writes_the_profile(installed, tmp_path):
    proc = installed.python(tmp_path, SEED_SCRIPT, str(installed.site))
    assert proc.returncode == 0, proc.stderr
    assert "calls 6" in proc.stdout and "read back 6" in proc.stdout
    assert "step" in proc.stdout               # finalize(verbose=True) printed the summary
    with h5py.File(tmp_path / "out.h5") as f:
        regs = regions(f)
        assert {n: regs[n].attrs["num_calls"] for n in regs} == {
            "timestep": 6, "step": 6, "inner": 6, "solve": 6}
        # Each call lies inside its caller's: the same clock and nesting as `run`.
        for outer, inner in (("timestep", "step"), ("step", "inner"), ("step", "solve")):
            o, i = regs[outer], regs[inner]
            assert ((o["start_times"] <= i["start_times"]) & (i["end_times"] <= o["end_times"])).all()
        assert f["metadata"].attrs["python_version"] == sys.version.split()[0]
    # The installed executable reads what the module wrote.
    summary = subprocess.run([str(installed.dest / PREFIX.lstrip("/") / "bin/scope-profiler"),
                              "summary", "out.h5"], cwd=tmp_path, capture_output=True, text=True)
    assert summary.returncode == 0 and "step" in summary.stdout, summary.stderr


def test_uninstall_removes_everything_install_put(tmp_path):
    dest = tmp_path / "dest"
    make("install", f"DESTDIR={dest}")
    put = files_under(dest)
    assert any(p.startswith(site_folder().lstrip("/") + "/scope_profiler") for p in put), put
    assert f"{PREFIX.lstrip('/')}/bin/scope-profiler" in put
    assert any(p.endswith("man1/scope-profiler.1") for p in put)
    make("uninstall", f"DESTDIR={dest}")
    assert files_under(dest) == []


def test_interactive_session_like_notebook_cells(installed, tmp_path):
    # A kernel's cells, one after the other in one interpreter: import,
    # definitions, setup, calls, finalize; then a second session.
    cells = [
        "import scope_profiler as sp\nfrom scope_profiler import ProfileManager",
        "@sp.profile\ndef f(x):\n    return x * 2",
        "ProfileManager.setup(file_path='first.h5', verbose=False)",
        "for i in range(3):\n    f(i)",
        "print('live', ProfileManager.get_region('f').num_calls)",
        "ProfileManager.finalize()",
        "@sp.profile('g')\ndef g():\n    with sp.region('inside'):\n        pass",
        "ProfileManager.setup(file_path='second.h5', verbose=False)",
        "g(); g(); f(1)",
        "res = ProfileManager.finalize(return_results=True)",
        "print('second', res['g'].num_calls, res['inside'].num_calls, res['f'].num_calls)",
    ]
    driver = "import code, sys\nconsole = code.InteractiveConsole()\n"
    driver += "for cell in %r:\n" % (cells,)
    driver += "    more = False\n    for line in cell.splitlines() + ['']:\n        more = console.push(line)\n"
    driver += "    assert not more\n"
    driver += "    if getattr(sys, 'last_value', None) is not None:\n        sys.exit(f'cell failed: {cell!r}')\n"
    proc = installed.python(tmp_path, driver)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "live 3" in proc.stdout and "second 2 2 1" in proc.stdout, proc.stdout
    with h5py.File(tmp_path / "first.h5") as f:
        assert {n: r.attrs["num_calls"] for n, r in regions(f).items()} == {"f": 3}
    with h5py.File(tmp_path / "second.h5") as f:
        assert {n: r.attrs["num_calls"] for n, r in regions(f).items()} == {"f": 1, "g": 2, "inside": 2}


def test_without_setup_regions_record_nothing_and_no_file_is_written(installed, tmp_path):
    proc = installed.python(tmp_path, """
        import scope_profiler as sp

        @sp.profile
        def work(x):
            return x + 1

        for i in range(1000):
            with sp.region("loop"):
                assert work(i) == i + 1
        for name in ("loop", "work"):
            r = sp.get_region(name)
            # Nothing recorded, no event buffer even allocated.
            print(name, r.num_calls, r.capacity, len(r.get_durations_numpy()), type(r).__name__)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["loop 0 0 0 DisabledProfileRegion",
                                           "work 0 0 0 DisabledProfileRegion"]
    assert proc.stderr == ""
    assert files_under(tmp_path) == ["script.py"]    # no profile, at exit either


def test_a_session_left_open_is_finalized_at_exit(installed, tmp_path):
    proc = installed.python(tmp_path, """
        import scope_profiler as sp
        sp.ProfileManager.setup(file_path="atexit.h5", verbose=False)
        for _ in range(4):
            with sp.region("step"):
                pass
        raise SystemExit(3)     # no finalize(): the end of the interpreter writes
    """)
    assert proc.returncode == 3, proc.stderr
    with h5py.File(tmp_path / "atexit.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] == 4
    # A file that cannot be written then is one line, not a traceback.
    proc = installed.python(tmp_path / "bad", """
        import scope_profiler as sp
        sp.ProfileManager.setup(file_path="no/such/folder/x.h5", verbose=False)
        with sp.region("step"):
            pass
    """)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scope-profiler: "), proc.stderr
    assert "no/such/folder/x.h5" in lines[0]


def test_an_argument_that_is_not_utf8_is_written_to_the_profile(installed, tmp_path):
    """Plain python hands a command-line argument that is not UTF-8 (a file
    name) to the script with lone surrogates (os.fsdecode); the profile's
    command line keeps it, written \\udcff, and the profile is written (the
    write failed with a UnicodeEncodeError traceback, twice)."""
    proc = installed.python(tmp_path, """
        import os, sys
        import scope_profiler as sp
        sp.ProfileManager.setup(file_path=sys.argv[1], verbose=False)
        with sp.region("step"):
            pass
        sp.finalize(verbose=False)
        print("written", os.path.exists(sys.argv[1]))
    """, os.fsdecode(b"bad\xff.h5"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "written True\n", ""), proc.stderr
    with h5py.File(tmp_path / os.fsdecode(b"bad\xff.h5")) as f:
        assert regions(f)["step"].attrs["num_calls"] == 1
        assert f["metadata"].attrs["command_line"].endswith("script.py bad\\udcff.h5")


def test_what_needs_the_executable_is_refused_naming_run(installed, tmp_path):
    proc = installed.python(tmp_path, """
        import scope_profiler as sp
        try:
            sp.ProfileManager.setup(profile_mpi_calls=True)
        except RuntimeError as exc:
            print(exc)
        print("active", sp._session_active())
    """)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert "profile_mpi_calls" in first and "`scope-profiler run`" in first
    assert second == "active False"        # refused: nothing started


def test_run_keeps_its_built_in_module_beside_the_installed_one(installed, tmp_path):
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import scope_profiler as sp
        assert not hasattr(sp, "__file__"), sp.__file__    # built in, not the installed file
        with sp.region("r"):
            pass
    """))
    proc = subprocess.run([BINARY, "run", "-q", "-o", "run.h5", "script.py"], cwd=tmp_path,
                          env=installed.env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(tmp_path / "run.h5") as f:
        assert regions(f)["r"].attrs["num_calls"] == 1


def test_under_mpirun_plain_python_writes_a_file_per_rank(installed, tmp_path):
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        from mpi4py import MPI
        import scope_profiler as sp
        rank = MPI.COMM_WORLD.Get_rank()
        sp.ProfileManager.setup(file_path="mpi.h5", verbose=False)
        for _ in range(rank + 1):
            with sp.region("work"):
                pass
        with sp.region("barrier"):
            MPI.COMM_WORLD.Barrier()
        sp.ProfileManager.finalize()
    """))
    proc = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2",
                           sys.executable, "script.py"], cwd=tmp_path, env=installed.env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "one file per rank" in proc.stderr and "scope-profiler run" in proc.stderr
    for rank in (0, 1):
        with h5py.File(tmp_path / f"mpi.h5.rank{rank}") as f:
            regs = regions(f)
            assert regs["work"].attrs["num_calls"] == rank + 1
            assert regs["barrier"].attrs["num_calls"] == 1
    assert not (tmp_path / "mpi.h5").exists()
