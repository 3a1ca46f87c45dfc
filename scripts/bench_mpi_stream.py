#!/usr/bin/env python3
"""Streaming under MPI (issue 28): every rank streams to a file of its own and
rank 0 merges them at the end. Each figure is measured in this invocation,
on real `mpirun` (oversubscribed where the ranks outnumber the cores):

  per rank       peak resident memory (ru_maxrss) of each rank of a run of
                 CALLS calls per rank and a BUDGET memory budget, above a
                 100-call run's; its VmHWM after a quarter of its calls and
                 after all of them (flat: recording is bounded)
  rank 0's end   rank 0's peak less its VmHWM when its script ended: what
                 finishing its own file and merging every rank's into OUT
                 added to its memory
  merge          rank 0's merge of N ranks x CALLS calls: its time
                 (SCOPE_PROFILER_STREAM_STATS) and OUT's size
  recover        a job whose every rank was killed (SIGKILL) after CALLS
                 calls: `scope-profiler recover`'s time and peak memory
                 merging their partial files

Benchmarks report, they do not fail: the exit status is 0 whatever the
figures; 1 when a run itself fails.

    python3 scripts/bench_mpi_stream.py --binary build/scope-profiler [--ranks 2,4,8]
        [--calls 4000000] [--budget 8M]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

TICK = """
import sys
import scope_profiler as sp
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
n = int(sys.argv[1])
r = sp.region("tick")
for _ in range(n // 4):
    with r:
        pass
quarter = hwm()
for _ in range(n - n // 4):
    with r:
        pass
print("hwm", quarter, hwm(), flush=True)
"""

# Every rank records, waits for a flush, and is killed (SIGTERM from mpirun,
# once a rank died, is ignored: every rank leaves its partial file).
KILLED = """
import os, signal, sys, time
import scope_profiler as sp
signal.signal(signal.SIGTERM, signal.SIG_IGN)
r = sp.region("tick")
for _ in range(int(sys.argv[1])):
    with r:
        pass
time.sleep(2)
os.kill(os.getpid(), signal.SIGKILL)
"""

# argv: log prefix, command...: the rank's output to prefix + rank; prints
# the rank, its exit status and ru_maxrss (KiB).
LAUNCH = """
import os, sys
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "x")
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1] + rank, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
print(rank, os.waitstatus_to_exitcode(status), ru.ru_maxrss, flush=True)
"""


def mpirun(n, argv, cwd, env=None):
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return subprocess.run(["mpirun", *root, "--oversubscribe", "-n", str(n), *argv], cwd=cwd,
                          capture_output=True, text=True, env=dict(os.environ, **(env or {})))


def ranks_run(binary, n, calls, budget, d, tag):
    """{rank: (peak KiB, hwm after a quarter KiB, hwm at the end KiB, log)}."""
    proc = mpirun(n, [sys.executable, "-I", "-S", "launch.py", f"{tag}.", binary, "run", "-q",
                      "--memory-budget", budget, "-o", f"{tag}.h5", "tick.py", str(calls)], d,
                  env={"SCOPE_PROFILER_STREAM_STATS": "1"})
    if proc.returncode != 0:
        sys.exit(f"bench_mpi_stream: the run failed: {proc.stdout}{proc.stderr}")
    out = {}
    for line in proc.stdout.splitlines():
        rank, status, peak = line.split()
        log = open(os.path.join(d, f"{tag}.{rank}")).read()
        if int(status) != 0:
            sys.exit(f"bench_mpi_stream: rank {rank} failed: {log}")
        q, w = map(int, log.split("hwm ")[1].split()[:2])
        out[int(rank)] = (int(peak), q, w, log)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--calls", type=int, default=4_000_000, help="calls per rank")
    ap.add_argument("--budget", default="8M")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    print(f"streaming under MPI: {a.calls} calls per rank, --memory-budget {a.budget}, "
          f"{os.cpu_count()} cores")
    print(f"{'ranks':>5} {'peak-base MiB/rank':>19} {'hwm growth MiB':>15} {'rank 0 end MiB':>15} "
          f"{'merge s':>8} {'OUT MB':>7} {'recover s':>10} {'recover MiB':>12}")
    for n in map(int, a.ranks.split(",")):
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("tick.py", TICK), ("launch.py", LAUNCH), ("killed.py", KILLED)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            base = ranks_run(binary, n, 100, a.budget, d, "base")
            big = ranks_run(binary, n, a.calls, a.budget, d, "big")
            above = max((big[r][0] - base[r][0]) / 1024 for r in big)
            growth = max((big[r][2] - big[r][1]) / 1024 for r in big)
            end0 = (big[0][0] - big[0][2]) / 1024
            m = re.search(r"merge: \d+ ranks, (\d+) calls in ([\d.]+) s", big[0][3])
            merge_s = float(m.group(2)) if m else float("nan")
            size = os.path.getsize(os.path.join(d, "big.h5")) / 1e6
            # Every rank killed: recover merges their partial files.
            mpirun(n, [binary, "run", "-q", "--flush-interval", "0.2", "--memory-budget", a.budget,
                       "-o", "k.h5", "killed.py", str(a.calls)], d)
            t0 = time.monotonic()
            rec = subprocess.run([sys.executable, "-I", "-S", "launch.py", "rec.", binary, "recover", "k.h5"],
                                 cwd=d, capture_output=True, text=True)
            rec_s = time.monotonic() - t0
            _, status, rec_peak = rec.stdout.split()
            if int(status) != 0:
                sys.exit(f"bench_mpi_stream: recover failed: {open(os.path.join(d, 'rec.x')).read()}")
            print(f"{n:>5} {above:>19.1f} {growth:>15.1f} {end0:>15.1f} {merge_s:>8.3f} {size:>7.0f} "
                  f"{rec_s:>10.2f} {int(rec_peak) / 1024:>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
