"""TRL integration: an ``environment_factory`` class, reward functions and a dataset builder.

Targets TRL's ``GRPOTrainer`` with ``environment_factory`` (TRL >= 1.0, experimental there;
developed against ``trl==1.16.0`` and ``transformers==5.23.0``). TRL's contract, as read in
``trl/trainer/grpo_trainer.py``:

* the factory is called with no argument, once per concurrent rollout; instances are pooled
  and reused, each rollout starting with ``reset(**row)`` (``row`` is the whole dataset row);
  a string returned by ``reset`` is appended to the last prompt message;
* every public function of the class other than ``reset`` and ``get_reward`` is a tool: TRL
  calls it with the model's arguments as keywords and feeds ``str(result)`` back, and its schema
  comes from ``transformers.utils.get_json_schema`` (type hints plus a Google-style docstring);
* ``get_reward()`` (when defined) is called once per finished rollout and becomes an extra
  reward column named after the class;
* reward functions are called as ``f(prompts=..., completions=..., completion_ids=...,
  environments=..., **dataset_columns)`` and return one float (or ``None``) per completion.

:func:`make_environment_class` generates such a class for a dataset directory: one method per
veritask tool of the domain, with a keyword-only signature typed from the tool's JSON schema
(``str``/``int``/``float``/``bool``, ``Literal`` for enums, ``Optional`` for optional arguments)
and a docstring whose ``Args:`` section carries the argument descriptions, so the extracted
schema has veritask's names, types, enums and required list. Bounds (``minimum``/``maximum``)
and ``additionalProperties`` are not expressible that way; the environment still enforces them
and answers violations with a structured error.

Everything TRL-specific is duck-typed: this module imports neither ``trl`` nor ``torch``;
:func:`build_grpo_dataset` needs ``datasets``.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from veritask.integrations._session import (
    VeritaskEnv,
    dataset_source,
    opening_prompts,
    replay_reward,
)
from veritask.integrations._tools import tool_docstring, tool_parameters
from veritask.policy._tools import ToolSpec

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "VeritaskTRLEnv",
    "build_grpo_dataset",
    "environment_factories",
    "grpo_rows",
    "make_environment_class",
    "proximity_reward",
    "score_completion",
    "veritask_reward",
    "violation_penalty",
]

_RESERVED = frozenset({"reset", "get_reward"})


class VeritaskTRLEnv:
    """Base of the generated environment classes: one rollout of one veritask task.

    Use :func:`make_environment_class` to get a concrete class (with the tool methods of a
    domain) and pass that class as ``GRPOTrainer(environment_factory=...)``. Public functions
    are TRL tools, so helpers here are private; ``dataset`` and ``domain`` are plain class
    attributes, which TRL ignores.
    """

    dataset: ClassVar[str] = ""
    """The dataset directory the class serves."""
    domain: ClassVar[str] = ""
    """The domain whose tools the class exposes."""
    lambda_err: ClassVar[float] = 0.1
    _cursor: ClassVar[itertools.count[int]] = itertools.count()

    def __init__(self) -> None:
        if not self.dataset:
            raise TypeError("use make_environment_class(dataset) to get a concrete class")
        self._env = VeritaskEnv(self.dataset, lambda_err=self.lambda_err)
        self._started = False
        self._calls = 0

    @property
    def veritask_env(self) -> VeritaskEnv:
        """The underlying episode (trajectory, proximity, messages)."""
        return self._env

    def reset(self, task_id: str | None = None, prompt: Any = None, **row: Any) -> str:
        """Start an episode on ``task_id`` (the dataset row's task; the next task if absent).

        Returns what the prompt still lacks of the opening observation, which TRL appends to
        the last prompt message: nothing for rows from :func:`build_grpo_dataset` (their prompt
        already holds the policy, whole or compact, and the user's opening), the opening request
        (and the policy, when the prompt has no system message) otherwise.
        """
        if task_id is None:
            packages = [p for p in self._env.source.packages if p.domain == self.domain]
            task_id = packages[next(type(self)._cursor) % len(packages)].id
        obs = self._env.reset(task_id)
        if self._env.task.package.domain != self.domain:
            raise ValueError(f"task {task_id!r} is not of domain {self.domain!r}")
        self._started = True
        self._calls = 0
        shown = _texts(prompt)
        parts = []
        if not _has_system(prompt) and not any(obs.system in text for text in shown):
            parts.append(obs.system)
        if not any(obs.user in text for text in shown):
            parts.append(obs.user)
        return "\n\n".join(parts)

    def get_reward(self) -> float:
        """The verified reward of the episode so far (1.0 when the task is solved exactly)."""
        if not self._started:
            return 0.0
        return float(self._env.reward()["reward"])

    def _call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Run one tool call, record it as its own assistant turn, return the JSON answer."""
        if not self._started:
            raise RuntimeError("reset() must be called before any tool")
        self._calls += 1
        return _record_call(self._env, tool, arguments, f"call_{self._calls}")


def _record_call(env: VeritaskEnv, tool: str, arguments: Mapping[str, Any], call_id: str) -> str:
    """Run one call as its own assistant turn; the tool message content is what TRL shows."""
    env.record_call(tool, arguments, call_id)
    content: str = env.messages[-1]["content"]
    return content


def _has_system(prompt: Any) -> bool:
    if isinstance(prompt, str) or not isinstance(prompt, Sequence):
        return False
    return any(isinstance(m, Mapping) and m.get("role") == "system" for m in prompt)


def _texts(prompt: Any) -> list[str]:
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, Sequence):
        return [str(m.get("content") or "") for m in prompt if isinstance(m, Mapping)]
    return []


# -- generated tool methods -------------------------------------------------------------------


def _tool_method(spec: ToolSpec) -> Callable[..., str]:
    """A method whose signature and docstring describe ``spec`` and which runs it."""
    name = spec.name

    def method(self: VeritaskTRLEnv, **arguments: Any) -> str:
        return self._call(name, arguments)

    params = tool_parameters(spec)
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__name__ = name
    method.__qualname__ = f"VeritaskTRLEnv.{name}"
    method.__doc__ = tool_docstring(spec)
    method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [self_param, *params], return_annotation=str
    )
    method.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
    return method


def _check_name(name: str, what: str) -> None:
    if not name.isidentifier() or name.startswith("_") or name in _RESERVED:
        raise ValueError(f"{what} {name!r} cannot be a TRL tool method name")


def _domains(dataset: str) -> list[str]:
    return sorted({p.domain for p in dataset_source(dataset).packages})


def make_environment_class(
    dataset: str,
    *,
    domain: str | None = None,
    name: str | None = None,
    lambda_err: float = 0.1,
) -> type[VeritaskTRLEnv]:
    """The ``environment_factory`` class for a dataset directory.

    Args:
        dataset: A dataset directory made by ``veritask.synth.generate``.
        domain: The domain to serve; needed only when the dataset mixes domains (see
            :func:`environment_factories`).
        name: The class name, which TRL uses for the ``get_reward`` reward column
            (default ``Veritask<Domain>Env``).
        lambda_err: Passed to :class:`~veritask.integrations.VeritaskEnv`.

    Returns:
        A subclass of :class:`VeritaskTRLEnv` with one typed method per tool of the domain.

    Raises:
        ValueError: If the dataset is empty, mixes domains and none was chosen, or a tool name
            cannot be a method name.
    """
    dataset = str(dataset)
    domains = _domains(dataset)
    if not domains:
        raise ValueError(f"{dataset} holds no tasks")
    if domain is None:
        if len(domains) > 1:
            raise ValueError(
                f"{dataset} mixes domains {domains}; pass domain= or use environment_factories()"
            )
        domain = domains[0]
    elif domain not in domains:
        raise ValueError(f"{dataset} has no task of domain {domain!r} (has {domains})")
    tools = dataset_source(dataset).domain(domain).tools
    namespace: dict[str, Any] = {
        "dataset": dataset,
        "domain": domain,
        "lambda_err": lambda_err,
        "_cursor": itertools.count(),
        "__module__": __name__,
        "__doc__": f"One rollout of a veritask {domain!r} task from {dataset} (TRL environment).",
    }
    for tool_name, spec in tools.items():
        _check_name(tool_name, "tool")
        namespace[tool_name] = _tool_method(spec)
    cls_name = name or f"Veritask{domain.title().replace('_', '')}Env"
    return type(cls_name, (VeritaskTRLEnv,), namespace)


def environment_factories(
    dataset: str, *, lambda_err: float = 0.1
) -> dict[str, type[VeritaskTRLEnv]]:
    """One environment class per domain of the dataset, keyed by domain: TRL's ``dict`` form of
    ``environment_factory`` (rows pick theirs through the ``environment`` column that
    ``build_grpo_dataset(..., environment_column=True)`` adds)."""
    return {
        d: make_environment_class(dataset, domain=d, lambda_err=lambda_err)
        for d in _domains(str(dataset))
    }


# -- dataset ---------------------------------------------------------------------------------


def grpo_rows(
    dataset: str,
    *,
    domain: str | None = None,
    environment_column: bool = False,
    compact: bool = False,
    single_turn_only: bool = False,
    user_tool: bool = False,
) -> list[dict[str, Any]]:
    """The rows of :func:`build_grpo_dataset` as plain dicts."""
    from veritask.integrations._turns import USER_TOOL_INSTRUCTION, single_turn

    rows = []
    for pkg, prompt in opening_prompts(dataset, domain, compact=compact):
        if single_turn_only and not single_turn(pkg):
            continue
        if user_tool:
            prompt[0]["content"] += "\n\n" + USER_TOOL_INSTRUCTION
        row: dict[str, Any] = {
            "prompt": prompt,
            "task_id": pkg.id,
            "domain": pkg.domain,
            "difficulty": pkg.difficulty,
            "refusal": pkg.refusal,
        }
        if environment_column:
            row["environment"] = pkg.domain
        rows.append(row)
    return rows


def build_grpo_dataset(
    dataset_dir: str,
    *,
    domain: str | None = None,
    environment_column: bool = False,
    compact: bool = False,
    single_turn_only: bool = False,
    user_tool: bool = False,
) -> Dataset:
    """A ``datasets.Dataset`` for ``GRPOTrainer``: one row per task.

    TRL's environment mode has no user turn after the prompt: train either on
    ``single_turn_only`` rows with the plain class, or with ``user_tool`` rows and the class of
    :func:`~veritask.integrations.trl_users.make_user_environment_class`, whose
    ``respond_to_user`` tool carries the user's later turns.

    Args:
        dataset_dir: A dataset directory made by ``veritask.synth.generate``.
        domain: Keep only tasks of this domain.
        environment_column: Add TRL's ``environment`` routing column (the domain), for a
            ``dict`` ``environment_factory`` from :func:`environment_factories`.
        compact: Keep in each prompt only the policy's procedures (and tables) that the task's
            requests name.
        single_turn_only: Keep only tasks solvable without a later user turn.
        user_tool: Tell the model (system prompt) to reach the user through ``respond_to_user``.

    Returns:
        Columns ``prompt`` (conversational: the system policy and the user's opening message),
        ``task_id``, ``domain``, ``difficulty`` and ``refusal`` (and ``environment``). TRL passes
        the whole row to ``reset`` and the extra columns to reward functions.
    """
    from datasets import Dataset

    rows = grpo_rows(
        dataset_dir,
        domain=domain,
        environment_column=environment_column,
        compact=compact,
        single_turn_only=single_turn_only,
        user_tool=user_tool,
    )
    return Dataset.from_list(rows)


# -- reward functions --------------------------------------------------------------------------


def _tool_calls(completion: Any) -> list[tuple[str, Any]]:
    """(name, arguments) of every tool call in a conversational completion, in order."""
    if not isinstance(completion, Sequence) or isinstance(completion, str):
        return []
    calls = []
    for message in completion:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            calls.append((str(fn.get("name", "")), fn.get("arguments") or {}))
    return calls


def score_completion(dataset: str, task_id: str, completion: Any) -> dict[str, Any]:
    """Replay the tool calls of a conversational completion on a fresh episode and verify it:
    ``VeritaskEnv.reward()``'s ``{"reward", "breakdown", "proximity", "violations"}``."""
    return replay_reward(dataset, task_id, _tool_calls(completion))


def _per_completion(
    completions: Sequence[Any],
    environments: Sequence[Any] | None,
    task_id: Sequence[str] | None,
    dataset: Sequence[str] | str | None,
    pick: Callable[[dict[str, Any]], float],
) -> list[float | None]:
    out: list[float | None] = []
    for i, completion in enumerate(completions):
        env = environments[i] if environments is not None else None
        if isinstance(env, VeritaskTRLEnv):
            out.append(pick(env.veritask_env.reward()) if env._started else None)
        elif task_id is not None and dataset is not None:
            ds = dataset if isinstance(dataset, str) else dataset[i]
            out.append(pick(score_completion(ds, task_id[i], completion)))
        else:
            out.append(None)
    return out


def veritask_reward(
    completions: Sequence[Any],
    environments: Sequence[Any] | None = None,
    task_id: Sequence[str] | None = None,
    dataset: Sequence[str] | str | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """The verified reward of each completion (TRL reward-function signature).

    With ``environments`` (TRL passes them when ``environment_factory`` is used) each episode's
    live state is verified: the same value as the class's ``get_reward``, which TRL already adds
    as a reward column, so pass this function only to weight it differently or with a class
    whose ``get_reward`` is disabled (``get_reward = None``). Without environments, the tool
    calls of each completion are replayed on a fresh episode of its ``task_id`` from
    ``dataset`` (a column, or bind it with ``functools.partial``). ``None`` where neither applies.
    """
    return _per_completion(
        completions, environments, task_id, dataset, lambda r: float(r["reward"])
    )


def proximity_reward(
    completions: Sequence[Any],
    environments: Sequence[Any] | None = None,
    task_id: Sequence[str] | None = None,
    dataset: Sequence[str] | str | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """LOGIGEN's state proximity of each episode's final state to the target, in [0, 1]: a
    dense shaping term to add (with a small weight) to the binary verified reward."""
    return _per_completion(
        completions, environments, task_id, dataset, lambda r: float(r["proximity"])
    )


def violation_penalty(
    completions: Sequence[Any],
    environments: Sequence[Any] | None = None,
    task_id: Sequence[str] | None = None,
    dataset: Sequence[str] | str | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Minus the number of tool calls the policy's rules refused (weight it, e.g. 0.1)."""
    return _per_completion(
        completions, environments, task_id, dataset, lambda r: -float(r["violations"])
    )
