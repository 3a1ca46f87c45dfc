#!/usr/bin/env python3
"""`make bench`, storage part: what compression costs and saves.

A timestep loop (three nested regions per step) is recorded and finalized
with each --compression setting in turn, alternating the settings, and the
minimum of the repeats is kept (noise only ever adds time). For each setting
and size it reports the write cost (finalize, ns per event), the file size
(bytes per event) and the read cost of the file (read_h5 loading every
event, and h5py reading the two columns of every region), side by side
with no compression.

    python3 scripts/bench_storage.py --binary build/scope-profiler [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# Runs under `scope-profiler run -q`: setup()/finalize() per measurement.
INNER = r'''
import json, os, sys, time
import h5py
import scope_profiler as sp

clock = time.perf_counter_ns
sizes = [int(n) for n in sys.argv[1].split(",")]
settings = sys.argv[2].split(",")
repeats = int(sys.argv[3])
d = sys.argv[4]

def record(n, setting):
    """n events of a timestep loop, then finalize; returns the path and the
    write's ns (finalize: the call tree, the stats, the file)."""
    path = os.path.join(d, f"s{n}_{setting}.h5")
    sp.ProfileManager.setup(file_path=path, buffer_limit=n + 16, hdf5_compression=setting)
    step, assemble, solve = sp.region("timestep"), sp.region("assemble"), sp.region("solve")
    x = 0
    for i in range(n // 3):
        with step:
            with assemble:
                x += i
            with solve:
                x -= 1
    t0 = clock()
    sp.ProfileManager.finalize(verbose=False)
    return path, clock() - t0

def h5py_read(path):
    with h5py.File(path) as f:
        g = f["rank0/events"]            # every region's calls (format version 2)
        g["start_times"][:], g["end_times"][:]

out = {}
for n in sizes:
    events = 3 * (n // 3)
    best = {s: {"write": float("inf"), "read": float("inf"), "h5py": float("inf")} for s in settings}
    for _ in range(repeats):
        for s in settings:          # alternate the settings: slow phases hit all of them
            path, w = record(n, s)
            t0 = clock(); sp.read_h5(path); r = clock() - t0
            t0 = clock(); h5py_read(path); h = clock() - t0
            b = best[s]
            b["write"], b["read"], b["h5py"] = min(b["write"], w), min(b["read"], r), min(b["h5py"], h)
            b["bytes"] = os.path.getsize(path)
            os.unlink(path)
    out[n] = {s: {"write_ns": b["write"] / events, "read_ns": b["read"] / events,
                  "h5py_ns": b["h5py"] / events, "bytes": b["bytes"] / events}
              for s, b in best.items()}
print(json.dumps(out))
'''


def run_inner(binary, sizes, settings, repeats):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "storage.py")
        with open(path, "w") as f:
            f.write(INNER)
        proc = subprocess.run([binary, "run", "-q", path, ",".join(map(str, sizes)),
                               ",".join(settings), str(repeats), d],
                              capture_output=True, text=True, cwd=d)
        if proc.returncode != 0:
            sys.exit(f"bench_storage: run failed:\n{proc.stderr}")
        return json.loads(proc.stdout.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--sizes", default="100000,1000000", help="events per measurement")
    ap.add_argument("--settings", default="none,auto,gzip=1,gzip=9",
                    help="--compression values to compare; the first is the baseline")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = ap.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    settings = args.settings.split(",")
    r = run_inner(os.path.abspath(args.binary), sizes, settings, args.repeats)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    base = settings[0]
    print(f"storage: a timestep loop written with each compression setting, min of "
          f"{args.repeats} repeats; x = ratio to {base}")
    print(f"{'events':>9} {'setting':<8}{'write ns/ev':>12}{'x':>7}{'bytes/ev':>10}{'x':>7}"
          f"{'read ns/ev':>12}{'x':>7}{'h5py ns/ev':>12}")
    print("-" * 84)
    for n in sizes:
        rows = r[str(n)]
        b = rows[base]
        for s in settings:
            row = rows[s]
            print(f"{n:>9} {s:<8}{row['write_ns']:>12.1f}{row['write_ns'] / b['write_ns']:>6.1f}x"
                  f"{row['bytes']:>10.2f}{row['bytes'] / b['bytes']:>6.2f}x"
                  f"{row['read_ns']:>12.1f}{row['read_ns'] / b['read_ns']:>6.1f}x{row['h5py_ns']:>12.1f}")
    print("budgets (README.md, Performance): <= 16.5 bytes/event uncompressed, <= 4 compressed "
          "on a timestep loop")


if __name__ == "__main__":
    main()
