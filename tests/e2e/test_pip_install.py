"""Installing without root. `pip install` of a fresh clone into a venv (and
of an sdist with --user, HOME a temporary folder): the build backend of
pyproject.toml drives the Makefile for the Python running pip, offline
(--no-index: nothing comes from an index), and puts the executable in the
environment's bin/, the package scope_profiler/ in its site-packages
(`import scope_profiler`, `python -m scope_profiler ARGS` as `scope-profiler
ARGS`) and the man pages in its share/man; `pip uninstall` takes all of it
back. `make install PREFIX=~/.local` puts the module in the user
site-packages; another PREFIX prints the one PYTHONPATH line that finds it.

The clone is of the commit checked out (HEAD), so uncommitted changes are
not tested by the pip tests; each pip install builds once (a minute or two).
Real venvs, real pip, real files; the Python is the one running the tests
(the one `make e2e` builds for)."""
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap

import h5py
import pytest

from conftest import BINARY, ROOT, regions, sanitizer_env, shell_env

EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
PY = "python%d.%d" % sys.version_info[:2]
PAGES = sorted(f"man{p.suffix[1:]}/{p.name}" for p in (ROOT / "man").iterdir()
               if p.suffix in (".1", ".5"))
PACKAGE = ["scope_profiler/__init__" + EXT_SUFFIX, "scope_profiler/__main__.py"]
# pip under Debian's Python (PEP 668) installs outside a venv only when told.
MANAGED = os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
PIP_USER = ["--user"] + (["--break-system-packages"] if MANAGED else [])

SCRIPT = """
    import subprocess, sys
    import scope_profiler as sp

    @sp.profile("work")
    def work(n):
        return sum(range(n))

    with sp.region("main"):
        work(1000)
        if sys.argv[1:] == ["child"]:
            subprocess.run([sys.executable, "-c", "import scope_profiler as sp\\n"
                            "with sp.region('child'):\\n    pass"], check=True)
"""


def clean_env(**extra):
    """The environment of a user's shell (conftest.shell_env), not a venv or
    Python path of the caller's, nothing from pip's config."""
    env = {k: v for k, v in shell_env("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE",
                                      "PYTHONUSERBASE", "VIRTUAL_ENV").items()
           if not k.startswith("PIP_")}
    env.update(extra)
    return env


def check(cmd, env=None, cwd=None, timeout=1200):
    proc = subprocess.run([str(c) for c in cmd], env=env or clean_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd}: status {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in pathlib.Path(root).rglob("*") if not p.is_dir())


def needs_pip_and_venv():
    """venv with pip (Debian: python3-venv) and pip itself (python3-pip):
    scripts/install-deps.sh installs both; their absence is a failure."""
    for module, package in (("venv", "python3-venv"), ("ensurepip", "python3-venv"),
                            ("pip", "python3-pip")):
        proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if proc.returncode != 0:
            pytest.fail(f"{sys.executable} cannot import {module}: install {package} "
                        "(scripts/install-deps.sh does)")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of the commit under test."""
    if not shutil.which("git"):
        pytest.fail("git is not installed (scripts/install-deps.sh installs it)")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    assert head.returncode == 0, f"{ROOT} is not a git checkout: {head.stderr}"
    dest = tmp_path_factory.mktemp("clone") / "scope-profiler"
    check(["git", "clone", "-q", "--no-checkout", ROOT, dest])
    check(["git", "-C", dest, "checkout", "-q", head.stdout.strip()])
    return dest


class Venv:
    def __init__(self, root):
        self.root = root
        self.bin = root / "bin"
        self.python = self.bin / "python"
        self.exe = self.bin / "scope-profiler"
        self.site = root / "lib" / PY / "site-packages"


@pytest.fixture(scope="module")
def venv(clone, tmp_path_factory):
    """A venv with scope-profiler pip-installed from the clone."""
    needs_pip_and_venv()
    env = Venv(tmp_path_factory.mktemp("venv") / "v")
    check([sys.executable, "-m", "venv", env.root])
    proc = check([env.python, "-m", "pip", "install", "--no-index", "--no-cache-dir", clone])
    assert "Successfully installed scope-profiler" in proc.stdout, proc.stdout
    return env


def installed_files(python, env=None):
    """The files pip's RECORD lists for scope-profiler, resolved."""
    proc = check([python, "-c", "import importlib.metadata as m, sys; d = m.distribution("
                  "'scope-profiler'); print('\\n'.join(str(f.locate().resolve()) for f in d.files))"],
                 env=env)
    return [pathlib.Path(p) for p in proc.stdout.split()]


def test_pip_puts_the_executable_module_and_man_pages_in_the_venv(venv):
    assert os.access(venv.exe, os.X_OK)
    assert {p.split("/", 1)[1] for p in PACKAGE} <= set(files_under(venv.site / "scope_profiler"))
    assert all((venv.root / "share/man" / page).is_file() for page in PAGES)
    recorded = installed_files(venv.python)
    for path in [venv.exe, *(venv.site / p for p in PACKAGE),
                 *(venv.root / "share/man" / page for page in PAGES)]:
        assert path.resolve() in recorded, path
    proc = check([venv.python, "-c", "import scope_profiler as sp; print(sp.__file__, sp.__version__)"])
    path, version = proc.stdout.split()
    assert path == str(venv.site / PACKAGE[0])
    assert version in check([venv.exe, "--version"]).stdout


def test_python_m_scope_profiler_is_the_executable(venv, tmp_path):
    for args in (["--version"], ["--help"], ["summary", "--help"], ["no-such-command"],
                 ["summary", "missing.h5"]):
        by_m = subprocess.run([venv.python, "-m", "scope_profiler", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=clean_env())
        direct = subprocess.run([venv.exe, *args], cwd=tmp_path, capture_output=True, text=True,
                                timeout=120, env=clean_env())
        assert (by_m.returncode, by_m.stdout, by_m.stderr) == \
            (direct.returncode, direct.stdout, direct.stderr), args
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    check([venv.python, "-m", "scope_profiler", "run", "-q", "-o", "m.h5", "script.py"],
          cwd=tmp_path)
    with h5py.File(tmp_path / "m.h5") as f:
        assert {n: r.attrs["num_calls"] for n, r in regions(f).items()} == {"main": 1, "work": 1}


def test_the_venvs_executable_records_and_its_children_load_the_venvs_module(venv, tmp_path):
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    check([venv.exe, "run", "-q", "--subprocesses", "-o", "out.h5", "script.py", "child"],
          cwd=tmp_path)
    with h5py.File(tmp_path / "out.h5") as f:
        assert {n: r.attrs["num_calls"] for n, r in regions(f).items()} == {"main": 1, "work": 1}
        # The spawned python found the module pip installed (no build tree here).
        assert {n: r.attrs["num_calls"] for n, r in regions(f, 1).items()} == {"child": 1}
    summary = check([venv.exe, "summary", "out.h5"], cwd=tmp_path)
    assert "work" in summary.stdout


def test_the_venvs_executable_runs_in_the_venv_without_activating_it(venv, tmp_path):
    """Installed into the venv, it starts as the venv's python: its modules
    import, with nothing activated and the venv not on PATH."""
    (venv.site / "only_in_this_venv.py").write_text("WHERE = 'venv'\n")
    (tmp_path / "where.py").write_text("import sys, only_in_this_venv as m\n"
                                       "print(m.WHERE, sys.prefix, sys.executable)\n")
    env = clean_env(PATH="/usr/bin:/bin")
    ours = check([venv.exe, "run", "-q", "--no-output", "where.py"], env=env, cwd=tmp_path)
    theirs = check([venv.bin / "python3", "where.py"], env=env, cwd=tmp_path)
    assert ours.stdout == theirs.stdout == f"venv {venv.root} {venv.bin / 'python3'}\n"


def test_pip_uninstall_removes_everything(venv):
    recorded = installed_files(venv.python)
    check([venv.python, "-m", "pip", "uninstall", "-y", "scope-profiler"])
    assert [p for p in recorded if p.exists()] == []
    assert not venv.exe.exists() and not (venv.site / "scope_profiler").exists()
    assert not (venv.root / "share/man").exists() or files_under(venv.root / "share/man") == []


def test_sdist_installed_with_pip_user(clone, tmp_path):
    """The backend's sdist (the clone's tracked files, PKG-INFO), installed
    by the system's Python with --user into a HOME of its own: ~/.local."""
    needs_pip_and_venv()
    dist = tmp_path / "dist"
    dist.mkdir()
    proc = check([sys.executable, "-c", "import sys; sys.path.insert(0, 'scripts'); "
                  "import pep517_backend as b; print(b.get_requires_for_build_sdist(), "
                  "b.build_sdist(sys.argv[1]))", dist], cwd=clone)
    assert proc.stdout.split()[0] == "[]"
    sdist = dist / proc.stdout.split()[1]
    tracked = check(["git", "-C", clone, "ls-files"]).stdout.split()
    with tarfile.open(sdist) as tar:
        stem = sdist.name[:-len(".tar.gz")]
        names = sorted(n.split("/", 1)[1] for n in tar.getnames())
        info = tar.extractfile(f"{stem}/PKG-INFO").read().decode()
    assert names == sorted(tracked + ["MANIFEST", "PKG-INFO"])
    assert "Name: scope-profiler" in info and f"Version: {stem.split('-')[1]}" in info

    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    check([sys.executable, "-m", "pip", "install", *PIP_USER, "--no-index", "--no-cache-dir",
           sdist], env=env)
    local = home / ".local"
    user_site = local / "lib" / PY / "site-packages"
    assert os.access(local / "bin/scope-profiler", os.X_OK)
    assert all((local / "share/man" / page).is_file() for page in PAGES)
    proc = check([sys.executable, "-c", "import scope_profiler as sp; print(sp.__file__)"],
                 env=env, cwd=tmp_path)
    assert proc.stdout.strip() == str(user_site / PACKAGE[0])
    assert check([sys.executable, "-m", "scope_profiler", "--version"], env=env).stdout == \
        check([local / "bin/scope-profiler", "--version"], env=env).stdout
    check([sys.executable, "-m", "pip", "uninstall", "-y",
           *PIP_USER[1:], "scope-profiler"], env=env)
    assert [p for p in files_under(local) if "scope" in p] == []


# ---- make install, no root: the build under test, taken as it is ----

BUILD = os.path.dirname(os.path.abspath(BINARY))
MODULE = os.path.join(BUILD, "scope_profiler" + EXT_SUFFIX)


def make(env, *args):
    assert os.path.isfile(MODULE), f"{MODULE} is not built; run `make`"
    return check(["make", "-s", f"BUILD={BUILD}", f"PYTHON={sys.executable}", f"BIN={BINARY}",
                  "-o", BINARY, "-o", MODULE, *args], env=env, cwd=ROOT, timeout=600)


@pytest.mark.same_python
def test_make_install_into_the_user_base_needs_no_pythonpath(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home), **sanitizer_env(MODULE))
    local = home / ".local"
    proc = make(env, "install", f"PREFIX={local}")
    assert proc.stdout == ""         # the user site-packages is on the path: nothing to say
    user_site = local / "lib" / PY / "site-packages"
    assert files_under(local) == sorted(
        ["bin/scope-profiler", *(f"share/man/{p}" for p in PAGES),
         *(f"lib/{PY}/site-packages/{p}" for p in PACKAGE)])
    proc = check([sys.executable, "-c", "import scope_profiler as sp; print(sp.__file__)"],
                 env=env, cwd=tmp_path)
    assert proc.stdout.strip() == str(user_site / PACKAGE[0])
    assert check([sys.executable, "-m", "scope_profiler", "--version"], env=env).stdout == \
        check([BINARY, "--version"]).stdout
    # The installed executable's spawned children load the installed module.
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    check([local / "bin/scope-profiler", "run", "-q", "--subprocesses", "-o", "out.h5",
           "script.py", "child"], env=env, cwd=tmp_path)
    with h5py.File(tmp_path / "out.h5") as f:
        assert {n: r.attrs["num_calls"] for n, r in regions(f, 1).items()} == {"child": 1}
    make(env, "uninstall", f"PREFIX={local}")
    assert files_under(local) == []


@pytest.mark.same_python
def test_make_install_elsewhere_says_which_pythonpath_finds_the_module(tmp_path):
    prefix = tmp_path / "opt"
    env = clean_env(HOME=str(tmp_path), **sanitizer_env(MODULE))
    proc = make(env, "install", f"PREFIX={prefix}")
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and "PYTHONPATH=" in lines[0], proc.stdout
    setting = lines[0][lines[0].index("export PYTHONPATH="):]
    shown = check(["sh", "-c", f'{setting}; exec "$0" -c "import scope_profiler as sp; '
                   'print(sp.__file__)"', sys.executable], env=env, cwd=tmp_path)
    assert shown.stdout.startswith(str(prefix / "lib")), shown.stdout
    shown = check(["sh", "-c", f'{setting}; exec "$0" -m scope_profiler --version',
                   sys.executable], env=env, cwd=tmp_path)
    assert shown.stdout == check([BINARY, "--version"]).stdout
    make(env, "uninstall", f"PREFIX={prefix}")
    assert files_under(prefix) == []


@pytest.mark.same_python
def test_python_m_without_the_executable_is_one_line(tmp_path):
    dest = tmp_path / "dest"
    env = clean_env(HOME=str(tmp_path), **sanitizer_env(MODULE))
    make(env, "install", f"DESTDIR={dest}", "PREFIX=/p", "PYMODDIR=/mods")
    proc = subprocess.run([sys.executable, "-m", "scope_profiler", "--version"],
                          env=clean_env(PYTHONPATH=str(dest / "mods"), **sanitizer_env(MODULE)), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 127 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scope-profiler: python -m scope_profiler: "), \
        proc.stderr
