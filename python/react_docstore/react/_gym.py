"""The base classes of the ReAct environments: `gymnasium.Env` when gymnasium is installed.

The ReAct repository's classes derive from gym 0.21's `gym.Env` and `gym.Wrapper`, whose `reset`
returns the observation and whose `step` returns four values. Here every environment keeps that
API by default (`step_api="react"`); with `step_api="gymnasium"` the same environment follows
gymnasium's (`reset` returns `(observation, info)`, `step` five values), and when gymnasium is
importable every class is a `gymnasium.Env`, its spaces `gymnasium.spaces.Space`s of text.
"""

from __future__ import annotations

import random
from typing import Any

try:
    import gymnasium
except ImportError:  # gymnasium is optional
    gymnasium = None

try:
    import numpy
except ImportError:  # numpy is optional: the standard library draws instead
    numpy = None

STEP_APIS = ("react", "gymnasium")

if gymnasium is not None:
    _EnvBase: type = gymnasium.Env
    _SpaceBase: type = gymnasium.spaces.Space
else:
    _EnvBase = object
    _SpaceBase = object


class TextSpace(_SpaceBase):  # type: ignore[misc, valid-type]
    """Any Python string: the observations and the actions of the ReAct environments."""

    def __init__(self) -> None:
        if gymnasium is not None:
            super().__init__(shape=None, dtype=None)

    def contains(self, x: Any) -> bool:
        """Whether `x` is a member of this space: any `str`."""
        return isinstance(x, str)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random word of 1 to 16 lower-case letters (as an action, an invalid one)."""
        if gymnasium is not None:
            draw = self.np_random
            length = int(draw.integers(1, 17))
            return "".join(chr(ord("a") + int(code)) for code in draw.integers(0, 26, size=length))
        return "".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(1, 16)))

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    def __repr__(self) -> str:
        return "TextSpace()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace)

    def __hash__(self) -> int:
        return hash(TextSpace)


def check_step_api(step_api: str) -> str:
    """`step_api` itself, or a `ValueError` naming it; `"gymnasium"` needs gymnasium installed."""
    if step_api not in STEP_APIS:
        raise ValueError(f"unknown step_api `{step_api}`: expected `react` or `gymnasium`")
    if step_api == "gymnasium" and gymnasium is None:
        raise ImportError("step_api `gymnasium` needs the gymnasium package: pip install gymnasium")
    return step_api


def random_index(n: int) -> int:
    """A question index drawn as the ReAct repository draws it (`np.random.randint(n)`)."""
    if numpy is not None:
        return int(numpy.random.randint(n))
    return random.randrange(n)


class Wrapper(_EnvBase):  # type: ignore[misc, valid-type]
    """gym 0.21's `Wrapper`: holds `env` and reads through to it what it does not define itself."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env":
            raise AttributeError(f"{type(self).__name__} has no attribute `{name}`")
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    @property
    def step_api(self) -> str:
        return self.env.step_api

    def close(self) -> None:
        return self.env.close()

    def __str__(self) -> str:
        return f"<{type(self).__name__}{self.env}>"

    def __repr__(self) -> str:
        return str(self)
