"""A file system without file locks: Lustre mounted without -o flock (its
default) and some NFS mounts fail flock() and fcntl() locks with ENOSYS.
HDF5 goes on there when it was built to ignore such locks (its default
since 1.10.7, not every cluster's build: the tool asks for it on every file
it opens); the stream's own lock took ENOSYS for another run holding the
file. A run there must write its profile, stream and all, and the readers
read it.

These machines' file systems all have locks, so the tests preload a
stand-in (tests/e2e/nolocks_standin.c, built here) that fails every lock on
a file under the test's folder with ENOSYS, as such a file system does, and
logs each: the log shows that locks were tried there and refused."""
import pathlib

import h5py
import pytest

from conftest import BINARY, build_standin, regions, sanitizer_env
from test_subprocesses import ENV as CHILD_ENV

STANDIN_SRC = pathlib.Path(__file__).with_name("nolocks_standin.c")

SCRIPT = """
import time
import scope_profiler as sp
for i in range(6):
    with sp.region("step"):
        time.sleep(0.05)
print("done")
"""


@pytest.fixture(scope="module")
def nolocks():
    """build/nolocks-standin/libnolocks.so"""
    return build_standin(STANDIN_SRC.name, "nolocks-standin", "libnolocks.so", "-Werror", "-ldl")


def without_locks(sp, lib, *args):
    """sp(*args) with the stand-in preloaded (after an ASan build's runtime,
    which must come first) for the run and every process it starts."""
    env = dict(CHILD_ENV)
    env.update(sanitizer_env(BINARY))
    env["LD_PRELOAD"] = " ".join(p for p in (env.get("LD_PRELOAD", ""), str(lib)) if p)
    # The run's temporary folder (its children's files) under the test's.
    (sp.tmp / "tmp").mkdir(exist_ok=True)
    env.update({"NOLOCKS_DIR": str(sp.tmp), "NOLOCKS_LOG": str(sp.tmp / "locks.log"),
                "TMPDIR": str(sp.tmp / "tmp")})
    return sp(*args, env=env)


def refused(sp):
    """{(call, file name)} of the locks the stand-in refused."""
    path = sp.tmp / "locks.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return {(line.split()[0], pathlib.Path(line.split(maxsplit=1)[1]).name) for line in lines}


@pytest.mark.parametrize("budget", ["64M", "0"])
def test_a_run_on_a_file_system_without_locks_writes_its_profile(sp, nolocks, budget):
    """Streamed (--flush-interval 0.05: the partial file is made at once)
    and written whole at the end (--memory-budget 0), then a second run on
    the same output (the first's file is read to know it is a profile) and
    summary. Before, the stream said "another process is writing it" and
    lost every call, status 1."""
    script = sp.script(SCRIPT, name="s.py")
    for _ in range(2):
        proc = without_locks(sp, nolocks, "run", "-q", "--flush-interval", "0.05", "--memory-budget", budget,
                             "-o", "out.h5", script)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "done\n" and proc.stderr == ""
        with h5py.File(sp.tmp / "out.h5") as f:
            assert regions(f)["step"].attrs["num_calls"] == 6
    assert not (sp.tmp / "out.h5.partial").exists()
    summary = without_locks(sp, nolocks, "summary", "out.h5")
    assert summary.returncode == 0, summary.stderr
    assert "step" in summary.stdout
    tried = refused(sp)
    assert ("flock", "out.h5") in tried   # read back: the second run's check, summary
    if budget != "0":
        assert ("fcntl", "out.h5.partial") in tried and ("flock", "out.h5.partial") in tried

