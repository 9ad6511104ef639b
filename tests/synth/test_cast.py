"""The Set Designer builds the cast (issue 29, deliverable 1): archetypes are chosen before
exploration, built on the origin state and the profile, and checkable from the origin."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.synth import DomainModel, generate
from veritask.synth._boundaries import OMISSION
from veritask.synth._cast import (
    CastBuilder,
    check_mix,
    construction_problem,
    fair_first,
    schedule,
    slot_archetype,
    wanted,
)
from veritask.synth._designer import SymbolicSetDesigner
from veritask.synth._sampler import StateView
from veritask.task import ARCHETYPES, DatasetDir, TaskPackage, load_dataset, report_dataset

RUNS = [("mock", 0), ("mock", 1), ("gym", 0)]
"""(domain, seed) of the property runs: three runs of 8 packages (about 4 s of CPU together,
the cost of the seed loop), shared by the whole module."""


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    out = {}
    for domain, seed in RUNS:
        path = tmp_path_factory.mktemp(f"cast-{domain}-{seed}")
        generate(domain, 8, seed, path)
        out[(domain, seed)] = path
    return out


def _builder(domain: str) -> CastBuilder:
    spec = load_domain(domain)
    return CastBuilder(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))


def test_slots_are_balanced_in_every_block_of_four() -> None:
    slots = [slot_archetype(i, seed=7) for i in range(40)]
    assert Counter(slots) == dict.fromkeys(ARCHETYPES, 10)
    for block in range(10):
        assert set(slots[4 * block : 4 * block + 4]) == set(ARCHETYPES)
    assert slots == [slot_archetype(i, seed=7) for i in range(40)]  # seeded, deterministic
    assert slots != [slot_archetype(i, seed=8) for i in range(40)]


def test_a_mix_sets_the_proportions_and_one_name_gives_one_archetype() -> None:
    assert Counter(schedule({"mismatch": 1, "edge": 3})) == {"mismatch": 5, "edge": 15}
    assert set(schedule({"edge": 1})) == {"edge"}
    assert {slot_archetype(i, 0, {"rookie": 1}) for i in range(30)} == {"rookie"}
    with pytest.raises(ValueError, match="unknown archetype"):
        check_mix({"hero": 1})
    with pytest.raises(ValueError, match="positive weight"):
        check_mix({"edge": 0})


def test_every_package_carries_its_construction_in_its_origin(
    datasets: dict[tuple[str, int], Path],
) -> None:
    """The property, over several seeds: each package's archetype was built, and what was
    built is there in its origin state (and, for an Edge user, on the state its call met)."""
    for (domain, _), path in datasets.items():
        builder = _builder(domain)
        ds = DatasetDir(path)
        packages = load_dataset(path)
        assert packages
        for pkg in packages:
            assert pkg.construction is not None, pkg.id
            assert construction_problem(builder, pkg, ds.read_state(pkg.origin)) is None, pkg.id
        builder.close()


def test_all_four_archetypes_are_built_over_the_runs(
    datasets: dict[tuple[str, int], Path],
) -> None:
    found = Counter(
        p.user_profile.archetype for path in datasets.values() for p in load_dataset(path)
    )
    assert set(found) == set(ARCHETYPES)


def _first(datasets: dict[tuple[str, int], Path], archetype: str) -> tuple[str, TaskPackage, bytes]:
    """The first package of ``archetype``: its domain, itself and its origin state."""
    for (domain, _), path in datasets.items():
        for pkg in load_dataset(path):
            if pkg.user_profile.archetype == archetype:
                return domain, pkg, DatasetDir(path).read_state(pkg.origin)
    raise AssertionError(f"no {archetype} package")


def test_a_mismatch_belief_contradicts_the_record_and_is_stated(
    datasets: dict[tuple[str, int], Path],
) -> None:
    domain, pkg, origin = _first(datasets, "mismatch")
    built = pkg.construction
    assert built is not None and built.rows
    assert built.belief != built.rows[0].value
    assert built.what in pkg.task.false_beliefs
    assert f"FALSE BELIEF: {built.what}" in pkg.task_description
    builder = _builder(domain)
    wrong = built.model_copy(update={"belief": built.rows[0].value})
    assert construction_problem(builder, pkg.model_copy(update={"construction": wrong}), origin)
    moved = built.rows[0].model_copy(update={"value": built.belief})
    stale = built.model_copy(update={"rows": [moved]})
    assert construction_problem(builder, pkg.model_copy(update={"construction": stale}), origin)


def test_an_edge_call_sits_one_change_from_its_rule(
    datasets: dict[tuple[str, int], Path],
) -> None:
    domain, pkg, origin = _first(datasets, "edge")
    built = pkg.construction
    assert built is not None and built.call is not None and built.rule is not None
    assert built.boundary in ("quota", "state", "flag", "window", "numeric", "multi")
    builder = _builder(domain)
    other = next(r.id for r in load_domain(domain).rules if r.id != built.rule)
    wrong = built.model_copy(update={"rule": other, "call": built.call})
    problem = construction_problem(builder, pkg.model_copy(update={"construction": wrong}), origin)
    assert problem is None or "one change" in problem  # another rule may sit there too
    gone = built.model_copy(update={"call": None})
    assert construction_problem(builder, pkg.model_copy(update={"construction": gone}), origin)


def test_entangled_records_hang_from_one_record_of_the_user(
    datasets: dict[tuple[str, int], Path],
) -> None:
    domain, pkg, origin = _first(datasets, "entangled")
    built = pkg.construction
    assert built is not None and len(built.rows) >= 2
    builder = _builder(domain)
    missing = built.rows[1].model_copy(update={"key": "no-such-row"})
    broken = built.model_copy(update={"rows": [built.rows[0], missing]})
    assert construction_problem(builder, pkg.model_copy(update={"construction": broken}), origin)


def test_a_rookie_request_leaves_out_what_the_write_sets(
    datasets: dict[tuple[str, int], Path],
) -> None:
    _, pkg, _ = _first(datasets, "rookie")
    built = pkg.construction
    assert built is not None and built.call is not None and built.omitted
    call = pkg.witness[built.call]
    assert set(built.omitted) <= set(call.args)
    for sub in pkg.task.sub_goals:
        if sub.ask is not None and sub.ask.tool == call.tool:
            assert not set(built.omitted) & (set(sub.ask.values) | set(sub.ask.refs))


def test_report_shows_the_mix_and_boundaries_per_kind_and_category(
    datasets: dict[tuple[str, int], Path],
) -> None:
    path = datasets[("gym", 0)]
    report = report_dataset(path)
    arch = report["archetypes"]
    packages = load_dataset(path)
    assert arch["built"] == len(packages)
    assert sum(arch["counts"].values()) == sum(1 for p in packages if not p.refusal)
    edges = [p for p in packages if p.user_profile.archetype == "edge"]
    omissions = [
        p for p in packages if p.construction is not None and p.construction.boundary == OMISSION
    ]
    assert all(p.user_profile.archetype == "rookie" for p in omissions)
    seeded = len(edges) + len(omissions)
    assert sum(report["boundaries"]["kinds"].values()) == seeded
    assert report["boundaries"]["kinds"].get(OMISSION, 0) == len(omissions)
    assert sum(report["boundaries"]["categories"].values()) == seeded


def test_a_rookie_at_an_omission_boundary_leaves_out_what_its_rule_tests(
    datasets: dict[tuple[str, int], Path],
) -> None:
    found = [
        (domain, path, p)
        for (domain, _), path in datasets.items()
        for p in load_dataset(path)
        if p.construction is not None and p.construction.boundary == OMISSION
    ]
    assert found  # gym and mock have calculation and integrity rules on omitted values
    for domain, path, pkg in found:
        built = pkg.construction
        assert built is not None and built.rule is not None and built.call is not None
        builder = _builder(domain)
        assert set(builder.boundaries.decided(built.rule)) & set(built.omitted)
        origin = DatasetDir(path).read_state(pkg.origin)
        assert construction_problem(builder, pkg, origin) is None
        wrong = built.model_copy(update={"omitted": ["no_such_column"]})
        problem = construction_problem(
            builder, pkg.model_copy(update={"construction": wrong}), origin
        )
        assert problem is not None


def test_a_short_archetype_goes_before_the_slot_and_one_name_stays_alone() -> None:
    built = {"mismatch": 5, "entangled": 0, "rookie": 3, "edge": 2}
    assert wanted("mismatch", 0, built, None, 6)[:2] == ["entangled", "mismatch"]
    assert wanted("edge", 0, built, None, 6)[0] == "edge"  # short itself: keeps its slot
    assert wanted("edge", 0, {a: 2 for a in ARCHETYPES}, None, 6)[0] == "edge"
    assert wanted("edge", 0, built, {"edge": 1}, 6) == ["edge"]


def test_preferred_users_come_first_only_while_the_cast_stays_even() -> None:
    actors = ["a", "b", "c", "d"]
    assert fair_first(actors, {}, ["d"]) == ["d", "a", "b", "c"]
    assert fair_first(actors, {}, ["d"], after=2) == ["a", "b", "d", "c"]
    # "d" has two tasks more than the least-used user: it keeps its place in the draw
    assert fair_first(actors, {"d": 2}, ["d"]) == actors
    assert fair_first(actors, {"d": 1}, ["d"]) == ["d", "a", "b", "c"]


def test_cast_assembly_gives_every_standing_user_records_to_act_on() -> None:
    spec = load_domain("travel")
    model = DomainModel.from_spec(spec)
    domain = CompiledDomain.from_spec(spec)
    designer = SymbolicSetDesigner(domain, model)
    scene = designer.design(0, 11)
    env = Environment(domain, scene.origin)
    view = StateView(model, env)
    owners = {view.owner("travel_requests", r) for r in view.rows("travel_requests")}
    bookers = {view.owner("hotel_bookings", r) for r in view.rows("hotel_bookings")}
    active = {u["id"] for u in spec.seed["users"] if u["active"] == 1}
    seeded = {view.owner("travel_requests", r) for r in spec.seed["travel_requests"]}
    # the seed gives requests to 7 users; assembly reaches the active ones it left out,
    # except those the policy refuses (a user of an inactive company)
    assert owners > seeded
    assert "u_beta_mgr_01" in owners and "u_beta_mgr_01" in bookers
    assert "u_staff_inactive" not in owners and "u_gamma_01" not in owners
    assert len(bookers & active) >= 6
    env.close()


def test_a_plan_can_ask_for_one_archetype(tmp_path: Path) -> None:
    generate("mock", 4, 3, tmp_path, archetypes={"edge": 1})
    packages = load_dataset(tmp_path)
    assert packages
    assert {p.user_profile.archetype for p in packages} == {"edge"}
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["archetypes"] == {"edge": 1.0}
    with pytest.raises(ValueError, match="unknown archetype"):
        generate("mock", 4, 3, tmp_path / "other", archetypes={"hero": 1})


def test_cli_takes_a_mix_and_report_prints_it(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    args = ["generate", "--domain", "mock", "--n", "4", "--seed", "3", "--out", str(out)]
    done = CliRunner().invoke(cli, [*args, "--archetypes", "mismatch"])
    assert done.exit_code == 0, done.output
    assert {p.user_profile.archetype for p in load_dataset(out)} == {"mismatch"}
    text = CliRunner().invoke(cli, ["report", str(out)]).output
    assert "archetypes (non-refusal) mismatch 3 (100%)" in text  # one refusal
    assert "built 4/4" in text
    assert "boundary-seeded by kind: none" in text
    bad = CliRunner().invoke(cli, [*args[:-1], str(tmp_path / "b"), "--archetypes", "edge=x"])
    assert bad.exit_code != 0 and "a weight is a number" in bad.output
