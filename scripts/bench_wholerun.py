#!/usr/bin/env python3
"""`make bench`: what a user pays for a WHOLE run -- start-up, recording and
the end of the run -- beside the peer tool, on four workloads:

  pyflakes json   pyflakes over the standard library's json package
  tiny calls      a Python function called CALLS times
  empty script    start-up alone (and the modules loaded before the script)
  line timing     a loop body of three lines, `run --line-profile` against
                  `kernprof -l` (line_profiler)

Each figure is (tool run - plain python run) / (peer run - plain python run),
the three measured in this invocation with the binary's own interpreter
(--python, `make bench` passes $(PYTHON)): in instructions under valgrind's
callgrind (they repeat from run to run; PYTHONHASHSEED=0) and in wall-clock
time (minimum of --repeats runs, the tools alternating). The tool is
`scope-profiler run -q --recursive --all -o f.h5`, the peer
`python -m cProfile -o f.prof`; for line timing `run -q --line-profile -o f.h5`
(the function under @sp.profile) and `python -m kernprof -l -o f.lprof`.

The scope-profiler runs are cut where the interpreter starts the script
(Py_RunMain) and where it starts to finalise (Py_FinalizeEx), so that each
phase is compared with the same phase of the plain run: start-up, recording
(the script under the tool) and the end of the run, of which the call tree
(sp_tree_build: containment, the one nesting rule), the HDF5 writer (sp_h5_write) and the rest of the profiler's
end (sp_final_run) are read off callgrind's call graph.

Benchmarks report, they do not fail: the exit status is 0 whatever the
ratios; 1 when a run itself fails.

    python3 scripts/bench_wholerun.py --binary build/scope-profiler [--python /usr/bin/python3]
        [--repeats 7] [--calls 200000] [--lines 50000] [--no-callgrind] [--json]
"""
import argparse
import atexit
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

EMPTY = "import sys\nprint(len(sys.modules))\n"

LOOP = '''import sys

def tiny():
    return None

def main(n):
    for _ in range(n):
        tiny()

main(int(sys.argv[1]))
'''

# Peak memory only (its callgrind run would take minutes): importing sympy
# and one integral, 3,600 functions and two million calls under --recursive.
SYMPY = """import sympy
x = sympy.Symbol("x")
print(sympy.integrate(sympy.sin(x) ** 3 * sympy.cos(x), x))
"""

# One script for the three line-timing runs: argv[1] says which decorator.
LINES = '''import sys

mode, n = sys.argv[1], int(sys.argv[2])
if mode == "sp":
    import scope_profiler as sp
    timed = sp.profile("lines_fn")
elif mode == "kernprof":
    timed = profile  # noqa: F821 -- kernprof -l puts it in builtins
else:
    def timed(f):
        return f


@timed
def lines_fn(n):
    s = 0
    for i in range(n):
        s += i
        s ^= 3
        s -= 1
    return s


lines_fn(n)
'''


def line_events(n):
    """LINE events of lines_fn(n): the first line, the `for` line n + 1
    times, three body lines n times, the return."""
    return 1 + (n + 1) + 3 * n + 1


# The places where a run is cut into phases (dumps), and the functions whose
# inclusive cost is read off the call graph.
CUTS = ("Py_RunMain", "Py_FinalizeEx")
INCLUSIVE = ("sp_final_run", "sp_tree_build", "sp_h5_write")

# Each tool's command, as the report names it (tool_argv builds it).
TOOLS = {
    "plain": "python",
    "cprofile": "python -m cProfile -o",
    "ours_rec": "run --recursive --all -o",
    "ours_run": "run -o",
    "kernprof": "python -m kernprof -l -o",
    "ours_lines": "run --line-profile -o",
}


def tool_argv(tool, py, binary, out, target, args):
    """target: ("script", path) or ("module", name); out: the path of the
    tool's output file without its suffix."""
    kind, what = target
    prog = [what] if kind == "script" else ["-m", what]
    if tool == "plain":
        return [py] + prog + args
    if tool == "cprofile":
        return [py, "-m", "cProfile", "-o", out + ".prof"] + prog + args
    if tool == "kernprof":
        assert kind == "script"
        return [py, "-m", "kernprof", "-l", "-o", out + ".lprof"] + prog + args
    flags = {"ours_rec": ["--recursive", "--all"], "ours_run": [], "ours_lines": ["--line-profile"]}[tool]
    return [binary, "run", "-q"] + flags + ["-o", out + ".h5"] + prog + args


class RunFailed(Exception):
    pass


# Pure-Python packages lent from the Python running this script to an
# interpreter that lacks them (pyenv's have none): a folder on PYTHONPATH for
# every run alike (plain, peer and tool), set by lend_pure().
LENT_PATH = []


def env():
    e = dict(os.environ, PYTHONHASHSEED="0")
    if LENT_PATH:
        e["PYTHONPATH"] = os.pathsep.join(LENT_PATH + [e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def lend_pure(py, packages, work):
    """Copies packages (pure Python: pyflakes, sympy and its mpmath) that py
    cannot import but this script's Python can into work/lent, put on
    PYTHONPATH; returns the names lent."""
    lent = []
    for name in packages:
        if probe(py, f"import {name}"):
            continue
        try:
            mod = __import__(name)
        except ImportError:
            continue
        src = os.path.dirname(mod.__file__)
        if any(f.endswith(".so") for _, _, files in os.walk(src) for f in files):
            continue                      # compiled for this Python only
        dest = os.path.join(work, "lent")
        shutil.copytree(src, os.path.join(dest, name), ignore=shutil.ignore_patterns("__pycache__"))
        if dest not in LENT_PATH:
            LENT_PATH.append(dest)
        lent.append(name)
    if lent:   # compiled once, now: no run below pays for the .pyc files
        subprocess.run([py, "-m", "compileall", "-q", os.path.join(work, "lent")], check=True,
                       stdout=subprocess.DEVNULL)
    return lent


def run_once(argv, cwd, capture=False):
    proc = subprocess.run(argv, cwd=cwd, env=env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RunFailed(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def peak_kib(argv, cwd):
    """The peak resident memory of one run of argv in KiB, file-backed pages
    such as the code included, as GNU time reports it: a child's ru_maxrss
    counts the memory of the process it was forked from (the larger of the
    two), so the run is forked from time's small process, not from here."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, cwd=cwd, env=env(),
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RunFailed(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return int(proc.stderr.split()[-1])


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wall_min(cands, cwd, repeats):
    """cands: {key: argv}. The candidates alternate; the minimum is kept
    (noise only ever adds time). Seconds of wall-clock time, and of CPU time
    (user + system, of the run and its children)."""
    wall = {k: float("inf") for k in cands}
    cpu = dict(wall)
    for _ in range(repeats):
        for k, argv in cands.items():
            c0, t0 = children_cpu(), time.perf_counter()
            run_once(argv, cwd)
            wall[k] = min(wall[k], time.perf_counter() - t0)
            cpu[k] = min(cpu[k], children_cpu() - c0)
    return wall, cpu


def parse_callgrind(path):
    """(total Ir of this part, {function: inclusive Ir of its calls})."""
    total, incl = None, {}
    pending, want_cost = None, False
    with open(path) as f:
        for line in f:
            if want_cost:
                want_cost = False
                parts = line.split()
                if pending is not None and len(parts) >= 2:
                    incl[pending] = incl.get(pending, 0) + int(parts[1])
                pending = None
            elif line.startswith("cfn="):
                name = line[4:].strip()
                name = re.sub(r"'\d+$", "", name)   # recursion-level suffixes
                pending = name if name in INCLUSIVE else None
            elif line.startswith("calls="):
                want_cost = pending is not None
            elif line.startswith("totals:") or (total is None and line.startswith("summary:")):
                total = int(line.split()[1])
    return total, incl


def callgrind(argv, cwd):
    """Instructions of one run: its phases (before the script, the script,
    the end) and the inclusive cost of the INCLUSIVE functions."""
    if len(argv) > 1 and argv[1] == "run":
        # Under valgrind a run is 50-100x slower: its flush interval with it,
        # so that it streams to disk (sp_stream.h) when the run itself would
        # (these workloads: never; they last well under a second).
        argv = argv[:2] + ["--flush-interval", "100"] + argv[2:]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
              "--compress-strings=no", "--compress-pos=no"]
        vg += [f"--dump-before={c}" for c in CUTS]
        proc = subprocess.run(vg + argv, cwd=cwd, env=env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise RunFailed(f"callgrind: {' '.join(argv)} exited {proc.returncode}:\n"
                            f"{proc.stderr[-3000:]}")
        phases, incl = {}, {}
        for name in os.listdir(d):
            if not name.startswith("cg.out"):
                continue
            path = os.path.join(d, name)
            with open(path) as f:
                trig = next((ln for ln in f if ln.startswith("desc: Trigger:")), "")
            total, inc = parse_callgrind(path)
            m = re.search(r"--dump-before=(\S+)", trig)
            # A dump before CUTS[i] closes the phase that precedes it.
            key = {"Py_RunMain": "startup", "Py_FinalizeEx": "script"}.get(m.group(1) if m else "", "end")
            phases[key] = phases.get(key, 0) + (total or 0)
            for k, v in inc.items():
                incl[k] = incl.get(k, 0) + v
        r = {k: phases.get(k, 0) for k in ("startup", "script", "end")}
        r["total"] = sum(r.values())
        r.update({k: incl.get(k, 0) for k in INCLUSIVE})
        return r


def file_counts(binary, h5, cwd):
    """(regions, recorded calls) of a profile, from `summary --json`."""
    out = run_once([binary, "summary", "--json", h5], cwd, capture=True)
    d = json.loads(out)
    return len(d["regions"]), int(d["calls"])


def probe(py, code):
    return subprocess.run([py, "-c", code], capture_output=True, text=True,
                          env=env()).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/scope-profiler")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter the binary embeds (plain and peer runs)")
    ap.add_argument("--repeats", type=int, default=7, help="wall-clock runs per tool (minimum kept)")
    ap.add_argument("--calls", type=int, default=200_000, help="calls of the tiny-call loop")
    ap.add_argument("--lines", type=int, default=50_000, help="iterations of the line-timing loop")
    ap.add_argument("--no-callgrind", action="store_true", help="wall-clock only")
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = ap.parse_args()
    binary, py = os.path.abspath(args.binary), args.python

    # The plain and peer runs must use the interpreter the binary embeds.
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True)
    pyver = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"],
                           capture_output=True, text=True).stdout.strip()
    m = re.search(r"embedded Python: (\S+)", ver.stdout)
    if ver.returncode != 0 or not m:
        sys.exit(f"bench_wholerun: cannot run {binary} --version")
    if m.group(1) != pyver:
        sys.exit(f"bench_wholerun: {binary} embeds Python {m.group(1)}, {py} is {pyver}; "
                 f"pass --python with the binary's interpreter")
    major_minor = tuple(int(x) for x in pyver.split(".")[:2])
    link = linked(ver.stdout)
    use_cg = not args.no_callgrind and shutil.which("valgrind") is not None
    notes = []
    if not args.no_callgrind and not use_cg:
        notes.append("valgrind not found: wall-clock only (scripts/install-deps.sh installs it)")

    lent_dir = tempfile.mkdtemp(prefix="sp-wholerun-lent-")
    atexit.register(shutil.rmtree, lent_dir, True)
    lent = lend_pure(py, ["pyflakes", "mpmath", "sympy"], lent_dir)
    if lent:
        notes.append(f"lent to {py} from {sys.executable} (pure Python, on PYTHONPATH for "
                     f"every run alike): {', '.join(lent)}")
    have_pyflakes = probe(py, "import pyflakes")
    have_time = os.access("/usr/bin/time", os.X_OK)
    if not have_time:
        notes.append("GNU time not found: no peak memory (scripts/install-deps.sh installs it)")
    have_kernprof = probe(py, "import kernprof, line_profiler")
    json_dir = subprocess.run([py, "-c", "import json, os; print(os.path.dirname(json.__file__))"],
                              capture_output=True, text=True).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="sp-wholerun-") as work:
        for name, text in (("empty.py", EMPTY), ("loop.py", LOOP), ("lines.py", LINES)):
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        out = os.path.join(work, "out")
        rec = ["plain", "cprofile", "ours_rec"]
        # name -> (target, args per tool, tools, the tool, its peer, the empty reference)
        workloads = {}
        if have_pyflakes:
            workloads["pyflakes json"] = (("module", "pyflakes"), lambda t: [json_dir], rec,
                                          "ours_rec", "cprofile", "empty script")
        else:
            notes.append("pyflakes not installed for this Python: its row is left out "
                         "(python3-pyflakes)")
        workloads[f"tiny calls x{args.calls}"] = (("script", "loop.py"), lambda t: [str(args.calls)],
                                                   rec, "ours_rec", "cprofile", "empty script")
        workloads["empty script"] = (("script", "empty.py"), lambda t: [], rec + ["ours_run"],
                                     "ours_rec", "cprofile", None)
        lmode = {"plain": "plain", "kernprof": "kernprof", "ours_lines": "sp"}
        if have_kernprof:
            workloads[f"line timing x{line_events(args.lines)}"] = (
                ("script", "lines.py"), lambda t: [lmode[t], str(args.lines)],
                ["plain", "kernprof", "ours_lines"], "ours_lines", "kernprof", "line timing, empty")
            workloads["line timing, empty"] = (
                ("script", "lines.py"), lambda t: [lmode[t], "0"],
                ["plain", "kernprof", "ours_lines"], "ours_lines", "kernprof", None)
        else:
            notes.append("line_profiler not installed for this Python: no line timing "
                         "(python3-line-profiler)")

        res = {}
        if have_time and probe(py, "import sympy"):
            with open(os.path.join(work, "sympy_work.py"), "w") as f:
                f.write(SYMPY)
            mem_only = {"sympy integrate": ("script", "sympy_work.py")}
        else:
            mem_only = {}
            if have_time:
                notes.append("sympy not installed for this Python: no sympy row in peak memory "
                             "(python3-sympy)")
        try:
            for wname, target in mem_only.items():
                res[wname] = {"peak_kib": {t: min(peak_kib(tool_argv(t, py, binary, out, target, []),
                                                           work) for _ in range(3))
                                           for t in rec}}
            for wname, (target, argf, tools, ours, peer, _ref) in workloads.items():
                cands = {t: tool_argv(t, py, binary, out, target, argf(t)) for t in tools}
                wall, cpu = wall_min(cands, work, args.repeats)
                r = {"wall_s": wall, "cpu_s": cpu, "ir": {}}
                if have_time:   # the least of three: what the run needs, not what the machine adds
                    r["peak_kib"] = {t: min(peak_kib(argv, work) for _ in range(3))
                                     for t, argv in cands.items()}
                if use_cg:
                    for t, argv in cands.items():
                        print(f"bench_wholerun: callgrind {wname}: {TOOLS[t]}", file=sys.stderr)
                        r["ir"][t] = callgrind(argv, work)
                        if t == ours:
                            r["regions"], r["events"] = file_counts(binary, out + ".h5", work)
                if wname == "empty script":
                    r["modules"] = {t: int(run_once(cands[t], work, capture=True).split()[-1])
                                    for t in ("plain", "ours_run", "ours_rec")}
                res[wname] = r
        except RunFailed as e:
            sys.exit(f"bench_wholerun: a run failed: {e}")

    if args.json:
        print(json.dumps({"python": pyver, "link": link, "results": res, "notes": notes}, indent=2))
        return
    report(res, workloads, pyver, major_minor, args, use_cg, notes, link)
    if have_time:
        memory_report(res, workloads, mem_only)


def linked(version):
    """How the binary carries libpython and HDF5, from its --version: the
    budgets hold for what `make` builds, so a figure says which it was."""
    def how(prefix):
        line = next((l for l in version.splitlines() if l.startswith(prefix)), "")
        return "static" if line.endswith(", linked in") else "shared" if line else "?"
    return {"python": how("embedded Python: "), "hdf5": how("HDF5: ")}


def ratio(a, b):
    return a / b if b > 0 else float("nan")


def report(res, workloads, pyver, mm, args, use_cg, notes, link):
    rec_budget = 0.5 if mm >= (3, 12) else 1.0
    line_budget = 0.3 if mm >= (3, 12) else None
    print(f"whole runs, Python {pyver}: (tool - plain python) / (peer - plain python); instructions "
          f"under callgrind, wall-clock and CPU time the minimum of {args.repeats} runs")
    print(f"binary measured: {link['python']} libpython, {link['hdf5']} HDF5 "
          f"(its --version; `make` links both statically where it can)")
    print("tool: run -q --recursive --all -o f.h5, peer: python -m cProfile -o f.prof; "
          "line timing: run -q --line-profile -o f.h5, peer: python -m kernprof -l -o f.lprof")
    hdr = (f"{'workload':<24}{'plain':>8}{'tool +':>8}{'peer +':>8}{'ratio':>8}"
           f"{'plain':>8}{'tool +':>8}{'peer +':>8}{'ratio':>8}{'CPU':>8}{'budget':>8}")
    print(f"{'':<24}{'-- M instructions (callgrind) --':^32}{'-------- wall ms --------':^32}{'ratio':>8}")
    print(hdr)
    print("-" * len(hdr))
    for wname, (_t, _a, _tools, ours, peer, _ref) in workloads.items():
        r = res[wname]
        w, c = r["wall_s"], r["cpu_s"]
        wd, wp = (w[ours] - w["plain"]) * 1e3, (w[peer] - w["plain"]) * 1e3
        cr = ratio(c[ours] - c["plain"], c[peer] - c["plain"])
        if use_cg:
            ir = r["ir"]
            d, p = ir[ours]["total"] - ir["plain"]["total"], ir[peer]["total"] - ir["plain"]["total"]
            cg = f"{ir['plain']['total'] / 1e6:8.1f}{d / 1e6:8.1f}{p / 1e6:8.1f}{ratio(d, p):7.2f}x"
        else:
            cg = f"{'':>32}"
        budget = line_budget if ours == "ours_lines" else rec_budget
        b = f"<={budget:.1f}x" if budget and "empty" not in wname else ""
        print(f"{wname:<24}{cg}{w['plain'] * 1e3:8.1f}{wd:8.1f}{wp:8.1f}{ratio(wd, wp):7.2f}x"
              f"{cr:7.2f}x{b:>8}")

    if use_cg:
        # The same difference with each tool's fixed costs (the same tool on
        # the empty script) taken off: what grows with the program.
        print()
        print("without fixed costs (each run minus the same tool on the empty script), instructions:")
        for wname, (_t, _a, _tools, ours, peer, ref) in workloads.items():
            if not ref:
                continue
            ir, e = res[wname]["ir"], res[ref]["ir"]

            def grow(t):
                return (ir[t]["total"] - e[t]["total"]) - (ir["plain"]["total"] - e["plain"]["total"])
            d, p = grow(ours), grow(peer)
            per = ""
            if ours == "ours_lines":
                n = line_events(args.lines)
                per = f"   per line event: {d / n:.0f} against {p / n:.0f}"
            elif res[wname].get("events"):
                n = res[wname]["events"]
                per = f"   per recorded call: {d / n:.0f} against {p / n:.0f}"
            print(f"  {wname:<22}{d / 1e6:8.1f}M against {p / 1e6:8.1f}M{ratio(d, p):7.2f}x{per}")

        print()
        print("where scope-profiler's extra instructions go (M, each phase minus the plain run's):")
        h = (f"{'workload':<24}{'start-up':>9}{'record':>9}{'end':>9}{'= tree':>9}{'+ HDF5':>9}"
             f"{'+ rest':>9}{'+ exit':>9}{'regions':>9}{'events':>9}{'HDF5/reg':>10}{'tree/ev':>9}")
        print(h)
        print("-" * len(h))
        for wname, (_t, _a, _tools, ours, _peer, _ref) in workloads.items():
            r = res[wname]
            o, pl = r["ir"][ours], r["ir"]["plain"]
            su, sc, en = (o[k] - pl[k] for k in ("startup", "script", "end"))
            tree, h5 = o["sp_tree_build"], o["sp_h5_write"]
            rest = o["sp_final_run"] - tree - h5
            ext = en - o["sp_final_run"]
            nreg, nev = r.get("regions", 0), r.get("events", 0)
            print(f"{wname:<24}{su / 1e6:9.1f}{sc / 1e6:9.1f}{en / 1e6:9.1f}{tree / 1e6:9.1f}"
                  f"{h5 / 1e6:9.1f}{rest / 1e6:9.1f}{ext / 1e6:9.1f}{nreg:9d}{nev:9d}"
                  f"{ratio(h5, nreg):10.0f}" + (f"{ratio(tree, nev):9.0f}" if nev >= 1000 else f"{'-':>9}"))
        print("  start-up: before the script starts (Py_RunMain); record: the script; end: from "
              "Py_FinalizeEx on,\n  = the call tree (sp_tree_build) + the HDF5 writer (sp_h5_write) "
              "+ the rest of sp_final_run\n  + the rest of the interpreter's exit (atexit, modules "
              "torn down) beyond plain python's")

    e = res["empty script"]
    w, c, mods = e["wall_s"], e["cpu_s"], e["modules"]
    print()
    print(f"empty script: modules loaded before it ends: plain python {mods['plain']}, "
          f"run {mods['ours_run']}, run --recursive --all {mods['ours_rec']}")
    print(f"empty script, wall-clock beyond plain python: run "
          f"{(w['ours_run'] - w['plain']) * 1e3:+.1f} ms (budget <= +30 ms), "
          f"run --recursive --all {(w['ours_rec'] - w['plain']) * 1e3:+.1f} ms, "
          f"python -m cProfile {(w['cprofile'] - w['plain']) * 1e3:+.1f} ms")
    print(f"empty script, CPU time beyond plain python: run {(c['ours_run'] - c['plain']) * 1e3:+.1f} ms, "
          f"run --recursive --all {(c['ours_rec'] - c['plain']) * 1e3:+.1f} ms, "
          f"python -m cProfile {(c['cprofile'] - c['plain']) * 1e3:+.1f} ms")
    if use_cg:
        ir = e["ir"]
        print(f"empty script, instructions beyond plain python: run "
              f"{(ir['ours_run']['total'] - ir['plain']['total']) / 1e6:+.1f}M, "
              f"run --recursive --all {(ir['ours_rec']['total'] - ir['plain']['total']) / 1e6:+.1f}M, "
              f"python -m cProfile {(ir['cprofile']['total'] - ir['plain']['total']) / 1e6:+.1f}M")
        closing(res, workloads)
    print(f"budgets: Python {pyver}: run --recursive --all <= {rec_budget:.1f}x cProfile whole-run"
          + (f", line timing <= {line_budget:.1f}x line_profiler per line event" if line_budget else
             " (3.12+: <= 0.5x, line timing <= 0.3x line_profiler)"))
    for n in notes:
        print(f"note: {n}")


def memory_report(res, workloads, mem_only):
    """Peak resident memory of each recorded workload: the tool's against
    its peer's (budget: at most the peer's), and what each adds to plain python."""
    print()
    print("peak resident memory (MiB, ru_maxrss, the least of 3 runs; code pages included):")
    h = f"{'workload':<24}{'plain':>8}{'tool':>8}{'peer':>8}{'ratio':>8}{'tool +':>8}{'peer +':>8}{'budget':>8}"
    print(h)
    print("-" * len(h))
    rows = [(w, v[3], v[4]) for w, v in workloads.items()] + [(w, "ours_rec", "cprofile") for w in mem_only]
    for wname, ours, peer in rows:
        k = res[wname]["peak_kib"]
        pl, o, p = k["plain"] / 1024, k[ours] / 1024, k[peer] / 1024
        b = "<=1.0x" if ours == "ours_rec" and "empty" not in wname and "tiny" not in wname else ""
        print(f"{wname:<24}{pl:8.1f}{o:8.1f}{p:8.1f}{ratio(o, p):7.2f}x{o - pl:+8.1f}{p - pl:+8.1f}{b:>8}")
    print("  tool: its whole process at its peak (the end of the run, while the profile is written); "
          "the budget\n  (issue 25) is on pyflakes and sympy with run --recursive --all against cProfile")


def closing(res, workloads):
    """One sentence per recorded workload: the largest phase of the extra cost."""
    for wname, (_t, _a, _tools, ours, _peer, ref) in workloads.items():
        if not ref:
            continue
        o, pl = res[wname]["ir"][ours], res[wname]["ir"]["plain"]
        parts = {"start-up": o["startup"] - pl["startup"], "recording": o["script"] - pl["script"],
                 "the end of the run": o["end"] - pl["end"]}
        tot = sum(parts.values())
        if tot <= 0:
            continue
        share = ", ".join(f"{k} {v / tot:.0%}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
        print(f"{wname}: of scope-profiler's +{tot / 1e6:.0f}M instructions: {share}")


if __name__ == "__main__":
    main()
