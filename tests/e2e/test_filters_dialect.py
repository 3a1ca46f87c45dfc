"""One region-filter dialect in every command: --include/--exclude take a
glob matched against the whole name, or re:EXPR (POSIX extended, searched),
documented once (FILTERS in man scope-profiler); the read API's include= and
exclude= (events(), get_regions(), the plot_* charts) the same."""
import csv
import io
import json

import pytest

from conftest import ROOT, one_line_error

SCRIPT = """
import scope_profiler as sp

def solve_a(): pass
def solve_b(): pass
def io_read(): pass
for _ in range(2):
    solve_a(); solve_b(); io_read()
for name in ("solve", "solver", "mesh.refine"):
    with sp.region(name):
        pass
"""

# (pattern, the names it keeps among the explicit regions)
CASES = [
    ("solve", {"solve"}),                        # a glob is the whole name
    ("solve*", {"solve", "solver"}),
    ("mesh.*", {"mesh.refine"}),
    ("re:solve", {"solve", "solver"}),           # re: searches
    ("re:^solve$", {"solve"}),
    ("re:\\.", {"mesh.refine"}),
    ("*.", set()),
]
EXPLICIT = {"solve", "solver", "mesh.refine"}


@pytest.fixture
def profile(sp):
    script = sp.script(SCRIPT, name="prog.py")
    proc = sp("run", "-q", "--recursive", "-o", "p.h5", script)
    assert proc.returncode == 0, proc.stderr
    return sp


def summary_names(sp, *args):
    doc = json.loads(sp("summary", "p.h5", "--json", *args).stdout)
    return {r["name"] for r in doc["regions"]}


def export_names(sp, *args):
    proc = sp("export", "p.h5", "-f", "csv", "-o", "-", *args)
    assert proc.returncode == 0, proc.stderr
    return {r[0] for r in list(csv.reader(io.StringIO(proc.stdout)))[1:]}


def diff_names(sp, *args):
    doc = json.loads(sp("diff", "--json", "p.h5", "p.h5", *args).stdout)
    return {r["name"] for r in doc["regions"]}


@pytest.mark.parametrize("pattern, kept", CASES)
def test_same_selection_in_every_command(profile, pattern, kept):
    sp = profile
    for names in (summary_names, export_names, diff_names):
        got = names(sp, "--include", pattern) & EXPLICIT
        assert got == kept, (names.__name__, pattern, got)
        got = names(sp, "--exclude", pattern) & EXPLICIT
        assert got == EXPLICIT - kept, (names.__name__, pattern, got)


def test_run_recursive_takes_both(sp):
    script = sp.script(SCRIPT, name="prog.py")
    for pattern in ("__main__.solve_*", "re:^__main__\\.solve_"):
        proc = sp("run", "-q", "--recursive", "--include", pattern, "--exclude", "*_b",
                  "-o", "g.h5", script)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(sp("summary", "g.h5", "--json").stdout)
        names = {r["name"] for r in doc["regions"]}
        assert "__main__.solve_a" in names, pattern
        assert not names & {"__main__.solve_b", "__main__.io_read"}, pattern


def test_bad_expression_is_a_usage_error_everywhere(profile):
    sp = profile
    ran = sp.script("open('ran', 'w').write('yes')\n", name="ran.py")
    proc = sp("run", "--recursive", "--include", "re:solve(", "-o", "r.h5", ran)
    assert proc.returncode == 2
    one_line_error(proc, "run", "--include", "re:solve(")
    assert not (sp.tmp / "ran").exists() and not (sp.tmp / "r.h5").exists()
    for args in (["summary", "p.h5"], ["export", "p.h5", "-f", "csv"], ["diff", "p.h5", "p.h5"],
                 ["plot", "p.h5", "-o", "charts"]):
        proc = sp(*args, "--exclude", "re:[a-")
        assert proc.returncode == 2, args
        assert proc.stdout == ""
        one_line_error(proc, args[0], "--exclude", "re:[a-")
        # The same text as a glob is fine: it matches only itself.
        if args[0] != "plot":
            assert sp(*args, "--exclude", "[a-").returncode == 0, args


def test_documented_once_and_pointed_at(sp):
    man = (ROOT / "man" / "scope-profiler.1").read_text()
    assert ".SH FILTERS" in man
    section = man[man.index(".SH FILTERS"):man.index(".SH", man.index(".SH FILTERS") + 4)]
    assert "fnmatch" in section and "re:" in section
    for cmd in ("run", "summary", "export", "diff", "plot"):
        text = sp(cmd, "--help").stdout
        assert "--include PATTERN" in text and "re:EXPR" in text and "FILTERS" in text, cmd
        page = (ROOT / "man" / f"scope-profiler-{cmd}.1").read_text()
        assert "PATTERN" in page and "FILTERS" in page, cmd


# The read API (events(), get_regions(), the charts) with the same patterns:
# what it keeps of the explicit regions, per pattern, as include and exclude.
READ_API = """
import json, sys
import scope_profiler as sp

r = sp.read_h5("p.h5")
out = {}
for pattern in json.loads(sys.argv[1]):
    out[pattern] = {
        "events": sorted({e["name"] for e in r.events(include=pattern)}),
        "events_not": sorted({e["name"] for e in r.events(exclude=pattern)}),
        "regions": [m.name for m in r.get_regions(include=pattern)],
        "regions_not": [m.name for m in r.get_regions(exclude=[pattern, "__main__.*", "*.py"])],
    }
for bad in ("re:solve(", ["solve", "re:[a-"]):
    try:
        r.events(exclude=bad)
    except ValueError as exc:
        out.setdefault("bad", []).append(str(exc))
try:
    r.events(include=3)
except TypeError as exc:
    out["not_str"] = str(exc)
print(json.dumps(out))
"""


def test_read_api_selects_as_the_commands(profile):
    """events() and get_regions() keep what summary --include/--exclude
    keep, for every pattern of both kinds; a bad expression is one
    ValueError naming it, as it is a usage error of the commands."""
    sp = profile
    script = sp.script(READ_API, name="api.py")
    proc = sp("run", "-q", "--no-output", script, json.dumps([p for p, _ in CASES]))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    for pattern, kept in CASES:
        assert summary_names(sp, "--include", pattern) & EXPLICIT == kept
        g = got[pattern]
        assert set(g["events"]) & EXPLICIT == kept, pattern
        assert set(g["regions"]) & EXPLICIT == kept, pattern
        assert set(g["events_not"]) & EXPLICIT == EXPLICIT - kept, pattern
        assert set(g["regions_not"]) == EXPLICIT - kept, pattern    # a list: one pattern of it is enough
    assert [m.split(":")[0] for m in got["bad"]] == ["exclude", "exclude"]
    assert "'re:solve('" in got["bad"][0] and "'re:[a-'" in got["bad"][1]
    assert got["not_str"] == "include: a pattern (str) or a list of them, not int"


CHARTS = """
import json
import scope_profiler as sp

out = {}
for pattern in ("solve", "solve*", "re:solve", "mesh.*"):
    gantt = sp.plot_gantt("p.h5", include=pattern, columns=None).axes[0]
    flame = sp.plot_flame("p.h5", include=[pattern], columns=None).axes[0]
    durations = sp.plot_durations("p.h5", include=pattern).axes[0]
    out[pattern] = {
        "gantt": sorted(c.get_gid().split(":", 2)[2] for c in gantt.collections),
        "flame": sorted(c.get_gid().split(":", 1)[1] for c in flame.collections),
        "durations": sorted(t.get_text() for t in durations.get_xticklabels()),
    }
print(json.dumps(out))
"""


@pytest.mark.script_imports("matplotlib", "numpy")
def test_charts_select_as_the_commands(profile):
    sp = profile
    script = sp.script(CHARTS, name="charts.py")
    proc = sp("run", "-q", "--no-output", script, env={"MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    for pattern, charts in got.items():
        want = summary_names(sp, "--include", pattern)
        assert want, pattern
        for chart, names in charts.items():
            assert set(names) == want, (pattern, chart)


EARLIER = """
import scope_profiler as sp

r = sp.read_h5("p.h5")
print(sorted({e["name"] for e in r.events(include="^sol")}))
print([m.name for m in r.get_regions(exclude=["mesh", "nothing|such"])][:0])
print(sorted({e["name"] for e in r.events(include="solve")}))
"""


def test_an_earlier_regex_pattern_says_it_selects_nothing(profile):
    """The original package searched include/exclude as Python regular
    expressions: a pattern written for it ("^sol") that selects nothing as
    a glob gives one warning naming the re: form, where it is written (the
    script's own line), and no warning for a pattern that selects as a glob
    or would select nothing either way."""
    sp = profile
    script = sp.script(EARLIER, name="earlier.py")
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "[]", "['solve']"]
    warned = [l for l in proc.stderr.splitlines() if "UserWarning" in l]
    assert len(warned) == 2, proc.stderr
    assert warned[0].startswith(f"{script}:5: UserWarning: scope_profiler: include pattern '^sol' "
                                "is a glob matched against the whole region name")
    assert warned[0].endswith("'re:^sol' would match 2")
    assert f"{script}:6: UserWarning: scope_profiler: exclude pattern 'mesh'" in warned[1]
    assert not any("nothing|such" in l for l in warned)
