"""The pictures of `scope-profiler plot` on the profiles users bring: the
heaviest regions in distinct colours, the same in every chart; one
definition of a region's total (the summary's); big --recursive profiles
kept readable and small; one-rank reports without per-rank columns."""
import csv
import json
import xml.etree.ElementTree as ET

import h5py

from conftest import ROOT, tree

SVG = "{http://www.w3.org/2000/svg}"
SPNS = "{urn:scope-profiler:plot}"


def svg(path):
    return ET.parse(path).getroot()


def region_fills(root):
    """{region: fill} of a chart's groups that name a region and give a fill."""
    return {g.get(SPNS + "region"): g.get("fill") for g in root.iter(SVG + "g")
            if g.get(SPNS + "region") and g.get("fill")}


def test_the_example_s_regions_get_distinct_colours(sp):
    script = (ROOT / "examples" / "mpi_timestep.py").read_text()
    (sp.tmp / "step.py").write_text(script)
    env = {"STEPS": "3", "SOLVE_SECONDS": "0.001"}
    assert sp("run", "-q", "-o", "step.h5", "step.py", env=env).returncode == 0
    proc = sp("plot", "step.h5", "-o", "out")
    assert proc.returncode == 0, proc.stderr
    fills = region_fills(svg(sp.tmp / "out" / "gantt.svg"))
    assert {"solve", "exchange", "timestep"} <= fills.keys()
    assert len({fills["solve"], fills["exchange"], fills["timestep"]}) == 3, fills


def test_up_to_a_palette_of_regions_all_differ_and_match_across_charts(sp):
    # 20 regions (the palette's size) of different weights.
    sp.script("""
        import time
        import scope_profiler as sp

        for i in range(20):
            with sp.region("r%02d" % i):
                time.sleep(0.0005 * (i + 1))
    """)
    assert sp("run", "-q", "-o", "many.h5", "script.py").returncode == 0
    proc = sp("plot", "many.h5", "-o", "out")
    assert proc.returncode == 0, proc.stderr
    out = sp.tmp / "out"
    gantt = region_fills(svg(out / "gantt.svg"))
    assert len(gantt) == 20 and len(set(gantt.values())) == 20, gantt
    # The durations chart's bars and the flame chart's boxes: the same colours.
    root = svg(out / "durations_total.svg")
    for g in root.iter(SVG + "g"):
        name = g.get(SPNS + "region")
        if name:
            assert g.find(SVG + "rect").get("fill") == gantt[name], name
    for rect in svg(out / "flame.svg").iter(SVG + "rect"):
        title = rect.find(SVG + "title")
        if title is not None and rect.get(SPNS + "calls") is None:
            assert rect.get("fill") == gantt[title.text.split("\n")[0]]
    # The heaviest region (by the summary's total) gets the palette's first
    # colour; the report's timeline the same colours.
    regions = json.loads(sp("summary", "--json", "many.h5").stdout)["regions"]
    heaviest = max(regions, key=lambda r: r["total_s"])["name"]
    assert gantt[heaviest] == "#3b75af"
    html = (out / "report.html").read_text(encoding="utf-8")
    for name, fill in gantt.items():
        assert f'"colour":"{fill}"' in html


def test_durations_total_is_the_summary_s_total_for_a_recursive_function(sp):
    sp.script("""
        import time

        def rec(n):
            time.sleep(0.002)
            if n:
                rec(n - 1)

        for i in range(3):
            rec(5)
    """)
    assert sp("run", "-q", "--recursive", "-o", "rec.h5", "script.py").returncode == 0
    summ = sp("summary", "--json", "rec.h5")
    assert summ.returncode == 0, summ.stderr
    total = {r["name"]: r["total_s"] for r in json.loads(summ.stdout)["regions"]}
    name = [n for n in total if n.endswith(".rec")][0]
    proc = sp("plot", "rec.h5", "-o", "out", "--export-data")
    assert proc.returncode == 0, proc.stderr
    root = svg(sp.tmp / "out" / "durations_total.svg")
    got = {}
    for g in root.iter(SVG + "g"):
        if g.get(SPNS + "region"):
            title = g.find(SVG + "rect").find(SVG + "title").text
            got[g.get(SPNS + "region")] = float(title.rsplit(": ", 1)[1].split()[0])
    # Six nested calls of ~2 ms each: the raw sum counts the inner ones again
    # (~6x), the summary's total counts each outermost call once.
    assert abs(got[name] - total[name]) < 1e-6, (got[name], total[name])
    with open(sp.tmp / "out" / "durations_data.csv", newline="") as f:
        rows = [r for r in csv.reader(f) if r[1] == name and r[2] == "total"]
    assert len(rows) == 1 and abs(float(rows[0][3]) - total[name]) < 1e-6


BIG = """
def f{i}(d):
    if d > 0 and {i} % 10 != 9:
        f{j}(d - 1)
"""


def test_a_recursive_profile_of_3000_functions_gives_small_readable_pictures(sp):
    n = 3000
    body = "".join(BIG.format(i=i, j=i + 1) for i in range(n))
    body += f"\nfor i in range(0, {n}, 10):\n    globals()['f%d' % i](9)\n"
    (sp.tmp / "big.py").write_text(body)
    assert sp("run", "-q", "--recursive", "-o", "big.h5", "big.py").returncode == 0
    proc = sp("plot", "big.h5", "-o", "out", "--export-data")
    assert proc.returncode == 0, proc.stderr
    out = sp.tmp / "out"
    # Gantt: the 40 heaviest lanes and a line for the rest, a screen or so high
    # (it was 61,680 px for this profile); gantt_data.csv keeps every lane.
    gantt = svg(out / "gantt.svg")
    assert int(gantt.get("height")) < 1200
    drawn = region_fills(gantt)
    assert 1 < len(drawn) <= 40
    more = [t.text for t in gantt.iter(SVG + "text") if t.get("class") == "more"]
    assert len(more) == 1 and more[0].startswith(f"\u2026 {n + 2 - len(drawn)} more regions")
    with open(out / "gantt_data.csv", newline="") as f:
        assert len({row["region"] for row in csv.DictReader(f)}) == n + 2
    # The lanes are the heaviest by the summary's total, in that order.
    regions = json.loads(sp("summary", "--json", "big.h5").stdout)["regions"]
    order = [r["name"] for r in sorted(regions, key=lambda r: (-r["total_s"], r["name"]))]
    lanes = [g.get(SPNS + "region") for g in gantt.iter(SVG + "g") if g.get(SPNS + "region")]
    assert set(lanes) == set(order[:len(lanes)])
    # Durations: bounded too, one line for the rest.
    dur = svg(out / "durations_total.svg")
    assert int(dur.get("height")) < 1200
    assert [t.text for t in dur.iter(SVG + "text") if t.get("class") == "more"]
    # The report stays small (5.4 MB before), its table one row per region
    # up to 100 and a row for the rest; one rank: no per-rank columns.
    html = (out / "report.html").read_text(encoding="utf-8")
    assert len(html.encode()) < 600_000
    assert html.count("<tr><th scope=\"row\">") == 100
    assert "2902 more regions" in html
    assert "<th>imbalance</th>" not in html and "max rank" not in html
    # Flame: a legend of the heaviest regions' colours and a line for the rest.
    flame = svg(out / "flame.svg")
    legend = [g for g in flame.iter(SVG + "g") if g.get("class") == "legend"]
    assert len(legend) == 1 and len(legend[0].findall(SVG + "rect")) == 20
    assert [t.text for t in flame.iter(SVG + "text") if t.get("class") == "more"]


def test_long_names_are_cut_in_the_middle_as_summary_cuts_them(sp):
    long = "package.subpackage.module_with_a_long_name.Class"
    sp.script(f"""
        import scope_profiler as sp
        for tail in ("alpha", "beta"):
            with sp.region("{long}." + tail):
                pass
    """)
    assert sp("run", "-q", "-o", "n.h5", "script.py").returncode == 0
    assert sp("plot", "n.h5", "-o", "out").returncode == 0
    texts = ["".join(t.itertext()) for t in svg(sp.tmp / "out" / "gantt.svg").iter(SVG + "text")]
    labels = [t for t in texts if t.startswith("0 \u00b7 ")]
    assert len(labels) == 2 and len(set(labels)) == 2, labels
    assert all("\u2026" in t and t.endswith(("alpha", "beta")) for t in labels), labels


def test_the_flame_graph_merges_call_paths_heaviest_first(sp):
    """flamegraph.svg: the summary's call tree, each path once, as wide as its
    total, the heaviest child leftmost although it ran last."""
    sp.script("""
        import time
        import scope_profiler as sp

        def leaf(s):
            time.sleep(s)

        def light():
            leaf(0.004)

        def heavy():
            for _ in range(3):
                leaf(0.006)

        def main():
            light()
            light()
            heavy()

        main()
    """)
    assert sp("run", "-q", "--recursive", "-o", "r.h5", "script.py").returncode == 0
    proc = sp("plot", "r.h5", "-o", "out", "--export-data")
    assert proc.returncode == 0, proc.stderr
    out = sp.tmp / "out"
    # the data: every path of the file's call tree once, with its calls and total
    with h5py.File(sp.tmp / "r.h5") as f:
        nodes = tree(f)
    paths = {}
    for i, (parent, name, calls, ns) in enumerate(nodes):
        path = name if parent < 0 else paths[parent][0] + ";" + name
        paths[i] = (path, calls, ns)
    with open(out / "flamegraph_data.csv", newline="") as fh:
        rows = {r["path"]: (int(r["calls"]), round(float(r["total"]) * 1e9)) for r in csv.DictReader(fh)}
    assert rows == {p: (c, ns) for p, c, ns in paths.values()}
    # the picture: a box per path, as wide as its total, heavy left of light
    boxes = {}
    for rect in svg(out / "flamegraph.svg").iter(SVG + "rect"):
        title = rect.find(SVG + "title")
        if title is not None:
            boxes.setdefault(title.text.split("\n")[0], []).append(
                (float(rect.get("x")), float(rect.get("width")), int(rect.get(SPNS + "calls"))))
    (hx, hw, hcalls), = boxes["__main__.heavy"]
    (lx, lw, lcalls), = boxes["__main__.light"]
    assert (hcalls, lcalls) == (1, 2)
    assert hx < lx and abs(hx + hw - lx) < 0.01
    total = {p.rsplit(";", 1)[-1]: ns for p, (c, ns) in rows.items()
             if p.endswith(("main;__main__.heavy", "main;__main__.light"))}
    assert abs(hw / lw - total["__main__.heavy"] / total["__main__.light"]) < 0.01
    # one leaf box under each (its calls merged), two call paths of leaf
    assert sorted(c for _, _, c in boxes["__main__.leaf"]) == [2, 3]
    # report.html shows it too
    assert 'data-chart="flamegraph.svg"' in (out / "report.html").read_text(encoding="utf-8")
