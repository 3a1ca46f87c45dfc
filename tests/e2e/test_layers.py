"""The layer rule that `make` checks first (scripts/check-layers.sh): the
heavy headers stay in their layer and no layer includes one above it. Run on
a copy of the tree with one breach put in."""
import shutil
import subprocess

import pytest

from conftest import ROOT


def copy_tree(tmp):
    for part in ("src", "include", "scripts"):
        shutil.copytree(ROOT / part, tmp / part)
    return tmp


def check(tree):
    return subprocess.run(["sh", str(tree / "scripts" / "check-layers.sh")], capture_output=True,
                          text=True)


def test_the_tree_keeps_the_rule():
    proc = check(ROOT)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path,line,message", [
    ("src/report/nest.c", '#include "hdf5.h"', "src/report/nest.c includes hdf5.h, which only src/store/ may"),
    ("src/core/profile.c", "#include <Python.h>", "includes Python.h, which only src/python/ may"),
    ("include/sp_h5.h", "#include <mpi.h>", "include/sp_h5.h includes mpi.h"),
    ("src/store/pack.c", '#include "sp_render.h"',
     "src/store/pack.c (store) includes sp_render.h (report): a layer may not include a layer above it"),
    ("src/report/tree.c", '#include "sp_pyregion.h"', "(report) includes sp_pyregion.h (python)"),
    ("src/core/grow.c", '#include "sp_new_thing.h"', "includes sp_new_thing.h, which no layer owns"),
])
def test_a_breach_fails_the_build(tmp_path, path, line, message):
    tree = copy_tree(tmp_path)
    f = tree / path
    f.write_text(line + "\n" + f.read_text())
    proc = check(tree)
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr
