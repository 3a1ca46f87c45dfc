"""The read API's charts (plot_gantt, plot_flame, plot_durations,
plot_speedup): a real run writes a profile, a script run under the tool draws
each chart with matplotlib's Agg backend, saves it as PNG and SVG, and
reports what the figures hold; the test compares that with the file as h5py
reads it (calls per lane, bar heights, axis labels). Without matplotlib
every plot_* raises one clear ImportError."""
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

from conftest import BINARY, regions

SVG = "{http://www.w3.org/2000/svg}"

RECORD = """
import time
import scope_profiler as sp

sp.setup(file_path={path!r})
with sp.region("setup"):
    time.sleep(0.002)
for step in range(4):
    with sp.region("step"):
        for _ in range(2):
            with sp.region("solve"):
                time.sleep(0.001)
    if step % 2:
        with sp.region("io"):
            time.sleep(0.0005)
sp.finalize(verbose=False)
"""

# Draws every chart and writes what the figures hold to facts.json: per
# collection gid its boxes (x0, x1, y0, y1), per bar container its label
# and heights, per line its label and data, the axis labels.
DRAW = r"""
import json
import sys

import scope_profiler as sp

facts = {"loaded_before": "matplotlib" in sys.modules}


def describe(fig):
    ax = fig.axes[0]
    out = {"xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "title": ax.get_title(),
           "yticks": [t.get_text() for t in ax.get_yticklabels()],
           "xticks": [t.get_text() for t in ax.get_xticklabels()],
           "boxes": {}, "bars": [], "lines": [],
           "note": [t.get_text() for t in ax.texts if t.get_gid() == "merge-note"]}
    for c in ax.collections:
        if c.get_gid():
            boxes = []
            for p in c.get_paths():
                v = p.vertices
                boxes.append([float(v[:, 0].min()), float(v[:, 0].max()),
                              float(v[:, 1].min()), float(v[:, 1].max())])
            out["boxes"][c.get_gid()] = boxes
    for bc in ax.containers:
        out["bars"].append({"label": bc.get_label(),
                            "x": [b.get_x() + b.get_width() / 2 for b in bc],
                            "heights": [b.get_height() for b in bc]})
    for line in ax.get_lines():
        out["lines"].append({"label": line.get_label(),
                             "x": [float(x) for x in line.get_xdata()],
                             "y": [float(y) for y in line.get_ydata()]})
    return out


def save(fig, name):
    fig.savefig(name + ".png")
    fig.savefig(name + ".svg")
    return describe(fig)


results = sp.read_h5("profile.h5")
# columns=None: every call its own bar, however long a pause of this loaded
# machine made the run (merging is tested on hand-written files below).
facts["gantt"] = save(sp.plot_gantt(results, columns=None), "gantt")
facts["loaded_after"] = "matplotlib" in sys.modules
facts["origin"] = results.minimum_start_time
facts["flame"] = save(sp.plot_flame("profile.h5", columns=None), "flame")   # a path works too
facts["flame_no_step"] = describe(sp.plot_flame(results, exclude="step", columns=None))
facts["gantt_solve"] = describe(sp.plot_gantt(results, include=["solve", "io"], columns=None))
for metric in ("avg", "min", "max", "total"):
    facts["durations_" + metric] = save(sp.plot_durations(results, metric=metric),
                                        "durations_" + metric)
facts["durations_two"] = save(sp.plot_durations([results, "other.h5"], metric="total"),
                              "durations_two")
facts["gantt_ranks"] = describe(sp.plot_gantt("two_ranks.h5"))
facts["gantt_rank1"] = describe(sp.plot_gantt("two_ranks.h5", ranks=1))
facts["flame_rank1"] = describe(sp.plot_flame("two_ranks.h5", rank=1))
try:
    sp.plot_flame("two_ranks.h5", rank=5)
except ValueError as exc:
    facts["no_rank"] = str(exc)
facts["durations_same_name"] = describe(sp.plot_durations(["profile.h5", "sub/profile.h5"]))
facts["speedup"] = save(sp.plot_speedup(["one_rank.h5", "two_ranks.h5"]), "speedup")
facts["speedup_omp"] = describe(sp.plot_speedup(["omp4.h5", "omp2.h5"],
                                                x_field="omp_num_threads"))
facts["speedup_cores"] = describe(sp.plot_speedup(["omp4.h5", "omp2.h5"], x_field="total_cores"))
try:
    sp.plot_speedup(["omp2.h5", "two_ranks.h5"], x_field="omp_num_threads")
except ValueError as exc:
    facts["no_omp"] = str(exc)
try:
    sp.plot_durations(results, metric="median")
except ValueError as exc:
    facts["bad_metric"] = str(exc)
try:
    sp.plot_speedup([results, results])
except ValueError as exc:
    facts["one_size"] = str(exc)
with open("facts.json", "w") as f:
    json.dump(facts, f)
"""

NS = 1_000_000_000


def run_tool(cwd, *args):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([BINARY, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def write_ranks(path, durations_per_rank, metadata=None):
    """A profile in the seed's layout (as test_readapi's two-rank file):
    rank{N}/regions/solve with start_times and end_times in ns, and
    /metadata's string attributes."""
    with h5py.File(path, "w") as f:
        for key, value in (metadata or {}).items():
            f.require_group("metadata").attrs[key] = value
        for rank, durations in enumerate(durations_per_rank):
            g = f.create_group(f"rank{rank}").create_group("regions").create_group("solve")
            starts = np.arange(len(durations), dtype=np.int64) * NS
            g.create_dataset("start_times", data=starts)
            g.create_dataset("end_times", data=starts + np.array(durations, dtype=np.int64))


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"{BINARY} is not built; run `make`")
    d = tmp_path_factory.mktemp("pyplot")
    for name in ("profile", "other"):
        (d / f"record_{name}.py").write_text(RECORD.format(path=f"{name}.h5"))
        proc = run_tool(d, "run", "-q", f"record_{name}.py")
        assert proc.returncode == 0, proc.stderr
    # Strong scaling: 1 rank, then 2 ranks whose slowest takes 0.3 s of 0.8.
    write_ranks(d / "one_rank.h5", [[400_000_000, 400_000_000]])
    write_ranks(d / "two_ranks.h5", [[200_000_000, 100_000_000], [150_000_000, 150_000_000]])
    # OpenMP: 2 threads take 0.6 s, 4 threads 0.2 s; 8 cores in all on the second
    write_ranks(d / "omp2.h5", [[600_000_000]], {"omp_num_threads": "2"})
    write_ranks(d / "omp4.h5", [[200_000_000]], {"omp_num_threads": "4", "total_cores": "8"})
    (d / "sub").mkdir()
    shutil.copy(d / "profile.h5", d / "sub" / "profile.h5")
    (d / "draw.py").write_text(DRAW)
    proc = run_tool(d, "run", "-q", "--no-output", "draw.py")
    assert proc.returncode == 0, proc.stderr
    return d, json.loads((d / "facts.json").read_text())


def file_regions(path):
    with h5py.File(path, "r") as f:
        return {name: (r.attrs, r["start_times"][:], r["end_times"][:])
                for name, r in regions(f).items()}


def shapes(element):
    """The shapes drawn under an SVG element: its paths and the uses of
    paths defined once (matplotlib defines a path in <defs>, then places it)."""
    if element.tag == SVG + "defs":
        return 0
    if element.tag in (SVG + "path", SVG + "use"):
        return 1
    return sum(shapes(child) for child in element)


def svg_lane_counts(path, prefix):
    """{gid: number of shapes} of the groups whose id starts with prefix."""
    root = ET.parse(path).getroot()
    return {g.get("id"): shapes(g) for g in root.iter(SVG + "g")
            if (g.get("id") or "").startswith(prefix)}


@pytest.mark.script_imports("matplotlib", "numpy")
def test_matplotlib_loads_on_first_chart(drawn):
    _, facts = drawn
    assert facts["loaded_before"] is False and facts["loaded_after"] is True


@pytest.mark.script_imports("matplotlib", "numpy")
def test_gantt_one_bar_per_call_from_first_entry(drawn):
    d, facts = drawn
    want = file_regions(d / "profile.h5")
    first = min(int(starts.min()) for _, starts, _ in want.values())
    g = facts["gantt"]
    assert set(g["boxes"]) == {f"gantt:0:{n}" for n in want}
    for name, (attrs, starts, ends) in want.items():
        boxes = g["boxes"][f"gantt:0:{name}"]
        assert len(boxes) == attrs["num_calls"] == len(starts)
        assert [b[0] for b in boxes] == pytest.approx((starts - first) / NS, abs=1e-9)
        assert [b[1] for b in boxes] == pytest.approx((ends - first) / NS, abs=1e-9)
    assert min(b[0] for boxes in g["boxes"].values() for b in boxes) == pytest.approx(0, abs=1e-9)
    # one lane per rank x region, the heaviest total (the summary's) first
    heaviest = sorted(want, key=lambda n: (-int((want[n][2] - want[n][1]).sum()), n))
    assert g["yticks"] == [f"rank 0: {n}" for n in heaviest]
    assert g["xlabel"] == "time since the first region entry [s]"
    assert "profile.h5" in g["title"]
    assert g["note"] == []      # columns=None: nothing merged, nothing to say
    assert svg_lane_counts(d / "gantt.svg", "gantt:") == {
        f"gantt:0:{n}": int(a["num_calls"]) for n, (a, _, _) in want.items()}
    assert (d / "gantt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.script_imports("matplotlib", "numpy")
def test_gantt_filters_keep_the_time_axis(drawn):
    _, facts = drawn
    g, full = facts["gantt_solve"], facts["gantt"]
    assert set(g["boxes"]) == {"gantt:0:solve", "gantt:0:io"}
    assert [b[:2] for b in g["boxes"]["gantt:0:solve"]] == \
        [b[:2] for b in full["boxes"]["gantt:0:solve"]]
    assert g["yticks"] == ["rank 0: solve", "rank 0: io"]


@pytest.mark.script_imports("matplotlib", "numpy")
def test_gantt_one_lane_per_rank_and_region(drawn):
    _, facts = drawn
    g = facts["gantt_ranks"]
    assert g["yticks"] == ["rank 0: solve", "rank 1: solve"]
    # rank 0's calls: 0.2 s from 0 s, 0.1 s from 1 s; rank 1's: 0.15 s twice
    assert g["boxes"]["gantt:0:solve"] == [pytest.approx([0, 0.2, -0.4, 0.4]),
                                          pytest.approx([1, 1.1, -0.4, 0.4])]
    assert g["boxes"]["gantt:1:solve"] == [pytest.approx([0, 0.15, 0.6, 1.4]),
                                          pytest.approx([1, 1.15, 0.6, 1.4])]
    assert facts["gantt_rank1"]["yticks"] == ["rank 1: solve"]
    assert list(facts["gantt_rank1"]["boxes"]) == ["gantt:1:solve"]
    assert [b[:2] for b in facts["flame_rank1"]["boxes"]["flame:solve"]] == [
        pytest.approx([0, 0.15]), pytest.approx([1, 1.15])]
    assert "has no rank 5 (ranks: [0, 1])" in facts["no_rank"]


@pytest.mark.script_imports("matplotlib", "numpy")
def test_flame_boxes_nest_by_depth(drawn):
    d, facts = drawn
    want = file_regions(d / "profile.h5")
    f = facts["flame"]
    assert {gid: len(b) for gid, b in f["boxes"].items()} == {
        f"flame:{n}": int(a["num_calls"]) for n, (a, _, _) in want.items()}
    depth = {gid: sorted({round(b[2]) for b in boxes}) for gid, boxes in f["boxes"].items()}
    assert depth == {"flame:setup": [0], "flame:step": [0], "flame:solve": [1], "flame:io": [0]}
    # each solve lies within a step
    steps = f["boxes"]["flame:step"]
    for s in f["boxes"]["flame:solve"]:
        assert any(p[0] <= s[0] and s[1] <= p[1] for p in steps)
    assert f["ylabel"] == "call depth" and f["yticks"] == ["0", "1"]
    assert f["xlabel"] == "time since the first region entry [s]"
    assert "rank 0" in f["title"]
    svg = svg_lane_counts(d / "flame.svg", "flame:")
    assert svg == {f"flame:{n}": int(a["num_calls"]) for n, (a, _, _) in want.items()}
    # without the steps, the solves are roots
    no_step = facts["flame_no_step"]["boxes"]
    assert "flame:step" not in no_step
    assert {round(b[2]) for b in no_step["flame:solve"]} == {0}


@pytest.mark.script_imports("matplotlib", "numpy")
@pytest.mark.parametrize("metric", ["avg", "min", "max", "total"])
def test_durations_bars_are_the_files_statistics(drawn, metric):
    d, facts = drawn
    want = file_regions(d / "profile.h5")
    value = {
        "avg": lambda a: a["total_ns"] / a["num_calls"] / NS,
        "min": lambda a: a["min_ns"] / NS,
        "max": lambda a: a["max_ns"] / NS,
        "total": lambda a: a["total_ns"] / NS,
    }[metric]
    chart = facts["durations_" + metric]
    assert len(chart["bars"]) == 1
    heaviest = sorted(want, key=lambda n: -int(want[n][0]["total_ns"]))
    assert chart["xticks"] == heaviest
    assert chart["bars"][0]["heights"] == pytest.approx(
        [value(want[n][0]) for n in heaviest], rel=1e-12)
    assert chart["xlabel"] == "region"
    assert chart["ylabel"].endswith("[s]") and metric in chart["title"]
    root = ET.parse(d / f"durations_{metric}.svg").getroot()
    assert root.tag == SVG + "svg"


@pytest.mark.script_imports("matplotlib", "numpy")
def test_durations_several_files_side_by_side(drawn):
    d, facts = drawn
    chart = facts["durations_two"]
    assert [b["label"] for b in chart["bars"]] == ["profile.h5", "other.h5"]
    names = chart["xticks"]
    for bars, path in zip(chart["bars"], ("profile.h5", "other.h5")):
        want = file_regions(d / path)
        assert len(bars["heights"]) == len(want) == 4
        assert bars["heights"] == pytest.approx(
            [want[n][0]["total_ns"] / NS for n in names], rel=1e-12)
    # the files' bars of one region sit side by side around its tick
    for tick, (a, b) in enumerate(zip(chart["bars"][0]["x"], chart["bars"][1]["x"])):
        assert a < tick < b and (a + b) / 2 == pytest.approx(tick)
    # two files of one name: the legend names them by path
    assert [b["label"] for b in facts["durations_same_name"]["bars"]] == \
        ["profile.h5", "sub/profile.h5"]


@pytest.mark.script_imports("matplotlib", "numpy")
def test_speedup_against_the_smallest_run_with_ideal_line(drawn):
    _, facts = drawn
    chart = facts["speedup"]
    lines = {line["label"]: line for line in chart["lines"]}
    assert set(lines) == {"solve", "ideal"}
    assert lines["ideal"]["x"] == [1, 2] and lines["ideal"]["y"] == [1, 2]
    # slowest rank's total: 0.8 s on one rank, 0.3 s on two
    assert lines["solve"]["x"] == [1, 2]
    assert lines["solve"]["y"] == pytest.approx([1, 0.8 / 0.3], rel=1e-12)
    assert "ranks" in chart["xlabel"] and chart["ylabel"].startswith("speedup")


@pytest.mark.script_imports("matplotlib", "numpy")
def test_speedup_by_metadata_fields(drawn):
    _, facts = drawn
    omp = {line["label"]: line for line in facts["speedup_omp"]["lines"]}
    assert omp["solve"]["x"] == [2, 4] and omp["solve"]["y"] == pytest.approx([1, 3])
    assert omp["ideal"]["y"] == [1, 2]
    assert "OpenMP threads" in facts["speedup_omp"]["xlabel"]
    # total_cores where recorded (8), else ranks x OpenMP threads (1 x 2)
    cores = {line["label"]: line for line in facts["speedup_cores"]["lines"]}
    assert cores["solve"]["x"] == [2, 8] and cores["ideal"]["y"] == [1, 4]
    assert facts["no_omp"] == "plot_speedup: two_ranks.h5 does not record omp_num_threads"


@pytest.mark.script_imports("matplotlib", "numpy")
def test_bad_arguments_are_value_errors(drawn):
    _, facts = drawn
    assert "avg, min, max, total" in facts["bad_metric"] and "'median'" in facts["bad_metric"]
    assert "at least two different num_ranks" in facts["one_size"]


@pytest.mark.script_imports("matplotlib", "numpy")
def test_aggregation_mode_file_has_durations_but_no_gantt(tmp_path):
    (tmp_path / "rec.py").write_text(RECORD.format(path="agg.h5"))
    proc = run_tool(tmp_path, "run", "-q", "--aggregate", "rec.py")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "draw.py").write_text("""
import scope_profiler as sp
fig = sp.plot_durations("agg.h5", metric="total")
print(len(fig.axes[0].containers[0]))
for plot in (sp.plot_gantt, sp.plot_flame):
    try:
        plot("agg.h5")
    except ValueError as exc:
        print(exc)
""")
    proc = run_tool(tmp_path, "run", "-q", "--no-output", "draw.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "4"
    assert lines[1].startswith("plot_gantt: agg.h5: no per-call events")
    assert lines[2].startswith("plot_flame: agg.h5: rank 0 has no per-call events")


MANY = """
import time
import scope_profiler as sp

sp.setup(file_path="many.h5")
with sp.region("long"):
    time.sleep(0.05)
    for _ in range(3000):
        with sp.region("tiny"):
            pass
sp.finalize(verbose=False)
"""

MERGE = """
import json
import scope_profiler as sp

out = {}
for columns in (100, None):
    for chart, plot in (("gantt", sp.plot_gantt), ("flame", sp.plot_flame)):
        ax = plot("many.h5", columns=columns).axes[0]
        out[f"{chart}_{columns}"] = {
            "boxes": {c.get_gid(): [[float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())]
                                    for p in c.get_paths()] for c in ax.collections},
            "note": [t.get_text() for t in ax.texts if t.get_gid() == "merge-note"]}
print(json.dumps(out))
"""


@pytest.mark.script_imports("matplotlib", "numpy")
def test_calls_narrower_than_a_column_share_a_bar(tmp_path):
    """A profile of many short calls draws a bar per lane and column; each
    call lies within its bar, and the chart says how many it merged."""
    (tmp_path / "rec.py").write_text(MANY)
    assert run_tool(tmp_path, "run", "-q", "rec.py").returncode == 0
    (tmp_path / "merge.py").write_text(MERGE)
    proc = run_tool(tmp_path, "run", "-q", "--no-output", "merge.py")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    want = file_regions(tmp_path / "many.h5")
    first = int(want["long"][1].min())
    tiny_s = (want["tiny"][1] - first) / NS
    tiny_e = (want["tiny"][2] - first) / NS
    assert len(tiny_s) == 3000
    for chart in ("gantt", "flame"):
        lane = "gantt:0:tiny" if chart == "gantt" else "flame:tiny"
        every = out[f"{chart}_None"]
        assert len(every["boxes"][lane]) == 3000 and every["note"] == []
        merged = out[f"{chart}_100"]
        bars = np.array(merged["boxes"][lane])
        assert 1 <= len(bars) < 3000
        k = np.searchsorted(bars[:, 0], tiny_s, side="right") - 1
        assert (k >= 0).all() and (tiny_e <= bars[k, 1] + 1e-12).all()
        drawn = sum(len(b) for b in merged["boxes"].values())
        assert merged["note"] == [f"3001 calls drawn as {drawn} bars: calls narrower than "
                                  "1/100 of the time axis share one bar per lane and column "
                                  "(columns=None draws each)"]


# Two regions' short calls interleaved inside a long one: merged, a flame box
# holds calls of both.
MIXED = """
import time
import scope_profiler as sp

sp.setup(file_path="mixed.h5")
with sp.region("long"):
    time.sleep(0.02)
    for i in range(3000):
        with sp.region("tiny" if i % 3 else "tiny2"):
            pass
sp.finalize(verbose=False)
"""

# The plot area of `scope-profiler plot`'s 1200 px charts (plot.c: G_LEFT 250
# and 30 px right; plot_flame.c: F_LEFT 120), merged in 1 px columns: the
# same columns as plot_gantt(columns=920) and plot_flame(columns=1050).
GANTT_LEFT, GANTT_PX, FLAME_LEFT, FLAME_PX = 250, 920, 120, 1050

SAME = """
import json
import scope_profiler as sp

def bars(ax):
    return {c.get_gid(): [float(p.vertices[:, 0].min()) for p in c.get_paths()]
            for c in ax.collections}

gantt = sp.plot_gantt("mixed.h5", columns=%d).axes[0]
flame = sp.plot_flame("mixed.h5", columns=%d).axes[0]
print(json.dumps({"gantt": bars(gantt), "flame": bars(flame),
                  "span": gantt.get_xlim()[1], "flame_span": flame.get_xlim()[1]}))
""" % (GANTT_PX, FLAME_PX)


def svg_bars(path, group_attr):
    """{group's sp attribute: [(x, fill or None, calls)]} of the bars under
    the chart's groups (a Gantt lane, a flame chart's rank)."""
    ns = "{urn:scope-profiler:plot}"
    out = {}
    for g in ET.parse(path).getroot().iter(SVG + "g"):
        if g.get(ns + group_attr) is not None:
            out[g.get(ns + group_attr)] = [
                (float(r.get("x")), r.get("fill"), int(r.get(ns + "calls", 1)))
                for r in g.iter(SVG + "rect")]
    return out


@pytest.mark.script_imports("matplotlib", "numpy")
def test_charts_merge_calls_as_scope_profiler_plot(tmp_path):
    """One merge rule: at the SVG charts' columns, plot_gantt and plot_flame
    draw the bars `scope-profiler plot` draws (one per lane and column; the
    flame chart's per row, a box of several regions grey), at the same
    places."""
    (tmp_path / "rec.py").write_text(MIXED)
    assert run_tool(tmp_path, "run", "-q", "rec.py").returncode == 0
    proc = run_tool(tmp_path, "plot", "mixed.h5", "-o", "svg")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "same.py").write_text(SAME)
    proc = run_tool(tmp_path, "run", "-q", "--no-output", "same.py")
    assert proc.returncode == 0, proc.stderr
    py = json.loads(proc.stdout.splitlines()[-1])
    gantt = svg_bars(tmp_path / "svg" / "gantt.svg", "region")
    assert set(gantt) == {"long", "tiny", "tiny2"}
    assert sum(c for _, _, c in gantt["tiny"]) == 2000 and len(gantt["tiny"]) < 2000
    for name, svg in gantt.items():
        mine = [x / py["span"] * GANTT_PX for x in py["gantt"][f"gantt:0:{name}"]]
        assert mine == pytest.approx([x - GANTT_LEFT for x, _, _ in svg], abs=0.006), name
    (flame,) = svg_bars(tmp_path / "svg" / "flame.svg", "rank").values()
    grey = sorted(x - FLAME_LEFT for x, fill, _ in flame if fill == "#a0a0a0")
    assert grey and sum(c for _, fill, c in flame if fill == "#a0a0a0") > len(grey)
    assert sorted(x / py["flame_span"] * FLAME_PX for x in py["flame"]["flame-mixed"]) == \
        pytest.approx(grey, abs=0.006)
    mine = sorted(x / py["flame_span"] * FLAME_PX for xs in py["flame"].values() for x in xs)
    assert mine == pytest.approx(sorted(x - FLAME_LEFT for x, _, _ in flame), abs=0.006)



@pytest.mark.script_imports("matplotlib", "numpy")
def test_durations_rows_as_scope_profiler_plot(tmp_path):
    """The regions joined by name across files in one order: heaviest total
    summed over the files first (x: 10 s + 1 s < y: 6 s + 6 s), then by name."""
    for path, totals in (("a.h5", {"x": 10, "y": 6, "z": 3, "w": 3}),
                         ("b.h5", {"x": 1, "y": 6, "z": 3, "w": 3})):
        with h5py.File(tmp_path / path, "w") as f:
            for name, s in totals.items():
                g = f.create_group(f"rank0/regions/{name}")
                g.create_dataset("start_times", data=np.array([0], dtype=np.int64))
                g.create_dataset("end_times", data=np.array([s * NS], dtype=np.int64))
    proc = run_tool(tmp_path, "plot", "a.h5", "b.h5", "-o", "svg")
    assert proc.returncode == 0, proc.stderr
    ns = "{urn:scope-profiler:plot}"
    svg = [g.get(ns + "region") for g in ET.parse(tmp_path / "svg" / "durations_total.svg").getroot()
           .iter(SVG + "g") if g.get(ns + "region")]
    (tmp_path / "d.py").write_text("import json, scope_profiler as sp\n"
                                   "ax = sp.plot_durations(['a.h5', 'b.h5']).axes[0]\n"
                                   "print(json.dumps([t.get_text() for t in ax.get_xticklabels()]))\n")
    proc = run_tool(tmp_path, "run", "-q", "--no-output", "d.py")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == svg == ["y", "x", "w", "z"]



HIDDEN = """
import sys
sys.modules["matplotlib"] = None      # as if python3-matplotlib were not installed
import scope_profiler as sp
for plot, args in ((sp.plot_gantt, ("p.h5",)), (sp.plot_flame, ("p.h5",)),
                   (sp.plot_durations, ("p.h5",)), (sp.plot_speedup, (["p.h5", "p.h5"],))):
    try:
        plot(*args)
    except ImportError as exc:
        print(type(exc).__name__, exc)
"""


def test_without_matplotlib_one_clear_import_error(tmp_path):
    (tmp_path / "rec.py").write_text(RECORD.format(path="p.h5"))
    assert run_tool(tmp_path, "run", "-q", "rec.py").returncode == 0
    (tmp_path / "hidden.py").write_text(HIDDEN)
    proc = run_tool(tmp_path, "run", "-q", "--no-output", "hidden.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 4
    for line, name in zip(lines, ("plot_gantt", "plot_flame", "plot_durations", "plot_speedup")):
        assert line.startswith(f"ImportError scope_profiler.{name}() needs matplotlib"), line
        assert "apt-get install python3-matplotlib" in line
        assert "`scope-profiler plot FILE -o DIR`" in line


COLOURS = """
import time
import scope_profiler as sp
for i in range(12):
    with sp.region("r%02d" % i):
        with sp.region("inner%02d" % (i % 3)):
            time.sleep(0.0004 * (i + 1))
"""

SAME_COLOURS = """
import json
from matplotlib.colors import to_hex
import scope_profiler as sp
out = {}
ax = sp.plot_gantt("c.h5", columns=None).axes[0]
out["gantt"] = {c.get_gid().split(":", 2)[2]: to_hex(c.get_facecolor()[0]) for c in ax.collections
                if (c.get_gid() or "").startswith("gantt:")}
ax = sp.plot_flame("c.h5", columns=None).axes[0]
out["flame"] = {c.get_label(): to_hex(c.get_facecolor()[0]) for c in ax.collections
                if not c.get_label().startswith("_")}
ax = sp.plot_durations("c.h5", metric="total").axes[0]
out["durations"] = dict(zip([t.get_text() for t in ax.get_xticklabels()],
                            [to_hex(b.get_facecolor()) for b in ax.containers[0]]))
print(json.dumps(out))
"""


@pytest.mark.script_imports("matplotlib", "numpy")
def test_charts_colour_regions_as_scope_profiler_plot(tmp_path):
    """One palette: every matplotlib chart gives a region the colour that
    `scope-profiler plot`'s charts give it (the heaviest in the palette's
    order, all different), not matplotlib's cycle in the file's order."""
    (tmp_path / "rec.py").write_text(COLOURS)
    assert run_tool(tmp_path, "run", "-q", "-o", "c.h5", "rec.py").returncode == 0
    proc = run_tool(tmp_path, "plot", "c.h5", "-o", "svg")
    assert proc.returncode == 0, proc.stderr
    ns = "{urn:scope-profiler:plot}"
    svg = {g.get(ns + "region"): g.get("fill") for g in ET.parse(tmp_path / "svg" / "gantt.svg")
           .getroot().iter(SVG + "g") if g.get(ns + "region") and g.get("fill")}
    assert len(svg) == 15 and len(set(svg.values())) == 15, svg
    (tmp_path / "same.py").write_text(SAME_COLOURS)
    proc = run_tool(tmp_path, "run", "-q", "--no-output", "same.py")
    assert proc.returncode == 0, proc.stderr
    py = json.loads(proc.stdout.splitlines()[-1])
    assert py["gantt"] == svg
    assert py["flame"] and all(svg[name] == colour for name, colour in py["flame"].items()), py["flame"]
    assert py["durations"] == svg
