#!/usr/bin/env bash
# side-by-side.sh NAME... -- CMD...: runs CMD once per NAME, all at once, each with
# NAME as its $1 and in a session of its own, its output kept and shown whole
# (headed "== NAME") as it ends, in the order given. Fails when any failed,
# naming them. Ctrl-C or TERM ends every one of them (their whole sessions) and
# the script. (make check-pythons: the chroot suites side by side.)
set -uo pipefail

names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do names+=("$1"); shift; done
[ $# -gt 1 ] && [ ${#names[@]} -gt 0 ] || { echo "usage: $0 NAME... -- CMD..." >&2; exit 2; }
shift

logs=$(mktemp -d) || exit 1
pids=()
stop() {
  for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
  wait
  rm -rf "$logs"
  exit 130
}
trap stop INT TERM

for n in "${names[@]}"; do
  # A job of this script's is no group leader: setsid makes it one without a fork.
  setsid "$@" "$n" > "$logs/$n.log" 2>&1 &
  pids+=($!)
  echo "== $n: started (its output follows when it ends)"
done

failed=()
for i in "${!names[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
  echo "== ${names[$i]}"
  cat "$logs/${names[$i]}.log"
done
rm -rf "$logs"
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]}"
  exit 1
fi
