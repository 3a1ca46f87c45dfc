"""The embedded interpreter is the whole of the Python it names: every module built
into that python is built in here too and imports, and its hash functions (the
built-in HACL code of 3.13+, which the static link has to bring itself) give the
very digests plain python gives."""
import json
import os
import subprocess

from conftest import embedded

# Prints, as JSON: the built-in module names, those that fail to import, and the
# digests of the built-in hash modules (called directly: hashlib itself prefers
# OpenSSL's) and of hashlib's public constructors, over data of several lengths
# (empty, under a block, many blocks: the SIMD paths of BLAKE2), fed whole, in
# pieces, and through copy().
PROBE = r'''
import hashlib, hmac, importlib, json, sys

names = sorted(sys.builtin_module_names)
failed = {}
for n in names:
    try:
        importlib.import_module(n)
    except Exception as e:
        failed[n] = repr(e)

datas = [b"", b"abc", bytes(range(256)) * 37 + b"tail"]
ctors = {}
for mod, fns in {"_md5": ["md5"], "_sha1": ["sha1"],
                 "_sha2": ["sha224", "sha256", "sha384", "sha512"],
                 "_sha3": ["sha3_224", "sha3_256", "sha3_384", "sha3_512", "shake_128", "shake_256"],
                 "_blake2": ["blake2b", "blake2s"]}.items():
    if mod in names:
        m = importlib.import_module(mod)
        for f in fns:
            ctors[f"{mod}.{f}"] = getattr(m, f)
for f in ["md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b", "blake2s", "shake_128"]:
    ctors[f"hashlib.{f}"] = getattr(hashlib, f)

def hexdigest(h):
    return h.hexdigest(40) if h.name.startswith("shake") else h.hexdigest()

digests = {}
for key, ctor in ctors.items():
    for i, d in enumerate(datas):
        whole = ctor(d)
        parts = ctor()
        for k in range(0, len(d), 1000):
            parts.update(d[k:k + 1000])
        copied = parts.copy()
        copied.update(b"more")
        digests[f"{key}/{i}"] = [hexdigest(whole), hexdigest(parts), hexdigest(copied)]
for f in ["blake2b", "blake2s"]:
    h = getattr(hashlib, f)(datas[2], digest_size=20, key=b"k" * 16, salt=b"s" * 8,
                            person=b"p" * 8)
    digests[f"hashlib.{f}/keyed"] = [h.hexdigest()]
digests["hmac.sha256"] = [hmac.new(b"key", datas[2], "sha256").hexdigest()]
print(json.dumps({"executable": sys.executable, "builtins": names, "failed": failed,
                  "digests": digests}))
'''


def test_builtin_modules_and_hash_digests_match_plain_python(sp):
    script = sp.script(PROBE)
    proc = sp("run", "-q", "--no-output", script)
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    plain_proc = subprocess.run([ours["executable"], str(script)], capture_output=True,
                                text=True, timeout=120)
    assert plain_proc.returncode == 0, plain_proc.stderr
    plain = json.loads(plain_proc.stdout)

    # Every module built into plain python is built in here too (ours adds
    # scope_profiler), and each imports.
    assert set(plain["builtins"]) <= set(ours["builtins"]), \
        set(plain["builtins"]) - set(ours["builtins"])
    assert ours["failed"] == {}
    assert plain["failed"] == {}
    # Each built-in hash module plain python has is here and hashes alike.
    for mod in ("_md5", "_sha1", "_sha2", "_sha3", "_blake2"):
        if mod in plain["builtins"]:
            assert any(k.startswith(mod + ".") for k in ours["digests"]), mod
    assert ours["digests"].keys() == plain["digests"].keys()
    for key, values in plain["digests"].items():
        assert ours["digests"][key] == values, key


def test_sys_executable_is_named_as_python_names_itself(sp, tmp_path):
    """Outside a virtual environment sys.executable is the python3 first on
    PATH when that is the embedded interpreter, as `python3 script.py`
    names it (/usr/bin/python3, not the file it links to,
    /usr/bin/python3.11); the interpreter's own file where PATH's python3
    is another program."""
    script = sp.script("import sys; print(sys.executable)\n")
    real = os.path.realpath(embedded().executable)
    same, other = tmp_path / "same", tmp_path / "other"
    same.mkdir()
    other.mkdir()
    (same / "python3").symlink_to(real)
    (other / "python3").write_text("#!/bin/sh\nexit 3\n")
    (other / "python3").chmod(0o755)
    for folder, expected in ((same, str(same / "python3")), (other, real)):
        env = dict(os.environ, PATH=f"{folder}:{os.environ['PATH']}", VIRTUAL_ENV="")
        proc = sp("run", "-q", "--no-output", script, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == expected + "\n"
        if folder == same:
            plain = subprocess.run(["python3", str(script)], capture_output=True, text=True,
                                   env=env, timeout=120)
            assert plain.stdout == proc.stdout
