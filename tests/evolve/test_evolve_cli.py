"""``veritask evolve run|status|report``, the ablation switches, spec files, and ``curate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.task import check_dataset, load_dataset

SMALL = ["--iterations", "2", "--candidates", "12", "--batch", "4"]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _json(*args: str) -> Any:
    code, text = _run(*args, "--json")
    assert code == 0, text
    return json.loads(text)


def _units(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in (out / "evolve-run").glob("plan-*.json")}


def test_run_status_report_and_a_rerun(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    ran = _json("evolve", "run", "--domains", "mock", "--plans", "2", *SMALL, "--out", str(out))
    assert ran["units"] == 1 + 2 * 2 and ran["resumed_units"] == 0
    assert ran["tasks"] == len(load_dataset(out)) and check_dataset(out).ok
    found = _json("evolve", "status", str(out))
    assert found["finished"] and found["done"] == found["units"] == 5 and found["pending"] == []
    report = _json("evolve", "report", str(out))
    rows = [(r["stream"], r["iteration"]) for r in report["iterations"]]
    assert rows == [("plan-00", 0), ("plan-00", 1), ("plan-01", 0), ("plan-01", 1)]
    code, text = _run("evolve", "report", str(out))
    assert code == 0 and "TASK" in text and "plan changes" in text
    again = _json("evolve", "run", "--domains", "mock", "--plans", "2", *SMALL, "--out", str(out))
    assert again["resumed_units"] == again["units"]
    code, text = _run(
        "evolve", "run", "--domains", "mock", "--plans", "3", *SMALL, "--out", str(out)
    )
    assert code != 0 and "plans" in text  # another config is refused, naming the field


def test_plans_n_gives_n_streams(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    args = ["--iterations", "1", "--candidates", "8", "--batch", "2", "--out", str(out)]
    _json("evolve", "run", "--domains", "mock", "--plans", "3", *args)
    plans = json.loads((out / "evolve-run" / "plans.json").read_text())["plans"]
    assert [p["synthesis"]["stream"] for p in plans] == ["plan-00", "plan-01", "plan-02"]
    assert sorted(_units(out)) == ["plan-00.iter0", "plan-01.iter0", "plan-02.iter0"]


def test_ablation_switches(tmp_path: Path) -> None:
    plain, ablated = tmp_path / "plain", tmp_path / "ablated"
    common = ["evolve", "run", "--domains", "mock", "--plans", "1", *SMALL]
    _json(*common, "--out", str(plain))
    _json(*common, "--no-task-verification", "--no-reflection", "--out", str(ablated))
    units = _units(ablated)
    assert all(u["reflection"] == "none" and u["plan_diff"] == {} for u in units.values())
    assert all(
        v["verdict"] == "PASS" and v["reasons"] == []
        for u in units.values()
        for v in u["verification"]
    )
    assert (
        units["plan-00.iter1"]["plan"]["synthesis"] | {"iteration": 0}
        == units["plan-00.iter0"]["plan"]["synthesis"]
    )
    config = json.loads((ablated / "report.json").read_text())["config"]
    assert (config["task_verification"], config["reflection"]) == (False, False)
    assert _units(plain)["plan-00.iter0"]["reflection"] == "symbolic"
    assert check_dataset(ablated).ok


def test_a_domain_given_as_a_spec_file_is_named_by_its_spec(tmp_path: Path) -> None:
    spec = load_domain("mock").model_dump(mode="json", exclude_none=True)
    spec["name"] = "minilib"
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = tmp_path / "ds"
    ran = _json("evolve", "run", "--domains", str(path), "--plans", "1", *SMALL, "--out", str(out))
    packages = load_dataset(out)
    assert ran["tasks"] == len(packages) > 0
    assert all(p.domain == "minilib" and p.id.startswith("minilib-") for p in packages)
    assert check_dataset(out).ok  # the dataset keeps its copy of the spec


def test_model_synthesis_needs_a_model(tmp_path: Path) -> None:
    code, text = _run(
        "evolve", "run", "--domains", "mock", "--synthesis", "model", "--out", str(tmp_path)
    )
    assert code != 0 and "--model" in text


def test_curate_keeps_tasks_whose_pass_rate_is_strictly_between_0_and_1(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    assert (
        _run("generate", "--domain", "mock", "--n", "6", "--seed", "1", "--out", str(data))[0] == 0
    )
    trajectories = tmp_path / "t.jsonl"
    lines: list[str] = []
    for agent in ("faithful", "noop"):
        part = tmp_path / f"{agent}.jsonl"
        assert _run("rollout", str(data), "--agent", agent, "--out", str(part))[0] == 0
        lines += part.read_text().splitlines()
    trajectories.write_text("\n".join(lines) + "\n")
    rewards: dict[str, list[float]] = {}
    for line in lines:
        t = json.loads(line)
        rewards.setdefault(t["task_id"], []).append(t["reward"])
    expected = sorted(k for k, v in rewards.items() if 0 < sum(r == 1.0 for r in v) < len(v))
    kept = tmp_path / "kept.txt"
    summary = _json("curate", str(trajectories), "--out", str(kept))
    assert summary["groups"] == 6 and summary["kept"] == len(expected)
    assert sorted(kept.read_text().split()) == expected and expected


def test_the_scripted_orchestrator_and_the_error_model_on_the_command_line(
    tmp_path: Path,
) -> None:
    out = tmp_path / "flow"
    args = ["evolve", "run", "--domains", "mock", "--plans", "1", *SMALL, "--out", str(out)]
    ran = _json(*args, "--orchestrator", "scripted", "--error-rate", "0.5")
    assert ran["units"] == 3
    config = json.loads((out / "run.json").read_text())
    assert config["orchestrator"] == "scripted" and config["assistant"] == "faithful"
    assert config["errors"]["rate"] == 0.5
    code, text = _run("evolve", "report", str(out))
    assert code == 0, text
    assert "stream   iter  version  kept" in text
    assert "kept: the first version is the baseline" in text
    assert ("kept: yield" in text) != ("rolled back: yield" in text)
    assert "changed: " in text
    code, text = _run(*args, "--error-kinds", "premature-end,forgetful")
    assert code == 2 and "unknown error kinds ['forgetful']" in text
