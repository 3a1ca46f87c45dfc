"""A run that fails before the script starts (no such script, no such
module, a syntax error in the script or in a module -m would run) never
touches an existing profile, writes none where there was none, and says
why in one line with the status python gives."""
import subprocess

import pytest

from conftest import embedded, one_line_error


def good_profile(sp, name):
    script = sp.script("""
        import scope_profiler as sp
        with sp.region("good"):
            pass
    """, name="good.py")
    proc = sp("run", "-q", "-o", name, script)
    assert proc.returncode == 0, proc.stderr
    return (sp.tmp / name).read_bytes()


def make_tree(sp):
    sp.script("x = (\n", name="bad.py")
    sp.script("x = (\n", name="mods/badmod.py")
    (sp.tmp / "mods" / "__init__.py").write_text("")
    sp.script("print('never')\n", name="brokenpkg/sub/__main__.py")
    (sp.tmp / "brokenpkg" / "__init__.py").write_text("def f(:\n")
    (sp.tmp / "brokenpkg" / "sub" / "__init__.py").write_text("")
    sp.script("print('never')\n", name="badmain/__init__.py")
    (sp.tmp / "badmain" / "__main__.py").write_text("if True\n")
    (sp.tmp / "nomain").mkdir()


# (arguments, what the one line names, python's own arguments)
CASES = [
    (["nosuch.py"], "nosuch.py", ["nosuch.py"]),
    (["bad.py"], "SyntaxError", ["bad.py"]),
    (["-m", "json.tol"], "No module named json.tol", ["-m", "json.tol"]),
    (["-m", "nosuchmodule"], "No module named nosuchmodule", ["-m", "nosuchmodule"]),
    (["-m", "mods.badmod"], "SyntaxError", ["-m", "mods.badmod"]),
    (["-m", "brokenpkg.sub"], "SyntaxError", ["-m", "brokenpkg.sub"]),
    (["-m", "badmain"], "SyntaxError", ["-m", "badmain"]),
    (["nomain"], "is a directory with no __main__.py", ["nomain"]),   # python: 1, not 2
]


@pytest.mark.parametrize("args, fragment, plain", CASES)
def test_keeps_the_last_good_profile(sp, args, fragment, plain):
    make_tree(sp)
    before = good_profile(sp, "p.h5")
    proc = sp("run", "-o", "p.h5", *args)
    one_line_error(proc, "scope-profiler: run: ", fragment)
    assert proc.stdout == ""
    python = subprocess.run([embedded().executable, *plain], capture_output=True, text=True, cwd=sp.tmp)
    assert proc.returncode == python.returncode != 0
    assert fragment.split(":")[0] in python.stderr or fragment in ("nosuch.py", CASES[-1][1])
    assert (sp.tmp / "p.h5").read_bytes() == before
    # Nothing beside it either: no temporary file, no other profile.
    assert not [p.name for p in sp.tmp.iterdir() if p.name.startswith("p.h5.")]
    assert not (sp.tmp / "profiling_data.h5").exists()


@pytest.mark.parametrize("args, fragment, plain", CASES)
def test_writes_nothing_where_there_was_nothing(sp, args, fragment, plain):
    make_tree(sp)
    proc = sp("run", *args)
    one_line_error(proc, "scope-profiler: run: ", fragment)
    assert not (sp.tmp / "profiling_data.h5").exists()
    assert not [p.name for p in sp.tmp.iterdir() if p.suffix == ".h5" or ".h5." in p.name]


def test_a_script_that_starts_and_fails_still_writes(sp):
    # The line between the two: once the script runs, its profile is written
    # even when it fails, as before.
    sp.script("import scope_profiler as sp\nwith sp.region('r'):\n    pass\nraise SystemExit(4)\n",
              name="late.py")
    proc = sp("run", "-q", "-o", "late.h5", "late.py")
    assert proc.returncode == 4
    assert (sp.tmp / "late.h5").exists()
