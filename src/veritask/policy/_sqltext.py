"""A small SQLite tokenizer for the SQL importer: statements, tokens, nesting and literals.

It only has to recognise statements SQLite has already compiled, so it needs no grammar: it
splits a script where SQLite would (``sqlite3.complete_statement``), keeps the comment block
before each statement, and offers helpers over the significant tokens.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from veritask.policy._issues import SpecError, SpecIssue
from veritask.policy._spec import Scalar

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<str>'(?:[^']|'')*')
    |(?P<qident>"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\])
    |(?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<op>\|\||<=|>=|<>|!=|==|<<|>>|.)""",
    re.S | re.X,
)
_DEPTH = {"(": 1, ")": -1}


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=4096)
def reserved_word(name: str) -> bool:
    """True when SQLite does not read ``name``, written bare (unquoted), as a column name: an
    SQL keyword such as ``order`` or ``group`` that spec SQL must write in double quotes.

    SQLite itself decides (a scratch in-memory database), so the answer is that of the SQLite
    the domain runs on, whatever keywords it has."""
    if not _BARE.fullmatch(name):
        return False
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f'SELECT {name} FROM (SELECT 1 AS "{name}") WHERE {name} = 1')
    except sqlite3.Error:
        return True
    finally:
        conn.close()
    return False


@dataclass(frozen=True)
class Tok:
    """One token: kind (ws, comment, str, qident, num, ident, op), text and offset."""

    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        """Offset just past the token."""
        return self.start + len(self.text)

    @property
    def kw(self) -> str:
        """The upper-cased word for a bare identifier (keywords included), else ''."""
        return self.text.upper() if self.kind == "ident" else ""

    @property
    def name(self) -> str:
        """The identifier with any quoting removed."""
        if self.kind != "qident":
            return self.text
        quote, inner = self.text[0], self.text[1:-1]
        return inner if quote == "[" else inner.replace(quote * 2, quote)


@dataclass(frozen=True)
class Statement:
    """One statement of a script with its first line and the comment block before it."""

    sql: str
    line: int
    tokens: list[Tok]
    """Significant tokens (no whitespace or comments), offsets into the whole script."""
    comment: str = ""

    @property
    def summary(self) -> str:
        """The statement on one line, cut to 60 characters, for error messages."""
        flat = " ".join(self.sql.split())
        return flat if len(flat) <= 60 else flat[:57] + "..."

    def text(self, first: Tok, last: Tok) -> str:
        """The original text from ``first`` to ``last`` (both tokens of this statement)."""
        offset = self.tokens[0].start
        return self.sql[first.start - offset : last.end - offset]


def fail(source: str, line: int | None, where: str, message: str) -> NoReturn:
    """Raise a SpecError with one issue."""
    raise SpecError([SpecIssue(source, line, where, message)])


def tokenize(text: str) -> list[Tok]:
    """All tokens of ``text``, whitespace and comments included."""
    return [Tok(m.lastgroup or "op", m.group(), m.start()) for m in _TOKEN.finditer(text)]


def significant(tokens: Sequence[Tok]) -> list[Tok]:
    """The tokens that are neither whitespace nor comments."""
    return [t for t in tokens if t.kind not in ("ws", "comment")]


def render(tokens: Sequence[Tok]) -> str:
    """Rebuild SQL from significant tokens: gaps (whitespace, comments) become one space."""
    parts: list[str] = []
    for i, tok in enumerate(tokens):
        if i and tok.start > tokens[i - 1].end:
            parts.append(" ")
        parts.append(tok.text)
    return "".join(parts)


def unquote(literal: str) -> str:
    """The value of an SQL string literal."""
    return literal[1:-1].replace("''", "'")


def matching_paren(tokens: Sequence[Tok], open_at: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``open_at`` (the last index when unbalanced)."""
    depth = 0
    for i in range(open_at, len(tokens)):
        depth += _DEPTH.get(tokens[i].text, 0)
        if depth == 0:
            return i
    return len(tokens) - 1


def split_top(tokens: Sequence[Tok], sep: str = ",") -> list[list[Tok]]:
    """Split at ``sep`` tokens outside parentheses; empty parts are dropped."""
    parts: list[list[Tok]] = [[]]
    depth = 0
    for tok in tokens:
        depth += _DEPTH.get(tok.text, 0)
        if depth == 0 and tok.text == sep:
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def literal(tokens: Sequence[Tok]) -> Scalar | None:
    """The constant a string or (signed) number literal stands for; None for anything else."""
    text = "".join(t.text for t in tokens)
    if len(tokens) == 1 and tokens[0].kind == "str":
        return unquote(tokens[0].text)
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text):
        return float(text)
    return None


def _lead_comments(tokens: list[Tok], first: Tok) -> list[Tok]:
    """The comment block right before ``first`` (a blank line ends the block)."""
    lead: list[Tok] = []
    for tok in reversed([t for t in tokens if t.start < first.start]):
        if tok.kind == "ws" and tok.text.count("\n") > 1:
            break
        if tok.kind == "comment":
            lead.insert(0, tok)
    return lead


def _make_statement(script: str, tokens: list[Tok]) -> Statement | None:
    sig = significant(tokens)
    if not sig:
        return None
    lead = _lead_comments(tokens, sig[0])
    comment = " ".join(t.text.lstrip("-/* ").rstrip("*/ ") for t in lead)
    line = script.count("\n", 0, sig[0].start) + 1
    return Statement(script[sig[0].start : sig[-1].end], line, sig, comment)


def split_statements(script: str) -> list[Statement]:
    """Split a script at the semicolons SQLite itself splits at (trigger bodies stay whole)."""
    statements: list[Statement] = []
    current: list[Tok] = []
    start = 0
    for tok in tokenize(script):
        current.append(tok)
        if tok.text == ";" and sqlite3.complete_statement(script[start : tok.end]):
            stmt = _make_statement(script, current)
            if stmt is not None:
                statements.append(stmt)
            current, start = [], tok.end
    stmt = _make_statement(script, current)
    return [*statements, stmt] if stmt is not None else statements
