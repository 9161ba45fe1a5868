from os import PathLike
from typing import Any, Callable, Dict, Iterator, List, Sequence, Union

from . import metrics as metrics
from ._native import Docstore as _NativeDocstore
from ._native import DocstoreError as DocstoreError
from ._native import DocstoreIOError as DocstoreIOError
from ._native import Explorer as Explorer
from ._native import NetworkError as NetworkError
from ._native import NotFoundError as NotFoundError
from ._native import OfflineError as OfflineError
from ._native import ResultsError as ResultsError
from ._native import SpecError as SpecError
from ._native import __version__ as __version__

class Docstore(_NativeDocstore):
    def tools(self) -> List[Callable[[str], str]]:
        """``[search, lookup]``: typed functions over one new explorer."""

def read_results(
    path_or_paths: Union[str, PathLike[str], Sequence[Union[str, PathLike[str]]]],
) -> Iterator[Dict[str, Any]]:
    """The runs of results files (files, shard directories, comma lists) as dicts."""
