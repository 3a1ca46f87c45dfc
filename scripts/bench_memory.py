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

Then memory per region: --regions distinct regions (100,000) called once
each, `run -q -o F`, against one region: the peak per region (budget: under
1 KiB; a region's object, its name in the registry and its first few event
slots), and the script's own VmRSS growth per region while it made them.

Then whole programs, `run --recursive --all -q -o F` against `python -m
cProfile -o F` and plain python, with --python (the binary's interpreter):
pyflakes over a standard library package (json), and a small sympy script
(sympy's import alone runs thousands of functions). Each row's peak (the
child's ru_maxrss) as a ratio to cProfile's, budget <= 1.00x; a program whose
package is not installed for --python is left out with a note. These rows
report and do not fail.

    python3 scripts/bench_memory.py --binary build/scope-profiler [--python /usr/bin/python3]
        [--events N] [--regions N] [--no-programs] [--json]
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


# argv[1]: how many distinct regions, each entered once; prints the
# resident memory's growth per region while the script made them.
REGIONS = r'''
import sys
import scope_profiler as sp

def vmrss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

n = int(sys.argv[1])
names = [f"region_{i}" for i in range(n)]
before = vmrss_kib()
for name in names:
    with sp.region(name):
        pass
print(f"rss_growth_kb={vmrss_kib() - before}", flush=True)
'''

SYMPY = r'''
import sympy
x = sympy.Symbol("x")
print(sympy.integrate(x**2 * sympy.sin(x), x))
print(sympy.series(sympy.cos(x), x, 0, 8))
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
    # Every call kept in memory to the end (--memory-budget 0): 16 bytes per
    # event is that path's budget; a streamed run's (the default past 64 MiB)
    # is scripts/bench_stream.py's.
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCH, log, binary, "run", "-q",
                           "--memory-budget", "0", "-o", out, script, str(n)], capture_output=True,
                          text=True)
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


def peak(argv, log):
    """Runs argv under the launcher: (exit status, peak RSS in bytes, its output)."""
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCH, log, *argv],
                          capture_output=True, text=True)
    with open(log) as f:
        text = f.read()
    if proc.returncode != 0:
        sys.exit(f"bench_memory: {argv}: the launcher failed\n{proc.stderr}")
    status, maxrss_kib, _ = proc.stdout.split()
    return int(status), int(maxrss_kib) * 1024, text


def distinct_regions(binary, n, folder):
    """Peak and VmRSS growth per region of n one-call regions, against one."""
    script = os.path.join(folder, "regions.py")
    with open(script, "w") as f:
        f.write(REGIONS)
    res = {}
    for k in (1, n):
        out = os.path.join(folder, f"regions{k}.h5")
        status, rss, text = peak([binary, "run", "-q", "-o", out, script, str(k)],
                                 os.path.join(folder, f"regions{k}.log"))
        if status != 0:
            sys.exit(f"bench_memory: {k} regions: exit status {status}\n{text}")
        growth = int(text.split("rss_growth_kb=")[1].split()[0]) * 1024
        res[k] = (rss, growth)
        os.unlink(out)
    return {"regions": n, "peak_bytes_per_region": (res[n][0] - res[1][0]) / (n - 1),
            "recording_bytes_per_region": res[n][1] / n,
            "peak_rss_bytes": res[n][0], "baseline_peak_rss_bytes": res[1][0]}


def programs(binary, py, folder):
    """{program: {tool: peak RSS bytes}} and the notes on what was left out."""
    def has(module):
        return subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0
    notes, progs = [], {}
    if has("pyflakes"):
        json_dir = subprocess.run([py, "-c", "import json, os; print(os.path.dirname(json.__file__))"],
                                  capture_output=True, text=True).stdout.strip()
        progs["pyflakes json"] = ["-m", "pyflakes", json_dir]
    else:
        notes.append(f"pyflakes not installed for {py}: its row is left out (python3-pyflakes)")
    if has("sympy"):
        script = os.path.join(folder, "sym.py")
        with open(script, "w") as f:
            f.write(SYMPY)
        progs["sympy integrate"] = [script]
    else:
        notes.append(f"sympy not installed for {py}: its row is left out (python3-sympy)")
    res = {}
    for name, prog in progs.items():
        argvs = {
            "python": [py, *prog],
            "cProfile": [py, "-m", "cProfile", "-o", os.path.join(folder, "p.prof"), *prog],
            "ours": [binary, "run", "--recursive", "--all", "-q", "-o",
                     os.path.join(folder, "p.h5"), *prog],
        }
        row = {}
        for tool, argv in argvs.items():
            # pyflakes exits 1 when it finds something to say: any status
            # the plain run has is the program's own.
            _, row[tool], _ = peak(argv, os.path.join(folder, "p.log"))
        regs = subprocess.run([binary, "summary", "--flat", os.path.join(folder, "p.h5")],
                              capture_output=True, text=True).stdout
        row["regions"] = next((l.split(" regions")[0].split()[-1] for l in regs.splitlines()
                               if " regions, " in l), "?")
        res[name] = row
    return res, notes


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
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the binary's interpreter, for the plain and cProfile runs")
    ap.add_argument("--regions", type=int, default=100_000)
    ap.add_argument("--region-budget", type=float, default=1024.0,
                    help="peak bytes per one-call region above one region's run")
    ap.add_argument("--no-programs", action="store_true", help="leave out pyflakes and sympy")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.events <= args.baseline_events:
        ap.error(f"--events {args.events} is not above the baseline's {args.baseline_events} events "
                 "(the bytes per event are the difference of the two runs)")
    if args.regions < 2:
        ap.error("--regions must be at least 2 (the bytes per region are against one region)")
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
        regs = distinct_regions(binary, args.regions, folder)
        progs, notes = ({}, ["programs left out (--no-programs)"]) if args.no_programs \
            else programs(binary, args.python, folder)
    n = big["events"] - base["events"]
    per = (big["peak_rss_bytes"] - base["peak_rss_bytes"]) / n
    per_rec = (big["recording_hwm_bytes"] - base["recording_hwm_bytes"]) / n
    if args.json:
        for r in (base, big):
            del r["path"]     # the folder is gone
        print(json.dumps({"baseline": base, "run": big, "bytes_per_event": per,
                          "recording_bytes_per_event": per_rec, "budget": args.budget,
                          "distinct_regions": regs, "programs": progs, "notes": notes}))
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
        print()
        print(f"memory per region: {regs['regions']:,} distinct regions called once each, "
              f"`run -q -o F`, against one region")
        print(f"  {regs['peak_bytes_per_region']:.0f} bytes/region at the peak (budget < "
              f"{args.region_budget:g}), {regs['recording_bytes_per_region']:.0f} while recording "
              f"(the script's VmRSS); peak {regs['peak_rss_bytes'] / mib:.1f} MiB")
        print()
        print("peak memory of whole programs: run --recursive --all -q -o F against "
              "python -m cProfile -o F (budget <= 1.00x cProfile)")
        print(f"{'program':<18} {'regions':>8} {'python MiB':>10} {'cProfile MiB':>12} "
              f"{'ours MiB':>9} {'ours/cProfile':>13}")
        for name, row in progs.items():
            ratio = row["ours"] / row["cProfile"]
            print(f"{name:<18} {row['regions']:>8} {row['python'] / mib:>10.1f} "
                  f"{row['cProfile'] / mib:>12.1f} {row['ours'] / mib:>9.1f} {ratio:>12.2f}x"
                  + ("" if ratio <= 1.0 else "  over budget"))
        for note in notes:
            print(f"note: {note}")
    if big["peak_rss_bytes"] - base["peak_rss_bytes"] > args.budget * n + (1 << 20):
        sys.exit(f"bench_memory: {per:.3f} bytes/event is over the budget of {args.budget:g}")
    if regs["peak_bytes_per_region"] > args.region_budget:
        sys.exit(f"bench_memory: {regs['peak_bytes_per_region']:.0f} bytes/region is over the "
                 f"budget of {args.region_budget:g}")


if __name__ == "__main__":
    main()
