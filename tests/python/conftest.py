"""Shared by the Python API tests (tests/python/test_*.py, run by pytest through ctest: tests/python/CMakeLists.txt).

Each test calls a function of the `strata` package and the `strata` command that does the same work, and compares
the two; where a value can be derived independently (closed forms, published numbers, brute force) it is checked
against that too. Environment: STRATA_BIN (the built strata binary), STRATA_SOURCE (the source tree; tests run with
it as the working directory), STRATA_BUILD (the build tree, for the install test), PYTHONPATH=<build>/python.
"""
import os
import re
import subprocess

import pytest

STRATA_BIN = os.environ.get("STRATA_BIN", "")
SOURCE = os.environ.get("STRATA_SOURCE", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("STRATA_BUILD", "")


def src(path):
    return os.path.join(SOURCE, path)


class Run:
    def __init__(self, args, cwd=None, timeout=600):
        if not STRATA_BIN:
            pytest.skip("STRATA_BIN is not set (run through ctest)")
        proc = subprocess.run([STRATA_BIN, *args], cwd=cwd or SOURCE, capture_output=True, text=True,
                              timeout=timeout)
        self.args, self.rc, self.out, self.err = args, proc.returncode, proc.stdout, proc.stderr

    def __repr__(self):
        return f"strata {' '.join(self.args)} -> rc {self.rc}\nstdout:\n{self.out[-3000:]}\nstderr:\n{self.err[-3000:]}"

    def error_message(self):
        """The message after "strata: error: " (exit status 2), as strata.Error carries it."""
        assert self.rc == 2, self
        m = re.match(r"strata: error: (.*)\n\Z", self.err, re.S)
        assert m, self
        return m.group(1)


def cli(*args, cwd=None):
    return Run([str(a) for a in args], cwd=cwd)


def close(a, b, rel=1e-9, abs_=0.0):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def assert_same_json(a, b, path="", rel=1e-12, skip=()):
    """a and b equal as JSON values, numbers to `rel`; keys in `skip` (e.g. wall times) are not compared."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            if k not in skip:
                assert_same_json(a[k], b[k], f"{path}.{k}", rel, skip)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_json(x, y, f"{path}[{i}]", rel, skip)
    elif isinstance(a, float) or isinstance(b, float):
        assert close(float(a), float(b), rel), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.fixture(autouse=True)
def _in_source_tree(monkeypatch):
    monkeypatch.chdir(SOURCE)
