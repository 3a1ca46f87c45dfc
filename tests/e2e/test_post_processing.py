"""The original package's post-processing API, as its scripts and tests call it:
scope_profiler.plotting_scripts (plot_gantt, plot_flame, plot_durations,
plot_speedup with filepath=, show=, verbose=, drawn through the read API's charts)
and scope_profiler.post_processing.main (its `pproc` command line: FILES or glob
patterns, -o DIR; on top of `scope-profiler plot`). Run in plain python with the
extension module built beside the executable, and under `run`."""
import json
import os
import subprocess
import sys
import sysconfig
import textwrap

import h5py
import numpy as np
import pytest

from conftest import BINARY, sanitizer_env, shell_env

BUILD = os.path.dirname(os.path.abspath(BINARY))
MODULE = os.path.join(BUILD, "scope_profiler" + sysconfig.get_config_var("EXT_SUFFIX"))
pytestmark = [pytest.mark.same_python, pytest.mark.script_imports("matplotlib")]


def write_runs(folder, ranks_per_file, setup_ns, solve_ns):
    """One hand-made profile per entry (the seed's layout: start_times and
    end_times only): each rank one call of "setup", then one of "solve"."""
    paths = []
    for n, scale in ranks_per_file:
        path = folder / f"run_{n}.h5"
        with h5py.File(path, "w") as f:
            for rank in range(n):
                g = f.create_group(f"rank{rank}/regions")
                for name, start, length in (("setup", 0, setup_ns // scale),
                                            ("solve", 20, solve_ns // scale)):
                    r = g.create_group(name)
                    r.create_dataset("start_times", data=np.array([start], dtype=np.int64))
                    r.create_dataset("end_times", data=np.array([start + length], dtype=np.int64))
        paths.append(path)
    return paths


def python(folder, text, *args):
    """python3 -c text in folder, the module from the build; its stdout."""
    env = dict(shell_env(), PYTHONPATH=BUILD, MPLBACKEND="Agg")
    env.update(sanitizer_env(MODULE))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(text), *args], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def nonempty(path):
    return path.exists() and path.stat().st_size > 0


def test_plot_functions_save_where_filepath_says(tmp_path):
    write_runs(tmp_path, [(1, 1), (2, 2), (4, 4)], 100, 200)
    out = python(tmp_path, """
        from scope_profiler.h5reader import ProfilingH5Reader
        from scope_profiler.plotting_scripts import (plot_durations, plot_flame, plot_gantt,
                                                     plot_speedup)
        runs = [ProfilingH5Reader(f"run_{n}.h5") for n in (1, 2, 4)]
        plot_gantt(runs[:2], filepath="gantt.png", show=False, verbose=False)
        plot_durations(runs[:2], filepath="durations.png", show=False, verbose=True)
        plot_speedup(runs, filepath="speedup.png", show=False, verbose=False)
        plot_flame("run_2.h5", filepath="flame.svg", show=False, verbose=False)
        fig = plot_durations(runs[0], metric="total")       # no file: the figure
        print("axes:", len(fig.axes))
        """)
    for name in ("gantt.png", "durations.png", "speedup.png", "flame.svg"):
        assert nonempty(tmp_path / name), name
    assert (tmp_path / "gantt.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "flame.svg").read_text().lstrip().startswith("<?xml")
    # verbose says where it went; the others say nothing.
    assert "durations.png" in out and "gantt.png" not in out
    assert "axes: 1" in out


def test_post_processing_main_writes_the_originals_outputs(tmp_path):
    write_runs(tmp_path, [(1, 1), (2, 2), (4, 4)], 100, 200)
    python(tmp_path, """
        from scope_profiler.post_processing import main
        assert main(["run_1.h5", "run_2.h5", "run_4.h5", "-o", "figures"]) == 0
        """)
    figures = tmp_path / "figures"
    for name in ("gantt_plot.png", "durations_plot.png", "speedup_plot.png"):
        assert nonempty(figures / name), name
    # On top of `scope-profiler plot`: its charts and report are there too.
    assert nonempty(figures / "report.html") and nonempty(figures / "gantt.svg")
    stats = json.loads((figures / "region_statistics.json").read_text())
    assert stats["units"]["durations"] == "seconds"
    assert stats["common_regions"] == ["setup", "solve"]
    assert [f["region_statistics"]["setup"]["count"] for f in stats["files"]] == [1, 2, 4]
    assert [f["num_ranks"] for f in stats["files"]] == [1, 2, 4]
    solve = stats["files"][1]["region_statistics"]["solve"]
    assert solve["total"] == pytest.approx(2 * 100e-9)
    assert solve["mean"] == solve["min"] == solve["max"] == pytest.approx(100e-9)


def test_post_processing_patterns_metrics_and_selection(tmp_path):
    write_runs(tmp_path, [(1, 1), (2, 2)], 100, 200)
    python(tmp_path, """
        import sys
        from scope_profiler.post_processing import main
        main()
        """, "run_*.h5", "-o", "out", "-m", "avg", "max", "--include", "solve", "--ranks", "0")
    out = tmp_path / "out"
    for name in ("durations_plot.png", "durations_plot_avg.png", "durations_plot_max.png",
                 "speedup_plot.png"):
        assert nonempty(out / name), name
    stats = json.loads((out / "region_statistics.json").read_text())
    assert [f["file"] for f in stats["files"]] == ["run_1.h5", "run_2.h5"]
    assert stats["common_regions"] == ["solve"]
    assert [f["region_statistics"]["solve"]["count"] for f in stats["files"]] == [1, 1]


def test_under_run(sp):
    write_runs(sp.tmp, [(1, 1), (2, 2)], 100, 200)
    script = sp.script("""
        from scope_profiler.post_processing import main
        main(["run_1.h5", "run_2.h5", "-o", "figs"])
        """)
    proc = sp("run", "-q", "--no-output", script, env={"MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stderr
    assert nonempty(sp.tmp / "figs" / "report.html")
    assert nonempty(sp.tmp / "figs" / "durations_plot.png")
