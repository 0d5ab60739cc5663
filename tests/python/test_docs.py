"""docs/python.md: every ```python block runs, in order, in one namespace, from the source tree, within 20 s."""
import re
import time

from conftest import src


def python_blocks(path):
    with open(path) as f:
        return re.findall(r"^```python\n(.*?)^```$", f.read(), re.S | re.M)


def test_tutorial_blocks_run(tmp_path, monkeypatch):
    blocks = python_blocks(src("docs/python.md"))
    assert len(blocks) >= 6
    monkeypatch.setenv("STRATA_TUTORIAL_OUTPUT", str(tmp_path))
    namespace = {"__name__": "tutorial"}
    start = time.monotonic()
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
    assert time.monotonic() - start < 20
