"""The build backend of `pip install .` (PEP 517; pyproject.toml names it).

A wheel is the Makefile's own build and install, staged: `make all` for the
Python running pip (its real executable, whose python3.X-config the
Makefile finds beside it) in a temporary build folder, then `make install
DESTDIR=STAGE` with PREFIX and PYMODDIR inside the stage. What install puts
is mapped into the wheel, nothing else chosen here:

  STAGE/PREFIX/bin/*         -> NAME-VER.data/scripts/  (pip: the environment's bin/)
  STAGE/PREFIX/share/*       -> NAME-VER.data/data/share/  (share/man/man1, man5)
  STAGE/PYMODDIR/*           -> the wheel's root  (site-packages: scope_profiler/)

The wheel is tagged for that interpreter (cp3X-cp3X-PLATFORM); its
metadata comes from pyproject.toml's [project] table and the version from
the Makefile's VERSION. The sdist is the tracked files (`git ls-files`), or
those a MANIFEST lists where the tree is no git checkout (an unpacked
sdist), with PKG-INFO. Nothing is needed from a package index.
"""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project():
    """pyproject.toml's [project] table, with the version the Makefile sets."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = dict(tomllib.load(f)["project"])
    with open(os.path.join(ROOT, "Makefile")) as f:
        found = re.search(r"^VERSION\s*:?=\s*(\S+)", f.read(), re.M)
    if not found:
        raise RuntimeError("the Makefile sets no VERSION")
    project["version"] = found.group(1)
    return project


def _names():
    """(distribution, version, file-name stem: the name with _ for -)."""
    project = _project()
    return project["name"], project["version"], \
        "%s-%s" % (re.sub(r"[-_.]+", "_", project["name"]).lower(), project["version"])


def _metadata():
    project = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}"]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    if "license" in project:
        lines.append(f"License: {project['license']['text']}")
    for url_name, url in project.get("urls", {}).items():
        lines.append(f"Project-URL: {url_name}, {url}")
    return "\n".join(lines) + "\n"


def _tag():
    """The interpreter's wheel tag: cp311-cp311-linux_x86_64."""
    if sys.implementation.name != "cpython":
        raise RuntimeError(f"scope-profiler embeds CPython; this is {sys.implementation.name}")
    py = "cp%d%d" % sys.version_info[:2]
    abi = py + getattr(sys, "abiflags", "")
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{py}-{abi}-{platform}"


def _wheel_file(tag):
    return ("Wheel-Version: 1.0\nGenerator: scope-profiler scripts/pep517_backend.py\n"
            f"Root-Is-Purelib: false\nTag: {tag}\n")


def _dist_info():
    """{name in the .dist-info folder: bytes}, RECORD apart."""
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        license_text = f.read()
    return {"METADATA": _metadata().encode(), "WHEEL": _wheel_file(_tag()).encode(),
            "LICENSE": license_text}


# PEP 517 hooks: nothing to install before building.

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _, _, stem = _names()
    folder = os.path.join(metadata_directory, f"{stem}.dist-info")
    os.makedirs(folder, exist_ok=True)
    for name, data in _dist_info().items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return os.path.basename(folder)


def _make(*args):
    """make in the source tree, its output on stderr (pip shows it with -v,
    and all of it when the build fails)."""
    jobs = [] if "-j" in os.environ.get("MAKEFLAGS", "") else [f"-j{os.cpu_count() or 1}"]
    proc = subprocess.run(["make", "-C", ROOT, *jobs, *args], stdout=sys.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"`make {' '.join(args)}` failed (status {proc.returncode}); "
                           "scripts/install-deps.sh installs what the build needs")


def _python():
    """The interpreter to build for: the one running pip, by its real path
    (a venv's bin/python has no python-config beside it; its base does)."""
    real = os.path.realpath(sys.executable)
    if not os.access(real + "-config", os.X_OK):
        raise RuntimeError(f"{real}-config is missing: the build needs Python's development files "
                           "(Debian: libpython3.%d-dev)" % sys.version_info[1])
    return real


def _stage(tmp):
    """Builds and installs into tmp/stage; returns {path in the wheel: file
    on disk} (the .dist-info apart)."""
    _, _, stem = _names()
    build, stage = os.path.join(tmp, "build"), os.path.join(tmp, "stage")
    prefix, pymoddir = "/prefix", "/platlib"
    common = [f"PYTHON={_python()}", f"BUILD={build}"]
    _make(*common, "all")
    _make(*common, "install", f"DESTDIR={stage}", f"PREFIX={prefix}", f"PYMODDIR={pymoddir}")
    where = {os.path.join(stage + prefix, "bin"): f"{stem}.data/scripts",
             os.path.join(stage + prefix, "share"): f"{stem}.data/data/share",
             stage + pymoddir: ""}
    files = {}
    for top, into in where.items():
        for folder, _, names in os.walk(top):
            for name in names:
                path = os.path.join(folder, name)
                files[os.path.join(into, os.path.relpath(path, top))] = path
    return files


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _, _, stem = _names()
    info = f"{stem}.dist-info"
    name = f"{stem}-{_tag()}.whl"
    with tempfile.TemporaryDirectory(prefix="scope-profiler-wheel-") as tmp:
        files = _stage(tmp)
        record = []
        with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                             zipfile.ZIP_DEFLATED) as whl:
            def add(arcname, data, mode):
                entry = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
                entry.external_attr = (0o100000 | mode) << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                whl.writestr(entry, data)
                record.append(_record_line(arcname, data))

            for arcname in sorted(files):
                with open(files[arcname], "rb") as f:
                    data = f.read()
                mode = 0o755 if os.access(files[arcname], os.X_OK) else 0o644
                add(arcname, data, mode)
            for dist_name, data in _dist_info().items():
                add(f"{info}/{dist_name}", data, 0o644)
            record.append(f"{info}/RECORD,,\n")
            entry = zipfile.ZipInfo(f"{info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o100644 << 16
            whl.writestr(entry, "".join(record), zipfile.ZIP_DEFLATED)
    return name


def _source_files():
    """The files of the sdist, relative to the root: git's tracked files
    (as they are on disk), else the MANIFEST of the sdist this tree came from."""
    if os.path.exists(os.path.join(ROOT, ".git")) and shutil.which("git"):  # a file in a worktree
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        names = [n for n in out.split("\0") if n]
    elif not os.path.isfile(os.path.join(ROOT, "MANIFEST")):
        raise RuntimeError(f"{ROOT} is neither a git checkout (with git installed) nor an "
                           "unpacked sdist (with its MANIFEST): no list of the source files")
    else:
        with open(os.path.join(ROOT, "MANIFEST")) as f:
            names = [n for n in f.read().splitlines() if n]
    return sorted(n for n in names if os.path.isfile(os.path.join(ROOT, n)) and n != "MANIFEST")


def build_sdist(sdist_directory, config_settings=None):
    _, _, stem = _names()
    name = f"{stem}.tar.gz"
    names = _source_files()

    def add_bytes(tar, arcname, data):
        entry = tarfile.TarInfo(arcname)
        entry.size, entry.mode, entry.mtime = len(data), 0o644, 0
        tar.addfile(entry, io.BytesIO(data))

    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for n in names:
            tar.add(os.path.join(ROOT, n), f"{stem}/{n}", recursive=False)
        add_bytes(tar, f"{stem}/MANIFEST", "".join(n + "\n" for n in names).encode())
        add_bytes(tar, f"{stem}/PKG-INFO", _metadata().encode())
    return name
