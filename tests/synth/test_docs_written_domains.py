"""Three domains written from docs/domain-reference.md alone (tests/fixtures/unseen_domains/):
a ferry booking desk with time windows and irreversibility, an expense desk where several staff
approve within limits, and a parts shop whose catalogue holds near-identical items.

Each one validates with its examples, generates a small batch that ``check`` certifies,
grounds and finds spoiler-free, and the faithful agent solves every task of the batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli

UNSEEN = Path(__file__).parent.parent / "fixtures" / "unseen_domains"
N = 12

SPECS = [
    pytest.param("ferry_desk.yaml", id="ferry_desk"),
    pytest.param("expense_desk.yaml", id="expense_desk"),
    pytest.param("parts_shop.yaml", id="parts_shop"),
]


def _run(*args: str) -> Any:
    """Run the CLI with ``--json`` and parse its output (the exit status must be 0)."""
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small dataset per spec, generated once for the module."""
    made: dict[str, Path] = {}
    for name in ("ferry_desk.yaml", "expense_desk.yaml", "parts_shop.yaml"):
        out = tmp_path_factory.mktemp(name.removesuffix(".yaml"))
        _run(
            "generate",
            "--domain",
            str(UNSEEN / name),
            "--n",
            str(N),
            "--seed",
            "0",
            "--out",
            str(out),
        )
        made[name] = out
    return made


@pytest.mark.parametrize("spec", SPECS)
def test_examples_pass_and_a_batch_is_certified(spec: str, datasets: dict[str, Path]) -> None:
    report = _run("validate", str(UNSEEN / spec), "--examples")
    assert report["ok"] is True and report["failures"] == []
    assert 6 <= report["tables"] <= 10 and report["rules"] >= 12
    check = _run("check", str(datasets[spec]))
    assert check["failures"] == []
    assert check["certified"] == check["grounded"] == check["spoiler_free"] == N


@pytest.mark.parametrize("spec", SPECS)
def test_the_faithful_agent_solves_every_task(spec: str, datasets: dict[str, Path]) -> None:
    result = _run("eval", str(datasets[spec]), "--agent", "faithful")
    failed = [t["id"] for t in result["per_task"] if t["successes"] < t["trials"]]
    assert failed == []


def _routing_as_authority(text: str) -> str:
    """The expense desk with its approver routing written as an authority rule, no repair."""
    calc = "    category: calculation\n    condition: >-\n      NEW.approver_id IS NOT"
    assert text.count(calc) == 1
    text = text.replace(calc, calc.replace("calculation", "authority"))
    repair = next(line for line in text.splitlines() if "repair: {column: approver_id" in line)
    return text.replace(repair + "\n", "")


def test_an_approver_fixed_without_a_repair_is_grounded_only_if_solvable(tmp_path: Path) -> None:
    """Either the spec is refused, naming the column, or grounded packages are all solved."""
    spec = tmp_path / "expense_authority.yaml"
    text = (UNSEEN / "expense_desk.yaml").read_text(encoding="utf-8")
    spec.write_text(_routing_as_authority(text), encoding="utf-8")
    out = tmp_path / "out"
    args = ["generate", "--domain", str(spec), "--n", str(N), "--seed", "0", "--out", str(out)]
    made = CliRunner().invoke(cli, args)
    if made.exit_code != 0:
        assert "approver_id" in made.output and "Traceback" not in made.output
        return
    grounded = _run("check", str(out))["grounded"]
    result = _run("eval", str(out), "--agent", "faithful")
    solved = sum(t["successes"] == t["trials"] for t in result["per_task"])
    assert solved == grounded


@pytest.mark.parametrize("spec", SPECS)
def test_rule_categories_and_a_titled_wiki(spec: str) -> None:
    report = _run("validate", str(UNSEEN / spec))
    assert report["ok"] is True
    text = (UNSEEN / spec).read_text(encoding="utf-8")
    categories = {
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.strip().startswith("category:")
    }
    assert len(categories) >= 4, categories
    assert "\n  title: " in text
