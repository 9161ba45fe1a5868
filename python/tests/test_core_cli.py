"""The package's `react-docstore` script is the command line of the binary: same stdout, stderr and
exit code (the binary: $REACT_DOCSTORE_BIN, else the clone's target/debug/react-docstore)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import react_docstore

from conftest import REPO


@pytest.fixture(scope="module")
def binary() -> str:
    path = Path(os.environ.get("REACT_DOCSTORE_BIN", REPO / "target/debug/react-docstore")).resolve()
    if not path.exists():
        raise RuntimeError(f"no binary at `{path}` to compare with: `cargo build` or set REACT_DOCSTORE_BIN")
    return str(path)


def run(command: str, args, cwd: Path):
    done = subprocess.run([command, *args], capture_output=True, cwd=cwd, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


def cases(tmp_path: Path):
    gold = REPO / "fixtures/docstore/hotpotqa-distractor-3.json"
    results = REPO / "fixtures/docstore/hotpotqa-distractor-3.results.jsonl"
    none_answered = tmp_path / "none.json"
    none_answered.write_text(json.dumps({"answer": {}}), encoding="utf-8")
    corpus = REPO / "fixtures/docstore/corpus-3.jsonl"
    return [
        ["--version"],
        ["--help"],
        ["explore", "--help"],
        ["frobnicate"],
        ["score"],
        ["score", "--json", str(results), str(gold)],
        ["score", str(none_answered), str(gold)],
        ["explore", "--docstore", f"index:{tmp_path / 'none'}", "Search[x]"],
        ["explore", "--json", "--docstore", f"corpus:{corpus}", "Search[Blic]", "Lookup[magazine]"],
        ["explore", "--docstore", "distractor", "Search[x]"],
    ]


def test_the_script_behaves_as_the_binary(cli, binary, tmp_path):
    codes = set()
    for args in cases(tmp_path):
        script = run(cli, args, tmp_path)
        assert script == run(binary, args, tmp_path), args
        codes.add(script[0])
    # Success, "none answered" (1) and usage/runtime errors (2) all came through.
    assert codes == {0, 1, 2}


def test_the_version_is_the_crate_version(cli):
    cargo = (REPO / "Cargo.toml").read_text(encoding="utf-8")
    version = next(line.split('"')[1] for line in cargo.splitlines() if line.startswith("version = "))
    assert run(cli, ["--version"], REPO)[:2] == (0, f"react-docstore {version}\n".encode())
    assert react_docstore.__version__ == version


def test_the_script_runs_as_a_module_too(binary, tmp_path):
    import sys

    done = subprocess.run([sys.executable, "-m", "react_docstore._cli", "frobnicate"], capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == run(binary, ["frobnicate"], tmp_path)
