"""The example runner reports each misbehaving example by rule and YAML line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.env import example_coverage, run_spec_examples
from veritask.policy import parse_spec_with_lines

MOCK = Path(__file__).parents[2] / "src/veritask/domains/mock/spec.yaml"


def _mock(*edits: tuple[str, str]) -> str:
    text = MOCK.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


_PASSING = "          - {tool: insert_loans, args: {member_id: m_lapsed, book_id: b_dune, due_step: 10}, expect: MEMBER_ACTIVE}"


def test_builtin_examples_pass() -> None:
    spec, _ = parse_spec_with_lines(MOCK.read_text())
    assert run_spec_examples(spec) == [] and example_coverage(spec) == []


def test_a_wrong_expectation_is_reported_at_its_call_line() -> None:
    text = _mock((_PASSING, _PASSING.replace("m_lapsed", "m_ana")))
    spec, lines = parse_spec_with_lines(text, "x.yaml")
    (failure,) = run_spec_examples(spec)
    assert failure.check == "example_violation_accepted"
    assert failure.where == "MEMBER_ACTIVE example 0 call 0"
    assert failure.loc == ("rules", 0, "examples", 0, "calls", 0)
    assert lines.line(failure.loc) == _line_of(text, "member_id: m_ana, book_id: b_dune")


def test_a_quota_rejection_without_the_n_minus_1_step_is_reported() -> None:
    # Ben starts at the limit, so the rejection does not show the limit being reached.
    text = _mock(
        (
            "{tool: insert_loans, args: {member_id: m_ben, book_id: b_dune, due_step: 10}}",
            "{tool: insert_loans, args: {member_id: m_ana, book_id: b_dune, due_step: 10}}",
        ),
        (
            "name: Ben Okafor, active: 1, active_loans: 1",
            "name: Ben Okafor, active: 1, active_loans: 2",
        ),
    )
    spec, _ = parse_spec_with_lines(text)
    found = {(f.check, f.where) for f in run_spec_examples(spec)}
    assert ("example_quota_boundary", "LOAN_QUOTA example 0 call 1") in found


def test_rows_and_coverage_failures() -> None:
    text = _mock(
        ("values: {available: 0}", "values: {available: 1}"),
        (_PASSING + "\n", ""),
    )
    spec, lines = parse_spec_with_lines(text)
    (rows,) = run_spec_examples(spec)
    assert rows.check == "example_rows" and rows.owner == "ON_LEND"
    assert lines.line(rows.loc) == _line_of(text, "values: {available: 1}")
    (missing,) = example_coverage(spec)
    assert (missing.check, missing.owner) == ("rule_without_violating_example", "MEMBER_ACTIVE")


def test_validate_examples_cli(tmp_path: Path) -> None:
    bad = tmp_path / "spec.yaml"
    bad.write_text(_mock((_PASSING, _PASSING.replace("m_lapsed", "m_ana"))))
    result = CliRunner().invoke(cli, ["validate", str(bad), "--examples"])
    assert result.exit_code == 1
    line = _line_of(bad.read_text(), "member_id: m_ana, book_id: b_dune")
    assert f"{bad}:{line}: rule MEMBER_ACTIVE example 0 call 0: example_violation_accepted" in (
        result.output
    )
    result = CliRunner().invoke(cli, ["validate", str(bad), "--examples", "--json"])
    body = json.loads(result.stdout)
    assert not body["ok"] and body["failures"][0]["line"] == line
    ok = CliRunner().invoke(cli, ["validate", "mock", "--examples"])
    assert ok.exit_code == 0 and "examples ran" in ok.output
