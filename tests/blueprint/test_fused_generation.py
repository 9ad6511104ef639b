"""Generation on fused specs (written by fuse, or by hand with a ``services`` field): every
episode writes in two or more services through the shared person, every package is certified
and grounded, and the oracle and the faithful agent (which sees only the user's words, the
policy and tool results) reach s_target on every task."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from veritask.agent import FaithfulAgent, OracleAgent, ScriptedUser
from veritask.blueprint import fuse_specs
from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain
from veritask.policy import DomainSpec, dump_spec, load_spec
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate
from veritask.synth._analysis import DomainModel
from veritask.synth._fused import fused_services
from veritask.task import DatasetDir, check_dataset, load_dataset

TWO = Path(__file__).parents[1] / "policy" / "data" / "two_services.yaml"
"""A hand-written two-service spec whose names follow no prefix convention."""
COMBOS = [("travel", "clinic"), ("mock", "clinic"), ("retail", "registrar"), ("gym", "retail")]
SEEDS = range(2)
N = 10


def _fused(names: tuple[str, ...]) -> DomainSpec:
    return fuse_specs([load_domain(n) for n in names]).spec


@pytest.fixture(scope="module")
def fused_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Path]:
    root = tmp_path_factory.mktemp("fused")
    out = {}
    for names in [*COMBOS, ("travel", "clinic", "retail")]:
        path = root / f"{'_'.join(names)}.yaml"
        path.write_text(dump_spec(_fused(names), "fused"))
        out[names] = path
    return out


@pytest.mark.parametrize("domain", builtin_domains())
def test_single_domains_are_not_fused(domain: str) -> None:
    assert fused_services(load_domain(domain)) is None


def test_the_namespaces_of_a_fused_spec_are_read_back() -> None:
    spec = _fused(("travel", "clinic", "retail"))
    fused = fused_services(spec)
    assert fused is not None and fused.services == ("clinic", "retail", "travel")
    assert fused.tables["travel_flight_bookings"] == "travel"
    assert fused.tables["clinic_appointments"] == "clinic"
    assert "persons" not in fused.tables


def test_fuse_writes_the_services_field() -> None:
    spec = _fused(("travel", "clinic"))
    assert [s.name for s in spec.services] == ["travel", "clinic"]
    owned = [t for s in spec.services for t in s.tables]
    assert sorted(owned) == sorted(t.name for t in spec.tables if t.name != "persons")


def test_the_services_field_decides_not_the_names() -> None:
    spec = _fused(("mock", "clinic"))
    data = spec.model_dump(mode="json", exclude_defaults=True)
    bare = {k: v for k, v in data.items() if k != "services"}
    assert fused_services(DomainSpec.model_validate(bare)) is None
    renamed = [{**s, "name": n} for s, n in zip(data["services"], ("shelf", "health"), strict=True)]
    fused = fused_services(DomainSpec.model_validate({**data, "services": renamed}))
    assert fused is not None and fused.services == ("health", "shelf")
    assert fused.tables["mock_loans"] == "shelf"


def _agents_fail(root: Path) -> list[str]:
    """Ids of packages the oracle or the faithful agent does not solve."""
    ds = DatasetDir(root)
    spec = load_spec(ds.spec_path)
    compiled = CompiledDomain.from_spec(spec)
    failed = []
    for pkg in load_dataset(root):
        origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
        for agent in (OracleAgent(pkg.witness), FaithfulAgent(spec)):
            task = EpisodeTask(pkg, compiled, "policy", origin, target)
            traj = asyncio.run(run_episode(task, agent, ScriptedUser(pkg)))
            if traj.final_distance != 0:
                failed.append(f"{pkg.id} {type(agent).__name__}")
    return failed


@pytest.mark.parametrize("names", COMBOS, ids="+".join)
def test_every_fused_task_spans_services_and_is_solved(
    names: tuple[str, ...], fused_paths: dict[tuple[str, ...], Path], tmp_path: Path
) -> None:
    spec_file = fused_paths[names]
    for seed in SEEDS:
        out = tmp_path / f"s{seed}"
        summary = generate(str(spec_file), N, seed, out)
        report = check_dataset(out)
        assert summary.tasks == report.tasks == N
        assert report.certified == report.grounded == report.spoiler_free == N, report.failures
        spec = load_spec(DatasetDir(out).spec_path)
        fused, model = fused_services(spec), DomainModel.from_spec(spec)
        assert fused is not None
        packages = load_dataset(out)
        assert all(not p.refusal for p in packages)
        assert all(len(fused.acted(p.witness, model)) >= 2 for p in packages)
        assert _agents_fail(out) == []


def test_three_services_are_all_written(
    fused_paths: dict[tuple[str, ...], Path], tmp_path: Path
) -> None:
    spec_file = fused_paths[("travel", "clinic", "retail")]
    generate(str(spec_file), N, 0, tmp_path)
    spec = load_spec(DatasetDir(tmp_path).spec_path)
    fused, model = fused_services(spec), DomainModel.from_spec(spec)
    assert fused is not None
    assert all(len(fused.acted(p.witness, model)) == 3 for p in load_dataset(tmp_path))


def test_a_hand_written_two_service_spec_gives_cross_service_tasks(tmp_path: Path) -> None:
    for seed in SEEDS:
        out = tmp_path / f"s{seed}"
        generate(str(TWO), N, seed, out)
        report = check_dataset(out)
        assert report.certified == report.grounded == report.spoiler_free == N, report.failures
        spec = load_spec(DatasetDir(out).spec_path)
        fused, model = fused_services(spec), DomainModel.from_spec(spec)
        assert fused is not None and fused.services == ("library", "library_rooms")
        packages = load_dataset(out)
        assert all(fused.acted(p.witness, model) == set(fused.services) for p in packages)
        assert _agents_fail(out) == []
