"""Cross-domain trajectory fusion (AgentSkiller section 3.11).

A cross-domain trajectory is ``<tau_A, tau_B, M>``: a tool path of service A, one of service B,
and a *motivation* that joins them. Here the single-service paths come from each source spec's
own pipeline (tool graph, enumeration, grounding and execution, semantic template and judge):
its *validated task registry* is the set of paths kept there. Fusion pairs write paths of two
services, and **single-domain feasibility filtering** prunes, before anything runs, every pair
with a segment the registry does not hold (a path that failed alone fails fused). A surviving
pair is renamed into the fused spec's namespaces (``insert_appointments`` of ``clinic`` is
``insert_clinic_appointments``; the actor's query is the shared person's) and gets a motivation
and an instruction joined from its two templates.

What survives is a task skeleton like any kept path: the tasks stage grounds it on the fused
scene, executes it, and keeps it only when the witness replays, reaches its target and is
grounded (the feasibility check after the ex-ante one).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass
from typing import Any

from veritask.blueprint._ground import ground_paths
from veritask.blueprint._semantic import (
    PLACEHOLDER,
    SemanticTemplate,
    judged_templates,
    template_rng,
)
from veritask.blueprint._toolgraph import (
    TaskTemplate,
    build_tool_graph,
    enumerate_paths,
    task_template,
)
from veritask.policy import DomainSpec, actor_table, build_tools

Json = dict[str, Any]
DEFAULT_MAX_PAIRS = 200

_JOINS = (
    "{a} Because both go through the same account, I have my {b_service} to sort out too. {b}",
    "{a} On top of that, there is my {b_service}. {b}",
    "{a} That has a knock-on effect on my {b_service}: {b_lower}",
)


@dataclass(frozen=True)
class Registry:
    """One service's validated task registry: its enumerated paths and the kept ones' judged
    templates (by template id)."""

    service: str
    spec: DomainSpec
    skeletons: tuple[TaskTemplate, ...]
    kept: dict[str, SemanticTemplate]

    def write_paths(self) -> list[TaskTemplate]:
        """The enumerated paths that write (the candidates of fusion)."""
        tools = build_tools(self.spec)
        return [s for s in self.skeletons if any(tools[t].writes for t in s.tools)]


@dataclass(frozen=True)
class FusedTrajectory:
    """``<tau_A, tau_B, M>`` in the fused spec's names, with the joined instruction."""

    id: str
    segments: tuple[tuple[str, str], ...]
    """``(service, single-service template id)`` per segment."""
    tools: tuple[str, ...]
    motivation: str
    text: str

    def to_path(self) -> Json:
        """The kept-path form the tasks stage takes."""
        return {
            "template": self.id,
            "tools": list(self.tools),
            "motivation": self.motivation,
            "text": self.text,
            "author": "fusion",
            "segments": [list(s) for s in self.segments],
        }


def registry(spec: DomainSpec, seed: int, max_paths: int = 200) -> Registry:
    """Run one source service's path pipeline (sampling-mode grounding, execution filter,
    grammar templates and the rubric judge) and return its registry."""
    graph = build_tool_graph(spec)
    skeletons = [task_template(spec, graph, p) for p in enumerate_paths(graph, limit=max_paths)]
    report = ground_paths(spec, skeletons, mode="sampling", seed=seed)
    kept_ids = {o.template for o in report.outcomes if o.kept}
    judged = judged_templates(spec, [s for s in skeletons if s.id in kept_ids], seed)
    kept = {t.id: t for t, v in judged if v.passed}
    return Registry(spec.name, spec, tuple(skeletons), kept)


def fused_name(tool: str, service: str, actor: str, person: str) -> str:
    """A source tool's name in the fused spec (the actor's table is the shared person's)."""
    kind, _, table = tool.partition("_")
    return f"{kind}_{person}" if table == actor else f"{kind}_{service}_{table}"


def _renamed(text: str, service: str, actor: str, person: str) -> str:
    def swap(match: Any) -> str:
        table, _, column = match.group(1).partition(".")
        fused = person if table == actor else f"{service}_{table}"
        return f"<{fused}.{column}>"

    return PLACEHOLDER.sub(swap, text)


def _join(a: SemanticTemplate, b: SemanticTemplate, b_service: str, rng: random.Random) -> str:
    frame = rng.choice(_JOINS)
    lower = b.motivation[:1].lower() + b.motivation[1:]
    return frame.format(
        a=a.motivation, b=b.motivation, b_lower=lower, b_service=b_service.replace("_", " ")
    )


def fuse_trajectories(
    fused: DomainSpec,
    registries: list[Registry],
    person: str,
    seed: int,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> tuple[list[FusedTrajectory], Json]:
    """The fused trajectories of every ordered pair of services, and the counts.

    Candidates are pairs of write paths (one per service, ``max_pairs`` per service pair at
    most, in a seeded order); a pair with a segment outside its registry is pruned ex ante;
    one whose renamed tools the fused spec lacks is dropped as ``unmapped``.

    Returns:
        The surviving trajectories and ``{"candidates", "pruned_ex_ante", "unmapped",
        "fused"}``.
    """
    tools = build_tools(fused)
    out: list[FusedTrajectory] = []
    counts = {"candidates": 0, "pruned_ex_ante": 0, "unmapped": 0}
    for ra, rb in itertools.permutations(registries, 2):
        pairs = list(itertools.product(ra.write_paths(), rb.write_paths()))
        template_rng(seed, f"{ra.service}+{rb.service}").shuffle(pairs)
        for sa, sb in pairs[:max_pairs]:
            counts["candidates"] += 1
            if sa.id not in ra.kept or sb.id not in rb.kept:
                counts["pruned_ex_ante"] += 1
                continue
            fused_path = _fused_path(ra, sa, rb, sb, person)
            if any(t not in tools for t in fused_path):
                counts["unmapped"] += 1
                continue
            out.append(_trajectory(ra, sa, rb, sb, fused_path, person, seed))
    return out, {**counts, "fused": len(out)}


def _fused_path(
    ra: Registry, sa: TaskTemplate, rb: Registry, sb: TaskTemplate, person: str
) -> tuple[str, ...]:
    first = [fused_name(t, ra.service, actor_table(ra.spec), person) for t in sa.tools]
    second = [fused_name(t, rb.service, actor_table(rb.spec), person) for t in sb.tools]
    return tuple(first + [t for t in second if t not in first])


def _trajectory(
    ra: Registry,
    sa: TaskTemplate,
    rb: Registry,
    sb: TaskTemplate,
    fused_path: tuple[str, ...],
    person: str,
    seed: int,
) -> FusedTrajectory:
    ta, tb = ra.kept[sa.id], rb.kept[sb.id]
    digest = hashlib.sha256("\n".join(fused_path).encode()).hexdigest()[:12]
    rng = template_rng(seed, f"{sa.id}+{sb.id}")
    text_a = _renamed(ta.text, ra.service, actor_table(ra.spec), person)
    text_b = _renamed(tb.text, rb.service, actor_table(rb.spec), person)
    return FusedTrajectory(
        f"fx-{digest}",
        ((ra.service, sa.id), (rb.service, sb.id)),
        fused_path,
        _join(ta, tb, rb.service, rng),
        f"{text_a} {text_b}",
    )


__all__ = [
    "FusedTrajectory",
    "Registry",
    "fuse_trajectories",
    "fused_name",
    "registry",
]
