#!/bin/sh
# py-static-probe.sh PYTHON CC: prints the make settings that link the interpreter statically
# (Debian's libpython3.X.a, whole, its symbols exported for extension modules), when a
# program embedding Python links that way; else PY_STATIC := 0 (the shared libpython).
# Debian 12's libpython3.11.a is complete; the 3.13 and 3.14 archives lack the HACL hash
# code that their built-in _sha2/_blake2 modules need, so those link the shared library.
PYTHON=$1 CC=${2:-cc}
libs=$("$PYTHON" -c 'import sysconfig as s
a = s.get_config_var("LIBPL") or "", s.get_config_var("LIBRARY") or ""
print(*a)
print(*dict.fromkeys(w for v in ("LIBS", "SYSLIBS", "MODLIBS")
                     for w in (s.get_config_var(v) or "").split() if w.startswith("-l")))' 2>/dev/null) || { echo "PY_STATIC := 0"; exit 0; }
dir=$(echo "$libs" | sed -n 1p | cut -d' ' -f1)
lib=$(echo "$libs" | sed -n 1p | cut -d' ' -f2)
extra=$(echo "$libs" | sed -n 2p)
archive=$dir/$lib
inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
flags="-no-pie -Wl,--whole-archive $archive -Wl,--no-whole-archive -Wl,--export-dynamic $extra -lpthread"
tmp=$(mktemp -d) || { echo "PY_STATIC := 0"; exit 0; }
trap 'rm -rf "$tmp"' EXIT
printf '#include <Python.h>\nint main(void) { Py_Initialize(); return Py_FinalizeEx(); }\n' > "$tmp/p.c"
if [ -f "$archive" ] && $CC -I"$inc" -o "$tmp/p" "$tmp/p.c" $flags >/dev/null 2>&1; then
  echo "PY_STATIC := 1"
  echo "PY_STATIC_LIBS := $flags"
else
  echo "PY_STATIC := 0"
fi
