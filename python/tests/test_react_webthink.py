"""ReAct's own `webthink` (hotpotqa.ipynb, transcribed in fixtures/react-notebook/webthink.py) over
`react_docstore.react` sends the same prompts as `react-docstore eval --profile paper --api
completions`, and scores the same EM, when both talk to one scripted model over one index."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, List, NamedTuple

import pytest

from react_support import FIXTURES, NOTEBOOK, fixture_questions, react_index, run_cli  # noqa: F401

STEP_LABEL = re.compile(r"(Thought|Action) (\d+):\Z")


class Step(NamedTuple):
    thought: str
    action: str
    # The completion has no `Action n:` line: the notebook's "ohh..." path asks again for it.
    bare: bool = False


def keyword(record: dict, title: str) -> str:
    """A word of `title`'s first sentence in the HotpotQA record: Lookup finds it on the page."""
    sentences = record["context"]["sentences"][record["context"]["title"].index(title)]
    words = re.findall(r"[A-Za-z]{5,}", sentences[0])
    return max(words, key=len) if words else title.split()[0]


def misspelt(title: str) -> str:
    middle = len(title) // 2
    return title[:middle] + title[middle + 1 :]


def plan(position: int, question: dict) -> List[Step]:
    """The scripted model's steps for the `position`-th question: searches (exact, case-folded,
    misspelt, a disambiguation page), lookups walking the cursor, think[], an invalid action,
    completions without an action, right and wrong answers, and a run out of steps."""
    record = question["record"]
    first, second = dict.fromkeys(record["supporting_facts"]["title"])
    word = keyword(record, first)
    answer = question["answer"]
    kind = position % 5
    if kind == 0:
        return [
            Step(f"I need to search {first}.", f"Search[{first}]"),
            Step(f"Look for {word}.", f"Lookup[{word}]"),
            Step(f"Look for {word} again.", f"Lookup[{word}]"),
            Step(f"Now {second}.", f"Search[{second}]"),
            Step("I have the answer.", f"Finish[{answer}]"),
        ]
    if kind == 1:
        return [
            Step("Search it in lower case.", f"Search[{first.lower()}]"),
            Step("Search the other one, misspelt.", f"Search[{misspelt(second)}]"),
            Step("Search it properly.", f"Search[{second}]"),
            Step("I cannot tell.", "Finish[unknown]"),
        ]
    if kind == 2:
        return [
            Step(f"I should search {first} first.", f"Search[{first}]", bare=True),
            Step("Let me think.", "Think[this is the right page]"),
            Step("Maybe ask someone.", "Ask[a librarian]"),
            Step("I know it.", f"Finish[{answer}]"),
        ]
    if kind == 3:
        return [
            Step(f"Search {first}.", f"Search[{first}]"),
            Step(f"Look up {word}.", f"Lookup[{word}]"),
            Step(f"Search {second}.", f"Search[{second}]"),
            Step("Look up the year.", "Lookup[19]"),
            Step("Look up the year again.", "Lookup[19]"),
            Step(f"Back to {first}.", f"Search[{first}]"),
            Step(f"Look up {word} once more.", f"Lookup[{word}]"),
        ]
    return [
        Step("Mercury first.", "Search[Mercury]"),
        Step(f"Then {first}.", f"Search[{first}]"),
        Step(f"Look up {word}.", f"Lookup[{word}]"),
        Step("Answer.", f"Finish[{answer}]", bare=True),
    ]


class ScriptedModel(ThreadingHTTPServer):
    """`POST /v1/completions` answered from the prompt alone (its question and step), every
    request body kept in `requests`."""

    def __init__(self, plans: dict) -> None:
        super().__init__(("127.0.0.1", 0), CompletionsHandler)
        self.plans = plans
        self.requests: List[dict] = []
        self.lock = threading.Lock()

    def completion(self, prompt: str) -> str:
        marker = "\nQuestion: "
        question = prompt[prompt.rindex(marker) + len(marker) :].split("\n", 1)[0]
        label = STEP_LABEL.search(prompt)
        assert label is not None, f"a prompt that asks for no step: ...{prompt[-80:]!r}"
        number = int(label.group(2))
        steps = self.plans[question]
        step = steps[number - 1] if number <= len(steps) else Step("Done.", "Finish[]")
        if label.group(1) == "Action":
            return f" {step.action}"
        if step.bare:
            return f" {step.thought}"
        return f" {step.thought}\nAction {number}: {step.action}"


class CompletionsHandler(BaseHTTPRequestHandler):
    server: ScriptedModel

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        assert self.path == "/v1/completions", self.path
        with self.server.lock:
            self.server.requests.append(body)
        text = self.server.completion(body["prompt"])
        reply = json.dumps(
            {
                "id": f"cmpl-{len(self.server.requests)}",
                "object": "text_completion",
                "created": 0,
                "model": body.get("model", ""),
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    questions = fixture_questions()
    server = ScriptedModel({q["question"]: plan(n, q) for n, q in enumerate(questions)})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()
    server.server_close()


def prompts_by_question(requests: List[dict]) -> dict:
    """Each question's requests in order, as `(prompt, stop)`."""
    grouped: dict = {}
    for body in requests:
        prompt = body["prompt"]
        question = prompt[prompt.rindex("\nQuestion: ") :].split("\n")[1]
        grouped.setdefault(question, []).append((prompt, body["stop"]))
    return grouped


def run_notebook(workdir: Path, base_url: str, docstore: str, monkeypatch) -> List[dict]:
    """webthink over the 20 questions, from a copy of the notebook's directory; each run's info."""
    shutil.copytree(NOTEBOOK, workdir)
    (workdir / "prompts").mkdir()
    shutil.copy(FIXTURES / "react" / "prompts_naive.json", workdir / "prompts")
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("REACT_NOTEBOOK_BASE_URL", base_url)
    monkeypatch.setenv("REACT_NOTEBOOK_DOCSTORE", docstore)
    spec = importlib.util.spec_from_file_location("react_notebook_webthink", workdir / "webthink.py")
    notebook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(notebook)
    infos = []
    for idx in range(len(notebook.env)):
        _, info = notebook.webthink(idx, to_print=True)
        infos.append(info)
    return infos


def test_webthink_sends_the_prompts_of_eval_paper_and_scores_its_em(
    model, react_index, tmp_path, monkeypatch, capsys
):
    base_url = f"http://127.0.0.1:{model.server_address[1]}/v1"
    infos = run_notebook(tmp_path / "notebook", base_url, react_index, monkeypatch)
    notebook_requests = list(model.requests)
    model.requests.clear()
    assert "ohh..." in capsys.readouterr().out

    done = run_cli(
        "eval",
        str(tmp_path / "notebook" / "data" / "hotpot_dev_v1_simplified.json"),
        "--profile", "paper",
        "--api", "completions",
        "--base-url", base_url,
        "--model", "text-davinci-002",
        "--docstore", react_index,
        "--limit", "20",
        "--out", str(tmp_path / "eval.results.jsonl"),
        "--cache-dir", str(tmp_path / "cache"),
        "--json",
    )  # fmt: skip
    eval_requests = list(model.requests)

    notebook_prompts = prompts_by_question(notebook_requests)
    eval_prompts = prompts_by_question(eval_requests)
    assert len(notebook_prompts) == 20
    assert notebook_prompts.keys() == eval_prompts.keys()
    for question, sent in notebook_prompts.items():
        assert eval_prompts[question] == sent, question

    # What the prompts went through: every kind of observation the script asks for.
    transcript = "\n".join(prompt for prompt, _ in sum(notebook_prompts.values(), []))
    for seen in [
        "(Result 2 / ",
        "Could not find ",
        "Could not find [Mercury]",
        "Nice thought.",
        "Invalid action: ask[a librarian]",
        "Observation 6: ",
    ]:
        assert seen in transcript, seen
    assert any("Episode finished, reward = 1" in info["traj"] for info in infos)
    assert any(stop == ["\n"] for prompt, stop in sum(notebook_prompts.values(), []))

    summary = json.loads(done.stdout)
    notebook_em = sum(info["em"] for info in infos) / len(infos)
    assert summary["n"] == 20
    assert summary["em"] == pytest.approx(notebook_em)
    assert 0 < notebook_em < 1
