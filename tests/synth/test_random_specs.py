"""Grounded implies solvable, on specs nobody wrote by hand.

For each random valid spec (``tests/_random_specs.py``: names, limits, sizes and the rule set
drawn from a seed), ``validate --examples`` accepts it, and every package ``check`` calls
grounded is solved by the faithful agent, which follows exactly the assumptions grounding makes.
``benchmarks/random_specs_bench.py`` runs the same property over 2,000 specs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests._random_specs import random_spec_text

from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import load_domain
from veritask.env import CompiledDomain, example_coverage, run_spec_examples
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate, generation_problems
from veritask.task import DatasetDir, check_dataset, load_dataset

SPECS = 200
PACKAGES = 2


def grounded_but_failed(spec_text: str, seed: int, n: int, out: Path) -> tuple[int, list[str]]:
    """Generate ``n`` packages of the spec; return how many ``check`` calls grounded and the
    ids of those the faithful agent does not solve."""
    path = out / "spec.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec_text)
    generate(str(path), n, seed, out / "ds")
    report = check_dataset(out / "ds")
    bad = {f["id"] for f in report.failures}
    spec = load_domain(path)  # parsed once for generate, check and here
    domain = CompiledDomain.from_spec(spec)
    ds = DatasetDir(out / "ds")
    grounded, failed = 0, []
    for pkg in load_dataset(out / "ds"):
        if pkg.id in bad:
            continue
        grounded += 1
        origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
        task = EpisodeTask(pkg, domain, "policy", origin, target)
        traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
        if traj.final_distance != 0:
            failed.append(pkg.id)
    return grounded, failed


@settings(
    max_examples=SPECS,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_every_grounded_package_of_a_random_spec_is_solved(seed: int, tmp_path: Path) -> None:
    text = random_spec_text(seed)
    grounded, failed = grounded_but_failed(text, seed, PACKAGES, tmp_path / str(seed))
    spec = load_domain(tmp_path / str(seed) / "spec.yaml")
    assert example_coverage(spec) == [] and generation_problems(spec) == []
    assert run_spec_examples(CompiledDomain.from_spec(spec)) == []
    assert grounded > 0 and failed == []
