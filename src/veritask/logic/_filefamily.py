"""Family files: task families we did not write, as one Python source file run only in the sandbox.

A family file holds:

- ``FAMILY = {...}``: a literal dict with ``id``, ``version``, ``category``, ``title``,
  ``template`` and ``answer_format`` (optionally ``tags``, a list of strings);
- ``generate(difficulty, rng) -> (inputs, slot_texts)``, every random choice from ``rng``;
- two or more validators ``solution(inputs)`` / ``solution_<name>(inputs)``, in file order;
- optionally ``check(inputs, answer_text) -> bool`` and ``size(inputs) -> int``;
- optionally ``solve_text(question) -> answer``: the text-only solver, which reads only the
  rendered question (never the inputs) and returns None when the text does not determine the
  answer (see ``veritask.logic._textonly``).

Inputs and answers must be JSON data (dicts with string keys, lists, strings, numbers, booleans,
None); tuples arrive as lists. The parent never imports the file: metadata comes from ``ast``
(``literal_eval`` of the ``FAMILY`` dict) and every function runs in a persistent
:class:`~veritask.logic._sandbox.SandboxWorker`. The RNG crosses the boundary as its state, and
its state after ``generate`` comes back, so an instance is the one the same code would give
in-process.
"""

from __future__ import annotations

import ast
import io
import random
import re
import time
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from veritask.logic._family import CATEGORIES, Category, Family, Inputs, Validator
from veritask.logic._sandbox import SandboxCall, SandboxLimits, SandboxResult, SandboxWorker
from veritask.logic._textonly import Undetermined

REQUIRED_KEYS = ("id", "version", "category", "title", "template", "answer_format")
"""The keys ``FAMILY`` must have."""
OPTIONAL_KEYS = ("tags",)
"""The keys ``FAMILY`` may have."""
ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
"""What a family id looks like (it is also the file name)."""
_SLOT = re.compile(r"\[Input Slot (\d+)\]")
MAX_SOURCE_CHARS = 256 * 1024
"""The longest family file read (built-in families are a few KB; a model writes less)."""
MAX_NESTING = 400
"""The deepest nesting the pre-scan lets through to ``ast.parse`` (see :func:`nesting_depth`)."""
_ARITY = {"generate": 2, "check": 2, "size": 1, "solve_text": 1}


class FamilyFileError(ValueError):
    """A family file that cannot be used; the message says where and why."""


class FamilyCodeError(ValueError):
    """Family code failed in the sandbox (refused operation, exception, limit, bad result).

    Attributes:
        kind: The sandbox's failure kind (``forbidden``, ``error``, ``cpu``...), or ``result``
            when the function returned something of the wrong shape.
        function: The family function that failed.
    """

    def __init__(self, message: str, *, kind: str, function: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.function = function


@dataclass(frozen=True)
class FamilySpec:
    """What a family file declares, read without running it.

    Attributes:
        meta: The ``FAMILY`` dict (with ``tags`` defaulted to an empty list).
        validators: The validator function names, in file order.
        has_check: Whether the file defines ``check``.
        has_size: Whether the file defines ``size``.
        source: The file's text.
        path: Where it was read from (None for source given directly).
        has_text_solver: Whether the file defines ``solve_text``.
    """

    meta: dict[str, Any]
    validators: tuple[str, ...]
    has_check: bool
    has_size: bool
    source: str
    path: str | None = None
    has_text_solver: bool = False

    @property
    def id(self) -> str:
        """The family id."""
        return str(self.meta["id"])


def is_validator_name(name: str) -> bool:
    """True for ``solution`` and ``solution_<name>``."""
    return name == "solution" or name.startswith("solution_")


def parse_family_source(
    source: str, path: str | None = None, *, min_validators: int = 2
) -> FamilySpec:
    """Read a family file's metadata and function names with ``ast`` (nothing is executed).

    Raises:
        FamilyFileError: A syntax error, a missing or non-literal ``FAMILY``, a missing or
            unknown key, a bad id, category or template, a missing ``generate``, fewer than
            ``min_validators`` validators, or a function with the wrong number of parameters.
    """
    where = path or "family source"
    check_source_bounds(source, where)
    try:
        tree = ast.parse(source, filename=where)
        meta = _check_meta(_family_dict(tree, where), where)
        functions = _functions(tree, where)
    except SyntaxError as exc:
        raise FamilyFileError(f"{where}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except FamilyFileError:
        raise
    except (RecursionError, MemoryError, ValueError) as exc:  # past the pre-scan all the same
        raise FamilyFileError(f"{where}: cannot be parsed ({type(exc).__name__})") from None
    validators = tuple(name for name in functions if is_validator_name(name))
    if "generate" not in functions:
        raise FamilyFileError(f"{where}: no module-level function generate(difficulty, rng)")
    if len(validators) < min_validators:
        raise FamilyFileError(
            f"{where}: needs at least {min_validators} validator function(s) named solution or "
            f"solution_<name>, found {len(validators)}"
        )
    return FamilySpec(
        meta=meta,
        validators=validators,
        has_check="check" in functions,
        has_size="size" in functions,
        source=source,
        path=path,
        has_text_solver="solve_text" in functions,
    )


def check_source_bounds(source: str, where: str) -> None:
    """Refuse source too long or too deeply nested to hand to ``ast.parse``.

    A 200,000-deep expression (``1+1+...``, ``-----x``, ``f()()()...``) makes the parser, the
    AST conversion or a recursive walk over the tree fail with ``RecursionError`` or
    ``MemoryError``, or overflow the C stack on interpreters without recursion guards. The
    length is checked first, then :func:`nesting_depth` with the tokenizer, which builds no tree.

    Raises:
        FamilyFileError: One line naming ``where`` and the bound it breaks.
    """
    if len(source) > MAX_SOURCE_CHARS:
        raise FamilyFileError(
            f"{where}: {len(source)} characters, more than the {MAX_SOURCE_CHARS} a family "
            "file may have"
        )
    try:
        depth, line = nesting_depth(source, stop_above=MAX_NESTING)
    except (tokenize.TokenError, SyntaxError) as exc:  # IndentationError is a SyntaxError
        raise FamilyFileError(f"{where}: syntax error: {exc.args[0]}") from None
    if depth > MAX_NESTING:
        raise FamilyFileError(
            f"{where}: nested more than {MAX_NESTING} deep at line {line}; flatten the "
            "expression or statement"
        )


def nesting_depth(source: str, stop_above: int | None = None) -> tuple[int, int]:
    """An upper bound on how deep the syntax tree of ``source`` nests, and the line of the
    deepest point, from its tokens alone (no tree is built).

    Within a logical line every token counts one level, except that a comma or semicolon
    ends the run at its bracket level (the items of a list or call are siblings, not
    nested); an open bracket starts a new run on top of the current ones. Indentation counts
    one level per step, and each ``elif`` one more (an ``elif`` chain is a nested ``If``).
    With ``stop_above``, the scan ends at the first point deeper than it.

    Raises:
        tokenize.TokenError: An unterminated bracket or string.
        SyntaxError: Inconsistent indentation.
    """
    scan = _DepthScan()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        scan.step(tok.type, tok.string, tok.start[0])
        if stop_above is not None and scan.depth > stop_above:
            break
    return scan.depth, scan.line


_OPEN, _CLOSE, _SEPARATORS = frozenset("([{"), frozenset(")]}"), frozenset({",", ";"})
_SKIPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER})


@dataclass
class _DepthScan:
    """The state of :func:`nesting_depth`: runs per open bracket, ``elif`` chains per
    indentation level, and the deepest point so far."""

    runs: list[int] = field(default_factory=lambda: [0])
    chains: list[int] = field(default_factory=lambda: [0])
    total: int = 0
    """``sum(runs) + sum(chains) + len(chains) - 1``, kept as tokens come."""
    first: bool = True
    depth: int = 0
    line: int = 0

    def step(self, kind: int, text: str, line: int) -> None:
        """Account for one token."""
        if kind == tokenize.INDENT:
            self.chains.append(0)
            self.total += 1
        elif kind == tokenize.DEDENT:
            self.total -= 1 + self.chains.pop()
        elif kind == tokenize.NEWLINE:
            self.total -= sum(self.runs)
            self.runs, self.first = [0], True
        elif kind not in _SKIPPED:
            if self.first:
                self._statement(text)
            self._token(kind, text)
            if self.total > self.depth:
                self.depth, self.line = self.total, line

    def _statement(self, keyword: str) -> None:
        """A logical line starts: ``elif`` lengthens its level's chain, ``else`` keeps it,
        anything else ends it."""
        self.first = False
        if keyword == "elif":
            self.chains[-1] += 1
            self.total += 1
        elif keyword != "else":
            self.total -= self.chains[-1]
            self.chains[-1] = 0

    def _token(self, kind: int, text: str) -> None:
        if kind == tokenize.OP and text in _CLOSE:
            if len(self.runs) > 1:
                self.total -= self.runs.pop()
        elif kind == tokenize.OP and text in _SEPARATORS:
            self.total -= self.runs[-1]
            self.runs[-1] = 0
        else:
            self.runs[-1] += 1
            self.total += 1
            if kind == tokenize.OP and text in _OPEN:
                self.runs.append(0)


def read_family_file(path: str | Path) -> FamilySpec:
    """Read and parse a family file (see :func:`parse_family_source`)."""
    file = Path(path)
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FamilyFileError(f"{file}: cannot be read: {exc}") from None
    return parse_family_source(source, str(file))


def _family_dict(tree: ast.Module, where: str) -> Any:
    """The literal value assigned to ``FAMILY`` at module level."""
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is not None and any(isinstance(t, ast.Name) and t.id == "FAMILY" for t in targets):
            try:
                return ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise FamilyFileError(
                    f"{where}: FAMILY must be a literal dict (line {node.lineno})"
                ) from None
    raise FamilyFileError(f"{where}: no module-level FAMILY = {{...}} dict")


def _check_meta(meta: Any, where: str) -> dict[str, Any]:
    """Validate the FAMILY dict's keys and values."""
    if not isinstance(meta, dict):
        raise FamilyFileError(f"{where}: FAMILY must be a dict, got {type(meta).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in meta]
    unknown = sorted(str(k) for k in meta if k not in REQUIRED_KEYS + OPTIONAL_KEYS)
    if missing or unknown:
        raise FamilyFileError(f"{where}: FAMILY is missing {missing} / has unknown keys {unknown}")
    for key in REQUIRED_KEYS:
        if not isinstance(meta[key], str) or not meta[key].strip():
            raise FamilyFileError(f"{where}: FAMILY[{key!r}] must be a non-empty string")
    tags = meta.get("tags", [])
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise FamilyFileError(f"{where}: FAMILY['tags'] must be a list of strings")
    if not ID_PATTERN.match(meta["id"]):
        raise FamilyFileError(
            f"{where}: id {meta['id']!r} must be snake_case: a lowercase letter, then "
            "lowercase letters, digits or underscores (2-64 characters)"
        )
    if meta["category"] not in CATEGORIES:
        raise FamilyFileError(
            f"{where}: category {meta['category']!r} is not one of {', '.join(CATEGORIES)}"
        )
    numbers = sorted({int(n) for n in _SLOT.findall(meta["template"])})
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        raise FamilyFileError(
            f"{where}: the template's slots must be [Input Slot 1] .. [Input Slot k] with no gap; "
            f"found {numbers}"
        )
    return {**meta, "tags": list(tags)}


def _functions(tree: ast.Module, where: str) -> list[str]:
    """Module-level function names in order, checking the arity of the known ones."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.AsyncFunctionDef) and (
            node.name in _ARITY or is_validator_name(node.name)
        ):
            raise FamilyFileError(f"{where}: {node.name} must not be async")
        if not isinstance(node, ast.FunctionDef):
            continue
        expected = 1 if is_validator_name(node.name) else _ARITY.get(node.name)
        args = node.args
        positional = len(args.posonlyargs) + len(args.args)
        required = positional - len(args.defaults)
        if expected is not None and not (required <= expected <= positional or args.vararg):
            raise FamilyFileError(
                f"{where}: {node.name} (line {node.lineno}) must take {expected} argument(s)"
            )
        if node.name not in names:
            names.append(node.name)
    return names


@dataclass(frozen=True, eq=False)
class FileFamily(Family):
    """A family loaded from a family file; its functions run in a sandboxed worker.

    Attributes:
        source: The file's text.
        path: Where it was loaded from (None for source given directly).
        worker: The persistent sandboxed worker every call goes through.
    """

    source: str = ""
    path: str | None = None
    worker: SandboxWorker | None = field(default=None, repr=False)
    in_process: ClassVar[bool] = False

    def cpu_seconds(self) -> float:
        """This process's CPU time plus the sandboxed worker's (its children's, as reported)."""
        used = self.worker.cpu_used() if self.worker is not None else 0.0
        return time.process_time() + used

    def close(self) -> None:
        """Stop the worker (a later call starts a fresh one)."""
        if self.worker is not None:
            self.worker.close()

    def load_result(self) -> SandboxResult:
        """Start the worker if needed and say whether the code loads in the sandbox."""
        return _worker(self).load()

    def generate_many(
        self, requests: Sequence[tuple[int, random.Random]]
    ) -> list[tuple[Inputs, list[str]]]:
        """``generate(difficulty, rng)`` for each request in one round trip (RNGs advance).

        Raises:
            FamilyCodeError: A call failed or returned the wrong shape.
        """
        calls = [SandboxCall("generate", [d, None], 1, rng.getstate()) for d, rng in requests]
        out: list[tuple[Inputs, list[str]]] = []
        for (_, rng), result in zip(requests, _worker(self).call_many(calls), strict=True):
            out.append(_generated(self.id, _value(self.id, "generate", result)))
            rng.setstate(result.rng_state)
        return out


def _worker(family: FileFamily) -> SandboxWorker:
    if family.worker is None:
        raise FamilyCodeError(f"{family.id}: no sandbox worker", kind="error", function="")
    return family.worker


def sandbox_validators(family: Family) -> tuple[SandboxWorker, list[str]] | None:
    """The worker and function names behind a family's validators when all of them are
    sandbox proxies of one worker (so they can be batched), else None."""
    names = [getattr(v, "sandbox_function", None) for v in family.validators]
    workers = {id(getattr(v, "sandbox_worker", None)) for v in family.validators}
    worker = getattr(family.validators[0], "sandbox_worker", None) if family.validators else None
    if worker is None or None in names or len(workers) != 1:
        return None
    return worker, [str(n) for n in names]


def family_from_source(
    source: str,
    path: str | None = None,
    *,
    limits: SandboxLimits | None = None,
    min_validators: int = 2,
    unsafe_no_sandbox: bool = False,
) -> FileFamily:
    """A :class:`FileFamily` from family-file text; its worker starts on the first call.

    Its functions run only in the OS sandbox: where the kernel lacks it, calls raise
    :class:`~veritask.logic._sandbox.SandboxUnavailable` unless ``unsafe_no_sandbox`` (or
    ``limits.unsafe_no_sandbox``) is True.

    Raises:
        FamilyFileError: The source is not a valid family file (with fewer than
            ``min_validators`` validators, among other reasons).
    """
    spec = parse_family_source(source, path, min_validators=min_validators)
    limits = limits or SandboxLimits()
    if unsafe_no_sandbox:
        limits = replace(limits, unsafe_no_sandbox=True)
    worker = SandboxWorker(source, limits, filename=path or f"<family {spec.id}>")
    return _build(spec, worker)


def load_family_file(
    path: str | Path, *, limits: SandboxLimits | None = None, unsafe_no_sandbox: bool = False
) -> FileFamily:
    """A :class:`FileFamily` from a file (see :func:`family_from_source`)."""
    spec = read_family_file(path)
    return family_from_source(
        spec.source, spec.path, limits=limits, unsafe_no_sandbox=unsafe_no_sandbox
    )


def _build(spec: FamilySpec, worker: SandboxWorker) -> FileFamily:
    meta = spec.meta
    family_id = spec.id
    category: Category = meta["category"]
    return FileFamily(
        id=family_id,
        version=meta["version"],
        category=category,
        title=meta["title"],
        template=meta["template"],
        generate=_generate_proxy(worker, family_id),
        validators=tuple(_validator_proxy(worker, family_id, n) for n in spec.validators),
        answer_format=meta["answer_format"],
        checker=_checker_proxy(worker, family_id) if spec.has_check else None,
        size=_size_proxy(worker, family_id) if spec.has_size else None,
        tags=tuple(meta["tags"]),
        text_solver=_text_solver_proxy(worker, family_id) if spec.has_text_solver else None,
        source=spec.source,
        path=spec.path,
        worker=worker,
    )


def _value(family_id: str, function: str, result: SandboxResult) -> Any:
    """The value of a successful call, or FamilyCodeError."""
    if not result.ok:
        raise FamilyCodeError(
            f"{family_id}: {function} failed in the sandbox ({result.kind}): {result.error}",
            kind=result.kind,
            function=function,
        )
    return result.value


def _shape_error(family_id: str, function: str, what: str) -> FamilyCodeError:
    return FamilyCodeError(f"{family_id}: {function} {what}", kind="result", function=function)


def _generated(family_id: str, value: Any) -> tuple[Inputs, list[str]]:
    """Check generate's result: a pair of a dict and a list of strings."""
    if not (isinstance(value, list) and len(value) == 2):
        raise _shape_error(family_id, "generate", "must return a pair (inputs, slot_texts)")
    inputs, slots = value
    if not isinstance(inputs, dict):
        raise _shape_error(family_id, "generate", "must return inputs as a dict")
    if not isinstance(slots, list) or not all(isinstance(s, str) for s in slots):
        raise _shape_error(family_id, "generate", "must return slot_texts as a list of strings")
    return inputs, slots


def _generate_proxy(
    worker: SandboxWorker, family_id: str
) -> Callable[[int, random.Random], tuple[Inputs, list[str]]]:
    def generate(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
        call = SandboxCall("generate", [difficulty, None], 1, rng.getstate())
        result = worker.call_many([call])[0]
        out = _generated(family_id, _value(family_id, "generate", result))
        rng.setstate(result.rng_state)
        return out

    return generate


def _validator_proxy(worker: SandboxWorker, family_id: str, name: str) -> Validator:
    def validator(inputs: Inputs) -> Any:
        return _value(family_id, name, worker.call(name, [inputs]))

    validator.__name__ = validator.__qualname__ = name
    validator.sandbox_function = name  # type: ignore[attr-defined]
    validator.sandbox_worker = worker  # type: ignore[attr-defined]
    return validator


def _checker_proxy(worker: SandboxWorker, family_id: str) -> Callable[[Inputs, str], bool]:
    def check(inputs: Inputs, answer_text: str) -> bool:
        value = _value(family_id, "check", worker.call("check", [inputs, answer_text]))
        if not isinstance(value, bool):
            raise _shape_error(family_id, "check", "must return True or False")
        return value

    return check


def _size_proxy(worker: SandboxWorker, family_id: str) -> Callable[[Inputs], int]:
    def size(inputs: Inputs) -> int:
        value = _value(family_id, "size", worker.call("size", [inputs]))
        if isinstance(value, bool) or not isinstance(value, int):
            raise _shape_error(family_id, "size", "must return an int")
        return value

    return size


def _text_solver_proxy(worker: SandboxWorker, family_id: str) -> Callable[[str], Any]:
    def solve_text(question: str) -> Any:
        value = _value(family_id, "solve_text", worker.call("solve_text", [question]))
        if value is None:
            raise Undetermined(f"{family_id}: solve_text found the question undetermined")
        return value

    return solve_text
