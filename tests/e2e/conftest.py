"""Fixtures for the end-to-end tests: they drive the real scope-profiler
executable (SCOPE_PROFILER, set by `make e2e`) on real scripts."""
import os
import pathlib
import subprocess
import textwrap

import pytest

BINARY = os.environ.get("SCOPE_PROFILER") or str(
    pathlib.Path(__file__).resolve().parents[2] / "build" / "scope-profiler")
ROOT = pathlib.Path(__file__).resolve().parents[2]


class Tool:
    def __init__(self, tmp_path):
        self.tmp = tmp_path

    def script(self, text, name="script.py"):
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def __call__(self, *args, input=None, timeout=120, env=None, cwd=None):
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        return subprocess.run([BINARY, *map(str, args)], input=input, capture_output=True,
                              text=True, timeout=timeout, env=full_env, cwd=cwd or self.tmp)


@pytest.fixture
def sp(tmp_path):
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"{BINARY} is not built; run `make`")
    return Tool(tmp_path)


def one_line_error(proc, *fragments):
    """The tool's error is one line on stderr, naming what went wrong."""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("scope-profiler: "), lines[0]
    for f in fragments:
        assert f in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
