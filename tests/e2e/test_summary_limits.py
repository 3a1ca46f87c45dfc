"""The summary fits a screen whatever the profile: the tree's heaviest
entries, the table's first rows, a last line saying what was left out;
--top, --depth and --all choose. On a real recorded run."""
import re

import h5py
import pytest

from conftest import durations_s, one_line_error, tree

# 1 heavy path (sleeps, so it stays the heaviest on a loaded machine) and
# many light functions: 45 regions, a tree of about 50 entries, 4 levels.
SCRIPT = """
import time
import scope_profiler as sp

@sp.profile("leaf")
def leaf():
    time.sleep(0.03)

@sp.profile("middle")
def middle():
    leaf()

@sp.profile("heavy")
def heavy():
    middle()
    middle()

lights = []
for i in range(40):
    lights.append(sp.profile(f"light{i:02d}")(lambda: sum(range(50))))

@sp.profile("driver")
def driver():
    heavy()
    for f in lights:
        f()
    with sp.region("tail"):
        for f in lights[:5]:
            f()

driver()
"""


@pytest.fixture
def profile(sp):
    sp.script(SCRIPT)
    proc = sp("run", "-o", "big.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    return sp, proc


def parts(text):
    """(tree rows, table rows, last line) of a printed summary."""
    lines = text.splitlines()
    def block(title):
        # the title may carry a note ("Call tree (threads ran at once: ...)")
        at = [k for k, l in enumerate(lines) if l == title or l.startswith(title + " (")]
        if not at:
            return []
        i = at[0] + 3                       # title, header, rule
        out = []
        while i < len(lines) and lines[i]:
            out.append(lines[i])
            i += 1
        return out
    return block("Call tree"), block("Regions"), lines[-1]


def label(row):
    """The entry's text: no tree prefix, no columns."""
    return re.sub(r"^[│├└─ ]*", "", row).split("  ")[0].strip()


def total_s(row):
    return durations_s(row)[-1]


def test_default_shows_the_heaviest_entries_and_says_what_was_left_out(profile):
    sp, proc = profile
    with h5py.File(sp.tmp / "big.h5") as f:
        nodes = tree(f)
    out = sp("summary", "big.h5")
    assert out.returncode == 0, out.stderr
    rows, table, last = parts(out.stdout)
    shown = [r for r in rows if not re.search(r"(\(own\)|… (\(own\) \+ )?\d+ more)", r)]
    assert 1 < len(shown) <= 16
    assert len(table) == 16
    assert len(out.stdout.splitlines()) <= 60
    # The heavy path is all there, the light ones are summed up.
    names = [label(r).split(" (")[0] for r in shown]
    for name in ("driver", "heavy", "middle", "leaf"):
        assert name in names
    m = re.fullmatch(r"Left out: (\d+) of (\d+) call-tree entries \(the largest [<\d.]+% of the "
                     r"run\) and (\d+) of (\d+) regions \(the largest [<\d.]+%\); --all shows every one\.",
                     last)
    assert m, last
    assert int(m[2]) == len(nodes) and int(m[2]) - int(m[1]) == len(shown)
    assert int(m[4]) == 45 and int(m[4]) - int(m[3]) == 16
    # driver's children: the rows under it add up to its total.
    more = [r for r in rows if re.search(r"… (\(own\) \+ )?\d+ more", r)]
    assert more, rows
    i = next(k for k, r in enumerate(rows) if label(r).startswith("driver"))
    depth = rows[i].index("driver")
    kids = []
    for r in rows[i + 1:]:
        start = len(r) - len(r.lstrip("│├└─ "))
        if start <= depth:
            break
        if start == depth + 3:
            kids.append(r)
    assert any("more" in k for k in kids)
    # Each figure is printed to three digits: within 0.5 % of its value.
    assert sum(total_s(k) for k in kids) == pytest.approx(total_s(rows[i]), rel=0.011)


def test_all_prints_every_entry_and_region_and_no_last_line(profile):
    sp, _ = profile
    with h5py.File(sp.tmp / "big.h5") as f:
        nodes = tree(f)
    out = sp("summary", "--all", "big.h5")
    rows, table, last = parts(out.stdout)
    assert len([r for r in rows if "(own)" not in r]) == len(nodes)
    assert not any("more" in r for r in rows)
    assert len(table) == 45
    assert "Left out" not in out.stdout


def test_top_and_depth_choose(profile):
    sp, _ = profile
    rows, table, last = parts(sp("summary", "--top", "3", "big.h5").stdout)
    assert [label(r).split(" (")[0] for r in rows if "(own)" not in r and "more" not in r] == \
        ["driver", "heavy", "middle"]
    assert len(table) == 3
    rows, _, last = parts(sp("summary", "--depth", "1", "--tree", "big.h5").stdout)
    assert [label(r) for r in rows] == ["driver"]
    assert last.endswith("; --all without --depth shows every one."), last
    rows, _, _ = parts(sp("summary", "--depth", "2", "--all", "--tree", "big.h5").stdout)
    assert len([r for r in rows if "(own)" not in r]) == 1 + 1 + 40 + 1   # driver, heavy, lights, tail


def test_end_of_run_summary_is_limited_and_names_the_file(profile):
    sp, proc = profile
    assert len(proc.stderr.splitlines()) <= 62
    assert "`scope-profiler summary --all " in proc.stderr
    assert str(sp.tmp / "big.h5") + "` shows every one." in proc.stderr


@pytest.mark.parametrize("args, message", [
    (("--top", "0"), "--top takes a whole number of at least 1, not '0'"),
    (("--depth", "two"), "--depth takes a whole number of at least 1, not 'two'"),
    (("--top", "99999999999999"), "--top takes a whole number from 1 to 2147483647, not '99999999999999'"),
])
def test_bad_limits_are_usage_errors(profile, args, message):
    sp, _ = profile
    out = sp("summary", *args, "big.h5")
    assert out.returncode == 2
    one_line_error(out, message)
