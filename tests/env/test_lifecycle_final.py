"""Records in an inactive lifecycle state are final in every built-in domain: no tool call can
change any of their columns (the loophole Appendix A had, where only a status change was
refused, so a cancelled booking's refund could be rewritten)."""

from __future__ import annotations

from typing import Any

import pytest

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.policy import Column

DOMAINS = ("travel", "retail", "clinic", "registrar", "gym")


def _other_values(column: Column, value: Any) -> list[Any]:
    if column.enum:
        return [e for e in column.enum if e != value]
    if column.type == "INTEGER":
        return [(value or 0) + 1]
    return [f"{value}x" if value is not None else "x"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_column_of_an_inactive_record_can_change(domain: str) -> None:
    spec = load_domain(domain)
    env = Environment(CompiledDomain.from_spec(spec))
    origin = env.image()
    probed = 0
    for table in spec.tables:
        if table.lifecycle is None or not table.writable:
            continue
        pk = table.primary_key[0].name
        inactive = set(table.lifecycle.inactive_values)
        for row in [r for r in env.rows(table.name) if r[table.lifecycle.column] in inactive]:
            for column in table.columns:
                if column.name == pk or column.computed or not column.updatable:
                    continue
                for value in _other_values(column, row[column.name]):
                    env.restore(origin)
                    result = env.call(f"update_{table.name}", {pk: row[pk], column.name: value})
                    probed += 1
                    assert not (result.ok and result.state_changed), (
                        f"{table.name}[{row[pk]}] ({row[table.lifecycle.column]}):"
                        f" {column.name} {row[column.name]!r} -> {value!r} was accepted"
                    )
    assert probed > 0
