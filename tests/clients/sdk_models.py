"""The scripted replies the tests serve, parsed by the vendors' own SDKs: a fixture the SDK's
response model refuses is a fixture no real server would send. One small function per vendor;
`.ci/run` runs this in the client venv, where the SDKs are pinned.

usage: sdk_models.py FIXTURES_DIR
"""

import json
import pathlib
import sys


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
    print(f"sdk_models: anthropic: {check_anthropic(fixtures)} fixtures parse")


if __name__ == "__main__":
    main()
