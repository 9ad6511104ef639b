"""A spec that validates but cannot generate is refused, by field, before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import builtin_domains, load_domain, spec_path
from veritask.policy import SpecError, load_spec, parse_spec
from veritask.synth import generate, generation_problems

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "unseen_domains").glob("*.yaml"))


def _mock() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(spec_path("mock").read_text())
    return data


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _read_only(data: dict[str, Any]) -> dict[str, Any]:
    """The mock library with every table read-only (and nothing that writes)."""
    for table in data["tables"]:
        table["access"] = "read-only"
    data.pop("transactions", None)
    data["rules"], data["effects"] = [], []
    return data


def test_every_builtin_and_unseen_spec_can_generate() -> None:
    for name in builtin_domains():
        assert generation_problems(load_domain(name)) == [], name
    for path in FIXTURES:
        assert generation_problems(load_spec(path)) == [], path.name


def test_no_writable_table_is_refused_by_validate_and_generate(tmp_path: Path) -> None:
    path = _write(tmp_path, _read_only(_mock()))
    assert load_spec(path)  # the spec itself is valid
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "tables: no table is read-write" in result.output
    with pytest.raises(SpecError, match="no table is read-write"):
        generate(str(path), 5, 0, tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.jsonl").exists()


def test_nobody_to_write_tasks_for_is_refused() -> None:
    text = spec_path("mock").read_text().replace("tier: entity", "tier: reference")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("actor:"))
    found = generation_problems(parse_spec(text))
    assert [loc for loc, _ in found] == [("tables",)]
    assert "tier 'entity'" in found[0][1]


def test_an_agent_decided_value_no_rule_determines_is_located() -> None:
    spec = load_domain("mock")
    tx = spec.transactions[0]
    table = spec.table(tx.tool.removeprefix("insert_").removeprefix("update_"))
    free = next(
        c.name
        for c in table.columns
        if c.name in tx.parameters
        and not any(r.table == table.name and r.tests_value(c.name) for r in spec.rules)
    )
    changed = spec.model_copy(
        update={
            "transactions": [
                tx.model_copy(update={"agent_decides": [free]}),
                *spec.transactions[1:],
            ]
        }
    )
    found = generation_problems(changed)
    assert [loc for loc, _ in found] == [("transactions", 0, "agent_decides", 0)]
    assert f"tests {free}" in found[0][1]
