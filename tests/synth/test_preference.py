"""Preference requests: "the cheapest ...", "my latest ..." name the unique best record under a
stated preference and filter; the grounding certificate and the faithful agent resolve them from
one ordered read, and a preference that picks another record (or a tie) is not grounded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError

from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import DomainModel, generate
from veritask.synth._preference import PREFERENCE_TAG, has_preference, made_order
from veritask.synth._refs import preferred_words
from veritask.task import (
    Ask,
    DatasetDir,
    Preference,
    RowRef,
    TaskPackage,
    best_row,
    grounding,
    load_dataset,
    preference_args,
)
from veritask.task._grounded import task_asks


def test_best_row_is_the_unique_extreme_and_refuses_ties_and_gaps() -> None:
    rows = [{"k": "a", "fee": 30}, {"k": "b", "fee": 10}, {"k": "c", "fee": 20}]
    cheap, dear = Preference(column="fee", order="min"), Preference(column="fee", order="max")
    assert best_row(rows, cheap) == {"k": "b", "fee": 10}
    assert best_row(rows, dear) == {"k": "a", "fee": 30}
    assert best_row([*rows, {"k": "d", "fee": 10}], cheap) is None
    assert best_row([*rows, {"k": "e", "fee": None}], cheap) is None
    assert best_row([], cheap) is None


def test_the_preference_read_sorts_by_the_column_and_pages_two_rows() -> None:
    assert preference_args({"city": "Paris"}, Preference(column="fee", order="max")) == {
        "city": "Paris",
        "order_by": "fee",
        "limit": 2,
        "descending": True,
    }
    assert "descending" not in preference_args({}, Preference(column="fee", order="min"))


def test_a_ref_without_a_preference_serializes_as_before_and_needs_a_match() -> None:
    assert RowRef(table="books", match={"title": "Emma"}).model_dump() == {
        "table": "books",
        "match": {"title": "Emma"},
    }
    with pytest.raises(ValidationError):
        RowRef(table="books", match={})
    ref = RowRef(table="books", match={}, prefer=Preference(column="daily_fee", order="min"))
    assert RowRef.model_validate(ref.model_dump()) == ref


def _preferred(pkg: TaskPackage) -> list[RowRef]:
    return [
        r
        for ask in task_asks(pkg.task)
        for r in (ask.target, *ask.refs.values())
        if r is not None and r.prefer is not None
    ]


@pytest.fixture(scope="module")
def clinic_packages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[TaskPackage]]:
    out = tmp_path_factory.mktemp("pref") / "clinic"
    generate("clinic", 6, 0, out)
    return out, load_dataset(out)


def test_preference_packages_are_tagged_grounded_and_read_in_the_witness(
    clinic_packages: tuple[Path, list[TaskPackage]], compiled: dict[str, CompiledDomain]
) -> None:
    root, packages = clinic_packages
    tagged = [p for p in packages if PREFERENCE_TAG in p.tags]
    assert tagged, "no preference request in 6 clinic packages"
    ds, env = DatasetDir(root), Environment(compiled["clinic"])
    for pkg in packages:
        assert (PREFERENCE_TAG in pkg.tags) == has_preference(pkg.task)
    for pkg in tagged:
        reads = [c for c in pkg.witness if c.tool.startswith("query_") and "order_by" in c.args]
        assert reads, pkg.id
        for ref in _preferred(pkg):
            first = ref.prefer is not None and ref.prefer.order == "min"
            said = (
                ("lowest", "earliest", "made first")
                if first
                else ("highest", "latest", "made most recently")
            )
            assert any(w in pkg.task_description for w in said)
        assert grounding(pkg, env, ds.read_state(pkg.origin)) == [], pkg.id
    env.close()


def test_a_preference_that_picks_another_record_is_not_grounded(
    clinic_packages: tuple[Path, list[TaskPackage]], compiled: dict[str, CompiledDomain]
) -> None:
    """The opposite preference names another record: the write no longer answers the request
    (unless the policy alone determines the record, so some, not all, become ungrounded)."""
    root, packages = clinic_packages
    env, ds = Environment(compiled["clinic"]), DatasetDir(root)
    ungrounded = []
    for pkg in [p for p in packages if PREFERENCE_TAG in p.tags]:
        flipped = pkg.model_copy(deep=True)
        for sub in flipped.task.sub_goals:
            sub.ask = _flip(sub.ask) if sub.ask is not None else None
            for fb in sub.fallbacks:
                fb.first = [_flip(a) for a in fb.first]
                fb.then = _flip(fb.then) if fb.then is not None else None
        problems = grounding(flipped, env, ds.read_state(pkg.origin))
        ungrounded += [p.reason for p in problems]
    env.close()
    assert ungrounded


def _flip(ask: Ask) -> Ask:
    def one(ref: RowRef | None) -> RowRef | None:
        if ref is None or ref.prefer is None:
            return ref
        order = "max" if ref.prefer.order == "min" else "min"
        return ref.model_copy(update={"prefer": Preference(column=ref.prefer.column, order=order)})

    refs = {c: r for c, r in ((c, one(r)) for c, r in ask.refs.items()) if r is not None}
    return ask.model_copy(update={"target": one(ask.target), "refs": refs})


def test_the_faithful_agent_finds_the_preferred_record(
    clinic_packages: tuple[Path, list[TaskPackage]], compiled: dict[str, CompiledDomain]
) -> None:
    root, packages = clinic_packages
    ds, domain = DatasetDir(root), compiled["clinic"]
    for pkg in [p for p in packages if PREFERENCE_TAG in p.tags]:
        task = EpisodeTask(
            pkg, domain, "policy", ds.read_state(pkg.origin), ds.read_state(pkg.target)
        )
        traj = asyncio.run(run_episode(task, FaithfulAgent(domain.spec), ScriptedUser(pkg)))
        assert traj.final_distance == 0, pkg.id


def test_the_order_records_were_made_in_reads_as_made_first_or_most_recently() -> None:
    spec = load_domain("telecom")
    tickets, zones = spec.table("tickets"), spec.table("zones")
    assert made_order(tickets.column("id"))
    assert not made_order(zones.column("id"))  # a text code, not an order of making
    ref = RowRef(table="tickets", match={}, prefer=Preference(column="id", order="max"))
    assert preferred_words(DomainModel.from_spec(spec), ref) == " made most recently"
