"""Shared wording for family questions: lists, counts with their nouns, and verb agreement.

Every built-in family renders lists and counted nouns through these functions, so "1 pen is
found damaged" and "hail and spark are triggered" come out right everywhere, and the text
solvers parse what they write with their inverses (``split_and``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_ES_ENDINGS = ("s", "x", "z", "ch", "sh")


def join_and(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (no serial comma)."""
    if not items:
        raise ValueError("join_and needs at least one item")
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def split_and(text: str) -> list[str]:
    """The inverse of ``join_and``: ``"a, b and c"`` -> ``["a", "b", "c"]``."""
    head, sep, last = text.rpartition(" and ")
    if not sep:
        return [text.strip()]
    return [part.strip() for part in head.split(",")] + [last.strip()]


def plural(noun: str) -> str:
    """The regular English plural of ``noun`` (``battery`` -> ``batteries``, ``box`` ->
    ``boxes``); irregular nouns are given explicitly to ``count_noun``."""
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(_ES_ENDINGS):
        return noun + "es"
    return noun + "s"


def count_noun(n: int, singular: str, plural_form: str | None = None) -> str:
    """``1 pen``, ``0 pens``, ``3 pens``: the count with its noun in the right number."""
    return f"{n} {singular if n == 1 else plural_form or plural(singular)}"


def be(count: int) -> str:
    """``is`` for exactly one, else ``are``."""
    return "is" if count == 1 else "are"


def number(text: str) -> int:
    """The integer at the start of ``text`` (used by the text solvers to parse)."""
    match = re.match(r"\s*(-?\d+)", text)
    if match is None:
        raise ValueError(f"no number at {text[:30]!r}")
    return int(match.group(1))
