"""The reviewers' ``run_python`` tool (SSLogic's code-augmented review), run in the OS sandbox.

A reviewer in LLM mode is offered one OpenAI function tool, ``run_python``. Each call's code
runs in a :class:`~veritask.logic._sandbox.SandboxWorker` child (CPU, memory, wall-clock and
disk limits; no network, no processes, no writes outside the child's temporary directory),
never in this process. Inside the child, ``import family`` gives the family under review:

- ``family.samples``: the instances the reviewer was shown (difficulty, inputs, question,
  answer);
- for a family file, its code too: ``family.generate(difficulty, rng)``, ``family.solution``,
  every ``solution_<name>`` validator, ``family.FAMILY``...

Built-in families are our own modules, which import the package; the child cannot import it,
so for them ``family`` holds the samples only.

The tool's result goes back to the model as JSON: the printed output (truncated to
:data:`STDOUT_LIMIT` characters) and the error, if any, with its line. :func:`ask_with_tools`
is the conversation: at most ``max_calls`` tool runs, then the final answer parsed like
:func:`~veritask.model.ask` does (repair rounds for an unusable answer). Every run is
recorded (:class:`ToolRun`) so a verdict can say which code it rests on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from veritask.logic._family import Family, Instance
from veritask.logic._filefamily import FileFamily
from veritask.logic._sandbox import DEFAULT_IMPORTS, SandboxLimits, SandboxWorker
from veritask.model import CostLedger, GenerateConfig, ModelProvider, StructuredOutputError

T = TypeVar("T")

_REFUSALS = ("Forbidden:", "PermissionError:")
"""How an error the sandbox raised inside the code starts (the audit hook, the OS layer)."""

TOOL_NAME = "run_python"
STDOUT_LIMIT = 4000
"""Characters of printed output a tool result keeps (the rest is cut, and said so)."""
CODE_LIMIT = 20000
"""The longest code a call may send (longer code is refused without running)."""
TOOL_LIMITS = SandboxLimits(cpu_seconds=5.0, memory_mb=512, wall_seconds=20.0)
"""The limits each tool run gets: more CPU than a family call, since a reviewer may search."""

_FAMILY_NOTE = (
    " `import family` gives the family under review: family.samples (the instances shown, "
    "with difficulty, inputs, question and answer) and, for a family file, its code: "
    "family.generate(difficulty, rng), family.solution(inputs) and the other validators."
)


def run_python_tool(with_family: bool = True) -> dict[str, Any]:
    """The OpenAI function schema of ``run_python`` (saying ``import family`` works only when
    the family is importable: the quality reviewer's tool, not a blind solver's)."""
    description = (
        "Run Python code in a sandbox (no network, no files outside a temporary directory, "
        f"a few seconds of CPU) and get back what it printed (at most {STDOUT_LIMIT} "
        "characters) and any error."
        + (_FAMILY_NOTE if with_family else "")
        + " Allowed imports: "
        + ", ".join(sorted(DEFAULT_IMPORTS))
        + "."
    )
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string", "description": "Python source to run."}},
                "required": ["code"],
                "additionalProperties": False,
            },
        },
    }


RUN_PYTHON_TOOL = run_python_tool()
"""The quality reviewer's ``run_python`` schema."""

_HARNESS = '''
import sys
import types

_SOURCE = {source}
_SAMPLES = {samples}
_LIMIT = {limit}


class _Capped:
    """A stdout that keeps the first _LIMIT characters and counts the rest."""

    def __init__(self):
        self.parts, self.kept, self.dropped = [], 0, 0

    def write(self, text):
        text = str(text)
        room = max(0, _LIMIT - self.kept)
        self.parts.append(text[:room])
        self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - room)
        return len(text)

    def flush(self):
        return None


def _family():
    module = types.ModuleType("family")
    if _SOURCE is not None:
        exec(compile(_SOURCE, "family.py", "exec"), module.__dict__)
    module.samples = [dict(s) for s in _SAMPLES]
    return module


def _line(exc):
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<run_python>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def run_tool(code):
    out = _Capped()
    saved = sys.stdout
    error, line = None, None
    try:
        sys.modules["family"] = _family()
        sys.stdout = out
        exec(compile(code, "<run_python>", "exec"), {{"__name__": "__main__"}})
    except Exception as exc:
        error, line = type(exc).__name__ + ": " + str(exc), _line(exc)
    finally:
        sys.stdout = saved
    return {{"stdout": "".join(out.parts), "dropped": out.dropped, "error": error, "line": line}}
'''


@dataclass(frozen=True)
class ToolRun:
    """One ``run_python`` call: the code, what it printed, and how it ended.

    Attributes:
        code: The code the model sent.
        kind: ``ok``, ``error`` (the code raised), or the sandbox's kind for a run it stopped
            (``forbidden``, ``cpu``, ``memory``, ``timeout``); ``refused`` for a call the
            tool did not run (bad arguments, over budget).
        stdout: What the code printed (truncated).
        error: The error text, with its line when the code raised.
    """

    code: str
    kind: str
    stdout: str = ""
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the verdict's record of the call)."""
        return {"code": self.code, "kind": self.kind, "stdout": self.stdout, "error": self.error}

    def message(self) -> str:
        """The tool result the model reads."""
        body: dict[str, Any] = {"ok": self.kind == "ok", "stdout": self.stdout}
        if self.error is not None:
            body["error"] = self.error
        return json.dumps(body, ensure_ascii=False)


def _samples_json(samples: Sequence[Instance]) -> list[dict[str, Any]]:
    return [
        {
            "difficulty": s.difficulty,
            "inputs": dict(s.inputs),
            "question": s.question,
            "answer": s.answer,
        }
        for s in samples
    ]


def harness_source(family: Family | None, samples: Sequence[Instance]) -> str:
    """The code the sandbox child loads: the family (file families only), the samples, and
    ``run_tool(code)``."""
    source = family.source if isinstance(family, FileFamily) else None
    return _HARNESS.format(
        source=repr(source), samples=repr(_samples_json(samples)), limit=STDOUT_LIMIT
    )


class CodeTool:
    """``run_python`` for one reviewer: one sandbox worker, started on its first run.

    Args:
        family: The family the code may import as ``family``; None for a blind solver (its
            ``family`` module is then empty).
        samples: The instances the reviewer was shown (``family.samples``).
        limits: The sandbox limits of each run.
    """

    def __init__(
        self,
        family: Family | None,
        samples: Sequence[Instance] = (),
        limits: SandboxLimits = TOOL_LIMITS,
    ) -> None:
        self.schema = run_python_tool(with_family=family is not None)
        name = "blind" if family is None else family.id
        self._worker = SandboxWorker(
            harness_source(family, samples), limits, filename=f"<review tool {name}>"
        )

    def run(self, code: str) -> ToolRun:
        """Run ``code`` in the sandbox and return what happened."""
        if len(code) > CODE_LIMIT:
            return ToolRun(code[:200], "refused", error=f"code longer than {CODE_LIMIT} chars")
        result = self._worker.call("run_tool", [code])
        if not result.ok:
            return ToolRun(code, result.kind, error=f"{result.kind}: {result.error}")
        value = result.value if isinstance(result.value, dict) else {}
        stdout = str(value.get("stdout", ""))
        dropped = value.get("dropped")
        if isinstance(dropped, int) and dropped > 0:
            stdout += f"\n[... {dropped} more characters not shown]"
        error = value.get("error")
        if error is None:
            return ToolRun(code, "ok", stdout)
        line = value.get("line")
        where = f" (line {line})" if isinstance(line, int) else ""
        kind = "forbidden" if str(error).startswith(_REFUSALS) else "error"
        return ToolRun(code, kind, stdout, f"{error}{where}"[:2000])

    def close(self) -> None:
        """Stop the sandbox child."""
        self._worker.close()


@dataclass
class ToolConversation:
    """What :func:`ask_with_tools` needs besides the messages and the parser.

    Attributes:
        provider: The model.
        tool: The tool the model may call.
        max_calls: Tool runs allowed; past them the model is asked for its final answer.
        module: The ledger module the calls are charged to.
        ledger: The ledger (None: not charged).
        config: Sampling settings.
        max_repairs: Rounds an unusable final answer is sent back.
        sample_index: The sample number of this conversation (keeps repeated samples apart).
        runs: Every tool run made, in order (filled by :func:`ask_with_tools`).
    """

    provider: ModelProvider
    tool: CodeTool
    max_calls: int
    module: str
    ledger: CostLedger | None = None
    config: GenerateConfig | None = None
    max_repairs: int = 2
    sample_index: int = 0
    runs: list[ToolRun] = field(default_factory=list)


def _call_code(call: dict[str, Any]) -> str | None:
    """The ``code`` argument of a wire-format tool call, or None when it has none."""
    function = call.get("function") or {}
    if function.get("name") != TOOL_NAME:
        return None
    try:
        args = json.loads(function.get("arguments") or "{}")
    except (json.JSONDecodeError, RecursionError):
        return None
    code = args.get("code") if isinstance(args, dict) else None
    return code if isinstance(code, str) else None


def _answer_calls(talk: ToolConversation, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool messages answering ``calls`` (running each while the budget lasts)."""
    out = []
    for call in calls:
        code = _call_code(call)
        if code is None:
            run = ToolRun("", "refused", error=f"call {TOOL_NAME} with one string argument 'code'")
        elif len(talk.runs) >= talk.max_calls:
            run = ToolRun(code, "refused", error="no tool calls left: give your final answer")
        else:
            run = talk.tool.run(code)
            talk.runs.append(run)
        out.append(
            {"role": "tool", "tool_call_id": str(call.get("id", "")), "content": run.message()}
        )
    return out


async def ask_with_tools(
    talk: ToolConversation,
    messages: list[dict[str, Any]],
    parse: Callable[[str], T],
) -> T:
    """Let the model call ``run_python`` (at most ``talk.max_calls`` runs), then return
    ``parse(final answer)``; an unusable answer is sent back for repair like
    :func:`~veritask.model.ask`.

    Raises:
        StructuredOutputError: The final answer is still unusable after the repair rounds, or
            the model kept calling tools past its budget.
    """
    conversation = list(messages)
    reasons: list[str] = []
    text = ""
    turns = talk.max_calls + talk.max_repairs + 2
    for _ in range(turns):
        tools = [talk.tool.schema] if len(talk.runs) < talk.max_calls else None
        output = await talk.provider.generate(conversation, tools, talk.config, talk.sample_index)
        if talk.ledger is not None:
            talk.ledger.charge(talk.module, output.usage)
        calls = output.tool_calls
        if calls:
            answers = _answer_calls(talk, calls)  # a new list each turn: providers may keep it
            conversation = [*conversation, {"role": "assistant", **output.message}, *answers]
            continue
        text = output.text
        try:
            value = parse(text)
        except ValueError as exc:
            reasons.append(str(exc))
            conversation = [
                *conversation,
                {"role": "assistant", "content": text},
                {"role": "user", "content": _repair(str(exc))},
            ]
            if len(reasons) > talk.max_repairs:
                break
            continue
        if talk.ledger is not None:
            talk.ledger.outcome(talk.module, True)
        return value
    if talk.ledger is not None:
        talk.ledger.outcome(talk.module, False)
    raise StructuredOutputError(talk.module, reasons or ["no final answer"], text)


def _repair(reason: str) -> str:
    """The message sending an unusable final answer back (the wording of ``model.ask``)."""
    return (
        "Your previous answer could not be used.\n"
        f"Reason: {reason}\n"
        "Reply again with the complete corrected answer in the same format, and nothing else."
    )
