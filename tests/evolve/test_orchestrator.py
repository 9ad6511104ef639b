"""The orchestrator: each stream's workflow (prompts, stage settings) is versioned data that the
scripted orchestrator changes from attribution; a version is kept or rolled back by the next
iteration's measured figures, the report says which and why, and a run killed with SIGKILL
resumes to the bytes of an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from veritask.agent._error_model import ErrorModel
from veritask.evolve import (
    RUN_DIR,
    Change,
    EvolveConfig,
    FaithfulSolver,
    StreamSettings,
    Synthesizer,
    evolve,
    initial_workflow,
    orchestrator_script,
    read_report,
    workflow_diff,
)
from veritask.evolve._orchestrator import Proposal, apply, decide, figures
from veritask.model import ScriptedProvider, get_provider
from veritask.synth import GENERATOR, generate

SYNTH = Synthesizer(f"symbolic:{GENERATOR}", generate)
CONFIG = EvolveConfig(
    ("mock",), plans=1, iterations=3, candidates=10, batch=3, orchestrator="scripted"
)


def _orchestrator() -> Any:
    return get_provider("scripted", script=orchestrator_script)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole")
    evolve(CONFIG, out, SYNTH, orchestrator=_orchestrator())
    return out


def test_a_change_applies_and_diffs() -> None:
    first = initial_workflow(10, 3)
    proposal = Proposal(
        changes=[
            Change(kind="setting", setting="batch", value=5, because="stage rollout"),
            Change(kind="prompt", role="verify", prompt="Be strict.", because="stage spoiler"),
        ]
    )
    second = apply(first, proposal, 1)
    assert (second.version, second.parent, second.batch) == (1, 0, 5)
    assert workflow_diff(first, second) == {
        "prompts.verify": [first.prompts["verify"], "Be strict."],
        "batch": [3, 5],
    }
    with pytest.raises(ValueError, match="names the setting"):
        apply(first, Proposal(changes=[Change(kind="setting", because="x")]), 1)


def test_a_version_is_kept_only_when_a_figure_improves() -> None:
    base = figures({"selected": 4, "rolled_out": 4, "TRAJECTORY": 0, "accepted": 2})
    assert base == {"yield": 0.5, "assistant_failure": 0.0, "difficulty_gap": 0.3}
    better = figures({"selected": 4, "rolled_out": 4, "TRAJECTORY": 1, "accepted": 3})
    kept, why = decide(better, base)
    assert kept and why.startswith("kept: yield 0.500 -> 0.750")
    kept, why = decide(base, better)
    assert not kept and why.startswith("rolled back:") and "no improvement" in why
    trade = figures({"selected": 4, "rolled_out": 4, "TRAJECTORY": 4, "accepted": 4})
    kept, why = decide(trade, base)  # yield 0.5 -> 1.0, but the gap 0.3 -> 0.7
    assert not kept and "one figure improved, the other got worse" in why


def test_the_run_changes_a_prompt_and_a_setting_and_reports_each_decision(whole: Path) -> None:
    rows = read_report(whole)["iterations"]
    flows = [r["workflow"] for r in rows]
    assert [f["version"] for f in flows] == [0, 1, 2]
    changed = {key for f in flows for key in f["diff"]}
    assert any(k.startswith("prompts.") for k in changed)
    assert changed & {"candidates", "batch"}
    assert flows[0]["reason"] == "kept: the first version is the baseline"
    for flow in flows[1:]:
        assert flow["reason"].startswith(("kept: yield", "rolled back: yield"))
        assert flow["kept"] == flow["reason"].startswith("kept")
    assert flows[-1]["next_version"] is None
    # the stage settings were run: each iteration selected at most its version's batch
    for row in rows:
        unit = json.loads((whole / RUN_DIR / f"plan-00.iter{row['iteration']}.json").read_text())
        assert row["selected"] <= unit["workflow"]["ran"]["batch"]
        assert row["candidates"] == unit["workflow"]["ran"]["candidates"]


def test_a_model_orchestrator_sees_figures_and_evidence(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []

    def script(messages: list[dict[str, Any]], tools: Any) -> str:
        asked.append(json.loads(messages[-1]["content"]))
        return orchestrator_script(messages, tools)

    config = EvolveConfig(("mock",), plans=1, iterations=2, candidates=6, batch=2,
                          orchestrator="openai:some-model")  # fmt: skip
    evolve(config, tmp_path, SYNTH, orchestrator=ScriptedProvider(script))
    assert len(asked) == 1  # after iteration 0 only: nothing runs after the last
    assert set(asked[0]) >= {"workflow", "figures", "evidence", "difficulty_target"}
    assert 1 <= asked[0]["evidence"]["counts"]["selected"] <= 2  # at most the batch


def test_a_solver_that_can_fail_makes_task_attribution_fire(tmp_path: Path) -> None:
    settings = StreamSettings(assistant="random")
    config = EvolveConfig(("mock",), plans=1, iterations=1, candidates=6, batch=3,
                          settings=settings)  # fmt: skip
    solver = FaithfulSolver(errors=ErrorModel(1.0))
    report = evolve(config, tmp_path, SYNTH, solver=solver).report
    assert report["totals"]["TASK"] > 0 and report["totals"]["TRAJECTORY"] == 0


CHILD = """
import os, signal, sys
from pathlib import Path
from veritask.evolve import EvolveConfig, Synthesizer, evolve, orchestrator_script
from veritask.model import get_provider
from veritask.synth import GENERATOR, generate

out = Path(sys.argv[1])

def progress(unit):
    if unit == "plan-00.iter1":
        os.kill(os.getpid(), signal.SIGKILL)

config = EvolveConfig(("mock",), plans=1, iterations=3, candidates=10, batch=3,
                      orchestrator="scripted")
orchestrator = get_provider("scripted", script=orchestrator_script)
evolve(config, out, Synthesizer(f"symbolic:{GENERATOR}", generate), progress=progress,
       orchestrator=orchestrator)
"""


def test_a_run_killed_with_sigkill_resumes_to_the_same_bytes(tmp_path: Path, whole: Path) -> None:
    out = tmp_path / "cut"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)], env=env, capture_output=True, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    assert not (out / "report.json").exists()
    resumed = evolve(CONFIG, out, SYNTH, orchestrator=_orchestrator())
    assert resumed.resumed_units == 3
    assert _files(out) == _files(whole)
