#!/usr/bin/env python3
"""`make bench`: the cost of `run --memory` (allocations per call) on an
allocation-heavy workload: lists, dicts and strings built in a loop, a
region around each chunk of work and a decorated function called in it.

Three runs of the same script, alternating, --repeats times each:

  plain     python3 script.py (no scope_profiler: the regions are null contexts)
  run       scope-profiler run -q --no-output script.py
  memory    scope-profiler run -q --no-output --memory script.py

The script times its own workload (time.perf_counter_ns around the loop),
so start-up and the end of the run stay out of the figures; each figure is
the minimum over the repeats, and the ratios are against plain (goal for
memory: <= 1.3x) and memory against run. Wall-clock time on a shared
machine is noisy, so when valgrind is installed the same three are also
counted in instructions under callgrind (they repeat from run to run): the
workload's instructions per chunk, as the difference between a run of
2*CG and one of CG chunks (start-up and the end of the run cancel out).
Benchmarks report, they do not
fail: the exit status is 0 whatever the ratios; 1 when a run fails.

    python3 scripts/bench_alloc.py --binary build/scope-profiler [--python python3]
        [--repeats 7] [--chunks 2000] [--cg-chunks 500] [--no-callgrind] [--json]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = r'''import sys, time
try:
    import scope_profiler as sp
    region, profile = sp.region, sp.profile
except ImportError:
    import contextlib
    region = lambda name: contextlib.nullcontext()
    profile = lambda f: f

@profile
def build(i):
    d = {}
    for k in range(50):
        d[str(k)] = [k, i, "x" * (k % 7)]
    return d

def main(chunks):
    chunk = region("chunk")
    keep = []
    for i in range(chunks):
        with chunk:
            rows = [build(i) for _ in range(4)]
            s = ",".join(str(len(r)) for r in rows)
            keep.append(s)
            if len(keep) > 100:
                keep.clear()

n = int(sys.argv[1])
t0 = time.perf_counter_ns()
main(n)
print(time.perf_counter_ns() - t0)
'''


def timed(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"bench_alloc: {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
        sys.exit(1)
    return int(proc.stdout.split()[-1])


def instructions(argv, cwd):
    """The instructions callgrind counts for a whole run."""
    out = os.path.join(cwd, "cg.out")
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + argv,
                          cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONHASHSEED="0"))
    if proc.returncode != 0:
        sys.stderr.write(f"bench_alloc: callgrind {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
        sys.exit(1)
    with open(out) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    sys.stderr.write("bench_alloc: no totals in callgrind's output\n")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--cg-chunks", type=int, default=500)
    ap.add_argument("--no-callgrind", action="store_true", help="wall-clock only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "alloc_heavy.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        runs = {
            "plain": [args.python, script, str(args.chunks)],
            "run": [args.binary, "run", "-q", "--no-output", script, str(args.chunks)],
            "memory": [args.binary, "run", "-q", "--no-output", "--memory", script, str(args.chunks)],
        }
        best = {k: None for k in runs}
        for _ in range(args.repeats):
            for k, argv in runs.items():
                t = timed(argv, d)
                best[k] = t if best[k] is None else min(best[k], t)
        per_chunk = {}
        if not args.no_callgrind and shutil.which("valgrind"):
            for k, argv in runs.items():
                small = instructions(argv[:-1] + [str(args.cg_chunks)], d)
                big = instructions(argv[:-1] + [str(2 * args.cg_chunks)], d)
                per_chunk[k] = (big - small) / args.cg_chunks
    res = {
        "chunks": args.chunks,
        "calls": args.chunks * 5,
        "plain_ms": best["plain"] / 1e6,
        "run_ms": best["run"] / 1e6,
        "memory_ms": best["memory"] / 1e6,
        "run_vs_plain": best["run"] / best["plain"],
        "memory_vs_plain": best["memory"] / best["plain"],
        "memory_vs_run": best["memory"] / best["run"],
    }
    for k, v in per_chunk.items():
        res[f"{k}_instructions_per_chunk"] = v
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"allocations (run --memory), {args.chunks} chunks ({res['calls']} region calls), "
          f"workload time, min of {args.repeats}:")
    print(f"  plain python      {res['plain_ms']:9.1f} ms")
    print(f"  run               {res['run_ms']:9.1f} ms   {res['run_vs_plain']:.2f}x plain")
    print(f"  run --memory      {res['memory_ms']:9.1f} ms   {res['memory_vs_plain']:.2f}x plain, "
          f"{res['memory_vs_run']:.2f}x run   (goal <= 1.3x plain)")
    if per_chunk:
        p, r, m = per_chunk["plain"], per_chunk["run"], per_chunk["memory"]
        print(f"  instructions per chunk (callgrind): plain {p:.0f}, run {r:.0f} ({r / p:.2f}x), "
              f"run --memory {m:.0f} ({m / p:.2f}x plain, {m / r:.2f}x run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
