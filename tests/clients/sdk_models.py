"""The scripted replies the tests serve, parsed by the vendors' own SDKs: a fixture the SDK's
response model refuses is a fixture no real server would send. One small function per vendor;
`.ci/run` runs this in the client venv, where the SDKs are pinned (the `openai` package comes with
DSPy); offline.

usage: sdk_models.py FIXTURES_DIR
"""

import json
import pathlib
import sys


def check_openai_responses(fixtures: pathlib.Path) -> int:
    """Every `fixtures/responses/*.json`: a reply through `openai.types.responses.Response`, each
    `error-*.json` through `openai.types.ErrorObject`. Returns how many were checked."""
    from openai.types import ErrorObject
    from openai.types.responses import Response

    files = sorted((fixtures / "responses").glob("*.json"))
    if not files:
        sys.exit(f"no Responses fixtures under {fixtures / 'responses'}")
    for path in files:
        data = json.loads(path.read_text())
        try:
            if path.name.startswith("error-"):
                ErrorObject.model_validate(data["error"])
                continue
            response = Response.model_validate(data)
        except Exception as error:  # pydantic's ValidationError, whatever the SDK re-exports
            sys.exit(f"{path}: not a Response to the openai SDK: {error}")
        if not response.output:
            sys.exit(f"{path}: no output items")
    return len(files)


def check_anthropic(fixtures: pathlib.Path) -> int:
    """Every `fixtures/anthropic/*.json`: a message through `anthropic.types.Message`, an error
    body through `anthropic.types.ErrorResponse`. Returns how many were checked."""
    from anthropic.types import ErrorResponse, Message

    checked = 0
    for path in sorted((fixtures / "anthropic").glob("*.json")):
        body = json.loads(path.read_text())
        model = Message if body.get("type") == "message" else ErrorResponse
        try:
            model.model_validate(body)
        except Exception as error:  # pydantic's ValidationError, whatever the SDK re-exports
            sys.exit(f"{path}: not an {model.__name__} to the anthropic SDK: {error}")
        checked += 1
    if checked == 0:
        sys.exit(f"no Anthropic fixtures under {fixtures / 'anthropic'}")
    return checked


def check_anthropic_batches(fixtures: pathlib.Path) -> int:
    """Every `fixtures/anthropic-batches/message-batch-*.json` and the items of `list.json`: a
    batch through `anthropic.types.messages.MessageBatch`; every line of `results.jsonl` through
    `MessageBatchIndividualResponse`. Returns how many objects were checked."""
    from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse

    folder = fixtures / "anthropic-batches"
    checked = 0

    def check(model, data, where: str) -> None:
        nonlocal checked
        try:
            model.model_validate(data)
        except Exception as error:  # pydantic's ValidationError, whatever the SDK re-exports
            sys.exit(f"{where}: not a {model.__name__} to the anthropic SDK: {error}")
        checked += 1

    for path in sorted(folder.glob("message-batch-*.json")):
        check(MessageBatch, json.loads(path.read_text()), str(path))
    listed = folder / "list.json"
    for item in json.loads(listed.read_text())["data"]:
        check(MessageBatch, item, str(listed))
    results = folder / "results.jsonl"
    for number, line in enumerate(results.read_text().splitlines(), 1):
        check(MessageBatchIndividualResponse, json.loads(line), f"{results}:{number}")
    if checked == 0:
        sys.exit(f"no Anthropic batch fixtures under {folder}")
    return checked


def main() -> None:
    fixtures = pathlib.Path(sys.argv[1])
    print(f"sdk_models: openai responses: {check_openai_responses(fixtures)} fixtures parse")
    print(f"sdk_models: anthropic: {check_anthropic(fixtures)} fixtures parse")
    print(f"sdk_models: anthropic batches: {check_anthropic_batches(fixtures)} objects parse")


if __name__ == "__main__":
    main()
