#!/usr/bin/env python3
"""`make bench`: scope-profiler's per-call costs beside their peers.

Every figure is a ratio against a peer measured side by side in one run:
the candidates are timed in alternation, many repeats, and the minimum is
kept (noise only ever adds time). On these shared machines wall-clock ratios
wander; `--callgrind` adds instructions per call from valgrind, which repeat
exactly.

    python3 scripts/bench.py --binary build/scope-profiler [--callgrind] [--json]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The measuring script, run under `scope-profiler run --no-output`.
INNER = r'''
import json, sys, threading, time
import scope_profiler as sp
from scope_profiler import ProfileManager

N = int(sys.argv[1]); REPEATS = int(sys.argv[2])
clock = time.perf_counter_ns

def t_empty():
    t0 = clock()
    for _ in range(N):
        pass
    return clock() - t0

lock = threading.Lock()
def t_lock():
    t0 = clock()
    for _ in range(N):
        with lock:
            pass
    return clock() - t0

reused = sp.region("bench_with")
def t_region():
    t0 = clock()
    for _ in range(N):
        with reused:
            pass
    return clock() - t0

region = sp.region
def t_region_lookup():
    t0 = clock()
    for _ in range(N):
        with region("bench_lookup"):
            pass
    return clock() - t0

def work():
    return None

def noop_decorator(func):
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper

py_wrapped = noop_decorator(work)
sp_wrapped = sp.profile("bench_call")(work)

def t_call():
    f = work
    t0 = clock()
    for _ in range(N):
        f()
    return clock() - t0

def t_py_deco():
    f = py_wrapped
    t0 = clock()
    for _ in range(N):
        f()
    return clock() - t0

def t_sp_deco():
    f = sp_wrapped
    t0 = clock()
    for _ in range(N):
        f()
    return clock() - t0

def measure(cands):
    best = {k: float("inf") for k in cands}
    for _ in range(REPEATS):
        for k, fn in cands.items():
            best[k] = min(best[k], fn())
            sp._reset()  # forget the events: the buffers never grow mid-measure
    return {k: v / N for k, v in best.items()}

import cProfile

def fcall():
    return None

def heavy(n):
    for _ in range(n):
        fcall()

def t_heavy_plain():
    t0 = clock()
    heavy(N)
    return clock() - t0

def t_heavy_cprofile():
    p = cProfile.Profile()
    p.enable()
    t0 = clock()
    heavy(N)
    t = clock() - t0
    p.disable()
    return t

sp._tracer_configure(False, (), (), sp._foreign_prefixes())
def t_heavy_ours():
    sp._tracer_start()
    t0 = clock()
    heavy(N)
    t = clock() - t0
    sp._tracer_stop_all()
    return t

enabled = measure({"empty": t_empty, "lock": t_lock, "region": t_region,
                   "region_lookup": t_region_lookup, "call": t_call,
                   "py_deco": t_py_deco, "sp_deco": t_sp_deco, "heavy_plain": t_heavy_plain,
                   "heavy_cprofile": t_heavy_cprofile, "heavy_ours": t_heavy_ours})
# The disabled mode, in the same process: setup() swaps the region class.
ProfileManager.setup(deactivate_profiling=True)
disabled_with = reused
disabled = {}
best = {"lock": float("inf"), "region": float("inf"), "empty": float("inf")}
for _ in range(REPEATS):
    best["empty"] = min(best["empty"], t_empty())
    best["lock"] = min(best["lock"], t_lock())
    best["region"] = min(best["region"], t_region())
disabled = {k: v / N for k, v in best.items()}
disabled["decorator_returns_function"] = sp.profile("d")(work) is work

# Aggregation mode beside the time-only mode, alternating: setup() swaps the
# class of the same region object and the call of the same wrapper.
best = {k: float("inf") for k in ("empty", "call", "agg_region", "timed_region", "agg_deco",
                                  "timed_deco")}
for _ in range(REPEATS):
    ProfileManager.setup(deactivate_profiling=False, aggregation_mode=True)
    best["agg_region"] = min(best["agg_region"], t_region())
    best["agg_deco"] = min(best["agg_deco"], t_sp_deco())
    sp._reset()
    ProfileManager.setup(aggregation_mode=False)
    best["timed_region"] = min(best["timed_region"], t_region())
    best["timed_deco"] = min(best["timed_deco"], t_sp_deco())
    sp._reset()
    best["empty"] = min(best["empty"], t_empty())
    best["call"] = min(best["call"], t_call())
aggregate = {k: v / N for k, v in best.items()}

# Line timing, in the same process: line_profiler and ours on the same
# function, 2n + 3 line events per call.
from line_profiler import LineProfiler

def lines_fn(n):
    s = 0
    for i in range(n):
        s += i
    return s

LN = max(N // 10, 1000)
lp = LineProfiler()
lp_wrapped = lp(lines_fn)
ProfileManager.setup(deactivate_profiling=False, use_line_profiler=True)
sp_lines = sp.profile("lines")(lines_fn)
def outside():
    return lines_fn(LN)
best = {k: float("inf") for k in ("plain", "line_profiler", "ours", "outside_on")}
for _ in range(REPEATS):
    for k, f in (("plain", lines_fn), ("line_profiler", lp_wrapped), ("ours", sp_lines)):
        t0 = clock(); f(LN); best[k] = min(best[k], clock() - t0)
    # Code outside the profiled functions, with line mode on.
    t0 = clock(); outside(); best["outside_on"] = min(best["outside_on"], clock() - t0)
lines = {k: v / (2 * LN + 3) for k, v in best.items()}
print(json.dumps({"enabled": enabled, "disabled": disabled, "lines": lines, "aggregate": aggregate}))
'''

# The kinds that record events into a region's buffer: warmed up first.
WARMED = ("region", "sp_deco", "rec_ours", "nvtx_region", "nvtx_deco", "nvtx_rec", "gpu_region")

# One candidate alone, for callgrind: ITER iterations of one statement.
CG_INNER = f"WARMED = {WARMED!r}\n" + r'''
import sys, threading
import scope_profiler as sp
kind, n, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lock = threading.Lock()
reused = sp.region("cg")
def work():
    return None
def noop_decorator(func):
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper
py_wrapped = noop_decorator(work)
sp_wrapped = sp.profile("cg_call")(work)
if kind == "disabled":
    sp.ProfileManager.setup(deactivate_profiling=True)
if kind.startswith("agg_"):
    sp.ProfileManager.setup(aggregation_mode=True)
if kind.startswith("nvtx_"):
    sp.ProfileManager.setup(use_nvtx=True)  # no NVTX tool attached
if kind.startswith("gpu_"):
    # The profiler's own part of --gpu: SCOPE_PROFILER_CUDART names a runtime
    # whose cudaDeviceSynchronize returns at once (tests/e2e/cudart_standin.c).
    sp.ProfileManager.setup(use_gpu=True)
def fcall():
    return None
def heavy(n):
    for _ in range(n):
        fcall()
def loop_rec_plain():
    heavy(n)
def loop_rec_cprofile():
    import cProfile
    p = cProfile.Profile()
    p.enable()
    heavy(n)
    p.disable()
def lines_fn(n):
    s = 0
    for i in range(n):
        s += i
    return s
def loop_lines_plain():
    lines_fn(n)
def loop_lines_lp():
    from line_profiler import LineProfiler
    LineProfiler()(lines_fn)(n)
def loop_lines_ours():
    sp.ProfileManager.setup(use_line_profiler=True)
    sp.profile("lines")(lines_fn)(n)
def loop_rec_ours():
    sp._tracer_configure(False, (), (), sp._foreign_prefixes())
    sp._tracer_start()
    heavy(n)
    sp._tracer_stop_all()
def loop_empty():
    for _ in range(n): pass
def loop_lock():
    for _ in range(n):
        with lock: pass
def loop_region():
    for _ in range(n):
        with reused: pass
def loop_call():
    f = work
    for _ in range(n): f()
def loop_py_deco():
    f = py_wrapped
    for _ in range(n): f()
def loop_sp_deco():
    f = sp_wrapped
    for _ in range(n): f()
loop = {"empty": loop_empty, "lock": loop_lock, "region": loop_region, "disabled": loop_region,
 "agg_region": loop_region, "agg_deco": loop_sp_deco,
 "call": loop_call, "py_deco": loop_py_deco, "sp_deco": loop_sp_deco,
 "rec_plain": loop_rec_plain, "rec_cprofile": loop_rec_cprofile, "rec_ours": loop_rec_ours,
 "lines_plain": loop_lines_plain, "lines_lp": loop_lines_lp, "lines_ours": loop_lines_ours,
 "nvtx_region": loop_region, "nvtx_deco": loop_sp_deco, "nvtx_rec": loop_rec_ours,
 "gpu_region": loop_region}[kind]
if kind in WARMED:
    # The same warm-up in both runs (it cancels out): the region's buffer
    # has grown to its final size, so the loop measures the steady state.
    n, measured = warm, n
    loop()
    n = measured
loop()
sp._reset()  # the count is of the loop, not of finalising its events
'''


# Reading a profile back, beside h5py reading the same two int64 columns.
IO_INNER = r'''
import json, os, sys, tempfile, time
import h5py
import numpy as np
import scope_profiler as sp

clock = time.perf_counter_ns
REPEATS = int(sys.argv[1])
d = tempfile.mkdtemp()

def make(n):
    """A profile of n calls of one region, written by scope-profiler."""
    path = os.path.join(d, f"io{n}.h5")
    sp.ProfileManager.setup(file_path=path, buffer_limit=n + 1)
    r = sp.region("io")
    for _ in range(n):
        with r:
            pass
    sp.ProfileManager.finalize(verbose=False)
    return path

def best(fn):
    t = float("inf")
    for _ in range(REPEATS):
        t0 = clock(); fn(); t = min(t, clock() - t0)
    return t

out = {}
for n in (100_000, 1_000_000):
    path = make(n)
    def h5py_read():
        with h5py.File(path) as f:
            g = f["rank0/events"]        # the one region's calls (format version 2)
            g["start_times"][:], g["end_times"][:]
    ours = best(lambda: sp.read_h5(path))
    peer = best(h5py_read)
    summary = best(lambda: sp.read_h5_summary(path))
    out[n] = {"ours": ours / n, "h5py": peer / n, "summary_ms": summary / 1e6}
print(json.dumps(out))
'''


def run_io(binary, repeats):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "io.py")
        with open(path, "w") as f:
            f.write(IO_INNER)
        proc = subprocess.run([binary, "run", "-q", path, str(repeats)],
                              capture_output=True, text=True, cwd=d)
        if proc.returncode != 0:
            sys.exit(f"bench: io run failed:\n{proc.stderr}")
        return json.loads(proc.stdout)


def run_inner(binary, n, repeats):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "inner.py")
        with open(path, "w") as f:
            f.write(INNER)
        proc = subprocess.run([binary, "run", "-q", "--no-output", "--buffer-limit", str(n + 1),
                               path, str(n), str(repeats)], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"bench: inner run failed:\n{proc.stderr}")
        return json.loads(proc.stdout)


def callgrind_ir(binary, kind, n, warm, limit):
    """Total instructions of one run (the program's, not valgrind's): warm
    calls first where the kind records events, then n."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cg.py")
        with open(path, "w") as f:
            f.write(CG_INNER)
        out = os.path.join(d, "cg.out")
        # A fixed hash seed makes the counts repeat exactly run to run.
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                               binary, "run", "-q", "--no-output", "--buffer-limit", str(limit),
                               path, kind, str(n), str(warm)], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            sys.exit(f"bench: callgrind run failed:\n{proc.stderr[-2000:]}")
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    return int(line.split()[1])
    raise RuntimeError("no callgrind summary")


def callgrind_per_call(binary, kind, n=200_000, small=20_000):
    """Instructions per iteration: the difference of two loop lengths, so
    start-up and finalisation cancel out. In the steady state: buffers
    double from a few events up to buffer_limit, so a warm-up of `warm`
    calls (the same in both runs) first grows the region's buffer to
    buffer_limit, which holds the warm-up and n more."""
    pow2 = 1 << (n + 2).bit_length()          # past n + 2: the cap after warm is the limit
    warm = pow2 + 1
    limit = warm + n + 1
    return (callgrind_ir(binary, kind, n, warm, limit)
            - callgrind_ir(binary, kind, small, warm, limit)) / (n - small)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--callgrind", action="store_true", help="also count instructions per call")
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)

    r = run_inner(args.binary, args.calls, args.repeats)
    e, d, ln, ag = r["enabled"], r["disabled"], r["lines"], r["aggregate"]
    lock = e["lock"] - e["empty"]
    rows = [
        ("with region (reused object)", e["region"] - e["empty"], "empty with on a Lock", lock, 1.0),
        ("with sp.region(name) (lookup)", e["region_lookup"] - e["empty"], "empty with on a Lock", lock, None),
        ("decorated call, overhead", e["sp_deco"] - e["call"], "Python no-op decorator",
         e["py_deco"] - e["call"], 1.0),
        ("disabled: with region", d["region"] - d["empty"], "empty with on a Lock",
         d["lock"] - d["empty"], 0.6),
        ("--recursive, per traced call", e["heavy_ours"] - e["heavy_plain"], "cProfile",
         e["heavy_cprofile"] - e["heavy_plain"], 0.85),
        ("--line-profile, per line event", ln["ours"] - ln["plain"], "line_profiler",
         ln["line_profiler"] - ln["plain"], 0.5),
        ("line mode on: code outside", ln["outside_on"], "the same, plain", ln["plain"], None),
        ("aggregate: with region", ag["agg_region"] - ag["empty"], "time-only with region",
         ag["timed_region"] - ag["empty"], 1.0),
        ("aggregate: decorated call", ag["agg_deco"] - ag["call"], "time-only decorated call",
         ag["timed_deco"] - ag["call"], 1.0),
    ]
    cg = {}
    if args.callgrind:
        if not shutil.which("valgrind"):
            sys.exit("bench: --callgrind needs valgrind (scripts/install-deps.sh installs it)")
        for kind in ("empty", "lock", "region", "disabled", "agg_region", "agg_deco", "call",
                     "py_deco", "sp_deco",
                     "rec_plain", "rec_cprofile", "rec_ours", "lines_plain", "lines_lp",
                     "lines_ours", "nvtx_region", "nvtx_deco", "nvtx_rec"):
            cg[kind] = callgrind_per_call(args.binary, kind)
    if args.json:
        print(json.dumps({"wall_ns": r, "callgrind_ir": cg}, indent=2))
        return

    print(f"scope-profiler per-call overhead, {args.calls} calls x {args.repeats} repeats, "
          f"min of repeats, loop cost subtracted")
    print(f"{'measure':<32}{'ns':>7}  {'peer':<24}{'ns':>7}{'ratio':>8}{'budget':>8}")
    print("-" * 88)
    for name, ours, peer_name, peer, budget in rows:
        ratio = ours / peer if peer > 0 else float("nan")
        b = f"<={budget:.2f}x" if budget else ""
        print(f"{name:<32}{ours:7.1f}  {peer_name:<24}{peer:7.1f}{ratio:7.2f}x{b:>8}")
    print(f"disabled decorator returns the function itself: {d['decorator_returns_function']}")

    io = run_io(args.binary, args.repeats)
    print()
    print("reading a profile back (read_h5 / summary) beside h5py reading the two columns")
    print(f"{'events':>10}{'ours ns/event':>15}{'h5py ns/event':>15}{'ratio':>8}{'summary ms':>12}")
    for n, row in io.items():
        print(f"{int(n):>10}{row['ours']:>15.2f}{row['h5py']:>15.2f}"
              f"{row['ours'] / row['h5py']:>7.2f}x{row['summary_ms']:>12.3f}")
    small, large = io["100000"], io["1000000"]
    print(f"summary-only read, 10x the events: {large['summary_ms'] / small['summary_ms']:.2f}x "
          f"the time (budget <= 1.2x); full read budget <= 1.0x h5py")
    if cg:
        print()
        print("instructions per call (callgrind, loop cost subtracted)")
        pairs = [
            ("with region", cg["region"] - cg["empty"], "with Lock", cg["lock"] - cg["empty"]),
            ("decorated call", cg["sp_deco"] - cg["call"], "Python no-op decorator",
             cg["py_deco"] - cg["call"]),
            ("disabled with region", cg["disabled"] - cg["empty"], "with Lock", cg["lock"] - cg["empty"]),
            ("--recursive, per traced call", cg["rec_ours"] - cg["rec_plain"], "cProfile",
             cg["rec_cprofile"] - cg["rec_plain"]),
            # per loop iteration of lines_fn: two line events
            ("--line-profile, per line event", (cg["lines_ours"] - cg["lines_plain"]) / 2,
             "line_profiler", (cg["lines_lp"] - cg["lines_plain"]) / 2),
            ("aggregate: with region", cg["agg_region"] - cg["empty"], "time-only with region",
             cg["region"] - cg["empty"]),
            ("aggregate: decorated call", cg["agg_deco"] - cg["call"], "time-only decorated",
             cg["sp_deco"] - cg["call"]),
            # --nvtx with no NVTX tool attached: budget <= 1.10x a plain region (issue 29)
            ("--nvtx: with region", cg["nvtx_region"] - cg["empty"], "time-only with region",
             cg["region"] - cg["empty"]),
            ("--nvtx: decorated call", cg["nvtx_deco"] - cg["call"], "time-only decorated",
             cg["sp_deco"] - cg["call"]),
            ("--nvtx: --recursive call", cg["nvtx_rec"] - cg["rec_plain"], "--recursive call",
             cg["rec_ours"] - cg["rec_plain"]),
        ]
        for name, ours, peer_name, peer in pairs:
            print(f"{name:<32}{ours:7.0f}  {peer_name:<24}{peer:7.0f}{ours / peer:7.2f}x")


if __name__ == "__main__":
    main()
