"""Every Python example of docs/python.md that calls no model runs from a clone with no network,
in the directory the page sets up: `data/` copied from fixtures/react-notebook/ (20 dev
questions) and `wiki-2017`, an index of fixtures/index/hotpotqa-abstracts.tar.bz2 (every page
they need)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from react_support import FIXTURES, PAGES, ROOT, clean_env, run_cli

DOC = ROOT / "docs" / "python.md"


def python_blocks() -> list:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_directory_is_set_up_as_the_page_says():
    text = DOC.read_text(encoding="utf-8")
    assert "cp -r ../fixtures/react-notebook/data ." in text
    assert "index build ../fixtures/index/hotpotqa-abstracts.tar.bz2 --out wiki-2017" in text
    assert PAGES == FIXTURES / "index" / "hotpotqa-abstracts.tar.bz2"


@pytest.fixture(scope="module")
def notebook_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("notebook")
    shutil.copytree(FIXTURES / "react-notebook" / "data", directory / "data")
    run_cli("index", "build", str(PAGES), "--out", str(directory / "wiki-2017"))
    return directory


@pytest.mark.parametrize("block", python_blocks(), ids=lambda block: block.splitlines()[0])
def test_each_example_runs_offline(block, notebook_dir):
    if "dspy" in block:
        pytest.skip("calls a model (DSPy's LM)")
    if "gymnasium" in block:
        pytest.importorskip("gymnasium")
    done = subprocess.run(
        [sys.executable, "-c", block],
        cwd=notebook_dir,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
