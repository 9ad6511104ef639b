"""Bounded readers for files we did not write: JSON, JSON lines, YAML and compressed bytes.

Every reader has limits (bytes read, nesting depth, bytes after alias expansion or
decompression) and raises one exception type, :class:`InputError` (a ``ValueError``, which
commands already turn into an ``Error: ...`` line), whose message names the file, the line
where known and the limit hit. Nothing here recurses on the input's nesting: JSON depth is
measured on the bracket sequence before decoding, YAML depth on the parser's events before
composing, and YAML alias expansion on the node graph without expanding it.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What a bounded reader accepts.

    Attributes:
        max_bytes: The most bytes read from a file (or given as bytes).
        max_depth: The deepest nesting of arrays/objects (JSON) or collections (YAML).
        max_expanded: The most bytes a YAML document may stand for once every alias is
            expanded, and the most bytes :func:`decompress` may produce.
    """

    max_bytes: int = 256 * MiB
    max_depth: int = 200
    max_expanded: int = 256 * MiB


DEFAULT_LIMITS = Limits()


class InputError(ValueError):
    """A file (or bytes) we did not write cannot be read within the limits, or is malformed.

    Attributes:
        what: The file or label the input came from.
        line: The 1-based line of the problem, when known.
        reason: What is wrong, without the place.
    """

    def __init__(self, what: str, reason: str, line: int | None = None) -> None:
        self.what = what
        self.line = line
        self.reason = reason
        where = f"{what}:{line}" if line is not None else what
        super().__init__(f"{where}: {reason}")


Source = str | Path | bytes


def _label(source: Source, what: str | None) -> str:
    if what is not None:
        return what
    return "<bytes>" if isinstance(source, bytes) else str(source)


def read_bytes(
    source: Source, *, what: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> bytes:
    """The bytes of a file (or ``source`` itself), refused past ``limits.max_bytes``.

    Raises:
        InputError: The input is larger than the limit.
        OSError: The file cannot be opened or read.
    """
    label = _label(source, what)
    if isinstance(source, bytes):
        data = source
    else:
        with open(source, "rb") as fh:
            data = fh.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise InputError(label, f"is larger than the limit of {limits.max_bytes} bytes")
    return data


def decode_text(data: bytes, what: str, kind: str = "text") -> str:
    """``data`` as UTF-8 text; binary or non-UTF-8 bytes are refused with the line.

    Raises:
        InputError: ``data`` holds a NUL byte (binary) or is not valid UTF-8.
    """
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(what, f"is binary (a NUL byte), not {kind}", line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            what, f"is not UTF-8 text (byte {exc.start}: {exc.reason})", line
        ) from None


def read_text(source: Source, *, what: str | None = None, limits: Limits = DEFAULT_LIMITS) -> str:
    """A file (or bytes) as UTF-8 text, within ``limits.max_bytes``.

    Raises:
        InputError: Too large, binary, or not UTF-8.
        OSError: The file cannot be opened or read.
    """
    label = _label(source, what)
    return decode_text(read_bytes(source, what=label, limits=limits), label)


# ---------------------------------------------------------------- JSON

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth_exceeds(text: str, max_depth: int) -> bool:
    """True when ``text`` nests arrays/objects deeper than ``max_depth`` (strings ignored).

    Linear and without recursion: strings are cut out (one regex), the brackets kept
    (``bytes.translate``) and their running sum taken (a malformed text may be miscounted; the
    decoder then reports it).
    """
    if text.count("[") + text.count("{") <= max_depth:
        return False
    data = _JSON_STRING.sub(b"", text.encode("utf-8", "surrogatepass"))
    brackets = data.translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0) > max_depth


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(
            f"the number {literal[:20]}{'...' if len(literal) > 20 else ''} is out of range"
        )
    return value


def _json_failure(text: str, exc: ValueError, what: str, line: int | None) -> InputError:
    if isinstance(exc, json.JSONDecodeError):
        at = (line or 1) + exc.lineno - 1
        if exc.pos >= len(text.rstrip()):
            return InputError(what, "is not JSON: it ends early (a truncated file?)", at)
        return InputError(what, f"is not JSON: {exc.msg} (column {exc.colno})", at)
    reason = str(exc)
    if "digits" in reason:
        reason = "a number has more digits than Python reads (4300)"
    return InputError(what, f"is not JSON: {reason}", line)


def parse_json(
    text: str | bytes,
    *,
    what: str = "<json>",
    limits: Limits = DEFAULT_LIMITS,
    line: int | None = None,
) -> Any:
    """Decode one JSON document within ``limits``; ``line`` is where it starts in its file.

    Infinite numbers (``1e999999``) are refused; ``NaN`` and ``Infinity`` literals, which
    Python writes, are read.

    Raises:
        InputError: Too large, too deep, binary, not UTF-8 or not JSON.
    """
    if isinstance(text, bytes):
        text = decode_text(read_bytes(text, what=what, limits=limits), what, "JSON")
    elif len(text) > limits.max_bytes:
        raise InputError(what, f"is larger than the limit of {limits.max_bytes} bytes", line)
    if json_depth_exceeds(text, limits.max_depth):
        raise InputError(what, f"JSON is nested more than {limits.max_depth} levels deep", line)
    try:
        return json.loads(text, parse_float=_finite)
    except ValueError as exc:
        raise _json_failure(text, exc, what, line) from None
    except RecursionError:  # the pre-scan was fooled by malformed text
        raise InputError(what, "JSON is nested too deeply to read", line) from None


def read_json(source: Source, *, what: str | None = None, limits: Limits = DEFAULT_LIMITS) -> Any:
    """A JSON file (or bytes) decoded within ``limits``.

    Raises:
        InputError: Too large, too deep, binary, not UTF-8 or not JSON.
        OSError: The file cannot be opened or read.
    """
    label = _label(source, what)
    text = decode_text(read_bytes(source, what=label, limits=limits), label, "JSON")
    return parse_json(text, what=label, limits=limits)


def iter_jsonl(
    text: str, *, what: str = "<jsonl>", limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of JSON-lines ``text`` decoded: its 1-based line number and value.

    Raises:
        InputError: A line is too deep or not JSON (naming its line).
    """
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield number, parse_json(line, what=what, limits=limits, line=number)


def read_jsonl(
    source: Source, *, what: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> list[Any]:
    """The values of a JSON-lines file (or bytes), blank lines skipped.

    Raises:
        InputError: Too large, binary, not UTF-8, or a line too deep or not JSON.
        OSError: The file cannot be opened or read.
    """
    label = _label(source, what)
    return [
        value
        for _, value in iter_jsonl(
            read_text(source, what=label, limits=limits), what=label, limits=limits
        )
    ]


# ---------------------------------------------------------------- compressed bytes

_WBITS = {"zlib": zlib.MAX_WBITS, "gzip": 16 + zlib.MAX_WBITS}
_STREAM_CHUNK = 1 << 16


def decompress(
    data: bytes,
    *,
    what: str = "<compressed>",
    fmt: Literal["zlib", "gzip"] = "zlib",
    max_size: int | None = None,
) -> bytes:
    """Inflate zlib or gzip ``data``, refusing output past ``max_size`` bytes.

    The output is produced in bounded steps, so a bomb is refused once it passes the limit,
    never allocated whole. Concatenated gzip members are all read.

    Raises:
        InputError: The data is corrupt, truncated, or inflates past the limit.
    """
    cap = DEFAULT_LIMITS.max_expanded if max_size is None else max_size
    out = bytearray()
    rest = data
    try:
        while True:
            inflater = zlib.decompressobj(_WBITS[fmt])
            pending = rest
            while not inflater.eof:
                chunk = inflater.decompress(pending, _STREAM_CHUNK)
                pending = inflater.unconsumed_tail
                if not chunk and not pending:
                    break
                out += chunk
                if len(out) > cap:
                    raise InputError(what, f"inflates to more than the limit of {cap} bytes")
            if not inflater.eof:
                raise InputError(what, "compressed data ends early (a truncated file?)")
            rest = inflater.unused_data
            if fmt != "gzip" or not rest:
                break
    except zlib.error as exc:
        raise InputError(what, f"is not valid {fmt} data ({exc})") from None
    return bytes(out)


# ---------------------------------------------------------------- YAML

_Loader = type[yaml.SafeLoader] | type[Any]
FAST_LOADER: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
"""The safe loader in C when PyYAML has libyaml, else in Python (same documents, faster)."""


def _yaml_error(exc: yaml.YAMLError, what: str, limits: Limits = DEFAULT_LIMITS) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    if "maximum nesting depth" in problem:  # libyaml's own guard fired first
        return InputError(what, f"YAML is nested more than {limits.max_depth} levels deep", line)
    return InputError(what, f"is not valid YAML: {problem}", line)


def yaml_depth_check(
    text: str, *, what: str, limits: Limits, loader: _Loader = FAST_LOADER
) -> None:
    """Refuse YAML nested deeper than ``limits.max_depth`` before anything recurses on it.

    Reads the parser's event stream (iterative) and counts open collections.

    Raises:
        InputError: Too deep (with the line), or not YAML.
    """
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > limits.max_depth:
                    line = event.start_mark.line + 1 if event.start_mark else None
                    raise InputError(
                        what, f"YAML is nested more than {limits.max_depth} levels deep", line
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, what, limits) from None


def _line(node: yaml.Node) -> int | None:
    mark = node.start_mark
    return mark.line + 1 if mark is not None else None


def _children(node: yaml.Node, what: str) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise InputError(
                    what,
                    "a mapping key is itself a list or mapping; keys must be plain values",
                    _line(key),
                )
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _own_bytes(node: yaml.Node) -> int:
    if isinstance(node, yaml.ScalarNode):
        return len(str(node.value).encode("utf-8", "surrogatepass")) + 1
    return 2


def check_yaml_node(root: yaml.Node, *, what: str, limits: Limits = DEFAULT_LIMITS) -> int:
    """Check a composed YAML node graph; return the bytes it stands for once expanded.

    Every node is visited once (aliases share nodes, so sizes are memoized): a mapping key
    that is a collection, an alias that contains itself, or an expansion past
    ``limits.max_expanded`` bytes is refused with its line. Iterative, not recursive.

    Raises:
        InputError: The first problem found.
    """
    size: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            total = _own_bytes(node) + sum(size[id(c)] for c in _children(node, what))
            active.discard(key)
            if total > limits.max_expanded:
                raise InputError(
                    what,
                    f"YAML aliases expand to more than the limit of {limits.max_expanded} bytes",
                    _line(node),
                )
            size[key] = total
        elif key not in size:
            if key in active:
                raise InputError(
                    what, "a YAML alias refers to itself (a node that contains it)", _line(node)
                )
            active.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node, what) if id(c) not in size)
    return size[id(root)]


def compose_yaml(
    text: str,
    *,
    what: str = "<yaml>",
    limits: Limits = DEFAULT_LIMITS,
    loader: _Loader = FAST_LOADER,
) -> tuple[Any, Any]:
    """Compose and check one YAML document; return ``(loader, node)`` (node None if empty).

    The caller constructs data with ``loader.construct_document(node)`` and then calls
    ``loader.dispose()``.

    Raises:
        InputError: Too large, too deep, a complex key, an alias bomb or not YAML.
    """
    if len(text) > limits.max_bytes:
        raise InputError(what, f"is larger than the limit of {limits.max_bytes} bytes")
    yaml_depth_check(text, what=what, limits=limits, loader=loader)
    instance = loader(text)
    try:
        node = instance.get_single_node()
    except yaml.YAMLError as exc:
        instance.dispose()
        raise _yaml_error(exc, what) from None
    if node is not None:
        try:
            check_yaml_node(node, what=what, limits=limits)
        except InputError:
            instance.dispose()
            raise
    return instance, node


def parse_yaml(
    text: str,
    *,
    what: str = "<yaml>",
    limits: Limits = DEFAULT_LIMITS,
    loader: _Loader = FAST_LOADER,
) -> Any:
    """One YAML document (safe tags only) decoded within ``limits``; None when empty.

    Raises:
        InputError: Too large, too deep, a complex key, an alias bomb or not YAML.
    """
    instance, node = compose_yaml(text, what=what, limits=limits, loader=loader)
    try:
        return None if node is None else instance.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, what) from None
    finally:
        instance.dispose()


def read_yaml(
    source: Source,
    *,
    what: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    loader: _Loader = FAST_LOADER,
) -> Any:
    """A YAML file (or bytes) decoded with a safe loader within ``limits``.

    Raises:
        InputError: Too large, binary, not UTF-8, too deep, a complex key, an alias bomb or
            not YAML.
        OSError: The file cannot be opened or read.
    """
    label = _label(source, what)
    text = read_text(source, what=label, limits=limits)
    return parse_yaml(text, what=label, limits=limits, loader=loader)
