"""No input ends the interpreter: a run file whose counts are past the tool's limits is an
exception (`read_results`) or an exit code (`run_cli`), and an over-long action's argument is an
observation (issue 45: `"samples": 1e18` killed Python with SIGABRT, no `finally` run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import react_docstore
from react_docstore import _native

REPO = Path(__file__).resolve().parents[2]


def huge_samples_results(tmp_path: Path) -> Path:
    """The methods fixture's `cot-sc-then-react` runs, the second with `vote.samples` = 10^18."""
    lines = (REPO / "fixtures/runs/methods/cot-sc-then-react.results.jsonl").read_text(encoding="utf-8").splitlines()
    run = json.loads(lines[1])
    run["vote"]["samples"] = 10**18
    lines[1] = json.dumps(run)
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_results_raises_on_a_count_past_the_limits(tmp_path):
    path = huge_samples_results(tmp_path)
    with pytest.raises(react_docstore.ResultsError, match=r"line 2.*at most 1024"):
        list(react_docstore.read_results(path))


def test_the_interpreter_outlives_a_replay_of_huge_samples(tmp_path):
    """In a child interpreter, so that an abort fails this test instead of ending the suite."""
    path = huge_samples_results(tmp_path)
    script = (
        "import sys\n"
        "from react_docstore import _native\n"
        "try:\n"
        f"    code = _native.run_cli(['react-docstore', 'replay', {str(path)!r}])\n"
        "finally:\n"
        "    print('finally ran', flush=True)\n"
        "print('exit code', code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "finally ran" in done.stdout
    assert "exit code 2" in done.stdout
    assert "at most 1024" in done.stderr


def test_an_over_long_search_is_an_observation():
    docstore = react_docstore.Docstore(f"corpus:{REPO / 'fixtures/index/pages.jsonl'}")
    entity = "Colorado orogeny " * 4000
    observation = docstore.explorer().search(entity)
    assert observation.startswith("The argument of Search is ")
    assert "more than the 4096 an argument can be" in observation
