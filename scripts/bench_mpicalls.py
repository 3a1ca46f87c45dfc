#!/usr/bin/env python3
"""`make bench`, --mpi-calls part: what intercepting an MPI call costs.

A small C library (built here, linked against libmpi as a C extension is)
times a loop of a cheap MPI call, MPI_Test on MPI_REQUEST_NULL, three ways
in one process: through the MPI_Test the program resolves to (the
executable's wrapper), and through PMPI_Test, the library's own entry that
the wrapper calls. The script runs under `scope-profiler run` on one rank
(mpirun -n 1), once without --mpi-calls and once with it, side by side:

    off: MPI_Test - PMPI_Test   (the wrapper's one branch; every run pays it)
    on:  MPI_Test - PMPI_Test   (two clock reads, a lock, one event recorded)

and, as the floor of any timing, PMPI_Test between two clock_gettime calls
(the same clock as the wrapper's) minus PMPI_Test.

Both are differences measured in one process, each the minimum of several
rounds; the budget is 100 ns per call over the call itself.

    python3 scripts/bench_mpicalls.py --binary build/scope-profiler [--calls 1000000]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

LIB = r'''
#include <mpi.h>
#include <time.h>
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}
/* ns per call of n MPI_Test on a null request; how: 1 PMPI_Test, 2
 * PMPI_Test between two clock reads (what the wrapper's timing alone costs). */
double loop(long n, int how)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int flag;
    volatile double sink = 0;
    double t0 = now();
    if (how == 1)
        for (long i = 0; i < n; i++)
            PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    else if (how == 2)
        for (long i = 0; i < n; i++) {
            double a = now();
            PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            sink += now() - a;
        }
    else
        for (long i = 0; i < n; i++)
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    return (now() - t0) / n;
}
'''

SCRIPT = r'''
import ctypes, json, os, sys
from mpi4py import MPI
lib = ctypes.CDLL(os.path.abspath(sys.argv[1]))
lib.loop.restype = ctypes.c_double
lib.loop.argtypes = [ctypes.c_long, ctypes.c_int]
n, rounds = int(sys.argv[2]), int(sys.argv[3])
best = {"mpi": float("inf"), "pmpi": float("inf"), "clocks": float("inf")}
for _ in range(rounds):           # interleaved: a slow phase hits all
    best["pmpi"] = min(best["pmpi"], lib.loop(n, 1))
    best["clocks"] = min(best["clocks"], lib.loop(n, 2))
    best["mpi"] = min(best["mpi"], lib.loop(n, 0))
print(json.dumps(best))
'''


def run(binary, folder, on, calls, rounds):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "1", binary, "run", "-q",
           "--no-output", *(["--mpi-calls"] if on else []), os.path.join(folder, "loop.py"),
           os.path.join(folder, "libloop.so"), str(calls), str(rounds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=folder)
    if proc.returncode != 0:
        sys.exit(f"bench_mpicalls: the run failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--calls", type=int, default=1_000_000, help="calls per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not shutil.which("mpirun") or not shutil.which("pkg-config"):
        sys.exit("bench_mpicalls: mpirun and pkg-config are needed (scripts/install-deps.sh)")
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "loop.c"), "w") as f:
            f.write(LIB)
        with open(os.path.join(folder, "loop.py"), "w") as f:
            f.write(textwrap.dedent(SCRIPT))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "ompi-c"], capture_output=True,
                               text=True, check=True).stdout.split()
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", os.path.join(folder, "libloop.so"),
                        os.path.join(folder, "loop.c"), *flags], check=True)
        off = run(binary, folder, False, args.calls, args.rounds)
        on = run(binary, folder, True, args.calls, args.rounds)
    rows = {"off": off, "on": on}
    if args.json:
        print(json.dumps(rows))
        return
    print(f"--mpi-calls: cost per intercepted call (MPI_Test on MPI_REQUEST_NULL, {args.calls} calls, "
          f"min of {args.rounds} rounds, mpirun -n 1)")
    print(f"{'mode':>5} {'PMPI_Test ns':>13} {'MPI_Test ns':>12} {'overhead ns':>12}")
    print("-" * 45)
    for mode, r in rows.items():
        print(f"{mode:>5} {r['pmpi']:>13.1f} {r['mpi']:>12.1f} {r['mpi'] - r['pmpi']:>12.1f}")
    print(f"with --mpi-calls: {on['mpi'] - on['pmpi']:.1f} ns per call over the call itself "
          f"(budget <= 100 ns), of which the two clock reads alone take "
          f"{on['clocks'] - on['pmpi']:.1f} ns here; without: {off['mpi'] - off['pmpi']:.1f} ns")


if __name__ == "__main__":
    main()
