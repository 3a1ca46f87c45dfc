#!/usr/bin/env bash
# bundle.sh: what the GPU check (scripts/gpu/run.sh) needs on a machine with a GPU
# that has neither Debian's Python 3.11 nor HDF5: the built scope-profiler
# (stripped), the stdlib of the Python it embeds (zipped .py files and its
# lib-dynload), the shared libraries it and _ctypes load, this folder's kernel
# and script, and the recording NVTX tool's source, into .gpu/ (ignored by git;
# name it in the device tool's `carry`, then run `bash .gpu/run.sh` there).
#
#   scripts/gpu/bundle.sh [BUILD]        (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
py=$("$build/scope-profiler" --version | sed -n 's/.*embedded Python: [0-9.]* (\(.*\)).*/\1/p')
lib=$("$py" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >> .git/info/exclude; }
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib ".gpu/py/lib/python$ver"
strip -o .gpu/bin/scope-profiler "$build/scope-profiler"
cp -a "$lib/lib-dynload" ".gpu/py/lib/python$ver/"
rm -f ".gpu/py/lib/python$ver/lib-dynload/"_test*
"$py" - "$lib" ".gpu/py/lib/python${ver/./}.zip" <<'PY'
import os, sys, zipfile
src, out = sys.argv[1:]
skip = {"test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "pydoc_data", "distutils",
        "dist-packages", "site-packages", "lib-dynload", "__pycache__", "unittest"}
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith("config-")]
        for f in files:
            if f.endswith(".py"):
                z.write(os.path.join(root, f), os.path.relpath(os.path.join(root, f), src))
PY
for so in $(ldd "$build/scope-profiler" "$lib"/lib-dynload/_ctypes*.so | awk '/=> \//{print $3}' | sort -u); do
  case $(basename "$so") in libc.so*|libm.so*|ld-linux*) ;; *) cp -L "$so" .gpu/lib/ ;; esac
done
cp scripts/gpu/kernel.cu scripts/gpu/gpu_check.py scripts/gpu/run.sh tests/e2e/nvtx_tool.c .gpu/
du -sh .gpu
