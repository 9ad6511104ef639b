"""Compact prompts: the policy with only the procedures and tables a task's requests touch.

The rendered policy (``veritask.policy`` wiki) holds every procedure of the domain; a task's
user asks for a few of them. :func:`compact_policy` keeps the sections every task needs
(governance, persona, conversation flow, the enforcement summary, rules outside procedures)
and, of the ``### Transaction:`` and ``### Table:`` blocks, only those of the procedures the
task's requests and their fallbacks name, and the tables those blocks mention. The refusals a
task tests are rules of the procedures asked for, so they stay in the prompt.
"""

from __future__ import annotations

import re

from veritask.policy import DomainSpec
from veritask.task import TaskPackage

__all__ = ["compact_policy", "task_transactions"]

LEFT_OUT = (
    "(Procedures and tables this request does not involve are left out of this copy of the policy.)"
)
_BLOCK = re.compile(r"^### (Transaction|Table): (.+?)(?: \[[a-z]+\])?$")


def task_transactions(package: TaskPackage) -> set[str]:
    """Ids of the procedures a task's requests name: each sub-goal's ask and its fallbacks'."""
    out: set[str] = set()
    for sub in package.task.sub_goals:
        asks = [sub.ask] if sub.ask is not None else []
        for fb in sub.fallbacks:
            asks += [*fb.first, *([fb.then] if fb.then is not None else [])]
        out.update(a.transaction for a in asks)
        out.update(f"tool:{a.tool}" for a in asks)
    return out


def _blocks(policy: str) -> list[tuple[str, str, list[str]]]:
    """The policy as ``(kind, name, lines)`` blocks; kind is ``""`` outside ``###`` blocks."""
    blocks: list[tuple[str, str, list[str]]] = [("", "", [])]
    for line in policy.split("\n"):
        match = _BLOCK.match(line)
        if match is not None:
            blocks.append((match.group(1), match.group(2), [line]))
        elif line.startswith("#") and blocks[-1][0]:
            blocks.append(("", "", [line]))
        else:
            blocks[-1][2].append(line)
    return blocks


def compact_policy(policy: str, spec: DomainSpec, transactions: set[str]) -> str:
    """``policy`` with only the procedures in ``transactions`` and the tables they mention.

    Args:
        policy: The rendered policy of ``spec``'s domain.
        spec: The domain spec (procedure names and tools).
        transactions: Procedure ids, or ``tool:NAME`` for the procedure using a write tool
            (:func:`task_transactions`).

    Returns:
        The shortened policy, with a line saying that the rest was left out; the whole policy
        when no procedure matched.
    """
    kept_tx = {
        t.name
        for t in spec.transactions
        if t.id in transactions or f"tool:{t.tool}" in transactions
    }
    if not kept_tx:
        return policy
    blocks = _blocks(policy)
    sop_text = "\n".join(
        "\n".join(lines)
        for kind, name, lines in blocks
        if kind == "Transaction" and name in kept_tx
    )
    tables = {t.name for t in spec.tables if re.search(rf"\b{re.escape(t.name)}\b", sop_text)}
    out: list[str] = []
    for kind, name, lines in blocks:
        if kind == "Transaction" and name not in kept_tx:
            continue
        if kind == "Table" and name not in tables:
            continue
        out.extend(lines)
    text = "\n".join(out)
    marker = "## Section 3:"
    return text.replace(marker, f"{LEFT_OUT}\n\n{marker}", 1) if marker in text else text
