"""The LLM Projector: an LLM writes the user-view task description (LOGIGEN 3.5.3, Appendix A).

The model sees only what the user could see or know: the public dialogue, the user's profile, the
ids the user may write, and a spoiler-free draft of the goals reached (the symbolic projection of
the same episode, which fixes the facts: names, amounts, order, what the policy refused). It
answers with the Appendix A fields as JSON. The answer is parsed and validated, then checked with
the same spoiler check ``veritask check`` runs; a description that names something the user
cannot know goes back to the model with the leaked items named, a bounded number of times, and
is otherwise rejected with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    ModelRole,
    StructuredOutputError,
    ask,
    parse_model,
)
from veritask.synth._analysis import DomainModel
from veritask.synth._explorer import Episode
from veritask.synth._projector import Projection, SymbolicProjector, _archetype, classify
from veritask.synth._sampler import StateView
from veritask.task import TaskDescription, find_spoilers, unstated_in

LEAK_REASON = "the description names what the user cannot know"

PROJECTOR_PROMPT = """You are the Projector of a task-synthesis pipeline. From an exploration \
episode between a client and a consultant, write the task description that a user simulator \
will follow to bring about the same outcome with a new agent.

Goal-first, procedure-hidden:
- Say what the user wants and why, their constraints and what they believe, in the user's own \
words. Never say how: no tool names, no table or column names, no internal record ids, no row \
numbers such as "#12" or "id 12". Name records by their name, label or amount.
- Keep every fact needed to reach exactly the same final state (names, amounts, steps, choices) \
and keep the sub-goals of the draft, one for one and in the same order. Every value a draft \
request states (a name, an amount, a step number, a code) must appear in your text exactly as \
the draft writes it.
- Each policy refusal the client met becomes a false belief plus a reactive trigger of the form \
"IF the agent explains that ..., THEN ...". A goal that was refused outright ends with accepting \
the refusal.
- Give the user a short, consistent personality.

Answer with one JSON object and nothing else:
{"who_you_are": "...", "cognitive_gaps": ["..."], "false_beliefs": ["..."], \
"total_goal": "...", "sub_goals": [{"title": "...", "request": "...", \
"reactive_triggers": ["IF ..., THEN ..."]}]}"""


class ProjectionRejected(ValueError):
    """No usable description after the allowed rounds; ``reason`` is the discard reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def render_episode(draft: Projection, dialogue: list[tuple[str, str]]) -> str:
    """The projector's input: profile, ids the user knows, public dialogue and the draft."""
    profile = draft.profile
    lines = [f"USER: {draft.task.who_you_are}"]
    lines += ["", "IDS THE USER KNOWS (the only ids the description may contain):"]
    lines.append(", ".join(profile.known_ids) or "(none)")
    lines += ["", "PUBLIC DIALOGUE:"]
    lines += [f"{speaker.capitalize()}: {text}" for speaker, text in dialogue]
    lines += ["", "DRAFT (spoiler-free facts of what happened, in order):", "```json"]
    lines += [draft.task.model_dump_json(indent=1), "```"]
    return "\n".join(lines)


class LLMProjector(ModelRole):
    """Writes task descriptions with a model, under the spoiler check.

    Args:
        model: The domain analysis.
        provider: The model.
        ledger: Where calls and outcomes are charged (module ``projector``): one attempt per
            candidate, a success when its description was accepted.
        max_repairs: Rounds in which an unusable or leaking answer is sent back.
        config: Sampling settings.
    """

    def __init__(
        self,
        model: DomainModel,
        provider: ModelProvider,
        ledger: CostLedger | None = None,
        max_repairs: int = 2,
        config: GenerateConfig | None = None,
    ) -> None:
        super().__init__(provider, ledger, max_repairs, config)
        self.model = model
        self.symbolic = SymbolicProjector(model)

    def parser(
        self, internal: set[str], known: list[str], draft: TaskDescription | None = None
    ) -> Callable[[str], TaskDescription]:
        """Parse an answer into a TaskDescription and reject it when it leaks. With the
        symbolic ``draft``, the answer's sub-goals take the draft's structured requests (its
        asks and fallbacks, one for one), and an answer that drops a value a request states is
        rejected with the values named, so the text still grounds the task."""
        validate = parse_model(TaskDescription)
        spec = self.model.spec

        def parse(text: str) -> TaskDescription:
            task = validate(text)
            leaks = find_spoilers(task.render(), spec, internal, known)
            if leaks:
                raise ValueError(
                    f"{LEAK_REASON}: {'; '.join(leaks)}. Rewrite it without them: describe "
                    "records by name, label or amount."
                )
            return task if draft is None else _with_asks(task, draft)

        return parse

    async def project(
        self,
        view: StateView,
        episode: Episode,
        dialogue: list[tuple[str, str]],
        edge: bool,
        internal: set[str] | None = None,
        config: GenerateConfig | None = None,
    ) -> Projection:
        """Describe an episode; ``view`` shows the state after it.

        Raises:
            ProjectionRejected: Still unusable (reason ``projection rejected``) or still leaking
                (reason ``spoiler leak``) after the repair rounds.
        """
        internal = internal or set()
        draft = self.symbolic.project(view, episode, edge, internal)
        messages = [
            {"role": "system", "content": PROJECTOR_PROMPT},
            {"role": "user", "content": render_episode(draft, dialogue)},
        ]
        try:
            task = await ask(
                self.provider,
                messages,
                self.parser(internal, draft.profile.known_ids, draft.task),
                module="projector",
                ledger=self.ledger,
                config=config or self.config,
                max_repairs=self.max_repairs,
            )
        except StructuredOutputError as exc:
            last = exc.reasons[-1]
            reason = "spoiler leak" if last.startswith(LEAK_REASON) else "projection rejected"
            raise ProjectionRejected(reason, last) from None
        adversarial = bool(task.false_beliefs)
        tags, difficulty = classify(self.model, episode, adversarial)
        profile = draft.profile.model_copy(
            update={"archetype": _archetype(self.model, episode, edge, adversarial)}
        )
        return Projection(task=task, profile=profile, tags=tags, difficulty=difficulty)


def _with_asks(task: TaskDescription, draft: TaskDescription) -> TaskDescription:
    """The model's text with the draft's structured requests attached, sub-goal by sub-goal.

    Raises:
        ValueError: The sub-goals do not match the draft's one for one, or the text leaves out
            a value a request states (both go back to the model).
    """
    if len(task.sub_goals) != len(draft.sub_goals):
        raise ValueError(
            f"write exactly {len(draft.sub_goals)} sub-goals, one per sub-goal of the draft and "
            f"in its order (got {len(task.sub_goals)})"
        )
    subs = [
        mine.model_copy(update={"ask": theirs.ask, "fallbacks": theirs.fallbacks})
        for mine, theirs in zip(task.sub_goals, draft.sub_goals, strict=True)
    ]
    out = task.model_copy(update={"sub_goals": subs})
    missing = unstated_in(out)
    if missing:
        said = "; ".join(sorted({f"{u.arg} {u.reason.split(' is not')[0]}" for u in missing}))
        raise ValueError(f"the text must state these values as the draft does: {said}")
    return out


__all__ = ["PROJECTOR_PROMPT", "LLMProjector", "ProjectionRejected", "render_episode"]
