"""User turns in TRL's environment mode: the ``respond_to_user`` tool carries the scripted user's
later turns (a multi-sub-goal task reaches 1.0 only through it), the single-turn filter keeps
exactly the tasks with one sub-goal and no revised request, and compact prompts keep the asked
procedures and drop the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from veritask.agent import STOP
from veritask.integrations import VeritaskEnv
from veritask.integrations._compact import LEFT_OUT, task_transactions
from veritask.integrations.trl import build_grpo_dataset, grpo_rows
from veritask.integrations.trl_users import (
    USER_TOOL,
    USER_TOOL_INSTRUCTION,
    make_user_environment_class,
    single_turn,
    single_turn_tasks,
)
from veritask.synth import generate
from veritask.task import TaskPackage


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("trl-users") / "travel"
    generate("travel", 12, 7, out)
    return str(out)


@pytest.fixture(scope="module")
def packages(dataset: str) -> list[TaskPackage]:
    return list(VeritaskEnv(dataset).source.packages)


def _multi(packages: list[TaskPackage]) -> TaskPackage:
    return next(
        p
        for p in packages
        if len(p.task.sub_goals) > 1 and not p.refusal and p.witness
        if all(not fb.first and fb.then is None for s in p.task.sub_goals for fb in s.fallbacks)
    )


def _play(env: Any, package: TaskPackage) -> None:
    for call in package.witness:
        getattr(env, call.tool)(**call.args)


def test_the_user_tool_brings_the_next_sub_goal(dataset: str, packages: list[TaskPackage]) -> None:
    task = _multi(packages)
    env = make_user_environment_class(dataset)()
    env.reset(task_id=task.id)
    _play(env, task)
    replies = []
    for _ in range(2 * len(task.task.sub_goals) + 2):
        replies.append(env.respond_to_user(message="Done. Is there anything else?"))
        if replies[-1].startswith(STOP):
            break
    assert replies[-1].startswith(STOP)
    second = task.task.sub_goals[1].request.removeprefix("Ask the agent to ").rstrip(".")
    assert any(second[1:30] in reply for reply in replies), replies
    assert env.get_reward() == 1.0
    users = [m for m in env.veritask_env.messages if m["role"] == "user"]
    assert len(users) == len(replies)  # the opening, then one per reply but the final stop


def test_the_user_tool_schema_is_what_trl_reads(dataset: str) -> None:
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    cls = make_user_environment_class(dataset)
    schema = get_json_schema(getattr(cls(), USER_TOOL))["function"]
    assert schema["name"] == USER_TOOL
    assert schema["parameters"]["required"] == ["message"]
    assert schema["parameters"]["properties"]["message"]["type"] == "string"
    assert cls.__name__ == "VeritaskTravelUserEnv"


def test_the_user_tool_needs_a_reset(dataset: str) -> None:
    with pytest.raises(RuntimeError, match="reset"):
        make_user_environment_class(dataset)().respond_to_user(message="hello")


def test_single_turn_filter(dataset: str, packages: list[TaskPackage]) -> None:
    ids = single_turn_tasks(dataset)
    expected = [
        p.id
        for p in packages
        if len(p.task.sub_goals) == 1
        and all(fb.then is None and not fb.first for fb in p.task.sub_goals[0].fallbacks)
    ]
    assert ids == expected and 0 < len(ids) < len(packages)
    assert not single_turn(_multi(packages))
    rows = grpo_rows(dataset, single_turn_only=True)
    assert [r["task_id"] for r in rows] == ids


def test_compact_prompts_keep_the_asked_procedures(
    dataset: str, packages: list[TaskPackage]
) -> None:
    full = {r["task_id"]: r["prompt"][0]["content"] for r in grpo_rows(dataset)}
    compact = {r["task_id"]: r["prompt"][0]["content"] for r in grpo_rows(dataset, compact=True)}
    spec = VeritaskEnv(dataset).source.dataset.domain_spec("travel")
    spec_names = {t.id: t.name for t in spec.transactions}
    for pkg in packages:
        text = compact[pkg.id]
        assert LEFT_OUT in text and len(text) < len(full[pkg.id])
        ids = task_transactions(pkg)  # procedure ids, and ``tool:NAME`` for an ask by tool
        asked = {t.name for t in spec.transactions if t.id in ids or f"tool:{t.tool}" in ids}
        for name in spec_names.values():
            assert (f"### Transaction: {name}\n" in text) == (name in asked), (pkg.id, name)
        assert "## Section 5:" in text and "## Section 0:" in text


def test_user_tool_rows_and_compact_prompts_start_episodes(
    dataset: str, packages: list[TaskPackage]
) -> None:
    pytest.importorskip("datasets")
    rows = build_grpo_dataset(dataset, compact=True, user_tool=True)
    row = rows[0]
    assert row["prompt"][0]["content"].endswith(USER_TOOL_INSTRUCTION)
    env = make_user_environment_class(dataset)()
    assert env.reset(**row) == ""  # the prompt has the system message and the user's opening


def test_grpo_trainer_lists_the_user_tool(
    dataset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trl = pytest.importorskip("trl")
    pytest.importorskip("torch")
    from tests.integrations.test_trl import _tiny_tokenizer_and_model

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    cls = make_user_environment_class(dataset)
    rows = build_grpo_dataset(dataset, compact=True, user_tool=True).select(range(2))
    tok, model = _tiny_tokenizer_and_model()
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        report_to="none",
        use_cpu=True,
        bf16=False,
    )
    trainer = trl.GRPOTrainer(
        model=model, processing_class=tok, args=args, train_dataset=rows, environment_factory=cls
    )
    assert USER_TOOL in {t.__name__ for t in trainer.tools}
    rendered = tok.apply_chat_template(
        rows[0]["prompt"], tools=trainer.tools, tokenize=False, add_generation_prompt=True
    )
    assert f'"name": "{USER_TOOL}"' in rendered
