"""`make PYTHON=...` with a Python the executable cannot embed stops at its
start with one line naming the cause, before anything is compiled (not a
compiler error mid-build). Stand-in Pythons (shell scripts answering the
check's questions) make every case reproducible on any machine."""
import shutil
import subprocess

import pytest

from conftest import ROOT, shell_env

pytestmark = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")


def fake_python(tmp_path, version, impl="cpython", include=None):
    """A `python3` that reports impl and version (and, for 3.11+, an include
    folder) as scripts/py-check.sh asks, and nothing else."""
    include = include or tmp_path / "include"
    path = tmp_path / "bin" / "python3"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""#!/bin/sh
case "$2" in
  *implementation*) echo "{impl} {version}" ;;
  *sysconfig*) echo "{include} {tmp_path / 'bin'}" ;;
esac
""")
    path.chmod(0o755)
    return path


def make(tmp_path, python):
    env = shell_env()
    build = tmp_path / "build"
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"BUILD={build}", f"PYTHON={python}", "all"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert not build.exists(), "make built something before stopping"
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert proc.stdout == "" and "Error" not in proc.stderr, proc
    return lines[0]


def test_a_python_older_than_3_11_is_one_line(tmp_path):
    python = fake_python(tmp_path, "3.10")
    assert f"scope-profiler needs CPython 3.11 or newer; {python} is 3.10" in make(tmp_path, python)


def test_another_implementation_is_one_line(tmp_path):
    python = fake_python(tmp_path, "3.11", impl="pypy")
    assert f"scope-profiler needs CPython 3.11 or newer; {python} is pypy 3.11" in make(tmp_path, python)


def test_a_missing_python_is_one_line(tmp_path):
    line = make(tmp_path, tmp_path / "nowhere" / "python3")
    assert f"PYTHON={tmp_path}/nowhere/python3: no such program" in line


def test_a_python_that_does_not_run_is_one_line(tmp_path):
    line = make(tmp_path, shutil.which("false"))
    assert "does not run" in line


def test_a_python_without_its_config_and_headers_names_what_provides_them(tmp_path):
    python = fake_python(tmp_path, "3.12")
    line = make(tmp_path, python)
    assert f"no python3.12-config for PYTHON={python}" in line
    # With a python3.12-config beside it, the headers are what is missing.
    config = tmp_path / "bin" / "python3.12-config"
    config.write_text(f"#!/bin/sh\necho -I{tmp_path / 'include'}\n")
    config.chmod(0o755)
    line = make(tmp_path, python)
    assert f"no Python.h in {tmp_path / 'include'} (the C headers of Python 3.12)" in line
