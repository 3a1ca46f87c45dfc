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

# The same whatever Python the tool embeds: the host's suite runs it (conftest's --other-python).
pytestmark = pytest.mark.any_python


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


def graph(layer, objdir):
    return subprocess.run(["sh", str(ROOT / "scripts" / "check-layers.sh"), "--graph", layer, str(objdir)],
                          capture_output=True, text=True, cwd=ROOT)


def test_the_graph_shows_calls_and_cycles(tmp_path):
    """--graph: who calls whom inside a layer, and the files in a circle
    (made-up objects named as store files; one whose source is gone, left by
    a file since renamed, is not part of the graph)."""
    a, b, c, d = "h5names", "pack", "unpack", "outpath"
    compile_to(tmp_path, "store", a, "int sp_b(void);\nint sp_a(void) { return sp_b(); }\n")
    compile_to(tmp_path, "store", b, "int sp_c(void);\nint sp_b(void) { return sp_c(); }\n")
    compile_to(tmp_path, "store", c, "int sp_a(void);\nint sp_c(void) { return sp_a(); }\n")
    compile_to(tmp_path, "store", d, "int sp_a(void);\nint sp_d(void) { return sp_a(); }\n")
    compile_to(tmp_path, "store", "gone", "int sp_a(void);\nint sp_g(void) { return sp_a(); }\n")
    proc = graph("store", tmp_path / "obj")
    assert proc.returncode == 0, proc.stderr
    assert f"  {a} -> {b} (1)\n" in proc.stdout and f"  {d} -> {a} (1)\n" in proc.stdout
    assert "gone" not in proc.stdout
    cycles = proc.stdout.split("cycles:")[1].split()
    assert sorted(cycles) == sorted([a, b, c]), proc.stdout
    (tmp_path / "obj" / "store" / f"{c}.o").unlink()
    assert "cycles: none" in graph("store", tmp_path / "obj").stdout


def test_the_store_has_no_cycle():
    """The store's files stand on its primitives (h5read_util.c and
    h5read_check.c, h5write_util.c), none on a file that calls it back."""
    objdir = pathlib.Path(BINARY).parent / "obj"
    if not (objdir / "store").is_dir():
        pytest.skip("no objects beside the executable (BUILD/obj)")
    proc = graph("store", objdir)
    assert proc.returncode == 0, proc.stderr
    assert "h5read_util -> h5read_check" in proc.stdout
    assert "src/store: cycles: none" in proc.stdout, proc.stdout


def test_the_python_layer_has_no_cycle():
    """The files of src/python call down one way (nm of BUILD/obj/python):
    mode.c sits below the files that record, which read the mode; the end of
    the run flows session -> finalize, never back; a hook's back ends are
    compiled inside it (no object of their own)."""
    objdir = pathlib.Path(BINARY).parent / "obj"
    if not (objdir / "python").is_dir():
        pytest.skip("no objects beside the executable (BUILD/obj)")
    proc = graph("python", objdir)
    assert proc.returncode == 0, proc.stderr
    assert "src/python: cycles: none" in proc.stdout, proc.stdout
    edges = {tuple(l.split()[:3:2]) for l in proc.stdout.splitlines() if " -> " in l}
    assert ("region_paths", "mode") in edges and ("session", "finalize") in edges
    assert not {e for e in edges if e[0] == "mode" and e[1] in
                {"region", "region_paths", "region_types", "wrapper", "tracer"}}, edges
    assert ("finalize", "session") not in edges
    for part in [*(objdir / "python").glob("tracer_*.o"), *(objdir / "python").glob("linetrace_*.o")]:
        defined = subprocess.run(["nm", "--defined-only", "-g", str(part)], capture_output=True,
                                 text=True).stdout.split()[2::3]
        # compiled alone, a back end is empty (a sanitizer's own symbols aside)
        assert [d for d in defined if not d.startswith(("__asan", "__ubsan", "__sanitizer",
                                                        "_sub_I", "_GLOBAL"))] == [], part


def test_only_mode_c_changes_the_recording_mode():
    """sp_mode has one owner: the files that record read it, mode.c alone
    writes it (an assignment, an increment or a compound one)."""
    write = re.compile(r"\bsp_mode\.\w+\s*(=[^=]|\+\+|--|[-+|&]=)")
    writers = sorted(p.name for p in (ROOT / "src" / "python").glob("*.c") if write.search(p.read_text()))
    assert writers == ["mode.c"]
