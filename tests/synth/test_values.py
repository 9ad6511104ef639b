"""Made-up values: inside the schema by construction, natural, in time order; rule rotation; an
even cast; generation on every built-in domain for 50 seeds without an exception."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment, RowChecker
from veritask.policy import Column, SpecError, check_bounds, parse_spec
from veritask.synth import generate
from veritask.synth._analysis import DomainModel
from veritask.synth._designer import DesignError, Scene, SymbolicSetDesigner, faker_for
from veritask.synth._sampler import Sampler, StateView
from veritask.synth._unit import SceneStage, UnitWorker, rotation
from veritask.synth._values import keep_time_order, meaning_provider, person_table
from veritask.task import load_dataset

DOMAINS = builtin_domains()
MOCK = Path(__file__).parents[2] / "src" / "veritask" / "domains" / "mock" / "spec.yaml"


# -- rotation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("count", range(1, 61))
def test_rotation_covers_every_rule(count: int) -> None:
    by_task = {rotation(i, 0, count) for i in range(count)}
    by_retry = {rotation(5, r, count) for r in range(count)}
    assert by_task == by_retry == set(range(count))


# -- schema ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "kind", "bounds"),
    [
        ("x BETWEEN 1 AND 6", "INTEGER", (1, 6)),
        ("x >= 0 AND x <= 100", "INTEGER", (0, 100)),
        ("x > 0", "INTEGER", (1, None)),
        ("0 < x", "REAL", (0, None)),
        ("(x >= -2.5) AND x < 10", "REAL", (-2.5, 10)),
        ("x >= 0 AND x <= cap", "INTEGER", (0, None)),
        ("x < 0 OR x > 5", "INTEGER", (None, None)),
    ],
)
def test_check_bounds(check: str, kind: str, bounds: tuple[object, object]) -> None:
    assert check_bounds(Column(name="x", type=kind, check=check)) == bounds  # type: ignore[arg-type]


def test_row_checker_judges_like_sqlite() -> None:
    checker = RowChecker(load_domain("registrar"))
    row = {"credits": 3}
    assert checker.column_ok("courses", "credits", row)
    assert not checker.column_ok("courses", "credits", {"credits": 7})
    assert not checker.column_ok("courses", "credits", {"credits": None})
    assert checker.column_ok("sections", "enrolled_count", {"enrolled_count": 5, "capacity": 5})
    assert not checker.column_ok("sections", "enrolled_count", {"enrolled_count": 6, "capacity": 5})
    checker.close()


@pytest.mark.parametrize("domain", DOMAINS)
def test_designed_rows_satisfy_the_schema(domain: str) -> None:
    spec = load_domain(domain)
    model = DomainModel.from_spec(spec)
    designer = SymbolicSetDesigner(CompiledDomain.from_spec(spec), model)
    checker = RowChecker(spec)
    for seed in (4, 11, 12, 17):
        scene = designer.design(0, seed, fill=False)
        env = Environment(designer.domain, scene.origin)
        for table in spec.tables:
            for row in env.rows(table.name):
                assert checker.violations(table.name, row) == [], (table.name, row)
        env.close()


def test_registrar_runs_that_crashed_now_finish(tmp_path: Path) -> None:
    summary = generate("registrar", 60, 4, tmp_path / "s4")
    assert summary.tasks == 60 and "scene could not be designed" not in summary.discarded


def test_a_clone_that_breaks_the_schema_falls_back_to_the_seed() -> None:
    spec = load_domain("registrar")
    designer = SymbolicSetDesigner(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))
    rows = {k: [dict(r) for r in v] for k, v in spec.seed.items()}
    rows["courses"].append({**rows["courses"][0], "id": "ZZZ999", "credits": 9})
    env = Environment(designer.domain, designer._image(rows))
    assert len(env.rows("courses")) == len(spec.seed["courses"])


# -- natural values ----------------------------------------------------------------------------


def test_people_get_peoples_names() -> None:
    spec = load_domain("registrar")
    model = DomainModel.from_spec(spec)
    assert person_table(spec.table("staff"), model.actor)
    assert person_table(spec.table("students"), model.actor)
    assert not person_table(spec.table("courses"), model.actor)
    designer = SymbolicSetDesigner(CompiledDomain.from_spec(spec), model)
    env = Environment(designer.domain, designer.design(0, 3, fill=False).origin)
    seeded = {r["id"] for r in spec.seed["staff"]}
    clones = [r["name"] for r in env.rows("staff") if r["id"] not in seeded]
    assert clones and all(len(n.split()) >= 2 for n in clones), clones
    assert not any(re.search(r"\b(Group|Works|House|Point|Central)$", n) for n in clones)


def test_free_text_is_made_of_the_domains_own_clauses() -> None:
    spec = load_domain("travel")
    model = DomainModel.from_spec(spec)
    env = Environment(CompiledDomain.from_spec(spec))
    sampler = Sampler(model, StateView(model, env), random.Random(1), faker_for(1))
    table = spec.table("travel_requests")
    heads = {v["trip_purpose"].split(" in ")[0] for v in spec.seed["travel_requests"]}
    for _ in range(30):
        text = sampler.text_value(table, table.column("trip_purpose"))
        assert text.split(" in ")[0] in heads, text


def test_meaning_picks_a_provider() -> None:
    table = load_domain("mock").table("members")
    assert meaning_provider(table, table.column("name"), "members") == "name"
    email = Column(name="contact_email", type="TEXT")
    assert meaning_provider(table, email, "members") == "email"
    city = Column(name="home", type="TEXT", description="City of residence")
    assert meaning_provider(table, city, "members") == "city"
    assert meaning_provider(table, Column(name="code", type="TEXT"), "members") is None


def _mock_with(**fields: object) -> str:
    line = "{name: title, type: TEXT, not_null: true, description: Title}"
    extra = ", ".join(f"{k}: {json.dumps(v)}" for k, v in fields.items())
    text = MOCK.read_text()
    assert line in text
    return text.replace(line, line[:-1] + ", " + extra + "}")


def test_spec_pool_and_provider_are_used() -> None:
    spec = parse_spec(_mock_with(values=["Middlemarch", "Persuasion"]))
    model = DomainModel.from_spec(spec)
    env = Environment(CompiledDomain.from_spec(spec))
    sampler = Sampler(model, StateView(model, env), random.Random(2), faker_for(2))
    books = spec.table("books")
    assert {sampler.text_value(books, books.column("title")) for _ in range(20)} <= {
        "Middlemarch",
        "Persuasion",
    }
    spec = parse_spec(_mock_with(faker="city"))
    assert spec.table("books").column("title").faker == "city"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"faker": "no_such_provider"}, "unknown Faker provider"),
        ({"values": ["A"], "faker": "city"}, "either values or faker"),
        ({"values": [3]}, "not a TEXT value"),
        ({"values": []}, "at least 1"),
    ],
)
def test_value_sources_are_validated(fields: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(_mock_with(**fields))


def test_time_points_run_forward() -> None:
    pairs = [("booking_step", "departure_step")]
    args = {"booking_step": 30, "departure_step": 10}
    keep_time_order(pairs, args, None, set())
    assert args == {"booking_step": 10, "departure_step": 30}
    args = {"departure_step": 5}
    keep_time_order(pairs, args, {"booking_step": 8, "departure_step": 9}, set())
    assert args == {"departure_step": 8}
    args = {"booking_step": 30, "departure_step": 10}
    keep_time_order(pairs, args, None, {"departure_step"})
    assert args == {"booking_step": 10, "departure_step": 10}
    model = DomainModel.from_spec(load_domain("travel"))
    assert ("booking_step", "departure_step") in model.value_rules.order["flight_bookings"]


# -- generation never ends in a traceback --------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_fifty_seeds_generate_without_an_exception(domain: str, tmp_path: Path) -> None:
    worker = UnitWorker(domain)
    made = 0
    for seed in range(50):
        result = worker.run(domain, seed, seed % 4, 1, 0, tmp_path / str(seed))
        assert "scene could not be designed" not in result.discarded
        made += result.packages
    assert made >= 45


def test_users_are_spread_over_the_cast(tmp_path: Path) -> None:
    generate("mock", 60, 5, tmp_path / "mock")
    users = Counter(p.user_profile.user_id for p in load_dataset(tmp_path / "mock"))
    assert max(users.values()) / sum(users.values()) <= 0.5, users


class _NoScene(SymbolicSetDesigner):
    def design(self, index: int, seed: int, fill: bool = True) -> Scene:
        raise DesignError("the seed rows do not load")


def test_a_unit_that_cannot_be_designed_is_reported(tmp_path: Path) -> None:
    stage = SceneStage("mock", 0, 10, tmp_path)
    stage.setup()
    assert stage._worker is not None
    stage._worker.designer = _NoScene(stage._worker.domain, stage._worker.model)
    result = stage.run(stage.units()[0])
    assert result.packages == 0 and result.discarded == {"scene could not be designed": 10}
    assert stage.done(stage.units()[0])
