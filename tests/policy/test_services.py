"""The ``services`` field of a spec: which tables each service owns, validated with the file,
line and field of every problem; absent, it changes no spec and no hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from veritask.domains import builtin_domains, load_domain
from veritask.policy import SpecError, dump_spec, load_spec, parse_spec, spec_from_data

TWO = Path(__file__).parent / "data" / "two_services.yaml"
SERVICES_BLOCK = """services:
  - name: library
    description: Book lending.
    tables: [books, loans]
  - name: library_rooms
    description: Meeting-room bookings.
    tables: [rooms, reservations]
"""


def _with_services(block: str) -> str:
    text = TWO.read_text()
    assert SERVICES_BLOCK in text
    return text.replace(SERVICES_BLOCK, block, 1)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_two_service_spec_loads_and_names_each_tables_service() -> None:
    spec = load_spec(TWO)
    assert [s.name for s in spec.services] == ["library", "library_rooms"]
    assert spec.service_of("loans") == "library"
    assert spec.service_of("reservations") == "library_rooms"
    assert spec.service_of("members") is None


@pytest.mark.parametrize("domain", builtin_domains())
def test_no_builtin_domain_declares_services_and_its_hash_ignores_the_empty_field(
    domain: str,
) -> None:
    spec = load_domain(domain)
    assert spec.services == []
    assert "services:" not in dump_spec(spec)
    data = spec.model_dump(mode="json", exclude_defaults=True)
    assert spec_from_data({**data, "services": []}).spec_hash() == spec.spec_hash()


def test_declaring_services_changes_the_hash() -> None:
    with_field = load_spec(TWO)
    data = with_field.model_dump(mode="json", exclude_defaults=True)
    del data["services"]
    assert spec_from_data(data).spec_hash() != with_field.spec_hash()


BAD = [
    # (services block, line of the problem counted from the ``services:`` line, field, message)
    (
        "services:\n  - name: library\n    tables: [books, loans]\n",
        0,
        "services",
        "two or more services",
    ),
    (
        "services:\n  - name: rooms\n    tables: [books]\n  - name: rooms\n    tables: [loans]\n",
        3,
        "services[1].name",
        "duplicate service 'rooms'",
    ),
    (
        "services:\n  - name: a\n    tables: [books]\n  - name: b\n    tables:\n      - loanz\n",
        5,
        "services[1].tables[0]",
        "unknown table 'loanz'",
    ),
    (
        "services:\n  - name: a\n    tables: [books]\n  - name: b\n    tables:\n      - members\n",
        5,
        "services[1].tables[0]",
        "actor table",
    ),
    (
        "services:\n  - name: a\n    tables: [books, loans]\n  - name: b\n    tables:\n"
        "      - rooms\n      - loans\n",
        6,
        "services[1].tables[1]",
        "already in service 'a'",
    ),
    (
        "services:\n  - name: a\n    tables: [books]\n  - name: Rooms\n    tables: [rooms]\n",
        3,
        "services[1].name",
        "pattern",
    ),
    (
        "services:\n  - name: a\n    tables: [books]\n  - name: b\n    tables: []\n",
        4,
        "services[1].tables",
        "at least 1",
    ),
]


@pytest.mark.parametrize(("block", "offset", "field", "fragment"), BAD)
def test_a_bad_service_list_is_reported_with_file_line_and_field(
    block: str, offset: int, field: str, fragment: str, tmp_path: Path
) -> None:
    text = _with_services(block)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    issue = next(i for i in err.value.issues if i.field == field)
    assert fragment in issue.message
    assert issue.path == str(path)
    assert issue.line == _line_of(text, "services:") + offset
    assert f"{path}:{issue.line}: {field}:" in str(err.value)


TABLES = ["books", "loans", "rooms", "reservations", "members", "ghosts"]
"""What a service may list: the four service tables, the actor, a table that does not exist."""

SERVICE = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["library", "library_rooms", "rooms"]),
        "tables": st.lists(st.sampled_from(TABLES), min_size=1, max_size=4),
    }
)


def _expected(services: list[dict[str, Any]]) -> set[str]:
    """The fields a correct validator flags, worked out independently of it."""
    flagged = {"services"} if len(services) == 1 else set()
    names: list[str] = []
    owned: set[str] = set()
    for i, service in enumerate(services):
        if service["name"] in names:
            flagged.add(f"services[{i}].name")
        names.append(service["name"])
        for j, table in enumerate(service["tables"]):
            if table in ("ghosts", "members") or table in owned:
                flagged.add(f"services[{i}].tables[{j}]")
            owned.add(table)
    return flagged


@pytest.fixture(scope="module")
def two_data() -> dict[str, Any]:
    return load_spec(TWO).model_dump(mode="json", exclude_defaults=True)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(services=st.lists(SERVICE, min_size=1, max_size=3))
def test_every_bad_service_list_is_refused_at_exactly_its_bad_fields(
    two_data: dict[str, Any], services: list[dict[str, Any]]
) -> None:
    expected = _expected(services)
    data = {**two_data, "services": services}
    if not expected:
        spec = spec_from_data(data)
        for service in services:
            assert all(spec.service_of(t) == service["name"] for t in service["tables"])
        return
    with pytest.raises(SpecError) as err:
        spec_from_data(data)
    assert {i.field for i in err.value.issues} == expected


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    owners=st.lists(st.sampled_from([0, 1, 2, None]), min_size=4, max_size=4),
    order=st.permutations(["books", "loans", "rooms", "reservations"]),
)
def test_every_partition_of_the_tables_into_services_loads(
    two_data: dict[str, Any], owners: list[int | None], order: list[str]
) -> None:
    """Any split of the non-actor tables over two or three services (a table may stay
    shared) is valid, and each table is read back as its service's."""
    names = ["library", "library_rooms", "rooms"]
    groups = {
        n: [t for t, o in zip(order, owners, strict=True) if o == k] for k, n in enumerate(names)
    }
    services = [{"name": n, "tables": ts} for n, ts in groups.items() if ts]
    assume(len(services) >= 2)
    spec = spec_from_data({**two_data, "services": services})
    for table, owner in zip(order, owners, strict=True):
        assert spec.service_of(table) == (None if owner is None else names[owner])
    assert spec.service_of("members") is None


def test_the_yaml_text_round_trips_with_services() -> None:
    spec = load_spec(TWO)
    assert parse_spec(dump_spec(spec)) == spec
