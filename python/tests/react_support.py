"""What the ReAct-environment tests share: the repository's fixtures, the installed CLI, and an
offline index of the HotpotQA fixture pages (built once per session with `index build`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NOTEBOOK = FIXTURES / "react-notebook"
QUESTIONS = NOTEBOOK / "data" / "hotpot_dev_v1_simplified.json"
DISTRACTOR = FIXTURES / "docstore" / "hotpotqa-distractor-100.json"
PAGES = FIXTURES / "index" / "hotpotqa-abstracts.tar.bz2"


def cli() -> str:
    """The `react-docstore` the package installed beside this Python."""
    beside = Path(sys.executable).with_name("react-docstore")
    if beside.exists():
        return str(beside)
    found = shutil.which("react-docstore")
    if found is None:
        pytest.fail("no `react-docstore` beside the Python running the tests, nor on PATH")
    return found


def clean_env() -> dict:
    """This process's environment without the variables that would steer the CLI elsewhere."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("REACT_", "OPENAI_", "SERPAPI_"))
    }


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the CLI; fail the test with its stderr when it exits non-zero."""
    done = subprocess.run(
        [cli(), *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        pytest.fail(f"react-docstore {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


@pytest.fixture(scope="session")
def react_index(tmp_path_factory: pytest.TempPathFactory) -> str:
    """`index:DIR` of the 1,000 HotpotQA fixture pages (every fixture question's supporting pages)."""
    out = tmp_path_factory.mktemp("react-index") / "index"
    run_cli("index", "build", str(PAGES), "--out", str(out))
    return f"index:{out}"


def fixture_questions() -> list:
    """The notebook fixture's questions, each with its HotpotQA record (supporting titles, text)."""
    records = {record["question"]: record for record in json.loads(DISTRACTOR.read_text())}
    return [
        {**question, "record": records[question["question"]]}
        for question in json.loads(QUESTIONS.read_text(encoding="utf-8"))
    ]
