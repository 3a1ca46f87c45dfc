"""The docs agree with the binary under test: each command's man page has
the SYNOPSIS and OPTIONS that scripts/gen-man-options.py makes from its
--help (a new option without `make man` fails here), every page renders
without warnings, `make install` puts them all where man finds them, and the
README stays short and starts with the two set-up commands."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import BINARY, ROOT, shell_env

COMMANDS = ("run", "summary", "line-profile", "diff", "export", "plot", "recover")
PAGES = ["scope-profiler.1"] + [f"scope-profiler-{c}.1" for c in COMMANDS] \
    + ["scope-profiler-format.5"]
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES",
            "SEE ALSO")


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_man_options", ROOT / "scripts" / "gen-man-options.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def between(text, section):
    lines = text.split("\n")
    b = lines.index(gen.begin_marker(section))
    e = lines.index(gen.end_marker(section), b)
    return lines[b + 1:e]


def render_warnings(page):
    """What groff and man say about a page besides the page itself."""
    if not shutil.which("groff"):
        pytest.skip("groff is not installed (scripts/install-deps.sh adds groff-base)")
    proc = subprocess.run(["groff", "-man", "-ww", "-z", str(page)], capture_output=True,
                          text=True, timeout=60)
    said = proc.stderr.strip()
    assert proc.returncode == 0 and not said, f"{page}: {said}"
    if not shutil.which("man"):
        pytest.skip("man is not installed (scripts/install-deps.sh adds man-db)")
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C")
    proc = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, f"{page}: {proc.stderr}"
    assert not proc.stderr.strip(), f"{page}: {proc.stderr}"
    return re.sub(".\b", "", proc.stdout)      # the page as text, without overstrikes


@pytest.mark.parametrize("command", COMMANDS)
def test_man_options_are_the_binarys(command):
    page = ROOT / "man" / f"scope-profiler-{command}.1"
    text = page.read_text()
    made = gen.generated(BINARY, command)
    for section in gen.SECTIONS:
        assert between(text, section) == made[section], (
            f"{page.name}: {section} differs from `{command} --help`; run `make man`")
    # Every option --help names is in the page, as man shows it.
    shown = render_warnings(page)
    for left, _ in gen.option_rows(gen.help_text(BINARY, command)):
        for name in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", left):
            assert name in shown, f"{command}: {name} not in the rendered page"


def test_generator_check_mode_passes_and_notices_a_stale_page(tmp_path):
    script = ROOT / "scripts" / "gen-man-options.py"
    ok = subprocess.run(["python3", str(script), "--check", "--binary", BINARY],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    stale = tmp_path / "scope-profiler-diff.1"
    text = (ROOT / "man" / "scope-profiler-diff.1").read_text()
    # A page missing an option, as after adding one without `make man`.
    lines = text.split("\n")
    b = lines.index(gen.begin_marker("OPTIONS"))
    del lines[b + 1:b + 4]
    stale.write_text("\n".join(lines))
    proc = subprocess.run(["python3", str(script), "--check", "--binary", BINARY, str(stale)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "make man" in proc.stderr
    fixed = subprocess.run(["python3", str(script), "--binary", BINARY, str(stale)],
                           capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0, fixed.stderr
    assert stale.read_text() == text


def test_generator_reads_wrapped_rows_and_any_option_shape():
    text = ("usage: scope-profiler x [OPTIONS] FILE\n\nAbout.\n\nOptions:\n"
            "  -a, --alpha N     first\n"
            "      --beta        second, whose text\n"
            "                    goes on here\n"
            "  -c                third\n"
            "\nNotes.\n")
    rows = gen.option_rows(text)
    assert rows == [["-a, --alpha N", "first"], ["--beta", "second, whose text goes on here"],
                    ["-c", "third"]]
    assert gen.usage_lines(text) == ["scope-profiler x [OPTIONS] FILE"]
    roff = gen.options(rows)
    assert roff[1] == "\\fB\\-a\\fR, \\fB\\-\\-alpha\\fR \\fIN\\fR"


@pytest.mark.parametrize("name", PAGES)
def test_page_renders_without_warnings(name):
    page = ROOT / "man" / name
    text = page.read_text()
    shown = render_warnings(page)
    assert shown.strip()
    if name.endswith(".1") and name != "scope-profiler.1":
        heads = re.findall(r"^\.SH (.+)$", text, re.M)
        assert heads == list(SECTIONS), f"{name}: sections {heads}"
    for ref in re.findall(r"^\.BR (scope\\-profiler[\w\\-]*) \((\d)\)", text, re.M):
        target = ref[0].replace("\\-", "-") + "." + ref[1]
        assert (ROOT / "man" / target).exists(), f"{name} refers to missing {target}"


def test_overview_lists_every_command():
    overview = (ROOT / "man" / "scope-profiler.1").read_text().replace("\\-", "-")
    listed = subprocess.run([BINARY, "--help"], capture_output=True, text=True).stdout
    commands = re.findall(r"^  ([a-z][a-z-]+)  ", listed, re.M)
    assert sorted(commands) == sorted(COMMANDS)
    for command in commands:
        assert f"scope-profiler-{command} (1)" in overview, command
    for env in ("TMPDIR", "SCOPE_PROFILER_MPI", "SCOPE_PROFILER_MPI_WAIT"):
        assert env in overview
    for section in ("ENVIRONMENT", "EXIT STATUS", "FILES", "SEE ALSO"):
        assert f".SH {section}" in overview


def test_readme_is_short_and_starts_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    lines = readme.split("\n")
    assert len(readme.splitlines()) <= 300
    body = [l for l in lines if l.strip() and not l.startswith("# ")]
    assert body[0] == "```sh", body[:3]
    assert body[1].startswith("make demo ") and body[2].startswith("make check "), body[:3]
    # No option tables: the options live in --help and the man pages.
    assert not re.search(r"^\| *(option|`-)", readme, re.M)
    for command in COMMANDS:
        assert f"## `scope-profiler {command}`" in readme, command
    assert "DESIGN.md" not in readme


def test_make_targets_do_what_the_readme_says():
    makefile = (ROOT / "Makefile").read_text()
    # Each installs its group of scripts/install-deps.sh first (test_setup.py runs them).
    for target, group in (("demo", "build"), ("check", "check")):
        recipe = re.search(rf"^{target}: (.*)$", makefile, re.M)
        assert recipe and f"deps-{group}" in recipe.group(1).split(), target
    assert re.search(r"^deps-build deps-check deps-bench:\n\t.*\./scripts/install-deps\.sh ",
                     makefile, re.M)


def test_no_citation_of_a_missing_design_doc():
    found = subprocess.run(["grep", "-rIl", "DESIGN.md", "src", "include", "tests", "scripts",
                            "Makefile", "man", "examples"],
                           cwd=ROOT, capture_output=True, text=True)
    citing = [f for f in found.stdout.split() if not f.endswith("test_docs.py")]
    assert citing == [] or (ROOT / "DESIGN.md").exists(), citing


def test_license():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the scope-profiler developers" in text


@pytest.mark.same_python
@pytest.mark.parametrize("prefix", ["/usr", "/usr/local"])
def test_install_and_uninstall_into_destdir(tmp_path, prefix):
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    dest = tmp_path / "dest"
    # The binary under test, never rebuilt here (-o: take it as it is).
    # The Python module of the same build folder (the extension module of
    # `make module`), likewise taken as it is.
    build = os.path.dirname(os.path.abspath(BINARY))
    module = os.path.join(build, "scope_profiler" + sysconfig.get_config_var("EXT_SUFFIX"))
    kind = "dist-packages" if sysconfig.get_path("platlib").endswith("dist-packages") else "site-packages"
    top = prefix.lstrip("/")
    site = f"{top}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/{kind}"
    common = ["make", "-s", "-C", str(ROOT), f"DESTDIR={dest}", f"PREFIX={prefix}",
              f"BIN={BINARY}", "-o", BINARY, f"BUILD={build}", f"PYTHON={sys.executable}", "-o", module]
    env = shell_env()
    proc = subprocess.run([*common, "install"], capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""    # a staged install says nothing about PYTHONPATH
    installed = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    expected = sorted([f"{top}/bin/scope-profiler",
                       f"{site}/scope_profiler/__init__{sysconfig.get_config_var('EXT_SUFFIX')}",
                       f"{site}/scope_profiler/__main__.py"]
                      + [f"{top}/share/man/man{n[-1]}/{n}" for n in PAGES])
    assert installed == expected
    assert os.access(dest / top / "bin/scope-profiler", os.X_OK)
    for name in PAGES:
        render_warnings(dest / top / f"share/man/man{name[-1]}" / name)
    # man finds them by name through the installed tree.
    if shutil.which("man"):
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C", MANPATH=str(dest / top / "share/man"))
        shown = subprocess.run(["man", "5", "scope-profiler-format"], capture_output=True,
                               text=True, env=env, timeout=60)
        assert shown.returncode == 0 and "format_version" in shown.stdout, shown.stderr
    proc = subprocess.run([*common, "uninstall"], capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert [p for p in dest.rglob("*") if p.is_file()] == []
