"""Type stubs of the native module ``react_docstore._native``."""

from os import PathLike
from typing import Dict, List, Optional, Sequence, Union

__version__: str

class DocstoreError(Exception):
    """A docstore could not be opened or searched: the message is the command line's."""

class SpecError(DocstoreError):
    """A docstore spec, profile or setting that is not valid."""

class NotFoundError(DocstoreError):
    """The index directory or corpus file a spec names does not exist."""

class OfflineError(DocstoreError):
    """``offline=True`` and the page is not in the cache."""

class NetworkError(DocstoreError):
    """Wikipedia could not be reached or answered badly, after retries."""

class DocstoreIOError(DocstoreError):
    """A file of the docstore (index, corpus, page cache) could not be read or is malformed."""

class ResultsError(Exception):
    """A results file could not be read: the message names the file (and line)."""

class Explorer:
    """One explorer: its own open page and Lookup cursor. Thread-safe; calls take turns."""

    def search(self, entity: str) -> str:
        """``Search[entity]``: the observation ``react-docstore explore`` shows."""
    def lookup(self, keyword: str) -> str:
        """``Lookup[keyword]`` on the open page, from the cursor."""
    def step(self, action: str) -> str:
        """One action as the model writes it (``Search[...]``, ``Lookup[...]``, ...)."""

class Docstore:
    """A docstore spec (``wikipedia``, ``index:DIR``, ``corpus:FILE``) opened under a profile."""

    def __init__(
        self,
        spec: str,
        profile: str = "default",
        offline: bool = False,
        cache_dir: Optional[Union[str, PathLike[str]]] = None,
        wiki_url: Optional[str] = None,
        user_agent: Optional[str] = None,
    ) -> None: ...
    @property
    def spec(self) -> str: ...
    @property
    def profile(self) -> str: ...
    def explorer(self) -> Explorer:
        """A new explorer with its own page and cursor."""
    def info(self) -> Dict[str, Optional[str]]:
        """``{"kind": ..., "snapshot": ...}`` as run files record it."""

def exact_match(prediction: str, gold: str) -> bool: ...
def f1(prediction: str, gold: str) -> float: ...
def read_results_json(paths: Sequence[Union[str, PathLike[str]]]) -> List[str]: ...
def run_cli(argv: Sequence[Union[str, PathLike[str]]]) -> int: ...
