"""The official HotpotQA metrics (``hotpot_evaluate_v1.py``), as ``score`` and ``eval`` compute
them: answers normalised (lower case, no punctuation or articles, single spaces)."""

from ._native import exact_match, f1

__all__ = ["exact_match", "f1"]
