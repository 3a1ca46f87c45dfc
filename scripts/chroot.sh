#!/usr/bin/env bash
# chroot.sh: a Debian chroot with another CPython, built once per machine and reused.
#
#   scripts/chroot.sh SUITE             build the chroot for SUITE if it is not there yet
#   scripts/chroot.sh SUITE run CMD...  run CMD inside it, in the repository (bind-mounted)
#
# SUITE is a Debian suite: trixie (Debian 13, Python 3.13) or testing (Python 3.14).
# The chroot is made with debootstrap from Debian's packages and the mirror that apt on
# this machine is already configured with (read from apt's sources, no host is written
# here), then gets the packages of scripts/install-deps.sh's bench group from the
# suite's own packages (those the suite has). It lives outside the repository, in
# $SCOPE_PROFILER_CHROOT_DIR/chroot-SUITE (default /var/cache/scope-profiler), and counts
# as complete only once its stamp file, written last, exists; an incomplete one is
# removed and built again (under a lock, so two first runs at once build it once); a
# package added to the list below since is installed on the next use. `run`
# mounts /proc, /sys, /dev, a fresh /dev/shm and the repository (at the same path as
# outside) in a mount namespace of its own, so that runs by several people at once, from
# several checkouts, never see or undo each other's mounts; they go when the run ends,
# on error or kill too.
# Needs root. Building takes a few minutes and about 1-2 GiB; it refuses to start with
# less than 3 GiB free.
set -euo pipefail

die() { echo "chroot.sh: $*" >&2; exit 1; }

usage() { die "usage: $0 SUITE [run CMD...]   (SUITE: trixie, testing, ...)"; }

[ $# -ge 1 ] || usage
SUITE=$1; shift
case "$SUITE" in ''|*/*|.*) usage ;; esac
MODE=build
if [ $# -ge 1 ]; then
  [ "$1" = run ] || usage
  shift
  [ $# -ge 1 ] || usage
  MODE=run
fi
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and mount need it)"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BASE=${SCOPE_PROFILER_CHROOT_DIR:-/var/cache/scope-profiler}
ROOT=$BASE/chroot-$SUITE
STAMP=$ROOT/.scope-profiler-chroot-complete
LIST=$ROOT/.scope-profiler-packages   # PACKAGES when last installed, one a line

# scripts/install-deps.sh's bench group (what the tests and benchmarks use), for the
# suite's own python3 (python3-dev); any the suite lacks are skipped.
read -r -d '' -a PACKAGES < <(PYTHON=/usr/bin/python3 "$REPO/scripts/install-deps.sh" --list bench) || true
[ ${#PACKAGES[@]} -gt 0 ] || die "scripts/install-deps.sh --list bench named no packages"

# ---- mounts: every one is recorded and undone on exit, in reverse order ----
MOUNTS=()
cleanup() {
  local i m
  for (( i=${#MOUNTS[@]}-1; i>=0; i-- )); do
    m=${MOUNTS[$i]}
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "chroot.sh: could not unmount $m" >&2
  done
  MOUNTS=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

do_mount() {  # do_mount TARGET MOUNT-ARGS...
  local target=$1; shift
  mkdir -p "$target"
  mount "$@" "$target"
  MOUNTS+=("$target")
  # A bind of a shared mount would pass mounts made under it back to the host's tree.
  if [ "$1" = --bind ]; then mount --make-private "$target"; fi
}

mount_system() {
  do_mount "$ROOT/proc" -t proc proc
  # The host's /sys, read-only (a second sysfs mount where another run has one fails).
  do_mount "$ROOT/sys" --bind /sys
  mount -o remount,bind,ro "$ROOT/sys"
  do_mount "$ROOT/dev" --bind /dev
  do_mount "$ROOT/dev/shm" -t tmpfs -o mode=1777,size=1g tmpfs
}

# Anything still mounted under the chroot (a run killed with -9)? Never delete through it.
mounted_under() {
  awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts
}

# ---- the mirror apt already uses (deb822 .sources first, then sources.list) ----
apt_mirror() {
  local f uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '
      /^[[:space:]]*#/ { next }
      /^[[:space:]]*$/ { if (types ~ /(^| )deb( |$)/ && u != "" && u !~ /security/) { print u; exit } ; types=""; u=""; next }
      tolower($1) == "types:" { types = ""; for (i = 2; i <= NF; i++) types = types " " $i; types = types " " }
      tolower($1) == "uris:"  { u = $2 }
      END { if (types ~ /(^| )deb( |$)/ && u != "" && u !~ /security/) print u }
    ' "$f" | head -n1)
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      # deb [opts] URI suite components...
      uri=$(sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }')
      [ -n "$uri" ] && break
    done
  fi
  [ -n "$uri" ] || die "no Debian mirror found in apt's sources (/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list)"
  echo "${uri%/}"
}

# install_packages PKG...: those the suite has (the others are named), with the system
# mounted.
install_packages() {
  local p want=() skipped=()
  chroot "$ROOT" apt-get update -q || return 1
  for p in "$@"; do
    if [ -n "$(chroot "$ROOT" apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"')" ]; then
      want+=("$p")
    else
      skipped+=("$p")
    fi
  done
  [ ${#skipped[@]} -eq 0 ] || echo "chroot.sh: $SUITE has no ${skipped[*]}; skipped"
  if [ ${#want[@]} -gt 0 ]; then
    chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends "${want[@]}" || return 1
  fi
  chroot "$ROOT" apt-get clean
}

wanted() { printf '%s\n' "${PACKAGES[@]}" | sort -u; }

# The packages PACKAGES gained since the chroot was made or last brought up to date
# (every one for a chroot made before the list was kept).
gained() { comm -13 <(sort -u "$LIST" 2>/dev/null) <(wanted); }

# A chroot made before PACKAGES gained a package gets it, with the system mounted, under
# the lock (two runs at once install once). Without the mirror it goes on as it is and
# tries again next time.
update_packages() {
  local new
  [ -n "$(gained)" ] || return 0
  exec 9>"$BASE/.lock-$SUITE"
  flock 9
  new=$(gained)
  if [ -n "$new" ]; then
    echo "chroot.sh: $SUITE: installing what the package list gained:" $new
    if install_packages $new; then
      wanted > "$LIST"
    else
      echo "chroot.sh: $SUITE: could not install them; going on without" >&2
    fi
  fi
  exec 9>&-
}

# ---- CPython's HACL hash code, for the static link (see scripts/py-static-probe.sh) ----
# Debian's libpython3.13.a / 3.14.a lack it; it is compiled once per chroot from Debian's
# source package of the installed version into /usr/local/lib/scope-profiler/python3.X
# by `py-static-probe.sh --hacl` (what `make hacl` runs on a Debian machine), with a
# deb-src line for the mirror the chroot's apt uses added for the time it takes. Where
# that cannot be had, the build links the shared libpython (the
# probe says so); a failed try is not repeated for the same version until
# `chroot.sh SUITE` (build mode) is run again.
HACL_DIR=/usr/local/lib/scope-profiler
PROBE_IN=/var/tmp/scope-profiler-probe.sh

# hacl_ident: the probe's --source line for the chroot's python3 ("PYVER PACKAGE VERSION
# SOURCE SOURCE-VERSION"; empty where dpkg does not know its libpython archive).
hacl_ident() {
  cp "$REPO/scripts/py-static-probe.sh" "$ROOT$PROBE_IN"
  chroot "$ROOT" sh "$PROBE_IN" --source python3 || true
}

# hacl_state IDENT: what was done for it: built, none (the archive links alone), failed,
# or nothing yet (also when what was built has gone or is of another version).
hacl_state() {
  local d=$ROOT$HACL_DIR/python${1%% *} state
  [ -n "$1" ] || { echo none; return; }
  [ -f "$d.state" ] && [ "$(sed -n 1p "$d.state")" = "$1" ] || return 0
  state=$(sed -n 2p "$d.state")
  [ "$state" != built ] || [ "$(cat "$d/VERSION" 2>/dev/null)" = "$1" ] || return 0
  echo "$state"
}

# links_static HACL-DIR: whether the probe links libpython statically with what that
# folder holds (output captured whole: no pipe for pipefail to trip on).
links_static() {
  local out
  out=$(SP_HACL_DIR=$1 chroot "$ROOT" sh "$PROBE_IN" python3 cc 2>/dev/null) || return 1
  case $out in "PY_STATIC := 1"*) return 0 ;; esac
  return 1
}

build_hacl() {  # IDENT; with the system mounted, under the lock
  local ident=$1 pyver list log=/var/tmp/scope-profiler-hacl.log why state=failed
  [ -n "$ident" ] || return 0
  set -- $ident; pyver=$1
  if links_static /nonexistent; then
    state=none
  else
    echo "chroot.sh: $SUITE: building CPython's HACL hash code from Debian's source of $4 $5 (once)"
    # deb-src lines for the very mirrors and suites of the chroot's own deb lines.
    list=$ROOT/etc/apt/sources.list.d/scope-profiler-src.list
    sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' "$ROOT/etc/apt/sources.list" \
      $(ls "$ROOT"/etc/apt/sources.list.d/*.list 2>/dev/null | grep -v "$list") 2>/dev/null | sort -u > "$list.tmp" || true
    mv "$list.tmp" "$list"
    why="apt-get update failed"
    if chroot "$ROOT" apt-get update -q >/dev/null 2>&1 &&
       chroot "$ROOT" env SP_HACL_DIR="$HACL_DIR" sh "$PROBE_IN" --hacl python3 cc >"$ROOT$log" 2>&1; then
      state=built
    else
      why=$(tail -n1 "$ROOT$log" 2>/dev/null || echo "$why")
      echo "chroot.sh: $SUITE: could not build CPython's HACL hash code ($why); builds there link the shared libpython" >&2
    fi
    rm -f "$list" "$ROOT$log"   # later apt-get updates fetch no source indexes
  fi
  mkdir -p "$ROOT$HACL_DIR"
  printf '%s\n%s\n' "$ident" "$state" > "$ROOT$HACL_DIR/python$pyver.state"
  [ "$state" != built ] || echo "chroot.sh: $SUITE: HACL hash code built into $HACL_DIR/python$pyver"
}

# update_hacl: with the system mounted; builds what is missing, under the lock. A failed
# try is repeated only in build mode (`chroot.sh SUITE`).
update_hacl() {
  local ident state
  ident=$(hacl_ident)
  state=$(hacl_state "$ident")
  case $state in built|none) return 0 ;; failed) [ "$MODE" = build ] || return 0 ;; esac
  exec 9>"$BASE/.lock-$SUITE"
  flock 9
  state=$(hacl_state "$ident")
  case $state in built|none) ;; failed) [ "$MODE" = build ] && build_hacl "$ident" ;; *) build_hacl "$ident" ;; esac
  exec 9>&-
}

build_chroot() {
  if [ -e "$ROOT" ]; then
    [ -z "$(mounted_under "$ROOT")" ] || die "$ROOT is incomplete and has mounts under it; unmount them first: $(mounted_under "$ROOT" | tr '\n' ' ')"
    echo "chroot.sh: $ROOT is incomplete (no stamp); removing it and building again"
    rm -rf --one-file-system "$ROOT"
  fi
  mkdir -p "$BASE"
  local avail_kb
  avail_kb=$(df -Pk "$BASE" | awk 'NR == 2 { print $4 }')
  if [ "${avail_kb:-0}" -lt $((3 * 1024 * 1024)) ]; then
    die "only $((avail_kb / 1024)) MiB free under $BASE; building a chroot needs 3 GiB (set SCOPE_PROFILER_CHROOT_DIR elsewhere)"
  fi

  export DEBIAN_FRONTEND=noninteractive
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "chroot.sh: installing debootstrap"
    apt-get update -q
    apt-get install -y -q --no-install-recommends debootstrap
  fi

  local mirror start
  mirror=$(apt_mirror)
  start=$(date +%s)
  echo "chroot.sh: debootstrap $SUITE into $ROOT from $mirror"
  debootstrap --variant=minbase --components=main "$SUITE" "$ROOT" "$mirror"

  # No daemon may start inside the chroot while packages install.
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"
  # The mirror may be a frozen copy whose Release files (testing's carry a Valid-Until a
  # week ahead) have expired; the signatures are still checked.
  echo 'Acquire::Check-Valid-Until "false";' > "$ROOT/etc/apt/apt.conf.d/99scope-profiler"
  cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true

  mount_system
  install_packages "${PACKAGES[@]}"
  build_hacl "$(hacl_ident)"
  cleanup
  wanted > "$LIST"

  chroot "$ROOT" python3 -c 'import sys; print(sys.version.split()[0])' > "$ROOT/.python-version"
  date -u +%FT%TZ > "$STAMP"   # written last: the chroot is complete
  echo "chroot.sh: $SUITE ready in $(( $(date +%s) - start )) s, Python $(cat "$ROOT/.python-version"), $(du -sh --one-file-system "$ROOT" | cut -f1)"
}

# All of the above is functions and settings; the work is in main, which bash reads whole
# before running it, so editing this file while it runs cannot derail a run.
main() {
  if [ ! -f "$STAMP" ]; then
    mkdir -p "$BASE"
    exec 9>"$BASE/.lock-$SUITE"
    flock 9                      # another run may be building it right now
    [ -f "$STAMP" ] || build_chroot
    exec 9>&-
  elif [ "$MODE" = build ]; then
    echo "chroot.sh: $SUITE chroot present ($ROOT, Python $(cat "$ROOT/.python-version" 2>/dev/null || echo '?')); reusing it"
    mount_system
    update_packages
    update_hacl
    cleanup
  fi

  if [ "$MODE" = run ]; then
    # Once, in a fresh mount namespace whose mounts propagate nowhere: they vanish with it.
    if [ -z "${SCOPE_PROFILER_CHROOT_NS:-}" ]; then
      trap - EXIT
      SCOPE_PROFILER_CHROOT_NS=1 exec unshare --mount --propagation private -- \
        "$(readlink -f "$0")" "$SUITE" run "$@"
    fi
    mount_system
    update_packages
    update_hacl
    do_mount "$ROOT$REPO" --bind "$REPO"
    set +e
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" SCOPE_PROFILER_CHROOT_NS=1 \
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$REPO" "$@"
    rc=$?
    set -e
    cleanup
    exit $rc
  fi
}

main "$@"
