"""The faithful agent with a seeded error model: the same seed errs the same way, rate 0 is the
faithful agent call for call, and each error kind makes it fail tasks it otherwise solves."""

from __future__ import annotations

import asyncio

import pytest

from veritask.agent import ScriptedUser
from veritask.agent._error_model import ERROR_KINDS, ErringAgent, ErrorKind, ErrorModel, parse_kinds
from veritask.rollout import TaskSource, run_episode, score
from veritask.synth import generate
from veritask.task import Trajectory


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> TaskSource:
    root = tmp_path_factory.mktemp("mock")
    generate("mock", 6, 3, root)
    return TaskSource.load(root)


def _run(source: TaskSource, errors: ErrorModel, seed: int) -> list[Trajectory]:
    async def episodes() -> list[Trajectory]:
        out = []
        for pkg in source.packages:
            task = source.episode_task(pkg)
            agent = ErringAgent(task.domain.spec, errors, seed)
            traj = await run_episode(task, agent, ScriptedUser(pkg), seed=seed)
            out.append(score(traj, source, pkg))
        return out

    return asyncio.run(episodes())


def test_the_draw_is_seeded_and_follows_the_rate() -> None:
    model = ErrorModel(0.25)
    draws = [model.draw(seed) for seed in range(2000)]
    assert draws == [model.draw(seed) for seed in range(2000)]
    share = sum(d is not None for d in draws) / len(draws)
    assert 0.2 < share < 0.3
    assert {d for d in draws if d is not None} == set(ERROR_KINDS)
    assert all(ErrorModel(0.0).draw(s) is None for s in range(100))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="rate"):
        ErrorModel(1.5)
    with pytest.raises(ValueError, match="unknown error kinds"):
        parse_kinds("premature-end,forgetful")
    assert parse_kinds("wrong-argument, premature-end") == ("premature-end", "wrong-argument")


def test_rate_zero_solves_what_the_faithful_agent_solves(source: TaskSource) -> None:
    rewards = [t.reward for t in _run(source, ErrorModel(0.0), 7)]
    assert rewards == [1.0] * len(source.packages)


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_each_error_kind_fails_tasks(source: TaskSource, kind: ErrorKind) -> None:
    trajectories = _run(source, ErrorModel(1.0, (kind,)), 7)
    failed = [t for t in trajectories if t.reward != 1.0]
    assert failed, f"{kind} never made the faithful agent fail"
    again = _run(source, ErrorModel(1.0, (kind,)), 7)
    assert [t.model_dump_json() for t in again] == [t.model_dump_json() for t in trajectories]
