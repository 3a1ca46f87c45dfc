"""Storage size of the profiles `scope-profiler run` writes, with and without
--compression: bytes per event, the fixed floor per file and per region, how
size grows with events, regions and MPI ranks, and what compression saves.

Sizes are of real files written by the real binary. Uncompressed sizes are
deterministic (16 bytes per event plus a fixed part), so the margins are
tight; compressed sizes depend on the recorded timestamps' jitter, so their
bounds leave room (measured figures: man scope-profiler-format, "Storage")."""
import os
import subprocess

import h5py
import pytest

from conftest import BINARY, one_line_error, regions

# The storage budgets of docs/PERFORMANCE.md.
UNCOMPRESSED_BUDGET = 16.5   # bytes per event
# Bytes per event, a timestep loop compressed: about 3 (man scope-profiler-run),
# but what deflate makes of the timestamps depends on the timer's jitter in
# that run: 3.0 to 4.1 measured at every level, idle or loaded (CI once saw
# 4.095 at gzip=1). The bound is that of a compression that works: under a
# third of the 16 bytes stored uncompressed.
COMPRESSED_BUDGET = 5.0

# A timestep loop: three nested regions per step, a little work in each.
TIMESTEP = """
    import sys
    import scope_profiler as sp
    steps = int(sys.argv[1])
    step, assemble, solve = sp.region("timestep"), sp.region("assemble"), sp.region("solve")
    x = 0.0
    for i in range(steps):
        with step:
            with assemble:
                for k in range(10):
                    x += k * 0.5
            with solve:
                for k in range(20):
                    x -= k * 0.25
"""

# K regions of M calls each (an empty body).
REGIONS = """
    import sys
    import scope_profiler as sp
    k, m = int(sys.argv[1]), int(sys.argv[2])
    for j in range(k):
        r = sp.region(f"region_{j:05d}")
        for _ in range(m):
            with r:
                pass
"""


def profile_size(sp, text, *args, compression=None, name="out.h5", options=()):
    """Runs the script, returns the size in bytes of the profile written at
    the end, whole (--memory-budget 0: never streamed, whatever the run's
    length on a loaded machine; a streamed file's storage: test_stream.py)."""
    script = sp.script(text, name="storage.py")
    opts = ["--compression", compression] if compression else []
    proc = sp("run", "-q", "--memory-budget", "0", "-o", name, *opts, *options, script, *args)
    assert proc.returncode == 0, proc.stderr
    return os.path.getsize(sp.tmp / name)


def mpi_size(sp, n, text, *args, compression=None):
    """As profile_size, under mpirun: the merged file written whole, never
    streamed (each rank's calls streamed to its own file once its run is
    longer than a flush interval, as on a loaded machine)."""
    script = sp.script(text, name="storage.py")
    opts = ["--compression", compression] if compression else []
    out = f"mpi{n}.h5"
    proc = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(n), BINARY,
                           "run", "-q", "--memory-budget", "0", "-o", out, *opts, str(script), *map(str, args)],
                          capture_output=True, text=True, timeout=180, cwd=sp.tmp)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / out) as f:
        assert sorted(k for k in f if k.startswith("rank")) == [f"rank{r}" for r in range(n)]
    return os.path.getsize(sp.tmp / out)


# ---- bytes per event ----

def test_uncompressed_bytes_per_event(sp):
    steps = 100_000
    events = 3 * steps
    size = profile_size(sp, TIMESTEP, steps)
    per_event = size / events
    print(f"\nuncompressed: {per_event:.3f} bytes/event ({size} bytes, {events} events)")
    # Two int64 columns: 16 bytes per event is the floor, the rest is fixed.
    assert 16.0 < per_event <= UNCOMPRESSED_BUDGET


def test_lanes_cost_four_bytes_per_event(sp):
    steps = 50_000
    plain = profile_size(sp, TIMESTEP, steps, name="plain.h5")
    lanes = profile_size(sp, TIMESTEP, steps, name="lanes.h5", options=["--track-threads"])
    assert (lanes - plain) / (3 * steps) == pytest.approx(4.0, abs=0.01)


@pytest.mark.parametrize("compression", ["auto", "gzip", "gzip=1", "gzip=9"])
def test_compressed_bytes_per_event(sp, compression):
    steps = 100_000
    events = 3 * steps
    size = profile_size(sp, TIMESTEP, steps, compression=compression)
    per_event = size / events
    print(f"\n{compression}: {per_event:.3f} bytes/event")
    assert per_event <= COMPRESSED_BUDGET
    with h5py.File(sp.tmp / "out.h5") as f:
        level = 4 if compression in ("auto", "gzip") else int(compression[5:])
        assert f["metadata"].attrs["compression"] == f"gzip={level}"
        assert [int(regions(f)[n].attrs["num_calls"]) for n in ("timestep", "assemble", "solve")] \
            == [steps] * 3
        for column in ("start_times", "end_times"):
            ds = f[f"rank0/events/{column}"]     # every region's calls, one after the other
            assert ds.compression == "gzip" and ds.compression_opts == level and ds.shuffle
            assert ds.chunks == (65536,)
            assert len(ds) == events


def test_compressed_tight_loop_and_lanes(sp):
    # One region, an empty body: the most regular timestamps there are.
    calls = 200_000
    size = profile_size(sp, REGIONS, 1, calls, compression="auto")
    assert size / calls <= 3.0
    # Thread lanes compress to next to nothing: the lanes column's own
    # storage (two runs' whole files differ by their timestamps' jitter).
    profile_size(sp, REGIONS, 1, calls, compression="auto", name="lanes.h5",
                 options=["--track-threads"])
    with h5py.File(sp.tmp / "lanes.h5") as f:
        ds = f["rank0/events/lanes"]
        assert len(ds) == calls
        assert ds.id.get_storage_size() / calls < 0.05


# ---- the fixed floor ----

def test_file_floor(sp):
    # One region called once: root, metadata, one rank (its table's columns,
    # its event columns, its tree's columns), and the global heap (HDF5's
    # smallest is 4 KiB) of /metadata's variable-length strings, the
    # original's keys that h5py reads as str.
    size = profile_size(sp, REGIONS, 1, 1)
    print(f"\nfloor: {size} bytes")
    assert size < 10 * 1024 + 4096
    # Compression has nothing to compress here and costs nothing.
    assert profile_size(sp, REGIONS, 1, 1, compression="auto", name="z.h5") <= size + 128


@pytest.mark.parametrize("compression", [None, "auto"])
def test_floor_per_region(sp, compression):
    # The cost of one more region of one call: a row of its rank's table
    # (its name as wide as the longest, its summary), one call in the
    # event columns and a call-tree row.
    k = 201
    one = profile_size(sp, REGIONS, 1, 1, compression=compression, name="one.h5")
    many = profile_size(sp, REGIONS, k, 1, compression=compression, name="many.h5")
    per_region = (many - one) / (k - 1)
    print(f"\nper region ({compression or 'none'}): {per_region:.0f} bytes")
    assert 100 < per_region <= 180


def test_floor_per_compressed_region(sp):
    # A region of calls worth compressing: its calls compressed with the
    # others' in its rank's columns, well under a plain one's 16 bytes each.
    k, m = 101, 1000
    one = profile_size(sp, REGIONS, 1, m, compression="auto", name="one.h5")
    many = profile_size(sp, REGIONS, k, m, compression="auto", name="many.h5")
    per_region = (many - one) / (k - 1)
    plain = (profile_size(sp, REGIONS, k, m, name="p.h5") - profile_size(sp, REGIONS, 1, m, name="p1.h5")) / (k - 1)
    print(f"\nper region of {m} calls: auto {per_region:.0f} bytes, none {plain:.0f}")
    assert per_region < plain / 2.5
    assert per_region < 180 + 6 * m


# ---- scaling ----

# Three regions of n, 2n and 4n calls of the same shape, interleaved in one
# loop so that they see the same timing jitter: what one run measures.
NESTED_SIZES = """
    import sys
    import scope_profiler as sp
    n = int(sys.argv[1])
    a, b, c = sp.region("n1"), sp.region("n2"), sp.region("n4")
    x = 0.0
    for i in range(4 * n):
        with c:
            x += i * 0.5
        if i % 2 == 0:
            with b:
                x += i * 0.5
        if i % 4 == 0:
            with a:
                x += i * 0.5
"""


def column_bytes(path, rank="rank0"):
    """The bytes a rank's event columns take in the file."""
    with h5py.File(path) as f:
        return sum(ds.id.get_storage_size() for ds in f[rank]["events"].values())


def chunk_bytes(path, rank="rank0"):
    """The stored size of each chunk of a rank's event columns, summed over
    the columns: [bytes of calls 0..65535, of 65536.., ...]."""
    with h5py.File(path) as f:
        cols = list(f[rank]["events"].values())
        return [sum(ds.id.get_chunk_info(i).size for ds in cols)
                for i in range(cols[0].id.get_num_chunks())]


def test_linear_in_events(sp):
    n = 40_000
    rest = []
    for c in (n, 2 * n, 4 * n):
        size = profile_size(sp, REGIONS, 1, c, name=f"e{c}.h5")
        cols = column_bytes(sp.tmp / f"e{c}.h5")
        # In each file: exactly 16 bytes per event in the event columns ...
        assert cols == 16 * c, cols
        rest.append(size - cols)
    # ... on top of a part that does not grow with the events (it differs
    # between runs only by what the metadata says: times, the command line).
    assert max(rest) - min(rest) < 1024, rest
    # Compressed: the same bytes per event at every size, measured on the
    # columns of one file (their compressed size depends on the run's
    # timing jitter, so separate runs are never compared): n1's calls fill
    # the columns' first chunk, n2's the next two, n4's the next four.
    n = 65536
    profile_size(sp, NESTED_SIZES, n, compression="auto", name="z.h5")
    chunks = chunk_bytes(sp.tmp / "z.h5")
    assert len(chunks) == 7, chunks
    cols = {"n1": chunks[0], "n2": sum(chunks[1:3]), "n4": sum(chunks[3:])}
    per_event = {name: cols[name] / (k * n) for name, k in (("n1", 1), ("n2", 2), ("n4", 4))}
    print(f"\ncompressed bytes per event: {per_event}")
    assert all(v <= COMPRESSED_BUDGET for v in per_event.values()), per_event
    assert per_event["n4"] == pytest.approx(per_event["n1"], rel=0.3), per_event
    assert per_event["n2"] == pytest.approx(per_event["n1"], rel=0.3), per_event


def test_linear_in_regions(sp):
    m = 50
    sizes = [profile_size(sp, REGIONS, k, m, name=f"r{k}.h5") for k in (100, 200, 400)]
    d1, d2 = sizes[1] - sizes[0], sizes[2] - sizes[1]
    assert d2 == pytest.approx(2 * d1, rel=0.02), sizes
    # Compressed: what each region adds besides the compressed columns
    # (whose size depends on each run's jitter) grows linearly.
    rest = []
    for k in (100, 200, 400):
        size = profile_size(sp, REGIONS, k, m, compression="auto", name=f"z{k}.h5")
        cols = column_bytes(sp.tmp / f"z{k}.h5")
        assert cols < 16 * m * k                              # smaller than plain
        rest.append(size - cols)
    d1, d2 = rest[1] - rest[0], rest[2] - rest[1]
    assert d2 == pytest.approx(2 * d1, rel=0.1), rest


def event_bytes(path):
    """Per rank, the bytes its event columns take in the file."""
    with h5py.File(path) as f:
        ranks = [k for k in f if k.startswith("rank")]
    return {rank: column_bytes(path, rank) for rank in ranks}


@pytest.mark.parametrize("compression", [None, "auto"])
def test_linear_in_ranks(sp, compression):
    # The same events on every rank. What a rank's columns take compressed
    # depends on its timing jitter (more with 4 ranks on 2 cores), so the
    # columns are measured per rank and the rest of the file must grow by
    # the same bytes per rank.
    steps = 20_000
    budget = UNCOMPRESSED_BUDGET if compression is None else COMPRESSED_BUDGET
    rest = {}
    for n in (1, 2, 4):
        size = mpi_size(sp, n, TIMESTEP, steps, compression=compression)
        columns = event_bytes(sp.tmp / f"mpi{n}.h5")
        assert len(columns) == n
        for rank, used in columns.items():
            assert used / (3 * steps) <= budget, (rank, used)
            if compression is None:
                assert used == 3 * steps * 16          # exactly two int64 per event
        rest[n] = size - sum(columns.values())
    per_rank = rest[2] - rest[1]
    print(f"\nper rank besides the columns ({compression or 'none'}): {per_rank} bytes")
    assert 0 < per_rank < 8192
    # Within one of HDF5's 2 KiB metadata blocks (compressed columns' chunk
    # indexes land in them unevenly).
    assert rest[4] - rest[2] == pytest.approx(2 * per_rank, abs=2048), rest


# ---- compression ratios ----

def test_compression_ratios(sp):
    steps = 50_000
    plain = profile_size(sp, TIMESTEP, steps, name="plain.h5")
    sizes = {c: profile_size(sp, TIMESTEP, steps, compression=c, name=f"{c}.h5")
             for c in ("gzip=1", "auto", "gzip=9")}
    ratios = {c: plain / s for c, s in sizes.items()}
    print("\ncompression ratios: " + ", ".join(f"{c} {r:.1f}x" for c, r in ratios.items()))
    # The 4 bytes/event budget is bench_storage's: how well timestamps
    # compress follows the jitter of the machine's clock under load, so the
    # test keeps a margin (seen from 4.0x to 4.7x at gzip=1).
    assert all(r >= 3.5 for r in ratios.values()), ratios
    assert profile_size(sp, TIMESTEP, steps, compression="none", name="none.h5") == \
        pytest.approx(plain, abs=64)


def test_compressed_file_reads_as_plain_nanoseconds(sp):
    script = sp.script(TIMESTEP, name="storage.py")
    proc = sp("run", "-q", "-o", "z.h5", "--compression", "gzip=6", script, 2000)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "z.h5") as f:
        g = regions(f)["solve"]
        start, end = g["start_times"][:], g["end_times"][:]
        assert start.dtype.str == "<i8" and len(start) == 2000
        assert (end - start).sum() == g.attrs["total_ns"]
        assert start[0] == g.attrs["first_start_ns"] and end[-1] == g.attrs["last_end_ns"]
    # The tool's own readers: summary, export, the Python read API.
    out = sp("summary", "z.h5")
    assert out.returncode == 0 and "solve" in out.stdout, out.stderr
    out = sp("export", "z.h5", "-f", "csv")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\nsolve,") == 2000
    reader = sp.script("""
        import sys, scope_profiler as sp
        r = sp.read_h5(sys.argv[1])
        print(r.metadata["compression"], len(r.events()))
    """, name="reader.py")
    out = sp("run", "-q", "--no-output", reader, sp.tmp / "z.h5")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["gzip=6", "6000"]


# ---- the setting ----

@pytest.mark.parametrize("bad", ["zstd", "gzip=0", "gzip=10", "gzip=", "GZIP", "auto=3", ""])
def test_bad_compression_is_one_line_usage_error(sp, bad):
    script = sp.script("pass\n")
    proc = sp("run", "--compression", bad, script)
    assert proc.returncode == 2
    one_line_error(proc, "--compression", "auto, gzip, gzip=LEVEL", repr(bad))


@pytest.mark.parametrize("value, stored", [
    ("None", "none"), ("False", "none"), ("'none'", "none"), ("0", "none"),
    ("True", "gzip=4"), ("'auto'", "gzip=4"), ("'gzip'", "gzip=4"), ("'gzip=2'", "gzip=2"),
    ("7", "gzip=7"),
])
def test_setup_hdf5_compression(sp, value, stored):
    script = sp.script(f"""
        import scope_profiler as sp
        sp.setup(file_path="s.h5", hdf5_compression={value}, verbose=False)
        r = sp.region("loop")
        for _ in range(1000):
            with r:
                pass
        sp.finalize()
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "s.h5") as f:
        assert f["metadata"].attrs["compression"] == stored
        assert int(regions(f)["loop"].attrs["num_calls"]) == 1000
        ds = f["rank0/events/start_times"]
        assert ds.compression == (None if stored == "none" else "gzip")


@pytest.mark.parametrize("value", ["'zstd'", "'gzip=0'", "10", "-1", "4.0", "'Auto'"])
def test_setup_bad_hdf5_compression(sp, value):
    script = sp.script(f"""
        import scope_profiler as sp
        try:
            sp.setup(hdf5_compression={value})
        except ValueError as e:
            print("ValueError:", e)
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ValueError: hdf5_compression must be 'auto', 'gzip', "), proc.stdout


def test_command_line_compression_wins_over_setup(sp):
    script = sp.script("""
        import scope_profiler as sp
        sp.setup(hdf5_compression="none", verbose=False)
        r = sp.region("loop")
        for _ in range(100):
            with r:
                pass
    """)
    proc = sp("run", "-q", "-o", "c.h5", "--compression", "gzip=9", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "c.h5") as f:
        assert f["metadata"].attrs["compression"] == "gzip=9"
        assert f["rank0/events/start_times"].compression_opts == 9
