"""Hostile specs: each attack is refused by ``veritask validate`` with a line/field message.

Specs come from users and from a model, so spec SQL is an attack path. Every attack below is
refused with exit code 1, names the file, line and field, and writes no file. The second layer
(the build's authorizer and trigger probe) is tested on specs built without validation.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import builtin_domains, load_domain
from veritask.env import build_image
from veritask.policy import DomainSpec, SpecError, parse_spec
from veritask.policy._load import MAX_SPEC_BYTES

MOCK = Path(__file__).parents[2] / "src/veritask/domains/mock/spec.yaml"
RULE = "condition: OLD.status = 'RETURNED'"
EFFECT = "UPDATE books SET available = 0 WHERE id = NEW.book_id;"


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _validate(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["validate", str(path)])
    return result.exit_code, result.output


def _evil(tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    text = MOCK.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    return path, text


def _attach(target: Path) -> str:
    return (
        f"condition: \"1) THEN 1 END; END; ATTACH DATABASE '{target}' AS p; CREATE TABLE p.x (a);"
        ' CREATE TRIGGER t2 BEFORE UPDATE ON loans BEGIN SELECT CASE WHEN (1"'
    )


@pytest.mark.parametrize(
    ("old", "new", "field", "fragment"),
    [
        (RULE, "condition: \"0) THEN 1 END; UPDATE books SET available = 1; SELECT CASE WHEN (0\"",
         "rules[3].condition", "';' is not allowed"),
        (RULE, "condition: (SELECT nope FROM books WHERE id = OLD.book_id) = 1",
         "rules[3].condition", "unknown column 'nope'"),
        (RULE, "condition: OLD.state = 'RETURNED'", "rules[3].condition",
         "loans has no column 'state'"),
        (RULE, "condition: EXISTS (SELECT 1 FROM sqlite_master)", "rules[3].condition",
         "unknown table 'sqlite_master'"),
        (RULE, "condition: (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
         " SELECT count(*) FROM n) > 0", "rules[3].condition", "WITH RECURSIVE"),
        (RULE, "condition: OLD.status = = 'RETURNED'", "rules[3].condition",
         "syntax error at line 1, column 14"),
        (RULE, "condition: random() > 0", "rules[3].condition", "RANDOM() is not allowed"),
        (RULE, "condition: status = 'RETURNED'", "rules[3].condition",
         "use NEW.<column> or OLD.<column>"),
        (RULE, "condition: SELECT 1", "rules[3].condition", "not a SELECT statement"),
        ("condition: NOT EXISTS (SELECT 1 FROM members WHERE id = NEW.member_id AND active = 1)",
         "condition: OLD.member_id IS NULL", "rules[0].condition", "not available on insert"),
        (EFFECT, "DELETE FROM members;", "effects[0].sql", "not DELETE"),
        (EFFECT, "UPDATE books SET available = 0; END; ATTACH DATABASE 'x.db' AS p;",
         "effects[0].sql", "not ATTACH"),
        (EFFECT, "INSERT INTO vt_meta VALUES ('root', 'x');", "effects[0].sql",
         "not a table of this spec"),
        (EFFECT, "INSERT OR REPLACE INTO books (id) VALUES (NEW.book_id);", "effects[0].sql",
         "INSERT OR REPLACE"),
        (EFFECT, "UPDATE books SET shelf = 0 WHERE id = NEW.book_id;", "effects[0].sql",
         "unknown column 'shelf'"),
        ("- {name: daily_fee, type: INTEGER", "- {name: daily_fee, check: fee > 0, type: INTEGER",
         "tables[1].columns[2].check", "unknown column 'fee'"),
    ],
)  # fmt: skip
def test_spec_sql_attacks_are_refused_with_line_and_field(
    tmp_path: Path, old: str, new: str, field: str, fragment: str
) -> None:
    path, text = _evil(tmp_path, old, new)
    code, output = _validate(path)
    assert code == 1, output
    needle = "sql: |" if field.startswith("effects") else new.split("\n")[0]
    assert f"{path}:{_line_of(text, needle)}: {field}: " in output, output
    assert fragment in output, output
    assert "Traceback" not in output


def test_attach_via_a_condition_is_refused_and_writes_no_file(tmp_path: Path) -> None:
    target = tmp_path / "pwned.db"
    path, text = _evil(tmp_path, RULE, _attach(target))
    code, output = _validate(path)
    assert code == 1
    assert f"{path}:{_line_of(text, 'ATTACH')}: rules[3].condition: " in output, output
    assert not target.exists()


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    path, text = _evil(tmp_path, RULE, RULE + "\n    condition: 1 = 0")
    code, output = _validate(path)
    first, second = _line_of(text, RULE), _line_of(text, "condition: 1 = 0")
    assert code == 1
    assert f"{path}:{second}: rules[3].condition: duplicate key 'condition'" in output, output
    assert f"lines {first} and {second}" in output


def test_billion_laughs_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\nname: x\n")
    start = time.monotonic()
    code, output = _validate(path)
    assert code == 1 and time.monotonic() - start < 5
    assert f"{path}:" in output and "aliases expand to more than" in output, output


def test_self_referencing_alias_is_refused() -> None:
    with pytest.raises(SpecError, match="refers to itself"):
        parse_spec("name: &a [*a]\n", source="loop.yaml")


def test_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("# " + "x" * MAX_SPEC_BYTES + "\nname: x\n")
    code, output = _validate(path)
    assert code == 1
    assert f"{path}: <file>: the file has" in output, output


def test_non_utf8_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\ndescription: caf\xe9\n")
    code, output = _validate(path)
    assert code == 1 and f"{path}:2: <file>: not UTF-8" in output, output


# -- the second layer: specs that skipped validation ----------------------------------------


def _unchecked(condition: str) -> DomainSpec:
    spec = load_domain("mock")
    rule = spec.rules[3].model_copy(update={"condition": condition})
    return spec.model_copy(update={"rules": [*spec.rules[:3], rule, *spec.rules[4:]]})


def test_build_refuses_attach_even_without_validation(tmp_path: Path) -> None:
    target = tmp_path / "pwned.db"
    condition = _attach(target).removeprefix("condition: ").strip('"')
    with pytest.raises(ValueError, match="refused: action ATTACH"):
        build_image(_unchecked(condition))
    assert not target.exists()


@pytest.mark.parametrize(
    ("condition", "refused"),
    [
        ("0) THEN 1 END; UPDATE books SET available = 1; SELECT CASE WHEN (0", "writes books"),
        ("(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
         " SELECT count(*) FROM n) > 0", "RECURSIVE"),
        ("random() > 0", "function random()"),
        ("(SELECT count(*) FROM sqlite_master) > 0", "reads sqlite_master"),
        ("(SELECT nope FROM books) = 1", "no such column"),
    ],
)  # fmt: skip
def test_build_probe_refuses_what_the_parser_would(condition: str, refused: str) -> None:
    with pytest.raises(ValueError, match=refused):
        build_image(_unchecked(condition))


@pytest.mark.parametrize("domain", builtin_domains())
def test_builtin_domains_validate(domain: str) -> None:
    code, output = _validate(MOCK.parents[1] / domain / "spec.yaml")
    assert code == 0 and output.startswith("ok: "), output


def test_compiled_cache_does_not_keep_dead_specs() -> None:
    from veritask.env import _build

    for _ in range(_build._CACHE_SIZE + 5):
        build_image(load_domain("mock").model_copy())
    assert len(_build._CACHE) <= _build._CACHE_SIZE
