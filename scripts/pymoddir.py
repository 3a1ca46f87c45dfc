"""Where `make install` puts the Python module, for the Python it runs.

  pymoddir.py PREFIX   prints the folder: the user site-packages
                       (site.getusersitepackages()) when PREFIX is the user
                       base (python -m site --user-base: ~/.local), else
                       PREFIX/lib/python3.X/dist-packages where that Python
                       is Debian's (on its sys.path for /usr/local),
                       PREFIX/lib/python3.X/site-packages elsewhere.
  pymoddir.py --check DIR
                       prints one line when DIR is not on that Python's
                       sys.path: the PYTHONPATH setting that puts it there.
"""
import os
import site
import sys
import sysconfig


def folder(prefix):
    prefix = os.path.expanduser(prefix)
    if os.path.realpath(prefix) == os.path.realpath(site.getuserbase()):
        return site.getusersitepackages()
    kind = "dist-packages" if sysconfig.get_path("platlib").rstrip("/").endswith("dist-packages") \
        else "site-packages"
    return "%s/lib/python%d.%d/%s" % (prefix.rstrip("/") or "", *sys.version_info[:2], kind)


def check(path):
    # sys.path[0] is this script's folder, not the path of a Python started
    # to run the user's code.
    on_path = {os.path.realpath(p) for p in sys.path[1:] if p}
    if os.path.realpath(path) not in on_path:
        print(f"make install: {path} is not on {sys.executable}'s sys.path; to import "
              f"scope_profiler there: export PYTHONPATH={path}${{PYTHONPATH:+:$PYTHONPATH}}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    elif len(sys.argv) == 2:
        print(folder(sys.argv[1]))
    else:
        sys.exit(f"usage: {sys.argv[0]} PREFIX | --check DIR")
