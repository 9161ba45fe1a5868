"""`eval --api anthropic` and `eval --api responses` (and their `-tools` variants) through a proxy
this project did not write: LiteLLM's, pinned in `.ci/run`'s client venv, in front of a scripted
OpenAI-compatible server that speaks Chat Completions only.

    python tests/clients/litellm_proxy.py target/debug/react-docstore \
        fixtures/index/pages.jsonl fixtures/litellm/questions.json

The proxy's one model is `openai/<name>` with `api_base` at the scripted server and
`use_chat_completions_api: true`, so both of our wire formats are real translations: LiteLLM turns
a `POST /v1/messages` into a Chat Completions request for an `openai/` model (its Anthropic
adapter), and `use_chat_completions_api` makes its Responses endpoint bridge to Chat Completions too
(without it, `openai/` forwards `/v1/responses` to the backend's `/v1/responses` untouched). The
scripted model answers three of the four questions right (EM 0.75) in two steps: a search, then the
answer. Each evaluation must give that EM, and each request reaching the scripted server must be
what the translation should produce (the few-shot prompt, the step's stop sequence for the
Messages API, none for the Responses API, which has none; the tool calls and their results).

Loopback only: the proxy reads its bundled price map and other tables, and sends no telemetry.
On any failure the proxy's log is printed; the proxy is stopped on exit.
"""

import http.server
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request

BINARY, CORPUS, QUESTIONS = sys.argv[1], sys.argv[2], sys.argv[3]
DOCSTORE = f"corpus:{CORPUS}"
MODEL = "scripted-react"
# Made-up keys: the client's key for the proxy (which refuses to start without a master key), and
# the proxy's for the scripted server. Neither may reach the other side.
PROXY_KEY = "sk-litellm-proxy-3f9c2e41b84d6e9a"
BACKEND_KEY = "sk-scripted-backend-77a1"
FEWSHOT = "Here are some examples."

# What the scripted model does for each question of QUESTIONS: the page it searches, then the
# answer it gives (the last one wrong: the gold is 2000).
SCRIPT = {
    "Which building was the Grand Ole Opry's home before it moved to the Grand Ole Opry House?": (
        "Ryman Auditorium",
        "Ryman Auditorium",
    ),
    "In which year was the Special Air Service founded?": ("Special Air Service", "1941"),
    "Nicolae Titulescu was twice President of the General Assembly of which organisation?": (
        "Nicolae Titulescu",
        "League of Nations",
    ),
    "In which year did the Opry Mills shopping mall open?": ("Opry Mills", "1999"),
}
EXPECTED_EM = 0.75


class Failure(Exception):
    """A check failed: the message says which, and what was seen."""


def text_of(content) -> str:
    """A Chat Completions message's content as one text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def question_in(text: str) -> str:
    """The question a prompt asks: the last `Question:` line (the few-shot ones come before)."""
    at = text.rfind("Question: ")
    if at < 0:
        raise Failure(f"no question in {text[-300:]!r}")
    question = text[at + len("Question: ") :].split("\n", 1)[0].strip()
    if question not in SCRIPT:
        raise Failure(f"an unknown question {question!r}")
    return question


def continuation(prompt: str) -> str:
    """What the text model writes after `prompt`, which ends at `Thought N:`: past the step's
    `Observation` marker, as a model does when nothing stops it."""
    step = re.search(r"Thought (\d+):\s*$", prompt)
    if step is None:
        raise Failure(f"the prompt does not end at a thought: {prompt[-200:]!r}")
    n = int(step.group(1))
    entity, answer = SCRIPT[question_in(prompt)]
    if n == 1:
        return (
            f" I need to search {entity}.\nAction 1: Search[{entity}]\n"
            "Observation 1: made up by the model past the marker."
        )
    return f" It is {answer}.\nAction {n}: Finish[{answer}]\nObservation {n}: more past the marker."


def tool_call(body: dict) -> dict:
    """The function the tool-calling model calls next: a search, then the answer."""
    messages = body["messages"]
    question = question_in("\n".join(text_of(m.get("content")) for m in messages if m["role"] == "user"))
    entity, answer = SCRIPT[question]
    step = sum(1 for message in messages if message["role"] == "tool") + 1
    name, arguments = ("search", {"entity": entity}) if step == 1 else ("finish", {"answer": answer})
    index = list(SCRIPT).index(question)
    return {
        "id": f"call_{index}_{step}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def reasoning(body: dict) -> str:
    """The reasoning the model sends with its reply to `body`: which question and step it is."""
    user = "\n".join(text_of(m.get("content")) for m in body["messages"] if m["role"] == "user")
    tools = sum(1 for message in body["messages"] if message["role"] == "tool")
    step = re.search(r"Thought (\d+):\s*$", user)
    number = tools + 1 if body.get("tools") else int(step.group(1)) if step else 0
    return f"Reasoning about question {list(SCRIPT).index(question_in(user))}, step {number}."


def completion(body: dict) -> dict:
    """The scripted Chat Completions reply to `body`, with `stop` applied as a server does."""
    if body.get("tools"):
        call = tool_call(body)
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        prompt = "".join(text_of(m.get("content")) for m in body["messages"] if m["role"] == "user")
        text = continuation(prompt)
        for stop in body.get("stop") or []:
            text = text.split(stop, 1)[0]
        message = {"role": "assistant", "content": text}
        finish = "stop"
    # The reasoning a reasoning model served by vLLM or DeepSeek's API sends beside its answer.
    message["reasoning_content"] = reasoning(body)
    prompt_tokens = len(json.dumps(body["messages"])) // 4
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1764370000,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20},
    }


class Backend(http.server.ThreadingHTTPServer):
    """The scripted OpenAI-compatible server: `GET /v1/models` (LiteLLM lists the models of an
    `openai/` deployment at startup) and `POST /v1/chat/completions`; every request is kept."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), BackendHandler)
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str, dict | None]] = []  # (method path, authorization, body)

    def take(self) -> list[tuple[str, str, dict | None]]:
        with self.lock:
            taken, self.requests = self.requests, []
        return taken


class BackendHandler(http.server.BaseHTTPRequestHandler):
    server: Backend

    def log_message(self, *args) -> None:  # quiet: the checks say what they saw
        pass

    def reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def keep(self, body: dict | None) -> None:
        with self.server.lock:
            self.server.requests.append((f"{self.command} {self.path}", self.headers.get("authorization", ""), body))

    def do_GET(self) -> None:
        self.keep(None)
        if self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "tests"}]})
        else:
            self.reply(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        self.keep(body)
        if self.path != "/v1/chat/completions":
            self.reply(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        try:
            self.reply(200, completion(body))
        except Failure as failure:
            self.reply(400, {"error": {"message": str(failure), "type": "invalid_request_error"}})


class Proxy:
    """LiteLLM's proxy on a free loopback port, its output (stdout and stderr) kept in `log`."""

    def __init__(self, workdir: pathlib.Path, backend_url: str):
        config = workdir / "litellm.yaml"
        # JSON is YAML: the model, and the master key without which the proxy refuses to start.
        config.write_text(
            json.dumps(
                {
                    "model_list": [
                        {
                            "model_name": MODEL,
                            "litellm_params": {
                                "model": f"openai/{MODEL}",
                                "api_base": f"{backend_url}/v1",
                                "api_key": BACKEND_KEY,
                                "use_chat_completions_api": True,
                            },
                        }
                    ],
                    "general_settings": {"master_key": PROXY_KEY},
                },
                indent=2,
            )
        )
        env = {name: value for name, value in os.environ.items() if "KEY" not in name and "LITELLM" not in name}
        env.update(
            # Its bundled tables, never the ones on GitHub; no telemetry.
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS="True",
            LITELLM_LOCAL_AUTOROUTER_PRESETS="True",
            LITELLM_LOCAL_BLOG_POSTS="True",
            LITELLM_LOCAL_POLICY_TEMPLATES="True",
            LITELLM_TELEMETRY_DISABLED="True",
            HOME=str(workdir),
            PYTHONUNBUFFERED="1",
        )
        litellm = pathlib.Path(sys.executable).parent / "litellm"
        self.process = subprocess.Popen(
            [litellm, "--config", config, "--host", "127.0.0.1", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=workdir,
            start_new_session=True,
        )
        self.log: list[str] = []
        self.address: str | None = None
        self.ready = threading.Event()
        threading.Thread(target=self.read, daemon=True).start()
        # Uvicorn says which port it bound once the application has started; the event is also
        # set when the proxy exits first. The timeout only bounds a hung start.
        if not self.ready.wait(timeout=300) or self.address is None:
            raise Failure("LiteLLM's proxy did not start")
        with urllib.request.urlopen(f"{self.url}/health/liveliness", timeout=30) as response:
            if response.status != 200:
                raise Failure(f"/health/liveliness answered {response.status}")

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def read(self) -> None:
        for line in self.process.stdout:
            self.log.append(line)
            bound = re.search(r"Uvicorn running on http://(127\.0\.0\.1:\d+)", line)
            if bound:
                self.address = bound.group(1)
                self.ready.set()
        self.ready.set()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def evaluate(workdir: pathlib.Path, name: str, base_url: str, args: list[str], env: dict) -> list[dict]:
    """`eval` of the questions, `--json`: checks the printed EM and the runs' answers, and returns
    the runs."""
    out = workdir / f"{name}.results.jsonl"
    command = [BINARY, "eval", QUESTIONS, "--docstore", DOCSTORE, "--model", MODEL, "--base-url", base_url]
    command += ["--out", str(out), "--json", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise Failure(f"{name}: `{' '.join(command)}` exited {done.returncode}:\n{done.stderr}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    runs = [json.loads(line) for line in out.read_text().splitlines()]
    answers = {run["question"]: run.get("answer") for run in runs}
    expected = {question: answer for question, (_, answer) in SCRIPT.items()}
    errors = [run["error"] for run in runs if run.get("error")]
    if answers != expected or errors:
        raise Failure(f"{name}: answers {answers}, errors {errors}, expected {expected}")
    em = summary.get("em", summary.get("summary", {}).get("em"))
    if em != EXPECTED_EM:
        raise Failure(f"{name}: EM {em}, expected {EXPECTED_EM}: {done.stdout}")
    print(f"litellm_proxy: {name}: EM {em} over {len(runs)} questions")
    return runs


def posts(name: str, requests: list, expected: int) -> list[dict]:
    """The bodies of `requests`, each a Chat Completions request under the proxy's own key (the
    model listing LiteLLM asks for in the background aside)."""
    requests = [request for request in requests if request[0] != "GET /v1/models"]
    for line, authorization, body in requests:
        if line != "POST /v1/chat/completions" or authorization != f"Bearer {BACKEND_KEY}":
            raise Failure(f"{name}: the scripted server got `{line}` ({authorization[:12]}...): {body}")
        if PROXY_KEY in json.dumps(body):
            raise Failure(f"{name}: the client's key for the proxy reached the server: {body}")
    if len(requests) != expected:
        raise Failure(f"{name}: {len(requests)} requests, expected {expected}: {[r[0] for r in requests]}")
    return [body for _, _, body in requests]


def check_reasoning(name: str, runs: list[dict]) -> None:
    """Each step recorded the reasoning the scripted server sent with it."""
    for run in runs:
        index = list(SCRIPT).index(run["question"])
        for number, step in enumerate(run["steps"], 1):
            if step.get("reasoning") != f"Reasoning about question {index}, step {number}.":
                raise Failure(f"{name}: step {number} of question {index} recorded no reasoning: {step}")


def check_text(name: str, requests: list, runs: list[dict], stops: bool) -> None:
    """The text protocol: each request the continue-instruction as the system message, the few-shot
    prompt up to the step's `Thought N:` as the user's, the token cap and temperature; the step's
    stop sequence when the client sent one (Messages' `stop_sequences`), none otherwise (the
    Responses API has none: the client cuts the text itself)."""
    for body in posts(name, requests, 2 * len(SCRIPT)):
        messages = body["messages"]
        system = text_of(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        user = "".join(text_of(m["content"]) for m in messages if m["role"] == "user")
        step = re.search(r"Thought (\d+):\s*$", user)
        ok = (
            system.startswith("Continue the text")
            and [m["role"] for m in messages] == ["system", "user"]
            and FEWSHOT in user
            and step is not None
            and "tools" not in body
            and body.get("max_tokens") == 256
            and body.get("temperature") == 0
        )
        if ok:
            expected_stop = [f"\nObservation {step.group(1)}:"] if stops else None
            ok = body.get("stop") == expected_stop
        if not ok:
            fields = {key: value for key, value in body.items() if key != "messages"}
            raise Failure(
                f"{name}: not the translation of a text request: {json.dumps(fields)}, "
                f"roles {[m['role'] for m in messages]}, system {system[:80]!r}, user ...{user[-200:]!r}"
            )
    for run in runs:
        first = run["steps"][0]
        if "Observation" in first["completions"][0] or not first["action"].startswith("Search["):
            raise Failure(f"{name}: the first step was not cut at its observation: {first}")


def check_tools(name: str, requests: list, runs: list[dict], reasoning_back: bool) -> None:
    """The tool protocol: the three functions, the few-shot transcripts in the system message, and
    every earlier call back as the assistant's `tool_calls` under its id, answered by a `tool`
    message under the same id; with `reasoning_back`, the assistant turn with the reasoning it came
    with."""
    for body in posts(name, requests, 2 * len(SCRIPT)):
        messages = body["messages"]
        tools = body.get("tools") or []
        names = [tool["function"]["name"] for tool in tools if tool.get("type") == "function"]
        parameters = all(tool["function"]["parameters"].get("type") == "object" for tool in tools)
        system = text_of(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        if names != ["search", "lookup", "finish"] or not parameters or FEWSHOT not in system:
            raise Failure(f"{name}: tools {tools}, system {system[:200]!r}")
        question = question_in(text_of(messages[1]["content"]))
        index = list(SCRIPT).index(question)
        entity = SCRIPT[question][0]
        history = messages[2:]
        if [m["role"] for m in history] not in ([], ["assistant", "tool"]):
            raise Failure(f"{name}: the history is {[m['role'] for m in history]}: {json.dumps(history)}")
        if history:
            calls = history[0].get("tool_calls") or []
            sent = {"name": "search", "arguments": {"entity": entity}}
            got = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
            if got != [(f"call_{index}_1", sent["name"], sent["arguments"])]:
                raise Failure(f"{name}: the earlier call came back as {got}: {json.dumps(history[0])}")
            result = history[1]
            if result.get("tool_call_id") != f"call_{index}_1" or not text_of(result.get("content")):
                raise Failure(f"{name}: the search's result came back as {json.dumps(result)}")
            reasoning = f"Reasoning about question {index}, step 1."
            if reasoning_back and history[0].get("reasoning_content") != reasoning:
                raise Failure(f"{name}: the step's reasoning did not come back: {json.dumps(history[0])}")
    for run in runs:
        if run["steps"][0]["action"] != f"Search[{SCRIPT[run['question']][0]}]":
            raise Failure(f"{name}: the first step's action is {run['steps'][0]['action']!r}")


def main() -> None:
    backend = Backend()
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    backend_url = f"http://127.0.0.1:{backend.server_port}"
    client_env = {name: value for name, value in os.environ.items() if "KEY" not in name}
    with tempfile.TemporaryDirectory(prefix="litellm-proxy-") as tmp:
        workdir = pathlib.Path(tmp)
        # The scripted server asked directly gives the scripted EM: what the proxy must keep.
        direct = {**client_env, "OPENAI_API_KEY": BACKEND_KEY}
        for api in ("chat", "tools"):
            evaluate(workdir, f"{api} (direct)", f"{backend_url}/v1", ["--api", api], direct)
        backend.take()

        proxy = None
        try:
            proxy = Proxy(workdir, backend_url)
            posts("the proxy's start", backend.take(), 0)
            through = {**client_env, "OPENAI_API_KEY": PROXY_KEY, "ANTHROPIC_API_KEY": PROXY_KEY}
            base = f"{proxy.url}/v1"
            # The Responses bridge turns the server's `reasoning_content` into a reasoning item,
            # recorded as the step's reasoning and turned back into `reasoning_content` when the
            # item comes back; the Messages adapter drops it (no `thinking` block, with or without
            # `thinking` asked for): nothing to record there, nothing to pass back.
            for api, stops in (("anthropic", True), ("responses", False)):
                runs = evaluate(workdir, f"{api} via LiteLLM", base, ["--api", api], through)
                check_text(api, backend.take(), runs, stops)
                if api == "responses":
                    check_reasoning(api, runs)
            for api in ("anthropic-tools", "responses-tools"):
                runs = evaluate(workdir, f"{api} via LiteLLM", base, ["--api", api], through)
                check_tools(api, backend.take(), runs, reasoning_back=api == "responses-tools")
                if api == "responses-tools":
                    check_reasoning(api, runs)
            fetched = [line for line in proxy.log if "githubusercontent" in line or "telemetry" in line.lower()]
            if fetched:
                raise Failure(f"the proxy reached for the network: {fetched}")
        except BaseException:
            if proxy is not None:
                sys.stderr.write("---- LiteLLM proxy log ----\n" + "".join(proxy.log[-400:]))
            raise
        finally:
            if proxy is not None:
                proxy.stop()
            backend.shutdown()


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        sys.exit(f"litellm_proxy: {failure}")
