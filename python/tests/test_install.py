"""`pip install ./python` in a fresh virtual environment (made with
--system-site-packages, offline) gives a package that loads its own copy of
libmil.so and works without LIBMIL_LIBRARY."""
import os
import shutil
import subprocess
import sys

import pytest

import libmil
from conftest import EXAMPLE, HERE

PKG = os.path.dirname(HERE)


def test_pip_install_in_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("python3 -m venv unavailable: %s" % r.stderr.decode()[-200:])
    src = tmp_path / "python"
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("tests", "_lib", "__pycache__", "*.egg-info", "build"))
    (src / "libmil" / "_lib").mkdir()
    shutil.copy(os.path.realpath(libmil.library_path), src / "libmil" / "_lib" / "libmil.so")
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("LIBMIL_LIBRARY", "PYTHONPATH")}
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-index", str(src)], capture_output=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout.decode()[-2000:] + r.stderr.decode()[-2000:]
    code = ("import libmil, numpy as np; m = libmil.load(%r); "
            "print(libmil.library_path); print(sorted(m.input_types()))" % EXAMPLE)
    r = subprocess.run([str(py), "-c", code], capture_output=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    lines = r.stdout.decode().splitlines()
    assert lines[0].startswith(str(venv)), lines
