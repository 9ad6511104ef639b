"""``validate`` refuses an agent-decided value that a rule tests but no agent could work out:
nothing computes it and there are no values to choose from. The field and its line are named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import spec_path
from veritask.policy import parse_spec
from veritask.synth import generation_problems


def _due_step_decided() -> dict[str, Any]:
    """The mock library where the desk decides a loan's due step and a rule caps it."""
    data: dict[str, Any] = yaml.safe_load(spec_path("mock").read_text())
    for item in (*data["rules"], *data["effects"]):  # YAML 1.1 reads a bare `on` key as True
        if True in item:
            item["on"] = item.pop(True)
    lend = next(tx for tx in data["transactions"] if tx["tool"] == "insert_loans")
    lend["agent_decides"] = ["due_step"]
    data["rules"].append(
        {
            "id": "DUE_CAP",
            "table": "loans",
            "on": ["insert"],
            "category": "policy",
            "condition": "NEW.due_step > 30",
            "code": "POLICY_VIOLATION",
            "message": "A loan is due within 30 steps.",
            "hint": "Choose an earlier due step.",
        }
    )
    return data


def test_a_tested_value_with_nothing_to_choose_from_is_refused_with_its_line(
    tmp_path: Path,
) -> None:
    data = _due_step_decided()
    text = yaml.safe_dump(data, sort_keys=False)
    found = generation_problems(parse_spec(text))
    assert [loc[:3] for loc, _ in found] == [("transactions", 0, "agent_decides")]
    assert "none computes it (no 'repair')" in found[0][1]
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = text.splitlines()
    decides = next(
        i for i, t in enumerate(lines) if "agent_decides:" in t and "due_step" in lines[i + 1]
    )
    line = decides + 2  # the list item under agent_decides (1-based)
    assert f"spec.yaml:{line}" in result.output
    assert "agent_decides[0]" in result.output and "due_step" in result.output


def test_a_repair_makes_the_same_value_workable() -> None:
    data = _due_step_decided()
    data["rules"][-1]["category"] = "calculation"
    data["rules"][-1]["condition"] = "NEW.due_step != 10"
    data["rules"][-1]["repair"] = {"column": "due_step", "value": "10"}
    assert generation_problems(parse_spec(yaml.safe_dump(data, sort_keys=False))) == []
