"""The package's `react-docstore` script is the command line of the binary: same stdout, stderr and
exit code (the binary: $REACT_DOCSTORE_BIN, else the clone's target/debug or target/release
react-docstore). With neither — the package installed by `pip install .` alone — the comparisons
with the binary are skipped, saying why; the script's own tests still run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import react_docstore

from conftest import REPO


def cargo_binary():
    """The binary to compare the script with: $REACT_DOCSTORE_BIN (which must exist), else the
    clone's cargo build, debug then release; `None` when there is none."""
    named = os.environ.get("REACT_DOCSTORE_BIN")
    if named:
        path = Path(named).resolve()
        if not path.exists():
            raise RuntimeError(f"REACT_DOCSTORE_BIN names `{path}`, which does not exist")
        return str(path)
    for profile in ("debug", "release"):
        path = REPO / "target" / profile / "react-docstore"
        if path.exists():
            return str(path)
    return None


def binary_or_skip() -> str:
    path = cargo_binary()
    if path is None:
        pytest.skip(
            "no cargo-built binary to compare the script with (target/debug or target/release "
            "react-docstore, or $REACT_DOCSTORE_BIN): `cargo build` from the clone to run these"
        )
    return path


@pytest.fixture(scope="module")
def binary() -> str:
    return binary_or_skip()


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


def test_the_script_runs_as_a_module_too(cli, tmp_path):
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "react_docstore._cli", "frobnicate"], capture_output=True, cwd=tmp_path
    )
    assert (done.returncode, done.stdout, done.stderr) == run(cli, ["frobnicate"], tmp_path)


def test_without_a_cargo_build_the_comparisons_skip_saying_why(monkeypatch, tmp_path):
    """A `pip install .` alone has no binary to compare with: skipped, not failed; a
    $REACT_DOCSTORE_BIN that names nothing is a mistake, and fails."""
    monkeypatch.delenv("REACT_DOCSTORE_BIN", raising=False)
    monkeypatch.setitem(globals(), "REPO", tmp_path)  # a clone with no target/
    assert cargo_binary() is None
    with pytest.raises(pytest.skip.Exception, match="no cargo-built binary"):
        binary_or_skip()
    monkeypatch.setenv("REACT_DOCSTORE_BIN", str(tmp_path / "gone"))
    with pytest.raises(RuntimeError, match="REACT_DOCSTORE_BIN names"):
        cargo_binary()
