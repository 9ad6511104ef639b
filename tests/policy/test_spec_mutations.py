"""Mutated specs: every one is refused naming file, line and field, or accepted and compiles.

The built-in ``mock`` spec is mutated (a value replaced by another type, an SQL fragment, a huge
integer; a key deleted or added; a list item duplicated) and run through ``veritask validate``.
Problems that only SQLite finds (a seed row that breaks a constraint, SQL that sqlglot reads
but SQLite does not) are traced back to their line and field too; none of them raises.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.policy._load import _Loader

MOCK = Path(__file__).parents[2] / "src/veritask/domains/mock/spec.yaml"
ISSUE = re.compile(r"^  .+:\d+: [\w.\[\]]+: .+", re.MULTILINE)
EVIL: list[Any] = [
    None, 0, -1, 2**70, 1.5, "", "x", "1); DROP TABLE x; --", "load_extension('x')",
    "(SELECT count(*) FROM vt_changes)", "\x00", "a" * 3000, [], {}, [1, 2], {"a": 1}, True,
    "NEW.id", "OLD.id", "sqlite_master", "members", "TEXT", "read-only",
]  # fmt: skip


def _validate(tmp_path: Path, text: str) -> tuple[int, str, Path]:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output, path


def _assert_named(code: int, output: str, path: Path, field: str | None = None) -> None:
    """Refused, and every problem names the file, a line and a field."""
    assert code == 1, output
    issues = ISSUE.findall(output)
    assert issues and all(str(path) in i for i in issues), output
    if field is not None:
        assert any(f": {field}: " in i for i in issues), output


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else []
    )
    for key, value in items:
        out += _paths(value, (*at, key))
    return out


def _mutate(data: Any, rng: random.Random) -> None:
    at = rng.choice(_paths(data)[1:])
    parent = data
    for key in at[:-1]:
        parent = parent[key]
    key, op = at[-1], rng.randrange(4)
    if op == 0:
        del parent[key]
    elif op == 1 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    elif op == 1:
        parent["zz_unknown"] = 1
    else:
        parent[key] = copy.deepcopy(rng.choice(EVIL))


@pytest.mark.parametrize("seed", range(40))
def test_a_mutated_spec_is_refused_with_line_and_field_or_compiles(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    data = yaml.load(MOCK.read_text(), Loader=_Loader)
    for _ in range(rng.randrange(1, 3)):
        _mutate(data, rng)
    code, output, path = _validate(tmp_path, json.dumps(data, indent=1))  # JSON is YAML
    if code != 0:
        _assert_named(code, output, path)


def _mock_with(old: str, new: str) -> str:
    text = MOCK.read_text()
    assert old in text
    return text.replace(old, new, 1)


SEED_ROW = "- {id: 1, member_id: m_ben, book_id: b_emma, due_step: 5, status: OPEN}"


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ("- {id: 1, member_id: m_ben, book_id: b_emma, status: OPEN}", "NOT NULL"),
        (SEED_ROW.replace("m_ben", "m_nobody"), "FOREIGN KEY"),
        (SEED_ROW.replace("OPEN", "LOST"), "is not one of"),  # caught before SQLite's CHECK
        (SEED_ROW + "\n    " + SEED_ROW, "UNIQUE"),
        (SEED_ROW.replace("5,", "99999999999999999999999,"), "64-bit"),
        ("- {}", "names no column"),
    ],
)  # fmt: skip
def test_a_seed_row_that_breaks_the_schema_names_its_line(
    tmp_path: Path, new: str, reason: str
) -> None:
    code, output, path = _validate(tmp_path, _mock_with(SEED_ROW, new))
    _assert_named(code, output, path)
    assert "seed.loans[" in output and reason in output


RULE = "condition: OLD.status = 'RETURNED'"


@pytest.mark.parametrize(
    ("new", "field"),
    [
        ('condition: ""', "rules[3].condition"),
        ("condition: (SELECT 1 FROM loans WHERE id = OLD.id FOR UPDATE)", "rules[3]"),
        ("condition: OLD.status MATCH 'a'", "rules[3]"),
        ("condition: readfile('/etc/passwd') IS NOT NULL", "rules[3].condition"),
        ("condition: writefile('x', 'y') = 1", "rules[3].condition"),
        ("condition: length(zeroblob(2000000000)) > 0", "rules[3].condition"),
        ("condition: length(printf('%.*c', 2000000000, 'x')) > 0", "rules[3].condition"),
        ("condition: julianday('now') > 0", "rules[3].condition"),
        ("condition: random() > 0", "rules[3].condition"),
        ("condition: changes() > 0", "rules[3].condition"),
        ("condition: EXISTS (SELECT 1 FROM \"vt_meta\")", "rules[3].condition"),
        ("condition: EXISTS (SELECT 1 FROM [vt_changes])", "rules[3].condition"),
        ("condition: (SELECT count(*) FROM pragma_table_info('loans')) > 0", "rules[3].condition"),
        ("condition: (SELECT count(*) FROM generate_series(1, 10000000000)) > 0",
         "rules[3].condition"),
        ("condition: (SELECT count(*) FROM dbstat) > 0", "rules[3].condition"),
    ],
)  # fmt: skip
def test_hostile_rule_sql_is_refused_with_line_and_field(
    tmp_path: Path, new: str, field: str
) -> None:
    code, output, path = _validate(tmp_path, _mock_with(RULE, new))
    _assert_named(code, output, path, field)


TABLE = "tables:\n"
EXTRA = """  - name: {table}
    tier: reference
    access: read-only
    description: x
    columns:
      - {{name: {column}, type: TEXT, primary_key: true, description: x}}
"""


@pytest.mark.parametrize(
    ("table", "column", "field"),
    [
        ("sqlite_stat1", "id", "tables[0].name"),
        ("vt_meta", "id", "tables[0].name"),
        ("extra", "rowid", "tables[0].columns[0].name"),
        ("extra", "oid", "tables[0].columns[0].name"),
    ],
)
def test_names_the_engine_or_sqlite_use_are_refused(
    tmp_path: Path, table: str, column: str, field: str
) -> None:
    extra = TABLE + EXTRA.format(table=table, column=column)
    code, output, path = _validate(tmp_path, _mock_with(TABLE, extra))
    _assert_named(code, output, path, field)


def test_a_duplicate_effect_id_is_refused(tmp_path: Path) -> None:
    data = yaml.load(MOCK.read_text(), Loader=_Loader)
    data["effects"].append(copy.deepcopy(data["effects"][0]))
    code, output, path = _validate(tmp_path, json.dumps(data, indent=1))
    _assert_named(code, output, path, f"effects[{len(data['effects']) - 1}].id")
