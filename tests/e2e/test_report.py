"""report.html of `scope-profiler plot` in a real browser: headless Chromium
(Debian's `chromium`, installed by scripts/install-deps.sh) opens the page and
each SVG chart; the screenshots must not be blank, the timeline the page's
script builds must hold every region of the profile and one rank filter entry
per rank, and the page must reference nothing outside itself."""
import html.parser
import json
import re
import shutil
import struct
import subprocess
import zlib

import h5py
import numpy as np
import pytest

from conftest import regions

# The same whatever Python the tool embeds: the host's suite runs it (conftest's --other-python).
pytestmark = pytest.mark.any_python

NS = 1_000_000_000
ODD = 'step <&"\'> \u00fc'     # HTML's specials and a non-ASCII letter
CLOSER = "leaf </script><!--"  # would end the page's script if not escaped

SCRIPT = """
    import time
    import scope_profiler as sp

    @sp.profile(%r)
    def leaf():
        time.sleep(0.002)

    for step in range(6):
        with sp.region(%r):
            leaf()
            with sp.region("solve"):
                leaf()
                leaf()
""" % (CLOSER, ODD)


# ---- the browser ----------------------------------------------------------

def chromium_binary():
    path = shutil.which("chromium")
    if not path:
        pytest.fail("chromium is not installed: the browser tests of report.html need Debian's "
                    "`chromium`; run scripts/install-deps.sh")
    return path


def chromium(tmp_path, *args):
    """Runs headless Chromium with a private profile; returns its stdout."""
    cmd = [chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu",
           "--no-first-run", "--disable-extensions", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", *map(str, args)]
    # slow on a loaded machine; no time is asserted, the limit only stops a hang
    proc = subprocess.run(cmd, capture_output=True, timeout=600,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode("utf-8")


def screenshot(tmp_path, target, name):
    png = tmp_path / name
    chromium(tmp_path, f"--screenshot={png}", "--window-size=1200,900", target.as_uri())
    return decode_png(png.read_bytes())


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG:
    its IDAT chunks inflated and each row unfiltered (PNG's five filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, colour, _, _, interlace = head
    assert depth == 8 and colour in (2, 6) and interlace == 0, head
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def assert_not_blank(shot, what):
    width, height, rows = shot
    assert (width, height) == (1200, 900), what
    pixels = [p for row in rows for p in row]
    colours = set(pixels)
    ink = sum(1 for p in pixels if p != (255, 255, 255))
    assert len(colours) >= 8, (what, len(colours))
    assert ink > width * height // 200, (what, ink)


def hex_rgb(colour):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


# ---- the page, parsed -----------------------------------------------------

class Page(html.parser.HTMLParser):
    """The elements of a page, (tag, attrs) in order, and its style and
    script texts; a <script> or <style> element's content is text here, as a
    browser reads it, never tags."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.texts, self.scripts, self._open = [], [], [], None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = (tag, dict(attrs))
            self.texts.append("")

    def handle_endtag(self, tag):
        if self._open and tag == self._open[0]:
            if tag == "script":
                self.scripts.append((self._open[1], self.texts[-1]))
            self._open = None

    def handle_data(self, data):
        if self._open:
            self.texts[-1] += data

    def find(self, tag, cls=None, **attrs):
        return [a for t, a in self.elements if t == tag and (cls is None or cls in a.get("class", "").split())
                and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


SCHEME = re.compile(r"^\s*[a-zA-Z][a-zA-Z0-9+.-]*:")


def assert_self_contained(text):
    page = Page(text)
    for tag, attrs in page.elements:
        for key, value in attrs.items():
            if key in ("src", "href", "xlink:href", "srcset", "poster", "data", "action"):
                assert value is not None and value.startswith("#"), (tag, key, value)
                assert not SCHEME.match(value), (tag, key, value)
        assert tag not in ("link", "iframe", "object", "embed", "img", "base"), tag
    for body in page.texts:
        assert "@import" not in body
        for url in re.findall(r"url\(\s*['\"]?([^'\")]*)", body):
            assert url.startswith("#"), url
    # the only URLs at all: SVG's namespace name, which nothing fetches
    for m in re.finditer(r"https?://[^\"'\s<>]*", text):
        assert m.group(0) == "http://www.w3.org/2000/svg", m.group(0)
        assert text[max(0, m.start() - 7):m.start()] == 'xmlns="', text[m.start() - 40:m.end()]
    return page


def embedded_data(page):
    data = [body for attrs, body in page.scripts if attrs.get("id") == "sp-data"]
    assert len(data) == 1 and data[0].lstrip().startswith("{")
    return json.loads(data[0])


# ---- the tests ------------------------------------------------------------

def test_report_of_a_real_script_in_a_browser(sp, tmp_path):
    sp.script(SCRIPT)
    assert sp("run", "-q", "-o", "out.h5", "script.py").returncode == 0
    proc = sp("plot", "out.h5", "-o", "out", "--metrics", "total,max")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    with h5py.File(tmp_path / "out.h5") as f:
        recorded = {name: int(r.attrs["num_calls"]) for name, r in regions(f).items()}
    assert set(recorded) == {ODD, CLOSER, "solve"}

    text = (out / "report.html").read_text(encoding="utf-8")
    page = assert_self_contained(text)
    # the data the script draws from: every region's lane, every call in its bars
    data = embedded_data(page)
    got = {(l["rank"], l["region"]): sum(l["bars"][2::3]) for l in data["lanes"]}
    assert got == {(0, n): c for n, c in recorded.items()}
    # every chart the run drew is inlined, and the statistics are a table
    charts = sorted(p.name for p in out.iterdir() if p.suffix == ".svg")
    assert charts == ["durations_max.svg", "durations_total.svg", "flame.svg", "flamegraph.svg", "gantt.svg"]
    assert sorted(a["data-chart"] for a in page.find("div", "chart")) == charts
    assert text.count("<svg ") == len(charts)
    assert len(page.find("table", "stats", data_file="out.h5")) == 1

    # after the page's script ran: a lane per region, a filter entry per rank
    dom = Page(chromium(tmp_path, "--dump-dom", (out / "report.html").as_uri()))
    assert dom.find("div", id="timeline")[0].get("data-ready") == "yes"
    lanes = dom.find("div", "lane")
    assert sorted(a["data-region"] for a in lanes) == sorted(recorded)
    assert {a["data-rank"] for a in lanes} == {"0"}
    assert [a["data-rank"] for a in dom.find("input", type="checkbox")] == ["0"]

    # the page and each chart, drawn: not blank; the timeline (the top of the
    # page, above the statistics and the charts) shows every region's colour
    width, height, rows = screenshot(tmp_path, out / "report.html", "report.png")
    assert_not_blank((width, height, rows), "report.html")
    # (more than the 10 x 10 swatches of the lane labels: the bars of the canvas)
    top = [p for row in rows[:height * 2 // 5] for p in row]
    for lane in data["lanes"]:
        assert top.count(hex_rgb(lane["colour"])) > 2000, lane["region"]
    for name in charts:
        assert_not_blank(screenshot(tmp_path, out / name, name + ".png"), name)


def hand_written(path, nranks):
    """nranks ranks, each with "solve" (nranks - rank calls) and ODD (one)."""
    with h5py.File(path, "w") as f:
        for rank in range(nranks):
            g = f.create_group(f"rank{rank}/regions")
            for name, n in (("solve", nranks - rank), (ODD, 1)):
                starts = np.arange(n, dtype=np.int64) * NS // 10 + (NS if name == ODD else 0)
                r = g.create_group(name)
                r.create_dataset("start_times", data=starts)
                r.create_dataset("end_times", data=starts + NS // 20)


def test_rank_filter_has_one_entry_per_rank(sp, tmp_path):
    hand_written(tmp_path / "three.h5", 3)
    hand_written(tmp_path / "one.h5", 1)
    proc = sp("plot", "three.h5", "one.h5", "-o", "out", "--metrics", "avg")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    page = assert_self_contained((out / "report.html").read_text(encoding="utf-8"))
    assert {a["data-file"] for a in page.find("table", "stats")} == {"three.h5", "one.h5"}
    dom = Page(chromium(tmp_path, "--dump-dom", (out / "report.html").as_uri()))
    assert [a["data-rank"] for a in dom.find("input", type="checkbox")] == ["0", "1", "2"]
    assert sorted((a["data-rank"], a["data-region"]) for a in dom.find("div", "lane")) == sorted(
        (str(r), n) for r in range(3) for n in ("solve", ODD))
    # two files of different rank counts: the speedup chart, in the page too
    assert (out / "speedup.svg").exists()
    assert [a["data-chart"] for a in page.find("div", "chart")].count("speedup.svg") == 1
    assert_not_blank(screenshot(tmp_path, out / "speedup.svg", "speedup.png"), "speedup.svg")


def test_aggregation_mode_page_says_why_there_is_no_timeline(sp, tmp_path):
    sp.script(SCRIPT)
    assert sp("run", "-q", "--aggregate", "-o", "agg.h5", "script.py").returncode == 0
    proc = sp("plot", "agg.h5", "-o", "out", "--metrics", "total")
    assert proc.returncode == 1
    out = tmp_path / "out"
    text = (out / "report.html").read_text(encoding="utf-8")
    page = assert_self_contained(text)
    assert page.scripts == []
    assert "No timeline: agg.h5: no per-call events (aggregation mode" in text
    assert [a["data-chart"] for a in page.find("div", "chart")] == ["durations_total.svg"]
    assert_not_blank(screenshot(tmp_path, out / "report.html", "agg.png"), "report.html")


DURATIONS = """
    import time
    import scope_profiler as sp
    for name, seconds in (("none", 0), ("micro", 2e-6), ("milli", 3e-4), ("centi", 0.02)):
        for _ in range(3):
            with sp.region(name):
                if seconds:
                    time.sleep(seconds)
"""


# (ns, sp_render_duration's text): ties at two, one and no decimals, in µs and s
TIES = [(2125, "2.12 \u00b5s"), (2375, "2.38 \u00b5s"), (12250, "12.2 \u00b5s"), (100500, "100 \u00b5s"),
        (101500, "102 \u00b5s"), (2125000000, "2.12 s"), (1005, "1.00 \u00b5s"), (2125000, "2.12 ms"),
        (500, "500 ns")]


def test_the_page_writes_a_duration_as_summary_does(sp, tmp_path):
    """One time formatter: the timeline's tooltip says a call's duration with
    summary's rule (its unit, three digits), run in the browser on the exact
    totals, minima and maxima that summary's table prints."""
    sp.script(DURATIONS)
    assert sp("run", "-q", "-o", "d.h5", "script.py").returncode == 0
    assert sp("plot", "d.h5", "-o", "out").returncode == 0
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    function = re.search(r"function duration\(ns\) \{.*?\n  \}\n", page, re.S).group(0)
    report = json.loads(sp("summary", "--json", "d.h5").stdout)
    lines = sp("summary", "--flat", "d.h5").stdout.splitlines()
    header = lines.index(next(l for l in lines if l.startswith("region")))
    cells = {}
    for line in lines[header + 2:header + 2 + len(report["regions"])]:
        name, _, *times = re.split(r"\s\s+|(?<=\d) (?=\d)", line.strip())
        cells[name] = times
    wanted, printed = [], []
    for r in report["regions"]:
        for key, column in (("total_s", 0), ("min_s", 3), ("max_s", 4)):
            wanted.append(round(r[key] * NS))
            printed.append(cells[r["name"]][column])
    assert len(set(p.split()[-1] for p in printed)) >= 2, printed    # µs and ms at least
    # and exact ties, which toFixed() rounds up and printf (summary) to even:
    # what sp_render_duration() prints for them (a run's times hit one ~1% of the time)
    for ns, text in TIES:
        wanted.append(ns)
        printed.append(text)
    probe = tmp_path / "probe.html"
    probe.write_text("<html><body><pre id='o'></pre><script>" + function +
                     "document.getElementById('o').textContent = JSON.stringify(%s.map(duration));"
                     "</script></body></html>" % json.dumps(wanted), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", probe.as_uri())
    shown = json.loads(html.unescape(re.search(r"<pre id=\"o\">(.*?)</pre>", dom, re.S).group(1)))
    assert shown == printed
