"""`docstore.tools()` in agent libraries as they are: DSPy's ReAct runs a question to the end with a
scripted LM, and LangChain's `StructuredTool.from_function` / `@tool` take the callables."""

from __future__ import annotations

import os

import pytest

import react_docstore
from react_support import react_index  # noqa: F401

# litellm (under dspy) fetches a price list over the network when imported unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ANSWER = "Gesellschaft mit beschränkter Haftung"


def expected(spec: str):
    """What the CLI's explorer answers for the scripted actions, in order."""
    explorer = react_docstore.Docstore(spec).explorer()
    return [explorer.search("VIVA Media"), explorer.lookup("2004"), explorer.lookup("2004")]


def test_dspy_react_runs_a_question_to_the_end_over_the_tools(react_index):
    dspy = pytest.importorskip("dspy")
    from dspy.utils.dummies import DummyLM

    lm = DummyLM(
        [
            {"next_thought": "Search VIVA Media.", "next_tool_name": "search",
             "next_tool_args": {"entity": "VIVA Media"}},
            {"next_thought": "When did it change?", "next_tool_name": "lookup",
             "next_tool_args": {"keyword": "2004"}},
            {"next_thought": "And the next mention.", "next_tool_name": "lookup",
             "next_tool_args": {"keyword": "2004"}},
            {"next_thought": "GmbH it is.", "next_tool_name": "finish", "next_tool_args": {}},
            {"reasoning": "VIVA Media AG became VIVA Media GmbH.", "answer": ANSWER},
        ]
    )  # fmt: skip
    docstore = react_docstore.Docstore(react_index)
    agent = dspy.ReAct("question -> answer", tools=docstore.tools(), max_iters=6)
    with dspy.context(lm=lm):
        prediction = agent(question="VIVA Media AG changed its name in 2004. What is the new acronym?")

    assert prediction.answer == ANSWER
    trajectory = prediction.trajectory
    observations = [trajectory[f"observation_{n}"] for n in range(3)]
    assert [trajectory[f"tool_name_{n}"] for n in range(4)] == ["search", "lookup", "lookup", "finish"]
    assert observations == expected(react_index)
    assert observations[0].startswith("VIVA Media GmbH")
    assert observations[2].startswith("(Result 2 / ")
    # the LM was shown each observation on the call after it
    for n, observation in enumerate(observations, 1):
        shown = "\n".join(str(message["content"]) for message in lm.history[n]["messages"])
        assert observation in shown


def test_langchain_takes_the_tools_as_they_are(react_index):
    pytest.importorskip("langchain_core")
    from langchain_core.tools import StructuredTool, tool

    search, lookup = react_docstore.Docstore(react_index).tools()
    structured = StructuredTool.from_function(search)
    assert structured.name == "search" and list(structured.args) == ["entity"]
    assert structured.description
    decorated = tool(lookup)
    assert decorated.name == "lookup" and list(decorated.args) == ["keyword"]
    first = expected(react_index)
    assert structured.invoke({"entity": "VIVA Media"}) == first[0]
    assert decorated.invoke({"keyword": "2004"}) == first[1]
