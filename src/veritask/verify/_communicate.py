"""The communicate component: the agent told the user every required fact."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from veritask.verify._verdict import ComponentResult

if TYPE_CHECKING:
    from veritask.task import Trajectory

_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|[^\W\d_]+")


def _number(text: str) -> str:
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the pattern only yields decimals
        return text
    return format(value.normalize(), "f")


def tokens(text: str) -> list[str]:
    """Words (case-folded) and numbers (canonical: ``"1,150.0"`` -> ``"1150"``) of a text."""
    out = []
    for tok in _TOKEN.findall(text.casefold()):
        out.append(_number(tok) if tok[0].isdigit() else tok)
    return out


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def mentions(text: str, fact: str) -> bool:
    """Whether ``text`` states ``fact``: its words and numbers appear contiguously, ignoring
    case, punctuation and number formatting; a fact without words or numbers is a substring."""
    needle = tokens(fact)
    if not needle:
        return fact.strip().casefold() in text.casefold()
    return _contains(tokens(text), needle)


def communicate(traj: Trajectory, facts: Sequence[str]) -> ComponentResult:
    """Every required fact appears in some assistant text message.

    Matching ignores case, punctuation and number formatting (``"1,150"``, ``"1150"`` and
    ``"1150.0"`` are the same number); a fact must appear within a single message.

    Args:
        traj: The recorded episode.
        facts: The facts the agent had to tell the user.

    Returns:
        A binary result; on failure the detail lists the facts never stated.
    """
    texts = traj.assistant_texts()
    missing = [f for f in facts if not any(mentions(t, f) for t in texts)]
    if missing:
        detail = f"{len(missing)} of {len(facts)} fact(s) never stated by the agent: {missing}"
        return ComponentResult.binary("communicate", False, detail)
    return ComponentResult.binary("communicate", True, f"all {len(facts)} fact(s) stated")
