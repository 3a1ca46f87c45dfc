"""A deliberately unbalanced MPI time-step loop (for `mpirun -n N`).

Rank r's "solve" takes (1 + r * IMBALANCE) times as long as rank 0's, so the
merged profile shows a known imbalance: slowest / fastest = 1 + (N-1) * 0.5
with the defaults. Works with mpi4py (Debian's python3-mpi4py) and without:
without it, the ranks do not communicate.

    mpirun -n 4 scope-profiler run examples/mpi_timestep.py
    scope-profiler summary profiling_data.h5
"""
import os
import sys
import time

import scope_profiler as sp

STEPS = int(os.environ.get("STEPS", "20"))
BASE = float(os.environ.get("SOLVE_SECONDS", "0.002"))
IMBALANCE = float(os.environ.get("IMBALANCE", "0.5"))

try:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
except ImportError:
    comm = None
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))


@sp.profile("solve")
def solve():
    time.sleep(BASE * (1 + rank * IMBALANCE))


def exchange(value):
    with sp.region("exchange"):
        return comm.allreduce(value) if comm is not None else value


def main():
    total = 0.0
    for _ in range(STEPS):
        with sp.region("timestep"):
            solve()
            total = exchange(1.0)
    if rank == 0:
        print(f"{STEPS} steps on {size} rank(s), allreduce = {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
