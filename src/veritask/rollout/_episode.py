"""The episode loop: the user talks, the agent calls tools, the environment answers (async).

The environment side is an :class:`~veritask.task.EnvSession` over the task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from veritask.agent import BY_USER, PAYLOAD, STOP, USER_TRAFFIC, Agent, Turn, User
from veritask.env import CompiledDomain
from veritask.model import Usage, classify_error
from veritask.task import EnvSession, EpisodeEnd, Session, StopReason, TaskPackage, Trajectory


@dataclass
class EpisodeLimits:
    """When an episode ends even if the user has not said stop."""

    max_turns: int = 30
    """User turns."""
    max_steps_per_turn: int = 50
    """Assistant messages (tool calls) between two user turns."""
    max_consecutive_tool_errors: int = 8
    max_user_calls: int = 8
    """Tool-call messages the user may make with their own tools within one user turn."""


@dataclass
class EpisodeTask:
    """Everything an episode needs about one task: the package, its policy and its two states."""

    package: TaskPackage
    domain: CompiledDomain
    policy: str
    origin: bytes
    target: bytes


SessionFactory = Callable[[EpisodeTask, int, int], Session]
"""Builds the environment side of an episode from its task, trial and episode seed (the default
is an :class:`~veritask.task.EnvSession` over the task's SQLite states)."""


def real_session(task: EpisodeTask, _trial: int = 0, _seed: int = 0) -> Session:
    """The SQLite environment over the task's s_origin, measured against its s_target."""
    return EnvSession.for_task(task.package, task.domain, task.origin, task.target)


Role = Literal["agent", "user", "environment"]
"""Who raised: the assistant, the user simulator, or the environment (a simulator or judge)."""


@dataclass(frozen=True)
class EpisodeFailure:
    """Why an episode could not be played out: a role raised instead of answering.

    Such an episode says nothing about the agent (an unreachable endpoint, a rejected key, a
    timeout, an answer that could not be parsed, a provider that raised), so it is reported
    apart and never scored. A tool call the environment *rejects* is no failure: it is an
    answer, and the episode goes on and is scored.

    Attributes:
        role: Who raised.
        kind: The failure's kind (see :func:`veritask.model.classify_error`).
        message: ``ExceptionType: message``.
        base_url: The endpoint the failed call tried, when known.
        model: The model it asked for, when known.
        reason: A short cause (``connection refused``), when known.
    """

    role: Role
    kind: str
    message: str
    base_url: str | None = None
    model: str | None = None
    reason: str | None = None

    @classmethod
    def from_exception(cls, role: Role, exc: BaseException) -> EpisodeFailure:
        """Classify what ``role`` raised."""
        info = classify_error(exc)
        return cls(role, info.kind, info.message, info.base_url, info.model, info.reason)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (stable keys: those of the attributes)."""
        return asdict(self)


@dataclass(frozen=True)
class EpisodeOutcome:
    """A played episode: its trajectory, and the failure that ended it, if any.

    With a failure the trajectory (``stop_reason`` ``agent_error``) is a record of how far the
    episode got, not a result to score.
    """

    trajectory: Trajectory
    failure: EpisodeFailure | None = None

    @property
    def scored(self) -> bool:
        """True when the episode ran to an end the verifier may score."""
        return self.failure is None


class _RoleFailed(Exception):
    """A role raised; carries who it was."""

    def __init__(self, role: Role, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.role: Role = role
        self.cause = cause


class _Runner:
    def __init__(
        self, task: EpisodeTask, agent: Agent, user: User, limits: EpisodeLimits, session: Session
    ) -> None:
        self.agent = agent
        self.user = user
        self.limits = limits
        self.session = session
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": task.policy}]
        self.agent_usage = Usage()
        self.user_usage = Usage()
        self.errors_in_a_row = 0

    async def _tool_result(self, turn: int, call: dict[str, Any]) -> dict[str, Any]:
        try:
            message, result = await self.session.astep(call, turn)
        except Exception as exc:  # a simulator's model failing, say
            raise _RoleFailed("environment", exc) from exc
        self.errors_in_a_row = 0 if result.ok else self.errors_in_a_row + 1
        return message

    async def agent_turn(self) -> StopReason | None:
        """Let the agent act until it speaks to the user; a stop reason when the episode must end."""
        for _ in range(self.limits.max_steps_per_turn):
            try:
                turn = await self.agent.respond(self.messages, self.session.tools)
            except Exception as exc:
                raise _RoleFailed("agent", exc) from exc
            self.agent_usage.add(turn.usage)
            self.messages.append(turn.message)
            calls = turn.message.get("tool_calls") or []
            if not calls:
                return None
            turn_index = len(self.messages) - 1
            for call in calls:
                self.messages.append(await self._tool_result(turn_index, call))
            if self.errors_in_a_row >= self.limits.max_consecutive_tool_errors:
                return "tool_errors"
        return "max_turns"

    async def _user_turn(self, opening: bool) -> Any:
        try:
            return await (self.user.open() if opening else self.user.respond(self.messages))
        except Exception as exc:
            raise _RoleFailed("user", exc) from exc

    async def _user_reply(self) -> Turn:
        """The user's next message. Dual control: while the user calls their own tools, run
        the calls and let the user go on; the final message carries the traffic."""
        reply = await self._user_turn(opening=False)
        traffic: list[dict[str, Any]] = []
        for _ in range(self.limits.max_user_calls):
            calls = reply.message.get("tool_calls") or []
            if not calls:
                break
            self.user_usage.add(reply.usage)
            traffic.append(reply.message)
            turn = len(self.messages)  # the user's message-to-be
            for call in calls:
                traffic.append(await self._user_tool_result(turn, call))
            try:
                reply = await self.user.respond(self.messages + traffic)
            except Exception as exc:
                raise _RoleFailed("user", exc) from exc
        return fold_user_traffic(reply, traffic)

    async def _user_tool_result(self, turn: int, call: dict[str, Any]) -> dict[str, Any]:
        step = getattr(self.session, "astep_user", None)
        if step is None:  # a session with no user side (a simulated environment)
            message = {"role": "tool", "tool_call_id": call.get("id"), "content": _NO_USER_SIDE}
        else:
            try:
                message, _ = await step(call, turn)
            except Exception as exc:
                raise _RoleFailed("environment", exc) from exc
        return {**message, PAYLOAD: {BY_USER: True}}

    async def run(self) -> StopReason:
        opening = await self._user_turn(opening=True)
        self.user_usage.add(opening.usage)
        self.messages.append(opening.message)
        for _ in range(self.limits.max_turns):
            stop = await self.agent_turn()
            if stop is not None:
                return stop
            reply = await self._user_reply()
            self.user_usage.add(reply.usage)
            if STOP in (reply.message.get("content") or ""):
                return "user_stop"
            self.messages.append(reply.message)
        return "max_turns"


_NO_USER_SIDE = '{"error": {"code": "USER_TOOL", "message": "no user-side tools here"}}'


def fold_user_traffic(reply: Turn, traffic: list[dict[str, Any]]) -> Turn:
    """The user's final message with the tool traffic of the turn kept under its payload (the
    agent sees only the words; the user's view and user SFT data show the calls). Calls the
    message still makes (past the limit) were not run and are dropped."""
    if not traffic and not reply.message.get("tool_calls"):
        return reply
    # calls still asked for past ``max_user_calls`` were not run: the message keeps its words
    message = {k: v for k, v in reply.message.items() if k != "tool_calls"}
    if not traffic:
        return Turn(message, reply.usage)
    payload = dict(message.get(PAYLOAD) or {})
    payload[USER_TRAFFIC] = traffic
    message[PAYLOAD] = payload
    return Turn(message, reply.usage)


async def run_episode(
    task: EpisodeTask,
    agent: Agent,
    user: User,
    *,
    trial: int = 0,
    seed: int = 0,
    limits: EpisodeLimits | None = None,
    session: Session | None = None,
) -> Trajectory:
    """Run one episode and record it as a Trajectory (the SQLite environment leaves ``reward``
    None for the verifier; a simulated environment's judge fills it in).

    The loop stops on the user's ``###STOP###``, after ``max_turns`` user turns, after too many
    consecutive tool errors, or when a role raises (``agent_error``, with the message kept).
    ``session`` is the environment side (default: :func:`real_session`). Use
    :func:`play_episode` to learn whether (and why) the episode failed.
    """
    outcome = await play_episode(
        task, agent, user, trial=trial, seed=seed, limits=limits, session=session
    )
    return outcome.trajectory


async def play_episode(
    task: EpisodeTask,
    agent: Agent,
    user: User,
    *,
    trial: int = 0,
    seed: int = 0,
    limits: EpisodeLimits | None = None,
    session: Session | None = None,
) -> EpisodeOutcome:
    """:func:`run_episode`, with the failure that ended the episode (if a role raised).

    A failure of the environment while writing the trajectory (a simulated environment's
    judge) is a failure too; the trajectory is then the conversation alone.

    Args:
        task: The task.
        agent: The assistant.
        user: The user simulator.
        trial: The trial index.
        seed: The episode seed.
        limits: When the episode ends (default :class:`EpisodeLimits`).
        session: The environment side (default: :func:`real_session`).

    Returns:
        The trajectory and, when a role raised, an :class:`EpisodeFailure`.
    """
    runner = _Runner(task, agent, user, limits or EpisodeLimits(), session or real_session(task))
    failure = None
    try:
        stop = await runner.run()
    except _RoleFailed as exc:  # recorded, not raised: the batch reports it apart
        stop, failure = "agent_error", EpisodeFailure.from_exception(exc.role, exc.cause)
    except Exception as exc:  # the loop itself choking on what a role returned
        stop, failure = "agent_error", EpisodeFailure.from_exception("agent", exc)
    end = EpisodeEnd(
        messages=runner.messages,
        agent=agent.name,
        user=user.name,
        stop_reason=stop,
        trial=trial,
        seed=seed,
        agent_usage=runner.agent_usage,
        user_usage=runner.user_usage,
        error=failure.message if failure else None,
    )
    try:
        return EpisodeOutcome(await runner.session.atrajectory(end), failure)
    except Exception as exc:  # the environment could not write the episode (a judge failing)
        failure = failure or EpisodeFailure.from_exception("environment", exc)
        return EpisodeOutcome(_bare_trajectory(task, runner, end, failure), failure)
    finally:
        runner.session.close()


def _bare_trajectory(
    task: EpisodeTask, runner: _Runner, end: EpisodeEnd, failure: EpisodeFailure
) -> Trajectory:
    """The conversation of an episode whose environment failed to write it (no state facts)."""
    return Trajectory(
        task_id=task.package.id,
        domain=task.package.domain,
        trial=end.trial,
        seed=end.seed,
        agent=end.agent,
        user=end.user,
        messages=end.messages,
        tools=runner.session.tools,
        stop_reason="agent_error",
        initial_distance=0,
        final_distance=0,
        agent_usage=runner.agent_usage,
        user_usage=runner.user_usage,
        error=failure.message,
    )
