"""scope_profiler.ipython_magics: the IPython magics (`%load_ext scope_profiler`).

    %%scope_profiler [--recursive] [--line-profile] [-o FILE]
    %scope_profiler [--recursive] [--line-profile] [-o FILE] STATEMENT

profile one cell (or one statement) as `scope-profiler run` profiles a
script: the cell is one region (named "<cell>", or "<statement>"), the
explicit regions it enters are recorded under it, --recursive records every
function it calls (its own code; not the standard library's nor installed
packages'), --line-profile the hits and time of each of the cell's lines.
The summary is printed after the cell; in a notebook (a front end that
shows HTML) an HTML view of the same summary is displayed too. -o writes
the profile to FILE (HDF5, for `scope-profiler summary`, `plot`, read_h5);
without it nothing is written.

Frozen into the module (frozen.c) and run on `%load_ext scope_profiler`,
which calls scope_profiler.load_ipython_extension: IPython is imported then,
never when scope_profiler is.
"""

import html as _html
import io as _io
import os as _os
import types as _types

import scope_profiler as _sp


def _parse(line):
    """(recursive, line_profile, outfile, rest of the line) from the magic's
    line; UsageError for an unknown option or a missing FILE."""
    from IPython.core.error import UsageError

    words = line.split()
    recursive = line_profile = False
    outfile = None
    i = 0
    while i < len(words) and words[i].startswith("-"):
        w = words[i]
        if w == "--":
            i += 1
            break
        if w == "--recursive":
            recursive = True
        elif w in ("--line-profile", "--line_profile"):
            line_profile = True
        elif w in ("-o", "--outfile"):
            if i + 1 >= len(words):
                raise UsageError(f"%scope_profiler: {w} needs a FILE")
            i += 1
            outfile = words[i]
        elif w.startswith("--outfile="):
            outfile = w.split("=", 1)[1]
        elif w.startswith("-o") and len(w) > 2:
            outfile = w[2:]
        else:
            raise UsageError(f"%scope_profiler: unknown option {w!r} "
                             "(--recursive, --line-profile, -o FILE)")
        i += 1
    # The statement of the line magic: the line after the options, verbatim.
    rest = line
    for w in words[:i]:
        rest = rest.split(w, 1)[1]
    return recursive, line_profile, outfile, rest.strip()


def _profile_code(shell, source, name, recursive, line_profile, outfile):
    """Runs source (IPython's transforms applied) in the user's namespace as
    the region `name` of a session of its own; returns its results (None
    when the cell ended the session itself) and the file it was written to
    (None: none)."""
    from IPython.core.error import UsageError

    if _sp._session_active():
        raise UsageError("%scope_profiler: a profiling session is open (setup() without "
                         "finalize()); finalize it first")
    source = shell.transform_cell(source)
    try:
        filename = shell.compile.cache(source)
    except (AttributeError, TypeError):   # an IPython without the cache: no source lines
        filename = f"<{name}>"
    code = shell.compile(source, filename, "exec")
    # A function of the cell's own code object (module code: it runs with
    # the namespace as its locals, as exec would), so that the cell is a
    # function the decorator can time and the line profiler can choose.
    cell = _types.FunctionType(code, shell.user_ns, name)
    options = {"verbose": False, "use_line_profiler": line_profile}
    if outfile is not None:
        options["file_path"] = outfile
    else:
        options["deactivate_file_output"] = True
    _sp.setup(**options)
    where = None
    try:
        _sp.profile(name, recursive=True if recursive else None)(cell)()
    except Exception:
        # The cell's error as IPython shows one; its profile up to there.
        shell.showtraceback()
    finally:
        # Where the session writes now (a setup() of the cell's own may
        # have changed it); the cell may have ended it itself (finalize()).
        results = None
        if _sp._session_active():
            now = _sp._settings()
            if not (now["deactivate_file_output"] or now["deactivate_profiling"]):
                where = _sp._file_path()
                if outfile is not None and _os.path.abspath(outfile) == where:
                    where = outfile   # as the user wrote it
            # _at_exit: the magic's end, not the user's finalize(): the
            # decorated functions called later run as before the cell,
            # without the "used after finalize()" warning. The line tables
            # where lines were timed (also by the cell's own setup()).
            results = _sp.finalize(verbose=False, verbose_line_profiler=bool(now["use_line_profiler"]),
                                   return_results=True, _at_exit=True)
    return results, where


def _show(shell, results, outfile):
    """The summary on stdout; an HTML view too where the front end shows
    HTML (a notebook: the display formatter has text/html active). outfile:
    where the profile was written, or None."""
    if results is None:
        print("scope-profiler: the cell ended the profiling session itself (finalize()): "
              "what that call printed and wrote is its profile")
        return
    text = _io.StringIO()
    results.print_summary(file=text)
    print(text.getvalue(), end="")
    if outfile is not None:
        print(f"scope-profiler: profile written to {outfile}")
    formatter = getattr(shell, "display_formatter", None)
    active = getattr(formatter, "active_types", None) or []
    if "text/html" in active and type(shell).__name__ != "TerminalInteractiveShell":
        from IPython.display import HTML, display

        display(HTML(_html_view(text.getvalue(), outfile)))


def _html_view(summary, outfile):
    """The summary as HTML: the same text in a <pre>, so that box drawing
    and columns keep their alignment, and where the profile went."""
    where = (f"<p>Profile: <code>{_html.escape(outfile)}</code> "
             f"(<code>scope-profiler plot {_html.escape(outfile)} -o DIR</code> draws its charts)</p>"
             if outfile is not None else "")
    return ('<div class="scope-profiler"><pre style="line-height:1.2">'
            f"{_html.escape(summary)}</pre>{where}</div>")


def _magics_class():
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class ScopeProfilerMagics(Magics):
        @line_cell_magic
        def scope_profiler(self, line, cell=None):
            """Profile a cell (%%scope_profiler) or one statement (%scope_profiler):
            [--recursive] [--line-profile] [-o FILE]; see scope_profiler.ipython_magics."""
            from IPython.core.error import UsageError

            recursive, line_profile, outfile, statement = _parse(line)
            if cell is None:
                if not statement:
                    raise UsageError("%scope_profiler: give a statement to profile, or use "
                                     "%%scope_profiler for a whole cell")
                source, name = statement, "<statement>"
            else:
                if statement:
                    raise UsageError(f"%%scope_profiler: unexpected {statement!r} after the options")
                source, name = cell, "<cell>"
            results, written = _profile_code(self.shell, source, name, recursive, line_profile, outfile)
            _show(self.shell, results, written)

    return ScopeProfilerMagics


def load_ipython_extension(ipython):
    """%load_ext scope_profiler: registers %scope_profiler and %%scope_profiler."""
    ipython.register_magics(_magics_class())


def unload_ipython_extension(ipython):
    """%unload_ext scope_profiler: nothing to undo beyond IPython's own."""
