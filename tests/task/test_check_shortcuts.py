"""The shortcuts ``check`` takes give the verdicts of the plain computation they replace.

Grounding stops at the first request that grounds a write and answers lookups the witness made
itself from the witness's own result; spoilers find word-like internal ids by set intersection;
the loaded dataset is kept out of the collector's passes. Each is compared here with the plain
computation on generated packages and on packages edited so that they fail.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests._hand_built import hand_built

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, ToolResult
from veritask.policy import Column, ToolSpec
from veritask.synth import generate
from veritask.task import DatasetDir, TaskPackage, check_dataset, load_dataset
from veritask.task._certify import outcome_mismatch
from veritask.task._grounded import Ungrounded, _Grounder, certify_grounded, unstated
from veritask.task._package import Ask, SubGoal, TaskDescription, WitnessCall
from veritask.task._spoiler import IdIndex, find_spoilers


class _Plain(_Grounder):
    """Grounding as it was: every unused request tried in full (no request skipped on sight),
    lookups forgotten after every witness call, and every argument's probes run each time
    they are asked for."""

    def _determined(self, call: WitnessCall, arg: str, value: Any, column: Column) -> bool:
        return self._probe(call, arg, value, column)

    def after(self, call: WitnessCall, result: ToolResult) -> None:
        super().after(call, result)
        self._queries.clear()

    def _write(self, index: int, tool: ToolSpec, call: WitnessCall) -> list[Ungrounded]:
        options = [i for i, a in enumerate(self.asks) if a.tool == tool.name]
        unused = [i for i in options if i not in self.used]
        if not unused:
            return super()._write(index, tool, call)
        tried = [(list(self._problems(index, tool, call, self.asks[i])), i) for i in unused]
        missing, best = min(tried, key=lambda t: (len(t[0]), t[1]))
        if not missing:
            self.used.add(best)
        return missing


def _plain_grounding(pkg: TaskPackage, env: Environment, origin: bytes) -> list[Ungrounded] | None:
    grounder = _Plain(pkg, env)
    env.restore(origin)
    found = unstated(pkg)
    for i, call in enumerate(pkg.witness):
        found += grounder.before(i, call)
        result = env.call(call.tool, call.args)
        if outcome_mismatch(call, result) is not None:
            return None
        grounder.after(call, result)
    return found


@pytest.fixture(scope="module", params=["retail", "travel"])
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shortcuts") / str(request.param)
    generate(str(request.param), 30, 5, root)
    return root


def _edited(ask: Ask) -> Ask:
    """The ask with every stated value changed (so the write no longer answers it)."""
    values = {k: (v + 1 if isinstance(v, int) else f"{v}x") for k, v in ask.values.items()}
    return ask.model_copy(update={"values": values})


def _variants(pkg: TaskPackage) -> Iterator[TaskPackage]:
    """The package, and the package with each sub-goal's request edited in turn."""
    yield pkg
    for n, sub in enumerate(pkg.task.sub_goals):
        if sub.ask is None or not sub.ask.values:
            continue
        subs = list(pkg.task.sub_goals)
        subs[n] = sub.model_copy(update={"ask": _edited(sub.ask)})
        yield pkg.model_copy(update={"task": pkg.task.model_copy(update={"sub_goals": subs})})


def _counting(env: Environment) -> list[str]:
    calls: list[str] = []
    real = env.call

    def call(tool: str, args: Any = None) -> ToolResult:
        calls.append(tool)
        return real(tool, args)

    env.call = call  # type: ignore[method-assign]
    return calls


def test_grounding_matches_the_plain_computation_and_looks_up_less(dataset: Path) -> None:
    ds = DatasetDir(dataset)
    packages = load_dataset(dataset)
    env = Environment(CompiledDomain.from_spec(load_domain(packages[0].domain)))
    calls = _counting(env)
    ours = plain = failing = 0
    for pkg in packages:
        origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
        for variant in _variants(pkg):
            start = len(calls)
            cert, found = certify_grounded(variant, env, origin, target)
            ours += len(calls) - start
            start = len(calls)
            expected = _plain_grounding(variant, env, origin)
            plain += len(calls) - start
            assert cert.certified
            assert found == expected, variant.id
            failing += bool(found)
    assert failing > 0  # the edited requests exercise the path where no request grounds
    assert ours < plain


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab_1-. \u00e9#", max_size=40),
    ids=st.lists(st.text(alphabet="ab_1-.\u00e9", max_size=4), max_size=8),
    known=st.lists(st.sampled_from(["a", "b_1", "a-b", ""]), max_size=3),
)
def test_an_id_index_finds_the_same_internal_ids(
    text: str, ids: list[str], known: list[str]
) -> None:
    spec = load_domain("retail")
    names = frozenset({"order_id"})
    assert find_spoilers(text, spec, IdIndex.of(ids), known, names) == find_spoilers(
        text, spec, set(ids), known, names
    )


def test_check_leaves_the_collector_as_it_found_it(dataset: Path) -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert check_dataset(dataset).ok
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        check_dataset(dataset)
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_witness_lookup_answers_grounding_until_a_write_is_accepted(
    compiled: dict[str, CompiledDomain],
) -> None:
    env = Environment(compiled["mock"])
    args = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}
    lookup = WitnessCall(tool="query_books", args={"title": "Dune"}, ok=True)
    grounder = _Grounder(hand_built(_one_goal(), [], "m_ana"), env)
    calls = _counting(env)
    shown = env.call(lookup.tool, lookup.args)
    grounder.after(lookup, shown)
    assert grounder._query("books", {"title": "Dune"}) is shown.result
    refused = env.call("insert_loans", {**args, "book_id": "b_nope"})
    assert not refused.ok
    grounder.after(WitnessCall(tool="insert_loans", args=args, ok=False), refused)
    assert grounder._query("books", {"title": "Dune"}) is shown.result
    assert calls == ["query_books", "insert_loans"]  # both answered by the witness's lookup
    accepted = env.call("insert_loans", args)
    assert accepted.ok
    grounder.after(WitnessCall(tool="insert_loans", args=args, ok=True), accepted)
    again = grounder._query("books", {"title": "Dune"})
    assert calls[-1] == "query_books"  # looked up again on the state the write left
    assert again == env.call("query_books", {"title": "Dune"}).result


def _one_goal() -> TaskDescription:
    ask = Ask(transaction="lend_book", tool="insert_loans", values={"due_step": 4})
    sub = SubGoal(title="lend", request="Borrow Dune, due step 4.", ask=ask)
    return TaskDescription(who_you_are="me", total_goal="Borrow Dune.", sub_goals=[sub])
