"""`cmake --install` into a temporary prefix: the package imports from <prefix>/lib/python3/dist-packages, not
from the build tree, and finds strata's data files (the default rule set) under <prefix>/share/strata."""
import os
import subprocess
import sys

import pytest

from conftest import BUILD

SCRIPT = """
import os, sys, strata
prefix = sys.argv[1]
assert os.path.realpath(strata.__file__).startswith(os.path.realpath(prefix)), strata.__file__
system = strata.load_system(os.path.join(prefix, "share/strata/configs/hw/dgx-a100.yaml"))
assert system.num_gpus == 8
d = strata.optimize("squeezenet", os.path.join(prefix, "share/strata/configs/hw/dgx-a100.yaml"), budget=1,
                    check=False)
assert d["rules"] > 100, d["rules"]
print("ok", d["rules"])
"""


def test_installed_package_imports_and_finds_its_data(tmp_path):
    if not BUILD:
        pytest.skip("STRATA_BUILD is not set (run through ctest)")
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    site = prefix / "lib" / "python3" / "dist-packages"
    assert (site / "strata" / "__init__.py").exists()
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(prefix)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")
