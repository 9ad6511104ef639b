"""Generation on imported τ²-bench domains (the fixtures, with guards): every package is
certified, grounded and spoiler-free, the faithful agent solves it, the run is deterministic, and
the tau2 export carries τ²-bench's structured instructions and the witness's procedure calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate
from veritask.task import DatasetDir, check_dataset, export_tau2, grounding, load_dataset

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tau2"
N = 8
WRITES = {
    "book_reservation",
    "cancel_reservation",
    "send_certificate",
    "update_reservation_baggages",
    "update_reservation_flights",
    "update_reservation_passengers",
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per domain, a dataset of ``N`` packages generated at seed 0 on the imported fixture."""
    root = tmp_path_factory.mktemp("tau2gen")
    out: dict[str, Path] = {}
    runner = CliRunner()
    for domain in ("retail", "airline"):
        spec_dir = root / domain
        args = ["import-tau2", str(FIXTURES / domain), "--domain", domain, "--guards"]
        done = runner.invoke(cli, [*args, "--out", str(spec_dir)])
        assert done.exit_code == 0, done.output
        out[domain] = root / f"{domain}-s0"
        summary = generate(str(spec_dir / "spec.yaml"), N, 0, out[domain])
        assert summary.tasks == N
    return out


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_packages_are_certified_grounded_and_spoiler_free(
    made: dict[str, Path], domain: str
) -> None:
    assert (made[domain] / "seed.json").is_file()  # the dataset's spec copy finds its rows
    report = check_dataset(made[domain])
    assert report.tasks == N
    assert report.certified == report.grounded == report.spoiler_free == N, report.failures[:3]
    tools = {pkg.witness[-1].tool for pkg in load_dataset(made[domain])}
    assert len(tools) >= 2  # more than one kind of request


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_the_faithful_agent_solves_every_package(made: dict[str, Path], domain: str) -> None:
    ds = DatasetDir(made[domain])
    packages = load_dataset(made[domain])
    compiled = CompiledDomain.from_spec(load_domain(str(made[domain] / "spec.yaml")))
    for pkg in packages:
        task = EpisodeTask(
            pkg, compiled, "policy", ds.read_state(pkg.origin), ds.read_state(pkg.target)
        )
        traj = asyncio.run(run_episode(task, FaithfulAgent(compiled.spec), ScriptedUser(pkg)))
        assert traj.final_distance == 0, pkg.id


def test_requests_name_items_and_cards_not_internal_ids(made: dict[str, Path]) -> None:
    for pkg in load_dataset(made["retail"]):
        request = pkg.task.sub_goals[0].request
        write = pkg.witness[-1]
        for key in ("item_ids", "new_item_ids"):
            for item in write.args.get(key, []):
                assert item not in request  # looked up from the order or the product
        method = write.args.get("payment_method_id")
        if method is not None:
            assert method not in request


def test_same_seed_same_bytes(made: dict[str, Path], tmp_path: Path) -> None:
    again = tmp_path / "again"
    generate(str(made["retail"] / "spec.yaml"), N, 0, again)
    first = (made["retail"] / "manifest.jsonl").read_bytes()
    assert (again / "manifest.jsonl").read_bytes() == first
    other = tmp_path / "other"
    generate(str(made["retail"] / "spec.yaml"), N, 11, other)
    assert (other / "manifest.jsonl").read_bytes() != first


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_export_is_tau2_tasks_with_structured_instructions(
    made: dict[str, Path], domain: str, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.json"
    assert export_tau2(made[domain], path) == N
    tasks = json.loads(path.read_text("utf-8"))
    packages = {p.id: p for p in load_dataset(made[domain])}
    for task in tasks:
        pkg = packages[task["id"]]
        instructions = task["user_scenario"]["instructions"]
        assert set(instructions) == {
            "domain",
            "reason_for_call",
            "known_info",
            "unknown_info",
            "task_instructions",
        }
        assert instructions["domain"] == domain
        assert all(s.request in instructions["task_instructions"] for s in pkg.task.sub_goals)
        assert task["initial_state"] is None  # τ²-bench's own database
        criteria = task["evaluation_criteria"]
        assert criteria["reward_basis"] == ["DB"]
        writes = [(c.tool, c.args) for c in pkg.witness if c.ok and c.tool in WRITES]
        assert [(a["name"], a["arguments"]) for a in criteria["actions"]] == writes
        # a refusal task makes an accepted request first, so its target is its own
        assert len(writes) == len(pkg.task.sub_goals) - int(pkg.refusal) >= 1


def test_a_procedure_write_is_ungrounded_without_the_lookups_that_show_its_ids(
    made: dict[str, Path],
) -> None:
    ds = DatasetDir(made["retail"])
    compiled = CompiledDomain.from_spec(load_domain(str(made["retail"] / "spec.yaml")))
    checker = Environment(compiled)
    pkg = next(
        p
        for p in load_dataset(made["retail"])
        if "item_ids" in p.witness[-1].args and p.witness[-1].ok
    )
    origin = ds.read_state(pkg.origin)
    assert grounding(pkg, checker, origin) == []
    bare = pkg.model_copy(update={"witness": pkg.witness[-1:]})
    found = grounding(bare, checker, origin)
    assert found and all("neither said nor looked up" in u.reason for u in found)
