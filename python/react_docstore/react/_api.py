"""`reset` and `step` in either API: the ReAct repository's (gym 0.21) or gymnasium's.

Each environment implements `_react_reset` and `_react_step` with the repository's signatures and
return values; this mixin turns them into the public `reset` and `step` of the environment's
`step_api`.
"""

from __future__ import annotations

from typing import Any, Optional

from ._gym import _EnvBase, gymnasium


class StepApi:
    """The public `reset` and `step`, from `_react_reset` and `_react_step`."""

    step_api: str

    def reset(
        self,
        seed: Optional[int] = None,
        return_info: bool = False,
        options: Optional[dict] = None,
        idx: Optional[int] = None,
    ) -> Any:
        """Start an episode.

        `step_api="react"`: the observation, or `(observation, info)` with `return_info=True`.
        `step_api="gymnasium"`: `(observation, info)`; the question index may also come as
        `options={"idx": n}`, and `seed` seeds the draw of a question when no index is given.
        """
        if self.step_api == "gymnasium":
            if gymnasium is not None:
                # seeds `unwrapped.np_random`, from which a wrapper draws the question
                _EnvBase.reset(self.unwrapped, seed=seed)
            if idx is None and options is not None:
                idx = options.get("idx")
            return self._react_reset(seed=seed, return_info=True, options=options, idx=idx)
        return self._react_reset(seed=seed, return_info=return_info, options=options, idx=idx)

    def step(self, action: str) -> tuple:
        """Run one action: `(obs, reward, done, info)`, or with `step_api="gymnasium"`
        `(obs, reward, terminated, truncated, info)` (`truncated` is always `False`: the episode's
        step budget belongs to the agent, or to `gymnasium.wrappers.TimeLimit`)."""
        observation, reward, done, info = self._react_step(action)
        if self.step_api == "gymnasium":
            return observation, reward, done, False, info
        return observation, reward, done, info

    def _react_reset(
        self,
        seed: Optional[int] = None,
        return_info: bool = False,
        options: Optional[dict] = None,
        idx: Optional[int] = None,
    ) -> Any:
        raise NotImplementedError

    def _react_step(self, action: str) -> tuple:
        raise NotImplementedError
