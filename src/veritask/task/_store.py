"""SessionStore: the one table of open sessions (capacity, idle expiry, locking).

Every server or adapter that keeps sessions between requests (the HTTP service, the verl tool and
interaction) owns one store instance instead of a module-level dict. The table is guarded by one
lock and each entry by its own, so work on different sessions runs concurrently while work on one
session runs one call at a time. All methods are synchronous and short (they never wait on I/O),
so an asyncio server may call them from its event loop; :meth:`SessionStore.expire_every` is the
coroutine that reaps idle sessions in the background.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

log = logging.getLogger("veritask.sessions")


class Closable(Protocol):
    """What a store holds: anything with a ``close()`` that releases its resources."""

    def close(self) -> None:
        """Release the session's resources."""
        ...


S = TypeVar("S", bound=Closable)


class UnknownSession(LookupError):
    """No open session under that key (never opened, closed, or expired)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no session {key!r}")
        self.key = key


class SessionStoreFull(RuntimeError):
    """The store is at capacity and refuses new sessions (``when_full="refuse"``)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(f"{capacity} sessions are open; delete some")
        self.capacity = capacity


@dataclass(eq=False)
class _Entry(Generic[S]):
    value: S
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False

    def close(self, timeout: float = -1) -> bool:
        """Close the value once its lock is free; False when ``timeout`` ran out first."""
        if not self.lock.acquire(timeout=timeout):
            return False
        try:
            if not self.closed:
                self.closed = True
                self.value.close()
        finally:
            self.lock.release()
        return True


class SessionStore(Generic[S]):
    """Open sessions by key, bounded in number and idle time, each with its own lock.

    Args:
        capacity: Sessions open at once (None: unbounded).
        idle_timeout: Seconds after which an unused session may be expired (None: never).
        when_full: ``"refuse"`` raises :class:`SessionStoreFull` on :meth:`add` beyond
            ``capacity`` (after expiring idle sessions); ``"evict"`` closes the oldest ones.
        clock: Monotonic time source (tests pass a fake one).

    Raises:
        ValueError: ``capacity`` below 1 or a non-positive ``idle_timeout``.
    """

    def __init__(
        self,
        *,
        capacity: int | None = None,
        idle_timeout: float | None = None,
        when_full: Literal["refuse", "evict"] = "refuse",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError("capacity must be at least 1")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive (or None for never)")
        self.capacity = capacity
        self.idle_timeout = idle_timeout
        self.when_full = when_full
        self._clock = clock
        self._entries: dict[str, _Entry[S]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    @staticmethod
    def new_key() -> str:
        """A fresh unguessable key (128 random bits, hex)."""
        return secrets.token_hex(16)

    def add(self, value: S, key: str | None = None) -> str:
        """Store ``value`` under ``key`` (a fresh one when None) and return the key.

        A session already under ``key`` is closed and replaced. At capacity, idle sessions are
        expired first; then ``"refuse"`` raises and ``"evict"`` closes the oldest sessions.
        The caller still owns ``value`` when this raises.

        Raises:
            SessionStoreFull: At capacity with ``when_full="refuse"``.
        """
        key = key or self.new_key()
        if self._full():
            self.expire()
        entry = _Entry(value, self._clock())
        with self._lock:
            replaced = self._entries.pop(key, None)
            dropped = [] if replaced else self._make_room()
            self._entries[key] = entry
        for old in ([replaced] if replaced else []) + dropped:
            old.close()
        return key

    def _full(self) -> bool:
        with self._lock:
            return self.capacity is not None and len(self._entries) >= self.capacity

    def _make_room(self) -> list[_Entry[S]]:
        """Entries to close so one more fits (the table lock is held)."""
        if self.capacity is None or len(self._entries) < self.capacity:
            return []
        if self.when_full == "refuse":
            raise SessionStoreFull(self.capacity)
        excess = len(self._entries) - self.capacity + 1
        oldest = list(self._entries)[:excess]
        return [self._entries.pop(k) for k in oldest]

    def get(self, key: str) -> S | None:
        """The session under ``key`` (marked as used), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            entry.last_used = self._clock()
            return entry.value

    @contextmanager
    def use(self, key: str) -> Iterator[S]:
        """Hold the session's lock for one unit of work; it counts as used before and after.

        Raises:
            UnknownSession: No session under ``key``, or it was closed while this waited.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.last_used = self._clock()
        if entry is None:
            raise UnknownSession(key)
        with entry.lock:
            if entry.closed:
                raise UnknownSession(key)
            try:
                yield entry.value
            finally:
                entry.last_used = self._clock()

    def discard(self, key: str) -> bool:
        """Close and forget the session under ``key``; False when there is none."""
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is None:
            return False
        entry.close()
        return True

    def expire(self) -> int:
        """Close the sessions idle for longer than ``idle_timeout`` (and not in use)."""
        if self.idle_timeout is None:
            return 0
        deadline = self._clock() - self.idle_timeout
        with self._lock:
            stale = [
                (k, e)
                for k, e in self._entries.items()
                if e.last_used < deadline and not e.lock.locked()
            ]
            for k, _ in stale:
                del self._entries[k]
        for _, entry in stale:
            entry.close()
        if stale:
            log.info("expired %d idle session(s)", len(stale))
        return len(stale)

    async def expire_every(self, interval: float | None = None) -> None:
        """Expire idle sessions forever (a quarter of the idle timeout apart, at most 30 s).

        Returns at once when sessions never expire. Cancel the task to stop it.
        """
        if self.idle_timeout is None:
            return
        pause = interval if interval is not None else max(0.05, min(self.idle_timeout / 4, 30.0))
        while True:
            await asyncio.sleep(pause)
            try:
                self.expire()
            except Exception:  # the reaper must outlive a bad sweep
                log.exception("session expiry failed")

    def close(self, timeout: float = 5.0) -> None:
        """Close every session, waiting at most ``timeout`` seconds in all for work in flight."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        deadline = time.monotonic() + timeout
        stuck = sum(not e.close(max(0.0, deadline - time.monotonic())) for e in entries)
        if stuck:
            log.warning("%d session(s) still busy at shutdown were left open", stuck)
