"""Spec reader limits: complex keys, alias expansion counted in bytes, nesting depth, and
structural errors of a many-table spec located by file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask.policy import SpecError, load_spec
from veritask.policy._load import MAX_TABLES, MAX_YAML_DEPTH, MAX_YAML_EXPANDED_BYTES

MOCK = Path(__file__).parents[2] / "src" / "veritask" / "domains" / "mock" / "spec.yaml"


def _spec_error(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return str(info.value)


def test_complex_key_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\n? [a, b]\n: 1\n", encoding="utf-8")
    assert f"{path}:2: <yaml>: a mapping key is itself a list or mapping" in _spec_error(path)


def test_alias_bomb_of_few_nodes_is_refused_by_bytes(tmp_path: Path) -> None:
    """300 aliases of one 100 kB string: 301 nodes, 30 MB once expanded."""
    text = "name: &n " + "x" * 100_000 + "\ndescription: [" + ", ".join(["*n"] * 300) + "]\n"
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    message = _spec_error(path)
    assert (
        f"YAML aliases expand to more than the limit of {MAX_YAML_EXPANDED_BYTES} bytes" in message
    )
    assert f"{path}:2:" in message


def test_deep_spec_is_refused_before_composing(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("name: " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    assert f"YAML is nested more than {MAX_YAML_DEPTH} levels deep" in _spec_error(path)


def _many_tables(count: int, bad: int) -> str:
    lines = ["name: big", "wiki: {title: Big, persona: You help.}", "tables:"]
    for i in range(count):
        ref = f"t{i - 1}.id" if i != bad else "nowhere.id"
        lines += [
            f"  - name: t{i}",
            "    tier: entity",
            "    access: read-write",
            "    columns:",
            "      - {name: id, type: INTEGER, primary_key: true}",
        ]
        if i:
            lines.append(f"      - {{name: prev_id, type: INTEGER, references: {ref}}}")
    return "\n".join(lines) + "\n"


def test_structural_error_in_a_many_table_spec_is_located(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(_many_tables(400, bad=397), encoding="utf-8")
    message = _spec_error(path)
    line = 3 + 5 + 396 * 6 + 6  # header; table 0 (five lines); 396 of six; the reference
    assert f"{path}:{line}: tables[397].columns[1].references: unknown 'nowhere.id'" in message


def test_many_table_spec_validates(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(_many_tables(400, bad=-1), encoding="utf-8")
    spec = load_spec(path)
    assert spec.has_table("t399") and spec.table("t200").name == "t200"
    assert not spec.has_table("t400")


def test_built_in_spec_still_loads() -> None:
    assert load_spec(MOCK).name == "mock"


def test_spec_past_the_table_limit_is_refused_early_and_located(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(_many_tables(MAX_TABLES + 1, bad=-1), encoding="utf-8")
    message = _spec_error(path)
    assert f"{path}:3: tables: {MAX_TABLES + 1} tables, past the limit of {MAX_TABLES}" in message
