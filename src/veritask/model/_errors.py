"""Naming a failed model call: what kind of failure it was and which endpoint it tried.

Callers (the rollout loop, the CLI) need to tell an unreachable server from a rejected key or a
bug, and to name the endpoint in one line, without importing the SDK: providers raise
:class:`~veritask.model.ProviderError` with these facts attached, and :func:`classify_error`
reads them (or guesses from the exception type for anything else).
"""

from __future__ import annotations

from dataclasses import dataclass

from veritask.model._structured import StructuredOutputError
from veritask.model._types import ProviderError


@dataclass(frozen=True)
class ErrorInfo:
    """What a failed call was, in words a report can print.

    Attributes:
        kind: A :data:`~veritask.model.ErrorKind`, or ``error`` for an exception that is no
            model failure (a bug in a role, say).
        message: ``ExceptionType: message``.
        base_url: The endpoint the call tried, when known.
        model: The model it asked for, when known.
        reason: A short cause (``connection refused``), when known.
    """

    kind: str
    message: str
    base_url: str | None = None
    model: str | None = None
    reason: str | None = None


def connection_reason(exc: BaseException) -> str | None:
    """``connection refused`` when a refused connection is somewhere in ``exc``'s chain of
    causes, else None (the SDK wraps the socket error two or three levels deep)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def classify_error(exc: BaseException) -> ErrorInfo:
    """The kind, endpoint and message of an exception a model role raised.

    Args:
        exc: The exception.

    Returns:
        Its :class:`ErrorInfo`; ``kind`` is ``error`` for exceptions that are not model or
        transport failures.
    """
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ProviderError):
        return ErrorInfo(exc.kind, message, exc.base_url, exc.model, exc.reason)
    if isinstance(exc, StructuredOutputError):
        return ErrorInfo("parse", message)
    if isinstance(exc, TimeoutError):
        return ErrorInfo("timeout", message)
    if isinstance(exc, ConnectionError):
        return ErrorInfo("connection", message, reason=connection_reason(exc))
    return ErrorInfo("error", message)
