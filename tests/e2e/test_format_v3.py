"""Format version 3, a streamed profile (man 5 scope-profiler-format, "Format version 3"),
written with h5py as the streaming writer lays it out (v3file.py): a partial file read as it
stands by every reader (summary, export, diff, plot, line-profile, the Python read API), each
saying so in one line; one a writer still holds in SWMR mode, one left by a writer killed with
SIGKILL, one still growing while it is read; a finished file read like version 2; and recover,
whose profile holds exactly the calls the partial file held, as h5py reads them."""
import csv
import io
import json
import os
import signal
import subprocess
import sys
from decimal import Decimal

import h5py
import pytest

import v3file
from conftest import one_line_error, regions

NS = 1_000_000_000
NOTE = "incomplete profile (a run still going, or killed): calls up to "
HERE = os.path.dirname(os.path.abspath(__file__))


def csv_calls(sp, path, origin=v3file.T0):
    """{name: [(start, end)]} from `export --format csv`, back in nanoseconds."""
    proc = sp("export", path, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    out = {}
    for r in csv.DictReader(io.StringIO(proc.stdout, newline="")):
        out.setdefault(r["name"], []).append((origin + int(Decimal(r["start_s"]) * NS),
                                              origin + int(Decimal(r["end_s"]) * NS)))
    return out, proc.stderr


def note_lines(stderr, command, path):
    """The lines of stderr that say path is partial (one expected)."""
    return [l for l in stderr.splitlines()
            if l.startswith(f"scope-profiler: {command}: {path}: {NOTE}")]


def v2_calls(path):
    """{name: [(start, end)]} of a version 2 profile, as plain h5py reads it."""
    with h5py.File(path) as f:
        assert f.attrs["format_version"] == 2
        return {name: list(zip(map(int, r["start_times"]), map(int, r["end_times"])))
                for name, r in regions(f).items()}


def plain_open_works(path):
    """Whether another process opens path with h5py's plain read-only open."""
    return subprocess.run([sys.executable, "-c", f"import h5py; h5py.File({str(path)!r}, 'r')"],
                          capture_output=True).returncode == 0


def killed_writer(path, flushes, every=0.0):
    """A writer that streams path in SWMR mode, flushing `flushes` times, killed with SIGKILL
    while it holds the file: what a killed run leaves."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "v3file.py"), str(path), str(flushes),
                             str(every)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "flushing"
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()


def test_partial_file_reads_as_it_stands(sp):
    path = sp.tmp / "run.h5.partial"
    v3file.write(path, 3)
    want = v3file.expected(3, finished=False)
    assert v3file.h5py_partial_calls(path) == want
    proc = sp("summary", "--json", path.name)
    assert proc.returncode == 0, proc.stderr
    assert len(note_lines(proc.stderr, "summary", path.name)) == 1, proc.stderr
    assert proc.stderr.strip().endswith(f"{NOTE}3.00 ms after its start")
    got = {r["name"]: r for r in json.loads(proc.stdout)["regions"]}
    assert {n: r["calls"] for n, r in got.items()} == {n: len(c) for n, c in want.items()}
    # main was open at the last flush: it ends there.
    assert got["main"]["total_s"] == pytest.approx((v3file.flushed_ns(2) - v3file.T0 - 50) / NS)
    calls, stderr = csv_calls(sp, path.name)
    assert calls == want
    assert len(note_lines(stderr, "export", path.name)) == 1
    # The other readers say it too, and only that.
    for args, command in ((("summary", path.name), "summary"),
                          (("diff", path.name, path.name), "diff"),
                          (("plot", path.name, "-o", "charts"), "plot"),
                          (("export", path.name, "--format", "folded"), "export")):
        proc = sp(*args)
        assert proc.returncode == 0, proc.stderr
        assert len(note_lines(proc.stderr, command, path.name)) == (2 if command == "diff" else 1), \
            proc.stderr
    assert (sp.tmp / "charts" / "gantt.svg").exists()
    proc = sp("line-profile", path.name)
    assert proc.returncode == 1 and len(note_lines(proc.stderr, "line-profile", path.name)) == 1
    assert "no line timings" in proc.stderr


def test_finished_file_reads_as_version_2(sp):
    path = sp.tmp / "run.h5"
    v3file.write(path, 4, finish=True, compression=True)
    want = v3file.expected(4, finished=True)
    proc = sp("summary", "--json", path.name)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    got = {r["name"]: r["calls"] for r in json.loads(proc.stdout)["regions"]}
    assert got == {n: len(c) for n, c in want.items()}
    calls, stderr = csv_calls(sp, path.name)
    assert calls == want and stderr == ""
    # The table's summaries are used as they are: a damaged one is refused.
    with h5py.File(path, "r+") as f:
        f["rank0/regions/num_calls"][1] = 8
    one_line_error(sp("summary", path.name), "rank0/regions/step: ")
    one_line_error(sp("export", path.name, "--format", "csv"), "rank0/regions/step: ")


def test_file_a_writer_holds(sp):
    """Read while the writer still has it open for SWMR writing: h5py's plain open fails,
    every reader opens it for reading while written."""
    path = sp.tmp / "live.h5.partial"
    w = v3file.Writer(path)
    try:
        for _ in range(2):
            w.flush()
        assert not plain_open_works(path)
        proc = sp("summary", path.name)
        assert proc.returncode == 0, proc.stderr
        assert len(note_lines(proc.stderr, "summary", path.name)) == 1
        calls, _ = csv_calls(sp, path.name)
        assert calls == v3file.expected(2, finished=False)
        w.flush()                      # it grows; the next read sees more
        calls, _ = csv_calls(sp, path.name)
        assert calls == v3file.expected(3, finished=False)
    finally:
        w.close()


def test_killed_writer_and_recover(sp):
    path = sp.tmp / "sim.h5.partial"
    for _ in killed_writer(path, 3):
        pass
    assert not plain_open_works(path)     # the superblock still says it is open
    held = v3file.h5py_partial_calls(path)
    assert held == v3file.expected(3, finished=False)
    before = path.read_bytes()
    proc = sp("summary", path.name)
    assert proc.returncode == 0 and len(note_lines(proc.stderr, "summary", path.name)) == 1
    proc = sp("recover", path.name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (f"scope-profiler: recover: wrote sim.h5: 32 calls of 5 regions; "
                           f"calls up to 3.00 ms after its start\n")
    assert path.read_bytes() == before                 # PARTIAL is only read
    assert v2_calls(sp.tmp / "sim.h5") == held
    with h5py.File(sp.tmp / "sim.h5") as f:
        assert int(f["metadata"].attrs["partial_until_ns"]) == v3file.flushed_ns(2)
        assert "tree" in f["rank0"]
    proc = sp("summary", "sim.h5")
    assert proc.returncode == 0 and proc.stderr == ""
    # An existing OUT stays unless --force; -o names another.
    (sp.tmp / "sim.h5").write_bytes(b"keep")
    proc = sp("recover", path.name)
    assert proc.returncode == 2
    one_line_error(proc, "'sim.h5' exists; --force replaces it")
    assert (sp.tmp / "sim.h5").read_bytes() == b"keep"
    proc = sp("recover", path.name, "-o", "other.h5")
    assert proc.returncode == 0 and v2_calls(sp.tmp / "other.h5") == held
    (sp.tmp / "sim.h5").unlink()
    sp("run", "-q", "-o", "sim.h5", sp.script("pass\n"))   # a real profile there
    proc = sp("recover", path.name, "--force")
    assert proc.returncode == 0, proc.stderr
    assert v2_calls(sp.tmp / "sim.h5") == held
    assert path.read_bytes() == before


def test_recover_usage(sp):
    v3file.write(sp.tmp / "done.h5", 2, finish=True)
    one_line_error(sp("recover", "done.h5"), "'done.h5' does not end in '.partial'")
    assert sp("recover", "done.h5").returncode == 2
    proc = sp("recover", "done.h5", "-o", "v2.h5")      # a finished version 3, rewritten
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "scope-profiler: recover: wrote v2.h5: 21 calls of 4 regions\n"
    assert v2_calls(sp.tmp / "v2.h5") == v3file.expected(2, finished=True)
    proc = sp("recover", "done.h5", "-o", "done.h5", "--force")
    assert proc.returncode == 2
    one_line_error(proc, "is the file to recover itself")
    proc = sp("recover", "missing.h5.partial")
    assert proc.returncode == 1
    one_line_error(proc, "cannot read 'missing.h5.partial'")
    assert sp("recover").returncode == 2
    assert not (sp.tmp / "missing.h5").exists()
    # A FIFO (no run streams into one): said at once, as every reader says
    # it (recover waited for a writer to open it, for ever).
    for name, args in (("fifo", ("-o", "r.h5")), ("f.h5.partial", ())):
        os.mkfifo(sp.tmp / name)
        proc = sp("recover", name, *args, timeout=60)
        assert proc.returncode == 1
        one_line_error(proc, f"cannot read '{name}': not a regular file")
    assert not (sp.tmp / "r.h5").exists() and not (sp.tmp / "f.h5").exists()


def test_recover_counts_calls_and_regions_as_summary_does(sp):
    """recover's closing line counts aggregated calls and a region by name
    once however many processes have it, as summary does (before: "0
    calls of 1 region" for 177 aggregated calls; "2 regions" for one
    region of a run and its forked child), and refuses a folder as OUT up
    front (before: "exists; --force replaces it", then failed with it)."""
    sp.script("""
import os
import scope_profiler as sp

@sp.profile("fib")
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib(10)
""", name="fib.py")
    assert sp("run", "-q", "--aggregate", "-o", "agg.h5", "fib.py").returncode == 0
    proc = sp("recover", "agg.h5", "-o", "r.h5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "scope-profiler: recover: wrote r.h5: 177 calls of 1 region\n"
    sp.script("""
import os
import scope_profiler as sp

with sp.region("work"):
    pass
pid = os.fork()
if pid == 0:
    with sp.region("work"):
        pass
    os._exit(0)
os.waitpid(pid, 0)
""", name="kids.py")
    assert sp("run", "-q", "--subprocesses", "-o", "kids.h5", "kids.py").returncode == 0
    summary = json.loads(sp("summary", "--json", "kids.h5").stdout)
    assert summary["calls"] == 2 and len(summary["regions"]) == 1
    proc = sp("recover", "kids.h5", "-o", "k.h5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "scope-profiler: recover: wrote k.h5: 2 calls of 1 region\n"
    (sp.tmp / "dir").mkdir()
    for force in ([], ["--force"]):
        proc = sp("recover", "agg.h5", "-o", "dir", *force)
        assert proc.returncode == 2
        one_line_error(proc, "'dir' is a folder")
    assert list((sp.tmp / "dir").iterdir()) == []


def test_read_api_says_once(sp):
    path = sp.tmp / "run.h5.partial"
    v3file.write(path, 3)
    script = sp.script(f"""
        import json, warnings
        import scope_profiler as sp
        warnings.simplefilter("always")
        r = sp.read_h5({str(path)!r})
        calls = {{}}
        for e in r.events(relative=False):
            calls.setdefault(e["name"], []).append((round(e["start"] * 1e9), round(e["end"] * 1e9)))
        r.print_summary(file=open("/dev/null", "w"))
        print(json.dumps(calls))
        sp.read_h5_summary({str(path)!r})
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    said = [l for l in proc.stderr.splitlines() if NOTE in l]
    assert len(said) == 2, proc.stderr      # read_h5 and read_h5_summary, not print_summary
    assert said[0].endswith(f"UserWarning: scope_profiler: {path}: {NOTE}3.00 ms after its start")
    calls = json.loads(proc.stdout.splitlines()[0])
    want = v3file.expected(3, finished=False)
    assert {n: len(c) for n, c in calls.items()} == {n: len(c) for n, c in want.items()}
    for name, c in want.items():      # seconds as floats: within a nanosecond or so
        assert all(abs(a - x) <= 2 and abs(b - y) <= 2 for (a, b), (x, y) in zip(calls[name], c))


def test_read_while_it_grows(sp):
    """A writer flushing every 5 ms while summary and export read: every read succeeds, each
    region's calls are the first ones of the run, and a later read never sees fewer."""
    path = sp.tmp / "grow.h5.partial"
    final = v3file.expected(400, finished=False)
    w = subprocess.Popen([sys.executable, os.path.join(HERE, "v3file.py"), str(path), "400", "0.005"],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline().strip() == "flushing"
        seen = {}
        for _ in range(40):
            proc = sp("summary", "--json", path.name)
            assert proc.returncode == 0, proc.stderr
            counts = {r["name"]: r["calls"] for r in json.loads(proc.stdout)["regions"]}
            assert all(counts.get(n, 0) >= c for n, c in seen.items()), (seen, counts)
            seen = counts
            calls, stderr = csv_calls(sp, path.name)
            assert len(note_lines(stderr, "export", path.name)) == 1, stderr
            for name, c in calls.items():
                if name != "main":
                    assert c == final[name][:len(c)], name
        assert sum(seen.values()) > 1
    finally:
        w.send_signal(signal.SIGKILL)
        w.wait()
        w.stdout.close()


def test_damaged_partial_is_one_line(sp):
    path = sp.tmp / "bad.h5.partial"
    v3file.write(path, 2)
    with h5py.File(path, "r+") as f:
        f["rank0/events/block_calls"][1] = -3
    for args in (("summary", path.name), ("export", path.name, "--format", "csv"),
                 ("recover", path.name)):
        proc = sp(*args)
        assert proc.returncode == 1
        one_line_error(proc, "rank0/events: block 1 has calls -3")
    assert not (sp.tmp / "bad.h5").exists()
