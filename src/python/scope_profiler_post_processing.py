"""scope_profiler.post_processing: the original package's post-processing
command line (its `pproc`), on top of `scope-profiler plot`.

    main(["run_*.h5", "-o", "figures"])
    python3 -c 'from scope_profiler.post_processing import main; main()' FILES -o DIR

FILES are profiles or glob patterns. With -o DIR: `scope-profiler plot`
draws its charts there (SVG, report.html; the executable installed with
the module, or found beside it or on PATH), and this adds what the
original's users read: gantt_plot.png, durations_plot.png (and
durations_plot_METRIC.png for each --metrics asked), speedup_plot.png (several
files), drawn by scope_profiler.plotting_scripts when matplotlib is there,
and region_statistics.json in the original's shape ({"units", "common_regions",
"files": [{"file", "num_ranks", "region_statistics": {name: {"count",
"total", "mean", "min", "max", "std"}}}]}, seconds), in place of plot's own.
--show shows the charts instead. Frozen into the module (frozen.c).
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

import scope_profiler as _sp

__all__ = ["main", "expand_file_patterns", "parse_ranks", "region_statistics"]

METRICS = ("avg", "min", "max", "total")


def expand_file_patterns(patterns):
    """The files the patterns name, in order, each once (a pattern that
    matches nothing is kept as it is, for the reader to say so)."""
    files = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for f in matched or [pattern]:
            if f not in files:
                files.append(f)
    return files


def parse_ranks(spec):
    """"0-3,5" (or a list of such) -> [0, 1, 2, 3, 5]."""
    specs = [spec] if isinstance(spec, str) else list(spec)
    ranks = set()
    for s in specs:
        for part in filter(None, (p.strip() for p in s.split(","))):
            low, dash, high = part.partition("-")
            ranks.update(range(int(low), int(high) + 1) if dash else [int(low)])
    return sorted(ranks)


def _executable():
    """The scope-profiler executable: the one running this (under `run`),
    the one installed with the module or built beside it, or PATH's."""
    try:
        me = os.readlink("/proc/self/exe")
        if os.path.basename(me) == "scope-profiler":
            return me
    except OSError:
        pass
    module = getattr(_sp, "__file__", None)
    if module:
        here = os.path.dirname(os.path.abspath(module))
        for folder in (here, os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin"))):
            path = os.path.join(folder, "scope-profiler")
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return shutil.which("scope-profiler")


def region_statistics(results, include=None, exclude=None, ranks=None):
    """{region: {"count", "total", "mean", "min", "max", "std", "num_ranks"}}
    of one run, seconds, over the selected ranks' calls."""
    import math

    out = {}
    for region in results.get_regions(include=include, exclude=exclude):
        per_rank = [region[r] for r in region.ranks if ranks is None or r in ranks]
        count = sum(r.num_calls for r in per_rank)
        if not per_rank:
            continue
        total = sum(r.total_duration for r in per_rank)
        mean = total / count if count else 0.0
        # The pooled standard deviation of all the calls, from each rank's.
        sq = sum(r.num_calls * (r.std_duration ** 2 + r.mean_duration ** 2)
                 for r in per_rank if r.num_calls)
        std = math.sqrt(max(sq / count - mean * mean, 0.0)) if count else 0.0
        out[region.name] = {"count": count, "total": total, "mean": mean,
                            "min": min(r.min_duration for r in per_rank),
                            "max": max(r.max_duration for r in per_rank),
                            "std": std, "num_ranks": len(per_rank)}
    return out


def _statistics(runs, files, include, exclude, ranks):
    per_file = [region_statistics(r, include, exclude, ranks) for r in runs]
    common = sorted(set.intersection(*(set(s) for s in per_file))) if per_file else []
    return {"units": {"durations": "seconds"}, "common_regions": common,
            "files": [{"file": f, "num_ranks": r.num_ranks, "region_statistics": s}
                      for f, r, s in zip(files, runs, per_file)]}


def _parser():
    p = argparse.ArgumentParser(
        prog="scope_profiler.post_processing",
        description="Charts and region statistics of profiles (scope-profiler plot, and "
                    "the original package's PNG charts and region_statistics.json).")
    p.add_argument("files", nargs="+", help="profiles (HDF5) or glob patterns")
    p.add_argument("-o", "--output", help="folder for the charts and region_statistics.json")
    p.add_argument("--show", action="store_true", help="show the charts (matplotlib)")
    p.add_argument("-i", "--include", nargs="+", help="regions to include (patterns)")
    p.add_argument("-e", "--exclude", nargs="+", help="regions to exclude (patterns)")
    p.add_argument("-r", "--ranks", nargs="+", help="ranks, as 0-3,5")
    p.add_argument("-m", "--metrics", nargs="+", choices=METRICS,
                   help="duration statistics to plot (default: avg)")
    p.add_argument("--cmap", help="accepted for the original's scripts; the charts use "
                                  "scope-profiler's own colours")
    return p


def _pngs(runs, out, args, ranks):
    """The original's PNG charts in out (or shown), through plotting_scripts."""
    from scope_profiler import plotting_scripts as ps

    def at(name):
        return os.path.join(out, name) if out else None

    sel = {"include": args.include, "exclude": args.exclude}
    ps.plot_gantt(runs, filepath=at("gantt_plot.png"), show=args.show, ranks=ranks, **sel)
    metrics = args.metrics or ["avg"]
    ps.plot_durations(runs, filepath=at("durations_plot.png"), show=args.show,
                      metric=metrics[0], ranks=ranks, **sel)
    for metric in args.metrics or []:
        ps.plot_durations(runs, filepath=at(f"durations_plot_{metric}.png"), show=False,
                          metric=metric, ranks=ranks, **sel)
    if len(runs) > 1:
        ps.plot_speedup(runs, filepath=at("speedup_plot.png"), show=args.show, **sel)


def main(argv=None):
    """The command line: main(["a.h5", "b.h5", "-o", "figures"]). Returns 0;
    SystemExit for a usage error or when `scope-profiler plot` fails."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    files = expand_file_patterns(args.files)
    ranks = parse_ranks(args.ranks) if args.ranks else None
    out = args.output
    if out:
        os.makedirs(out, exist_ok=True)
        tool = _executable()
        if tool is None:
            sys.stderr.write("scope_profiler.post_processing: no scope-profiler executable "
                             "(installed with the module, or on PATH): no SVG charts or "
                             "report.html\n")
        else:
            cmd = [tool, "plot", *files, "-o", out]
            for pattern in args.include or []:
                cmd += ["--include", pattern]
            for pattern in args.exclude or []:
                cmd += ["--exclude", pattern]
            if ranks is not None:
                cmd += ["--ranks", ",".join(map(str, ranks))]
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if proc.returncode != 0:
                raise SystemExit(proc.returncode)
    runs = [_sp.read_h5(f) for f in files]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if args.show:
            raise
        sys.stderr.write("scope_profiler.post_processing: no matplotlib: no PNG charts\n")
    else:
        _pngs(runs, out, args, ranks)
    if out:
        with open(os.path.join(out, "region_statistics.json"), "w", encoding="utf-8") as f:
            json.dump(_statistics(runs, files, args.include, args.exclude, ranks), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
