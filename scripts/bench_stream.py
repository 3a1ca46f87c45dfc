#!/usr/bin/env python3
"""`make bench`: runs of hours (issue 28), the budgets of streaming to disk,
each figure measured in this invocation:

  recording per call   instructions per `with region:` call (callgrind, an
                       empty script's run subtracted), streaming (a 1 MiB
                       budget: blocks go to the writer all along) against the
                       same run kept in memory (--memory-budget 0); <= 1.05x
  peak memory          a CALLS-call run with the default budget (64 MiB): peak
                       resident memory (ru_maxrss) above a 100-call run's;
                       <= 1.3x the budget
  bytes per call       the finished file's size / its calls (16 as in memory)
  writer throughput    calls written per second of the writer thread's work
                       against calls recorded per second of the script's one
                       thread; >= 5x
  end of the run       from the script's last line to the process's exit;
                       < 1 s whatever the run's length

Benchmarks report, they do not fail: the exit status is 0 whatever the
figures; 1 when a run itself fails.

    python3 scripts/bench_stream.py --binary build/scope-profiler [--calls 100000000]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

LOOP = """
import sys, time
import scope_profiler as sp
n = int(sys.argv[1])
r = sp.region("step")
t0 = time.monotonic()
for _ in range(n):
    with r:
        pass
t1 = time.monotonic()
sys.stderr.write(f"recorded {n} {t1 - t0:.6f} {t1:.6f}\\n")
"""

LAUNCH = """
import os, sys, time
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), ru.ru_maxrss, f"{time.monotonic():.6f}")
"""


def callgrind(argv, cwd):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + argv,
                              cwd=cwd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"bench_stream: {' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
        m = re.search(r"Collected : (\d+)", proc.stderr)
        return int(m.group(1))


def launched(argv, cwd):
    """(exit status, peak RSS bytes, exit time, stderr) of argv."""
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCH] + argv, cwd=cwd,
                          capture_output=True, text=True)
    status, rss, t = proc.stdout.split()
    if int(status) != 0:
        sys.exit(f"bench_stream: {' '.join(argv)} exited {status}:\n{proc.stderr[-2000:]}")
    return int(status), int(rss) * 1024, float(t), proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--calls", type=int, default=100_000_000)
    ap.add_argument("--cg-calls", type=int, default=200_000)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, "loop.py")
        with open(script, "w") as f:
            f.write(LOOP)
        rows = []
        if shutil.which("valgrind"):
            n = args.cg_calls
            empty = callgrind([binary, "run", "-q", "-o", "e.h5", script, "0"], work)
            mem = callgrind([binary, "run", "-q", "--memory-budget", "0", "-o", "m.h5", script, str(n)], work)
            streamed = callgrind([binary, "run", "-q", "--memory-budget", "1M", "-o", "s.h5", script, str(n)],
                                 work)
            a, b = (mem - empty) / n, (streamed - empty) / n
            rows.append(("recording per call, instructions", f"{b:.1f} streamed, {a:.1f} in memory",
                         f"{b / a:.3f}x", "<= 1.05x"))
        env_stats = dict(os.environ, SCOPE_PROFILER_STREAM_STATS="1")
        os.environ.update(env_stats)
        _, base, _, _ = launched([binary, "run", "-q", "-o", "b.h5", script, "100"], work)
        _, peak, t_exit, err = launched([binary, "run", "-q", "-o", "big.h5", script, str(args.calls)], work)
        rec = re.search(r"recorded (\d+) ([\d.]+) ([\d.]+)", err)
        wr = re.search(r"stream: (\d+) calls written in ([\d.]+) s", err)
        budget = 64 << 20
        rows.append(("peak memory above a 100-call run", f"{(peak - base) / 2**20:.1f} MiB of a "
                     f"{budget >> 20} MiB budget", f"{(peak - base) / budget:.2f}x", "<= 1.3x"))
        size = os.path.getsize(os.path.join(work, "big.h5"))
        rows.append(("bytes per call, finished file", f"{size / args.calls:.2f}", "", "16 (in memory: 16)"))
        if rec and wr:
            rec_rate = int(rec.group(1)) / float(rec.group(2))
            wr_rate = int(wr.group(1)) / max(float(wr.group(2)), 1e-9)
            rows.append(("writer throughput / recording rate",
                         f"{wr_rate / 1e6:.1f} M/s / {rec_rate / 1e6:.1f} M/s", f"{wr_rate / rec_rate:.1f}x",
                         ">= 5x"))
            rows.append((f"end of a {args.calls:.0e}-call run", f"{t_exit - float(rec.group(3)):.3f} s", "",
                         "< 1 s"))
    print(f"{'measure':36} {'figure':44} {'ratio':>8}  budget")
    for name, fig, ratio, budget in rows:
        print(f"{name:36} {fig:44} {ratio:>8}  {budget}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
