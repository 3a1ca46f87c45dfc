"""`scope-profiler plot FILE... -o DIR`: the SVG charts parsed back as XML and
their bars counted against the file's calls (read with h5py), the CSVs and
region_statistics.json checked against the same numbers, several files for
the speedup chart, aggregation-mode files, bad input and a million calls."""
import csv
import json
import math
import xml.etree.ElementTree as ET
from decimal import Decimal

import h5py
import numpy as np
import pytest

from conftest import one_line_error, regions

NS = 1_000_000_000
SVG = "{http://www.w3.org/2000/svg}"
SPNS = "{urn:scope-profiler:plot}"
ODD = 'step <&"\'> \u00fc'     # XML's five specials and a non-ASCII letter

SCRIPT = """
    import scope_profiler as sp

    @sp.profile("leaf")
    def leaf():
        return sum(range(3000))

    for step in range(5):
        with sp.region(%r):
            leaf()
            leaf()
            with sp.region("solve"):
                leaf()
""" % ODD


def svg(path):
    """The parsed chart, checked to be a standalone SVG document."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    w, h = int(root.get("width")), int(root.get("height"))
    assert root.get("viewBox") == f"0 0 {w} {h}"
    assert root.find(SVG + "title").text
    return root


def lanes(root):
    """{(rank, region): (bars, calls they hold)} of a Gantt chart."""
    out = {}
    for g in root.iter(SVG + "g"):
        if g.get(SPNS + "region") is None:
            continue
        rects = g.findall(SVG + "rect")
        key = (int(g.get(SPNS + "rank")), g.get(SPNS + "region"))
        out[key] = (len(rects), sum(int(r.get(SPNS + "calls", "1")) for r in rects))
    return out


def flame_boxes(root):
    """Every box of a flame chart: (region named in its tooltip or None when
    merged, calls it holds)."""
    boxes = []
    for g in root.iter(SVG + "g"):
        if g.get(SPNS + "rank") is None:
            continue
        for r in g.findall(SVG + "rect"):
            title = r.find(SVG + "title")
            assert title is not None and "\nstart " in title.text and "\nduration " in title.text
            calls = int(r.get(SPNS + "calls", "1"))
            boxes.append((title.text.split("\n")[0] if calls == 1 else None, calls))
    return boxes


def h5_calls(path):
    """{(rank, name): (starts, ends)} as h5py reads the file."""
    out = {}
    with h5py.File(path, "r") as f:
        for key in f:
            if not key.startswith("rank"):
                continue
            rank = int(key[4:])
            for name, reg in regions(f, rank).items():
                if not reg.aggregate:
                    out[(rank, name)] = (np.asarray(reg["start_times"], np.int64),
                                         np.asarray(reg["end_times"], np.int64))
    return out


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def secs(ns):
    return Decimal(int(ns)) / NS


def test_charts_of_a_real_script(sp):
    sp.script(SCRIPT)
    assert sp("run", "-q", "-o", "out.h5", "script.py").returncode == 0
    proc = sp("plot", "out.h5", "-o", "charts", "--export-data")
    assert proc.returncode == 0, proc.stderr
    calls = h5_calls(sp.tmp / "out.h5")
    assert {name for _, name in calls} == {ODD, "leaf", "solve"}
    origin = min(int(s.min()) for s, _ in calls.values())
    out = sp.tmp / "charts"

    # Gantt: a lane per rank x region; its bars hold every call of it.
    gantt = svg(out / "gantt.svg")
    got = lanes(gantt)
    assert {k: v[1] for k, v in got.items()} == {k: len(s) for k, (s, _) in calls.items()}
    texts = "".join(gantt.itertext())
    assert "time since the first region entry [s]" in texts and "rank / region" in texts
    legend = [g for g in gantt.iter(SVG + "g") if g.get("class") == "legend"][0]
    assert ODD in "".join(legend.itertext())
    fills = {g.get(SPNS + "region"): g.get("fill") for g in gantt.iter(SVG + "g")
             if g.get(SPNS + "region")}
    # gantt_data.csv: every call, seconds from the first region entry, exact.
    rows = read_csv(out / "gantt_data.csv")
    assert rows[0] == ["rank", "region", "start", "end", "duration"]
    by = {}
    for rank, name, start, end, dur in rows[1:]:
        by.setdefault((int(rank), name), []).append((Decimal(start), Decimal(end), Decimal(dur)))
    assert by.keys() == calls.keys()
    for key, (s, e) in calls.items():
        assert by[key] == [(secs(a - origin), secs(b - origin), secs(b - a)) for a, b in zip(s, e)]

    # Flame: a tooltip on every box; the calls nest as the script nests them.
    boxes = flame_boxes(svg(out / "flame.svg"))
    assert sum(c for _, c in boxes) == sum(len(s) for s, _ in calls.values())
    assert {name for name, _ in boxes if name} <= {ODD, "leaf", "solve"}
    rows = read_csv(out / "flame_data.csv")
    assert rows[0] == ["rank", "depth", "region", "start", "duration", "lane"]
    depths = {}
    for rank, depth, name, start, dur, lane in rows[1:]:
        assert lane == "0"   # one thread
        depths[(name, int(depth))] = depths.get((name, int(depth)), 0) + 1
    assert depths == {(ODD, 0): 5, ("leaf", 1): 10, ("solve", 1): 5, ("leaf", 2): 5}

    # Durations: a bar per region in its Gantt colour; the CSV's numbers.
    stats = {}
    for (_, name), (s, e) in calls.items():
        d = (e - s).astype(np.int64)
        stats[name] = {"avg": d.sum() / len(d) / NS, "min": d.min() / NS, "max": d.max() / NS,
                       "total": d.sum() / NS}
    for metric in ("avg", "min", "max", "total"):
        root = svg(out / f"durations_{metric}.svg")
        bars = {g.get(SPNS + "region"): g.findall(SVG + "rect") for g in root.iter(SVG + "g")
                if g.get(SPNS + "region")}
        assert bars.keys() == stats.keys()
        for name, rects in bars.items():
            assert len(rects) == 1
            assert rects[0].get("fill") == fills[name]
            value = float(rects[0].find(SVG + "title").text.rsplit(": ", 1)[1].split()[0])
            assert math.isclose(value, stats[name][metric], abs_tol=1e-9)
    rows = read_csv(out / "durations_data.csv")
    assert rows[0] == ["file", "region", "metric", "value"]
    assert len(rows) == 1 + 4 * 3
    for file, name, metric, value in rows[1:]:
        assert file == "out.h5"
        assert math.isclose(float(value), stats[name][metric], abs_tol=1e-9)

    # region_statistics.json: summary --json's numbers, per file.
    doc = json.loads((out / "region_statistics.json").read_text(encoding="utf-8"))
    assert [f["file"] for f in doc["files"]] == ["out.h5"]
    got = {r["name"]: r for r in doc["files"][0]["regions"]}
    for (_, name), (s, e) in calls.items():
        d = (e - s).astype(np.float64) / NS
        r = got[name]
        assert r["calls"] == len(d)
        for key, want in (("total_s", d.sum()), ("mean_s", d.mean()), ("min_s", d.min()),
                          ("max_s", d.max()), ("std_s", d.std())):
            assert math.isclose(r[key], want, abs_tol=2e-9), (name, key)

    # One file: no speedup chart, one line says why.
    assert not (out / "speedup.svg").exists() and not (out / "speedup_data.csv").exists()
    assert [l for l in proc.stderr.splitlines() if "speedup" in l] == [
        "scope-profiler: plot: no speedup.svg: it needs files with at least two different "
        "numbers of ranks (--x-field)"]


def test_a_link_in_the_folder_is_replaced_not_written_through(sp):
    """A symlink planted in the charts folder under a chart's name (to the
    user's script) is replaced by the chart; the file it led to is left as
    it was (plot wrote the chart into it, status 0)."""
    sp.script(SCRIPT)
    assert sp("run", "-q", "-o", "out.h5", "script.py").returncode == 0
    assert sp("plot", "out.h5", "-o", "charts").returncode == 0
    names = sorted(p.name for p in (sp.tmp / "charts").iterdir())
    mine = "print('my analysis')\n"
    (sp.tmp / "analysis.py").write_text(mine)
    for name in names:
        (sp.tmp / "charts" / name).unlink()
        (sp.tmp / "charts" / name).symlink_to("../analysis.py")
    proc = sp("plot", "out.h5", "-o", "charts")
    assert proc.returncode == 0, proc.stderr
    assert (sp.tmp / "analysis.py").read_text() == mine
    charts = sp.tmp / "charts"
    assert sorted(p.name for p in charts.iterdir()) == names
    assert not any(p.is_symlink() for p in charts.iterdir())
    assert "<svg" in (charts / "gantt.svg").read_text()


def test_recursive_calls_stack_in_the_flame_chart(sp):
    sp.script("""
        def rec(n):
            if n:
                rec(n - 1)

        for i in range(3):
            rec(4)
    """)
    assert sp("run", "-q", "--recursive", "-o", "rec.h5", "script.py").returncode == 0
    proc = sp("plot", "rec.h5", "-o", "out", "--export-data", "--include", "*.rec")
    assert proc.returncode == 0, proc.stderr
    calls = {k: v for k, v in h5_calls(sp.tmp / "rec.h5").items() if k[1].endswith(".rec")}
    assert [len(s) for s, _ in calls.values()] == [15]
    assert {k: v[1] for k, v in lanes(svg(sp.tmp / "out" / "gantt.svg")).items()} == {
        k: 15 for k in calls}
    rows = read_csv(sp.tmp / "out" / "flame_data.csv")[1:]
    # Nested among the selected regions only: rec(4) is five calls deep.
    assert sorted(int(r[1]) for r in rows) == [d for d in range(5) for _ in range(3)]
    assert sum(c for _, c in flame_boxes(svg(sp.tmp / "out" / "flame.svg"))) == 15


def test_flamegraph_data_paths_are_unambiguous(sp):
    """flamegraph_data.csv joins a path's names with ';': a ';' inside a
    name is written ':' (as folded stacks write it), so "a;b" the region
    is no path a > b (before: the two rows read alike)."""
    sp.script("""
        import scope_profiler as sp
        with sp.region("semi;colon"):
            pass
        with sp.region("semi"):
            with sp.region("colon"):
                pass
    """)
    assert sp("run", "-q", "-o", "s.h5", "script.py").returncode == 0
    proc = sp("plot", "s.h5", "-o", "out", "--export-data")
    assert proc.returncode == 0, proc.stderr
    paths = [r[0] for r in read_csv(sp.tmp / "out" / "flamegraph_data.csv")[1:]]
    assert sorted(paths) == ["semi", "semi:colon", "semi;colon"], paths


def test_flame_data_tells_threads_apart(sp):
    """flame_data.csv's lane column: two threads' calls that overlap in
    time are told apart (before: rows of one rank and depth, no lane)."""
    sp.script("""
        import threading, time
        import scope_profiler as sp
        go = threading.Barrier(2)
        def work():
            go.wait()
            with sp.region("work"):
                time.sleep(0.02)
        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts: t.start()
        for t in ts: t.join()
    """)
    assert sp("run", "-q", "-o", "t.h5", "script.py").returncode == 0
    proc = sp("plot", "t.h5", "-o", "out", "--export-data")
    assert proc.returncode == 0, proc.stderr
    rows = read_csv(sp.tmp / "out" / "flame_data.csv")
    assert rows[0][-1] == "lane"
    lanes_seen = sorted(r[5] for r in rows[1:] if r[2] == "work")
    assert len(lanes_seen) == 2 and lanes_seen[0] != lanes_seen[1], rows


def hand_written(path, nranks, omp=None, solve=4.0):
    """nranks ranks; solve takes solve / nranks s on each, io 0.3 s on each."""
    with h5py.File(path, "w") as f:
        for rank in range(nranks):
            g = f.create_group(f"rank{rank}/regions")
            for name, start, dur in (("solve", 0.1, solve / nranks), ("io", 5.0, 0.3)):
                r = g.create_group(name)
                r.create_dataset("start_times", data=np.array([round(start * NS)], np.int64))
                r.create_dataset("end_times", data=np.array([round((start + dur) * NS)], np.int64))
        if omp is not None:
            f.create_group("metadata").attrs["omp_num_threads"] = str(omp)


def test_speedup_of_two_files_with_different_rank_counts(sp):
    hand_written(sp.tmp / "one.h5", 1)
    hand_written(sp.tmp / "two.h5", 2)
    proc = sp("plot", "two.h5", "one.h5", "-o", "out", "--export-data")
    assert proc.returncode == 0, proc.stderr
    out = sp.tmp / "out"
    rows = read_csv(out / "speedup_data.csv")
    assert rows[0] == ["region", "x", "time", "speedup"]
    assert {(r[0], r[1]): (Decimal(r[2]), float(r[3])) for r in rows[1:]} == {
        ("solve", "1"): (Decimal("4.000000000"), 1.0), ("solve", "2"): (Decimal("2.000000000"), 2.0),
        ("io", "1"): (Decimal("0.300000000"), 1.0), ("io", "2"): (Decimal("0.300000000"), 1.0)}
    root = svg(out / "speedup.svg")
    assert "one.h5" in next(root.iter(SVG + "text")).text     # against the smallest run
    assert len([p for p in root.iter(SVG + "polyline") if p.get("class") == "ideal"]) == 1
    points = {g.get(SPNS + "region"): len(g.findall(SVG + "circle")) for g in root.iter(SVG + "g")
              if g.get(SPNS + "region")}
    assert points == {"solve": 2, "io": 2}
    # Several files: one bar per file side by side, a legend naming them.
    root = svg(out / "durations_total.svg")
    for g in root.iter(SVG + "g"):
        if g.get(SPNS + "region"):
            assert len(g.findall(SVG + "rect")) == 2
    legend = [g for g in root.iter(SVG + "g") if g.get("class") == "legend"][0]
    assert [t.text for t in legend.iter(SVG + "text")] == ["two.h5", "one.h5"]
    doc = json.loads((out / "region_statistics.json").read_text())
    assert [f["file"] for f in doc["files"]] == ["two.h5", "one.h5"]
    solve = [r for r in doc["files"][0]["regions"] if r["name"] == "solve"][0]
    assert solve["rank_total_min_s"] == solve["rank_total_max_s"] == 2.0
    assert solve["imbalance"] == 1.0
    assert "gantt.svg, flame.svg and flamegraph.svg show two.h5" in proc.stderr


def test_x_field_from_the_metadata(sp):
    hand_written(sp.tmp / "a.h5", 2, omp=1, solve=8.0)
    hand_written(sp.tmp / "b.h5", 2, omp=4, solve=2.0)
    proc = sp("plot", "a.h5", "b.h5", "-o", "same")
    assert proc.returncode == 0, proc.stderr
    assert not (sp.tmp / "same" / "speedup.svg").exists()
    assert len([l for l in proc.stderr.splitlines() if "no speedup.svg" in l]) == 1
    proc = sp("plot", "a.h5", "b.h5", "-o", "omp", "--x-field", "omp_num_threads", "--export-data")
    assert proc.returncode == 0, proc.stderr
    svg(sp.tmp / "omp" / "speedup.svg")
    rows = read_csv(sp.tmp / "omp" / "speedup_data.csv")[1:]
    assert [(r[0], r[1], r[3]) for r in rows if r[0] == "solve"] == [
        ("solve", "1", "1.000000"), ("solve", "4", "4.000000")]
    # a run without the field is left out, and said so
    hand_written(sp.tmp / "c.h5", 2)
    proc = sp("plot", "a.h5", "b.h5", "c.h5", "-o", "three", "--x-field", "omp_num_threads",
              "--export-data")
    assert proc.returncode == 0, proc.stderr
    assert [l for l in proc.stderr.splitlines() if "c.h5" in l] == [
        "scope-profiler: plot: c.h5: its metadata has no omp_num_threads: not in the speedup chart"]
    assert {r[1] for r in read_csv(sp.tmp / "three" / "speedup_data.csv")[1:]} == {"1", "4"}
    proc = sp("plot", "a.h5", "-o", "x", "--x-field", "cores")
    assert proc.returncode == 2
    one_line_error(proc, "--x-field", "cores")


def test_aggregation_mode_gets_durations_and_statistics_only(sp):
    sp.script(SCRIPT)
    assert sp("run", "-q", "--aggregate", "-o", "agg.h5", "script.py").returncode == 0
    proc = sp("plot", "agg.h5", "-o", "out", "--metrics", "total,avg")
    # what needs per-call events cannot be drawn: status 1, one line naming the file
    assert proc.returncode == 1, proc.stderr
    out = sp.tmp / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "durations_avg.svg", "durations_total.svg", "region_statistics.json", "report.html"]
    assert [l for l in proc.stderr.splitlines() if "agg.h5" in l] == [
        "scope-profiler: plot: agg.h5: no per-call events (aggregation mode, or none selected): "
        "no Gantt chart, flame chart or timeline"]
    root = svg(out / "durations_total.svg")
    assert {g.get(SPNS + "region") for g in root.iter(SVG + "g") if g.get(SPNS + "region")} == {
        ODD, "leaf", "solve"}
    doc = json.loads((out / "region_statistics.json").read_text(encoding="utf-8"))
    leaf = [r for r in doc["files"][0]["regions"] if r["name"] == "leaf"][0]
    assert leaf["calls"] == 15

    # beside a file with events, it is drawn from that one: status 0, a note
    assert sp("run", "-q", "-o", "ev.h5", "script.py").returncode == 0
    proc = sp("plot", "agg.h5", "ev.h5", "-o", "both", "--metrics", "total")
    assert proc.returncode == 0, proc.stderr
    assert (sp.tmp / "both" / "gantt.svg").exists() and (sp.tmp / "both" / "report.html").exists()
    assert [l for l in proc.stderr.splitlines() if "agg.h5" in l] == [
        "scope-profiler: plot: agg.h5: no per-call events (aggregation mode, or none selected): "
        "no Gantt or flame chart of it"]


def test_bad_input_says_one_line_and_draws_what_it_can(sp):
    hand_written(sp.tmp / "good.h5", 1)
    proc = sp("plot", "missing.h5", "good.h5", "-o", "out")
    assert proc.returncode == 1
    errors = [l for l in proc.stderr.splitlines() if "missing.h5" in l]
    assert len(errors) == 1 and errors[0].startswith("scope-profiler: plot: ")
    assert (sp.tmp / "out" / "gantt.svg").exists() and (sp.tmp / "out" / "region_statistics.json").exists()
    assert not [p for p in (sp.tmp / "out").iterdir() if ".tmp." in p.name]

    sp.script("x = 1\n", name="none.py")
    assert sp("run", "-q", "-o", "none.h5", "none.py").returncode == 0
    proc = sp("plot", "none.h5", "-o", "empty")
    assert proc.returncode == 1
    one_line_error(proc, "none.h5", "no region")
    assert not (sp.tmp / "empty").exists()

    (sp.tmp / "afile").write_text("keep")
    proc = sp("plot", "good.h5", "-o", "afile")
    assert proc.returncode == 1
    one_line_error(proc, "afile", "not a directory")
    assert (sp.tmp / "afile").read_text() == "keep"

    proc = sp("plot", "good.h5")
    assert proc.returncode == 2
    one_line_error(proc, "-o DIR")
    proc = sp("plot", "good.h5", "-o", "m", "--metrics", "avg,median")
    assert proc.returncode == 2
    one_line_error(proc, "median")


def test_selection_narrows_every_chart(sp):
    hand_written(sp.tmp / "four.h5", 4)
    proc = sp("plot", "four.h5", "-o", "out", "--include", "solve", "--ranks", "1,3",
              "--export-data")
    assert proc.returncode == 0, proc.stderr
    out = sp.tmp / "out"
    assert set(lanes(svg(out / "gantt.svg"))) == {(1, "solve"), (3, "solve")}
    assert {r[0] for r in read_csv(out / "flame_data.csv")[1:]} == {"1", "3"}
    assert {r[1] for r in read_csv(out / "durations_data.csv")[1:]} == {"solve"}
    doc = json.loads((out / "region_statistics.json").read_text())
    assert doc["files"][0]["ranks"] == [1, 3]


@pytest.mark.parametrize("selection", [["--include", "nomatch"], ["--ranks", "7"],
                                       ["--exclude", "re:.*"]])
def test_a_selection_that_keeps_nothing_is_one_line_and_no_folder(sp, selection):
    """A selection that keeps no region with calls: one line, status 1,
    no folder (before: six lines about each chart, then a folder with an
    empty report.html)."""
    hand_written(sp.tmp / "four.h5", 4)
    proc = sp("plot", "four.h5", "-o", "out", *selection)
    assert proc.returncode == 1
    one_line_error(proc, "plot: the selection (--include, --exclude, --ranks) keeps no region with calls "
                   "in four.h5; nothing to draw")
    assert not (sp.tmp / "out").exists()


def test_a_million_calls_are_merged_into_charts_of_a_few_mib(sp):
    # 4 ranks x (50000 outer calls of 20 us, each holding 4 inner calls of 2 us)
    with h5py.File(sp.tmp / "big.h5", "w") as f:
        for rank in range(4):
            g = f.create_group(f"rank{rank}/regions")
            outer = np.arange(50_000, dtype=np.int64) * 25_000 + rank * 100
            inner = (outer[:, None] + np.array([1000, 5000, 9000, 13000])[None, :]).ravel()
            for name, s, d in (("outer", outer, 20_000), ("inner", inner, 2_000)):
                r = g.create_group(name)
                r.create_dataset("start_times", data=s)
                r.create_dataset("end_times", data=s + d)
    proc = sp("plot", "big.h5", "-o", "out", "--metrics", "total")
    assert proc.returncode == 0, proc.stderr
    for name in ("gantt.svg", "flame.svg", "report.html"):
        assert (sp.tmp / "out" / name).stat().st_size < 5 * 2**20, name
    # report.html's timeline: every call in a bar, a few thousand bars a lane at most
    page = (sp.tmp / "out" / "report.html").read_text(encoding="utf-8")
    data = json.loads(page.split('<script type="application/json" id="sp-data">')[1].split("</script>")[0])
    assert {(l["rank"], l["region"]): sum(l["bars"][2::3]) for l in data["lanes"]} == {
        (r, n): c for r in range(4) for n, c in (("outer", 50_000), ("inner", 200_000))}
    assert all(len(l["bars"]) // 3 <= 2 * 4096 for l in data["lanes"])
    assert "1000000 of 1000000 calls are in merged bars" in page
    gantt = svg(sp.tmp / "out" / "gantt.svg")
    got = lanes(gantt)
    assert {k: v[1] for k, v in got.items()} == {
        (r, n): c for r in range(4) for n, c in (("outer", 50_000), ("inner", 200_000))}
    assert all(bars <= 2 * 1200 for bars, _ in got.values())
    note = [t for t in gantt.iter(SVG + "text") if t.get("class") == "note"]
    assert len(note) == 1 and note[0].text.startswith("1000000 of 1000000 calls narrower than")
    flame = svg(sp.tmp / "out" / "flame.svg")
    assert sum(c for _, c in flame_boxes(flame)) == 1_000_000
    assert [t for t in flame.iter(SVG + "text") if t.get("class") == "note"]


def test_the_time_axis_starts_at_the_files_first_entry_whatever_ranks_are_shown(sp):
    # Rank 1 starts 1 s after rank 0: shown alone, its calls still start at
    # 1 s, so charts of different ranks share one origin (the read API's
    # plot_* frame theirs the same way).
    with h5py.File(sp.tmp / "late.h5", "w") as f:
        for rank, start in ((0, 0.5), (1, 1.5)):
            r = f.create_group(f"rank{rank}/regions/solve")
            r.create_dataset("start_times", data=np.array([round(start * NS)], np.int64))
            r.create_dataset("end_times", data=np.array([round((start + 0.25) * NS)], np.int64))
    proc = sp("plot", "late.h5", "-o", "out", "--ranks", "1", "--export-data")
    assert proc.returncode == 0, proc.stderr
    rows = read_csv(sp.tmp / "out" / "gantt_data.csv")
    assert rows[0] == ["rank", "region", "start", "end", "duration"]
    assert [(r[0], r[1], float(r[2]), float(r[4])) for r in rows[1:]] == [("1", "solve", 1.0, 0.25)]


def test_metadata_sizes_that_are_not_whole_numbers_are_left_out(sp):
    # omp_num_threads comes from the environment as written: "1e300" or
    # "2.5" is no run size (it once made the speedup axis endless).
    hand_written(sp.tmp / "a.h5", 1, omp="1e-300")
    hand_written(sp.tmp / "b.h5", 1, omp="1e300")
    hand_written(sp.tmp / "c.h5", 1, omp="2.5")
    proc = sp("plot", "a.h5", "b.h5", "c.h5", "-o", "out", "--x-field", "omp_num_threads",
              timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not (sp.tmp / "out" / "speedup.svg").exists()
    assert len([l for l in proc.stderr.splitlines() if "no speedup.svg" in l]) == 1


def test_calls_spanning_more_than_64_bits_of_ns_are_refused_with_one_line(sp):
    with h5py.File(sp.tmp / "far.h5", "w") as f:
        for name, start in (("a", -5 * 10**18), ("b", 5 * 10**18)):
            r = f.create_group(f"rank0/regions/{name}")
            r.create_dataset("start_times", data=np.array([start], np.int64))
            r.create_dataset("end_times", data=np.array([start + 1000], np.int64))
    proc = sp("plot", "far.h5", "-o", "out", "--export-data")
    assert proc.returncode == 1
    lines = [l for l in proc.stderr.splitlines() if "2^63" in l]
    assert len(lines) == 2 and all(l.startswith("scope-profiler: plot: ") for l in lines), proc.stderr
    assert not (sp.tmp / "out" / "gantt.svg").exists()
    svg(sp.tmp / "out" / "durations_total.svg")    # what can be drawn still is


def test_a_chart_that_cannot_be_written_is_said_and_left_out(sp):
    # A file size limit (as a full disk): every file that does not fit is
    # one line naming it, none is left half-written, the status is 1.
    import resource
    import signal
    import subprocess
    from conftest import BINARY
    sp.script(SCRIPT)
    assert sp("run", "-q", "-o", "good.h5", "script.py").returncode == 0

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run([BINARY, "plot", "good.h5", "-o", "out", "--export-data"], cwd=sp.tmp,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert proc.returncode == 1
    out = sp.tmp / "out"
    said = [l for l in proc.stderr.splitlines() if "cannot write" in l]
    assert said and all(l.startswith("scope-profiler: plot: cannot write 'out/") for l in said), \
        proc.stderr
    for name in ("gantt.svg", "flame.svg", "report.html"):
        path = out / name
        assert (f"'out/{name}'" in proc.stderr) != path.exists(), (name, proc.stderr)
    for path in out.iterdir():               # what is there is whole
        if path.suffix == ".svg":
            svg(path)
        assert ".tmp" not in path.name
