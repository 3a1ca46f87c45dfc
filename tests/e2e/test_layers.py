"""The layer rule that `make` checks first (scripts/check-layers.sh): the
heavy headers stay in their layer and no layer includes one above it. Run on
a copy of the tree with one breach put in. And the rule for calls that make
checks before linking (--symbols): on the built objects, and on small
objects with one breach. And inside src/python: no include cycle (--graph),
and one owner of the recording mode (mode.c)."""
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BINARY, ROOT


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
    ("src/report/tree.c", '#include "sp_region.h"', "(report) includes sp_region.h (python)"),
    ("src/core/grow.c", '#include "sp_new_thing.h"', "includes sp_new_thing.h, which no layer owns"),
])
def test_a_breach_fails_the_build(tmp_path, path, line, message):
    tree = copy_tree(tmp_path)
    f = tree / path
    f.write_text(line + "\n" + f.read_text())
    proc = check(tree)
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr


def check_symbols(objects):
    return subprocess.run(["sh", str(ROOT / "scripts" / "check-layers.sh"), "--symbols", *map(str, objects)],
                          capture_output=True, text=True)


def compile_to(tmp, layer, name, code):
    """tmp/obj/LAYER/NAME.o from the C code, as the Makefile lays objects out."""
    src = tmp / (name + ".c")
    src.write_text(code)
    obj = tmp / "obj" / layer / (name + ".o")
    obj.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-c", "-o", str(obj), str(src)], check=True)
    return obj


def test_the_built_objects_keep_the_rule():
    """The objects the executable is linked from: no call runs up a layer."""
    objects = sorted((pathlib.Path(BINARY).parent / "obj").glob("*/*.o"))
    if not objects:
        pytest.skip("no objects beside the executable (BUILD/obj)")
    proc = check_symbols(objects)
    assert proc.returncode == 0, proc.stderr


def test_a_call_up_the_layers_fails_the_build(tmp_path):
    """A function defined in report and called from store is a breach, even
    though no include shows it; the same call from cli is not."""
    up = compile_to(tmp_path, "report", "tree", "int sp_shape(int x) { return x + 1; }\n")
    down = compile_to(tmp_path, "store", "reader", "int sp_shape(int);\nint sp_read(void) { return sp_shape(1); }\n")
    top = compile_to(tmp_path, "cli", "main", "int sp_shape(int);\nint main(void) { return sp_shape(0); }\n")
    proc = check_symbols([up, down, top])
    assert proc.returncode == 1
    assert "reader.o (store) calls sp_shape, defined in report: a layer may not call a layer above it" \
        in proc.stderr, proc.stderr
    assert "main.o" not in proc.stderr
    assert check_symbols([up, top]).returncode == 0


def graph(tree):
    return subprocess.run(["sh", str(tree / "scripts" / "check-layers.sh"), "--graph"], capture_output=True,
                          text=True)


def test_the_python_layer_has_no_include_cycle():
    """Each file of src/python with its headers, and the files they lead to
    (those that define what a header declares): no two files reach each
    other. mode.c sits below the files that record, which read the mode."""
    proc = graph(ROOT)
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[-1] == "no cycles"
    leads, name = {}, None
    for line in lines[1:-1]:
        if not line.startswith(" "):
            name = line.split(":")[0].split()[0]   # "tracer.c + its back ends:" is tracer.c
        elif line.strip().startswith("->"):
            leads[name] = line.split("->")[1].split()
    assert "region.c" in leads["region_paths.c"] and "mode.c" in leads["region_paths.c"]
    assert not {"region.c", "region_paths.c", "region_types.c", "wrapper.c", "tracer.c"} & set(leads["mode.c"])
    assert "finalize.c" in leads["session.c"] and "session.c" not in leads["finalize.c"]
    # A hook's back ends are compiled inside it: no file of their own here.
    assert "tracer_monitoring.c" not in leads and "tracer.c" in leads["wrapper.c"]


def test_an_include_cycle_is_shown(tmp_path):
    """mode.c including the region classes' header (what it drives) closes a
    circle through region_types.c, which reads the mode: the graph says so
    and fails."""
    tree = copy_tree(tmp_path)
    f = tree / "src/python/mode.c"
    f.write_text(f.read_text().replace('#include "sp_mode.h"', '#include "sp_mode.h"\n#include "sp_region_types.h"'))
    proc = graph(tree)
    assert proc.returncode == 1
    cycle = [l for l in proc.stdout.splitlines() if l.startswith("cycle: ")]
    assert len(cycle) == 1 and {"mode.c", "region_types.c"} <= set(cycle[0].split()[1:]), proc.stdout


def test_only_mode_c_changes_the_recording_mode():
    """sp_mode has one owner: the files that record read it, mode.c alone
    writes it (an assignment, an increment or a compound one)."""
    write = re.compile(r"\bsp_mode\.\w+\s*(=[^=]|\+\+|--|[-+|&]=)")
    writers = sorted(p.name for p in (ROOT / "src" / "python").glob("*.c") if write.search(p.read_text()))
    assert writers == ["mode.c"]
