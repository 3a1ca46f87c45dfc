#!/usr/bin/env python3
"""`make bench`, MPI part: the cost of the collective finalize per rank.

Every rank records the same events (EVENTS per rank, in two regions), all
ranks meet in a barrier, then each times `finalize()`: packing, the transfer
to rank 0 and rank 0 writing every rank into the one file. Rank 0's time is
the job's (it finishes last). The per-rank cost is that time divided by the
number of ranks; it should not grow with the number of ranks.

On this 2-core machine the ranks are oversubscribed (mpirun --oversubscribe):
the work that runs in parallel on a real cluster (each rank building its call
tree and packing its buffer) shares two cores, so it too costs N/2 times one
rank's, which is again linear in N. What would not be linear is ranks
spinning while they wait their turn: ours sleep. The minimum of several jobs
is kept per rank count.

    python3 scripts/bench_mpi.py --binary build/scope-profiler [--events 100000]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

INNER = r'''
import json, sys, time
import scope_profiler as sp
from mpi4py import MPI

EVENTS = int(sys.argv[1])
comm = MPI.COMM_WORLD
sp.setup(verbose=False)
a, b = sp.region("step"), sp.region("solve")
for _ in range(EVENTS // 2):
    with a:
        with b:
            pass
comm.Barrier()
t0 = time.perf_counter_ns()
sp.finalize()
t1 = time.perf_counter_ns()
if comm.rank == 0:
    print(json.dumps({"finalize_ns": t1 - t0, "size": comm.size}))
'''


def one_job(binary, ranks, events, folder):
    script = os.path.join(folder, "mpi_finalize.py")
    out = os.path.join(folder, f"mpi_{ranks}.h5")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(ranks),
           binary, "run", "-q", "-o", out, script, str(events)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"bench_mpi: {ranks} ranks failed:\n{proc.stderr}")
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    size = os.path.getsize(out)
    os.unlink(out)
    return doc["finalize_ns"], size


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--events", type=int, default=100_000, help="events per rank")
    ap.add_argument("--jobs", type=int, default=3, help="jobs per rank count (minimum kept)")
    ap.add_argument("--ranks", default="4,8,16,32")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("bench_mpi: mpirun not found (scripts/install-deps.sh installs Open MPI)")
    counts = [int(x) for x in args.ranks.split(",")]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "mpi_finalize.py"), "w") as f:
            f.write(textwrap.dedent(INNER))
        for _ in range(args.jobs):  # rank counts alternate: slow phases hit all
            for n in counts:
                ns, size = one_job(os.path.abspath(args.binary), n, args.events, folder)
                best = rows.get(n)
                if best is None or ns < best[0]:
                    rows[n] = (ns, size)
    if args.json:
        print(json.dumps({str(n): {"finalize_ns": ns, "bytes": size} for n, (ns, size) in rows.items()}))
        return
    base = rows[counts[0]][0] / counts[0]
    print(f"MPI finalize (collective write to one file), {args.events} events per rank, "
          f"min of {args.jobs} jobs, oversubscribed on {os.cpu_count()} cores")
    print(f"{'ranks':>6} {'finalize ms':>12} {'per rank ms':>12} {'ns/event':>9} {'file MB':>8} "
          f"{'vs ' + str(counts[0]) + ' ranks':>12}")
    print("-" * 64)
    for n in counts:
        ns, size = rows[n]
        per = ns / n
        print(f"{n:>6} {ns / 1e6:>12.1f} {per / 1e6:>12.2f} {per / args.events:>9.2f} "
              f"{size / 1e6:>8.1f} {per / base:>11.2f}x")
    worst = max(rows[n][0] / n for n in counts) / base
    print(f"per-rank cost, largest / {counts[0]} ranks: {worst:.2f}x (budget <= 1.3x)")


if __name__ == "__main__":
    main()
