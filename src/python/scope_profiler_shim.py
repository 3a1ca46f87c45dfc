"""A no-op `scope_profiler` for the Python subprocesses of a profiled run.

`scope-profiler run` puts this module on PYTHONPATH for the processes the
script starts with sys.executable (multiprocessing's spawn and forkserver
children, subprocess.run([sys.executable, ...])), so that a script that
imports scope_profiler also imports there. Nothing is recorded in those
processes: decorators return the function itself, regions do nothing. A
scope_profiler the process finds further along sys.path (installed in its
venv, on the user's PYTHONPATH) is imported in its place, as under plain
python; so is it in a Python of another version than the run's.
Each process that imports it (and each fork of such a process) leaves a
mark in this module's folder, so that the run can say at its end how many
processes imported scope_profiler without being profiled.
"""

__version__ = "@VERSION@"


def _command_line():
    """`python -m scope_profiler ARGS` in a child of the run: the command
    line of the scope_profiler installed further along sys.path (its
    __main__ runs the scope-profiler executable), as under plain python;
    without one, python's own words for a module it cannot find."""
    import os
    import runpy
    import sys
    from importlib.machinery import PathFinder

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    if PathFinder.find_spec("scope_profiler", rest) is None:
        sys.stderr.write("%s: No module named scope_profiler\n" % sys.executable)
        sys.exit(1)
    sys.path[:] = rest
    runpy.run_module("scope_profiler", run_name="__main__", alter_sys=True)
    sys.exit(0)


if __name__ == "__main__":
    _command_line()

__all__ = ["ProfileManager", "profile", "region", "profile_region", "setup", "finalize"]


class DisabledProfileRegion:
    num_calls = 0
    capacity = 0

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        return func

    def get_durations_numpy(self):
        import numpy

        return numpy.zeros(0, dtype=numpy.int64)


def region(name=None, functions=None, region_name=None):
    return DisabledProfileRegion(name if name is not None else region_name)


profile_region = region
get_region = region


def profile(name=None, recursive=None, region_name=None):
    if callable(name) and not isinstance(name, str):
        return name
    return lambda func: func


def setup(**options):
    return None


def finalize(verbose=None, return_results=False, verbose_line_profiler=None):
    return None


def get_all_regions():
    return {}


class session:
    def __init__(self, **options):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class ProfileManager:
    setup = staticmethod(setup)
    finalize = staticmethod(finalize)
    session = session
    region = staticmethod(region)
    profile_region = staticmethod(region)
    profile = staticmethod(profile)
    get_region = staticmethod(region)
    get_all_regions = staticmethod(get_all_regions)


def _region_profiler():
    """scope_profiler.region_profiler: the earlier region class names."""
    import sys
    import types

    mod = types.ModuleType(__name__ + ".region_profiler")
    for name in ("BaseProfileRegion", "DisabledProfileRegion", "TimeOnlyProfileRegion",
                 "TimeOnlyProfileRegionNoFlush", "NCallsOnlyProfileRegion", "FullProfileRegion",
                 "FullProfileRegionNoFlush", "LikwidOnlyProfileRegion", "LineProfilerRegion",
                 "ThreadedProfileRegion"):
        setattr(mod, name, DisabledProfileRegion)
    sys.modules[mod.__name__] = mod
    return mod


region_profiler = _region_profiler()


def _mark_process():
    import os

    try:
        folder = os.path.dirname(os.path.abspath(__file__))
        os.close(os.open(os.path.join(folder, "child-%d" % os.getpid()), os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass  # the run has ended: nobody counts any more


def _profiled():
    """Under run --subprocesses: the real module (the extension module the
    run names) in place of this one, recording from now on: "child", or
    "server" in multiprocessing's fork server (which runs no task: its
    forks, the workers, are the children); else None."""
    import os
    import sys

    path = os.environ.get("SCOPE_PROFILER_MODULE")
    folder = os.environ.get("SCOPE_PROFILER_CHILDREN")
    if not path or not folder or os.path.dirname(os.path.abspath(__file__)) != folder:
        return None
    me = sys.modules.get(__name__)
    try:
        from importlib.machinery import ExtensionFileLoader
        from importlib.util import module_from_spec, spec_from_file_location

        loader = ExtensionFileLoader(__name__, path)
        mod = module_from_spec(spec_from_file_location(__name__, path, loader=loader))
        sys.modules[__name__] = mod   # what `import scope_profiler` gives from now on
        loader.exec_module(mod)
        return mod._child_begin(folder)
    except Exception as exc:  # never the child's failure: it runs unprofiled
        if me is not None:
            sys.modules[__name__] = me
        sys.stderr.write("scope-profiler: warning: child process %d is not profiled: %s\n" % (os.getpid(), exc))
        return None


def _installed():
    """Where the process would have found a scope_profiler of its own under
    plain python (further along sys.path: the package installed in its
    venv, the user's PYTHONPATH), that one in place of this one, as
    `import scope_profiler` gives it from now on; else None (this one)."""
    import os
    import sys
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = PathFinder.find_spec(__name__, rest)
    if spec is None or spec.loader is None:
        return None
    me = sys.modules.get(__name__)
    mod = module_from_spec(spec)
    sys.modules[__name__] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules[__name__] = me   # as plain python would, the import fails
        raise
    return mod


def _other_python():
    """A Python of another version than the run's (a child the script
    starts with another interpreter) is left as it is: the scope_profiler
    it has further along sys.path, else python's ModuleNotFoundError
    (Python 2's ImportError: this file is Python 2 syntax for that)."""
    import sys

    if sys.version_info[0] < 3:
        _installed_python2()
    elif _installed() is None:
        raise ModuleNotFoundError("No module named %r" % __name__, name=__name__)


def _installed_python2():
    """_installed() for Python 2, whose import machinery is imp's; else its
    ImportError."""
    import imp
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        found = imp.find_module(__name__, rest)
    except ImportError:
        raise ImportError("No module named " + __name__)
    try:
        imp.load_module(__name__, *found)
    finally:
        if found[0]:
            found[0].close()


# Marked once its handlers are in place (a child ended before them had
# recorded nothing); the fork server is not a child to count.
if "%d.%d" % __import__("sys").version_info[:2] != "@PYTHON@":
    _other_python()
else:
    _how = _profiled()
    if _how is None:
        _installed()
    if _how != "server":
        _mark_process()
    __import__("os").register_at_fork(after_in_child=_mark_process)
