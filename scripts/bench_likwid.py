#!/usr/bin/env python3
"""`make bench`: what --likwid adds to a region call.

LIKWID cannot read these machines' CPUs, so the marker calls go to the
tests' recording stand-in (tests/e2e/likwid_standin.c, built here as
liblikwid.so.5 in a temporary folder, nothing logged: its marker functions
only count), which measures scope-profiler's side of the cost: the marker
region class, the name lookup and the calls through the resolved function
pointers. LIKWID's own StartRegion/StopRegion (reading the counters through
its access daemon or msr) come on top on a supported CPU.

Two runs of one script, `run --no-output` and `run --no-output --likwid`,
alternated --rounds times; each times N `with region:` blocks and N calls of
a decorated function, the minimum of --repeats loops, less the empty loop's
time. Printed: ns per call and the ratio --likwid / plain.

    python3 scripts/bench_likwid.py --binary build/scope-profiler [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

INNER = r'''
import json, sys, time
import scope_profiler as sp

N = int(sys.argv[1]); REPEATS = int(sys.argv[2])
clock = time.perf_counter_ns
r = sp.region("bench")

@sp.profile("bench_fn")
def fn():
    pass

def plain():
    pass

def t_empty():
    t0 = clock()
    for _ in range(N):
        pass
    return clock() - t0

def t_with():
    t0 = clock()
    for _ in range(N):
        with r:
            pass
    return clock() - t0

def t_plain_call():
    t0 = clock()
    for _ in range(N):
        plain()
    return clock() - t0

def t_decorated():
    t0 = clock()
    for _ in range(N):
        fn()
    return clock() - t0

best = {}
for _ in range(REPEATS):
    for name, f in (("empty", t_empty), ("with", t_with), ("plain_call", t_plain_call),
                    ("decorated", t_decorated)):
        t = f()
        best[name] = min(best.get(name, t), t)
print(json.dumps({"with": (best["with"] - best["empty"]) / N,
                  "decorated": (best["decorated"] - best["plain_call"]) / N}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", os.path.join(tmp, "liblikwid.so.5"),
                        os.path.join(root, "tests", "e2e", "likwid_standin.c")], check=True)
        script = os.path.join(tmp, "inner.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(INNER))
        env = dict(os.environ, LD_LIBRARY_PATH=tmp)
        env.pop("LIKWID_STANDIN_LOG", None)
        best = {}
        for _ in range(args.rounds):
            for mode, extra in (("plain", []), ("likwid", ["--likwid"])):
                proc = subprocess.run([args.binary, "run", "-q", "--no-output", *extra, script,
                                       str(args.calls), str(args.repeats)],
                                      capture_output=True, text=True, env=env, cwd=tmp)
                if proc.returncode != 0:
                    sys.exit(f"bench_likwid: {mode}: exit status {proc.returncode}\n{proc.stderr}")
                got = json.loads(proc.stdout.splitlines()[-1])
                for k, v in got.items():
                    best[(mode, k)] = min(best.get((mode, k), v), v)
    result = {k: {"plain_ns": best[("plain", k)], "likwid_ns": best[("likwid", k)],
                  "ratio": best[("likwid", k)] / best[("plain", k)]} for k in ("with", "decorated")}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print("--likwid per region call (stand-in markers: scope-profiler's side only)")
    for k, label in (("with", "with region:"), ("decorated", "decorated call")):
        r = result[k]
        print(f"  {label:15s} plain {r['plain_ns']:6.1f} ns   --likwid {r['likwid_ns']:6.1f} ns"
              f"   ratio {r['ratio']:.2f}x")


if __name__ == "__main__":
    main()
