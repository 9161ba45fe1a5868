"""`react_docstore.react`: the ReAct repository's `WikiEnv` and wrappers — reset and step, their
strings and `info` keys, the official metric, and gymnasium's API when gymnasium is installed."""

from __future__ import annotations

import json
import shutil

import pytest

import react_docstore
from react_docstore import metrics
from react_docstore.react import wikienv, wrappers
from react_support import FIXTURES, QUESTIONS, react_index  # noqa: F401

FIRST_QUESTION = "VIVA Media AG changed it's name in 2004. What does their new acronym stand for?"
FIRST_ANSWER = "Gesellschaft mit beschränkter Haftung"
DONE_KEYS = {"steps", "answer", "gt_answer", "question_idx", "reward", "em", "f1"}


@pytest.fixture
def env(react_index):
    return wrappers.HotPotQAWrapper(
        wikienv.WikiEnv(docstore=react_index, profile="paper"), split="dev", questions=QUESTIONS
    )


def explorer_answers(spec, actions):
    """What a fresh explorer of the same docstore answers: the CLI's observations."""
    explorer = react_docstore.Docstore(spec, profile="paper").explorer()
    return [explorer.step(action) for action in actions]


def test_reset_gives_the_question_and_a_fresh_episode(env):
    assert env.reset(idx=0) == f"Question: {FIRST_QUESTION}"
    env.step("search[VIVA Media]")
    env.step("finish[VIVA]")
    observation, info = env.reset(idx=1, return_info=True)
    assert observation.startswith("Question: Which of Jonny Craig and Pete Doherty")
    assert info == {
        "steps": 0,
        "answer": None,
        "question": observation[len("Question: ") :],
        "hotpot_split": "dev",
    }
    assert len(env) == 20


def test_search_and_lookup_are_the_native_explorers_observations(env, react_index):
    env.reset(idx=0)
    actions = ["Search[VIVA Media]", "Lookup[2004]", "Lookup[2004]", "Lookup[2004]",
               "Search[Mercury]", "Search[viva media]", "Search[VIVA Medai]", "Lookup[Germany]"]  # fmt: skip
    expected = explorer_answers(react_index, actions)
    seen = []
    for number, action in enumerate(actions, 1):
        observation, reward, done, info = env.step(action[0].lower() + action[1:])
        seen.append(observation)
        assert (reward, done) == (0, False)
        assert info == {"steps": number, "answer": None}  # the environment's own, as in the repository
    assert seen == expected
    assert seen[1].startswith("(Result 1 / 2) ")
    assert seen[3] == "No more results.\n"
    assert seen[4].startswith("Could not find [Mercury]. Similar: ['Mercury', ")


def test_a_lookup_before_any_search_and_after_reset_sees_no_page(env, react_index):
    env.reset(idx=0)
    env.step("search[VIVA Media]")
    env.reset(idx=0)
    observation, _, _, _ = env.step("lookup[2004]")
    assert observation == explorer_answers(react_index, ["Lookup[2004]"])[0]
    assert observation == "No more results.\n"


@pytest.mark.parametrize(
    "action, observation",
    [
        ("think[the page says 2004]", "Nice thought."),
        ("  think[padded]  ", "Nice thought."),
        ("Search[VIVA Media]", "Invalid action: Search[VIVA Media]"),
        ("search VIVA Media", "Invalid action: search VIVA Media"),
        ("ask[a librarian] ", "Invalid action: ask[a librarian]"),
        ("", "Invalid action: "),
    ],
)
def test_thoughts_and_invalid_actions_are_observations_and_count_as_steps(env, action, observation):
    env.reset(idx=0)
    assert env.step(action) == (
        observation,
        0,
        False,
        {"steps": 1, "answer": None},
    )


def test_finish_ends_the_episode_with_the_official_metric(env):
    env.reset(idx=0)
    env.step("search[VIVA Media]")
    observation, reward, done, info = env.step(f"finish[{FIRST_ANSWER.upper()}]")
    assert (observation, reward, done) == ("Episode finished, reward = 1\n", 1, True)
    assert set(info) == DONE_KEYS
    assert info["em"] is True and info["reward"] is True
    assert info["f1"] == 1.0
    assert (info["steps"], info["answer"]) == (2, FIRST_ANSWER.upper())
    assert (info["gt_answer"], info["question_idx"]) == (FIRST_ANSWER, 0)


def test_a_wrong_answer_scores_zero_em_and_the_official_f1(env):
    env.reset(idx=0)
    observation, reward, done, info = env.step("finish[the Gesellschaft]")
    assert (observation, reward, done) == ("Episode finished, reward = 0\n", 0, True)
    assert info["em"] is False and info["reward"] is False
    # one shared token of 1 and of 4 (articles dropped): 2 * 1 * 0.25 / 1.25
    assert info["f1"] == pytest.approx(0.4)
    assert info["f1"] == pytest.approx(metrics.f1("the Gesellschaft", FIRST_ANSWER))


def test_yes_no_answers_score_zero_f1_unless_equal(tmp_path, react_index):
    questions = tmp_path / "yes.json"
    questions.write_text(json.dumps([{"question": "Is it?", "answer": "yes"}]))
    env = wrappers.HotPotQAWrapper(wikienv.WikiEnv(docstore=react_index), questions=questions)
    env.reset(idx=0)
    assert env.step("finish[yes it is]")[3]["f1"] == 0
    env.reset(idx=0)
    assert env.step("finish[Yes.]")[3]["f1"] == 1.0


def test_after_finish_every_step_is_done_and_changes_nothing(env):
    env.reset(idx=0)
    finished = env.step(f"finish[{FIRST_ANSWER}]")
    again = env.step("search[VIVA Media]")
    assert again[:3] == ("Episode finished, reward = 1\n", 1, True)
    assert again[3]["steps"] == finished[3]["steps"] == 1
    assert again[3]["answer"] == FIRST_ANSWER


def test_reset_without_an_index_draws_one_as_numpy_does(env):
    numpy = pytest.importorskip("numpy")
    numpy.random.seed(7)
    expected = numpy.random.RandomState(7).randint(20)
    env.reset()
    assert env.data_idx == expected


def test_the_question_file_comes_from_data_in_the_working_directory(tmp_path, monkeypatch, react_index):
    (tmp_path / "data").mkdir()
    shutil.copy(QUESTIONS, tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    env = wrappers.HotPotQAWrapper(wikienv.WikiEnv(docstore=react_index), split="dev")
    assert env.reset(idx=0) == f"Question: {FIRST_QUESTION}"
    with pytest.raises(FileNotFoundError, match="hotpot_test_v1_simplified.json"):
        wrappers.HotPotQAWrapper(env.env, split="test")
    with pytest.raises(ValueError, match="unknown split `validation`"):
        wrappers.HotPotQAWrapper(env.env, split="validation")


def test_bad_question_files_are_named_with_the_record(tmp_path, react_index):
    base = wikienv.WikiEnv(docstore=react_index)
    no_answer = tmp_path / "no-answer.json"
    no_answer.write_text(json.dumps([{"question": "a", "answer": "b"}, {"question": "c"}]))
    with pytest.raises(ValueError, match=r"`.*no-answer.json` record 1 has no `answer`"):
        wrappers.HotPotQAWrapper(base, questions=no_answer)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "a", "answer": "b"}\n{"question": \n')
    with pytest.raises(ValueError, match=r"`.*broken.jsonl` line 2 is not valid JSON"):
        wrappers.HotPotQAWrapper(base, questions=broken)
    env = wrappers.HotPotQAWrapper(base, questions=QUESTIONS)
    with pytest.raises(IndexError, match="question index 20 is out of range"):
        env.reset(idx=20)


def test_fever_claims_are_scored_by_their_label(react_index):
    env = wrappers.FeverWrapper(
        wikienv.WikiEnv(docstore=react_index), split="dev", questions=FIXTURES / "fever" / "paper_dev.jsonl"
    )
    observation, info = env.reset(idx=1, return_info=True)
    assert observation == "Claim: Tilda Swinton is a vegan."
    assert info["fever_split"] == "dev"
    observation, reward, done, info = env.step("finish[NOT ENOUGH INFO]")
    assert (observation, reward, done) == ("Episode finished, reward = 1\n", 1, True)
    assert (info["em"], info["reward"], info["f1"]) == (1, 1, 1)
    assert (info["gt_answer"], info["question_idx"]) == ("NOT ENOUGH INFO", 1)
    env.reset(idx=1)
    assert env.step("finish[SUPPORTS]")[1:3] == (0, True)


def test_the_logging_wrapper_keeps_and_writes_trajectories(env, tmp_path):
    logged = wrappers.LoggingWrapper(env, folder=str(tmp_path / "trajs"), file_id=5)
    question = logged.reset(idx=0)
    logged.step("search[VIVA Media]")
    _, _, done, info = logged.step(f"finish[{FIRST_ANSWER}]")
    assert done and logged.traj["observations"][0] == question
    assert logged.traj["actions"] == ["search[VIVA Media]", f"finish[{FIRST_ANSWER}]"]
    assert logged.traj["em"] is True and len(logged) == 20
    logged.close()
    written = json.loads((tmp_path / "trajs" / "5.json").read_text())
    assert written[0]["actions"] == logged.trajs[0]["actions"]
    assert written[0]["gt_answer"] == FIRST_ANSWER


def test_an_open_docstore_keeps_its_own_profile(react_index):
    docstore = react_docstore.Docstore(react_index, profile="default")
    env = wikienv.WikiEnv(docstore=docstore)
    env.reset()
    assert env.step("lookup[x]")[0] == docstore.explorer().lookup("x")
    with pytest.raises(ValueError, match="open Docstore keeps its own"):
        wikienv.WikiEnv(docstore=docstore, profile="paper")


def test_unknown_step_api_is_refused(react_index):
    with pytest.raises(ValueError, match="unknown step_api `gym`"):
        wikienv.WikiEnv(docstore=react_index, step_api="gym")


# gymnasium's checker warns of `reset`'s `return_info`: the repository's API keeps it
@pytest.mark.filterwarnings("ignore:.*return_info")
def test_with_gymnasium_the_environment_is_a_gymnasium_env(react_index):
    gymnasium = pytest.importorskip("gymnasium")
    env = wrappers.HotPotQAWrapper(
        wikienv.WikiEnv(docstore=react_index, step_api="gymnasium"), questions=QUESTIONS
    )
    assert isinstance(env, gymnasium.Env) and isinstance(env.unwrapped, gymnasium.Env)
    assert isinstance(env.observation_space, gymnasium.spaces.Space)
    assert env.observation_space.contains("any text") and not env.action_space.contains(3)
    observation, info = env.reset(options={"idx": 0})
    assert observation == f"Question: {FIRST_QUESTION}" and info["steps"] == 0
    first = env.step("search[VIVA Media]")
    assert len(first) == 5 and first[1:4] == (0, False, False)
    observation, reward, terminated, truncated, info = env.step(f"finish[{FIRST_ANSWER}]")
    assert (reward, terminated, truncated, info["em"]) == (1, True, False, True)
    drawn = {env.reset(seed=seed)[0] for seed in (3, 3)}
    assert len(drawn) == 1
    from gymnasium.utils.env_checker import check_env

    check_env(env.unwrapped, skip_render_check=True)
    limited = gymnasium.wrappers.TimeLimit(env, max_episode_steps=2)
    limited.reset(options={"idx": 0})
    limited.step("think[a]")
    assert limited.step("think[b]")[3] is True
