"""`run` inside a virtual environment starts the script as that
environment's own python would: the environment scope-profiler is installed
in, the activated one (VIRTUAL_ENV), or the one whose python3 comes first on
PATH. Each case compares what the script sees under `run` with what it sees
under the environment's python, run the same way; environments of another
Python, or that are not environments, are one line and status 2."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BINARY, one_line_error

PROBE = """\
import json, os, site, sys
import only_in_venv, from_pth
print(json.dumps({
    "prefix": sys.prefix, "exec_prefix": sys.exec_prefix, "base_prefix": sys.base_prefix,
    "executable": sys.executable, "path": sys.path, "user_site": site.ENABLE_USER_SITE,
    "modules": [only_in_venv.__file__, from_pth.__file__],
}))
"""

# The folder scope-profiler's run puts on sys.path for the script's Python
# subprocesses (scope-profiler-run(1), --subprocesses): the one entry a plain
# python does not have.
SHIM = re.compile(r"/scope-profiler-shim-[^/]*$")


def embedded_python():
    """The interpreter the binary embeds, from its --version."""
    out = subprocess.run([BINARY, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"embedded Python: (\d+)\.(\d+)\S* \((\S+)\)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2)), m.group(3)


def make_venv(python, where, system_site=False):
    """A virtual environment of python at where, with a module only it has
    and a .pth file naming a folder of another."""
    args = [python, "-m", "venv", "--without-pip"] + (["--system-site-packages"] if system_site else [])
    proc = subprocess.run(args + [str(where)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    site_dir = pathlib.Path(subprocess.run(
        [str(where / "bin" / "python3"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    site_dir.mkdir(parents=True, exist_ok=True)
    (site_dir / "only_in_venv.py").write_text("X = 1\n")
    extra = where / "extra"
    extra.mkdir()
    (extra / "from_pth.py").write_text("Y = 2\n")
    (site_dir / "extra.pth").write_text(f"{extra}\n")
    return where


def clean_env(tmp_path, **extra):
    """The test's environment without any virtual environment in it: PATH
    has no python3 of a venv, no VIRTUAL_ENV."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = "/usr/bin:/bin"
    env["HOME"] = str(tmp_path)     # no user site of the machine's
    env.update(extra)
    return env


def seen(argv, env, cwd):
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    got["path"] = [p for p in got["path"] if not SHIM.search(p)]
    return got


def run_and_python(tmp_path, venv, env, binary=BINARY):
    """What the probe sees under `run` and under the venv's python3."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    ours = seen([binary, "run", "-q", "--no-output", str(probe)], env, tmp_path)
    theirs = seen([str(venv / "bin" / "python3"), str(probe)], env, tmp_path)
    return ours, theirs


@pytest.fixture(scope="module")
def version():
    return embedded_python()


def test_activated_venv_is_the_scripts_environment(tmp_path, version):
    venv = make_venv(version[2], tmp_path / "v")
    env = clean_env(tmp_path, VIRTUAL_ENV=str(venv), PATH=f"{venv}/bin:/usr/bin:/bin")
    ours, theirs = run_and_python(tmp_path, venv, env)
    assert ours == theirs
    assert ours["prefix"] == str(venv) and ours["executable"] == str(venv / "bin" / "python3")
    assert ours["user_site"] is False


def test_system_site_packages_venv(tmp_path, version):
    venv = make_venv(version[2], tmp_path / "v", system_site=True)
    env = clean_env(tmp_path, VIRTUAL_ENV=str(venv), PATH=f"{venv}/bin:/usr/bin:/bin")
    ours, theirs = run_and_python(tmp_path, venv, env)
    assert ours == theirs
    # the base installation's site-packages follow the environment's own
    base = [p for p in ours["path"] if p.startswith(ours["base_prefix"]) and "-packages" in p]
    assert base and ours["path"].index(base[0]) > ours["path"].index(ours["modules"][0].rsplit("/", 1)[0])


def test_venv_whose_python3_is_first_on_path(tmp_path, version):
    """Not activated (no VIRTUAL_ENV), but its bin/ first on PATH, as
    `PATH=venv/bin:$PATH` in a job script does."""
    venv = make_venv(version[2], tmp_path / "v")
    env = clean_env(tmp_path, PATH=f"{venv}/bin:/usr/bin:/bin")
    ours, theirs = run_and_python(tmp_path, venv, env)
    assert ours == theirs and ours["prefix"] == str(venv)


def test_executable_installed_in_a_venv_runs_in_it(tmp_path, version):
    """pip puts scope-profiler into the environment's bin/: it starts there
    with nothing activated."""
    venv = make_venv(version[2], tmp_path / "v")
    binary = venv / "bin" / "scope-profiler"
    shutil.copy2(BINARY, binary)
    env = clean_env(tmp_path)
    ours, theirs = run_and_python(tmp_path, venv, env, binary=str(binary))
    assert ours == theirs and ours["prefix"] == str(venv)


def test_no_venv_is_the_embedded_pythons_own_environment(tmp_path, version):
    probe = tmp_path / "probe.py"
    probe.write_text("import json, site, sys\n"
                     "print(json.dumps([sys.prefix, sys.base_prefix, site.ENABLE_USER_SITE]))\n")
    env = clean_env(tmp_path)
    ours = subprocess.run([BINARY, "run", "-q", "--no-output", str(probe)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    theirs = subprocess.run([version[2], str(probe)], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=300)
    assert ours.returncode == 0, ours.stderr
    assert json.loads(ours.stdout) == json.loads(theirs.stdout)


def other_python(major, minor):
    """A CPython of another major.minor on this machine (pyenv's), or None."""
    root = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv")) / "versions"
    for p in sorted(root.glob("3.1[1-9]*/bin/python3")):
        v = p.parent.parent.name.split(".")
        if (int(v[0]), int(v[1])) != (major, minor) and (int(v[0]), int(v[1])) >= (3, 11):
            return str(p)
    return None


def test_venv_of_another_python_is_refused_in_one_line(tmp_path, version):
    major, minor, python = version
    other = other_python(major, minor)
    if other:
        venv = make_venv(other, tmp_path / "v")
    else:
        # No second CPython here (the Debian chroots): an environment whose
        # pyvenv.cfg names another version, as one made by it does.
        venv = make_venv(python, tmp_path / "v")
        cfg = venv / "pyvenv.cfg"
        cfg.write_text(re.sub(r"(?m)^version = .*$", f"version = {major}.{minor + 1}.0", cfg.read_text()))
    cfg_version = re.search(r"(?m)^version = (\d+\.\d+)", (venv / "pyvenv.cfg").read_text()).group(1)
    refused_in_one_line(tmp_path, venv, f"Python {cfg_version}", f"embeds Python {major}.{minor}")


def refused_in_one_line(tmp_path, venv, *fragments):
    """run in venv (activated) refuses before the script runs: status 2,
    one line naming the venv, fragments, and what to do; no file."""
    script = tmp_path / "s.py"
    script.write_text("import ssl\nprint('ran')\n")
    env = clean_env(tmp_path, VIRTUAL_ENV=str(venv), PATH=f"{venv}/bin:/usr/bin:/bin")
    proc = subprocess.run([BINARY, "run", "-o", "out.h5", str(script)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    one_line_error(proc, str(venv), *fragments, "pip install", f"make PYTHON={venv}/bin/python3")
    assert not (tmp_path / "out.h5").exists()


def same_version_elsewhere(major, minor, embedded):
    """Another installation of the embedded major.minor (pyenv's 3.11.7
    beside Debian's 3.11), or None."""
    root = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv")) / "versions"
    for p in sorted(root.glob(f"{major}.{minor}.*/bin/python3")):
        if os.path.realpath(p) != os.path.realpath(embedded):
            return str(p)
    return None


def test_venv_of_another_installation_of_the_same_version_is_refused(tmp_path, version):
    """A venv made from another installation of the same major.minor would
    start the embedded interpreter on that one's standard library (its
    `home`): a 3.11.7 venv under a 3.11.2 build failed in `import ssl`
    (undefined symbol) and ran other code silently. Refused in one line,
    saying what to do; the embedded python's own venvs run (the tests
    above)."""
    major, minor, python = version
    other = same_version_elsewhere(major, minor, python)
    if other:
        venv = make_venv(other, tmp_path / "v")
        home = str(pathlib.Path(other).parent)
    else:
        # No second installation here (the Debian chroots): a venv whose
        # pyvenv.cfg names another installation's folder, as one made by it does.
        venv = make_venv(python, tmp_path / "v")
        home = str(tmp_path / "elsewhere" / "bin")
        pathlib.Path(home).mkdir(parents=True)
        cfg = venv / "pyvenv.cfg"
        text = re.sub(r"(?m)^home = .*$", f"home = {home}", cfg.read_text())
        cfg.write_text(re.sub(r"(?m)^executable = .*$", f"executable = {home}/python3", text))
    refused_in_one_line(tmp_path, venv, f"made from the Python in {home}", "standard library differs")


def test_virtual_env_that_is_no_venv_is_refused(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    env = clean_env(tmp_path, VIRTUAL_ENV=str(tmp_path / "gone"))
    proc = subprocess.run([BINARY, "run", "-q", "--no-output", str(script)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    one_line_error(proc, "VIRTUAL_ENV", str(tmp_path / "gone"), "no pyvenv.cfg")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
