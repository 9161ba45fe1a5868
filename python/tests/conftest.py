"""Shared fixtures of the package's tests: the repository, the installed command, a small index
built with it (pages of fixtures/index/pages.jsonl plus disambiguation pages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Disambiguation pages beside the fixture's articles: `Mercury` says `may refer to:` (both
# profiles' rule), `Jaguar (disambiguation)` says so by its title (the default profile's).
DISAMBIGUATION_PAGES = [
    {"title": "Mercury", "text": "Mercury may refer to:"},
    {"title": "Mercury (planet)", "text": "Mercury is the smallest planet in the Solar System. Its orbit around the Sun takes 87.97 Earth days."},
    {"title": "Mercury (element)", "text": "Mercury is a chemical element with the symbol Hg. It is liquid at standard conditions."},
    {"title": "Jaguar (disambiguation)", "text": "Jaguar may refer to:"},
    {"title": "Jaguar", "text": "The jaguar is a large cat species. The jaguar is native to the Americas."},
    {"title": "Jaguar Cars", "text": "Jaguar Cars is a British car maker. Jaguar Cars was founded in 1922."},
]


def installed_command() -> str:
    """The `react-docstore` script installed beside this Python (the package's entry point)."""
    beside = Path(sys.executable).parent / "react-docstore"
    found = str(beside) if beside.exists() else shutil.which("react-docstore")
    if found is None:
        raise RuntimeError("no `react-docstore` script beside this Python: `pip install .` first")
    return found


@pytest.fixture(scope="session")
def cli() -> str:
    return installed_command()


@pytest.fixture(scope="session")
def pages_file(tmp_path_factory) -> Path:
    """fixtures/index/pages.jsonl with the disambiguation pages added, as one JSON Lines file."""
    path = tmp_path_factory.mktemp("pages") / "pages.jsonl"
    lines = (REPO / "fixtures/index/pages.jsonl").read_text(encoding="utf-8").splitlines()
    lines += [json.dumps(page) for page in DISAMBIGUATION_PAGES]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory, cli, pages_file) -> Path:
    """An index of `pages_file`, built with the installed `react-docstore index build`."""
    out = tmp_path_factory.mktemp("index") / "wiki"
    subprocess.run([cli, "index", "build", str(pages_file), "--out", str(out)], check=True, capture_output=True)
    return out


@pytest.fixture
def empty_cache(tmp_path) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir()
    return cache


@pytest.fixture(autouse=True)
def no_environment_settings(monkeypatch):
    """The command line's settings from the environment would change what both sides see."""
    for name in ("REACT_PROFILE", "REACT_WIKI_URL", "REACT_CACHE_DIR", "REACT_USER_AGENT"):
        monkeypatch.delenv(name, raising=False)
    os.environ.setdefault("NO_COLOR", "1")
