"""scope_profiler._charts: the read API's charts, drawn with matplotlib.

The charts `scope-profiler plot` draws as SVG, from the same data: the
report layer decides the Gantt chart's lanes, the time axis, which calls
share a bar, the flame chart's rows and boxes, and the regions joined by name
across ranks and files (sp_plot.h, through charts.c); this module only draws
them. Frozen into the module like its own Python layer and loaded on the
first use of a plot_* function; matplotlib is imported on a chart's first
call, never at start-up: importing it (and numpy) early would change the
script's program.
"""

from . import _NS, ProfilingResults, read_h5
from . import _chart_colours, _chart_flame, _chart_gantt, _chart_sizes, _chart_table


def _pyplot(caller):
    """matplotlib.pyplot, or an ImportError naming the Debian package and
    the tool's own way to draw without it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            f"scope_profiler.{caller}() needs matplotlib (Debian: apt-get install "
            "python3-matplotlib); without it, `scope-profiler plot FILE -o DIR` draws "
            "the same charts as SVG") from exc
    return plt


def _as_results(results):
    """A ProfilingResults, read from the file when given a path."""
    if isinstance(results, ProfilingResults):
        return results
    if isinstance(results, str) or hasattr(results, "__fspath__"):
        return read_h5(results)
    raise TypeError(f"expected ProfilingResults or a file path, not {type(results).__name__}")


def _as_results_list(results):
    if isinstance(results, (ProfilingResults, str)) or hasattr(results, "__fspath__"):
        return [_as_results(results)]
    return [_as_results(r) for r in results]


def _file_label(results):
    return results.file_path.name if results.file_path is not None else "(in memory)"


def _file(results):
    """results as the report layer reads it (charts.c): its name, ranks and
    metadata."""
    return (_file_label(results), results._ranks, results.metadata)


def _has_calls(results, caller):
    """The charts' time zero is the file's first region entry (not the run
    start: a long startup would fill a chart with empty space), as in the
    seed: results.minimum_start_time. ValueError when there is none."""
    if results._first_start_ns() is None:
        raise ValueError(f"{caller}: {_file_label(results)} has no recorded calls")


def _region_colors(results, ranks, include, exclude):
    """Each region's colour as `scope-profiler plot` draws it (the heaviest
    regions of the selection the palette in order, the others a hash of the
    name): one region, one colour, in every chart, SVG or matplotlib."""
    return _chart_colours([_file(results)], ranks, include, exclude, results.region_names)


def _axes(plt, ax, figsize):
    """(figure, axes): the given axes' figure, or a new pyplot figure."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def _legend_outside(ax):
    """The region legend right of the axes, where it hides no bar."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, fontsize="small")


def _boxes(np, x0, x1, y0, height):
    """The corners of rectangles, as PolyCollection takes them."""
    verts = np.empty((len(x0), 4, 2))
    verts[:, 0, 0] = verts[:, 3, 0] = x0
    verts[:, 1, 0] = verts[:, 2, 0] = x1
    verts[:, 0, 1] = verts[:, 1, 1] = y0
    verts[:, 2, 1] = verts[:, 3, 1] = y0 + height
    return verts


def _edge_width(bars):
    """A thin white edge tells adjacent calls apart; among many narrow bars
    it would wash their colour out."""
    return 0.3 if bars <= 500 else 0


def _merge_note(ax, calls, bars, columns):
    """Says under the axes that calls were merged, and how to avoid it."""
    if bars < calls:
        ax.annotate(f"{calls} calls drawn as {bars} bars: calls narrower than 1/{columns} "
                    "of the time axis share one bar per lane and column (columns=None "
                    "draws each)", xy=(0, 0), xycoords="axes fraction", xytext=(0, -30),
                    textcoords="offset points", va="top", fontsize="x-small", gid="merge-note")


def plot_gantt(results, ranks=None, include=None, exclude=None, ax=None, title=None,
               columns=4000):
    """The Gantt chart of a profile: one lane per rank x region (by rank,
    then the heaviest total on that rank first), one bar per call, x in seconds from
    the first region entry (results.minimum_start_time, whatever ranks are
    drawn: what events(origin=results.minimum_start_time) gives) to the
    last end of the ranks drawn.

    results: a ProfilingResults (read_h5, read_results) or a file path.
    ranks: an int or a list (default: all); include/exclude: patterns (or
    lists of them) on region names, as events() and every command take them.
    columns: calls narrower than 1/columns of the time axis share one bar
    per lane and column, so that a million calls draw in seconds (a note
    under the chart says so); None draws every call. ax: draw into these
    matplotlib axes instead of a new figure. Each lane is one PolyCollection
    with gid "gantt:RANK:REGION", one path per bar. Returns the matplotlib
    Figure. ValueError when nothing selected has per-call events (a file
    recorded with --aggregate has none); ImportError without matplotlib."""
    plt = _pyplot("plot_gantt")
    import numpy as np
    from matplotlib.collections import PolyCollection

    results = _as_results(results)
    _has_calls(results, "plot_gantt")
    drawn = _chart_gantt(_file(results), ranks, include, exclude, columns)
    if drawn is None:
        raise ValueError(f"plot_gantt: {_file_label(results)}: no per-call events in the "
                         "selected regions and ranks (aggregation-mode files have none)")
    span_ns, lanes = drawn
    span = span_ns / _NS
    colors = _region_colors(results, ranks, include, exclude)
    fig, ax = _axes(plt, ax, (10, max(2.5, 1.2 + 0.35 * len(lanes))))
    named, calls, bars = set(), 0, 0
    for y, (rank, name, n, x0, x1, _) in enumerate(lanes):
        x0, x1 = np.frombuffer(x0), np.frombuffer(x1)
        lane = PolyCollection(_boxes(np, x0, x1, y - 0.4, 0.8), facecolors=[colors[name]],
                              edgecolors="white", linewidths=_edge_width(len(x0)),
                              label=name if name not in named else "_nolegend_")
        lane.set_gid(f"gantt:{rank}:{name}")
        ax.add_collection(lane)
        named.add(name)
        calls += n
        bars += len(x0)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"rank {lane[0]}: {lane[1]}" for lane in lanes])
    ax.set_ylim(len(lanes) - 0.5, -0.5)  # the first lane on top
    ax.set_xlim(0, span)
    ax.set_xlabel("time since the first region entry [s]")
    ax.set_ylabel("rank: region")
    ax.set_title(title if title is not None else f"Gantt chart: {_file_label(results)}")
    _merge_note(ax, calls, bars, columns)
    _legend_outside(ax)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_flame(results, rank=0, include=None, exclude=None, ax=None, title=None,
               columns=4000, min_label_width=0.05):
    """The flame (icicle) chart of one rank: its call stacks over time, a
    box per call at its depth (depth 0 on top), x in seconds from the first
    region entry. The nesting is call_stack()'s rule among the selected
    regions: with include/exclude a call sits under its nearest drawn
    ancestor. Each thread (task) lane gets its own band of depths.

    results: a ProfilingResults or a file path; rank: the rank to draw.
    columns: calls narrower than 1/columns of the time axis share one box
    per row (lane and depth) and column, grey when they are of several
    regions (a note under the chart says so); None draws every call. Boxes
    of one call wider than min_label_width of the time axis carry the
    region's name. ax: draw into these axes. Each region's boxes are one
    PolyCollection with gid "flame:REGION", those of several regions one
    with gid "flame-mixed". Returns the matplotlib Figure; ValueError when
    the rank has no selected calls; ImportError without matplotlib."""
    plt = _pyplot("plot_flame")
    import numpy as np
    from matplotlib.collections import PolyCollection

    results = _as_results(results)
    if rank not in results.ranks:
        raise ValueError(f"plot_flame: {_file_label(results)} has no rank {rank} "
                         f"(ranks: {results.ranks})")
    _has_calls(results, "plot_flame")
    drawn = _chart_flame(_file(results), rank, include, exclude, columns)
    if drawn is None:
        raise ValueError(f"plot_flame: {_file_label(results)}: rank {rank} has no per-call "
                         "events in the selected regions (aggregation-mode files have none)")
    span_ns, names, calls, x0, x1, counts, region, lane, depth = drawn
    x0, x1, counts = np.frombuffer(x0), np.frombuffer(x1), np.frombuffer(counts, dtype=np.int64)
    region, lane, depth = (np.frombuffer(c, dtype=np.int32) for c in (region, lane, depth))
    # Each lane a band of rows, one per depth, the lanes in order.
    lane_ids, lane_of = np.unique(lane, return_inverse=True)
    deepest = np.zeros(len(lane_ids), dtype=np.int64)
    np.maximum.at(deepest, lane_of, depth)           # one pass, however many lanes
    band_depth = deepest + 1
    band_top = np.concatenate(([0], np.cumsum(band_depth)[:-1]))
    top = int(band_depth.sum())
    row = depth + band_top[lane_of]
    span = span_ns / _NS
    colors = _region_colors(results, None, include, exclude)   # as plot_gantt's of the file
    fig, ax = _axes(plt, ax, (10, max(2.5, 1.2 + 0.45 * top)))
    index = {name: i for i, name in enumerate(names)}
    for name in results.region_names + [None]:
        bars = np.flatnonzero(region == (index.get(name, -2) if name is not None else -1))
        if len(bars):
            boxes = PolyCollection(_boxes(np, x0[bars], x1[bars], row[bars], 0.95),
                                   facecolors=[colors[name] if name is not None else "#a0a0a0"],
                                   edgecolors="white", linewidths=_edge_width(len(bars)),
                                   label=name if name is not None else "(several regions)")
            boxes.set_gid(f"flame:{name}" if name is not None else "flame-mixed")
            ax.add_collection(boxes)
    wide = np.flatnonzero((counts == 1) & (x1 - x0 >= min_label_width * span))
    for k in wide:
        ax.text((x0[k] + x1[k]) / 2, row[k] + 0.475, names[region[k]],
                ha="center", va="center", fontsize="small", clip_on=True)
    ax.set_xlim(0, span)
    ax.set_ylim(top, 0)  # depth grows downwards
    if len(lane_ids) > 1:
        ax.set_yticks([t + d / 2 for t, d in zip(band_top.tolist(), band_depth.tolist())])
        ax.set_yticklabels([f"lane {l}" for l in lane_ids])
        ax.set_ylabel("thread lane, call depth")
    else:
        ax.set_yticks([d + 0.475 for d in range(top)])
        ax.set_yticklabels([str(d) for d in range(top)])
        ax.set_ylabel("call depth")
    ax.set_xlabel("time since the first region entry [s]")
    ax.set_title(title if title is not None
                 else f"Call stacks: {_file_label(results)}, rank {rank}")
    _merge_note(ax, calls, len(x0), columns)
    _legend_outside(ax)
    fig.tight_layout()
    return fig


_METRICS = {  # name -> y axis label; the order of _chart_table's values
    "avg": "mean time per call [s]",
    "min": "shortest call [s]",
    "max": "longest call [s]",
    "total": "total time, summed over ranks [s]",
}


def plot_durations(results, metric="avg", ranks=None, include=None, exclude=None,
                   labels=None, ax=None, title=None):
    """Region durations as bars: one bar per region (heaviest total over the
    results first, then by name); given several results, one bar per result
    side by side and a legend.

    results: a ProfilingResults or a path, or a list of them (read_h5_summary
    results and aggregation-mode files work: only the statistics are used).
    metric: "avg" (mean per call), "min" or "max" (the shortest or longest
    call) or "total" (summed over ranks), over the calls of the selected
    ranks. labels: the legend's names (default: the file names, or their
    paths where two names are the same). Each
    result's bars are one BarContainer labelled with its name. Returns the
    matplotlib Figure; ValueError on an unknown metric or when no result has
    a selected region; ImportError without matplotlib."""
    if metric not in _METRICS:
        raise ValueError(f"plot_durations: metric must be one of {', '.join(_METRICS)}, "
                         f"not {metric!r}")
    plt = _pyplot("plot_durations")
    runs = _as_results_list(results)
    if labels is None:
        labels = [_file_label(r) for r in runs]
        if len(set(labels)) < len(labels):   # run1/profile.h5, run2/profile.h5
            labels = [str(r.file_path) if r.file_path is not None else f"results {i + 1}"
                      for i, r in enumerate(runs)]
    labels = list(labels)
    if len(labels) != len(runs):
        raise ValueError(f"plot_durations: {len(labels)} labels for {len(runs)} results")
    rows = _chart_table([_file(r) for r in runs], ranks, include, exclude)
    if not rows:
        raise ValueError("plot_durations: no selected region has calls")
    k = list(_METRICS).index(metric)
    fig, ax = _axes(plt, ax, (max(6, 1.5 + 0.8 * len(rows) * max(1, len(runs) / 2)), 4.5))
    width = 0.8 / len(runs)
    # one file: each region's bar in its colour, as plot's durations chart
    colours = (_chart_colours([_file(runs[0])], ranks, include, exclude, [n for n, _ in rows])
               if len(runs) == 1 else None)
    for i, label in enumerate(labels):
        xs = [j for j, (_, vals) in enumerate(rows) if vals[i] is not None]
        ax.bar([x - 0.4 + width * (i + 0.5) for x in xs], [rows[x][1][i][k] for x in xs],
               width=width, label=label,
               color=[colours[rows[x][0]] for x in xs] if colours else None)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([name for name, _ in rows], rotation=30 if len(rows) > 4 else 0,
                       ha="right" if len(rows) > 4 else "center")
    ax.set_xlabel("region")
    ax.set_ylabel(_METRICS[metric])
    ax.set_title(title if title is not None else f"Region durations ({metric})")
    if len(runs) > 1:
        ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


_X_FIELDS = {"num_ranks": "MPI ranks", "omp_num_threads": "OpenMP threads",
             "total_cores": "cores"}


def plot_speedup(results, x_field="num_ranks", include=None, exclude=None, ax=None,
                 title=None):
    """Strong scaling: per region, the speedup of each run against the
    smallest one (the first given of the smallest size), with the ideal line
    size / smallest size. A run's time in a region is its slowest rank's
    total there. The regions in the durations chart's order.

    results: a list of ProfilingResults or paths. x_field: "num_ranks" (the
    file's rank count), "omp_num_threads" or "total_cores" (from the file's
    metadata; total_cores falls back to ranks x OpenMP threads, then ranks).
    One line per region the smallest run has (labelled with its name) and
    one labelled "ideal". Returns the matplotlib Figure; ValueError on an
    unknown x_field, a run whose size is unknown, fewer than two distinct
    sizes, or no region in the smallest run and another; ImportError
    without matplotlib."""
    if x_field not in _X_FIELDS:
        raise ValueError(f"plot_speedup: x_field must be one of {', '.join(_X_FIELDS)}, "
                         f"not {x_field!r}")
    plt = _pyplot("plot_speedup")
    runs = _as_results_list(results)
    files = [_file(r) for r in runs]
    sizes = []
    for r, x in zip(runs, _chart_sizes(files, x_field)):
        if x is None:
            raise ValueError(f"plot_speedup: {_file_label(r)} does not record {x_field}")
        sizes.append(int(x))
    if len(set(sizes)) < 2:
        raise ValueError(f"plot_speedup: the runs need at least two different {x_field} "
                         f"values (got {sorted(set(sizes))})")
    base = sizes.index(min(sizes))
    order = sorted(range(len(runs)), key=lambda i: (sizes[i], i))
    lines = {}  # region -> [(size, speedup)]
    for name, vals in _chart_table(files, None, include, exclude):
        t0 = vals[base][4] if vals[base] is not None else 0
        if t0 > 0:
            lines[name] = [(sizes[i], t0 / vals[i][4]) for i in order
                           if vals[i] is not None and vals[i][4] > 0]
    if not any(len(points) > 1 for points in lines.values()):
        raise ValueError("plot_speedup: no selected region has calls in the smallest run "
                         "and another")
    fig, ax = _axes(plt, ax, (7, 5))
    colours = _chart_colours(files, None, include, exclude, list(lines))
    for name, points in lines.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name,
                color=colours[name])
    xs = sorted(set(sizes))
    ax.plot(xs, [x / xs[0] for x in xs], linestyle="--", color="black", label="ideal")
    ax.set_xticks(xs)
    ax.set_xlabel(f"{_X_FIELDS[x_field]} ({x_field})")
    ax.set_ylabel(f"speedup vs {xs[0]} {_X_FIELDS[x_field]}")
    ax.set_title(title if title is not None else "Speedup")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
