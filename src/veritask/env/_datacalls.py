"""Calls whose results become data: an interrupted call is an infrastructure error.

``Environment.call_time_limit`` protects agents' sessions from a runaway statement by answering
``TIME_LIMIT_EXCEEDED``. Where call results are made into data (generation, grounding,
certification, ``check``) that answer would depend on how loaded the machine was, so inside
``data_calls`` an interrupted call is retried with longer limits and, failing that, raises
(docs/design/0056-grounded-means-solvable.md).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from veritask.env._result import ToolError, ToolResult

INTERRUPT_RETRIES = 2
"""Retries of an interrupted call under ``data_calls``, each with twice the previous limit."""
INTERRUPTED = "TIME_LIMIT_EXCEEDED"
"""The error code of a call whose statement the time limit interrupted."""

_DATA_CALLS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "veritask_data_calls", default=False
)


class CallInterrupted(RuntimeError):
    """A call under ``data_calls`` was still interrupted after its retries.

    An infrastructure failure (a loaded machine, a runaway statement), never a policy answer:
    whatever was being made from the call's result must fail rather than record it.
    """


@contextmanager
def data_calls() -> Iterator[None]:
    """Treat an interrupted call as an infrastructure error inside the block.

    Inside this block a call that ``call_time_limit`` interrupted is retried up to
    ``INTERRUPT_RETRIES`` times, each time with twice the previous limit (an interrupted call
    changed nothing, so a retry meets the same state), and raises ``CallInterrupted`` if it is
    still interrupted: it never comes back as a ``TIME_LIMIT_EXCEEDED`` result. Outside the
    block (agents' sessions) the limit is reported to the caller as before. The setting is per
    thread and per asyncio task (a context variable), and blocks nest.
    """
    token = _DATA_CALLS.set(True)
    try:
        yield
    finally:
        _DATA_CALLS.reset(token)


def in_data_calls() -> bool:
    """True inside a ``data_calls`` block."""
    return _DATA_CALLS.get()


def retry_interrupted(
    attempt: Callable[[float], ToolResult],
    limit: float | None,
    expired: bool,
    label: str,
    error: ToolError,
) -> ToolResult:
    """Retry an interrupted call with doubled limits; raise when every try was interrupted.

    Args:
        attempt: Runs the call once under the given limit (seconds).
        limit: The limit the interrupted try had (None: the call had no limit of its own, so a
            ``time_limit`` block interrupted it and a retry cannot help).
        expired: A ``time_limit`` block's deadline has passed (a retry cannot extend it).
        label: The tool's name, for the message.
        error: The interrupted try's error.

    Returns:
        The first result that was not interrupted.

    Raises:
        CallInterrupted: Every try was interrupted, or no retry could help.
    """
    tries = 0 if limit is None or expired else INTERRUPT_RETRIES
    for n in range(1, tries + 1):
        assert limit is not None
        result = attempt(limit * 2**n)
        if result.error is None or result.error.code != INTERRUPTED:
            return result
        error = result.error
    raise CallInterrupted(
        f"{label}: interrupted {tries + 1} time(s) (limit {limit} s, doubled on each retry); "
        f"an infrastructure error, not a policy answer: {error.message}"
    )
