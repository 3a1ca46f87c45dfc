"""scope_profiler.plotting_scripts: the original package's plot functions.

plot_gantt, plot_flame, plot_durations and plot_speedup as its scripts call
them: the runs first (a ProfilingResults, a ProfilingH5Reader, a file path,
or a list of them), then filepath= (save the figure there, the format from
its suffix: .png, .svg, .pdf), show= (plt.show() it) and verbose= (say where
it went). The drawing is scope_profiler's own charts (scope_profiler._charts,
the plot_* functions of the read API, whose lanes, axes and statistics come
from the report layer as `scope-profiler plot` draws them); the other
keywords go to those. Each returns the matplotlib Figure (closed when
neither shown nor asked for: filepath given and show=False).
Frozen into the module (frozen.c), imported on first use.
"""

from scope_profiler import _charts

__all__ = ["plot_gantt", "plot_flame", "plot_durations", "plot_speedup"]


def _runs(readers):
    """The runs as a list of ProfilingResults (paths read)."""
    return _charts._as_results_list(readers)


def _finish(fig, filepath, show, verbose, what):
    """Saves, shows and says, as the original's plot functions do."""
    plt = _charts._pyplot(what)
    if filepath is not None:
        fig.savefig(filepath, bbox_inches="tight")
        if verbose:
            print(f"scope_profiler: {what} saved to {filepath}")
    if show:
        plt.show()
    elif filepath is not None:
        plt.close(fig)
    return fig


def _stacked(runs, draw, what, height):
    """One figure, the chart of each run on an axes of its own, one below
    the other (the original draws several runs of a Gantt chart this way)."""
    if len(runs) == 1:
        return draw(runs[0], None)
    plt = _charts._pyplot(what)
    fig, axes = plt.subplots(len(runs), 1, figsize=(10, height * len(runs)), squeeze=False)
    for run, ax in zip(runs, axes[:, 0]):
        draw(run, ax)
    fig.tight_layout()
    return fig


def plot_gantt(readers, filepath=None, show=False, verbose=False, **kwargs):
    """The Gantt chart of each run (ranks x regions against time), one
    below the other. kwargs: ranks, include, exclude, title, columns (see
    scope_profiler.plot_gantt)."""
    runs = _runs(readers)
    fig = _stacked(runs, lambda r, ax: _charts.plot_gantt(r, ax=ax, **kwargs), "plot_gantt", 3.5)
    return _finish(fig, filepath, show, verbose, "plot_gantt")


def plot_flame(readers, filepath=None, show=False, verbose=False, rank=0, **kwargs):
    """The flame (icicle) chart of one rank of each run, one below the
    other. kwargs: include, exclude, title, columns, min_label_width."""
    runs = _runs(readers)
    fig = _stacked(runs, lambda r, ax: _charts.plot_flame(r, rank=rank, ax=ax, **kwargs),
                   "plot_flame", 3.5)
    return _finish(fig, filepath, show, verbose, "plot_flame")


def plot_durations(readers, filepath=None, show=False, verbose=False, metric="avg", **kwargs):
    """Region durations as bars, the runs side by side. metric: "avg",
    "min", "max" or "total"; kwargs: ranks, include, exclude, labels, title."""
    fig = _charts.plot_durations(_runs(readers), metric=metric, **kwargs)
    return _finish(fig, filepath, show, verbose, "plot_durations")


def plot_speedup(readers, filepath=None, show=False, verbose=False, x_field="num_ranks",
                 **kwargs):
    """Speed-up of each region over the runs against x_field: "num_ranks",
    "omp_num_threads" or "total_cores" (ValueError for another, or when a
    run does not record it); kwargs: include, exclude, title."""
    fig = _charts.plot_speedup(_runs(readers), x_field=x_field, **kwargs)
    return _finish(fig, filepath, show, verbose, "plot_speedup")
