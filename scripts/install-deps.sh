#!/usr/bin/env bash
# Installs the Debian packages scope-profiler needs to build, test and benchmark.
# Used by the README's commands and by CI (.ci/run). Idempotent: installs only
# what is missing, so a second run costs a few dpkg queries.
set -euo pipefail

packages=(
  build-essential pkg-config
  libpython3.11-dev python3 python3-numpy python3-h5py python3-pytest
  python3-venv python3-pip git
  libhdf5-dev hdf5-tools zlib1g-dev
  libcmocka-dev
  man-db groff-base
  clang-14 libclang-rt-14-dev
  valgrind time
  python3-line-profiler python3-yappi python3-pandas python3-pyflakes python3-sympy python3-matplotlib
  libopenmpi-dev openmpi-bin python3-mpi4py
  likwid
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; refresh them once.
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
