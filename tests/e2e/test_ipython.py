"""IPython's magics: `%load_ext scope_profiler`, then `%%scope_profiler` profiles a
cell and `%scope_profiler STATEMENT` one statement, as `run` profiles a script,
the summary printed after it (and an HTML view where the front end shows HTML).
Driven by Debian's ipython3 (scripts/install-deps.sh check installs it) with the
extension module built beside the executable on PYTHONPATH, as a notebook finds
the installed one."""
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import h5py
import pytest

from conftest import BINARY, regions, sanitizer_env, shell_env

BUILD = os.path.dirname(os.path.abspath(BINARY))
MODULE = os.path.join(BUILD, "scope_profiler" + sysconfig.get_config_var("EXT_SUFFIX"))
IPYTHON = shutil.which("ipython3", path="/usr/bin")
pytestmark = [pytest.mark.same_python,
              pytest.mark.skipif(IPYTHON is None, reason="no /usr/bin/ipython3 (Debian's ipython3)")]


def ipython(tmp_path, text):
    """Runs the script text with ipython3 in tmp_path; its stdout, then its
    stderr (IPython's usage errors), after status 0."""
    script = tmp_path / "session.py"
    script.write_text(textwrap.dedent(text))
    env = shell_env()
    env.update(PYTHONPATH=BUILD, IPYTHONDIR=str(tmp_path / "ipythondir"))
    env.update(sanitizer_env(MODULE))
    proc = subprocess.run([IPYTHON, "--quick", "--no-banner", "--colors=NoColor",
                           "--TerminalInteractiveShell.term_title=False", str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + "\n[stderr]\n" + proc.stderr


CELL = '''
import scope_profiler as sp

def leaf(n):
    return sum(range(n))

def middle():
    with sp.region("inner"):
        return [leaf(i) for i in range(3)]

total = sum(middle())
'''


def test_cell_magic_recursive_writes_the_profile(tmp_path):
    out = ipython(tmp_path, f"""
        ip = get_ipython()
        ip.run_line_magic("load_ext", "scope_profiler")
        ip.run_cell("%%scope_profiler --recursive -o cell.h5\\n" + {CELL!r})
        print("total after the cell:", total)
        """)
    # The summary names the cell, its functions and the region inside it.
    tree = out[out.index("Call tree"):out.index("Regions")]
    for name in ("<cell>", "__main__.middle", "inner", "__main__.leaf (3x)"):
        assert name in tree, out
    # The cell ran in the user's namespace, as a cell does.
    assert "total after the cell: 1" in out
    assert "profile written to cell.h5" in out
    # -o: a profile every reader reads.
    with h5py.File(tmp_path / "cell.h5") as f:
        regs = regions(f)
        assert regs["__main__.leaf"].attrs["num_calls"] == 3
        assert regs["<cell>"].attrs["num_calls"] == 1
        assert regs["inner"].attrs["num_calls"] == 1
    proc = subprocess.run([BINARY, "summary", "cell.h5"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "__main__.leaf" in proc.stdout, proc.stderr


def test_cell_magic_without_options_records_the_cell_and_its_regions(tmp_path):
    out = ipython(tmp_path, f"""
        ip = get_ipython()
        ip.run_line_magic("load_ext", "scope_profiler")
        ip.run_cell("%%scope_profiler\\n" + {CELL!r})
        """)
    assert "<cell>" in out and "inner" in out
    # Not --recursive: the cell's functions are not regions; no file written.
    assert "__main__.leaf" not in out
    assert not (tmp_path / "profiling_data.h5").exists()
    assert "profile written" not in out


def test_line_magic_profiles_one_statement(tmp_path):
    out = ipython(tmp_path, """
        ip = get_ipython()
        ip.run_line_magic("load_ext", "scope_profiler")
        ip.run_cell("def work(n):\\n    return sum(i * i for i in range(n))\\n")
        ip.run_cell("%scope_profiler --recursive -o one.h5 result = work(100)")
        print("result:", result)
        """)
    assert "<statement>" in out and "__main__.work" in out
    assert "result: 328350" in out
    with h5py.File(tmp_path / "one.h5") as f:
        assert regions(f)["__main__.work"].attrs["num_calls"] == 1


def test_line_profile_shows_the_cells_lines(tmp_path):
    out = ipython(tmp_path, """
        ip = get_ipython()
        ip.run_line_magic("load_ext", "scope_profiler")
        ip.run_cell("%%scope_profiler --line-profile\\nt = 0\\nfor i in range(50):\\n    t += i\\n")
        """)
    assert "Line profile" in out
    row = next(l for l in out.splitlines() if "t += i" in l)
    assert " 50 " in row, out          # hits of the loop's body


def test_errors(tmp_path):
    out = ipython(tmp_path, """
        ip = get_ipython()
        ip.run_line_magic("load_ext", "scope_profiler")
        ip.run_cell("%%scope_profiler --bogus\\nx = 1\\n")
        ip.run_cell("%scope_profiler")
        # A cell that raises: IPython's traceback, then the profile up to there.
        ip.run_cell("%%scope_profiler\\nraise ValueError('from the cell')\\n")
        print("still alive")
        """)
    assert "unknown option '--bogus'" in out
    assert "give a statement to profile" in out
    assert "ValueError: from the cell" in out
    assert out.index("ValueError: from the cell") < out.rindex("<cell>")
    assert "still alive" in out


def test_html_view_where_the_front_end_shows_html(tmp_path):
    # A notebook's shell is not the terminal's: its display shows text/html.
    env = dict(shell_env(), PYTHONPATH=BUILD, IPYTHONDIR=str(tmp_path / "ipythondir"))
    env.update(sanitizer_env(MODULE))
    script = tmp_path / "nb.py"
    script.write_text(textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.utils.capture import capture_output
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "scope_profiler")
        with capture_output() as c:
            ip.run_cell("%%scope_profiler -o nb.h5\\nimport scope_profiler as sp\\n"
                        "with sp.region('solve'):\\n    pass\\n")
        html = [o.data["text/html"] for o in c.outputs if "text/html" in o.data]
        assert len(html) == 1, c.outputs
        assert "<pre" in html[0] and "solve" in html[0] and "&lt;cell&gt;" in html[0], html[0]
        assert "nb.h5" in html[0]
        assert "solve" in c.stdout
        print("ok")
        """))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr


def test_a_cell_that_calls_setup_or_finalize_itself(tmp_path):
    """The cell's own setup() (default file_path) moves the profile: the
    magic says where it went (before: "written to b.h5", which was never
    made). The cell's own finalize() ends the session: one line, no
    traceback of the magic's (before: AttributeError in _show). A decorated
    function called after a magic cell runs as before it, without the
    "used after finalize()" warning the magic's own end gave."""
    out = ipython(tmp_path, """
        import os
        ip = get_ipython()
        ip.run_line_magic("load_ext", "scope_profiler")
        ip.run_cell('import scope_profiler as sp\\n@sp.profile("hot")\\ndef hot():\\n    return 1\\n')
        ip.run_cell("%%scope_profiler -o b.h5\\nsp.ProfileManager.setup()\\nwith sp.region('r'):\\n    pass\\n")
        print("files:", os.path.exists("b.h5"), os.path.exists("profiling_data.h5"))
        ip.run_cell("%%scope_profiler -o d.h5\\nwith sp.region('r'):\\n    pass\\n"
                    "sp.ProfileManager.finalize(verbose=False)\\n")
        print("d.h5:", os.path.exists("d.h5"))
        ip.run_cell("%%scope_profiler -o a.h5\\nhot()\\n")
        print("plain call:", hot())
        ip.run_cell("%%scope_profiler -o q.h5\\nsp.ProfileManager.setup(deactivate_profiling=True)\\n")
        print("q:", os.path.exists("q.h5"))
        """)
    assert f"scope-profiler: profile written to {tmp_path / 'profiling_data.h5'}" in out, out
    assert "written to b.h5" not in out
    assert "files: False True" in out
    assert ("scope-profiler: the cell ended the profiling session itself (finalize()): what that "
            "call printed and wrote is its profile") in out
    assert "d.h5: True" in out
    assert "profile written to a.h5" in out and "plain call: 1" in out
    assert "q: False" in out and out.count("profile written to") == 2   # b.h5's and a.h5's
    assert "Traceback" not in out and "warning" not in out, out
