"""The ReAct repository's wrappers: questions (HotpotQA, FEVER), scoring and trajectory logging.

`HotPotQAWrapper` and `FeverWrapper` read the repository's data files from `data/` of the working
directory, as its notebooks do, or the file given as `questions=`; when an episode ends they score
the answer with the official HotpotQA metric (`react_docstore.metrics`) and fill `info` with the
repository's keys.
"""

from __future__ import annotations

import json
import os
from typing import Any, List, Optional, Tuple, Union

from .. import metrics
from ._api import StepApi
from ._gym import Wrapper, random_index

__all__ = [
    "DATA_DIR",
    "FEVER_SPLIT_FILE",
    "HOTPOTQA_SPLIT_FILE",
    "FeverWrapper",
    "HistoryWrapper",
    "HotPotQAWrapper",
    "LoggingWrapper",
]

DATA_DIR = "data"
HOTPOTQA_SPLIT_FILE = {
    "train": "hotpot_train_v1.1_simplified.json",
    "dev": "hotpot_dev_v1_simplified.json",
    "test": "hotpot_test_v1_simplified.json",
}
FEVER_SPLIT_FILE = {
    "train": "train.jsonl",
    "dev": "paper_dev.jsonl",
}

# The largest question file read (HotpotQA's train set is 0.5 GB with its paragraphs).
MAX_QUESTION_FILE_BYTES = 1 << 30

PathLike = Union[str, "os.PathLike[str]"]


def _question_file(questions: Optional[PathLike], split: str, split_files: dict) -> str:
    if questions is not None:
        return os.fspath(questions)
    if split not in split_files:
        raise ValueError(f"unknown split `{split}`: expected one of {', '.join(split_files)}")
    return f"{DATA_DIR}/{split_files[split]}"


def _read_text(path: str) -> str:
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no question file `{path}`: run from the directory holding `{DATA_DIR}/`, or pass "
            "`questions=FILE`"
        ) from None
    if size > MAX_QUESTION_FILE_BYTES:
        raise ValueError(f"`{path}` is {size} bytes: a question file may hold at most 1 GiB")
    with open(path, encoding="utf-8") as file:
        return file.read()


def _records(path: str) -> List[Tuple[str, dict]]:
    """The records of a JSON array or a JSON Lines file, each with where it is (`record 3`, `line 7`)."""
    text = _read_text(path)
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"`{path}` is not valid JSON: {error}") from None
        return [(f"record {number}", record) for number, record in enumerate(data)]
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as error:
            raise ValueError(f"`{path}` line {number} is not valid JSON: {error}") from None
    return records


def _pairs(path: str, question_field: str, answer_field: str) -> List[Tuple[str, Any]]:
    pairs = []
    for where, record in _records(path):
        if not isinstance(record, dict):
            raise ValueError(f"`{path}` {where} is not a JSON object")
        for field in (question_field, answer_field):
            if field not in record:
                raise ValueError(f"`{path}` {where} has no `{field}`")
        pairs.append((record[question_field], record[answer_field]))
    return pairs


def _em(prediction: str, gold: str) -> bool:
    return bool(metrics.exact_match(prediction, gold))


class _QuestionWrapper(StepApi, Wrapper):
    """What `HotPotQAWrapper` and `FeverWrapper` share: a question list and `reset(idx=...)`."""

    _prefix = ""
    _split_key = ""

    def __init__(self, env: Any, split: str, data: List[Tuple[str, Any]], path: str) -> None:
        super().__init__(env)
        self.data = data
        self.data_idx = 0
        self.split = split
        self.path = path

    def _react_reset(
        self,
        seed: Optional[int] = None,
        return_info: bool = False,
        options: Optional[dict] = None,
        idx: Optional[int] = None,
    ) -> Any:
        self.env._react_reset(seed=seed, return_info=return_info, options=options)
        if idx is None:
            if self.step_api == "gymnasium":
                idx = int(self.unwrapped.np_random.integers(len(self.data)))
            else:
                idx = random_index(len(self.data))
        if not -len(self.data) <= idx < len(self.data):
            raise IndexError(
                f"question index {idx} is out of range: `{self.path}` holds {len(self.data)}"
            )
        self.data_idx = idx
        observation = f"{self._prefix}: {self.data[self.data_idx][0]}"
        info = self._get_info()
        return (observation, info) if return_info else observation

    def _get_info(self) -> dict:
        """What `reset(return_info=True)` gives: the environment's `steps` and `answer`, the
        question and the split. `step` gives the environment's own (`steps`, `answer`), as the
        repository's wrappers do, and adds the score when the episode ends."""
        return {
            "steps": self.steps,
            "answer": self.answer,
            "question": self.data[self.data_idx][0],
            self._split_key: self.split,
        }

    def __len__(self) -> int:
        return len(self.data)


class HotPotQAWrapper(_QuestionWrapper):
    """HotpotQA questions: `reset(idx=i)` gives `Question: ...`; a finished episode is scored.

    The questions are `data/hotpot_{split}...json` of the working directory (the ReAct
    repository's files), or `questions=FILE`: a JSON array or JSON Lines of objects with
    `question` and `answer` (the official, Hugging Face and simplified HotpotQA files all are).
    """

    _prefix = "Question"
    _split_key = "hotpot_split"

    def __init__(self, env: Any, split: str = "dev", *, questions: Optional[PathLike] = None) -> None:
        path = _question_file(questions, split, HOTPOTQA_SPLIT_FILE)
        super().__init__(env, split, _pairs(path, "question", "answer"), path)

    def get_reward(self, info: dict) -> int:
        """1 when the answer matches the gold answer exactly (official normalisation), else 0."""
        if info["answer"] is not None:
            return int(_em(info["answer"], self.data[self.data_idx][1]))
        return 0

    def get_metrics(self, info: dict) -> dict:
        """`reward` and `em` (exact match, a bool) and `f1`: the official HotpotQA metric."""
        if info["answer"] is not None:
            gold = self.data[self.data_idx][1]
            em = _em(info["answer"], gold)
            return {"reward": em, "em": em, "f1": metrics.f1(info["answer"], gold)}
        return {"reward": 0, "em": 0, "f1": 0}

    def _react_step(self, action: str) -> tuple:
        observation, _, done, info = self.env._react_step(action)
        reward = self.get_reward(info)
        if done:
            observation = f"Episode finished, reward = {reward}\n"
            info.update({"gt_answer": self.data[self.data_idx][1], "question_idx": self.data_idx})
            info.update(self.get_metrics(info))
        return observation, reward, done, info


class FeverWrapper(_QuestionWrapper):
    """FEVER claims: `reset(idx=i)` gives `Claim: ...`; the reward is 1 for the right label.

    The claims are `data/paper_dev.jsonl` of the working directory (split `dev`) or
    `data/train.jsonl` (`train`), or `questions=FILE`: JSON Lines with `claim` and `label`.
    """

    _prefix = "Claim"
    _split_key = "fever_split"

    def __init__(self, env: Any, split: str = "dev", *, questions: Optional[PathLike] = None) -> None:
        path = _question_file(questions, split, FEVER_SPLIT_FILE)
        super().__init__(env, split, _pairs(path, "claim", "label"), path)

    def get_reward(self, info: dict) -> int:
        """1 when the answer is the claim's label (official normalisation), else 0."""
        if info["answer"] is not None and _em(info["answer"], self.data[self.data_idx][1]):
            return 1
        return 0

    def _react_step(self, action: str) -> tuple:
        observation, _, done, info = self.env._react_step(action)
        reward = self.get_reward(info)
        if done:
            observation = f"Episode finished, reward = {reward}\n"
            info.update({"gt_answer": self.data[self.data_idx][1], "question_idx": self.data_idx})
            info.update({"em": reward, "reward": reward, "f1": reward})
        return observation, reward, done, info


class LoggingWrapper(StepApi, Wrapper):
    """Keeps each episode's observations and actions (`traj`, `trajs`) and writes them as JSON to
    `{folder}/{file_id}.json` on `write()` or `close()`."""

    def __init__(self, env: Any, folder: str = "trajs", file_id: Optional[int] = None) -> None:
        super().__init__(env)
        self.trajs: List[dict] = []
        self.traj: dict = {"observations": [], "actions": []}
        self.folder = folder
        self.file_id = random_id() if file_id is None else file_id
        self.file_path = f"{self.folder}/{self.file_id}.json"
        os.makedirs(self.folder, exist_ok=True)

    def __len__(self) -> int:
        return len(self.env.data)

    def _react_reset(
        self,
        seed: Optional[int] = None,
        return_info: bool = False,
        options: Optional[dict] = None,
        idx: Optional[int] = None,
    ) -> Any:
        output = self.env._react_reset(seed=seed, return_info=return_info, options=options, idx=idx)
        observation = output[0] if return_info else output
        self.traj = {"observations": [observation], "actions": []}
        return output

    def _react_step(self, action: str) -> tuple:
        observation, reward, done, info = self.env._react_step(action)
        self.traj["observations"].append(observation)
        self.traj["actions"].append(action)
        if done:
            self.traj.update(info)
        return observation, reward, done, info

    def update_record(self) -> None:
        """Move the current episode to `trajs` and start an empty one."""
        if len(self.traj) > 0:
            self.trajs.append(self.traj)
            self.traj = {"observations": [], "actions": []}

    def write(self) -> None:
        """Write every kept episode to `file_path`."""
        self.update_record()
        with open(self.file_path, "w", encoding="utf-8") as file:
            json.dump(self.trajs, file)
            print(f"Saved trajs to {self.file_path}")

    def close(self) -> None:
        self.write()


def random_id() -> int:
    """A file id drawn as the ReAct repository draws it (`np.random.randint(0, 10000000)`)."""
    return random_index(10_000_000)


class HistoryWrapper(StepApi, Wrapper):
    """Observations as the whole history so far (`obs_format="history"`, over a `LoggingWrapper`)
    after `prompt`, or unchanged (`obs_format="obs"`)."""

    def __init__(self, env: Any, obs_format: str, prompt: Optional[str] = None) -> None:
        super().__init__(env)
        if obs_format not in ("obs", "history"):
            raise ValueError(f"unknown obs_format `{obs_format}`: expected `obs` or `history`")
        if obs_format == "history" and not hasattr(self.env, "traj"):
            raise ValueError("obs_format `history` needs a LoggingWrapper inside (an env with `traj`)")
        self.obs_format = obs_format
        self.prompt = prompt if prompt is not None else ""

    def observation(self, observation: str) -> str:
        """The observation this wrapper shows for the inner environment's `observation`."""
        if self.obs_format == "obs":
            return observation
        history = self.env.traj["observations"][0] + "\n"
        steps = zip(self.env.traj["observations"][1:], self.env.traj["actions"])
        for number, (seen, action) in enumerate(steps, 1):
            history += f"Action {number}: {action}\nObservation {number}: {seen}\n\n"
        return self.prompt + history

    def _react_reset(
        self,
        seed: Optional[int] = None,
        return_info: bool = False,
        options: Optional[dict] = None,
        idx: Optional[int] = None,
    ) -> Any:
        output = self.env._react_reset(seed=seed, return_info=return_info, options=options, idx=idx)
        if return_info:
            return self.observation(output[0]), output[1]
        return self.observation(output)

    def _react_step(self, action: str) -> tuple:
        observation, reward, done, info = self.env._react_step(action)
        return self.observation(observation), reward, done, info
