"""`WikiEnv`: the ReAct repository's Wikipedia environment, over a react-docstore docstore.

It takes the actions of ReAct's `hotpotqa.ipynb` — `search[entity]`, `lookup[keyword]`,
`finish[answer]`, `think[thought]`, lower-cased and case-sensitive — and answers with the
repository's strings. Search and Lookup are the native explorer's (the same observations as
`react-docstore explore` in the same profile); nothing here reads a page.
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional, Union

from .. import Docstore
from ._api import StepApi
from ._gym import TextSpace, _EnvBase, check_step_api

__all__ = ["WikiEnv", "TextSpace"]

# ReAct's wikienv.py calls its space `textSpace`.
textSpace = TextSpace


class WikiEnv(StepApi, _EnvBase):  # type: ignore[misc, valid-type]
    """The ReAct repository's `wikienv.WikiEnv`, its searches answered by `docstore`.

    `docstore` is what `--docstore` takes (`wikipedia`, `index:DIR`, `corpus:FILE`, ...) or an open
    `react_docstore.Docstore`; `profile` (`paper`, the default here, or `default`), `offline` and
    `cache_dir` open a spec as `Docstore(spec, profile, offline, cache_dir)` does. `step_api`:
    `react` (the repository's: `step` returns four values) or `gymnasium` (five values).
    """

    metadata: dict = {"render_modes": []}

    def __init__(
        self,
        docstore: Union[str, Docstore] = "wikipedia",
        profile: Optional[str] = None,
        *,
        offline: bool = False,
        cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        step_api: str = "react",
    ) -> None:
        super().__init__()
        if isinstance(docstore, Docstore):
            if profile is not None or offline or cache_dir is not None:
                raise ValueError(
                    "`profile`, `offline` and `cache_dir` open a docstore spec: an open Docstore "
                    "keeps its own"
                )
            self.docstore = docstore
        else:
            self.docstore = Docstore(
                os.fspath(docstore),
                profile="paper" if profile is None else profile,
                offline=offline,
                cache_dir=cache_dir,
            )
        self.step_api = check_step_api(step_api)
        self.explorer = self.docstore.explorer()
        self.obs: Optional[str] = None
        self.steps = 0
        self.answer: Optional[str] = None
        self.observation_space = self.action_space = TextSpace()
        self.search_time = 0.0
        self.num_searches = 0

    def _get_obs(self) -> Optional[str]:
        return self.obs

    def _get_info(self) -> dict:
        return {"steps": self.steps, "answer": self.answer}

    def _react_reset(
        self,
        seed: Optional[int] = None,
        return_info: bool = False,
        options: Optional[dict] = None,
        idx: Optional[int] = None,
    ) -> Any:
        if idx is not None:
            raise TypeError("WikiEnv.reset takes no `idx`: a question comes from a wrapper")
        self.obs = "Interact with Wikipedia using search[], lookup[], and finish[].\n"
        self.explorer = self.docstore.explorer()
        self.steps = 0
        self.answer = None
        observation = self._get_obs()
        info = self._get_info()
        return (observation, info) if return_info else observation

    def search_step(self, entity: str) -> None:
        """Search `entity`: the page's first sentences, or the similar titles, become `obs`."""
        started = time.perf_counter()
        self.obs = self.explorer.search(entity)
        self.search_time += time.perf_counter() - started
        self.num_searches += 1

    def _react_step(self, action: str) -> tuple:
        reward = 0
        done = False
        action = action.strip()
        if self.answer is not None:  # already finished
            return self.obs, reward, True, self._get_info()

        if action.startswith("search[") and action.endswith("]"):
            self.search_step(action[len("search[") : -1])
        elif action.startswith("lookup[") and action.endswith("]"):
            self.obs = self.explorer.lookup(action[len("lookup[") : -1])
        elif action.startswith("finish[") and action.endswith("]"):
            self.answer = action[len("finish[") : -1]
            done = True
            self.obs = f"Episode finished, reward = {reward}\n"
        elif action.startswith("think[") and action.endswith("]"):
            self.obs = "Nice thought."
        else:
            self.obs = f"Invalid action: {action}"

        self.steps += 1
        return self.obs, reward, done, self._get_info()

    def get_time_info(self) -> dict:
        """Time spent searching: seconds per search, seconds in all, number of searches."""
        speed = self.search_time / self.num_searches if self.num_searches else 0
        return {
            "call_speed": speed,
            "call_time": self.search_time,
            "num_calls": self.num_searches,
        }

    @property
    def unwrapped(self) -> "WikiEnv":
        return self

    def close(self) -> None:
        """Nothing to release: the docstore closes when the last reference to it goes."""

    def __str__(self) -> str:
        return f"<WikiEnv {self.docstore!r}>"
