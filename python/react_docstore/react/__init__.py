"""The ReAct repository's environment in-process: `from react_docstore.react import wikienv, wrappers`.

`wikienv.WikiEnv(docstore=..., profile="paper")` and the wrappers of `wrappers` (`HotPotQAWrapper`,
`FeverWrapper`, `LoggingWrapper`, `HistoryWrapper`) keep the repository's API and strings, so its
notebooks run with their import line and the arguments of `WikiEnv()` changed; see docs/python.md.
"""

from . import wikienv, wrappers

__all__ = ["wikienv", "wrappers"]
