"""Attribution by execution: a failed trajectory is TASK when the faithful agent cannot solve the
task from its text, TRAJECTORY when it can and the assistant failed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from veritask.env import CompiledDomain, Environment
from veritask.evolve import FaithfulSolver, attribute, run_role
from veritask.policy import render_wiki
from veritask.rollout import RoleFactory, TaskSource
from veritask.task import (
    Ask,
    DatasetDir,
    RowRef,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
    grounding,
)

DUNE = RowRef(table="books", match={"title": "Dune"})


def _dataset(root: Path, compiled: CompiledDomain, ask: Ask, request: str, due: int) -> TaskSource:
    """One mock task: Ana borrows Dune (due step ``due``), asked for by ``ask``."""
    env = Environment(compiled)
    origin = env.image()
    args: dict[str, Any] = {"member_id": "m_ana", "book_id": "b_dune", "due_step": due}
    witness = []
    for tool, call in (("query_books", {"title": "Dune"}), ("insert_loans", args)):
        got = env.call(tool, call).to_json()
        witness.append(WitnessCall(tool=tool, args=call, ok=got["ok"], result=got["result"]))
    target = env.image()
    ds = DatasetDir(root)
    task = TaskDescription(
        who_you_are="Ana",
        total_goal="Borrow a book.",
        sub_goals=[SubGoal(title="Lend", request=request, ask=ask)],
    )
    pkg = TaskPackage(
        id="mock-t-000000",
        domain="mock",
        spec_hash=compiled.spec.spec_hash(),
        policy=ds.put_policy(render_wiki(compiled.spec)),
        task=task,
        task_description=task.render(),
        user_profile=UserProfile(user_id="m_ana", name="Ana", archetype="rookie"),
        origin=ds.put_state(origin),
        target=ds.put_state(target),
        witness=witness,
        difficulty="L1",
        tags=["linear"],
        rules_exercised=[],
        boundary_hits=0,
        seed=0,
        generator="test",
    )
    ds.manifest.write_text(pkg.model_dump_json() + "\n")
    return TaskSource.load(root)


def _grounded(source: TaskSource) -> bool:
    pkg = source.packages[0]
    env = Environment(source.domain(pkg.domain))
    return not grounding(pkg, env, source.dataset.read_state(pkg.origin))


def test_an_ungrounded_task_is_attributed_task(
    tmp_path: Path, compiled: dict[str, CompiledDomain]
) -> None:
    vague = Ask(transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE})
    source = _dataset(tmp_path, compiled["mock"], vague, "Borrow Dune.", due=9)
    assert not _grounded(source)  # the witness's due step 9 is said nowhere
    pkg = source.packages[0]
    failed = asyncio.run(run_role(source, pkg, RoleFactory("noop"), seed=1))
    assert failed.reward == 0.0
    found = asyncio.run(attribute(source, pkg, FaithfulSolver(), seed=1))
    assert found.kind == "TASK"


def test_a_grounded_task_failed_by_the_noop_agent_is_attributed_trajectory(
    tmp_path: Path, compiled: dict[str, CompiledDomain]
) -> None:
    ask = Ask(
        transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE}, values={"due_step": 4}
    )
    source = _dataset(tmp_path, compiled["mock"], ask, "Borrow Dune, due step 4.", due=4)
    assert _grounded(source)
    pkg = source.packages[0]
    failed = asyncio.run(run_role(source, pkg, RoleFactory("noop"), seed=1))
    assert failed.reward == 0.0
    found = asyncio.run(attribute(source, pkg, FaithfulSolver(), seed=1))
    assert found.kind == "TRAJECTORY"
    assert "solves" in found.detail
