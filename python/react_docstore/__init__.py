"""react_docstore: the ReAct docstore, in-process.

``Docstore(spec, profile="default")`` opens what ``--docstore`` opens (``wikipedia``,
``index:DIR``, ``corpus:FILE``); ``docstore.explorer()`` gives an explorer with its own page
and Lookup cursor whose ``search``, ``lookup`` and ``step`` return the observations
``react-docstore explore`` shows. ``docstore.tools()`` gives ``search`` and ``lookup`` as plain
typed functions for agent libraries (DSPy, LangChain).
"""

import json
import os
from typing import Callable, Iterator, List, Sequence, Union

from . import metrics
from ._native import (
    Docstore as _NativeDocstore,
    DocstoreError,
    DocstoreIOError,
    Explorer,
    NetworkError,
    NotFoundError,
    OfflineError,
    ResultsError,
    SpecError,
    __version__,
    read_results_json as _read_results_json,
)

__all__ = [
    "Docstore",
    "DocstoreError",
    "DocstoreIOError",
    "Explorer",
    "NetworkError",
    "NotFoundError",
    "OfflineError",
    "ResultsError",
    "SpecError",
    "__version__",
    "metrics",
    "read_results",
]

PathLike = Union[str, "os.PathLike[str]"]


class Docstore(_NativeDocstore):
    """An opened docstore: ``wikipedia``, ``index:DIR`` or ``corpus:FILE`` under a profile.

    ``Docstore(spec, profile="default", offline=False, cache_dir=None, wiki_url=None,
    user_agent=None)``; the last three fall back on ``REACT_CACHE_DIR``, ``REACT_WIKI_URL``
    and ``REACT_USER_AGENT`` as the command line does. Errors are ``DocstoreError``
    subclasses with the command line's messages.
    """

    def tools(self) -> List[Callable[[str], str]]:
        """``[search, lookup]`` over one new explorer: plain typed functions with docstrings,
        as ``dspy.ReAct(..., tools=...)`` and LangChain's ``StructuredTool.from_function`` take
        them. Each call of ``tools()`` gives tools with their own page and cursor."""
        explorer = self.explorer()

        def search(entity: str) -> str:
            """Search Wikipedia for an entity: its page's first paragraph, or similar titles if there is no such page."""
            return explorer.search(entity)

        def lookup(keyword: str) -> str:
            """Look up a keyword on the page last found by search: the next sentence that holds it (like Ctrl+F)."""
            return explorer.lookup(keyword)

        return [search, lookup]


def read_results(path_or_paths: Union[PathLike, Sequence[PathLike]]) -> Iterator[dict]:
    """The runs of results files as dicts: a file, a directory of shards (``*.jsonl`` at any
    depth, in name order), a comma list, or a list of these, read as ``score`` reads them: one
    evaluation (shards in their selection's order, a run in two files kept once). What it lacks
    or held twice is a ``UserWarning`` each. Raises ``ResultsError`` naming the file (and line)
    that cannot be read, or the files that answer one question two ways or hold other settings."""
    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [os.fspath(path_or_paths)]
    else:
        paths = [os.fspath(path) for path in path_or_paths]
    for text in _read_results_json(paths):
        yield json.loads(text)
