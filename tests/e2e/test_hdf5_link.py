"""How the executable carries HDF5, and a profiled script's own HDF5 beside it.

Debian's shared libhdf5 depends on libcurl (for HDF5's S3 driver), and binding
libcurl's thirty-odd libraries cost every start ~14 M instructions. Where the
build could link HDF5's static archive (the Makefile's HDF5_STATIC), `--version`
says "linked in" and neither libhdf5 nor libcurl is loaded; a script that uses
h5py loads the shared libhdf5 for itself, and both work side by side."""
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

from conftest import BINARY, regions


def hdf5_line():
    out = subprocess.run([BINARY, "--version"], capture_output=True, text=True, check=True).stdout
    lines = [l for l in out.splitlines() if l.startswith("HDF5: ")]
    assert len(lines) == 1, out
    return lines[0]


MAPS = """
import sys
def mapped(name):
    with open("/proc/self/maps") as maps:
        return any(name in line for line in maps)
print("at start:", mapped("/libhdf5"), mapped("/libcurl"))
"""


def test_version_names_the_hdf5_library():
    line = hdf5_line()
    version = ".".join(map(str, h5py.version.hdf5_version_tuple))
    # The same HDF5 as h5py's: both are Debian's.
    assert line.startswith(f"HDF5: {version}"), line
    # What the build's probe chose (beside the binary), so that a probe
    # falling back to the shared library unnoticed fails here.
    probe = pathlib.Path(BINARY).parent / "hdf5-static.mk"
    assert probe.exists(), f"{probe}: the build's HDF5 probe is missing"
    if "HDF5_STATIC := 1" in probe.read_text():
        assert line.endswith(", linked in"), line
    else:
        assert "/libhdf5" in line, line


def test_linked_in_hdf5_loads_neither_libhdf5_nor_libcurl(sp):
    sp.script(MAPS)
    proc = sp("run", "-q", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    if hdf5_line().endswith(", linked in"):
        assert proc.stdout == "at start: False False\n"
    else:   # the shared library: loaded with the executable
        assert proc.stdout.startswith("at start: True")
    assert (sp.tmp / "out.h5").exists()


@pytest.mark.script_imports("h5py", "numpy")
def test_a_script_using_h5py_works_beside_the_profilers_hdf5(sp):
    # The script writes and reads a file of its own with h5py (the shared
    # libhdf5), reads its profile back through the read API (the
    # executable's HDF5) while h5py holds its own file open, and the profile
    # written at the end is whole.
    sp.script("""
        import h5py, numpy as np
        import scope_profiler as sp
        sp.setup(file_path="first.h5")

        @sp.profile("write")
        def write():
            with h5py.File("data.h5", "w") as f:
                f["x"] = np.arange(1000)

        for _ in range(3):
            write()
        sp.finalize()
        with h5py.File("data.h5", "r") as f:
            assert int(f["x"][-1]) == 999
            print("first:", sp.read_h5("first.h5")["write"].num_calls)
        sp.setup(file_path="out.h5")
        with sp.region("read"):
            with h5py.File("data.h5", "r") as f:
                print("sum:", int(f["x"][:].sum()))
    """)
    proc = sp("run", "-q", "script.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "first: 3" in lines and "sum: 499500" in lines, proc.stdout
    with h5py.File(sp.tmp / "first.h5") as f:
        r = regions(f)
        assert r["write"].attrs["num_calls"] == 3
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["read"].attrs["num_calls"] == 1
    with h5py.File(sp.tmp / "data.h5") as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(1000))
