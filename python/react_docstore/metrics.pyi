def exact_match(prediction: str, gold: str) -> bool:
    """The official HotpotQA exact match (answers normalised)."""

def f1(prediction: str, gold: str) -> float:
    """The official HotpotQA F1 (answers normalised)."""
