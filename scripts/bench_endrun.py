#!/usr/bin/env python3
"""`make bench`, the end of a run: what finishing a run costs per region and
per event, in instructions (callgrind), and its peak memory.

A generated script defines N functions and calls each M times from main();
`scope-profiler run --recursive` records one region per function. Under
`valgrind --tool=callgrind --toggle-collect=sp_session_end_run` only the end
of the run is counted: everything after the script's last statement up to
the interpreter's own teardown (the statistics, the call tree, the HDF5
write, the printed summary). Three sizes are run for each mode:

    A: N regions x M calls   B: 2N regions x M calls   C: N regions x 2M calls

so that per event = (C - A) / (N M) and per region = (B - A) / N - M x per
event: fixed costs cancel out, and counts repeat exactly run to run.
Modes: the default `run -o F` (file and printed summary), `-q -o F` (file
only), `-q --no-output` (nothing asked for: nothing should be done) and
`--no-output` (the printed summary only).

The per-event cost is also split by what spends it (inclusive instructions
of these functions, the same difference): the call tree, built from the
timestamps by containment, the one nesting rule (sp_tree_build; --aggregate,
which has no events, keeps a tree while recording: sp_agg_tree), the statistics
(sp_stats_acc_columns, sp_stats_compute), the copies of the event bytes (memcpy:
callgrind counts a byte copied with `rep movsb` as one instruction) and the rest.

Memory: peak RSS of the whole process (os.wait4) of N regions x a large M,
above the same run with one call per region, against the events' own bytes
(16 per call); the end's own share is the peak above the script's high-water
mark at its last statement.

Budgets: <= 20,000 instructions per region, <= 20 per
event, peak <= 1.3x the events' bytes above the interpreter's.

    python3 scripts/bench_endrun.py --binary build/scope-profiler [--regions N] [--calls M]
                                    [--modes default,quiet,none,summary] [--no-memory] [--json]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = r'''
import sys
n, m = int(sys.argv[1]), int(sys.argv[2])
src = "".join(f"def f{i}():\n    pass\n" for i in range(n))
ns = {}
exec(compile(src, __file__, "exec"), ns)
fs = [ns[f"f{i}"] for i in range(n)]

def main():
    for f in fs:
        for _ in range(m):
            f()

main()
if len(sys.argv) > 3:
    with open("/proc/self/status") as st:
        hwm = next(int(l.split()[1]) for l in st if l.startswith("VmHWM:"))
    with open(sys.argv[3], "w") as out:
        out.write(str(hwm * 1024))
'''

MODES = {
    "default": ("run -o F: file + summary", ["-o", "{out}"]),
    "quiet": ("run -q -o F: file only", ["-q", "-o", "{out}"]),
    "none": ("run -q --no-output: nothing", ["-q", "--no-output"]),
    "summary": ("run --no-output: summary only", ["--no-output"]),
}

# ru_maxrss survives exec and a forked child starts with its parent's peak:
# the tool is forked by this small launcher (as in bench_memory.py).
LAUNCH = """
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), ru.ru_maxrss)
"""


def command(binary, mode, folder, script, n, m, extra=()):
    out = os.path.join(folder, f"end_{mode}_{n}_{m}.h5")
    opts = [a.format(out=out) for a in MODES[mode][1]]
    # The end of a run written whole (under callgrind a run lasts long enough
    # to stream: --memory-budget 0 keeps it to the path measured here).
    return [binary, "run", "--recursive", "--memory-budget", "0", "--buffer-limit", str(m + 1), *opts,
            script, str(n), str(m), *extra]


# Functions whose inclusive cost is shown apart: (label, pattern of the
# name in callgrind_annotate's inclusive listing).
# Each part: the inclusive cost of these functions, summed. The tree is the
# one built by containment (or --aggregate's, kept while recording).
PARTS = (("tree", ("sp_tree_build [", "sp_agg_tree [")), ("stats", (":sp_stats_compute [", ":sp_stats_acc_columns [")),
         ("copies", ("memcpy",)))


def parts(cg):
    """Inclusive instructions per part, from a callgrind output file."""
    proc = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", cg],
                          capture_output=True, text=True)
    best = {pattern: 0 for _, patterns in PARTS for pattern in patterns}
    for line in proc.stdout.splitlines():
        fields = line.split()
        if not fields or not fields[0].replace(",", "").isdigit():
            continue
        for pattern in best:
            if pattern in line:
                best[pattern] = max(best[pattern], int(fields[0].replace(",", "")))
    return {label: sum(best[p] for p in patterns) for label, patterns in PARTS}


def instructions(binary, mode, folder, script, n, m):
    """Instructions of the end of one run (callgrind, sp_session_end_run),
    and of its parts."""
    cg = os.path.join(folder, "cg.out")
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}",
                           "--toggle-collect=sp_session_end_run",
                           *command(binary, mode, folder, script, n, m)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"bench_endrun: {mode} {n}x{m}: callgrind run failed:\n{proc.stderr[-3000:]}")
    with open(cg) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1]), parts(cg)
    sys.exit("bench_endrun: no callgrind summary")


def per_unit(binary, mode, folder, script, n, m):
    (a, pa), (b, _), (c, pc) = (instructions(binary, mode, folder, script, *size)
                                for size in ((n, m), (2 * n, m), (n, 2 * m)))
    event = (c - a) / (n * m)
    region = (b - a) / n - m * event
    split = {label: (pc[label] - pa[label]) / (n * m) for label, _ in PARTS}
    split["rest"] = event - sum(split.values())
    return {"A": a, "B": b, "C": c, "per_event": event, "per_region": region, "per_event_parts": split}


def peak(binary, folder, script, n, m):
    """Peak RSS (bytes) of a `-q -o F` run, and the script's own VmHWM at its end."""
    hwm = os.path.join(folder, "hwm.txt")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCH,
                           *command(binary, "quiet", folder, script, n, m, [hwm])],
                          capture_output=True, text=True)
    status, maxrss = proc.stdout.split() if proc.returncode == 0 else (proc.returncode, 0)
    if int(status) != 0:
        sys.exit(f"bench_endrun: memory run {n}x{m} failed: {proc.stderr}")
    with open(hwm) as f:
        return int(maxrss) * 1024, int(f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--regions", type=int, default=400, help="N (default 400)")
    ap.add_argument("--calls", type=int, default=50, help="M calls per region (default 50)")
    ap.add_argument("--modes", default="default,quiet,none,summary")
    ap.add_argument("--memory-calls", type=int, default=20000,
                    help="calls per region of the memory run (N regions; default 20000)")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    if not shutil.which("valgrind"):
        sys.exit("bench_endrun: needs valgrind (scripts/install-deps.sh installs it)")
    modes = args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            sys.exit(f"bench_endrun: unknown mode '{mode}' ({', '.join(MODES)})")
    res = {"regions": args.regions, "calls": args.calls, "modes": {}}
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "gen.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        for mode in modes:
            res["modes"][mode] = per_unit(binary, mode, folder, script, args.regions, args.calls)
        if not args.no_memory:
            n, m = args.regions, args.memory_calls
            base, _ = peak(binary, folder, script, n, 1)
            top, hwm = peak(binary, folder, script, n, m)
            events = n * (m - 1)
            res["memory"] = {"events": n * m, "baseline_bytes": base, "peak_bytes": top,
                             "script_hwm_bytes": hwm,
                             "ratio": (top - base) / (16 * events),
                             "end_bytes": max(top - hwm, 0)}
    over = []
    for mode, r in res["modes"].items():
        if mode in ("default", "quiet", "none") and (r["per_region"] > 20000 or r["per_event"] > 20):
            over.append(mode)
    mem = res.get("memory")
    if mem and mem["ratio"] > 1.3:
        over.append("memory")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"the end of a run (callgrind, sp_session_end_run): {args.regions} regions x "
              f"{args.calls} calls, against 2x the regions and 2x the calls")
        print(f"{'mode':<34}{'instr/region':>13}{'instr/event':>12}  "
              f"{'of which: tree  stats copies  rest':>36}")
        print("-" * 95)
        for mode, r in res["modes"].items():
            sp = r["per_event_parts"]
            print(f"{MODES[mode][0]:<34}{r['per_region']:>13,.0f}{r['per_event']:>12.1f}  "
                  f"{sp['tree']:>16.1f}{sp['stats']:>7.1f}{sp['copies']:>7.1f}{sp['rest']:>6.1f}")
        print("budget: <= 20,000 instructions per region, <= 20 per event (file and none modes)")
        if mem:
            mib = 1 << 20
            print(f"memory, {mem['events']:,} calls in {args.regions} regions (`run -q -o F`): "
                  f"peak {mem['peak_bytes'] / mib:.1f} MiB, {mem['baseline_bytes'] / mib:.1f} MiB "
                  f"with one call per region; {mem['ratio']:.2f}x the events' 16 bytes each "
                  f"(budget <= 1.3x); the end adds {mem['end_bytes'] / mib:.1f} MiB above the "
                  f"script's peak")
    if over:   # reported, as every bench does; `make bench` goes on to the end
        print(f"bench_endrun: over budget: {', '.join(over)}")


if __name__ == "__main__":
    main()
