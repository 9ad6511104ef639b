"""Tasks instantiated from validated tool paths (AgentSkiller: the task registry).

Each kept path of the ``paths`` stage (enumerated, grounded and execution-filtered) is a task
skeleton: its write tools, in order, are the user's goals. A unit of the symbolic generator
designs its scene as usual; each task then follows one kept path: the Explorer grounds every
goal on the scene (the user, the records, the values), runs it on the environment (a policy
refusal is repaired as in any episode), and the Projector turns the episode into the user's
request. Only an episode that achieved the path's goals in the path's order becomes a package,
and it goes through the same certificates (replay, grounding, lint, spoilers).

The record of where each task came from is written beside the parts, one file per unit
(``task-paths/unit-NNNNNN.json``: package id -> template id and tools), and summed by
:func:`path_tasks`.

This lives beside the command line, not in ``veritask.blueprint``: it drives the synthesis
package (Set Designer, Explorer, Projector), which ``blueprint`` does not import (design note
0017).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veritask import __version__
from veritask._util import atomic_write_text
from veritask.blueprint._semantic import PLACEHOLDER
from veritask.domains import load_domain
from veritask.domains import spec_path as domain_spec_path
from veritask.env import Environment
from veritask.policy import Rule, ToolSpec, Transaction
from veritask.synth import Episode, Scene, SymbolicExplorer
from veritask.synth._designer import faker_for
from veritask.synth._episode import SubGoalTrace
from veritask.synth._fused import CrossServiceExplorer
from veritask.synth._sampler import Sampler, StateView
from veritask.synth._unit import SCENE_SIZE, UnitResult, UnitWorker
from veritask.task import DatasetDir, TaskPackage, WitnessCall

Json = dict[str, Any]
GENERATOR = f"veritask-paths/{__version__}"
ORIGINS = "task-paths"
"""The folder of a dataset that records the path each package came from."""
USERS_PER_PATH = 4
"""Cast members tried for one path before the attempt moves on."""


class _Planned:
    """An Explorer whose follow-up goals are the next steps of a fixed plan."""

    plan: Sequence[Transaction] = ()
    step = 0

    def follow_up(self, prev: SubGoalTrace) -> Transaction | None:  # noqa: ARG002
        """The plan's next goal (None once it is done), whatever the previous goal was."""
        if self.step >= len(self.plan):
            return None
        tx = self.plan[self.step]
        self.step += 1
        return tx

    def _targets(
        self, tx: Transaction, tool: ToolSpec, actor: Any, fixed: dict[str, Any] | None
    ) -> list[dict[str, Any] | None]:
        """The records a planned update may change: none the user cannot tell from another,
        and for a goal that retires a record (cancel, drop, withdraw) none this episode
        created: the path's insert and its later retirement are two of the user's records
        ("enroll in X; drop Y"), not one undone (the lint's ``undone_in_task``)."""
        assert isinstance(self, SymbolicExplorer)
        targets = SymbolicExplorer._targets(self, tx, tool, actor, fixed)
        table = self.model.spec.table(tool.table)
        life, keys = table.lifecycle, [c.name for c in table.primary_key]
        if tool.kind != "update" or len(keys) != 1:
            return targets
        # a record with a twin (the same values but its id) cannot be told apart by the user
        twins = Counter(_described(t, keys[0]) for t in targets if t is not None)
        targets = [t for t in targets if t is None or twins[_described(t, keys[0])] == 1]
        if life is None:
            return targets
        sets = self._fixed(tx).get(life.column, ...)
        if sets not in set(life.inactive_values) and (
            sets is not ... or life.column not in tx.parameters
        ):
            return targets
        made = {
            call.result[keys[0]]
            for call in self.witness
            if call.ok
            and isinstance(call.result, dict)
            and keys[0] in call.result
            and (done := self.model.tool(call.tool)).kind == "insert"
            and done.table == table.name
        }
        return [t for t in targets if t is None or t.get(keys[0]) not in made]


def _described(row: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    """A record as its user describes it: every value but its id."""
    return tuple(sorted((k, repr(v)) for k, v in row.items() if k != key))


class PathExplorer(_Planned, SymbolicExplorer):
    """The symbolic Explorer following a plan."""


class FusedPathExplorer(_Planned, CrossServiceExplorer):
    """The cross-service Explorer following a plan."""


def subsequence(wanted: Sequence[str], got: Sequence[str]) -> bool:
    """True when ``wanted`` occurs in ``got`` in order (other items may come between)."""
    rest = iter(got)
    return all(any(item == g for g in rest) for item in wanted)


class PathUnitWorker(UnitWorker):
    """A unit worker whose tasks follow the kept paths, in rotation."""

    generator = GENERATOR

    def __init__(self, domain: str, paths: Sequence[Json]) -> None:
        super().__init__(domain)
        self.paths = [p for p in paths if self._writes(p["tools"])]
        self.turn = 0
        self.current: Json | None = None
        self.origins: dict[str, Json] = {}

    def _writes(self, tools: Sequence[str]) -> list[str]:
        """The path's write tools that a (not direct) procedure stands for."""
        return [t for t in tools if self._procedures(t)]

    def _procedures(self, tool: str) -> list[Transaction]:
        return [
            tx
            for tx in self.model.write_transactions
            if tx.tool == tool and not self.model.is_direct(tx)
        ]

    def run(
        self, domain: str, seed: int, unit: int, count: int, first_index: int, out: Path
    ) -> UnitResult:
        """The unit's packages, and the record of the path each came from."""
        self.turn, self.origins = first_index, {}
        result = super().run(domain, seed, unit, count, first_index, out)
        folder = Path(out) / ORIGINS
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.origins, indent=1, sort_keys=True) + "\n"
        atomic_write_text(folder / f"unit-{unit:06d}.json", text)
        return result

    def _episode(
        self,
        scene: Scene,
        env: Environment,
        view: StateView,
        rng: random.Random,
        aim: Rule | None,
        refusal_ok: bool,  # noqa: ARG002
    ) -> Episode | None:
        """An episode achieving the goals of the next kept path (None when no user of the
        scene can). A path ends in its last write, never in a refusal."""
        if not self.paths:
            return None
        path = self.paths[self.turn % len(self.paths)]
        self.turn += 1
        self.current = path
        plan = [rng.choice(self._procedures(t)) for t in self._writes(path["tools"])]
        sampler = Sampler(self.model, view, rng, faker_for(rng.getrandbits(32)))
        explorer = self._explorer(env, view, sampler, rng)
        actors = self._cast_order(scene, env, view, explorer, rng, None)
        # the users who own a record for each of the plan's updates come first (a stable
        # sort keeps the cast order among them): the others cannot follow the path
        env.restore(scene.origin)
        view.invalidate()
        updates = [tx for tx in plan if self.model.tool(tx.tool).kind == "update"]
        actors.sort(key=lambda a: not all(any(sampler.target_rows(tx, a)) for tx in updates))
        wanted = [tx.tool for tx in plan]
        for actor in actors[:USERS_PER_PATH]:
            env.restore(scene.origin)
            view.invalidate()
            view.now = None  # a new task: its clock starts afresh
            assert isinstance(explorer, _Planned)
            explorer.plan, explorer.step = plan, 1
            episode = explorer.explore(
                actor, plan[0], aim, max_goals=len(plan), chain=1.0, allow_refusal=False
            )
            if episode is not None and subsequence(wanted, [g.tx.tool for g in episode.subgoals]):
                return episode
        return None

    def _explorer(
        self, env: Environment, view: StateView, sampler: Sampler, rng: random.Random
    ) -> SymbolicExplorer:
        if self.fused is None:
            return PathExplorer(self.model, env, view, sampler, rng)
        explorer = FusedPathExplorer(self.model, env, view, sampler, rng)
        explorer.fused = self.fused
        return explorer

    def _package(
        self,
        domain: str,
        seed: int,
        index: int,
        scene: Scene,
        episode: Episode,
        view: StateView,
        internal: set[str],
        origin: str,
        policy: str,
    ) -> TaskPackage:
        """The projected package, its total goal opened by the path template's motivation
        (the spoiler checks then read the whole text)."""
        view.invalidate()
        proj = self.projector.project(view, episode, self._edge(scene, episode), internal)
        motivation = (self.current or {}).get("motivation")
        if motivation:
            proj.task.total_goal = f"{motivation} {proj.task.total_goal}"
        return self._packaged(domain, seed, index, episode, proj, internal, origin, policy)

    def _accepted(self, *args: Any) -> TaskPackage | None:
        pkg: TaskPackage | None = super()._accepted(*args)
        if pkg is not None and self.current is not None:
            record: Json = {
                "template": self.current["template"],
                "tools": list(self.current["tools"]),
            }
            if "text" in self.current:
                record["motivation"] = self.current["motivation"]
                record["instruction"] = grounded_instruction(self.current["text"], pkg.witness)
            if "segments" in self.current:
                record["segments"] = self.current["segments"]
            self.origins[pkg.id] = record
        return pkg


def grounded_instruction(text: str, witness: Sequence[WitnessCall]) -> str:
    """The template's instruction with each ``<table.column>`` placeholder replaced by the value
    the witness gave that argument (the gold reference of AgentSkiller section 3.17.1)."""
    values: dict[str, Any] = {}
    for call in witness:
        if not call.ok:
            continue
        table = call.tool.partition("_")[2]
        for arg, value in (call.args or {}).items():
            values.setdefault(f"{table}.{arg}", value)
    return PLACEHOLDER.sub(
        lambda m: str(values.get(m.group(1), m.group(0))),
        text,
    )


def path_tasks(spec_path: str | Path, paths: Sequence[Json], n: int, seed: int, out: Path) -> Json:
    """Make up to ``n`` packages from ``paths`` (``{"template", "tools"}`` each) into ``out``.

    Resumable (a unit whose part exists is not made again) and deterministic in ``seed``.

    Returns:
        ``tasks`` (packages made), ``from_paths`` (packages whose path is recorded),
        ``discarded`` (attempts dropped, by reason) and ``origins`` (package id -> template).
    """
    spec = load_domain(spec_path)
    ds = DatasetDir(out)
    ds.put_spec(domain_spec_path(spec_path).read_text("utf-8"))
    ds.write_run(
        {
            "domain": spec.name,
            "n": n,
            "seed": seed,
            "generator": GENERATOR,
            "spec_hash": spec.spec_hash(),
            "scene_size": SCENE_SIZE,
            "spec": "spec.yaml",
            "paths": sorted(p["template"] for p in paths),
        }
    )
    worker = PathUnitWorker(str(spec_path), paths)
    units = (n + SCENE_SIZE - 1) // SCENE_SIZE
    discarded: dict[str, int] = {}
    for unit in range(units):
        if ds.has_part(unit):
            continue
        first = unit * SCENE_SIZE
        res = worker.run(spec.name, seed, unit, min(SCENE_SIZE, n - first), first, out)
        for reason, count in res.discarded.items():
            discarded[reason] = discarded.get(reason, 0) + count
    tasks = ds.assemble(units, n)
    origins: dict[str, str] = {}
    for unit in range(units):
        record = out / ORIGINS / f"unit-{unit:06d}.json"
        if record.exists():
            origins.update({k: v["template"] for k, v in json.loads(record.read_text()).items()})
    return {
        "tasks": tasks,
        "from_paths": len(origins),
        "discarded": dict(sorted(discarded.items())),
        "origins": dict(sorted(origins.items())),
    }


__all__ = [
    "GENERATOR",
    "ORIGINS",
    "PathUnitWorker",
    "grounded_instruction",
    "path_tasks",
    "subsequence",
]
