#!/bin/sh
# py-check.sh: whether PYTHON is a CPython the executable can embed, before anything is built.
#
#   py-check.sh PYTHON [PYTHON_CONFIG]
#       prints "config=PATH" (the python3.X-config to build with: PYTHON_CONFIG when given,
#       else PYTHON-config, else python3.X-config beside PYTHON or in that Python's own
#       bin folder, which a venv's python has not) when PYTHON runs, is CPython 3.11 or
#       newer, and has its C headers; else one line saying what is wrong and what provides
#       the missing piece. Always exits 0: the Makefile stops with that line.
PYTHON=$1 CONFIG=$2

case $PYTHON in
  */*) [ -x "$PYTHON" ] || { echo "PYTHON=$PYTHON: no such program (make PYTHON=/path/to/python3, a CPython 3.11 or newer)"; exit 0; } ;;
  *) command -v "$PYTHON" >/dev/null 2>&1 || { echo "PYTHON=$PYTHON: not on PATH (make PYTHON=/path/to/python3, a CPython 3.11 or newer)"; exit 0; } ;;
esac

# Its implementation and X.Y, in words any Python (2 too) understands.
info=$("$PYTHON" -c 'import sys
print("%s %d.%d" % (getattr(getattr(sys, "implementation", None), "name", "cpython"),
                    sys.version_info[0], sys.version_info[1]))' 2>&1) || {
  rc=$?; echo "PYTHON=$PYTHON does not run: $(echo "$info" | tail -n1 | grep . || echo "exit status $rc")"; exit 0; }
set -- $info
impl=$1 ver=$2
if [ "$impl" != cpython ]; then
  echo "scope-profiler needs CPython 3.11 or newer; $PYTHON is $impl $ver"; exit 0
fi
case $ver in
  [0-2].*|3.[0-9]|3.10) echo "scope-profiler needs CPython 3.11 or newer; $PYTHON is $ver"; exit 0 ;;
esac
# Its include folder and bin folder (a venv's python: those of the Python it was made from).
set -- $("$PYTHON" -c 'import sysconfig
print(sysconfig.get_paths()["include"], sysconfig.get_config_var("BINDIR") or "-")')
inc=$1 bindir=$2

# Where the headers and python3.X-config come from, for the message.
if command -v dpkg-query >/dev/null 2>&1 && dpkg-query -S "$(readlink -f "$(command -v "$PYTHON")")" >/dev/null 2>&1; then
  from="on Debian and Ubuntu: apt-get install python$ver-dev"
else
  from="a CPython built from source installs them with it (make install; pyenv's have them)"
fi

if [ -z "$CONFIG" ]; then
  for c in "$PYTHON-config" "$(dirname "$PYTHON")/python$ver-config" "$bindir/python$ver-config"; do
    [ -x "$c" ] && { CONFIG=$c; break; }
  done
  [ -n "$CONFIG" ] || {
    echo "no python$ver-config for PYTHON=$PYTHON (beside it or in $bindir); $from, or name one with PYTHON_CONFIG="; exit 0; }
elif ! "$CONFIG" --includes >/dev/null 2>&1; then
  echo "PYTHON_CONFIG=$CONFIG does not run; $from"; exit 0
fi

[ -f "$inc/Python.h" ] || { echo "no Python.h in $inc (the C headers of Python $ver); $from"; exit 0; }
case " $("$CONFIG" --includes) " in
  *" -I$inc "*) ;;
  *) echo "$CONFIG is another Python's (its headers: $("$CONFIG" --includes)), not PYTHON=$PYTHON's ($inc); name the right one with PYTHON_CONFIG="; exit 0 ;;
esac
echo "config=$CONFIG"
