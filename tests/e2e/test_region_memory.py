"""Memory per region: a region costs its calls, not a buffer sized for a hot
one. Regions start with a few event slots and double when full, up to
buffer_limit (setup(buffer_limit=N), run --buffer-limit N) and past it, so
thousands of regions called once each (run --recursive over a big program)
take a few hundred bytes each; `capacity` is always what a region holds now.
Memory is measured within one run (VmRSS read by the script before and after
its regions), never against another run. `make bench` (bench_memory.py)
measures 100,000 regions and whole programs against cProfile."""
import h5py
import pytest

from conftest import regions
from test_memory import ASAN

N_REGIONS = 20_000

# Creates N_REGIONS regions, each called once, by `with` or by a decorator,
# and prints the growth of the resident memory per region meanwhile (the
# names are made before the first reading).
DISTINCT = """
import sys
import scope_profiler as sp

def vmrss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

how, n = sys.argv[1], int(sys.argv[2])
names = [f"region_{i:05d}" for i in range(n)]
def work():
    return None
before = vmrss_kib()
if how == "with":
    for name in names:
        with sp.region(name):
            pass
else:
    for name in names:
        sp.profile(name)(work)()
after = vmrss_kib()
print((after - before) * 1024 / n)
"""


@pytest.mark.parametrize("how", ["with", "decorator"])
def test_distinct_one_call_regions_take_little_memory(sp, how):
    script = sp.script(DISTINCT)
    proc = sp("run", "-q", "-o", "out.h5", script, how, N_REGIONS, timeout=300)
    assert proc.returncode == 0, proc.stderr
    per_region = float(proc.stdout.split()[-1])
    if not ASAN:   # the sanitizer's allocator keeps its own books
        # Each region's object, its name in the registry and its first few
        # event slots; a first buffer of buffer_limit (1024) events took
        # about 9 KB each.
        assert per_region < 2048, f"{per_region:.0f} bytes per region"
    names = {f"region_{i:05d}" for i in range(N_REGIONS)}
    with h5py.File(sp.tmp / "out.h5", "r") as f:
        regs = regions(f)
        assert names <= set(regs)
        assert all(int(regs[n].attrs["num_calls"]) == 1 for n in names)
        g = f["rank0/regions"]
        assert int(g["num_calls"][:].sum()) == len(f["rank0/events/start_times"])


def test_capacity_is_true_and_grows_with_the_calls(sp):
    script = sp.script("""
        import scope_profiler as sp
        sp.ProfileManager.setup(file_path="out.h5")
        r = sp.ProfileManager.region("hot")
        seen = []
        for i in range(5000):
            with r:
                pass
            reg = sp.ProfileManager.get_region("hot")
            assert reg.capacity >= reg.num_calls == i + 1, (reg.capacity, reg.num_calls)
            if not seen or seen[-1] != reg.capacity:
                seen.append(reg.capacity)
        print(*seen)
        print(sp.ProfileManager.get_region("hot").dropped)
        sp.ProfileManager.finalize(verbose=False)
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    caps, dropped = proc.stdout.splitlines()
    caps = [int(c) for c in caps.split()]
    assert caps[0] < 64                     # a few events at the first call
    assert caps == sorted(caps) and len(caps) > 5 and caps[-1] >= 5000
    assert caps[-1] < 2 * 5000 + 1          # grown by doubling, no more
    assert dropped == "0"
    with h5py.File(sp.tmp / "out.h5", "r") as f:
        assert int(regions(f)["hot"].attrs["num_calls"]) == 5000


@pytest.mark.parametrize("limit", [1, 4, 1000, 5000])
def test_buffer_limit_holds_its_events(sp, limit):
    """setup(buffer_limit=N): N calls fit in the region (its capacity after
    them is N exactly, whatever N), and calls past N are all kept."""
    script = sp.script(f"""
        import scope_profiler as sp
        sp.ProfileManager.setup(file_path="out.h5", buffer_limit={limit})
        r = sp.ProfileManager.region("r")
        for _ in range({limit}):
            with r:
                pass
        reg = sp.ProfileManager.get_region("r")
        print(reg.num_calls, reg.capacity)
        for _ in range({limit} + 3):
            with r:
                pass
        print(reg.num_calls, reg.capacity >= reg.num_calls, reg.dropped)
        sp.ProfileManager.finalize(verbose=False)
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == f"{limit} {limit}"
    assert second == f"{2 * limit + 3} True 0"
    with h5py.File(sp.tmp / "out.h5", "r") as f:
        r = regions(f)["r"]
        assert int(r.attrs["num_calls"]) == 2 * limit + 3
        assert len(r["start_times"]) == 2 * limit + 3


def test_run_buffer_limit_keeps_every_call(sp):
    script = sp.script("""
        import scope_profiler as sp
        for _ in range(777):
            with sp.region("r"):
                pass
        print(sp.ProfileManager.get_region("r").capacity)
    """)
    proc = sp("run", "-q", "--buffer-limit", "700", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1400"]   # 4, 8, ... 512, 700, then doubled
    with h5py.File(sp.tmp / "out.h5", "r") as f:
        assert int(regions(f)["r"].attrs["num_calls"]) == 777
