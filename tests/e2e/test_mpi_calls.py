"""`run --mpi-calls` / setup(profile_mpi_calls=True): every MPI call, from
mpi4py or from a C extension, is a region named by the MPI function, timed
through MPI's profiling interface; on the real Open MPI and mpi4py from
Debian, under a real mpirun (oversubscribed: this machine has two cores)."""
import json
import subprocess

import h5py
import numpy as np
import pytest

from conftest import one_line_error, regions, tree
from test_mpi import mpirun

# Every call the script makes, each in a region of its own, with what each
# rank must record inside it (the numpy buffers' bytes: count * size).
CALLS = """
    import numpy as np
    import scope_profiler as sp
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    other = 1 - rank
    mem = np.zeros(4)
    win = MPI.Win.Create(mem, comm=comm)
    with sp.region("barrier"):
        comm.Barrier()
    with sp.region("allreduce"):
        total = np.empty(10)
        comm.Allreduce(np.ones(10), total)
    with sp.region("pickled"):
        ranks = comm.allreduce(rank)
    with sp.region("p2p"):
        if rank == 0:
            comm.Send(np.arange(7.0), dest=1, tag=3)
        else:
            got = np.empty(7)
            comm.Recv(got, source=0, tag=3)
    with sp.region("nonblocking"):
        out, into = np.full(5, rank, dtype=np.int32), np.empty(5, dtype=np.int32)
        MPI.Request.Waitall([comm.Isend(out, dest=other, tag=4),
                             comm.Irecv(into, source=other, tag=4)])
    with sp.region("bcast"):
        comm.Bcast(np.zeros(3, dtype=np.int64), root=0)
    with sp.region("onesided"):
        win.Fence()
        win.Put(np.ones(4), other)
        win.Fence()
        back = np.empty(4)
        win.Get(back, other)
        win.Fence()
    win.Free()
    assert total[0] == 2 and ranks == 1 and (into == other).all() and (mem == 1).all()
    assert rank == 0 or (got == np.arange(7.0)).all()
    print("rank", rank, "done", flush=True)
"""

# region -> {MPI function: calls} on rank 0 and on rank 1.
EXPECTED = {
    "barrier": ({"MPI_Barrier": 1}, {"MPI_Barrier": 1}),
    "allreduce": ({"MPI_Allreduce": 1}, {"MPI_Allreduce": 1}),
    "p2p": ({"MPI_Send": 1}, {"MPI_Recv": 1}),
    "nonblocking": ({"MPI_Isend": 1, "MPI_Irecv": 1, "MPI_Waitall": 1},) * 2,
    "bcast": ({"MPI_Bcast": 1}, {"MPI_Bcast": 1}),
    "onesided": ({"MPI_Win_fence": 3, "MPI_Put": 1, "MPI_Get": 1},) * 2,
}


# region -> {MPI function: bytes per call} on rank 0 and on rank 1: the
# numpy buffers' count * item size (10 float64, 7 float64, 5 int32, 3 int64,
# 4 float64).
BYTES = {
    "allreduce": ({"MPI_Allreduce": [80]},) * 2,
    "p2p": ({"MPI_Send": [56]}, {"MPI_Recv": [56]}),
    "nonblocking": ({"MPI_Isend": [20], "MPI_Irecv": [20]},) * 2,
    "bcast": ({"MPI_Bcast": [24]},) * 2,
    "onesided": ({"MPI_Put": [32], "MPI_Get": [32]},) * 2,
}
NO_BYTES = {"MPI_Barrier", "MPI_Waitall", "MPI_Win_fence"}


def table(f, rank):
    """{region name: {column: value}} of one rank's regions table."""
    g = f[f"rank{rank}/regions"]
    cols = {k: g[k][:] for k in g}
    names = [bytes(n).decode() for n in cols["name"]]
    return {n: {k: v[i] for k, v in cols.items()} for i, n in enumerate(names)}


def bytes_within(f, rank, parent, name):
    """The bytes of the calls of region `name` made inside the (one) call of
    region `parent`, by time, in call order."""
    regs = regions(f, rank)
    start, end = regs[parent]["start_times"][0], regs[parent]["end_times"][0]
    g = regs[name]
    inside = (g["start_times"][:] >= start) & (g["end_times"][:] <= end)
    return [int(b) for b in g["bytes"][:][inside]]


def children(t, parent_name):
    """{child name: calls} of the (one) node named parent_name in a tree."""
    idx = [i for i, (_, name, _, _) in enumerate(t) if name == parent_name]
    assert len(idx) == 1, (parent_name, t)
    return {name: calls for p, name, calls, _ in t if p == idx[0]}


def text_tree(out):
    """The summary's call tree as [(depth, name)], names without "(2x)"."""
    rows, inside = [], False
    for line in out.splitlines():
        if line.startswith("Call tree"):
            inside = True
            continue
        if inside and not line.strip() and rows:
            break
        if not inside or not line.strip() or line.startswith(("region", "─")):
            continue
        start = line.rfind("─ ") + 2 if "─ " in line else 0
        rows.append((start // 3, line[start:].split("  ")[0].split(" (")[0]))
    return rows


@pytest.mark.script_imports("mpi4py", "numpy")
def test_every_call_is_a_region_nested_in_the_scripts_own(sp):
    sp.script(CALLS)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("done") == 2
    with h5py.File(sp.tmp / "out.h5") as f:
        assert f["metadata"].attrs["mpi_calls"] == "true"
        for r in (0, 1):
            t = tree(f, r)
            for region, per_rank in EXPECTED.items():
                assert children(t, region) == per_rank[r], (r, region, t)
            # A pickled allreduce is mpi4py's own algorithm over MPI calls:
            # whichever they are, they are MPI calls inside the region.
            inner = children(t, "pickled")
            assert inner and all(name.startswith("MPI_") for name in inner), inner
            regs = regions(f, r)
            mpi_names = {n for n in regs if n.startswith("MPI_")}
            # Nothing else: our own clock sync and final gather are not recorded.
            inside = set().union(*(children(t, reg) for reg in list(EXPECTED) + ["pickled"]))
            assert mpi_names == inside
            roots = {name for p, name, _, _ in t if p == -1}
            assert roots == set(EXPECTED) | {"pickled"}
            for name in mpi_names:
                g = regs[name]
                assert g.attrs["num_calls"] == len(g["start_times"])
                assert (g["end_times"][:] >= g["start_times"][:]).all()
            # Bytes moved: count * the datatype's size, per call.
            tab = table(f, r)
            for region, per_rank in BYTES.items():
                for name, want in per_rank[r].items():
                    assert bytes_within(f, r, region, name) == want, (r, region, name)
            for name in mpi_names:
                moved = name not in NO_BYTES
                assert tab[name]["value_kind"] == (2 if moved else 0), name
                if moved:
                    assert tab[name]["values_total"] == int(np.sum(regs[name]["bytes"][:]))
    # summary's bytes per MPI function: the file's, summed over the ranks.
    js = json.loads(sp("summary", "--json", "out.h5").stdout)
    with h5py.File(sp.tmp / "out.h5") as f:
        tabs = [table(f, r) for r in (0, 1)]
    for row in js["regions"]:
        if row["name"].startswith("MPI_") and row["name"] not in NO_BYTES:
            assert row["bytes"] == sum(int(t[row["name"]]["values_total"])
                                       for t in tabs if row["name"] in t), row
        else:
            assert "bytes" not in row, row
    # summary's call tree shows the same nesting.
    out = sp("summary", "--tree", "--all", "out.h5")
    assert out.returncode == 0, out.stderr
    rows = text_tree(out.stdout)
    for region, per_rank in EXPECTED.items():
        at = rows.index((0, region))
        below = set()
        for depth, name in rows[at + 1:]:
            if depth == 0:
                break
            below.add(name)
        assert set(per_rank[0]) | set(per_rank[1]) <= below, (region, rows)


@pytest.mark.script_imports("mpi4py", "numpy")
def test_off_by_default(sp):
    sp.script(CALLS)
    proc = mpirun(sp, 2, "run", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert f["metadata"].attrs["mpi_calls"] == "false"
        for r in (0, 1):
            assert set(regions(f, r)) == set(EXPECTED) | {"pickled"}


@pytest.mark.script_imports("mpi4py", "numpy")
def test_setup_turns_it_on_from_the_script(sp):
    sp.script("""
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        with sp.region("before"):
            comm.Barrier()
        sp.setup(profile_mpi_calls=True)
        with sp.region("after"):
            comm.Barrier()
            comm.Barrier()
    """)
    proc = mpirun(sp, 2, "run", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            t = tree(f, r)
            assert children(t, "before") == {}
            assert children(t, "after") == {"MPI_Barrier": 2}


@pytest.mark.script_imports("mpi4py", "numpy")
def test_a_c_extension_calling_mpi_is_recorded_too(sp):
    # A shared library linked against libmpi, as a C extension is: its call
    # of MPI_Allreduce resolves to the executable's, as mpi4py's do.
    (sp.tmp / "ext.c").write_text("""
        #include <mpi.h>
        int sum_ranks(void)
        {
            int rank, sum = -1;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            return sum;
        }
    """)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "ompi-c"], capture_output=True,
                           text=True, check=True).stdout.split()
    subprocess.run(["cc", "-shared", "-fPIC", "-o", sp.tmp / "libext.so", sp.tmp / "ext.c", *flags],
                   check=True)
    sp.script("""
        import ctypes, os
        import scope_profiler as sp
        from mpi4py import MPI
        ext = ctypes.CDLL(os.path.abspath("libext.so"))
        with sp.region("from_c"):
            total = ext.sum_ranks()
        # A file per rank: two ranks' stdout may interleave within a line.
        with open(f"sum{MPI.COMM_WORLD.Get_rank()}", "w") as out:
            out.write(str(total))
    """)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert [(sp.tmp / f"sum{r}").read_text() for r in (0, 1)] == ["1", "1"]
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            assert children(tree(f, r), "from_c") == {"MPI_Allreduce": 1}
            assert bytes_within(f, r, "from_c", "MPI_Allreduce") == [4]   # one MPI_INT


@pytest.mark.script_imports("mpi4py", "numpy")
def test_threads_each_record_in_their_own_lane(sp):
    sp.script("""
        import threading
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        def worker():
            with sp.region("in_thread"):
                comm.Barrier()
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        with sp.region("in_main"):
            comm.Barrier()
            comm.Barrier()
    """)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "--track-threads", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            regs = regions(f, r)
            main_lane = set(regs["in_main"]["lanes"][:])
            thread_lane = set(regs["in_thread"]["lanes"][:])
            assert main_lane != thread_lane
            assert sorted(regs["MPI_Barrier"]["lanes"][:]) == sorted(
                list(thread_lane) + 2 * list(main_lane))
            t = tree(f, r)
            assert children(t, "in_main") == {"MPI_Barrier": 2}
            assert children(t, "in_thread") == {"MPI_Barrier": 1}


@pytest.mark.script_imports("mpi4py", "numpy")
def test_without_a_launcher(sp):
    # No MPI at all: nothing to record, the run is as usual.
    sp.script("""
        import scope_profiler as sp
        with sp.region("work"):
            sum(range(1000))
    """)
    proc = sp("run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert set(regions(f)) == {"work"}
    # mpi4py loads libmpi itself (a singleton): its calls are recorded,
    # through the library it loaded.
    sp.script("""
        import scope_profiler as sp
        from mpi4py import MPI
        with sp.region("work"):
            MPI.COMM_WORLD.Barrier()
    """, name="single.py")
    proc = sp("run", "--mpi-calls", "-o", "single.h5", "single.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "single.h5") as f:
        assert children(tree(f), "work") == {"MPI_Barrier": 1}


def test_combinations_it_refuses(sp):
    sp.script("pass\n")
    for other, why in (("--aggregate", "kept per call"), ("--track-async", "per thread")):
        proc = sp("run", "--mpi-calls", other, "script.py")
        assert proc.returncode == 2
        one_line_error(proc, "--mpi-calls", other, why)
    sp.script("""
        import scope_profiler as sp
        try:
            sp.setup(profile_mpi_calls=True, aggregation_mode=True)
        except ValueError as e:
            print("refused:", e)
    """)
    proc = sp("run", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert "refused: profile_mpi_calls cannot be combined with aggregation_mode" in proc.stdout


@pytest.mark.script_imports("mpi4py", "numpy")
def test_bytes_of_calls_with_two_sides_follow_the_stated_rule(sp):
    # scope-profiler-run(1): Sendrecv counts both sides; the other
    # collectives this rank's own contribution (the send side; Alltoall's
    # per rank of the communicator), but Scatter the receive side.
    sp.script("""
        import numpy as np
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        i4 = np.int32
        with sp.region("two_sided"):
            comm.Sendrecv(np.ones(3), dest=1 - rank, recvbuf=np.empty(3), source=1 - rank)
            comm.Gather(np.ones(2, i4), np.empty(4, i4) if rank == 0 else None, root=0)
            comm.Scatter(np.ones(4, i4) if rank == 0 else None, np.empty(2, i4), root=0)
            comm.Allgather(np.ones(2, i4), np.empty(4, i4))
            comm.Alltoall(np.ones(4, i4), np.empty(4, i4))
            comm.Gatherv(np.ones(rank + 1), [np.empty(3), [1, 2]] if rank == 0 else None, root=0)
            comm.Alltoallv([np.ones(3, i4), [1, 2]], [np.empty(4, i4), [2, 2] if rank else [1, 1]])
    """)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    want = {"MPI_Sendrecv": [48, 48], "MPI_Gather": [8, 8], "MPI_Scatter": [8, 8],
            "MPI_Allgather": [8, 8], "MPI_Alltoall": [16, 16], "MPI_Gatherv": [8, 16],
            "MPI_Alltoallv": [12, 12]}
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            assert children(tree(f, r), "two_sided") == {name: 1 for name in want}
            for name, per_rank in want.items():
                assert bytes_within(f, r, "two_sided", name) == [per_rank[r]], (r, name)


@pytest.mark.script_imports("mpi4py", "numpy")
def test_threads_calling_mpi_at_once_lose_no_call(sp):
    # Four threads probe at the same time (mpi4py releases the GIL around
    # the call), none having entered a region before: each call is
    # recorded once, in its thread's lane.
    sp.script("""
        import threading
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        start = threading.Barrier(4)
        def prober():
            start.wait()
            for _ in range(500):
                comm.Iprobe(source=MPI.ANY_SOURCE, tag=99)
        threads = [threading.Thread(target=prober) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    """)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "--track-threads", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            g = regions(f, r)["MPI_Iprobe"]
            assert g.attrs["num_calls"] == 2000
            lanes, counts = np.unique(g["lanes"][:], return_counts=True)
            assert list(counts) == [500] * 4 and 0 not in lanes   # lane 0: the main thread


@pytest.mark.script_imports("mpi4py", "numpy")
def test_a_region_named_like_an_mpi_function_keeps_the_profile(sp):
    # The script's own region "MPI_Allreduce" around its allreduce: the
    # calls are "MPI_Allreduce [mpi]" (scope-profiler-run(1)), nested in it,
    # and a name taken as well moves on to "[mpi 2]".
    sp.script("""
        import numpy as np
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        with sp.region("MPI_Allreduce"):
            comm.Allreduce(np.ones(2), np.empty(2))
        with sp.region("MPI_Barrier"):
            with sp.region("MPI_Barrier [mpi]"):
                comm.Barrier()
    """)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            t = tree(f, r)
            assert children(t, "MPI_Allreduce") == {"MPI_Allreduce [mpi]": 1}
            assert children(t, "MPI_Barrier") == {"MPI_Barrier [mpi]": 1}
            assert children(t, "MPI_Barrier [mpi]") == {"MPI_Barrier [mpi 2]": 1}
            assert bytes_within(f, r, "MPI_Allreduce", "MPI_Allreduce [mpi]") == [16]


@pytest.mark.script_imports("mpi4py", "numpy")
def test_intercommunicator_collectives_count_the_remote_group(sp):
    # Ranks 0, 1 and rank 2 form two groups of an intercommunicator: an
    # Alltoall(v)'s per-peer blocks and counts are one per rank of the
    # remote group (two for rank 2, one for ranks 0 and 1).
    sp.script("""
        import numpy as np
        import scope_profiler as sp
        from mpi4py import MPI
        w = MPI.COMM_WORLD
        color = 0 if w.rank < 2 else 1
        local = w.Split(color, w.rank)
        inter = local.Create_intercomm(0, w, 2 if color == 0 else 0, tag=7)
        peers = inter.Get_remote_size()
        counts = [3] * peers
        with sp.region("inter"):
            s, r = np.ones(3 * peers), np.empty(3 * peers)
            inter.Alltoallv([s, (counts, None), MPI.DOUBLE], [r, (counts, None), MPI.DOUBLE])
            inter.Alltoall([s, MPI.DOUBLE], [r, MPI.DOUBLE])
        assert (r == 1).all()
    """)
    proc = mpirun(sp, 3, "run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        for r, peers in ((0, 1), (1, 1), (2, 2)):
            for name in ("MPI_Alltoallv", "MPI_Alltoall"):
                assert bytes_within(f, r, "inter", name) == [24 * peers], (r, name)


def test_a_function_missing_from_the_library_is_said_once(sp):
    # No libmpi loaded: the executable's MPI_Barrier finds no PMPI_Barrier;
    # every call fails with the same MPI error, and the reason is one line.
    sp.script("""
        import ctypes
        barrier = ctypes.CDLL(None).MPI_Barrier
        barrier.argtypes = [ctypes.c_void_p]
        print("rc", sorted({barrier(None) for _ in range(3)}))
    """)
    proc = sp("run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    rcs = [line for line in proc.stdout.splitlines() if line.startswith("rc ")]
    assert len(rcs) == 1 and rcs[0] != "rc [0]", proc.stdout
    assert proc.stderr.count("PMPI_Barrier not found in the MPI library") == 1, proc.stderr


@pytest.mark.script_imports("mpi4py", "numpy")
def test_nonblocking_v_forms_persistent_and_atomic_calls(sp):
    # The nonblocking v-forms, Alltoallw, persistent requests and the
    # one-sided atomics are recorded too, with their bytes by the same rule.
    sp.script("""
        import numpy as np
        import scope_profiler as sp
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        i4 = np.int32
        mem = np.zeros(1, dtype=np.int64)
        win = MPI.Win.Create(mem, comm=comm)
        with sp.region("more"):
            comm.Iscan(np.ones(3), np.empty(3)).Wait()
            comm.Iallgatherv(np.ones(rank + 1, i4), [np.empty(3, i4), [1, 2]]).Wait()
            comm.Ialltoallv([np.ones(3, i4), [1, 2]],
                            [np.empty(4, i4), [2, 2] if rank else [1, 1]]).Wait()
            s, r = np.ones(2, i4), np.empty(2, i4)
            comm.Alltoallw([s, [1, 1], [0, 4], [MPI.INT, MPI.INT]],
                           [r, [1, 1], [0, 4], [MPI.INT, MPI.INT]])
            req = comm.Send_init(np.ones(5), dest=1 - rank, tag=5)
            back = np.empty(5)
            req.Start()
            comm.Recv(back, source=1 - rank, tag=5)
            req.Wait()
            req.Free()
            win.Lock_all()
            old = np.empty(1, dtype=np.int64)
            win.Fetch_and_op(np.ones(1, dtype=np.int64), old, 1 - rank)
            win.Unlock_all()
        win.Free()
        comm.Barrier()
        assert (back == 1).all() and mem[0] == 1 and (r == 1).all()
    """)
    proc = mpirun(sp, 2, "run", "--mpi-calls", "-o", "out.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    want = {"MPI_Iscan": [24, 24], "MPI_Iallgatherv": [4, 8], "MPI_Ialltoallv": [12, 12],
            "MPI_Alltoallw": [8, 8], "MPI_Fetch_and_op": [16, 16]}
    with h5py.File(sp.tmp / "out.h5") as f:
        for r in (0, 1):
            inner = children(tree(f, r), "more")
            assert inner.get("MPI_Start") == 1, inner
            for name, per_rank in want.items():
                assert inner.get(name) == 1, (name, inner)
                assert bytes_within(f, r, "more", name) == [per_rank[r]], (r, name)
