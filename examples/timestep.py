"""A toy time-stepping simulation instrumented with scope_profiler regions.

    scope-profiler run examples/timestep.py [--steps N]

Runs unchanged under plain python too when the original scope_profiler
package is installed; under `scope-profiler run` the regions record without
any setup() call.
"""
import argparse
import math

import scope_profiler as sp


@sp.profile("assemble")
def assemble(n, t):
    return [math.sin(0.001 * i + t) for i in range(n)]


@sp.profile("solve")
def solve(rhs, iterations):
    x = [0.0] * len(rhs)
    for _ in range(iterations):
        x = [0.5 * (xi + bi) for xi, bi in zip(x, rhs)]
    return sum(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--size", type=int, default=20000)
    args = parser.parse_args()

    with sp.region("setup"):
        state = [0.0] * args.size

    energy = 0.0
    for step in range(args.steps):
        with sp.region("timestep"):
            rhs = assemble(args.size, step * 0.1)
            energy = solve(rhs, iterations=3 + step % 3)
        if step % 10 == 9:
            with sp.region("checkpoint"):
                state = list(rhs)
    print(f"final energy {energy:.6f} after {args.steps} steps ({len(state)} cells)")


if __name__ == "__main__":
    main()
