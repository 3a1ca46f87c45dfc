#!/usr/bin/env python3
"""`make bench`: memory per recorded event, recording and finalize included.

Runs `scope-profiler run -q -o F tick.py N`, a script that enters and leaves
one reused region N times, for a small N (the baseline: interpreter, HDF5,
the tool) and for N = 1e8. The peak resident memory of the whole process is
the child's ru_maxrss, taken by os.wait4 from here: finalize (call tree,
statistics, the HDF5 write) runs at the very end of the child, after
anything the script itself could measure. The script also reports its own
peak at the end of the loop (VmHWM, recording only), so the two phases can be
told apart. Then the file is checked: num_calls == N, both datasets N long,
start times in order, ends not before starts, the durations summing to
total_ns, the tree one node of N calls.

    python3 scripts/bench_memory.py --binary build/scope-profiler [--events N] [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

TICK = r'''
import sys, time
import scope_profiler as sp

n = int(sys.argv[1])
r = sp.region("tick")
t0 = time.monotonic()
for _ in range(n):
    with r:
        pass
t1 = time.monotonic()
with open("/proc/self/status") as f:
    hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
print(f"recording_s={t1 - t0:.6f} loop_end={t1:.6f} recording_hwm_kb={hwm}", flush=True)
'''


# ru_maxrss survives exec, and a forked (or vforked) child starts with its
# parent's peak: the tool is forked by this small launcher, whose few MiB
# stay below any run's baseline, whatever the caller's size.
# argv: log, command...; prints the exit status, ru_maxrss (KiB), the end time.
LAUNCH = """
import os, sys, time
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), ru.ru_maxrss, f"{time.monotonic():.6f}")
"""


def run(binary, script, n, folder):
    """One run: a dict of its peak RSS, times and file size."""
    out = os.path.join(folder, f"tick{n}.h5")
    log = os.path.join(folder, f"tick{n}.log")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCH, log, binary, "run", "-q",
                           "-o", out, script, str(n)], capture_output=True, text=True)
    with open(log) as f:
        text = f.read()
    status = int(proc.stdout.split()[0]) if proc.returncode == 0 else proc.returncode
    if status != 0:
        sys.exit(f"bench_memory: {n} events: exit status {status}\n{proc.stderr}{text}")
    _, maxrss_kib, t1 = proc.stdout.split()
    t1 = float(t1)
    fields = dict(kv.split("=") for line in text.splitlines() if line.startswith("recording_s=")
                  for kv in line.split())
    return {
        "events": n, "path": out,
        "peak_rss_bytes": int(maxrss_kib) * 1024,
        "recording_hwm_bytes": int(fields["recording_hwm_kb"]) * 1024,
        "wall_s": t1 - t0,
        "recording_s": float(fields["recording_s"]),
        "finalize_s": t1 - float(fields["loop_end"]),  # finalize, write and exit
        "file_bytes": os.path.getsize(out),
    }


def check_file(path, n, chunk=10_000_000):
    """The file holds n events of region tick, read back in chunks."""
    import h5py
    import numpy as np
    with h5py.File(path, "r") as f:
        t = f["rank0/regions"]                 # format version 2: one row, region tick
        assert [x.decode() for x in t["name"][:]] == ["tick"]
        attrs = {k: int(t[k][0]) for k in ("num_calls", "total_ns", "first_start_ns", "first_event")}
        assert attrs["num_calls"] == n and attrs["first_event"] == 0, (attrs, n)
        s, e = f["rank0/events/start_times"], f["rank0/events/end_times"]
        assert s.shape == (n,) and e.shape == (n,), (s.shape, e.shape)
        assert s.dtype == np.int64 and e.dtype == np.int64
        total, last = 0, None
        for lo in range(0, n, chunk):
            a, b = s[lo:lo + chunk], e[lo:lo + chunk]
            assert (b >= a).all(), "an end before its start"
            assert (np.diff(a) >= 0).all() and (last is None or a[0] >= last), "starts out of order"
            last = a[-1]
            total += int((b - a).sum())
        assert total == attrs["total_ns"], (total, attrs["total_ns"])
        assert attrs["first_start_ns"] == int(s[0])
        calls = f["rank0/tree/calls"][:]
        assert list(calls) == [n], calls
        assert list(f["rank0/tree/parent"][:]) == [-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--events", type=int, default=100_000_000)
    ap.add_argument("--baseline-events", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=16.0,
                    help="bytes per event above the baseline (the two int64 columns: 16), "
                         "plus 1 MiB for fixed costs (allocator, page granularity)")
    ap.add_argument("--dir", help="where the files go (default: a temporary folder, removed)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        script = os.path.join(folder, "tick.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(TICK))
        base = run(binary, script, args.baseline_events, folder)
        big = run(binary, script, args.events, folder)
        check_file(base["path"], args.baseline_events)
        t0 = time.monotonic()
        check_file(big["path"], args.events)
        check_s = time.monotonic() - t0
    n = big["events"] - base["events"]
    per = (big["peak_rss_bytes"] - base["peak_rss_bytes"]) / n
    per_rec = (big["recording_hwm_bytes"] - base["recording_hwm_bytes"]) / n
    if args.json:
        for r in (base, big):
            del r["path"]     # the folder is gone
        print(json.dumps({"baseline": base, "run": big, "bytes_per_event": per,
                          "recording_bytes_per_event": per_rec, "budget": args.budget}))
    else:
        mib = 1 << 20
        print(f"memory per event: {args.events:,} calls of one reused region, "
              f"`run -q -o F`, peak RSS of the whole process (os.wait4)")
        print(f"{'events':>12} {'peak MiB':>9} {'recording MiB':>14} {'wall s':>7} "
              f"{'loop s':>7} {'finalize s':>10} {'file MiB':>9}")
        print("-" * 74)
        for r in (base, big):
            print(f"{r['events']:>12,} {r['peak_rss_bytes'] / mib:>9.1f} "
                  f"{r['recording_hwm_bytes'] / mib:>14.1f} {r['wall_s']:>7.2f} "
                  f"{r['recording_s']:>7.2f} {r['finalize_s']:>10.2f} {r['file_bytes'] / mib:>9.1f}")
        print(f"above the baseline: {per:.3f} bytes/event at the peak (budget <= {args.budget:g} "
              f"+ 1 MiB), {per_rec:.3f} at the end of recording; file checked in {check_s:.1f} s")
    if big["peak_rss_bytes"] - base["peak_rss_bytes"] > args.budget * n + (1 << 20):
        sys.exit(f"bench_memory: {per:.3f} bytes/event is over the budget of {args.budget:g}")


if __name__ == "__main__":
    main()
