"""Cross-service episodes for fused specs (AgentSkiller section 3.13, symbolic).

A spec with two or more ``services`` (``veritask fuse`` writes them; a hand-written spec may
too) is fused: :func:`fused_services` reads which tables each service owns from that field. The
actor (person) table is shared and in no service. Any spec without the field (every built-in
domain) is generated exactly as before.

On a fused spec, :class:`CrossServiceExplorer` plans each episode across services through the
shared person: after the first goal (and its follow-ups) it adds a goal, for the same person, in
every service the episode has not written yet, trying that service's procedures in a seeded
order; an episode that cannot reach one is dropped (None). Refusal tasks are not made: they
write nothing, so they cannot span services. A request the policy refused and the user gave up
(``declined``) does count for its service: the agent had to handle it there, and a rule that only
ever refuses (an inactive account) is reached that way. The generation unit admits only episodes
that span two or more services (:meth:`FusedServices.acted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from veritask.policy import DomainSpec, Rule, Transaction
from veritask.synth._analysis import DomainModel
from veritask.synth._explorer import Episode, SubGoalTrace, SymbolicExplorer
from veritask.task import WitnessCall

CROSS_TRIES = 6
"""Procedures of a missing service tried (each with its own repairs) before the episode is
dropped."""

MIN_SERVICES = 2


@dataclass(frozen=True)
class FusedServices:
    """The services of a fused spec and the namespace of each table (the person table has
    none)."""

    services: tuple[str, ...]
    tables: dict[str, str]

    def acted(self, witness: list[WitnessCall], model: DomainModel) -> set[str]:
        """The services a witness acts in: those its accepted writes changed, and those of
        writes the policy refused (in an episode, a refused write is either worked around
        by an accepted one in the same service or a request the user gave up: the agent had
        to handle it there)."""
        out = self.written(witness, model)
        for call in witness:
            refused = not call.ok and call.error and call.error.get("violated_rule")
            if refused and model.writes(call.tool):
                service = self.tables.get(model.tool(call.tool).table)
                if service is not None:
                    out.add(service)
        return out

    def written(self, witness: list[WitnessCall], model: DomainModel) -> set[str]:
        """The services whose tables the witness's accepted writes changed."""
        out = set()
        for call in witness:
            if call.ok and model.writes(call.tool):
                service = self.tables.get(model.tool(call.tool).table)
                if service is not None:
                    out.add(service)
        return out


def fused_services(spec: DomainSpec) -> FusedServices | None:
    """The services a spec declares in its ``services`` field, or None when it declares none
    (a single domain).

    The names of tables and procedures are not read: a hand-written multi-service spec may
    name them as it likes, and a single-domain spec whose names look namespaced stays single.
    Services are in sorted order (the order the explorer visits them).
    """
    if len(spec.services) < MIN_SERVICES:
        return None
    tables = {table: s.name for s in spec.services for table in s.tables}
    return FusedServices(tuple(sorted(s.name for s in spec.services)), tables)


class CrossServiceExplorer(SymbolicExplorer):
    """The symbolic Explorer on a fused spec: every episode writes in two or more services.

    Set ``fused`` before exploring (the unit does); see the module docstring for the plan.
    """

    fused: FusedServices | None = None

    def _service_of(self, tx: Transaction) -> str | None:
        assert self.fused is not None
        return self.fused.tables.get(self.model.tool(tx.tool).table)

    def explore(
        self,
        actor: Any,
        first: Transaction,
        aim: Rule | None,
        max_goals: int,
        chain: float,
        allow_refusal: bool,  # noqa: ARG002 - a refusal writes nothing, so it spans no services
    ) -> Episode | None:
        """One episode for ``actor`` that writes in every service it can reach, at least two;
        None when it reaches fewer (state and witness are then left to the caller to reset)."""
        episode = super().explore(actor, first, aim, max_goals, chain, allow_refusal=False)
        if episode is None or episode.refusal is not None or self.fused is None:
            return None
        goals = list(episode.subgoals)
        for service in self.fused.services:
            if service in self.fused.acted(episode.witness, self.model):
                continue
            more = self._cross_goal(service, actor)
            if more is None:
                return None
            goals += more
            episode.witness = list(self.witness)
        episode.subgoals = goals
        if len(self.fused.acted(episode.witness, self.model)) < MIN_SERVICES:
            return None
        return episode

    def _cross_goal(self, service: str, actor: Any) -> list[SubGoalTrace] | None:
        """A goal of ``actor`` in ``service``: its procedures in a seeded order, the first one
        reached (with its lead-up goals), else None."""
        options = [tx for tx in self.model.write_transactions if self._service_of(tx) == service]
        self.rng.shuffle(options)
        for tx in options[:CROSS_TRIES]:
            more = self._attempt(tx, actor)
            if more is not None:
                return more
        return None


__all__ = ["CrossServiceExplorer", "FusedServices", "fused_services"]
