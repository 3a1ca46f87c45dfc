"""The Python layer of the built-in module ``scope_profiler``.

Embedded in the scope-profiler executable and run in the module's namespace
after the C part (regions, the decorator wrapper, the clock, the HDF5 writer
and reader) is in place. Nothing here runs while a region records, and the
session itself (setup, finalize, the write, the summary) is C's (session.c):
here are the ProfileManager facade, the Python-level hooks of `run` (the
--recursive hook in every thread, sys.exit and SIGTERM, the shim folder) and
the read API's result classes.
"""

import os as _os
import sys as _sys


class session:
    """``with ProfileManager.session(**options):`` = setup() ... finalize()."""

    def __init__(self, **options):
        _check_options(**options)
        self._options = options
        self.results = None

    def __enter__(self):
        setup(**self._options)
        return self

    def __exit__(self, exc_type, exc, tb):
        # failed: under MPI, do not wait forever for ranks that may be
        # blocked waiting for this one (see sp_mpi.h).
        finalize(self._options.get("verbose"), _failed=exc_type is not None)
        return False


def _qualname(func):
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


async def _timed_coroutine(region, coro):
    """A call of a decorated ``async def`` function (the C wrapper makes one
    per call, named as the function's coroutine): the region is open from
    the coroutine's first step to its end (return, exception or
    cancellation), in the task that runs it."""
    token = _coroutine_enter(region)
    try:
        return await coro
    finally:
        _coroutine_exit(region, token)


def profile(name=None, recursive=False):
    """Decorator: ``@profile``, ``@profile("name")`` or ``@profile(recursive=...)``.

    The function's calls are recorded in the region `name` (default: the
    function's qualified name). With profiling disabled the function itself
    is returned, unwrapped.
    """
    if callable(name) and not isinstance(name, str):
        return region(_qualname(name))(name)
    if recursive:
        if name is None:
            return lambda func: _profile_recursive(region(_qualname(func)), func)
        return lambda func: _profile_recursive(region(name), func)
    if name is None:
        return lambda func: region(_qualname(func))(func)
    return region(name)


def read_results():
    """The results of the file the current configuration writes."""
    return read_h5(_file_path())


class ProfileManager:
    """The facade of the original package: every method is static."""

    setup = staticmethod(setup)
    finalize = staticmethod(finalize)
    session = staticmethod(session)
    region = staticmethod(region)
    profile_region = staticmethod(region)
    profile = staticmethod(profile)
    get_region = staticmethod(get_region)
    read_results = staticmethod(read_results)


profile_region = region


# ---------------------------------------------------------------------------
# `scope-profiler run` glue

def _on_sigterm(signum, frame):
    _note_exit_status(128 + signum)
    _note_exit_signal(signum)  # 143 even if Python's own shutdown swallows the SystemExit
    raise SystemExit(128 + signum)


def _watch_exit(original):
    """sys.exit that remembers a failure status: under MPI such a rank
    does not wait forever for ranks that may be waiting for it."""
    def exit(status=None):
        _note_exit_status(status)
        return original(status)

    exit.__doc__ = original.__doc__
    return exit


def _foreign_prefixes():
    """Folders whose code is not the user's: the stdlib (where os lives; no
    sysconfig, which plain python does not load). Installed packages are
    known by their site-packages or dist-packages folder (filter.c)."""
    stdlib = _os.path.dirname(_os.__file__)
    found = {stdlib, _os.path.realpath(stdlib)}
    return tuple(sorted(p.rstrip("/") + "/" for p in found if p))


def _warn_hook_replaced(name, original):
    def replacement(function):
        # threading installs our own _thread_hook in each new thread.
        if (_run_tracing() and function is not None
                and (name != "setprofile" or function is not _thread_hook)):
            _sys.stderr.write(
                f"scope-profiler: warning: the script called sys.{name}(); "
                + ("--recursive stops recording calls in this thread\n" if name == "setprofile"
                   else "--recursive goes on, but its timings now include the trace function\n"))
        return original(function)

    replacement.__name__ = name
    replacement.__doc__ = original.__doc__
    return replacement


def _start_tracing(target, trace_all, include, exclude):
    """`run --recursive`: the root region, then the hook in every thread."""
    region(target).__enter__()
    _tracer_configure(bool(trace_all), tuple(include), tuple(exclude),
                      () if trace_all else _foreign_prefixes())
    _tracer_start()
    if _sys.version_info < (3, 12):
        # 3.11: a profile hook per thread, which a script's own replaces.
        # Later, sys.monitoring events reach every thread and coexist.
        import threading

        threading.setprofile(_thread_hook)
        _sys.setprofile = _warn_hook_replaced("setprofile", _sys.setprofile)
    _sys.settrace = _warn_hook_replaced("settrace", _sys.settrace)


def _module_error(name):
    """`run -m NAME`, before anything runs: None when python -m NAME would
    find the module, else python's own message. The search imports nothing
    (a package's submodules are looked up on its __path__ without running
    its __init__); only where that search fails does runpy decide, as
    python -m would, which may import the parent packages."""
    # python -m searches the current folder first (sys.path[0], set only
    # when the run starts), unless -P / PYTHONSAFEPATH.
    here = [] if getattr(_sys.flags, "safe_path", False) else [_os.getcwd()]
    _sys.path[:0] = here
    try:
        return _find_module_error(name)
    finally:
        del _sys.path[:len(here)]


def _find_module_error(name):
    import importlib.machinery
    import importlib.util

    try:
        parts = name.split(".")
        spec = importlib.util.find_spec(parts[0])
        for i in range(1, len(parts)):
            if spec is None or spec.submodule_search_locations is None:
                spec = None
                break
            spec = importlib.machinery.PathFinder.find_spec(
                ".".join(parts[:i + 1]), spec.submodule_search_locations)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.machinery.PathFinder.find_spec(
                name + ".__main__", spec.submodule_search_locations)
        if spec is not None:
            return None
    except (ImportError, ValueError):
        pass
    import runpy

    try:
        runpy._get_module_details(name)
    except ImportError as exc:
        return str(exc)
    except Exception as exc:  # the parent package's own import failed
        return f"Error while finding module specification for {name!r} ({type(exc).__name__}: {exc})"
    return None


def _run_hooks(target, trace, trace_all, include, exclude):
    """The Python-level hooks of `scope-profiler run`, after the C session
    started (session.c): the --recursive hook in every thread, the exit
    callback, sys.exit and SIGTERM noted, the shim folder."""
    # Only what plain python has loaded already, so that the script runs
    # as it would there: _signal rather than signal (which loads enum), and
    # atexit (built in, no Python code) left out of sys.modules once used;
    # a later `import atexit` makes a new module over the same callbacks.
    import _signal as signal
    had_atexit = "atexit" in _sys.modules
    import atexit

    if not had_atexit:
        del _sys.modules["atexit"]
    if trace:
        _start_tracing(target, trace_all, include, exclude)
    atexit.register(_run_exit)  # C: ends the session, signals held
    _sys.exit = _watch_exit(_sys.exit)
    _offer_shim()
    # SIGTERM (a batch system's time limit) unwinds like sys.exit(143), so
    # the profile is written; a script may still install its own handler.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _tmpdir():
    """Where the run's own temporary files go: $TMPDIR, else /tmp."""
    return _os.environ.get("TMPDIR") or "/tmp"


_SHIM_PREFIX = "scope-profiler-shim-"
_shim = None       # `run`: the no-op module's folder for subprocesses
_shim_pid = None


def _clear_folder(fd):
    """Empties the open folder fd, never following a symlink (each level is
    opened relative to its parent with O_NOFOLLOW)."""
    for entry in _os.scandir(fd):
        try:
            if entry.is_dir(follow_symlinks=False):
                sub = _os.open(entry.name, _os.O_RDONLY | _os.O_DIRECTORY | _os.O_NOFOLLOW,
                               dir_fd=fd)
                try:
                    _clear_folder(sub)
                finally:
                    _os.close(sub)
                _os.rmdir(entry.name, dir_fd=fd)
            else:
                _os.unlink(entry.name, dir_fd=fd)
        except OSError:
            pass


def _remove_tree(path):
    """Removes a shim folder, with the bytecode its subprocesses may have
    cached. Imports nothing: it runs at the very end of the run (where an
    import would, among other things, make Python forget an unhandled
    KeyboardInterrupt and exit 1 instead of dying of SIGINT)."""
    try:
        fd = _os.open(path, _os.O_RDONLY | _os.O_DIRECTORY | _os.O_NOFOLLOW)
    except OSError:
        return
    try:
        _clear_folder(fd)
    finally:
        _os.close(fd)
    try:
        _os.rmdir(path)
    except OSError:
        pass


def _remove_stale_shims(tmp, host):
    """This user's shim folders of runs on this host that died without
    cleaning up (os._exit(), SIGKILL): their process is gone."""
    import stat  # already loaded by os

    mine = f"{_SHIM_PREFIX}{host}-"
    try:
        names = [n for n in _os.listdir(tmp) if n.startswith(mine)]
    except OSError:
        return
    for name in names:
        pid = name[len(mine):].split("-")[0]
        path = _os.path.join(tmp, name)
        try:
            st = _os.lstat(path)
            if not pid.isdigit() or not stat.S_ISDIR(st.st_mode) or st.st_uid != _os.geteuid():
                continue
            _os.kill(int(pid), 0)
        except ProcessLookupError:
            _remove_tree(path)
        except OSError:
            pass  # alive, or gone meanwhile


def _offer_shim():
    """Python subprocesses of the script (multiprocessing's spawn and
    forkserver children, subprocess.run([sys.executable, ...])) run plain
    Python: put a no-op scope_profiler on their PYTHONPATH, so a script
    that imports it imports there too. They record nothing. The folder is
    named after this host and process (and made with O_EXCL semantics, mode
    0700), so that a later run can remove it if this one cannot (os._exit,
    SIGKILL)."""
    tmp = _tmpdir()
    host = _os.uname().nodename.replace("/", "_")
    _remove_stale_shims(tmp, host)
    for _ in range(8):
        folder = _os.path.join(tmp, f"{_SHIM_PREFIX}{host}-{_os.getpid()}-{_os.urandom(4).hex()}")
        try:
            _os.mkdir(folder, 0o700)
            break
        except FileExistsError:
            continue
        except OSError:
            return  # no temporary folder: subprocesses simply lack the module
    else:
        return
    global _shim, _shim_pid
    _shim, _shim_pid = folder, _os.getpid()   # ours from here on: removed after the profile
    try:
        with open(_os.path.join(folder, "scope_profiler.py"), "w") as f:
            f.write(_shim_source.replace("@VERSION@", __version__))
    except OSError:
        return
    old = _os.environ.get("PYTHONPATH")
    _os.environ["PYTHONPATH"] = folder + (_os.pathsep + old if old else "")
    # multiprocessing's spawn hands its children this process's sys.path;
    # here the built-in module is found first, so the folder shadows nothing.
    _sys.path.append(folder)


def _remove_shim():
    """The end of the run (session.c, after the profile, with SIGINT and
    SIGTERM held): the shim folder goes, in the process that made it."""
    global _shim
    if _shim and _os.getpid() == _shim_pid:
        _remove_tree(_shim)
        _shim = None


# ---------------------------------------------------------------------------
# Read API

_NS = 1_000_000_000

_np_module = False  # not looked for yet


def _numpy():
    """numpy, imported on the read API's first use (never before the
    script: importing it changes the program), or None when it is not
    installed: the read API then works with lists."""
    global _np_module
    if _np_module is False:
        try:
            import numpy
        except ImportError:
            numpy = None
        _np_module = numpy
    return _np_module


def _column(raw, code="q"):
    """A stored column from its raw bytes: int64 ("q") or int32 ("i"); a
    numpy array when numpy is there, else an array.array; None if absent."""
    if raw is None:
        return None
    np = _numpy()
    if np is not None:  # raw is a bytearray: a writable array, no copy
        return np.frombuffer(raw, dtype=np.int64 if code == "q" else np.int32)
    import array

    col = array.array(code)
    col.frombytes(raw)
    return col


class Region:
    """One region on one rank. Times in seconds; raw ns in the *_ns names."""

    def __init__(self, name, rank, raw):
        self.name = name
        self.rank = rank
        self.num_calls = raw["num_calls"]
        self.total_duration_ns = raw["total_ns"]
        self.total_duration = raw["total_ns"] / _NS
        self.min_duration = raw["min_ns"] / _NS
        self.max_duration = raw["max_ns"] / _NS
        self.mean_duration = raw["mean_ns"] / _NS
        self.std_duration = raw["std_ns"] / _NS
        self.first_start_ns = raw["first_start_ns"]
        self.last_end_ns = raw["last_end_ns"]
        # Aggregation mode keeps no per-call events: empty columns, and the
        # exclusive time instead.
        self.aggregate = bool(raw.get("aggregate"))
        self_ns = raw.get("self_ns")
        self.self_duration_ns = self_ns
        self.self_duration = None if self_ns is None else self_ns / _NS
        empty = bytearray() if self.aggregate else None
        self.start_times_ns = _column(raw["starts"] if raw["starts"] is not None else empty)
        self.end_times_ns = _column(raw["ends"] if raw["ends"] is not None else empty)
        self.lanes = _column(raw.get("lanes"), "i")  # None unless --track-threads
        # Each call's place in call_stack(rank) and its parent's there (-1: a
        # root), set by ProfilingResults._stack when first asked for.
        self._call_ids = self._parent_ids = None

    def _need_events(self):
        if self.start_times_ns is None:
            raise ValueError(f"region {self.name!r}: events were not loaded "
                             "(read_h5_summary); use read_h5")

    @property
    def durations_ns(self):
        self._need_events()
        if _numpy() is not None:
            return self.end_times_ns - self.start_times_ns
        return [e - s for s, e in zip(self.start_times_ns, self.end_times_ns)]

    @property
    def durations(self):
        d = self.durations_ns
        return d / _NS if _numpy() is not None else [x / _NS for x in d]

    def __repr__(self):
        return f"<Region {self.name!r} rank {self.rank}: {self.num_calls} calls, {self.total_duration:.6f} s>"


class MPIRegion:
    """One region across all ranks; ``mpi_region[rank]`` is a Region."""

    def __init__(self, name, per_rank, results):
        self.name = name
        self._per_rank = per_rank  # rank -> Region
        self._results = results

    def __getitem__(self, rank):
        return self._per_rank[rank]

    @property
    def ranks(self):
        return sorted(self._per_rank)

    @property
    def num_calls(self):
        return sum(r.num_calls for r in self._per_rank.values())

    @property
    def total_duration(self):
        return sum(r.total_duration_ns for r in self._per_rank.values()) / _NS

    @property
    def first_start_ns(self):
        return min(r.first_start_ns for r in self._per_rank.values() if r.num_calls)

    def total_durations(self):
        """Each rank's total time in this region, in seconds: {rank: s}."""
        return {rank: r.total_duration for rank, r in sorted(self._per_rank.items())}

    def imbalance(self):
        """Slowest rank's total / fastest rank's total over the ranks that
        recorded the region (inf when the fastest is 0 s, nan when all are);
        computed by the C analysis module when the file is read."""
        return self._results._imbalance[self.name]

    def events(self, ranks=None, relative=True, origin=None):
        """This region's calls, as ProfilingResults.events() gives them."""
        return self._results._events([self.name], ranks, relative, origin)

    def __repr__(self):
        return f"<MPIRegion {self.name!r}: {self.num_calls} calls on {len(self._per_rank)} rank(s)>"


def _as_list(value):
    if value is None:
        return None
    return [value] if isinstance(value, (str, int)) else list(value)


def call_stack_roots(calls):
    """Indices of the calls with no parent, in order."""
    return [i for i, c in enumerate(calls) if c["parent_id"] == -1]


def call_stack_children(calls):
    """children[i]: the indices of call i's direct children, in order."""
    children = [[] for _ in calls]
    for i, c in enumerate(calls):
        if c["parent_id"] >= 0:
            children[c["parent_id"]].append(i)
    return children


class ProfilingResults:
    """A profile read back: ``results[name]`` is an MPIRegion.

    Times are seconds. Absolute times (run_start_time, minimum_start_time,
    ...) are on the perf_counter clock; events() and call_stack() measure
    from time_origin (the run's start, or the first region entry for files
    that have none) unless told otherwise."""

    def __init__(self, data, file_path, summary):
        import pathlib

        self.file_path = pathlib.Path(file_path) if file_path is not None else None
        self.metadata = data["meta"]
        self.format_version = data["format_version"]
        self._summary = summary
        self._ranks = data["ranks"]
        # The time axis and imbalance, from C (sp_analysis.h) at read time.
        self._time_origin_ns = data["time_origin_ns"]
        self._startup_ns = data["startup_ns"]
        self._time_span_ns = data["time_span_ns"]
        self._imbalance = data["imbalance"]
        regions = {}
        for rank in self._ranks:
            for name, raw in rank["regions"].items():
                regions.setdefault(name, {})[rank["rank"]] = Region(name, rank["rank"], raw)
        # Region order: the order of first entry, as a run unfolds.
        ordered = sorted(regions.items(), key=lambda kv: min(
            (r.first_start_ns for r in kv[1].values() if r.num_calls), default=0))
        # name -> {rank: Region}; MPIRegion views are made on access, so
        # results and regions hold no reference cycle and a result's memory
        # goes back as soon as it is dropped.
        self._per_region = dict(ordered)
        self._stacks = {}

    def __getitem__(self, name):
        return MPIRegion(name, self._per_region[name], self)

    def __contains__(self, name):
        return name in self._per_region

    def __iter__(self):
        return iter(self.get_regions())

    def __len__(self):
        return len(self._per_region)

    def get_regions(self):
        return [MPIRegion(n, per, self) for n, per in self._per_region.items()]

    @property
    def region_names(self):
        return list(self._per_region)

    @property
    def ranks(self):
        return [r["rank"] for r in self._ranks]

    @property
    def num_ranks(self):
        return len(self._ranks)

    # -- the time axis ---------------------------------------------------

    @property
    def run_start_time(self):
        starts = [r["run_start_ns"] for r in self._ranks if r["run_start_ns"] is not None]
        return min(starts) / _NS if starts else None

    def _first_start_ns(self):
        starts = [r.first_start_ns for per in self._per_region.values()
                  for r in per.values() if r.num_calls]
        return min(starts) if starts else None

    def _last_end_ns(self):
        ends = [r.last_end_ns for per in self._per_region.values()
                for r in per.values() if r.num_calls]
        return max(ends) if ends else None

    @property
    def minimum_start_time(self):
        t = self._first_start_ns()
        return None if t is None else t / _NS

    @property
    def maximum_end_time(self):
        t = self._last_end_ns()
        return None if t is None else t / _NS

    @property
    def time_span(self):
        """From the first region entry to the last exit, in seconds."""
        return self._time_span_ns / _NS

    @property
    def startup_time(self):
        """Seconds from the run's start to the first region entry (None when
        the file has no run start)."""
        return None if self._startup_ns is None else self._startup_ns / _NS

    @property
    def time_origin(self):
        """The run's start (the earliest over the ranks), or the first region
        entry for files without one; None for an empty profile."""
        return None if self._time_origin_ns is None else self._time_origin_ns / _NS

    def _origin_ns(self, relative, origin):
        if not relative:
            return 0
        if origin is not None:
            return round(origin * _NS)
        return self._time_origin_ns or 0

    # -- calls -----------------------------------------------------------

    def _stack(self, rank):
        """Rank's calls in call_stack order (lane, then start, the longer
        first; the nesting the C library computes on first use), each with
        its parent's index: [(name, call_index, start_ns, end_ns, lane,
        depth, parent)]."""
        if rank in self._stacks:
            return self._stacks[rank]
        regions = [(name, per[rank]) for name, per in self._per_region.items()
                   if rank in per and per[rank].num_calls]
        for name, r in regions:
            r._need_events()
        # Aggregates (run --aggregate) have no calls, hence no nesting.
        regions = [(name, r) for name, r in regions if not r.aggregate]
        # Each call's place in call_stack(rank) and its parent's there (-1: a
        # root), by the C library's one nesting rule (sp_nest.h), computed
        # now rather than at every read.
        ids, parents = _nest([(r.start_times_ns, r.end_times_ns, r.lanes) for name, r in regions])
        tolist = (lambda c: c.tolist()) if _numpy() is not None else list
        ids, parents = tolist(_column(ids)), tolist(_column(parents))
        out = [None] * len(ids)
        n = len(out)
        k0 = 0
        for name, r in regions:
            k1 = k0 + r.num_calls
            r._call_ids, r._parent_ids = ids[k0:k1], parents[k0:k1]
            lanes = tolist(r.lanes) if r.lanes is not None else [0] * r.num_calls
            for i, (s, e, lane) in enumerate(zip(tolist(r.start_times_ns), tolist(r.end_times_ns),
                                                 lanes)):
                out[ids[k0 + i]] = (name, i, s, e, lane, parents[k0 + i])
            k0 = k1
        depth = [0] * n
        for k, (name, i, s, e, lane, parent) in enumerate(out):
            if parent >= 0:
                depth[k] = depth[parent] + 1
            out[k] = (name, i, s, e, lane, depth[k], parent)
        self._stacks[rank] = out
        return out

    def call_stack(self, rank=0, relative=True, origin=None):
        """The rank's calls in start order with their nesting: dicts with
        name, rank, call_index, start, end, duration, depth, parent_id (the
        index of the parent in this list, -1 for a root) and call_id."""
        base = self._origin_ns(relative, origin)
        calls = []
        for k, (name, i, s, e, lane, depth, parent) in enumerate(self._stack(rank)):
            calls.append({"name": name, "rank": rank, "call_index": i, "lane": lane,
                          "start": (s - base) / _NS, "end": (e - base) / _NS,
                          "duration": (e - s) / _NS, "depth": depth,
                          "parent": parent, "parent_id": parent, "call_id": k})
        return calls

    def _events(self, names, ranks, relative, origin):
        base = self._origin_ns(relative, origin)
        rank_set = None if ranks is None else set(_as_list(ranks))
        with_lanes = any(r.lanes is not None for per in self._per_region.values()
                         for r in per.values())
        out = []
        for name in names:
            m = self[name]
            for rank in m.ranks:
                if rank_set is not None and rank not in rank_set:
                    continue
                r = m[rank]
                r._need_events()
                if r.aggregate:  # aggregates: no calls
                    continue
                self._stack(rank)  # sets each region's call and parent ids
                tolist = (lambda c: c.tolist()) if _numpy() is not None else list
                columns = zip(tolist(r.start_times_ns), tolist(r.end_times_ns),
                              r._call_ids, r._parent_ids)
                for i, (s, e, call_id, parent) in enumerate(columns):
                    ev = {"name": name, "rank": rank, "call_index": i,
                          "start": (s - base) / _NS, "end": (e - base) / _NS,
                          "duration": (e - s) / _NS, "call_id": call_id, "parent_id": parent}
                    if with_lanes:
                        ev["lane"] = int(r.lanes[i]) if r.lanes is not None else 0
                    out.append(ev)
        return out

    def _select(self, include, exclude):
        import re

        inc = [re.compile(p) for p in _as_list(include) or []]
        exc = [re.compile(p) for p in _as_list(exclude) or []]
        return [n for n in self._per_region
                if (not inc or any(p.search(n) for p in inc))
                and not any(p.search(n) for p in exc)]

    def events(self, include=None, exclude=None, ranks=None, relative=True, origin=None):
        """One dict per recorded call, in region order, then rank, then call
        order: name, rank, call_index, start, end, duration (s), call_id and
        parent_id (indices in call_stack(rank)). include/exclude: regular
        expressions (or lists of them) searched in region names; ranks: an int
        or a list; relative=False gives absolute clock times; origin (s)
        overrides time_origin."""
        return self._events(self._select(include, exclude), ranks, relative, origin)

    def to_events_dataframe(self, include=None, exclude=None, ranks=None, relative=True,
                            origin=None):
        """events() as a pandas DataFrame: name, rank, call_index, start, end,
        duration (and lane with --track-threads)."""
        try:
            import pandas
        except ImportError as exc:
            raise ImportError("to_events_dataframe() needs pandas "
                              "(Debian: apt-get install python3-pandas)") from exc
        events = self.events(include, exclude, ranks, relative, origin)
        columns = ["name", "rank", "call_index", "start", "end", "duration"]
        if events and "lane" in events[0]:
            columns.insert(2, "lane")
        return pandas.DataFrame(events, columns=columns)

    def print_summary(self, file=None, suppress_notes=False):
        """The summary `scope-profiler summary` prints (rendered on demand
        from the file: a summary-only read)."""
        if self._summary is None and self.file_path is not None:
            self._summary = _read(_os.fspath(self.file_path), False, True)[1]
        (file or _sys.stdout).write(self._summary or "")

    def __repr__(self):
        name = self.file_path.name if self.file_path is not None else "(in memory)"
        return (f"<ProfilingResults {name!r}: {len(self._per_region)} region(s), "
                f"{len(self._ranks)} rank(s)>")


def read_h5(path):
    """Read a profile with all its events."""
    data, summary = _read(_os.fspath(path), True, False)
    return ProfilingResults(data, path, summary)


load = read_h5


def read_h5_summary(path):
    """Read a profile's per-region summaries only: cost independent of events."""
    data, summary = _read(_os.fspath(path), False, False)
    return ProfilingResults(data, path, summary)
