"""Property tests of generation on every built-in domain over many seeds: every package is
certified, grounded and spoiler-free, and the faithful agent, which sees only what the user says,
the policy and tool results, reaches s_target on every task, refusals included (a refusal the
user gives up after is final, so the agent that refuses it is right)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import builtin_domains
from veritask.env import CompiledDomain
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate
from veritask.task import DatasetDir, check_dataset, load_dataset

DOMAINS = builtin_domains()
SEEDS = range(8)
N = 10


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_package_is_certified_grounded_and_spoiler_free(domain: str, tmp_path: Path) -> None:
    for seed in SEEDS:
        out = tmp_path / f"s{seed}"
        summary = generate(domain, N, seed, out)
        report = check_dataset(out)
        assert summary.tasks == report.tasks > 0
        assert report.certified == report.grounded == report.spoiler_free == report.tasks, (
            seed,
            report.failures[:3],
        )


def _faithful_failures(domain: str, root: Path, compiled: CompiledDomain) -> list[str]:
    ds = DatasetDir(root)
    failed = []
    for pkg in load_dataset(root):
        task = EpisodeTask(
            pkg, compiled, "policy", ds.read_state(pkg.origin), ds.read_state(pkg.target)
        )
        traj = asyncio.run(run_episode(task, FaithfulAgent(compiled.spec), ScriptedUser(pkg)))
        if traj.final_distance != 0:
            failed.append(pkg.id)
    return failed


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_faithful_agent_solves_every_task_from_its_text(
    domain: str, tmp_path: Path, compiled: dict[str, CompiledDomain]
) -> None:
    failed: list[str] = []
    for seed in range(4):
        out = tmp_path / f"s{seed}"
        generate(domain, N, seed, out)
        failed += _faithful_failures(domain, out, compiled[domain])
    assert failed == []
