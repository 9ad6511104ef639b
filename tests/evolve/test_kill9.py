"""A run killed with SIGKILL, at a unit boundary or inside a unit, and rerun ends with the bytes
of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from veritask.evolve import EvolveConfig, Synthesizer, evolve
from veritask.synth import GENERATOR, generate
from veritask.task import check_dataset

CONFIG = EvolveConfig(("mock", "retail"), plans=2, iterations=2, candidates=8, batch=3)

CHILD = """
import os, signal, sys
from pathlib import Path
from veritask.evolve import EvolveConfig, Synthesizer, evolve
from veritask.synth import GENERATOR, generate

where, out = sys.argv[1], Path(sys.argv[2])
made = []

def synthesize(domain, n, seed, root):
    generate(domain, n, seed, root)
    made.append(domain)
    if where == "inside" and len(made) == 2:  # plan-00.iter1: pool written, no artifact
        os.kill(os.getpid(), signal.SIGKILL)

def progress(unit):
    if where == "between" and unit == "plan-00.iter1":
        os.kill(os.getpid(), signal.SIGKILL)

config = EvolveConfig(("mock", "retail"), plans=2, iterations=2, candidates=8, batch=3)
evolve(config, out, Synthesizer(f"symbolic:{GENERATOR}", synthesize), progress=progress)
"""


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("whole")
    evolve(CONFIG, out, Synthesizer(f"symbolic:{GENERATOR}", generate))
    assert check_dataset(out).ok
    return _files(out)


@pytest.mark.parametrize("where", ["between", "inside"])
def test_a_run_killed_with_sigkill_resumes_to_the_same_bytes(
    tmp_path: Path, whole: dict[str, bytes], where: str
) -> None:
    out = tmp_path / "cut"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, where, str(out)], env=env, capture_output=True, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    assert not (out / "report.json").exists()
    done = {p.name for p in (out / "evolve-run").glob("plan-*.json")}
    assert done == {"plan-00.iter0.json"} | (
        {"plan-00.iter1.json"} if where == "between" else set()
    )
    resumed = evolve(CONFIG, out, Synthesizer(f"symbolic:{GENERATOR}", generate))
    assert resumed.resumed_units == (3 if where == "between" else 2)
    assert _files(out) == whole
