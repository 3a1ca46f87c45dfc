"""Format version 3 files (man 5 scope-profiler-format, "Format version 3"), written with h5py
as the streaming writer lays them out, for the readers' tests (test_format_v3.py), and what
h5py reads back from them by the contract's rules (the oracle).

The run they describe: "main" (region id 0) is entered at the start and stays open; each
flush interval holds three "step" calls, each with two "solve/phase" calls, and an "io 100%"
call in the second; "checkpoint" appears in the third interval only (its name added then).
Each flush appends, in this order, a block per region with calls in the interval (main's one
call in the first, its end INT64_MIN while it is open), the names first seen, and flushed_ns.

As a script, `python3 v3file.py PATH FLUSHES [EVERY_S]` writes PATH in SWMR mode, flushing
FLUSHES times (every EVERY_S seconds; "flushing" on stdout after the first), prints "ready"
and sleeps until it is killed: a run killed with SIGKILL while it streams."""
import sys
import time

import h5py
import numpy as np

INT64_MIN = int(np.iinfo(np.int64).min)
T0 = 5_000_000_000                  # the run's start
INTERVAL = 1_000_000                # between flushes, ns
NAMES = ["main", "step", "solve/phase", "io 100%", "checkpoint"]


def interval_calls(k):
    """The calls (region id, start, end) that end in interval k, in call order per region."""
    base = T0 + k * INTERVAL
    calls = []
    for s in range(3):
        step = base + 100_000 + s * 300_000
        calls.append((1, step, step + 200_000))
        for j in range(2):
            calls.append((2, step + 10_000 + j * 60_000, step + 60_000 + j * 60_000))
        if s == 1:
            calls.append((3, step + 150_000, step + 190_000))
    if k == 2:
        calls.append((4, base + 950_000, base + 990_000))
    return calls


def flushed_ns(k):
    """flushed_ns after flush k (0-based)."""
    return T0 + (k + 1) * INTERVAL


def main_end(flushes):
    """main's end in a finished file of this many flushes."""
    return T0 + flushes * INTERVAL + 500


def expected(flushes, finished):
    """{name: [(start, end)]}: each region's calls as a reader gives them, main's open call
    ended at the last flush in a partial file."""
    out = {"main": [(T0 + 50, main_end(flushes) if finished else flushed_ns(flushes - 1))]}
    for k in range(flushes):
        for r, s, e in interval_calls(k):
            out.setdefault(NAMES[r], []).append((s, e))
    return out


class Writer:
    """A version 3 file being streamed: open() creates it and starts SWMR writing, flush()
    appends an interval's blocks, finish() completes it as the run's end does."""

    def __init__(self, path, compression=None):
        self.path = path
        self.f = h5py.File(path, "w", libver=("v110", "v110"))
        self.f.attrs["format"] = np.bytes_("scope-profiler")
        self.f.attrs["format_version"] = np.int32(3)
        r = self.f.create_group("rank0")
        r.attrs["run_start_time"] = np.int64(T0)
        r.attrs["pid"] = np.int64(4242)
        r.attrs["hostname"] = np.bytes_("node-1")
        r.attrs["clock_offset_ns"] = np.int64(0)
        ev, st = r.create_group("events"), r.create_group("stream")
        opts = dict(compression="gzip", shuffle=True) if compression else {}
        self.cols = {}
        for name, dt in (("start_times", "i8"), ("end_times", "i8"), ("lanes", "i4"),
                         ("alloc_bytes", "i8"), ("bytes", "i8")):
            self.cols[name] = ev.create_dataset(name, (0,), maxshape=(None,), dtype=dt,
                                                chunks=(65536,), **opts)
        for name, dt in (("block_region", "i4"), ("block_calls", "i8")):
            self.cols[name] = ev.create_dataset(name, (0,), maxshape=(None,), dtype=dt,
                                                chunks=(4096,))
        self.names = st.create_dataset("names", (0,), maxshape=(None,), dtype="u1", chunks=(4096,))
        self.flushed = st.create_dataset("flushed_ns", data=np.array([T0], np.int64))
        self.f.swmr_mode = True
        self.k = 0
        self.known = 0
        self.main_at = None

    def _append(self, name, values):
        d = self.cols[name]
        n = d.shape[0]
        d.resize((n + len(values),))
        d[n:] = values
        return n

    def flush(self):
        """Writes interval self.k's blocks and flushes."""
        calls = interval_calls(self.k)
        blocks = [(0, [(T0 + 50, INT64_MIN)])] if self.k == 0 else []
        for r in sorted({r for r, _, _ in calls}):
            blocks.append((r, [(s, e) for q, s, e in calls if q == r]))
        self.known = max(self.known, max(r for r, _ in blocks) + 1)
        raw = b"".join(n.encode() + b"\0" for n in NAMES[:self.known])
        if len(raw) > self.names.shape[0]:
            self.names.resize((len(raw),))
            self.names[:] = np.frombuffer(raw, np.uint8)
        starts = [s for _, c in blocks for s, _ in c]
        at = self._append("start_times", starts)
        self._append("end_times", [e for _, c in blocks for _, e in c])
        if self.k == 0:
            self.main_at = at
        self._append("block_region", [r for r, _ in blocks])
        self._append("block_calls", [len(c) for _, c in blocks])
        self.flushed[0] = flushed_ns(self.k)
        self.f.flush()
        self.k += 1

    def close(self):
        """Closes the file as it stands (a partial file, its superblock no longer open)."""
        self.f.close()

    def finish(self):
        """Ends main, closes, and completes the file as the run's end does: the regions table
        (no first_event, no cumulative_ns), /metadata, run_end_time; stream and the empty
        optional columns deleted."""
        end = main_end(self.k)
        self.cols["end_times"][self.main_at] = end
        self.f.close()
        exp = expected(self.k, True)
        with h5py.File(self.path, "r+") as f:
            r = f["rank0"]
            r.attrs["run_end_time"] = np.int64(end + 100)
            r.attrs["dropped_events"] = np.int64(0)
            del r["stream"]
            for name in ("lanes", "alloc_bytes", "bytes"):
                del r["events"][name]
            t = r.create_group("regions")
            names = NAMES[:self.known]
            rows = [exp[n] for n in names]
            d = [np.array([e - s for s, e in c], np.int64) for c in rows]
            t["name"] = np.array([n.encode() for n in names], "S")
            t["num_calls"] = np.array([len(x) for x in d], np.int64)
            t["total_ns"] = np.array([x.sum() for x in d], np.int64)
            t["min_ns"] = np.array([x.min() for x in d], np.int64)
            t["max_ns"] = np.array([x.max() for x in d], np.int64)
            t["first_start_ns"] = np.array([min(s for s, _ in c) for c in rows], np.int64)
            t["last_end_ns"] = np.array([max(e for _, e in c) for c in rows], np.int64)
            t["mean_ns"] = np.array([x.mean() for x in d])
            t["std_ns"] = np.array([x.std() for x in d])
            t["dropped_events"] = np.zeros(len(names), np.int64)
            t["self_ns"] = np.zeros(len(names), np.int64)
            t["aggregate"] = np.zeros(len(names), np.int8)
            m = f.create_group("metadata")
            m.attrs["tool"] = np.bytes_("scope-profiler")
            m.attrs["command_line"] = np.bytes_("scope-profiler run sim.py")


def write(path, flushes, finish=False, compression=None):
    """A file of this many flushes: partial (closed as it stands) or finished."""
    w = Writer(path, compression)
    for _ in range(flushes):
        w.flush()
    if finish:
        w.finish()
    else:
        w.close()


def h5py_partial_calls(path):
    """{name: [(start, end)]} of a partial file as h5py reads it by the contract's rules: the
    consistent prefix, calls open at the last flush ending then (or at their start)."""
    with h5py.File(path, "r", swmr=True) as f:
        ev, st = f["rank0/events"], f["rank0/stream"]
        names = bytes(st["names"][:]).split(b"\0")[:-1]     # complete names only
        flushed = int(st["flushed_ns"][0])
        s, e = ev["start_times"][:], ev["end_times"][:]
        n = min(len(s), len(e))
        out, at = {}, 0
        for r, c in zip(ev["block_region"][:], ev["block_calls"][:]):
            if at + c > n or r >= len(names):
                break
            name = names[r].decode()
            for i in range(at, at + c):
                end = int(e[i]) if e[i] >= s[i] else max(flushed, int(s[i]))
                out.setdefault(name, []).append((int(s[i]), end))
            at += c
    return out


if __name__ == "__main__":
    w = Writer(sys.argv[1])
    every = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    for k in range(int(sys.argv[2])):
        w.flush()
        if k == 0:
            print("flushing", flush=True)
        time.sleep(every)
    print("ready", flush=True)
    while True:
        time.sleep(60)
