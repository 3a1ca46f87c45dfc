#!/bin/sh
# py-static-probe.sh: whether, and how, the executable links the interpreter statically.
#
#   py-static-probe.sh PYTHON CC
#       prints the make settings that link Debian's libpython3.X.a whole (its symbols
#       exported for extension modules) when a program embedding Python links that way,
#       else PY_STATIC := 0 (the shared libpython) and one line on stderr saying why.
#   py-static-probe.sh --source PYTHON
#       prints "3.X BINARY-PACKAGE VERSION SOURCE-PACKAGE SOURCE-VERSION" of the archive
#       (dpkg's), for scripts/chroot.sh to fetch that very source.
#   py-static-probe.sh --build-hacl PYTHON CC SRCDIR OUTDIR
#       compiles CPython's HACL hash code from SRCDIR (the source tree of that very
#       version) into OUTDIR/libpython3.X-hacl.a, with the flags CPython was built with,
#       and writes OUTDIR/VERSION (the --source line) last.
#   py-static-probe.sh --hacl PYTHON CC
#       `make hacl`: where the archive needs the HACL code and $SP_HACL_DIR/python3.X has
#       none of this version, fetches Debian's source of the installed version (apt-get
#       source, into a temporary folder, removed after: needs a deb-src line in apt's
#       sources and dpkg-dev) and builds it there with --build-hacl; then checks that the
#       static link works. Says what it did, or in one line what is missing; the same
#       steps on a Debian machine and in scripts/chroot.sh's chroots.
#
# Debian 12's libpython3.11.a is complete. The 3.13 and 3.14 archives lack the HACL hash
# code (Modules/_hacl) that their built-in _sha2 (3.13), _md5/_sha1/_sha2/_sha3/_blake2
# (3.14) modules need; in libpython3.X.so it is linked in, hidden. `make hacl` (--hacl)
# builds it once per machine (scripts/chroot.sh: per chroot) from Debian's own source
# package of the installed version into $SP_HACL_DIR/python3.X (default
# /usr/local/lib/scope-profiler); with it, and only
# when its VERSION is the installed archive's, the link is static there too (its symbols
# not exported: they are the interpreter's own, as in the shared library).
HACL_DIR=${SP_HACL_DIR:-/usr/local/lib/scope-profiler}

# pyvars PYTHON: "LIBPL LIBRARY VERSION" on line 1, the -l libraries on line 2.
pyvars() {
  "$1" -c 'import sysconfig as s
print(s.get_config_var("LIBPL") or "-", s.get_config_var("LIBRARY") or "-", s.get_config_var("VERSION"))
print(*dict.fromkeys(w for v in ("LIBS", "SYSLIBS", "MODLIBS")
                     for w in (s.get_config_var(v) or "").split() if w.startswith("-l")))' 2>/dev/null
}

# source_of ARCHIVE PYVER: the --source line, or nothing where dpkg does not know the file.
source_of() {
  pkg=$(dpkg-query -S "$1" 2>/dev/null | sed -n '1s/:.*//p')
  [ -n "$pkg" ] || return 0
  dpkg-query -W -f "$2"' ${Package} ${Version} ${source:Package} ${source:Version}\n' "$pkg" 2>/dev/null
}

if [ "$1" = --source ]; then
  v=$(pyvars "$2") || exit 1
  set -- $v
  source_of "$1/$2" "$3"
  exit 0
fi

if [ "$1" = --build-hacl ]; then
  PYTHON=$2 CC=$3 SRC=$4 OUT=$5
  set -e
  v=$(pyvars "$PYTHON"); set -- $v
  ver=$3 ident=$(source_of "$1/$2" "$3")
  [ -n "$ident" ] && [ -d "$SRC/Modules/_hacl" ]
  inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  # CPython's own flags for this code, less its build tree's include paths; the SIMD
  # variants (3.14's BLAKE2) with theirs, where this version has them.
  flags=$("$PYTHON" -c 'import sysconfig as s
print(" ".join(w for w in (s.get_config_var("LIBHACL_CFLAGS") or "").split() if not w.startswith("-I")))')
  simd128=$("$PYTHON" -c 'import sysconfig as s; print(s.get_config_var("LIBHACL_BLAKE2_SIMD128_CFLAGS") or "-")')
  simd256=$("$PYTHON" -c 'import sysconfig as s; print(s.get_config_var("LIBHACL_BLAKE2_SIMD256_CFLAGS") or "-")')
  rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
  for c in "$SRC"/Modules/_hacl/*.c; do
    extra=
    case $c in
      *Simd128*) extra=$simd128 ;;
      *Simd256*) extra=$simd256 ;;
    esac
    [ "$extra" != - ] || continue        # no such variant in this version
    o=$OUT.tmp/$(basename "$c" .c).o
    $CC $flags $extra -I"$SRC/Modules/_hacl" -I"$SRC/Modules/_hacl/include" \
      -I"$SRC/Include/internal" -I"$inc" -I"$SRC/Include" -c -o "$o" "$c"
  done
  ar rcs "$OUT.tmp/libpython$ver-hacl.a" "$OUT.tmp"/*.o
  rm -f "$OUT.tmp"/*.o
  echo "$ident" > "$OUT.tmp/VERSION"
  rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
  exit 0
fi

if [ "$1" = --hacl ]; then
  PYTHON=$2 CC=$3
  say() { echo "make hacl: $*"; }
  v=$(pyvars "$PYTHON") || { say "$PYTHON does not run"; exit 1; }
  set -- $v
  archive=$1/$2 ver=$3 hacl=$HACL_DIR/python$3
  [ -f "$archive" ] || { say "no $archive (Debian: libpython$ver-dev): nothing to link statically"; exit 1; }
  ident=$(source_of "$archive" "$ver")
  out=$(sh "$0" "$PYTHON" "$CC" 2>/dev/null)
  case $out in "PY_STATIC := 1"*)
    case $out in
      *"$hacl/"*) say "$hacl is built from Debian's $(cut -d' ' -f4,5 "$hacl/VERSION"); the static link works" ;;
      *) say "$archive links as it is; nothing to build" ;;
    esac
    exit 0 ;;
  esac
  [ -n "$ident" ] || { say "dpkg does not know $archive: the HACL code is built from Debian's source package of it only"; exit 1; }
  set -- $ident; src=$4 srcver=$5
  command -v dpkg-source >/dev/null 2>&1 || { say "apt-get source needs dpkg-source: apt-get install dpkg-dev"; exit 1; }
  mkdir -p "$HACL_DIR" 2>/dev/null && [ -w "$HACL_DIR" ] ||
    { say "cannot write $HACL_DIR: run it as root, or give SP_HACL_DIR=DIR to it and to make"; exit 1; }
  work=$(mktemp -d) || exit 1
  trap 'rm -rf "$work"' EXIT
  echo "make hacl: fetching Debian's source of $src $srcver (apt-get source)"
  if ! (cd "$work" && apt-get source -q --only-source "$src=$srcver") >"$work/log" 2>&1; then
    if grep -q "deb-src" "$work/log"; then
      say "apt-get source $src=$srcver needs a deb-src line for your mirror in apt's sources ('Types: deb deb-src' in /etc/apt/sources.list.d/*.sources, or a deb-src twin of the deb line in /etc/apt/sources.list), then apt-get update"
    else
      say "apt-get source $src=$srcver failed: $(grep -m1 '^E:' "$work/log" || tail -n1 "$work/log")"
    fi
    exit 1
  fi
  dir=$(cd "$work" && ls -d -- */ | head -n1)
  echo "make hacl: compiling its Modules/_hacl into $hacl"
  sh "$0" --build-hacl "$PYTHON" "$CC" "$work/$dir" "$hacl" >"$work/log" 2>&1 ||
    { say "compiling Modules/_hacl failed: $(grep -m1 'error' "$work/log" || tail -n1 "$work/log")"; exit 1; }
  case $(sh "$0" "$PYTHON" "$CC" 2>&1) in
    *"PY_STATIC := 1"*) say "done; make now links libpython$ver statically (SP_HACL_DIR=$HACL_DIR)" ;;
    *) say "built, but libpython$ver still does not link with it: $(sh "$0" "$PYTHON" "$CC" 2>&1 >/dev/null)"; exit 1 ;;
  esac
  exit 0
fi

PYTHON=$1 CC=${2:-cc}
fallback() { echo "py-static-probe: $*; linking the shared libpython" >&2; echo "PY_STATIC := 0"; exit 0; }
libs=$(pyvars "$PYTHON") || fallback "$PYTHON does not run"
set -- $(echo "$libs" | sed -n 1p)
dir=$1 lib=$2 ver=$3
extra=$(echo "$libs" | sed -n 2p)
archive=$dir/$lib
[ -f "$archive" ] || fallback "no $archive"
inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
tmp=$(mktemp -d) || fallback "no temporary folder"
trap 'rm -rf "$tmp"' EXIT
printf '#include <Python.h>\nint main(void) { Py_Initialize(); return Py_FinalizeEx(); }\n' > "$tmp/p.c"
link() { $CC -I"$inc" -o "$tmp/p" "$tmp/p.c" $1 >"$tmp/log" 2>&1; }
flags="-no-pie -Wl,--whole-archive $archive -Wl,--no-whole-archive -Wl,--export-dynamic $extra -lpthread"
if ! link "$flags"; then
  grep -q 'undefined reference to .*Hacl' "$tmp/log" || fallback "$archive does not link: $(grep -m1 -o 'undefined reference to .*' "$tmp/log")"
  hacl=$HACL_DIR/python$ver
  ident=$(source_of "$archive" "$ver")
  [ -f "$hacl/VERSION" ] && [ -f "$hacl/libpython$ver-hacl.a" ] ||
    fallback "$archive lacks CPython's HACL hash code, which linking it statically (the faster build) needs: \`make hacl\` builds it from Debian's source of python$ver (apt-get source: a deb-src line in apt's sources) into $hacl (root; or SP_HACL_DIR=DIR to both)"
  [ -n "$ident" ] && [ "$(cat "$hacl/VERSION")" = "$ident" ] ||
    fallback "$hacl was built from $(cat "$hacl/VERSION"), not the installed ${ident:-archive}: \`make hacl\` builds it again"
  flags="-no-pie -Wl,--whole-archive $archive -Wl,--no-whole-archive -Wl,--export-dynamic $hacl/libpython$ver-hacl.a -Wl,--exclude-libs,libpython$ver-hacl.a $extra -lpthread"
  link "$flags" || fallback "$archive with $hacl/libpython$ver-hacl.a does not link: $(grep -m1 -o 'undefined reference to .*' "$tmp/log")"
fi
echo "PY_STATIC := 1"
echo "PY_STATIC_LIBS := $flags"
