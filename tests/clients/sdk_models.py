"""Parses the scripted model replies of the test suite with the vendors' own SDK response models,
so that what the scripted servers answer is what the real APIs answer, as their SDKs read it.

    python tests/clients/sdk_models.py fixtures

Run by .ci/run in the client venv (the `openai` package comes with DSPy); offline. One small
function per vendor: each validates every fixture of its directory and prints what it read.
"""

import json
import pathlib
import sys

FIXTURES = pathlib.Path(sys.argv[1])


def check_openai_responses() -> None:
    """fixtures/responses/: each reply a `Response`, each `error-*.json` an `ErrorObject`."""
    import openai
    from openai.types import ErrorObject
    from openai.types.responses import Response

    files = sorted((FIXTURES / "responses").glob("*.json"))
    assert files, "no fixtures in fixtures/responses"
    for path in files:
        data = json.loads(path.read_text())
        if path.name.startswith("error-"):
            error = ErrorObject.model_validate(data["error"])
            print(f"openai {openai.__version__}: {path.name}: ErrorObject param={error.param}")
            continue
        response = Response.model_validate(data)
        kinds = [item.type for item in response.output]
        assert kinds, f"{path.name}: no output items"
        print(f"openai {openai.__version__}: {path.name}: Response {response.status} {kinds}")


if __name__ == "__main__":
    check_openai_responses()
