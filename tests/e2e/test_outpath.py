"""Output paths are never clobbered (man scope-profiler-run and
scope-profiler-export): devices, FIFOs, symlinks, directories, stale
temporary files, a full disk. Device nodes are made with mknod inside the
test's own folder, never the system's."""
import os
import shutil
import stat
import subprocess
import threading

import h5py
import pytest

from conftest import BINARY, one_line_error, regions, small_tmpfs

SCRIPT = """
import scope_profiler as sp
open("ran", "w").write("yes")
for i in range(3):
    with sp.region("step"):
        pass
"""


def need_root(what):
    if os.geteuid() != 0:
        pytest.skip(f"needs root to {what} (CI runs these tests as root)")


def good_profile(sp, name="good.h5"):
    script = sp.script(SCRIPT, name="good.py")
    proc = sp("run", "-q", "-o", name, script)
    assert proc.returncode == 0, proc.stderr
    (sp.tmp / "ran").unlink()
    return sp.tmp / name


def tmp_files(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp." in p.name)


def test_run_refuses_null_device_before_the_script(sp):
    need_root("mknod a character device")
    null = sp.tmp / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    script = sp.script(SCRIPT)
    proc = sp("run", "-q", "-o", null, script)
    assert proc.returncode == 2
    one_line_error(proc, "run", "null", "the null device", "--no-output")
    assert not (sp.tmp / "ran").exists()
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert tmp_files(sp.tmp) == []


def test_run_refuses_fifo_and_directory_keeps_the_good_profile(sp):
    good = good_profile(sp)
    data = good.read_bytes()
    fifo = sp.tmp / "fifo"
    os.mkfifo(fifo)
    script = sp.script(SCRIPT)
    proc = sp("run", "-q", "-o", fifo, script)
    assert proc.returncode == 2
    one_line_error(proc, "run", "fifo", "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # A symlink to the FIFO is followed, and refused the same way.
    (sp.tmp / "out.h5").symlink_to("fifo")
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 2
    one_line_error(proc, "out.h5", "FIFO")
    assert os.path.islink(sp.tmp / "out.h5")
    (sp.tmp / "adir").mkdir()
    proc = sp("run", "-q", "-o", "adir", script)
    assert proc.returncode == 2
    one_line_error(proc, "adir", "directory")
    assert not (sp.tmp / "ran").exists()
    assert good.read_bytes() == data
    assert tmp_files(sp.tmp) == []


def test_run_writes_through_symlinks(sp):
    good = good_profile(sp)
    (sp.tmp / "link.h5").symlink_to("good.h5")
    script = sp.script(SCRIPT.replace('"step"', '"through_link"'))
    proc = sp("run", "-q", "-o", "link.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(sp.tmp / "link.h5")
    with h5py.File(good) as f:
        assert list(regions(f)) == ["through_link"]
    # A dangling symlink: the file it names is created.
    (sp.tmp / "sub").mkdir()
    (sp.tmp / "dangling.h5").symlink_to("sub/new.h5")
    proc = sp("run", "-q", "-o", "dangling.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(sp.tmp / "dangling.h5")
    with h5py.File(sp.tmp / "sub" / "new.h5") as f:
        assert regions(f)["through_link"].attrs["num_calls"] == 3
    assert tmp_files(sp.tmp) == [] and tmp_files(sp.tmp / "sub") == []


def export_stdout(sp, profile):
    proc = sp("export", profile, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("name,rank,lane,call_index")
    return proc.stdout


def test_export_into_fifo_in_place(sp):
    good = good_profile(sp)
    want = export_stdout(sp, good)
    fifo = sp.tmp / "fifo"
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo) as f:
            got.append(f.read())
    t = threading.Thread(target=reader)
    t.start()
    proc = sp("export", good, "--format", "csv", "-o", fifo)
    t.join(timeout=60)
    assert not t.is_alive()
    assert proc.returncode == 0, proc.stderr
    assert got == [want]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert tmp_files(sp.tmp) == []


def test_export_into_null_device_in_place(sp):
    need_root("mknod a character device")
    good = good_profile(sp)
    null = sp.tmp / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    (sp.tmp / "null.link").symlink_to("null")
    for target in (null, sp.tmp / "null.link"):
        proc = sp("export", good, "--format", "json", "-o", target)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "" and proc.stderr == ""
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert os.path.islink(sp.tmp / "null.link")
    assert tmp_files(sp.tmp) == []


def test_export_to_dev_stdout_reaches_the_pipe(sp):
    # Safe: /dev/stdout of the child is the pipe subprocess made for it.
    good = good_profile(sp)
    want = export_stdout(sp, good)
    proc = subprocess.run([BINARY, "export", str(good), "--format", "csv", "-o", "/dev/stdout"],
                          capture_output=True, text=True, cwd=sp.tmp, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want
    assert os.path.islink("/dev/stdout")
    assert not [p for p in os.listdir("/dev") if ".tmp." in p]


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_export_to_stdout_redirected_to_a_file_writes_through_it(sp, name):
    # `{ echo HEADER; export -o /dev/stdout; echo TRAILER; } > out.txt` and
    # `>> log`: the descriptor's file is written at its offset, never
    # replaced, so what the shell wrote before and after stays.
    good = good_profile(sp)
    want = export_stdout(sp, good)
    shell = (f'{{ echo HEADER; "{BINARY}" export "{good}" --format csv -o {name}; '
             f'echo TRAILER; }} > out.txt; echo PRE > log; '
             f'"{BINARY}" export "{good}" --format csv -o {name} >> log')
    proc = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, cwd=sp.tmp,
                          timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (sp.tmp / "out.txt").read_text() == "HEADER\n" + want + "TRAILER\n"
    assert (sp.tmp / "log").read_text() == "PRE\n" + want
    assert tmp_files(sp.tmp) == []


def test_run_refuses_stdout_even_redirected_to_a_file(sp):
    sp.script(SCRIPT)
    proc = subprocess.run(["sh", "-c", f'echo KEEP > log; "{BINARY}" run -q -o /dev/stdout '
                           f'script.py >> log'], capture_output=True, text=True, cwd=sp.tmp,
                          timeout=120)
    assert proc.returncode == 2
    one_line_error(proc, "run: cannot write the profile to '/dev/stdout': it is an open file "
                   "descriptor")
    assert (sp.tmp / "log").read_text() == "KEEP\n"
    assert not (sp.tmp / "ran").exists()


@pytest.mark.parametrize("command", ["run", "recover", "plot"])
def test_dash_is_standard_output_and_refused_where_it_cannot_be(sp, command):
    """-o - means standard output (export writes there); run, recover and
    plot cannot write an HDF5 file or a folder there: one line, status 2,
    nothing named '-' made, the script not run (before: a file or folder
    called '-', status 0). ./- still names one."""
    sp.script(SCRIPT)
    assert sp("run", "-q", "-o", "p.h5", "script.py").returncode == 0
    (sp.tmp / "ran").unlink()
    args = {"run": ["run", "-q", "-o", "-", "script.py"], "recover": ["recover", "p.h5", "-o", "-"],
            "plot": ["plot", "p.h5", "-o", "-"]}[command]
    proc = sp(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    one_line_error(proc, f"{command}: -o -: ", "cannot go to standard output", "./-")
    assert not (sp.tmp / "-").exists() and not (sp.tmp / "ran").exists()
    if command == "run":
        assert sp("run", "-q", "-o", "./-", "script.py").returncode == 0
        assert h5py.is_hdf5(sp.tmp / "-")


def test_block_device_is_never_written(sp):
    need_root("make a block device node")
    good = good_profile(sp)
    # loop device 250: almost surely not attached, so even a regression
    # could not reach a disk.
    blk = sp.tmp / "blk"
    os.mknod(blk, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    link = sp.tmp / "to-blk"
    link.symlink_to(blk)
    for target in (blk, link):
        proc = sp("export", good, "--format", "csv", "-o", target)
        assert proc.returncode == 1
        one_line_error(proc, "it is a block device (a disk), never written to")
        proc = sp("run", "-q", "-o", target, "good.py")
        assert proc.returncode == 2
        one_line_error(proc, "block device")
    assert stat.S_ISBLK(os.lstat(blk).st_mode) and link.is_symlink()
    assert not (sp.tmp / "ran").exists()


def test_export_through_symlink_and_refuses_directory(sp):
    good = good_profile(sp)
    want = export_stdout(sp, good)
    (sp.tmp / "real.csv").write_text(want)   # an earlier export (export refuses to replace another file)
    os.chmod(sp.tmp / "real.csv", 0o600)
    (sp.tmp / "out.csv").symlink_to("real.csv")
    proc = sp("export", good, "--format", "csv", "-o", "out.csv")
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(sp.tmp / "out.csv")
    assert (sp.tmp / "real.csv").read_text() == want
    assert stat.S_IMODE(os.stat(sp.tmp / "real.csv").st_mode) == 0o600
    (sp.tmp / "adir").mkdir()
    proc = sp("export", good, "--format", "csv", "-o", "adir")
    assert proc.returncode == 1
    one_line_error(proc, "export", "adir", "directory")
    assert tmp_files(sp.tmp) == []


def test_stale_tmp_removed_live_kept(sp):
    good = good_profile(sp)
    want = export_stdout(sp, good)
    done = subprocess.run(["true"])
    assert done.returncode == 0
    # A pid that no process has any more: a child that ran and was reaped.
    child = subprocess.Popen(["true"])
    child.wait()
    dead = child.pid
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        stale = sp.tmp / f"out.csv.tmp.{dead}"
        live = sp.tmp / f"out.csv.tmp.{sleeper.pid}"
        stale.write_text("left by a killed export")
        live.write_text("being written")
        proc = sp("export", good, "--format", "csv", "-o", "out.csv")
        assert proc.returncode == 0, proc.stderr
        assert (sp.tmp / "out.csv").read_text() == want
        assert not stale.exists()
        assert live.read_text() == "being written"
        # run removes a dead run's temporary profile too.
        stale_h5 = sp.tmp / f"good.h5.tmp.{dead}"
        stale_h5.write_text("left by a killed run")
        proc = sp("run", "-q", "-o", "good.h5", sp.script(SCRIPT))
        assert proc.returncode == 0, proc.stderr
        assert not stale_h5.exists()
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


BIG = """
import scope_profiler as sp
r = sp.region("many")
for i in range(200000):
    with r:
        pass
"""


def test_full_disk_is_one_line_and_status_1(sp):
    with small_tmpfs(sp.tmp / "small", "1m") as small:
        good = good_profile(sp, "small/out.h5")
        data = good.read_bytes()
        fallback_dir = sp.tmp / "fallback"
        fallback_dir.mkdir()
        script = sp.script(BIG, name="big.py")
        # Written at the end, whole (a streamed run's full disk: test_stream.py).
        proc = sp("run", "-q", "--memory-budget", "0", "--recursive", "-o", "small/out.h5", script,
                  env={"TMPDIR": str(fallback_dir)})
        assert proc.returncode == 1, proc.stderr  # not 139: no crash at exit
        one_line_error(proc, "run", "small/out.h5", "No space left on device", "saved to")
        assert good.read_bytes() == data          # the last good profile stays
        assert sorted(p.name for p in small.iterdir()) == ["out.h5"]
        saved = list(fallback_dir.iterdir())
        assert len(saved) == 1 and str(saved[0]) in proc.stderr
        with h5py.File(saved[0]) as f:
            g = regions(f)["many"]
            assert g.attrs["num_calls"] == 200000
            assert g["start_times"].shape == (200000,)
            # The retry describes the same run as the first try would have.
            assert f["metadata"].attrs["recursive"] == "true"
        # The same with compressed columns, and an export into the full disk.
        filler = small / "filler"
        with open(filler, "wb") as f:
            try:
                f.write(b"\0" * (2 << 20))
            except OSError:
                pass
        proc = sp("run", "-q", "--memory-budget", "0", "--compression", "gzip", "-o", "small/out.h5",
                  script, env={"TMPDIR": str(fallback_dir)})
        assert proc.returncode == 1, proc.stderr
        one_line_error(proc, "small/out.h5", "No space left on device", "saved to")
        assert good.read_bytes() == data
        proc = sp("export", saved[0], "--format", "csv", "-o", "small/out.csv")
        assert proc.returncode == 1
        one_line_error(proc, "export", "small/out.csv", "No space left on device")
        assert sorted(p.name for p in small.iterdir()) == ["filler", "out.h5"]


def test_a_file_size_limit_at_the_end_is_one_line_and_status_1(sp):
    """RLIMIT_FSIZE (a batch job's file size limit) below the profile's
    size, written whole at the end: the write and its $TMPDIR retry fail
    with one line and status 1, no file is left (before, HDF5's exit handler
    crashed on the failed file: status 139)."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (500_000, 500_000))

    script = sp.script(BIG, name="big.py")
    fallback = sp.tmp / "fallback"
    fallback.mkdir()
    proc = subprocess.run([BINARY, "run", "-q", "--memory-budget", "0", "-o", "out.h5", script],
                          cwd=sp.tmp, capture_output=True, text=True, timeout=120, preexec_fn=limit,
                          env=dict(os.environ, TMPDIR=str(fallback)))
    assert proc.returncode == 1, proc.stderr
    one_line_error(proc, "run", "out.h5", "File too large", "the profile is lost")
    assert not (sp.tmp / "out.h5").exists()
    assert list(fallback.iterdir()) == []


# ---- run -o naming the script, the module, or a file that is not a profile ----

RAN = """
open("ran", "w").write("yes")
"""


@pytest.mark.parametrize("how", ["relative", "dotted", "absolute", "symlink"])
def test_run_refuses_the_script_itself_as_output(sp, how):
    script = sp.script(RAN, name="sim.py")
    data = script.read_bytes()
    (sp.tmp / "link.py").symlink_to("sim.py")
    out = {"relative": "sim.py", "dotted": "./sim.py", "absolute": str(script),
           "symlink": "link.py"}[how]
    for force in ([], ["--force"]):
        proc = sp("run", "-q", *force, "-o", out, "sim.py")
        assert proc.returncode == 2, proc.stderr
        one_line_error(proc, "run:", out, "the script being run")
        assert script.read_bytes() == data
        assert not (sp.tmp / "ran").exists()
    assert os.path.islink(sp.tmp / "link.py")
    assert tmp_files(sp.tmp) == []


def test_run_refuses_the_module_it_runs_as_output(sp):
    mod = sp.script(RAN, name="mod.py")
    init = sp.script("", name="pkg/__init__.py")
    main = sp.script(RAN, name="pkg/__main__.py")
    cases = [(mod, "mod.py", "mod"), (main, "pkg/__main__.py", "pkg"), (init, "pkg/__init__.py", "pkg")]
    for path, out, module in cases:
        data = path.read_bytes()
        # --force allows replacing a file that is not a profile, never the module.
        proc = sp("run", "-q", "--force", "-o", out, "-m", module)
        assert proc.returncode == 2, proc.stderr
        one_line_error(proc, "run:", str(path), f"-m {module}")
        assert path.read_bytes() == data
        assert not (sp.tmp / "ran").exists()
    assert tmp_files(sp.tmp) == [] and tmp_files(sp.tmp / "pkg") == []


def test_run_replaces_a_file_that_is_not_a_profile_only_with_force(sp):
    script = sp.script(SCRIPT)
    notes = sp.tmp / "notes.txt"
    notes.write_text("my notes\n")
    proc = sp("run", "-q", "-o", "notes.txt", script)
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc, "run:", "notes.txt", "not a scope-profiler profile", "--force")
    assert notes.read_text() == "my notes\n"
    assert not (sp.tmp / "ran").exists()
    proc = sp("run", "-q", "--force", "-o", "notes.txt", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(notes) as f:
        assert regions(f)["step"].attrs["num_calls"] == 3
    assert tmp_files(sp.tmp) == []


def test_run_refuses_another_hdf5_file_unless_forced(sp):
    """Someone's HDF5 data at -o (h5py's, no format attribute, no rank
    group) is not a profile: refused before the script runs; --force
    replaces it. Before, any HDF5 file passed for a profile."""
    script = sp.script(SCRIPT)
    data = sp.tmp / "data.h5"
    with h5py.File(data, "w") as f:
        f["x"] = [1, 2, 3]
    before = data.read_bytes()
    proc = sp("run", "-q", "-o", "data.h5", script)
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc, "run:", "data.h5", "not a scope-profiler profile", "--force")
    assert data.read_bytes() == before and not (sp.tmp / "ran").exists()
    proc = sp("run", "-q", "--force", "-o", "data.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(data) as f:
        assert regions(f)["step"].attrs["num_calls"] == 3


APPEARS = """
import os, time
import scope_profiler as sp
for i in range(3):
    with sp.region("step"):
        time.sleep(0.02)
if os.path.lexists("out.h5"):
    os.remove("out.h5")
if os.environ.get("LINK"):
    os.symlink(os.path.abspath(__file__), "out.h5")   # -o now leads to the script
else:
    open("out.h5", "w").write("precious results\\n")
"""


@pytest.mark.parametrize("what", ["file", "link"])
@pytest.mark.parametrize("streamed", [False, True], ids=["written-whole", "streamed"])
def test_the_end_of_the_run_checks_the_output_again(sp, what, streamed):
    """A file that is not a profile and appeared at -o while the script ran
    (the script's own results, a symlink to the script) is not replaced at
    the end: status 1, one line; the profile goes to $TMPDIR (written
    whole) or stays in OUT.partial (streamed), complete. With --force the
    file is replaced, the script never. Before, the end replaced either
    with the profile, status 0."""
    script = sp.script(APPEARS, name="appears.py")
    source = script.read_bytes()
    fallback = sp.tmp / "fallback"
    fallback.mkdir()
    env = {"TMPDIR": str(fallback), **({"LINK": "1"} if what == "link" else {})}
    how = ["--flush-interval", "0.01"] if streamed else ["--memory-budget", "0"]
    proc = sp("run", "-q", *how, "-o", "out.h5", script, env=env)
    assert proc.returncode == 1, proc.stderr
    one_line_error(proc, "run:", "out.h5", "it exists and is not a scope-profiler profile")
    assert script.read_bytes() == source
    if what == "file":
        assert (sp.tmp / "out.h5").read_text() == "precious results\n"
    if streamed:
        assert "the profile stays in " in proc.stderr and list(fallback.iterdir()) == []
        rec = sp("recover", "out.h5.partial", "-o", "moved.h5")
        assert rec.returncode == 0, rec.stderr
        saved = sp.tmp / "moved.h5"
    else:
        [saved] = fallback.iterdir()
        assert f"profile saved to {saved} instead" in proc.stderr
    with h5py.File(saved) as f:
        assert regions(f)["step"].attrs["num_calls"] == 3
    for p in sp.tmp.glob("out.h5*"):
        p.unlink()
    for p in fallback.iterdir():
        p.unlink()
    # --force: what -o led to at the start may be replaced, never the script.
    (sp.tmp / "out.h5").write_text("old notes\n")
    proc = sp("run", "-q", "--force", *how, "-o", "out.h5", script, env=env)
    assert script.read_bytes() == source
    if what == "link":
        assert proc.returncode == 1, proc.stderr
        one_line_error(proc, "run:", "out.h5", "it exists and is not a scope-profiler profile")
        return
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] == 3
def test_run_replaces_an_existing_profile_and_an_empty_file(sp):
    good = good_profile(sp, "out.h5")
    before = os.stat(good).st_ino
    script = sp.script(SCRIPT.replace("range(3)", "range(5)"))
    proc = sp("run", "-q", "-o", "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    assert os.stat(good).st_ino != before   # a new file renamed over the old one
    with h5py.File(good) as f:
        assert regions(f)["step"].attrs["num_calls"] == 5
    (sp.tmp / "empty.h5").touch()           # nothing to lose: `touch`, mktemp
    proc = sp("run", "-q", "-o", "empty.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "empty.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] == 5


def test_run_in_a_folder_deeper_than_path_max(sp):
    script = sp.script(SCRIPT)
    steps = ["d" * 200] * 25                # 5025 bytes below tmp: past PATH_MAX (4096)
    # One step at a time, each relative to the last folder's descriptor: no
    # path longer than PATH_MAX is ever passed to the kernel.
    fd = os.open(sp.tmp, os.O_RDONLY | os.O_DIRECTORY)
    for step in steps:
        try:
            os.mkdir(step, dir_fd=fd)
            next_fd = os.open(step, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        finally:
            os.close(fd)
        fd = next_fd
    os.close(fd)

    def go_deep():
        os.chdir(sp.tmp)
        for step in steps:
            os.chdir(step)

    def run(*args):
        return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True,
                              timeout=120, preexec_fn=go_deep)

    proc = run("run", "-q", script)         # profiling_data.h5, relative
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc, "run:", "profiling_data.h5", "working folder's path is too long",
                   "PATH_MAX", "absolute")
    assert "Numerical result out of range" not in proc.stderr
    assert not (sp.tmp / "ran").exists()
    # An absolute -o works from there.
    proc = run("run", "-q", "-o", sp.tmp / "out.h5", script)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sp.tmp / "out.h5") as f:
        assert regions(f)["step"].attrs["num_calls"] == 3


MANY = """
import scope_profiler as sp
for i in range(60):
    with sp.region(f"region_{i:03d}"):
        for j in range(20):
            with sp.region(f"inner_{i:03d}_{j}"):
                pass
"""


def in_own_mounts(sp, shell):
    """Runs shell (which mounts what it needs, exit 99 when it cannot) in a
    mount namespace of its own, gone when it ends; skips where none can be
    made. Inside scripts/chroot.sh the chroot's root is no mount point, so
    unshare cannot make it private; its namespace propagates nowhere
    already (SCOPE_PROFILER_CHROOT_NS), so the new one's mounts stay in it."""
    keep = ["--propagation", "unchanged"] if os.environ.get("SCOPE_PROFILER_CHROOT_NS") else []
    proc = subprocess.run(["unshare", "-m", *keep, "sh", "-c", shell], cwd=sp.tmp,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return proc


def test_plot_on_a_full_disk_is_one_line_and_keeps_the_earlier_report(sp):
    # A tiny tmpfs in a mount namespace of its own (gone when the shell
    # ends, whatever happens): a small profile's charts fit, a big one's
    # (a few hundred KiB each) do not.
    need_root("mount a small tmpfs")
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1) (util-linux) to mount a private tmpfs")
    assert sp("run", "-q", "-o", "small.h5", sp.script(SCRIPT)).returncode == 0
    assert sp("run", "-q", "-o", "big.h5", sp.script(MANY, name="many.py")).returncode == 0
    (sp.tmp / "out").mkdir()
    shell = f"""
        mount -t tmpfs -o size=128k none out || exit 99
        {BINARY} plot small.h5 -o out 2>small.err || exit 98
        cp out/report.html before.html
        ls -a out > before.list
        {BINARY} plot big.h5 -o out
        echo $? > big.rc
        ls -a out > after.list
        cp out/report.html after.html
    """
    proc = in_own_mounts(sp, shell)
    assert int((sp.tmp / "big.rc").read_text()) == 1
    one_line_error(proc, "plot: cannot write 'out/", "No space left on device")
    assert "Input/output error" not in proc.stderr
    # Nothing half-written, no temporary file left, the earlier report intact.
    after = (sp.tmp / "after.list").read_text().split()
    assert not [n for n in after if ".tmp." in n], after
    assert set(after) == set((sp.tmp / "before.list").read_text().split())
    assert (sp.tmp / "after.html").read_bytes() == (sp.tmp / "before.html").read_bytes()


def test_plot_on_a_full_disk_names_the_file_that_did_not_fit(sp):
    """plot --export-data writes a chart and its CSV side by side: when the
    CSV fills the disk while the chart still sits in its buffer, the line
    names the CSV (before: the chart, which fits alone)."""
    need_root("mount a small tmpfs")
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1) (util-linux) to mount a private tmpfs")
    calls = sp.script("""
import scope_profiler as sp
r = sp.region("tick")
for _ in range(30000):
    with r:
        pass
""", name="calls.py")
    assert sp("run", "-q", "-o", "calls.h5", calls).returncode == 0
    (sp.tmp / "out").mkdir()
    shell = f"""
        mount -t tmpfs -o size=200k none out || exit 99
        {BINARY} plot calls.h5 -o out --export-data
        echo $? > plot.rc
        ls -a out > after.list
    """
    proc = in_own_mounts(sp, shell)
    assert int((sp.tmp / "plot.rc").read_text()) == 1
    one_line_error(proc, "plot: cannot write 'out/gantt_data.csv': No space left on device")
    after = (sp.tmp / "after.list").read_text().split()
    assert not [n for n in after if ".tmp." in n], after


def test_run_o_keeps_every_session_the_script_finalizes(sp):
    """Under run -o X.h5 a script that finalize()s a session and sets up
    another: the second goes to X-2.h5 (one line says so), the third to
    X-3.h5, as under python each goes to its own file_path; before, each
    overwrote X.h5 and only the last session's calls were left."""
    sp.script("""
        import scope_profiler as sp
        for k, name in enumerate(("first", "second", "third")):
            sp.setup(file_path=f"own{k}.h5")
            for _ in range(k + 1):
                with sp.region(name):
                    pass
            sp.setup(file_path=f"own{k}.h5", track_threads=True)   # reconfigured: same file
            with sp.region(name):
                pass
            if k < 2:
                sp.finalize(verbose=False)
    """)
    proc = sp("run", "-q", "-o", "X.h5", "script.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"scope-profiler: run: the script's profiling session {n} is written to {sp.tmp}/X-{n}.h5 "
        f"(-o {sp.tmp}/X.h5 holds its first)" for n in (2, 3)]
    for path, name, calls in (("X.h5", "first", 2), ("X-2.h5", "second", 3), ("X-3.h5", "third", 4)):
        with h5py.File(sp.tmp / path) as f:
            assert {n: int(g.attrs["num_calls"]) for n, g in regions(f).items()} == {name: calls}
    assert not list(sp.tmp.glob("own*.h5"))   # -o wins over file_path


@pytest.mark.parametrize("command", [["run", "-o", "OUT", "-c", "pass"], ["export", "-f", "csv", "PROFILE", "-o", "OUT"],
                                     ["plot", "PROFILE", "-o", "OUT"]])
def test_an_error_about_a_name_with_a_newline_is_one_line(sp, command):
    """A path with a newline (or another control character) in an error
    line is shown with '?': one line, as the readers show names (it broke
    the line in two)."""
    sp("run", "-q", "-o", "p.h5", "-c", "import scope_profiler as sp\nwith sp.region('r'): pass")
    given = {"PROFILE": str(sp.tmp / "p.h5"), "OUT": "no\nsuch\tfolder/out"}
    proc = sp(*[given.get(a, a) for a in command])
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and "no?such?folder" in proc.stderr, proc.stderr


def test_the_runs_own_lines_about_a_path_with_a_newline_are_one_line(sp):
    """run's closing lines name the output path ("profile written to",
    "keeps its previous profile") with '?' for a control character in it,
    as its errors do (a newline in the name broke them in two)."""
    name = "nl\nout.h5"
    good = sp.script("import scope_profiler as sp\nwith sp.region('r'):\n    pass\n", name="good.py")
    proc = sp("run", "-o", name, good)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.endswith("scope-profiler: profile written to " + str(sp.tmp / "nl?out.h5") + "\n"), \
        proc.stderr
    proc = sp("run", "-q", "-o", name, sp.script("raise SystemExit(2)\n", name="fails.py"))
    assert proc.returncode == 2
    assert proc.stderr == ("scope-profiler: run: the script failed before recording anything: "
                           + str(sp.tmp / "nl?out.h5") + " keeps its previous profile\n"), proc.stderr
