"""Run the README's console transcripts and compare what they print (docs/design/0042).

A ```console block is a transcript: each line starting with ``$ `` is a command (a trailing
``\\`` continues it on the next line) and the lines up to the next command are its expected
output. Two elisions are declared, and nothing else is forgiven:

- a line that is exactly ``...`` matches any run of lines, including none;
- ``<...>`` inside a line matches any text within that line (timings, paths).

Trailing spaces are ignored. A block preceded by ``<!-- readme-test: skip REASON -->`` is not
run (it needs a model endpoint, a cluster or a server); the reason is required.

Commands run in-process, in README order, in one working directory, so a file one command
writes is there for the next. ``veritask`` is the package's click group; ``cat FILE``, a
leading ``NAME=value`` environment assignment and the pipes ``| head -N`` and ``| grep TEXT``
are supported. Shell programs are not run: the subset is implemented here so the run needs no
shell and stays byte-identical across platforms.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli

SKIP = re.compile(r"<!-- readme-test: skip (?P<reason>\S.*?) -->")
ELLIPSIS_LINE = "..."
ELLIPSIS_INLINE = "<...>"


@dataclass
class Command:
    """One ``$ `` command of a transcript and the output the README shows for it."""

    line: int
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    """One ```console block: where it starts, why it is skipped (if it is), its commands."""

    line: int
    skip: str | None
    commands: list[Command]


def parse_blocks(text: str) -> list[Block]:
    """Return the console blocks of a Markdown text in order.

    Args:
        text: The Markdown source.

    Returns:
        One block per ```console fence, with its commands and their expected output lines.
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        found = SKIP.fullmatch(lines[i - 1].strip()) if i else None
        block = Block(i + 1, found["reason"] if found else None, [])
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i = _read_line(lines, i, block)
        blocks.append(block)
        i += 1
    return blocks


def _read_line(lines: list[str], i: int, block: Block) -> int:
    line = lines[i]
    if not line.startswith("$ "):
        if not block.commands:
            raise ValueError(f"README.md:{i + 1}: output before the first command")
        block.commands[-1].expected.append(line)
        return i + 1
    start, text = i, line[2:]
    while text.endswith("\\"):
        i += 1
        text = text[:-1] + " " + lines[i].strip()
    block.commands.append(Command(start + 1, text))
    return i + 1


def _line_matches(pattern: str, actual: str) -> bool:
    pattern, actual = pattern.rstrip(), actual.rstrip()
    if ELLIPSIS_INLINE not in pattern:
        return pattern == actual
    parts = (re.escape(p) for p in pattern.split(ELLIPSIS_INLINE))
    return re.fullmatch(".*".join(parts), actual) is not None


def first_mismatch(expected: list[str], actual: list[str]) -> int | None:
    """Return the index of the expected line where matching fails, or None when it matches.

    Args:
        expected: The README's lines, with ``...`` and ``<...>`` elisions.
        actual: The lines the command printed.

    Returns:
        None when ``actual`` matches; otherwise the furthest expected line that could not be
        matched (``len(expected)`` when the output has lines left over).
    """
    best = 0
    memo: set[tuple[int, int]] = set()

    def walk(e: int, a: int) -> bool:
        nonlocal best
        if (e, a) in memo:
            return False
        memo.add((e, a))
        best = max(best, e)
        if e == len(expected):
            return a == len(actual)
        if expected[e].strip() == ELLIPSIS_LINE:
            return any(walk(e + 1, k) for k in range(a, len(actual) + 1))
        return a < len(actual) and _line_matches(expected[e], actual[a]) and walk(e + 1, a + 1)

    return None if walk(0, 0) else best


Fixture = Callable[[Path], None]


class Shell:
    """The small shell the transcripts use, running ``veritask`` in-process.

    Args:
        fixtures: Files a command may name before any command writes them, keyed by the
            name as written in the README; each writes its file under the given directory.
    """

    def __init__(self, fixtures: Mapping[str, Fixture]) -> None:
        self._fixtures = fixtures
        self._runner = CliRunner()

    def run(self, command: str, cwd: Path) -> list[str]:
        """Run one command line in ``cwd`` and return its output lines (stdout and stderr).

        Raises:
            ValueError: The command uses a program or pipe the transcripts do not support.
        """
        lexer = shlex.shlex(command, posix=True, punctuation_chars="|")
        lexer.whitespace_split = True
        tokens = list(lexer)
        for name, make in self._fixtures.items():
            if name in tokens and not (cwd / name).exists():
                make(cwd)
        stages = _split(tokens, "|")
        out = self._program(stages[0], cwd)
        for stage in stages[1:]:
            out = _filter(stage, out)
        return out

    def _program(self, argv: list[str], cwd: Path) -> list[str]:
        env: dict[str, str | None] = {}
        while argv and re.fullmatch(r"[A-Z_]+=\S*", argv[0]):
            name, value = argv.pop(0).split("=", 1)
            env[name] = str(cwd / value)
        if argv[:1] == ["cat"] and len(argv) == 2:
            return (cwd / argv[1]).read_text().splitlines()
        if argv[:1] != ["veritask"]:
            raise ValueError(f"unsupported program in {argv!r}")
        result = self._runner.invoke(cli, argv[1:], env=env)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise RuntimeError(f"{argv!r} raised:\n{result.output}") from result.exception
        return result.output.splitlines()


def _split(tokens: list[str], sep: str) -> list[list[str]]:
    stages: list[list[str]] = [[]]
    for token in tokens:
        if token == sep:
            stages.append([])
        else:
            stages[-1].append(token)
    return stages


def _filter(stage: list[str], lines: list[str]) -> list[str]:
    if len(stage) == 2 and stage[0] == "head" and re.fullmatch(r"-\d+", stage[1]):
        return lines[: int(stage[1][1:])]
    if len(stage) == 2 and stage[0] == "grep":
        return [line for line in lines if stage[1] in line]
    raise ValueError(f"unsupported pipe stage {stage!r}")
