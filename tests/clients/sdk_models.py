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


def main() -> None:
    fixtures = pathlib.Path(sys.argv[1])
    print(f"sdk_models: openai responses: {check_openai_responses(fixtures)} fixtures parse")
    print(f"sdk_models: anthropic: {check_anthropic(fixtures)} fixtures parse")


if __name__ == "__main__":
    main()
