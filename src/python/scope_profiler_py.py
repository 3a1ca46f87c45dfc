"""The Python layer of the built-in module ``scope_profiler``.

Embedded in the scope-profiler executable and run in the module's namespace
after the C part (regions, the decorator wrapper, the clock, the HDF5 writer
and reader) is in place. Nothing here runs while a region records, and the
session itself (setup, finalize, the write, the summary) is C's (session.c):
here are the ProfileManager facade, the Python-level hooks of `run` (the
--recursive hook in every thread, sys.exit and SIGTERM; the subprocesses'
folder is shim.c's) and the read API's result classes. Its matplotlib charts
(plot_*) are the module scope_profiler._charts (scope_profiler_charts.py),
loaded on first use.
"""

import os as _os
import sys as _sys


class session:
    """``with ProfileManager.session(**options):`` = setup() ... finalize().
    One inside another's block (a library's own session called from the
    user's) joins the open one: its setup() would reconfigure it and its
    finalize() end it, the outer one's file never written and its later
    calls lost. A warning says so, once."""

    _open = 0        # session blocks open, in every thread (the session is one)
    _warned = False

    def __init__(self, **options):
        _check_options(**options)
        self._options = options
        self._joined = False
        self.results = None

    def __enter__(self):
        if session._open:
            self._joined = True
            if not session._warned:
                session._warned = True
                _sys.stderr.write("scope-profiler: warning: a session() inside an open session() "
                                  "joins it: its options are not applied, and what it records is "
                                  "written at the end of the outer one\n")
        else:
            self._joined = False   # the same object, entered again on its own
            setup(**self._options)
        session._open += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        session._open -= 1
        if self._joined:
            return False
        # failed: under MPI, do not wait forever for ranks that may be
        # blocked waiting for this one (see sp_mpi.h).
        finalize(self._options.get("verbose"), _failed=exc_type is not None)
        return False


def _qualname(func):
    # A callable object without names (an instance with __call__): its
    # class's, the same in every run (its repr holds an address).
    return (getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
            or type(func).__qualname__)


async def _timed_coroutine(region, pending, hooked):
    """A call of a decorated ``async def`` function (the C wrapper makes one
    per call, named as the function's coroutine; pending() gives the
    function's coroutine, held until now): the region is open from the
    coroutine's first step to its end (return, exception or cancellation),
    in the task that runs it. hooked (recursive=True): each step of the
    coroutine runs under the --recursive hook (generator.c)."""
    coro = pending()
    token = _coroutine_enter(region)
    try:
        return await (_hooked_steps(coro) if hooked else coro)
    finally:
        _coroutine_exit(region, token)


# Task lanes by default: once an event loop runs, the session records each
# call in its asyncio task's lane (as setup(track_async=True) does), so that
# tasks interleaving on one thread never nest in each other nor close each
# other's `with` blocks. The loop says it runs through
# asyncio.events._set_running_loop, which asyncio looks up at each start;
# it is wrapped when asyncio.events loads (a finder that finds nothing,
# first in sys.meta_path) or now if it is loaded already.
class _AsyncioWatch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "asyncio.events":
            return None
        spec = _sys.modules["_frozen_importlib_external"].PathFinder.find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            run(module)
            _watch_loops(module)

        loader.exec_module = exec_module
        return spec

    @staticmethod
    def invalidate_caches():
        pass


if "asyncio.events" in _sys.modules:
    _watch_loops(_sys.modules["asyncio.events"])
else:
    _sys.meta_path.insert(0, _AsyncioWatch)


# 3.11: sys.gettrace/getprofile/settrace/setprofile keep our C hooks out of
# the script's sight (_hide_our_hooks, tracer_setprofile.c).
if _sys.version_info < (3, 12):
    _hide_our_hooks()


# The regions of unnamed decorators by their functions' qualified names
# ({"Solver.step": "step"}), so that get_region("Solver.step"), the name
# earlier builds gave such a region, still finds it.
_qualified_names = {}


def _unnamed(func):
    """The region of an unnamed @profile on func: the function's __name__, as
    the original package names it (methods of two classes that share a name
    share the region: name them to keep them apart). A classmethod or
    staticmethod (the decorator above it) is named by its function."""
    if isinstance(func, (classmethod, staticmethod)):
        func = func.__func__
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or not name:
        name = _qualname(func)
    qual = getattr(func, "__qualname__", None)
    if isinstance(qual, str) and qual != name:
        _qualified_names.setdefault(qual, name)
    return region(name)


def profile(name=None, recursive=None, *, region_name=None):
    """Decorator: ``@profile``, ``@profile("name")`` or ``@profile(recursive=...)``.

    The function's calls are recorded in the region `name` (also
    region_name=, the earlier spelling; default: the function's __name__,
    as the original package names it). recursive=True also records every
    call made under each call (the --recursive hook); recursive=False keeps the region to itself even
    under setup(recursive_profile=True). With profiling disabled the
    function itself is returned, unwrapped.
    """
    if region_name is not None:
        if name is not None:
            raise TypeError("profile() got both name and region_name")
        name = region_name
    if isinstance(name, (classmethod, staticmethod)) or (callable(name) and not isinstance(name, str)):
        return _unnamed(name)(name)
    if recursive is not None:
        flag = bool(recursive)
        if name is None:
            return lambda func: _profile_recursive(_unnamed(func), func, flag)
        return lambda func: _profile_recursive(region(name), func, flag)
    if name is None:
        return lambda func: _unnamed(func)(func)
    return region(name)


_get_region_exact = get_region


def get_region(name):
    """The existing region called `name`; or the region of an unnamed @profile
    whose function's qualified name is `name` ("Solver.step" for the region
    "step"). KeyError when there is none."""
    try:
        return _get_region_exact(name)
    except KeyError:
        plain = _qualified_names.get(name)
        if plain is not None and plain in _registry:
            return _registry[plain]
        raise


def get_all_regions():
    """Every region made so far, {name: region}, in creation order (a copy)."""
    return dict(_registry)


class ProfilingConfig:
    """The settings in force (get_config(), ProfileManager._config): one
    attribute per setup() keyword, the earlier releases' names
    (profiling_activated, time_trace, flush_to_disk) as what they mean, and
    the original package's other settings as this tool has them (comm: the
    MPI communicator, None but under MPI; output_mode "auto": rank 0 writes
    the merged file; hdf5_compression_level; use_gpu_timing: use_gpu;
    metadata_detail "minimal"; off: perf_events, capture_region_source,
    paused). A read-only snapshot: setup() changes the session, not this
    object (an assignment is an AttributeError)."""

    def __init__(self, settings, active):
        d = self.__dict__
        d.update(settings)
        d["active"] = active
        d["profiling_activated"] = not settings["deactivate_profiling"]
        d["time_trace"] = not settings["aggregation_mode"]
        d["flush_to_disk"] = False  # the events stay in memory until finalize()
        comp = settings.get("hdf5_compression", "none")
        d["hdf5_compression_level"] = (int(comp.partition("=")[2])
                                       if comp.startswith("gzip=") else None)
        d["use_gpu_timing"] = bool(settings.get("use_gpu", False))
        for name, value in _ORIGINAL_SETTINGS.items():
            d.setdefault(name, value)
        mpi = _sys.modules.get("mpi4py.MPI")
        d["comm"] = mpi.COMM_WORLD if mpi is not None and mpi.Is_initialized() else None

    def __setattr__(self, name, value):
        raise AttributeError(f"ProfilingConfig is read-only: setup({name}=...) changes "
                             "the settings")

    def __delattr__(self, name):
        self.__setattr__(name, None)

    def as_dict(self):
        return dict(self.__dict__)

    def __repr__(self):
        return "ProfilingConfig(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


# The original package's settings that this tool has no setup() keyword
# for, as they are here: what ProfilingConfig says for them.
_ORIGINAL_SETTINGS = {
    "output_mode": "auto", "hdf5_chunk_size": None, "perf_events": (),
    "gpu_sync_on_exit": False, "gpu_timing_backend": "auto",
    "metadata_detail": "minimal", "capture_region_source": False, "memory_profile_path": None,
    "tracker": None, "paused": False, "label": None,
}


class _ConfigView:
    """ProfileManager._config: the original package's settings object,
    read each time from the session (get_config())."""

    def __get__(self, obj, owner=None):
        return get_config()


def get_config():
    """The settings of the session in force (or those the next finalize()
    or setup() starts from), as a ProfilingConfig."""
    return ProfilingConfig(_settings(), _session_active())


def read_results():
    """The results of the file the current configuration writes."""
    return read_h5(_file_path())


def run_script(path, args=(), recursive=True):
    """Runs the Python file `path` as __main__ (a module of its own in
    sys.modules["__main__"], sys.argv [path, *args], while it runs) in the
    session setup() started, as one call of a region named after the file;
    with recursive=True every Python function it calls is recorded in a
    region of its own under it (profile(recursive=True) on the whole
    script): the tree `scope-profiler run --recursive` gives a script.
    Returns the script's globals."""
    import types

    path = _os.fspath(path)
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    argv = [path, *map(str, args)]

    def run():
        saved_argv, saved_main = _sys.argv[:], _sys.modules.get("__main__")
        _sys.argv[:] = argv
        _sys.modules["__main__"] = main
        try:
            exec(code, main.__dict__)
        finally:
            _sys.argv[:] = saved_argv
            if saved_main is not None:
                _sys.modules["__main__"] = saved_main
        return main.__dict__

    return profile(_os.path.basename(path), recursive=bool(recursive))(run)()


def profile_script(path, args=(), recursive=True, verbose=False, **options):
    """`scope-profiler run --recursive -q -o FILE SCRIPT` from Python:
    setup(**options) (file_path= where the profile goes), run_script(path,
    args, recursive), then finalize(verbose=verbose); returns the results
    (read_results()'s). A session must not be running already (`run`
    starts one: use run_script() there)."""
    if _session_active():
        raise RuntimeError("profile_script() starts and ends a session of its own, and one is "
                           "running (scope-profiler run starts one): call run_script() in it, "
                           "or finalize() it first")
    setup(**options)
    try:
        run_script(path, args, recursive)
    finally:
        results = finalize(verbose=verbose, return_results=True)
    return results


class ProfileManager:
    """The facade of the original package: every method is static."""

    setup = staticmethod(setup)
    finalize = staticmethod(finalize)
    session = staticmethod(session)
    region = staticmethod(region)
    profile_region = staticmethod(region)
    profile = staticmethod(profile)
    get_region = staticmethod(get_region)
    get_all_regions = staticmethod(get_all_regions)
    get_config = staticmethod(get_config)
    read_results = staticmethod(read_results)
    run_script = staticmethod(run_script)
    profile_script = staticmethod(profile_script)
    _config = _ConfigView()


profile_region = region


def _finalize_at_exit():
    """Plain python (the extension module registers this with atexit): a
    session that setup() started and no finalize() ended is finalized when
    the interpreter exits, as an explicit finalize() would (the file
    written, the summary printed when verbose). A file that cannot be
    written is one line on stderr, not a traceback."""
    if not _session_active():
        return
    child = _session_is_child()
    try:
        finalize(_at_exit=True)
    except OSError as exc:
        if child:   # counted by the run, which can only guess why: the child says it
            _child_write_failed(exc)
        else:
            _sys.stderr.write(f"scope-profiler: cannot write the profile at exit: {exc}\n")


# ---------------------------------------------------------------------------
# `scope-profiler run` glue

def _foreign_prefixes():
    """Folders whose code is not the user's: the stdlib (where os lives; no
    sysconfig, which plain python does not load). Installed packages are
    known by their site-packages or dist-packages folder (filter.c)."""
    stdlib = _os.path.dirname(_os.__file__)
    found = {stdlib, _os.path.realpath(stdlib)}
    return tuple(sorted(p.rstrip("/") + "/" for p in found if p))


def _own_prefixes(kind, what):
    """What --recursive takes for the user's own code though it be in the
    stdlib or installed: the folder of the script being run ("script"; its
    code's file name when it is standard input, "-"),
    the package named by -m, its top-level package's folder, or the file
    of a top-level module ("module"); -c's code ("command") is told by its
    code objects (_command_codes). Looked up without importing anything."""
    if kind == "command":
        return ()
    if kind == "script" and what == "-":
        return ("<stdin>",)   # python's name for the code it reads there
    if kind == "script":
        path = _os.path.abspath(what)
        folder = path if _os.path.isdir(path) else _os.path.dirname(path)
        return tuple(sorted({p.rstrip("/") + "/" for p in (folder, _os.path.realpath(folder))}))
    here = [] if getattr(_sys.flags, "safe_path", False) else [_os.getcwd()]
    _sys.path[:0] = here
    try:
        specs = _module_specs(what) or ()
    except (ImportError, ValueError):
        specs = ()
    finally:
        del _sys.path[:len(here)]
    top = specs[0] if specs else None
    if top is None:
        return ()
    places = list(top.submodule_search_locations or ())
    if not places and top.origin and _os.path.isfile(top.origin):
        places = [top.origin]
    found = set()
    for p in places:
        for q in (p, _os.path.realpath(p)):
            found.add(q.rstrip("/") + ("/" if _os.path.isdir(q) else ""))
    return tuple(sorted(found))


def _compile_quietly(source, filename):
    """compile(source, filename, "exec") with every warning ignored. `run`
    compiles the script (or -c's command) before running it, so that a
    syntax error is one line and no profile, and --recursive compiles the
    command again for its code objects; Python's own compile, when it runs
    the script, says its warnings (SyntaxWarning, ...) once, as plain python
    does. Through _warnings' list (the warnings module's too, when loaded),
    so that nothing is imported before the script."""
    import _warnings

    ignore = ("ignore", None, Warning, None, 0)
    _warnings.filters.insert(0, ignore)
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    finally:
        for i, f in enumerate(_warnings.filters):
            if f is ignore:
                del _warnings.filters[i]
                break


def _command_codes(source):
    """run -c: the keys of the code objects compile() makes of the command
    (qualified name, first line, bytecode), by which --recursive tells its
    functions from other code named "<string>" (what exec and eval make:
    dataclasses' __init__, namedtuple's __new__)."""
    try:
        top = _compile_quietly(source, "<string>")
    except (SyntaxError, ValueError):
        return None
    keys, pending = set(), [top]
    while pending:
        co = pending.pop()
        keys.add((co.co_qualname, co.co_firstlineno, co.co_code))
        pending.extend(c for c in co.co_consts if isinstance(c, type(top)))
    return frozenset(keys)


def _start_tracing(target, trace_all, include, exclude, own=(), codes=None):
    """`run --recursive`: the root region, then the hook in every thread."""
    region(target).__enter__()
    _trace_hooks(trace_all, include, exclude, own, codes)


def _trace_hooks(trace_all, include, exclude, own=(), codes=None, foreign=()):
    """The --recursive hook in every thread, from the main module's start;
    foreign: folders of code that is not the program's, beside the stdlib."""
    _tracer_configure(bool(trace_all), tuple(include), tuple(exclude),
                      tuple(foreign) + (() if trace_all else _foreign_prefixes()), tuple(own), codes)
    if _sys.version_info < (3, 12):
        # 3.11: a profile hook per thread, which a script's own replaces.
        # Later, sys.monitoring events reach every thread and coexist.
        # New threads get it from threading when plain python has it
        # loaded already, else from _thread.start_new_thread (which
        # threading takes when the script imports it): importing threading
        # here would run its code, and its _shutdown at exit, as the
        # program's.
        threading = _sys.modules.get("threading")
        if threading is not None:
            threading.setprofile(_thread_hook)
        else:
            import _thread

            _thread.start_new_thread = _thread_start(_thread.start_new_thread)
        _sys.setprofile = _warn_hook_replaced("setprofile", _sys.setprofile)
    # The hook records from the program's main module on.
    _tracer_start(True)
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


def _module_files(name):
    """`run -m NAME -o OUT`, before anything runs: the files python -m NAME
    would run (the parent packages' __init__, the module, or a package's
    __init__ and __main__), found as _module_error finds them, so that run
    refuses an OUT that is one of them. [] when the search needs runpy."""
    here = [] if getattr(_sys.flags, "safe_path", False) else [_os.getcwd()]
    _sys.path[:0] = here
    try:
        try:
            specs = _module_specs(name) or ()
        except (ImportError, ValueError):
            specs = ()
    finally:
        del _sys.path[:len(here)]
    return [s.origin for s in specs
            if s is not None and getattr(s, "has_location", False) and isinstance(s.origin, str)]


def _module_specs(name):
    """The specs python -m NAME would run, found without importing
    anything, or None when this search cannot find them."""
    import importlib.machinery
    import importlib.util

    parts = name.split(".")
    spec = importlib.util.find_spec(parts[0])
    found = [spec]
    for i in range(1, len(parts)):
        if spec is None or spec.submodule_search_locations is None:
            spec = None
            break
        spec = importlib.machinery.PathFinder.find_spec(
            ".".join(parts[:i + 1]), spec.submodule_search_locations)
        found.append(spec)
    if spec is not None and spec.submodule_search_locations is not None:
        spec = importlib.machinery.PathFinder.find_spec(
            name + ".__main__", spec.submodule_search_locations)
        found.append(spec)
    return found if spec is not None else None


def _find_module_error(name):
    try:
        found = _module_specs(name)
        if found is not None:
            return _compile_error(found)
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


def _compile_error(specs):
    """The modules python -m would run (the parent packages' __init__, the
    module or the package's __main__), compiled but not run: None, or one
    line naming the file and the error, so that a syntax error stops the
    run before it starts, as a script's does."""
    for spec in specs:
        get_code = getattr(spec.loader, "get_code", None) if spec is not None else None
        if get_code is None:
            continue
        try:
            get_code(spec.name)
        except (SyntaxError, ValueError) as exc:
            where = spec.origin or spec.name
            return f"{where}: {type(exc).__name__}: {exc}"
        except ImportError:
            pass  # unreadable: runpy reports it when the run starts
    return None


def _run_hooks(target, trace, trace_all, include, exclude, subprocesses=False, own_of=None,
               builtin_profile=False):
    """The Python-level hooks of `scope-profiler run`, after the C session
    started (session.c): the --recursive hook in every thread, the exit
    callback, sys.exit, the exit signals and os.exec* watched, the shim
    folder (shim.c)."""
    # Only what plain python has loaded already, so that the script runs
    # as it would there: atexit (built in, no Python code) is left out of
    # sys.modules once used; a later `import atexit` makes a new module
    # over the same callbacks.
    had_atexit = "atexit" in _sys.modules
    import atexit

    if not had_atexit:
        del _sys.modules["atexit"]
    if builtin_profile:
        # kernprof's habit (run --line-profile, --recursive): a bare
        # @profile with no import is this module's profile, from builtins,
        # where a script's own `profile` (defined or imported) wins.
        import builtins

        if not hasattr(builtins, "profile"):
            builtins.profile = profile
    own = _own_prefixes(*own_of) if trace and own_of and not trace_all else ()
    if trace:
        command = own_of and own_of[0] == "command" and not trace_all
        _start_tracing(target, trace_all, include, exclude, own,
                       _command_codes(own_of[1]) if command else None)
    atexit.register(_run_exit)  # C: ends the session, signals held
    # The no-op scope_profiler for the script's Python subprocesses (shim.c;
    # under subprocesses, the real one): a fork of this process has the
    # module, marked to be counted at the end like those (and, with
    # subprocesses, recording as its own process from the fork on).
    if _shim_offer(subprocesses):
        _os.register_at_fork(after_in_child=_forked_child)
        folder = _os.environ.get("SCOPE_PROFILER_CHILDREN") if subprocesses else None
        if folder:
            _offer_children(folder, {"trace_all": bool(trace_all), "include": tuple(include),
                                     "exclude": tuple(exclude), "own": tuple(own)} if trace else None)
    # SIGTERM (a batch system's time limit), SIGHUP, SIGXCPU, SIGUSR1/2,
    # SIGALRM, SIGVTALRM, SIGPROF (signal.alarm() with no handler)
    # write the profile, then end the run with status 128 + signal, running
    # no more of the script (a script may still install its own handler);
    # os.exec* writes it first; signals Python's shutdown swallows are
    # noted (exitphase.c).
    _run_watch(_os)


# run --subprocesses --recursive: the shim folder's sitecustomize, so that a
# Python child is profiled from its start, whether it imports scope_profiler
# or not (the shim then loads the run's module: _child_begin).
_SITECUSTOMIZE = '''"""scope-profiler run --subprocesses --recursive: this Python process, a child
of the run, is profiled from its start (the run's folder, first on
PYTHONPATH, holds this file and its scope_profiler). Then the sitecustomize
this file hides, the next on sys.path, runs as it would have; where there
is none, the import of this one fails as it would have, silently."""
import sys


def _hidden():
    import os

    # Only the run's Python (another one cannot load its module), and not
    # multiprocessing's resource tracker: it lives to the run's end and
    # runs none of the program's code. (No f-strings: any Python reads it.)
    tracker = @TRACKER@
    impl = getattr(sys, "implementation", None)
    try:
        if getattr(impl, "cache_tag", None) == @TAG@ and \\
                not any(tracker in a for a in getattr(sys, "orig_argv", ())):
            import scope_profiler  # noqa: F401
    except Exception as exc:  # never the child's failure: it runs unprofiled
        sys.stderr.write("scope-profiler: warning: child process %d is not profiled: %s\\n"
                         % (os.getpid(), exc))
    try:
        from importlib.machinery import PathFinder
        from importlib.util import module_from_spec
    except ImportError:
        return None
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    spec = PathFinder.find_spec(__name__, [p for p in sys.path
                                           if os.path.realpath(p or os.curdir) != here])
    if spec is None or spec.loader is None:
        return None
    mod = module_from_spec(spec)
    sys.modules[__name__] = mod
    spec.loader.exec_module(mod)
    return mod


if _hidden() is None:
    _none = ImportError("No module named 'sitecustomize'")
    _none.name = __name__   # site.py then goes on silently
    raise _none
'''


def _offer_children(folder, tracing):
    """run --subprocesses: what a spawned child takes from the run (the
    settings its command line gave, --recursive's), in the shim folder
    (marshal: no module that plain python has not loaded); with --recursive
    a sitecustomize there too. A child that cannot have them runs on the
    defaults, said here."""
    import marshal

    try:
        with open(_os.path.join(folder, "run-settings"), "wb") as f:
            f.write(marshal.dumps({"given": _run_given(), "trace": tracing}))
        if tracing:
            with open(_os.path.join(folder, "sitecustomize.py"), "w", encoding="ascii") as f:
                f.write(_SITECUSTOMIZE.replace("@TRACKER@", repr(_MP_HELPER.format("resource_tracker")))
                        .replace("@TAG@", repr(_sys.implementation.cache_tag)))
    except OSError as e:
        _sys.stderr.write(f"scope-profiler: run: warning: --subprocesses: cannot pass the run's "
                          f"settings to its spawned children ({e.strerror or e}): they run on the "
                          f"defaults\n")


def _run_settings(folder):
    """What the run passed on to its spawned children (_offer_children), or
    None (then the defaults)."""
    import marshal

    try:
        with open(_os.path.join(folder, "run-settings"), "rb") as f:
            return marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None


def _forked_child():
    """In a forked child of a recording process: its mark in the shim
    folder (shim.c), and under run --subprocesses its own session from the
    fork on (session.c)."""
    _exit_signals_default()   # as under plain python (exitphase.c)
    _child_session()
    # Marked once its handlers are in place: a child ended before them had
    # recorded nothing (a Pool may end a worker as soon as it is forked).
    if _session_is_child():
        _child_signals()      # SIGTERM (a Pool's end): written, then ended by it (exitphase.c)
        _shim_mark()
    else:
        _shim_mark_when_used(bool(_registry))   # not one that never could record (shim.c)


_MP_HELPER = "from multiprocessing.{} import main"   # how multiprocessing starts its helpers


def _in_fork_server():
    """Whether this import runs inside multiprocessing's fork server (its
    main() preloading __main__, or the run's sitecustomize before it), not
    in one of its forks, a worker, which imports __main__ under main()'s
    _serve_one() when the server did not."""
    f = _sys._getframe(1)
    server = False
    while f is not None:
        code = f.f_code
        if code.co_filename.endswith("multiprocessing/forkserver.py"):
            if code.co_name == "_serve_one":
                return False
            server = server or code.co_name == "main"
        f = f.f_back
    return server or _mp_helper("forkserver")


def _mp_helper(name):
    """Whether this process is multiprocessing's helper process name
    (forkserver, resource_tracker): python -c started with its main()."""
    return any(_MP_HELPER.format(name) in a for a in getattr(_sys, "orig_argv", ()))


def _child_program(argv):
    """What a python command line (sys.orig_argv) runs: ("command", code),
    ("module", name), ("script", path; "-" for standard input), or None
    (an interactive one)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--" or a == "-" or not a.startswith("-"):
            a = argv[i + 1] if a == "--" and i + 1 < len(argv) else a
            return ("script", a) if a != "--" else None
        if a.startswith("--"):
            i += 2 if a == "--check-hash-based-pycs" else 1
            continue
        for k, flag in enumerate(a[1:], 1):
            if flag in "cmWX":
                arg = a[k + 1:] or (argv[i + 1] if i + 1 < len(argv) else None)
                if flag in "cm":
                    return ("command" if flag == "c" else "module", arg) if arg is not None else None
                i += 0 if a[k + 1:] else 1
                break
        i += 1
    return None


def _child_own(own):
    """--recursive in a spawned child: its own program (its command line)
    is the user's code too, beside the run's: the folder of the script it
    runs, the package of -m, -c's code objects; multiprocessing's own -c
    (its spawn bootstrap) is none. Returns (own, codes)."""
    program = _child_program(list(getattr(_sys, "orig_argv", ())))
    if program is None:
        return own, None
    kind, what = program
    if kind == "command":
        return own, (None if what.startswith("from multiprocessing.") else _command_codes(what))
    return own + tuple(p for p in _own_prefixes(kind, what) if p not in own), None


def _child_begin(folder):
    """A spawned child of run --subprocesses (the shim loaded this module):
    a session of its own on the run's settings, written at its exit (also
    os._exit) as proc-PID.h5 in folder; with --recursive, every function
    from its main module on; os.exec*, os._exit and its forks handled as the
    run's, SIGTERM and the like write it and end it (exitphase.c). Returns
    "server" in multiprocessing's fork server, else "child"."""
    run = _run_settings(folder)
    _child_setup(folder, run["given"] if run else None)
    _run_watch(_os, False)   # no SystemExit at SIGTERM: a Pool terminates its workers so
    _os.register_at_fork(after_in_child=_forked_child)
    tracing = run and run["trace"]
    if tracing:
        # --recursive: from this process's main module on (its forks go on
        # with it, session.c); never the shim folder's code.
        _child_tracing(tracing["trace_all"])
        shim = {p.rstrip("/") + "/" for p in (folder, _os.path.realpath(folder))}
        own, codes = tuple(tracing["own"]), None
        if not tracing["trace_all"]:
            own, codes = _child_own(own)
        _trace_hooks(tracing["trace_all"], tracing["include"], tracing["exclude"], own, codes,
                     foreign=tuple(sorted(shim)))
    if _in_fork_server():
        # multiprocessing's fork server (3.14 loads __main__ there): it lives
        # until the run ends and runs no task; its forks, the workers, are
        # the children. Not counted as one that wrote nothing.
        return "server"
    _child_signals()
    return "child"


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



def _patterns(spec):
    return [] if spec is None else [spec] if isinstance(spec, str) else list(spec)


def _warn_earlier_patterns(names, include, exclude):
    """The original package searched include/exclude as Python regular
    expressions; here they are the commands' globs. A plain pattern that
    selects nothing as a glob but would as a search ("sol", "^solve$") says
    so in one warning instead of silently selecting less."""
    for what, spec in (("include", include), ("exclude", exclude)):
        for pat in _patterns(spec):
            if not isinstance(pat, str) or pat.startswith("re:") or \
                    _select_names(names, pat, None):
                continue
            try:
                hits = len(_select_names(names, "re:" + pat, None))
            except ValueError:
                continue
            if hits:
                import warnings
                warnings.warn(f"scope_profiler: {what} pattern {pat!r} is a glob matched against the "
                              f"whole region name (as every command's --{what}) and matches no "
                              f"region; 're:{pat}' would match {hits}", stacklevel=4)

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
        # total_duration is the plain sum of every call; the cumulative time
        # counts a recursive region once (as cProfile's cumtime: a call
        # nested in a call of the same region adds nothing); the self time
        # is the total less the calls nested directly in it (cProfile's
        # tottime). Both from the call tree; None when not known.
        cum_ns = raw.get("cumulative_ns")
        self.cumulative_duration_ns = cum_ns
        self.cumulative_duration = None if cum_ns is None else cum_ns / _NS
        # Aggregation mode keeps no per-call events: empty columns.
        self.aggregate = bool(raw.get("aggregate"))
        self_ns = raw.get("self_ns")
        self.self_duration_ns = self_ns
        self.self_duration = None if self_ns is None else self_ns / _NS
        empty = bytearray() if self.aggregate else None
        self.start_times_ns = _column(raw["starts"] if raw["starts"] is not None else empty)
        self.end_times_ns = _column(raw["ends"] if raw["ends"] is not None else empty)
        self.lanes = _column(raw.get("lanes"), "i")  # None unless the rank has lanes
        # run --memory: bytes allocated during each call (nested calls
        # included); run --mpi-calls: bytes each MPI call moved. None when
        # the file has none (or, read with read_h5_summary, events not loaded).
        self.alloc_bytes = _column(raw.get("alloc_bytes"))
        self.bytes = _column(raw.get("bytes"))
        # Their sum, known without the events; the peak of live bytes while
        # the region was open (run --memory), None when not known.
        self.values_total = raw.get("values_total")
        self.peak_live_bytes = raw.get("peak_live_bytes")
        # run --gpu: the time the calls' exits waited for the device (ns,
        # inside their durations); None when the run did not synchronise.
        self.gpu_wait_ns = raw.get("gpu_wait_ns")
        self.gpu_wait = None if self.gpu_wait_ns is None else self.gpu_wait_ns / _NS
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

    # The earlier releases' names (scope_profiler.h5reader's Region).
    @property
    def average_duration(self):
        return self.mean_duration

    @property
    def start_times(self):
        """Each call's start, in seconds on the perf_counter clock."""
        return _seconds(self.start_times_ns)

    @property
    def end_times(self):
        return _seconds(self.end_times_ns)

    @property
    def first_start_time(self):
        """The first call's start in seconds (0.0 without calls)."""
        return self.first_start_ns / _NS if self.num_calls else 0.0

    def get_summary(self):
        """{num_calls, total_duration, average_duration, min_duration,
        max_duration, std_duration}, in seconds."""
        return {"num_calls": self.num_calls, "total_duration": self.total_duration,
                "average_duration": self.mean_duration, "min_duration": self.min_duration,
                "max_duration": self.max_duration, "std_duration": self.std_duration}

    def __repr__(self):
        return f"<Region {self.name!r} rank {self.rank}: {self.num_calls} calls, {self.total_duration:.6f} s>"


def _seconds(column):
    """An int64 ns column in seconds (numpy float64, else a list)."""
    if column is None:
        return None
    if _numpy() is not None:
        return column / _NS
    return [x / _NS for x in column]


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
    def cumulative_duration(self):
        """The total over ranks counting a recursive region once (seconds);
        None when some rank's is not known."""
        parts = [r.cumulative_duration_ns for r in self._per_rank.values()]
        return None if None in parts else sum(parts) / _NS

    @property
    def self_duration(self):
        """The self time summed over ranks (seconds); None when not known."""
        parts = [r.self_duration_ns for r in self._per_rank.values()]
        return None if None in parts else sum(parts) / _NS

    @property
    def gpu_wait(self):
        """run --gpu: the device waits summed over ranks (seconds); None
        when no rank synchronised."""
        parts = [r.gpu_wait_ns for r in self._per_rank.values() if r.gpu_wait_ns is not None]
        return sum(parts) / _NS if parts else None

    @property
    def first_start_ns(self):
        return min(r.first_start_ns for r in self._per_rank.values() if r.num_calls)

    def total_durations(self):
        """Each rank's total time in this region, in seconds: {rank: s}."""
        return {rank: r.total_duration for rank, r in sorted(self._per_rank.items())}

    # The earlier releases' names (scope_profiler.h5reader's MPIRegion).
    @property
    def regions(self):
        """{rank: Region}, in rank order."""
        return dict(sorted(self._per_rank.items()))

    def average_durations(self):
        return {rank: r.mean_duration for rank, r in sorted(self._per_rank.items())}

    def min_durations(self):
        return {rank: r.min_duration for rank, r in sorted(self._per_rank.items())}

    def max_durations(self):
        return {rank: r.max_duration for rank, r in sorted(self._per_rank.items())}

    @property
    def min_duration(self):
        """The shortest call over the ranks that recorded any, in seconds."""
        return min((r.min_duration for r in self._per_rank.values() if r.num_calls), default=0.0)

    @property
    def max_duration(self):
        return max((r.max_duration for r in self._per_rank.values() if r.num_calls), default=0.0)

    @property
    def first_start_time(self):
        """The earliest call's start over the ranks, in seconds."""
        return min((r.first_start_time for r in self._per_rank.values() if r.num_calls),
                   default=0.0)

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


def _rank_list(ranks):
    """ranks as the read API takes them: None (all), an int, or ints; a
    str or anything else is a TypeError (ranks="0" selected none)."""
    if ranks is None:
        return None
    import operator

    def one(r):
        if isinstance(r, (bool, str, bytes)):
            raise TypeError(f"ranks: an int or a list of ints, not {r!r}")
        try:
            return operator.index(r)
        except TypeError:
            raise TypeError(f"ranks: an int or a list of ints, not {r!r}") from None

    if isinstance(ranks, (str, bytes)) or not hasattr(ranks, "__iter__"):
        return [one(ranks)]
    return [one(r) for r in ranks]


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

    def get_regions(self, include=None, exclude=None):
        """The regions (MPIRegion), in order of first entry; include/exclude
        select them by name as events() does."""
        names = self._per_region if include is None and exclude is None \
            else self._select(include, exclude)
        return [MPIRegion(n, self._per_region[n], self) for n in names]

    def get_region(self, name):
        """results.get_region(name) is results[name]; KeyError if none."""
        return self[name]

    @property
    def region_names(self):
        return list(self._per_region)

    def likwid(self, name, rank=None):
        """LIKWID's counters of region `name` (run --likwid) on `rank` (by
        default the lowest rank that has them), as a dict: "event_names"
        (list of str; empty when unknown), "events" (numpy float64, one row
        per thread that ran the region, one column per event), "count"
        (numpy int64, calls per thread), "time" (numpy float64, seconds
        per thread), and LIKWID's derived metrics of its group when it
        computed them (under likwid-perfctr -m): "metric_names" (list of
        str) and "metrics" (numpy float64, one row per thread in LIKWID's
        thread order, one column per metric; NaN where LIKWID gave no
        value; shape (0, 0) when there are none). A metrics row is not the
        events row of the same index: LIKWID orders and counts its threads
        its own way. KeyError when no such
        rank has counters for it."""
        import numpy

        for r in self._ranks:
            if (rank is None or r["rank"] == rank) and name in r["likwid"]:
                events, count, time, metrics = r["likwid"][name]
                names = self.metadata.get("likwid_event_names", "")
                mnames = self.metadata.get("likwid_metric_names", "")
                return {"event_names": [n for n in names.split(",") if n],
                        "events": numpy.array(events, dtype=numpy.float64),
                        "count": numpy.array(count, dtype=numpy.int64),
                        "time": numpy.array(time, dtype=numpy.float64),
                        "metric_names": mnames.split("\n") if metrics and mnames else [],
                        "metrics": numpy.array(metrics, dtype=numpy.float64).reshape(
                            len(metrics), len(metrics[0]) if metrics else 0)}
        raise KeyError(f"no LIKWID counters for region {name!r}" +
                       ("" if rank is None else f" on rank {rank}"))

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
        if isinstance(rank, (bool, str, bytes)) or not hasattr(type(rank), "__index__"):
            raise TypeError(f"call_stack: rank is an int, not {rank!r}")
        rank = rank.__index__()
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
        rank_set = None if ranks is None else set(_rank_list(ranks))
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
        # The dialect of every command (sp_select.h), decided in C.
        names = list(self._per_region)
        chosen = _select_names(names, include, exclude)
        _warn_earlier_patterns(names, include, exclude)
        return chosen

    def events(self, include=None, exclude=None, ranks=None, relative=True, origin=None):
        """One dict per recorded call, in region order, then rank, then call
        order: name, rank, call_index, start, end, duration (s), call_id and
        parent_id (indices in call_stack(rank)). include/exclude: patterns (or
        lists of them) on region names, as every command takes them: a glob
        matched against the whole name ("solve", "solve*"), or re:EXPR, a
        POSIX extended regular expression searched anywhere in it (ValueError
        when it does not compile); ranks: an int or a list; relative=False
        gives absolute clock times; origin (s) overrides time_origin."""
        return self._events(self._select(include, exclude), ranks, relative, origin)

    def to_events_dataframe(self, include=None, exclude=None, ranks=None, relative=True,
                            origin=None):
        """events() as a pandas DataFrame: name, rank, call_index, start, end,
        duration (and lane, when the rank has lanes)."""
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


class ProfilingH5Reader(ProfilingResults):
    """The earlier releases' reader: ``ProfilingH5Reader(path)`` is
    read_h5(path), with its get_region(name), get_regions(include,
    exclude), num_ranks, file_path and the per-region statistics.
    FileNotFoundError when there is no such file."""

    def __init__(self, file_path, verbose=False):
        data, summary = _read(_os.fspath(file_path), True, False)
        super().__init__(data, file_path, summary)
        if verbose:
            _sys.stdout.write(f"{self!r}\n")


def _submodule(short):
    """scope_profiler.h5reader or scope_profiler.region_profiler, the
    earlier releases' modules, made from this one (a new module object), so
    `from scope_profiler.h5reader import ProfilingH5Reader` works in the
    built-in module and in the extension module alike. They are made on
    their first import only (_Submodules below), so a run adds nothing to
    sys.modules before the script but scope_profiler itself."""
    import types

    # the base of every region class, for isinstance checks of any mode
    base = TimeOnlyProfileRegion.__base__
    names = {
        "h5reader": {"ProfilingH5Reader": ProfilingH5Reader, "ProfilingResults": ProfilingResults,
                     "MPIRegion": MPIRegion, "Region": Region, "read_h5": read_h5},
        # The earlier region classes, as aliases of the ones each mode uses
        # now: time_trace=False counted calls only (aggregation mode here);
        # the "Full" ones were LIKWID marker regions with timing.
        "region_profiler": {
            "BaseProfileRegion": base, "DisabledProfileRegion": DisabledProfileRegion,
            "TimeOnlyProfileRegion": TimeOnlyProfileRegion,
            "TimeOnlyProfileRegionNoFlush": TimeOnlyProfileRegion,
            "NCallsOnlyProfileRegion": AggregateProfileRegion,
            "AggregateProfileRegion": AggregateProfileRegion,
            "FullProfileRegion": LikwidProfileRegion,
            "FullProfileRegionNoFlush": LikwidProfileRegion,
            "LikwidOnlyProfileRegion": LikwidProfileRegion,
            "LineProfilerRegion": LineProfileRegion,
            "ThreadedProfileRegion": ThreadsProfileRegion,
            "ThreadsProfileRegion": ThreadsProfileRegion,
            "AsyncProfileRegion": AsyncProfileRegion,
        },
    }[short]
    full = f"{__name__}.{short}"
    mod = types.ModuleType(full, f"{full}: the earlier releases' names, as aliases of "
                                 f"{__name__}'s own.")
    mod.__dict__.update(names)
    mod.__all__ = sorted(names)
    return mod


_SUBMODULES = ("h5reader", "region_profiler", "_charts")
# Submodules frozen from Python sources of their own (frozen.c): the IPython
# magics, the original package's plot functions and its post-processing
# command line.
_FROZEN = ("ipython_magics", "plotting_scripts", "post_processing")
# The read API's matplotlib charts: scope_profiler._charts, frozen beside
# this layer (charts.c) and run on the first use of one of them.
_CHARTS = ("plot_gantt", "plot_flame", "plot_durations", "plot_speedup")
# A package to the import system (no folder: its submodules are made by
# _Submodules, last in sys.meta_path, when first imported).
__path__ = []


class _Submodules:
    """Finder and loader of the earlier submodules and of the charts."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        parent, _, short = name.rpartition(".")
        if parent != __name__:
            return None
        if short in _SUBMODULES or short in _FROZEN:
            return _sys.modules["_frozen_importlib"].ModuleSpec(name, _Submodules)
        # Installed (make install, pip) as the package scope_profiler/ whose
        # __init__<EXT_SUFFIX> is this module: the folder's own modules too
        # (__main__.py, for python -m scope_profiler). Its __file__ is set
        # only after this code ran, hence here and not at __path__ above.
        file = globals().get("__file__") or ""
        if not _os.path.basename(file).startswith("__init__."):
            return None
        folder = _os.path.dirname(file)
        if folder not in __path__:
            __path__.append(folder)
        return _sys.modules["_frozen_importlib_external"].PathFinder.find_spec(name, __path__, target)

    @staticmethod
    def create_module(spec):
        short = spec.name.rpartition(".")[2]
        return None if short == "_charts" or short in _FROZEN else _submodule(short)

    @staticmethod
    def exec_module(module):
        short = module.__name__.rpartition(".")[2]
        if short == "_charts":
            exec(_charts_code(), module.__dict__)
        elif short in _FROZEN:
            exec(_frozen_code(short), module.__dict__)
        globals()[short] = module

    @staticmethod
    def invalidate_caches():
        pass


_sys.meta_path.append(_Submodules)


def __getattr__(name):
    """scope_profiler.h5reader without importing it first, as the earlier
    package allowed; plot_gantt and the other charts, from the charts'
    module, loaded now."""
    if name in _SUBMODULES or name in _FROZEN or name in _CHARTS:
        short = name if name in _SUBMODULES or name in _FROZEN else "_charts"
        __import__(f"{__name__}.{short}")
        module = _sys.modules[f"{__name__}.{short}"]
        return module if name == short else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_CHARTS))


def load_ipython_extension(ipython):
    """`%load_ext scope_profiler`: the magics %scope_profiler and
    %%scope_profiler (scope_profiler.ipython_magics, imported now)."""
    from scope_profiler.ipython_magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    """`%unload_ext scope_profiler`."""
    from scope_profiler.ipython_magics import unload_ipython_extension as unload

    unload(ipython)


def read_h5_summary(path):
    """Read a profile's per-region summaries only: cost independent of events."""
    data, summary = _read(_os.fspath(path), False, False)
    return ProfilingResults(data, path, summary)
