"""Cloned rows stay coherent: a new name carries its own e-mail, no series marks, a code that
follows the row it was cloned from. Checked over every built-in domain and every unseen fixture, a few seeds each."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.policy import DomainSpec
from veritask.synth._analysis import DomainModel
from veritask.synth._designer import SymbolicSetDesigner
from veritask.synth._values import renamed, variant

FIXTURES = Path(__file__).parents[1] / "fixtures" / "unseen_domains"
SPECS = builtin_domains() + sorted(str(p) for p in FIXTURES.glob("*.yaml"))
SERIES = re.compile(r"\s(?:II|III|IV|V|Plus)(?:\s(?:II|III|IV|V|Plus))*$")


def _clones(spec: DomainSpec, seeds: tuple[int, ...]) -> list[tuple[str, str, dict[str, object]]]:
    """(table, label column, row) for every row the designer added to the seed."""
    model = DomainModel.from_spec(spec)
    designer = SymbolicSetDesigner(CompiledDomain.from_spec(spec), model)
    found = []
    for seed in seeds:
        env = Environment(designer.domain, designer.design(0, seed, fill=False).origin)
        for table in spec.tables:
            label = model.label[table.name]
            pk = table.primary_key[0].name if table.primary_key else None
            if not label or pk is None:
                continue
            seeded = {r[pk] for r in spec.seed.get(table.name, [])}
            found += [(table.name, label, r) for r in env.rows(table.name) if r[pk] not in seeded]
        env.close()
    return found


def _name_parts(name: str) -> set[str]:
    return {re.sub(r"[^a-z]", "", w.lower()) for w in name.split()} - {""}


@pytest.mark.parametrize("domain", SPECS, ids=lambda d: Path(d).stem)
def test_cloned_rows_are_coherent(domain: str) -> None:
    spec = load_domain(domain)
    clones = _clones(spec, (0, 3, 11))
    assert clones
    for table, label, row in clones:
        name = str(row[label])
        seeds = spec.seed.get(table, [])
        marked = SERIES.search(name)
        assert not (marked and name[: marked.start()] in {str(s[label]) for s in seeds}), name
        others = set().union(*(_name_parts(str(s[label])) for s in seeds)) - _name_parts(name)
        others = {p for p in others if len(p) >= 3}
        for col in ("email", "username", "handle", "login"):
            value = str(row.get(col) or "").lower()
            assert not any(p in value for p in others), (table, name, col, value)


def test_a_clone_takes_the_code_of_the_row_it_copies() -> None:
    spec = load_domain(str(FIXTURES / "parts_shop.yaml"))
    for table, _, row in _clones(spec, (0, 3, 11)):
        if table != "parts":
            continue
        sku = str(row["sku"]).rsplit("_", 1)[0]
        seed = next(s for s in spec.seed["parts"] if s["sku"] == sku)
        assert row["family"] == seed["family"], row
        assert row["fits_model"] == seed["fits_model"], row


def test_a_name_derived_column_follows_the_name() -> None:
    assert renamed("ana.ribeiro@example.com", "Ana Ribeiro", "Jeremy Sullivan") == (
        "jeremy.sullivan@example.com"
    )
    assert renamed("minji.cho@example.com", "Min-ji Cho", "Dr. Kai Lee") == "kai.lee@example.com"
    assert renamed("@ARibeiro", "Dr. Ana Ribeiro", "Dr. Jo Sullivan") == "@ASullivan"
    assert renamed("ACTIVE", "Ana Ribeiro", "Jeremy Sullivan") == "ACTIVE"
    assert renamed(3, "Ana Ribeiro", "Jeremy Sullivan") == 3


@pytest.mark.parametrize("label", ["Saver", "Premier Checking", "Select Saver", "Front pads"])
def test_variants_carry_no_series_mark_and_never_stack(label: str) -> None:
    rng = random.Random(5)
    name = label
    for _ in range(30):
        name, before = variant(name, rng), name
        assert not SERIES.search(name) and name != before
        assert len(name.split()) <= len(label.split()) + 1, name
