"""User turns in TRL's environment mode, and the tasks that need none.

TRL's ``environment_factory`` rollouts have no user turn after the prompt: the model's text
ends the episode, so the scripted user never speaks again, and a task whose user asks for a
second sub-goal, or accepts another value after a refusal, cannot be solved there. Two ways out:

* :func:`make_user_environment_class` adds a ``respond_to_user`` tool to the environment class.
  Its argument is what the model tells the user; its result is the user simulator's reply (the
  next request, an answer, the reaction to a refusal), so the whole conversation happens inside
  the rollout as tool calls. Rows from ``build_grpo_dataset(..., user_tool=True)`` tell the
  model so in the system prompt.
* :func:`single_turn_tasks` lists the tasks solvable without a later user turn (one sub-goal,
  and no fallback that asks for another value), for training on the plain class.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from veritask.agent import STOP
from veritask.integrations._session import dataset_source
from veritask.integrations._turns import USER_TOOL, USER_TOOL_INSTRUCTION, single_turn
from veritask.integrations.trl import VeritaskTRLEnv, make_environment_class
from veritask.task import TaskPackage

__all__ = [
    "USER_TOOL",
    "USER_TOOL_INSTRUCTION",
    "make_user_environment_class",
    "single_turn",
    "single_turn_tasks",
]

ENDED = f"{STOP} (the user has nothing more to ask; end the conversation)"


def single_turn_tasks(dataset: str, *, domain: str | None = None) -> list[str]:
    """Ids of the dataset's tasks (optionally of one domain) solvable without a later user turn,
    in manifest order."""
    packages: Iterable[TaskPackage] = dataset_source(str(dataset)).packages
    return [p.id for p in packages if (domain is None or p.domain == domain) and single_turn(p)]


class _UserTool(VeritaskTRLEnv):
    """The ``respond_to_user`` tool, mixed into a generated environment class."""

    def respond_to_user(self, message: str) -> str:
        """Send a message to the user (an answer, a question, or why a request cannot be
        done) and get the user's reply.

        Args:
            message: What to tell the user.

        Returns:
            The user's reply; ###STOP### once the user has nothing more to ask.
        """
        if not self._started:
            raise RuntimeError("reset() must be called before any tool")
        env = self.veritask_env
        if env.done:
            return ENDED
        result = env.step({"role": "assistant", "content": message})
        if result.done:
            return ENDED
        reply: Any = result.messages[-1].get("content")
        return str(reply or "")


def make_user_environment_class(
    dataset: str,
    *,
    domain: str | None = None,
    name: str | None = None,
    lambda_err: float = 0.1,
) -> type[VeritaskTRLEnv]:
    """The ``environment_factory`` class of :func:`~veritask.integrations.trl.make_environment_class`
    with a ``respond_to_user`` tool whose result is the scripted user's reply.

    Args:
        dataset: A dataset directory made by ``veritask.synth.generate``.
        domain: The domain to serve (needed only when the dataset mixes domains).
        name: The class name (default ``Veritask<Domain>UserEnv``).
        lambda_err: Passed to :class:`~veritask.integrations.VeritaskEnv`.

    Returns:
        A subclass of :class:`~veritask.integrations.trl.VeritaskTRLEnv`.

    Raises:
        ValueError: As ``make_environment_class``, or when the domain has a tool named
            ``respond_to_user``.
    """
    base = make_environment_class(dataset, domain=domain, lambda_err=lambda_err)
    if hasattr(base, USER_TOOL):
        raise ValueError(f"domain {base.domain!r} already has a tool named {USER_TOOL!r}")
    cls_name = name or base.__name__.removesuffix("Env") + "UserEnv"
    namespace = {"__module__": __name__, "__doc__": base.__doc__}
    return type(cls_name, (_UserTool, base), namespace)
