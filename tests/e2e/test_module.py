"""The built-in module `scope_profiler`: the API of the original package."""
import time

import h5py
import numpy as np
import pytest

from conftest import regions


def run_ok(sp, text, *args):
    script = sp.script(text)
    proc = sp("run", "-q", *args, script)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_regions_active_without_setup(sp):
    run_ok(sp, """
        import scope_profiler as sp

        @sp.profile("solve")
        def solve(x):
            return x * 2

        @sp.profile
        def bare():
            pass

        class Mesh:
            @sp.profile()
            def refine(self, k):
                return k + 1

        for i in range(5):
            with sp.region("step"):
                assert solve(i) == 2 * i
        bare(); bare()
        assert Mesh().refine(1) == 2
        assert solve.__name__ == "solve" and solve.__wrapped__(3) == 6
    """, "-o", "out.h5")
    with h5py.File(sp.tmp / "out.h5") as f:
        regs = regions(f)
        assert regs["step"].attrs["num_calls"] == 5
        assert regs["solve"].attrs["num_calls"] == 5
        assert regs["bare"].attrs["num_calls"] == 2
        assert regs["refine"].attrs["num_calls"] == 1          # func.__name__, as the original
        starts = regs["solve"]["start_times"][:]
        ends = regs["solve"]["end_times"][:]
        assert starts.dtype == np.int64 and len(starts) == 5
        assert (ends >= starts).all() and (np.diff(starts) > 0).all()
        # Each solve lies inside its step.
        step_s, step_e = regs["step"]["start_times"][:], regs["step"]["end_times"][:]
        assert ((step_s <= starts) & (ends <= step_e)).all()
        assert f.attrs["format"] == b"scope-profiler"
        assert f.attrs["format_version"] == 2
        assert "hostname" in f["metadata"].attrs


@pytest.mark.script_imports("numpy")
def test_timestamps_share_perf_counter_clock(sp):
    run_ok(sp, """
        import time, scope_profiler as sp
        a = time.perf_counter_ns()
        with sp.region("r"):
            pass
        b = time.perf_counter_ns()
        r = sp.get_region("r")
        s, e = int(r.get_start_times_numpy()[0]), int(r.get_end_times_numpy()[0])
        assert a <= s <= e <= b, (a, s, e, b)
    """, "--no-output")


def test_names_survive_round_trip(sp):
    names = ["a/b", ".", "x.y", "with space", "löser/ß∑", "100%"]
    run_ok(sp, f"""
        import scope_profiler as sp
        for name in {names!r}:
            with sp.region(name):
                pass
    """, "-o", "out.h5")
    with h5py.File(sp.tmp / "out.h5") as f:
        # Fixed-length UTF-8 strings: h5py returns them as bytes.
        got = sorted(g.attrs["name"].decode() for g in regions(f).values())
    assert got == sorted(names)
    proc = sp("summary", "out.h5")
    assert proc.returncode == 0
    for name in names:
        assert name in proc.stdout


def test_invalid_region_names(sp):
    run_ok(sp, """
        import scope_profiler as sp
        for bad, exc in (("", ValueError), ("a\\0b", ValueError), (3, TypeError)):
            try:
                sp.region(bad)
            except exc:
                pass
            else:
                raise AssertionError(f"{bad!r} accepted")
    """, "--no-output")


def test_unknown_setup_option_is_typeerror(sp):
    out = run_ok(sp, """
        from scope_profiler import ProfileManager
        try:
            ProfileManager.setup(no_such_option=True)
        except TypeError as e:
            print(e)
    """, "--no-output")
    assert "no_such_option" in out


def test_seed_turning_profiling_off(sp):
    # 001_4a6f8ec3cb02df95.txt, "Turning profiling off", unchanged.
    out = run_ok(sp, """
        import time
        from scope_profiler import ProfileManager

        def workload():
            time.sleep(0.002)

        def show_region_class():
            region = ProfileManager.region("probe")
            print("  region class:", type(region).__name__)

        ProfileManager.setup(deactivate_profiling=True)
        show_region_class()

        @ProfileManager.profile
        def maybe_profiled():
            workload()

        maybe_profiled()
        # Nothing was recorded, and finalize() writes no file.
        print("  calls recorded:", ProfileManager.get_region("probe").num_calls)
        print("unwrapped:", maybe_profiled.__class__.__name__)
        ProfileManager.finalize(verbose=False)
        import os
        print("file:", os.path.exists("profiling_data.h5"))
    """)
    assert out.splitlines() == [
        "  region class: DisabledProfileRegion",
        "  calls recorded: 0",
        "unwrapped: function",
        "file: False",
    ]


@pytest.mark.script_imports("numpy")
def test_seed_keeping_data_in_memory(sp):
    before = time.perf_counter_ns()
    out = run_ok(sp, """
        import os, time
        from scope_profiler import ProfileManager

        def workload():
            time.sleep(0.002)

        def show_region_class():
            region = ProfileManager.region("probe")
            print("  region class:", type(region).__name__)

        ProfileManager.setup(deactivate_file_output=True, file_path="unused.h5")
        show_region_class()

        for _ in range(3):
            with ProfileManager.region("in_memory"):
                workload()

        region = ProfileManager.get_region("in_memory")
        print("  calls   :", region.num_calls)
        print("  durations [ns]:", region.get_durations_numpy())

        results = ProfileManager.finalize(verbose=False, return_results=True)

        print("file written  :", os.path.exists("unused.h5"))
        print("num_calls     :", results["in_memory"].num_calls)
        print("total [s]     :", results["in_memory"].total_duration)
    """)
    run_ns = time.perf_counter_ns() - before
    lines = out.splitlines()
    assert lines[0] == "  region class: TimeOnlyProfileRegion"
    assert lines[1] == "  calls   : 3"
    durations = [int(x) for x in lines[2].split("[")[2].rstrip("]").split()]
    # Nanoseconds: at least the 2 ms sleep, and less than the whole run took.
    assert len(durations) == 3 and all(2_000_000 <= d < run_ns for d in durations)
    assert lines[3] == "file written  : False"
    assert lines[4] == "num_calls     : 3"
    assert abs(float(lines[5].split(":")[1]) - sum(durations) / 1e9) < 1e-9
    assert not (sp.tmp / "profiling_data.h5").exists()


def test_seed_buffer_size(sp):
    out = run_ok(sp, """
        from scope_profiler import ProfileManager, read_h5
        ProfileManager.setup(file_path="buffered.h5", buffer_limit=4)

        for _ in range(10):
            with ProfileManager.region("grows_often"):
                pass

        region = ProfileManager.get_region("grows_often")
        print("  calls    :", region.num_calls)
        print("  capacity :", region.capacity, "(grew from 3)")

        ProfileManager.finalize(verbose=False)
        print("recorded  :", read_h5("buffered.h5")["grows_often"].num_calls)
    """)
    assert out.splitlines() == ["  calls    : 10", "  capacity : 16 (grew from 3)", "recorded  : 10"]
    # The script finalized itself: `run` wrote nothing more.
    assert not (sp.tmp / "profiling_data.h5").exists()


def test_session_context_manager_and_decorator_reuse(sp):
    out = run_ok(sp, """
        from scope_profiler import ProfileManager
        with ProfileManager.session(buffer_limit=100, verbose=False, deactivate_file_output=True):
            def _work():
                return sum(range(50))
            profiled = ProfileManager.profile("bench")(_work)
            for _ in range(7):
                profiled()
            print(ProfileManager.get_region("bench").num_calls)
        # After finalize the region is idle until the next setup(), and its
        # num_calls reads the count the session recorded (as the original's).
        profiled()
        print(ProfileManager.get_region("bench").num_calls)
        ProfileManager.setup(deactivate_file_output=True)
        print(ProfileManager.get_region("bench").num_calls)
        ProfileManager.finalize(verbose=False)
    """)
    assert out.split() == ["7", "7", "0"]


def test_a_session_inside_another_joins_it(sp):
    """A library's own session() called inside the user's: it joins the
    open one (one warning, however many), and the outer one writes every
    call (before: the inner one reconfigured and ended the session,
    outer.h5 was never written and the calls after it were lost)."""
    script = sp.script("""
        from scope_profiler import ProfileManager as PM
        with PM.session(file_path="outer.h5", verbose=False):
            with PM.region("before"):
                pass
            for _ in range(2):
                with PM.session(file_path="inner.h5", verbose=False):
                    with PM.region("inside"):
                        pass
            with PM.region("after"):
                pass
        with PM.session(file_path="next.h5", verbose=False):   # after it: a session again
            with PM.region("next"):
                pass
        again = PM.session(file_path="again.h5", verbose=False)
        with PM.session(file_path="outer2.h5", verbose=False):
            with again:   # joined
                pass
        with again:       # on its own now: a session of its own, written at its end
            with PM.region("again"):
                pass
        import os
        assert os.path.exists("again.h5")
    """)
    proc = sp("run", "-q", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("scope-profiler: warning: a session() inside an open session() joins it: "
                           "its options are not applied, and what it records is written at the end "
                           "of the outer one\n")
    assert not (sp.tmp / "inner.h5").exists()
    with h5py.File(sp.tmp / "outer.h5") as f:
        assert {n: int(r.attrs["num_calls"]) for n, r in regions(f).items()} == \
            {"before": 1, "inside": 2, "after": 1}
    with h5py.File(sp.tmp / "next.h5") as f:
        assert {n: int(r.attrs["num_calls"]) for n, r in regions(f).items()} == {"next": 1}


def test_setup_after_decorating_applies_mode(sp):
    # Decorated at import under run's session, then the script turns
    # profiling off: the existing wrapper stops recording.
    out = run_ok(sp, """
        import scope_profiler as sp
        @sp.profile("f")
        def f():
            pass
        f()
        sp.ProfileManager.setup(deactivate_profiling=True)
        f(); f()
        print(sp.get_region("f").num_calls, type(sp.region("f")).__name__)
    """)
    assert out.split() == ["1", "DisabledProfileRegion"]


def test_blocks_left_after_the_mode_changed(sp):
    # A `with` block entered in one mode and left in another (setup() or
    # finalize() inside it; daemon threads inside blocks at the end of the run)
    # closes without an error, on every Python: from 3.14 a block keeps the
    # unbound __exit__ it looked up and checks the object's class when it calls it.
    script = sp.script("""
        import scope_profiler as sp
        r = sp.region("outer")
        with r:
            sp.setup(aggregation_mode=True, file_path="m.h5")
        with r:
            pass
        with sp.region("last"):
            sp.finalize(verbose=False)
        print(type(r).__name__)
    """)
    proc = sp("run", "-q", script)
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", "DisabledProfileRegion\n")
    with h5py.File(sp.tmp / "m.h5") as f:
        assert regions(f)["last"].attrs["num_calls"] == 1


def test_finalize_inside_open_region_keeps_it(sp):
    run_ok(sp, """
        from scope_profiler import ProfileManager
        ProfileManager.setup(file_path="inner.h5")
        @ProfileManager.profile("main")
        def main():
            with ProfileManager.region("work"):
                pass
            ProfileManager.finalize(verbose=False)
        main()
        main()  # after finalize: records nothing, crashes nothing
    """)
    with h5py.File(sp.tmp / "inner.h5") as f:
        assert regions(f)["main"].attrs["num_calls"] == 1
        assert regions(f)["work"].attrs["num_calls"] == 1


def test_cli_options_override_script_setup(sp):
    run_ok(sp, """
        from scope_profiler import ProfileManager
        ProfileManager.setup(file_path="script_choice.h5")
        with ProfileManager.region("r"):
            pass
    """, "-o", "cli_choice.h5")
    assert (sp.tmp / "cli_choice.h5").exists()
    assert not (sp.tmp / "script_choice.h5").exists()


def test_disable_flag(sp):
    out = run_ok(sp, """
        import scope_profiler as sp
        def f():
            pass
        print(sp.profile("f")(f) is f, type(sp.region("x")).__name__)
    """, "--disable")
    assert out.split() == ["True", "DisabledProfileRegion"]
    assert not (sp.tmp / "profiling_data.h5").exists()


def test_recursion_and_generators_in_one_region(sp):
    run_ok(sp, """
        import scope_profiler as sp
        @sp.profile("fib")
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        assert fib(10) == 55

        def gen():
            with sp.region("gen"):
                yield 1
                yield 2
        g = gen(); next(g)
        with sp.region("between"):
            pass
        list(g)
    """, "-o", "out.h5")
    with h5py.File(sp.tmp / "out.h5") as f:
        r = regions(f)
        assert r["fib"].attrs["num_calls"] == 177
        s, e = r["fib"]["start_times"][:], r["fib"]["end_times"][:]
        assert (e >= s).all()
        # The outermost call spans all the others.
        assert s[0] == s.min() and e[0] == e.max()
        assert r["gen"].attrs["num_calls"] == 1
        assert r["gen"]["start_times"][0] < r["between"]["start_times"][0]
        assert r["gen"]["end_times"][0] > r["between"]["end_times"][0]


@pytest.mark.script_imports("numpy")
def test_threads_in_the_same_region_close_their_own_calls(sp):
    # Each thread's `with` closes its own call, even when the threads are
    # inside the same region at the same time.
    out = run_ok(sp, """
        import threading, time, scope_profiler as sp
        longest = {}   # per thread: the longest perf_counter_ns() span around one `with`
        def body(delay):
            for _ in range(3):
                a = time.perf_counter_ns()
                with sp.region("work"):
                    time.sleep(delay)
                b = time.perf_counter_ns()
                longest[delay] = max(longest.get(delay, 0), b - a)
        ts = [threading.Thread(target=body, args=(d,)) for d in (0.002, 0.02)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(sorted(int(x) for x in sp.get_region("work").get_durations_numpy()))
        print(longest[0.002], longest[0.02])
    """, "--no-output")
    lines = out.splitlines()
    d = [int(x) for x in lines[0].strip("[]").split(",")]
    fast, slow = map(int, lines[1].split())
    # Each call lasts its own thread's sleep, and no longer than that thread's
    # longest `with` (measured around it in the same run): a call closed by
    # the other thread is too short for the slow or too long for the fast.
    assert all(2_000_000 <= x <= fast for x in d[:3]), (d, fast)
    assert all(20_000_000 <= x <= slow for x in d[3:]), (d, slow)


def test_decorated_functions_pickle_by_reference(sp):
    out = run_ok(sp, """
        import pickle, scope_profiler as sp
        @sp.profile("f")
        def f(x):
            return x + 1
        class C:
            @sp.profile
            def m(self):
                return 2
        g = pickle.loads(pickle.dumps(f))
        print(g is f, g(1), pickle.loads(pickle.dumps(C.m)) is C.__dict__["m"])
    """, "--no-output")
    assert out.split() == ["True", "2", "True"]


def test_a_region_made_before_setup_track_threads_records_its_lane(sp):
    """A region created at import, before setup(track_threads=True), then
    entered: its lanes column is kept (the empty buffer of another size was
    freed after the column was asked for, and the first call wrote a lane
    into nothing: a crash)."""
    script = sp.script("""
        import scope_profiler as sp
        r = sp.region("r")
        sp.setup(track_threads=True, deactivate_file_output=True)
        with r:
            pass
        res = sp.finalize(verbose=False, return_results=True)
        print(res["r"][0].num_calls, [int(x) for x in res["r"][0].lanes])
    """)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 [0]\n"


CLASSMETHODS = """
import scope_profiler as sp

class A:
    @sp.profile
    @classmethod
    def make(cls, x):
        return cls.__name__, x

    @sp.profile("twice")
    @staticmethod
    def st(y):
        return y * 2

    @sp.profile(recursive=True)
    @classmethod
    def rec(cls):
        return 1

print(A.make(3), A().make(4), A.st(5), A().st(6), A.rec())
print(sorted(sp.get_all_regions()))
try:
    sp.profile("x")(42)
except TypeError as e:
    print("TypeError:", e)
"""

CALLABLE = """
import scope_profiler as sp

class Call:
    def __call__(self):
        return 5

c = sp.profile(Call())
print(c(), sorted(sp.get_all_regions()))
"""


def test_a_decorator_above_classmethod_or_staticmethod(sp):
    """@sp.profile above @classmethod or @staticmethod (named or not,
    recursive too) times the method and keeps it one; a callable object
    without a name is named by its class, the same in every run (before:
    'a region name must be a str, not classmethod', and the object's repr,
    its address in it)."""
    proc = sp("run", "-q", "-o", "out.h5", sp.script(CLASSMETHODS))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "('A', 3) ('A', 4) 10 12 1",
        "['make', 'rec', 'twice']",
        "TypeError: a region decorates a callable, not int"]
    with h5py.File(sp.tmp / "out.h5") as f:
        got = {name: int(r.attrs["num_calls"]) for name, r in regions(f).items()}
    assert got == {"make": 2, "twice": 2, "rec": 1}
    proc = sp("run", "-q", "-o", "call.h5", sp.script(CALLABLE, name="call.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "5 ['Call']\n"
