"""Grounded implies solvable, on specs nobody wrote by hand.

For each random valid spec (``tests/_random_specs.py``: names, limits, sizes and the rule set
drawn from a seed), ``validate --examples`` accepts it, and every package ``check`` calls
grounded is solved by the faithful agent, which follows exactly the assumptions grounding makes.
``benchmarks/random_specs_bench.py`` runs the same property over 2,000 specs.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests._random_specs import random_spec_data, random_spec_text

from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import load_domain
from veritask.env import CompiledDomain, example_coverage, run_spec_examples
from veritask.policy import DomainSpec
from veritask.policy._spec import RuleCategory
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate, generation_problems
from veritask.task import DatasetDir, check_dataset, load_dataset

SPECS = 200
PACKAGES = 1


def write_spec(spec_text: str, out: Path) -> tuple[Path, DomainSpec, CompiledDomain]:
    """Write the spec to ``out/spec.yaml``; return the path, the spec and its compiled domain
    (parsed once: ``generate``, ``check`` and the loader share it by the file's content)."""
    path = out / "spec.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec_text)
    spec = load_domain(path)
    return path, spec, CompiledDomain.from_spec(spec)


def validate_problems(spec: DomainSpec, domain: CompiledDomain) -> list[str]:
    """What ``validate --examples`` (and the generation check) refuse in the spec."""
    found = [str(p) for p in example_coverage(spec)] + [str(p) for p in generation_problems(spec)]
    return found + [str(p) for p in run_spec_examples(domain)]


def grounded_but_failed(
    spec_text: str, seed: int, n: int, out: Path, domain: CompiledDomain | None = None
) -> tuple[int, list[str]]:
    """Generate ``n`` packages of the spec; return how many ``check`` calls grounded and the
    ids of those the faithful agent does not solve. ``domain``: the spec's compiled domain,
    when the caller has it already."""
    path, spec, compiled = write_spec(spec_text, out)
    domain = domain or compiled
    generate(str(path), n, seed, out / "ds")
    report = check_dataset(out / "ds")
    bad = {f["id"] for f in report.failures}
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
    _, spec, domain = write_spec(text, tmp_path / str(seed))
    assert validate_problems(spec, domain) == []
    grounded, failed = grounded_but_failed(text, seed, PACKAGES, tmp_path / str(seed), domain)
    assert grounded > 0 and failed == []


REGRESSIONS = [10, 37, 249, 1836]
"""Spec seeds whose packages were grounded but failed: the explorer wrote an agent-decided value
nobody stated (a charge on an open booking), was refused, and the user reacted to a refusal the
faithful agent never meets (10, 37); or the explorer named a wrong handler, was refused, and the
user reacted with another item or desk, while the agent picks the right handler itself (1836,
249). Both are now ungrounded (``_Grounder._reacted``)."""


@pytest.mark.parametrize("seed", REGRESSIONS)
def test_regression_specs_have_no_grounded_but_failed_package(seed: int, tmp_path: Path) -> None:
    grounded, failed = grounded_but_failed(random_spec_text(seed), seed, 4, tmp_path)
    assert grounded > 0 and failed == []


FIXTURE_249 = Path(__file__).parents[1] / "fixtures" / "random_249"
"""The dataset of spec 249 (4 packages) as the synthesizer made it before the reaction check:
package 3 books an outdoor studio with the trainee as handler, is refused by the handler rule,
and the user "accepts" a basic studio instead; the faithful agent names the outdoor desk's
handler itself, the booking passes, and the fallback never comes. Today's synthesizer no
longer writes this package for seed 249, so the dataset is kept as it was."""


def test_spec_249s_reaction_to_a_refusal_the_agent_repairs_is_not_grounded(
    tmp_path: Path,
) -> None:
    shutil.copytree(FIXTURE_249, tmp_path / "ds")
    report = check_dataset(tmp_path / "ds")
    (failure,) = report.failures
    assert failure["id"] == "random_249-s249-000003" and failure["kind"] == "ungrounded"
    assert "handled_by: the user reacts to SLOT_HANDLER" in failure["detail"]
    assert "the agent can make the call pass with handled_by = 's_1'" in failure["detail"]
    pkg = next(p for p in load_dataset(tmp_path / "ds") if p.id == failure["id"])
    spec = load_domain(tmp_path / "ds" / "spec.yaml")
    ds = DatasetDir(tmp_path / "ds")
    task = EpisodeTask(
        pkg,
        CompiledDomain.from_spec(spec),
        "policy",
        ds.read_state(pkg.origin),
        ds.read_state(pkg.target),
    )
    traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
    assert traj.final_distance != 0  # the counterexample: the agent does not reach the target


def test_the_generator_covers_every_rule_category_effects_and_decided_values() -> None:
    categories: set[str] = set()
    decided: set[str] = set()
    actors = effects = escalations = user_sides = 0
    for seed in range(SPECS):
        data = random_spec_data(seed)
        categories.update(r["category"] for r in data["rules"])
        decided.update(c for tx in data["transactions"] for c in tx.get("agent_decides", []))
        effects += bool(data["effects"])
        people = [t for t in data["tables"] if t["tier"] == "entity" and not t.get("technical")]
        actors += any(t["name"] not in (data["actor"], *_user_side(data)) for t in people)
        escalations += "escalation" in data
        user_sides += bool(_user_side(data))
    assert categories == set(get_args(RuleCategory))
    # a formula's value, a record to pick and a hand-off's reason
    assert decided == {"charge", "handled_by", "reason"}
    assert effects == SPECS
    for count in (actors, escalations, user_sides):  # each in a good share, not in all
        assert SPECS // 4 <= count < SPECS


def _user_side(data: dict[str, Any]) -> list[str]:
    return list(data.get("user_tools", {}).get("tables", []))
