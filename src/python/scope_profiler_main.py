"""`python -m scope_profiler ARGS`: the scope-profiler executable installed
with this package, run as `scope-profiler ARGS` (this process becomes it:
the same output, exit status and signals).

Installed (by pip or `make install`) as scope_profiler/__main__.py beside
the extension module scope_profiler/__init__<EXT_SUFFIX>, in
PREFIX/lib/python3.X/site-packages (or dist-packages), with the executable
in PREFIX/bin: a venv, ~/.local, /usr/local. When it is in neither that
bin/ nor sys.executable's, one line says so and the exit status is 127, as
a shell's for a command not found.
"""
import os
import sys


def executable():
    """The installed scope-profiler, or None; and the places looked at."""
    package = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.normpath(os.path.join(package, "..", "..", "..", "..", "bin")),
              os.path.dirname(os.path.abspath(sys.executable))]
    for folder in places:
        path = os.path.join(folder, "scope-profiler")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, places
    return None, places


def main():
    path, places = executable()
    if path is None:
        sys.stderr.write("scope-profiler: python -m scope_profiler: the scope-profiler executable "
                         f"is in neither {places[0]} nor {places[1]}; install it with "
                         "`pip install` or `make install`\n")
        sys.exit(127)
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
