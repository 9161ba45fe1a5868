"""`explorer.step(...)` returns byte for byte what `react-docstore explore --json` prints for the
same actions: 500 actions over an index of a dump and 500 over a `corpus:` file, both profiles
(exact, case-folded and misspelt titles, disambiguation pages, lookups moving the cursor)."""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path
from typing import List

import pytest

import react_docstore

from conftest import REPO

ACTIONS_PER_DOCSTORE = 500
SESSION_LENGTH = 25


def page_titles_and_words(path: Path):
    """The titles of a JSON Lines pages file or a HotpotQA file, and words of each page."""
    text = path.read_text(encoding="utf-8")
    pages = []
    if path.suffix == ".jsonl":
        for line in text.splitlines():
            record = json.loads(line)
            body = record.get("text") or " ".join(record.get("sentences", [])) or " ".join(
                " ".join(paragraph) if isinstance(paragraph, list) else paragraph
                for paragraph in record.get("paragraphs", [])
            )
            pages.append((record["title"], body))
    else:
        for question in json.loads(text):
            context = question["context"]
            if isinstance(context, dict):  # the HuggingFace layout: {"title": [...], "sentences": [...]}
                context = zip(context["title"], context["sentences"])
            for title, sentences in context:
                pages.append((title, " ".join(sentences)))
    return [(title, re.findall(r"[A-Za-z]{4,}", body)) for title, body in pages]


def misspell(title: str, rng: random.Random) -> str:
    letters = [i for i, ch in enumerate(title) if ch.isalpha()]
    if len(letters) < 3:
        return title + "x"
    i = rng.choice(letters[1:-1])
    if rng.random() < 0.5:
        return title[:i] + title[i + 1 :]  # a letter dropped
    return title[:i] + title[i + 1] + title[i] + title[i + 2 :]  # two letters swapped


def actions_for(pages, rng: random.Random, count: int) -> List[List[str]]:
    """`count` actions in sessions of SESSION_LENGTH: searches of every kind, each followed by
    lookups of words of its page (repeated, so the cursor moves), and the odd other action."""
    sessions: List[List[str]] = []
    session: List[str] = []
    total = 0
    while total < count:
        title, words = rng.choice(pages)
        kind = rng.randrange(8)
        if kind == 0:
            entity = title
        elif kind == 1:
            entity = title.lower()
        elif kind == 2:
            entity = title.upper()
        elif kind == 3:
            entity = misspell(title, rng)
        elif kind == 4:
            entity = rng.choice(["Mercury", "Jaguar", "mercury", "Jaguar (disambiguation)"])
        elif kind == 5:
            entity = rng.choice(["Qwxzy Plorb", "", " ", "Special", "railway station"])
        elif kind == 6:
            entity = title.split(" (")[0]
        else:
            entity = f"  {title}  "
        batch = [f"Search[{entity}]"]
        keyword = rng.choice(words) if words else "the"
        batch += [f"Lookup[{keyword}]"] * rng.randrange(0, 4)
        batch += [f"Lookup[{keyword.lower()}]"] * rng.randrange(0, 2)
        other = rng.randrange(12)
        if other == 0:
            batch.append("Lookup[zzzunfound]")
        elif other == 1:
            batch.append(f"Finish[{title}]")
        elif other == 2:
            batch.append("Think about it")
        elif other == 3:
            batch.append(f"search[{title}]")
        for action in batch:
            if total == count:
                break
            session.append(action)
            total += 1
            if len(session) == SESSION_LENGTH:
                sessions.append(session)
                session = []
    if session:
        sessions.append(session)
    return sessions


def cli_observations(cli: str, spec: str, profile: str, actions: List[str]) -> List[str]:
    done = subprocess.run(
        [cli, "explore", "--json", "--profile", profile, "--docstore", spec, "--", *actions],
        check=True,
        capture_output=True,
    )
    lines = done.stdout.decode("utf-8").splitlines()
    assert len(lines) == len(actions), done.stderr.decode()
    return [json.loads(line)["observation"] for line in lines]


def check_parity(cli: str, spec: str, pages, seed: int) -> int:
    rng = random.Random(seed)
    checked = 0
    for profile in ("paper", "default"):
        docstore = react_docstore.Docstore(spec, profile=profile)
        for actions in actions_for(pages, rng, ACTIONS_PER_DOCSTORE // 2):
            expected = cli_observations(cli, spec, profile, actions)
            explorer = docstore.explorer()
            for number, (action, want) in enumerate(zip(actions, expected)):
                got = explorer.step(action)
                assert got == want, f"{profile} {spec}: action {number} `{action}` of {actions}"
                checked += 1
    return checked


def test_explorer_steps_match_explore_json_over_an_index(cli, index_dir, pages_file):
    checked = check_parity(cli, f"index:{index_dir}", page_titles_and_words(pages_file), seed=37)
    assert checked == ACTIONS_PER_DOCSTORE


def test_explorer_steps_match_explore_json_over_a_corpus_file(cli, pages_file):
    checked = check_parity(cli, f"corpus:{pages_file}", page_titles_and_words(pages_file), seed=38)
    assert checked == ACTIONS_PER_DOCSTORE


def test_explorer_steps_match_explore_json_over_a_distractor_file_as_corpus(cli):
    path = REPO / "fixtures/docstore/hotpotqa-distractor-3.json"
    rng = random.Random(39)
    pages = page_titles_and_words(path)
    for profile in ("paper", "default"):
        docstore = react_docstore.Docstore(f"corpus:{path}", profile=profile)
        for actions in actions_for(pages, rng, 50):
            expected = cli_observations(cli, f"corpus:{path}", profile, actions)
            explorer = docstore.explorer()
            assert [explorer.step(action) for action in actions] == expected


@pytest.mark.parametrize("profile", ["paper", "default"])
def test_search_and_lookup_are_the_actions_search_and_lookup(index_dir, pages_file, profile):
    docstore = react_docstore.Docstore(f"index:{index_dir}", profile=profile)
    by_call, by_step = docstore.explorer(), docstore.explorer()
    for title, words in page_titles_and_words(pages_file)[:20]:
        assert by_call.search(title) == by_step.step(f"Search[{title}]")
        for keyword in words[:3] + words[:1]:
            assert by_call.lookup(keyword) == by_step.step(f"Lookup[{keyword}]")


def test_explorers_keep_their_own_page_and_cursor(index_dir):
    docstore = react_docstore.Docstore(f"index:{index_dir}")
    first, second = docstore.explorer(), docstore.explorer()
    first.search("Jaguar Cars")
    assert first.lookup("Jaguar").startswith("(Result 1 / ")
    assert first.lookup("Jaguar").startswith("(Result 2 / ")
    # The second explorer has no page open: its lookup is not the first one's.
    assert not second.lookup("Jaguar").startswith("(Result")
    second.search("Jaguar Cars")
    assert second.lookup("Jaguar").startswith("(Result 1 / ")
