#!/usr/bin/env python3
"""A stand-in for vLLM's OpenAI-compatible server, for trying examples/slurm/eval-array.sbatch
without a GPU: GET /health, GET /v1/models, POST /v1/completions and /v1/chat/completions.

Every request is answered at once with one ReAct step that finishes: `Finish[yes]` when the
question (its last `Question: ` line) names an even number, else `Finish[no]`. Only the Python
standard library is used.

    python3 fake_model_server.py --port 8000 [--model NAME] [--latency SECONDS]
"""

import argparse
import json
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 8 * 1024 * 1024


def answer_for(prompt):
    """`yes` when the question asked last names an even number, else `no`."""
    question = ""
    for line in prompt.splitlines():
        if line.startswith("Question: "):
            question = line[len("Question: "):]
    number = re.search(r"\d+", question)
    return "yes" if number and int(number.group()) % 2 == 0 else "no"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send_json(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": self.server.model, "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.send_json(413, {"error": {"message": "request too large"}})
            return
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        if self.server.latency:
            time.sleep(self.server.latency)
        if self.path == "/v1/completions":
            prompt = request.get("prompt") or ""
        elif self.path == "/v1/chat/completions":
            prompt = "\n".join(str(message.get("content") or "") for message in request.get("messages") or [])
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        text = f" The number settles it.\nAction 1: Finish[{answer_for(prompt)}]"
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 12, "total_tokens": len(prompt) // 4 + 12}
        if self.path == "/v1/completions":
            choice = {"index": 0, "text": text, "finish_reason": "stop"}
            kind = "text_completion"
        else:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            kind = "chat.completion"
        self.send_json(200, {"id": "fake", "object": kind, "model": self.server.model, "choices": [choice], "usage": usage})

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.model = args.model
    server.latency = args.latency
    server.serve_forever()


if __name__ == "__main__":
    main()
