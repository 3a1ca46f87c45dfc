"""Setting up a machine: scripts/install-deps.sh's groups of Debian packages
(build, check, bench: each holds the one before; `make demo` installs only
build), and HDF5 found by pkg-config or by HDF5_DIR, or make stopping at its
start with one line that says how to point at it."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, shell_env

# The same whatever Python the tool embeds: the host's suite runs it (conftest's --other-python).
pytestmark = pytest.mark.any_python

INSTALL_DEPS = ROOT / "scripts" / "install-deps.sh"
GROUPS = ("build", "check", "bench")
# Debian 12's HDF5, as libhdf5-dev installs it.
DEBIAN_HDF5_INCLUDE = "/usr/include/hdf5/serial"
DEBIAN_HDF5_LIB = "/usr/lib/x86_64-linux-gnu/hdf5/serial"


def group(name, python="/usr/bin/python3"):
    proc = subprocess.run([str(INSTALL_DEPS), "--list", name], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHON=python))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def make(*args, env=None, timeout=300):
    """make in the checkout, as a user runs it (not as a sub-make of `make e2e`)."""
    full = shell_env("HDF5_DIR")
    full.update(env or {})
    return subprocess.run(["make", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full, cwd=ROOT)


# pkg-config looking in a folder that does not exist finds no hdf5.
NO_PKG_CONFIG = {"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": ""}


def test_groups_nest_and_demo_needs_no_test_tools():
    build, check, bench = (set(group(g)) for g in GROUPS)
    assert build < check < bench
    assert {"build-essential", "pkg-config", "xxd", "python3-dev", "libhdf5-dev",
            "zlib1g-dev"} <= build
    # What the tests alone use stays out of the set-up of `make demo`.
    for heavy in ("chromium", "clang", "valgrind", "python3-matplotlib", "libopenmpi-dev"):
        assert heavy not in build, heavy
    assert {"python3-pytest", "python3-h5py", "libcmocka-dev", "clang"} <= check
    assert {"valgrind", "time", "python3-line-profiler"} <= bench


def test_the_python_chooses_its_headers():
    assert "python3.11-dev" in group("build", "/usr/bin/python3.11")
    # A Python that is not Debian's brings its own headers: no -dev package.
    assert not [p for p in group("build", "/opt/python/bin/python3") if p.endswith("-dev")
                and p.startswith("python")]


def test_an_unknown_group_is_a_usage_error():
    proc = subprocess.run([str(INSTALL_DEPS), "everything"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr and "build|check|bench" in proc.stderr


def test_every_package_named_is_in_debian():
    if not shutil.which("apt-cache"):
        pytest.skip("not a Debian machine (no apt-cache)")
    names = group("bench")
    proc = subprocess.run(["apt-cache", "show", "--no-all-versions", *names],
                          capture_output=True, text=True, timeout=300)
    known = {line.split(":", 1)[1].strip() for line in proc.stdout.splitlines()
             if line.startswith("Package:")}
    assert sorted(set(names) - known) == [], proc.stderr


@pytest.mark.parametrize("goal, wanted", [("demo", "build"), ("check", "check"),
                                          ("bench", "bench")])
def test_make_installs_the_group_it_needs_before_it_needs_hdf5(goal, wanted, tmp_path):
    # As on a fresh machine without HDF5: the install comes first, then the
    # build (here stopped by the missing HDF5, as nothing was installed).
    proc = make("-n", goal, f"BUILD={tmp_path / 'build'}", env=NO_PKG_CONFIG)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"PYTHON=/usr/bin/python3 ./scripts/install-deps.sh {wanted}", lines[:3]
    assert "no HDF5" in proc.stderr, proc.stderr


def test_without_hdf5_make_stops_at_its_start_with_one_line(tmp_path):
    build = tmp_path / "build"
    proc = make(f"BUILD={build}", env=NO_PKG_CONFIG)
    assert proc.returncode != 0
    said = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(said) == 1, proc.stderr
    assert "no HDF5: pkg-config finds no hdf5 and HDF5_DIR is not set" in said[0]
    assert "make HDF5_DIR=/path/to/hdf5" in said[0]
    assert proc.stdout == "" and not build.exists()
    # A wrong HDF5_DIR says so too.
    proc = make(f"BUILD={build}", f"HDF5_DIR={tmp_path}", env=NO_PKG_CONFIG)
    assert proc.returncode != 0
    assert f"HDF5_DIR={tmp_path} has no include/hdf5.h" in proc.stderr
    assert not build.exists()


def test_a_build_with_hdf5_dir_runs_and_reads_back(tmp_path):
    if not os.path.exists(f"{DEBIAN_HDF5_INCLUDE}/hdf5.h") \
            or not os.path.exists(f"{DEBIAN_HDF5_LIB}/libhdf5.so"):
        pytest.skip("Debian's HDF5 (libhdf5-dev) is not installed")
    # An HDF5 installed in a folder of its own, as on a cluster: include/ and
    # lib/ (the shared library only), unknown to pkg-config.
    hdf5 = tmp_path / "hdf5"
    (hdf5 / "lib").mkdir(parents=True)
    (hdf5 / "include").symlink_to(DEBIAN_HDF5_INCLUDE)
    (hdf5 / "lib" / "libhdf5.so").symlink_to(f"{DEBIAN_HDF5_LIB}/libhdf5.so")
    build = tmp_path / "build"
    binary = build / "scope-profiler"
    proc = make("-j2", f"BUILD={build}", f"HDF5_DIR={hdf5}", binary, env=NO_PKG_CONFIG,
                timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Found at run time through the rpath, without LD_LIBRARY_PATH.
    dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                             timeout=60).stdout
    assert f"{hdf5}/lib" in dynamic
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             timeout=60)
    assert version.returncode == 0, version.stderr
    assert re.search(r"^HDF5: \d+\.\d+", version.stdout, re.M), version.stdout
    (tmp_path / "script.py").write_text(
        "import scope_profiler as sp\n"
        "for _ in range(3):\n"
        "    with sp.region('work'):\n"
        "        sum(range(1000))\n")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    run = subprocess.run([str(binary), "run", "-q", "-o", "out.h5", "script.py"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    summary = subprocess.run([str(binary), "summary", "--flat", "out.h5"], capture_output=True,
                             text=True, timeout=300, cwd=tmp_path, env=env)
    assert summary.returncode == 0, summary.stderr
    rows = [l.split() for l in summary.stdout.splitlines() if l.startswith("work ")]
    assert rows and rows[0][1] == "3", summary.stdout
