#!/usr/bin/env bash
# install-deps.sh: the Debian packages scope-profiler needs, in three nested groups.
#
#   scripts/install-deps.sh GROUP          installs the group's missing packages
#   scripts/install-deps.sh --list GROUP   prints the group's packages, one a line
#
#   build  building and running it: `make`, `make demo` (a C compiler and make,
#          pkg-config, xxd, the Python's headers and python3.X-config, HDF5, zlib)
#   check  build + the tests: `make check` (pytest, h5py, numpy, cmocka, ipython3, Open MPI
#          and mpi4py, matplotlib, pandas, chromium, man), `make asan` (gcc's own
#          sanitizers), `make fuzz-ci` (clang), `make check-pythons` (its chroots
#          get the bench group from here through scripts/chroot.sh)
#   bench  check + `make bench` (valgrind, GNU time, line_profiler, pyflakes, sympy)
#
# The one list of the project's packages: the Makefile (deps-build, deps-check,
# deps-bench), CI (.ci/run, through make) and scripts/chroot.sh ask this script.
# PYTHON (default /usr/bin/python3) chooses the headers: python3-dev for python3,
# python3.X-dev for python3.X; a Python not in /usr/bin is not Debian's and brings
# its own. Idempotent: installs only what is missing (apt-get, with sudo when not
# root), so a second run costs a few dpkg queries.
set -euo pipefail

usage() { echo "usage: $0 [--list] build|check|bench" >&2; exit 2; }

list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi
[ $# -eq 1 ] || usage
group=$1

python=${PYTHON:-/usr/bin/python3}
case $python in
  /usr/bin/python3 | /usr/bin/python3.[0-9] | /usr/bin/python3.[0-9][0-9]) python_dev=${python#/usr/bin/}-dev ;;
  *) python_dev= ;;
esac

build=(build-essential pkg-config xxd python3 $python_dev libhdf5-dev zlib1g-dev)
check=(python3-pytest python3-numpy python3-h5py libcmocka-dev ipython3
       python3-venv python3-pip git
       libopenmpi-dev openmpi-bin python3-mpi4py
       python3-matplotlib python3-pandas chromium man-db groff-base
       clang libclang-rt-dev)
bench=(valgrind time python3-line-profiler python3-pyflakes python3-sympy)

case $group in
  build) packages=("${build[@]}") ;;
  check) packages=("${build[@]}" "${check[@]}") ;;
  bench) packages=("${build[@]}" "${check[@]}" "${bench[@]}") ;;
  *) usage ;;
esac

if [ $list -eq 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
if [ -z "$python_dev" ]; then
  echo "install-deps: $python is not Debian's Python: its headers and $(basename "$python")-config come with it"
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages of '$group' present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; refresh them once.
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
