"""On-disk request cache and the provider wrapper that uses it."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Literal

from veritask._util import atomic_write_text, parse_json
from veritask.model._hash import request_hash
from veritask.model._types import (
    GenerateConfig,
    ModelOutput,
    ModelProvider,
    provider_model,
    resolve_config,
)
from veritask.model._usage import Usage

CacheBackend = Literal["dir", "sqlite"]

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def _as_hit(output: ModelOutput) -> ModelOutput:
    """A stored output as a cache hit: marked cached, usage zeroed except ``cached_calls``."""
    return ModelOutput(
        message=output.message,
        usage=Usage(cached_calls=1),
        finish_reason=output.finish_reason,
        cached=True,
    )


class RequestCache:
    """Model outputs on disk, keyed by :func:`request_hash`.

    Two layouts: a directory of JSON files (``<dir>/<key[:2]>/<key>.json``, written atomically)
    or one SQLite file. Nothing is opened until the first ``get``/``put``; unreadable entries
    count as misses.

    Args:
        path: The directory, or the SQLite file.
        backend: ``"dir"`` or ``"sqlite"``; by default SQLite when ``path`` ends in ``.sqlite``,
            ``.sqlite3`` or ``.db``, else a directory.
    """

    def __init__(self, path: str | os.PathLike[str], backend: CacheBackend | None = None) -> None:
        self.path = Path(path)
        self.backend: CacheBackend = backend or (
            "sqlite" if self.path.suffix in _SQLITE_SUFFIXES else "dir"
        )

    def __repr__(self) -> str:
        return f"RequestCache({str(self.path)!r}, backend={self.backend!r})"

    def get(self, key: str) -> ModelOutput | None:
        """The cached output for ``key`` as a hit (``cached=True``, usage zeroed), or None."""
        text = self._read(key)
        if text is None:
            return None
        try:  # an entry that is not JSON within the reader's limits (deep nesting...) is a miss
            return _as_hit(ModelOutput.from_dict(parse_json(text, what=key)))
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, output: ModelOutput) -> None:
        """Store ``output`` (with its original usage) under ``key``, replacing any entry."""
        self._write(key, json.dumps(output.to_dict(), ensure_ascii=False, sort_keys=True))

    def _read(self, key: str) -> str | None:
        if self.backend == "sqlite":
            return self._sqlite_read(key)
        file = self._file(key)
        try:
            return file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            return ""  # not UTF-8: not an entry we wrote, so a miss

    def _write(self, key: str, text: str) -> None:
        if self.backend == "sqlite":
            self._sqlite_write(key, text)
            return
        file = self._file(key)
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(file, text)

    def _file(self, key: str) -> Path:
        if not key or not all(c.isalnum() or c in "-_" for c in key):
            raise ValueError(f"invalid cache key {key!r}")
        return self.path / key[:2] / f"{key}.json"

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30.0)
        connection.execute(
            "CREATE TABLE IF NOT EXISTS model_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        return connection

    def _sqlite_read(self, key: str) -> str | None:
        if not self.path.exists():
            return None
        with contextlib.closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT value FROM model_cache WHERE key = ?", (key,)
            ).fetchone()
        return str(row[0]) if row else None

    def _sqlite_write(self, key: str, text: str) -> None:
        with contextlib.closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT OR REPLACE INTO model_cache (key, value) VALUES (?, ?)", (key, text)
            )


class CachedProvider:
    """Wraps any provider with a :class:`RequestCache`.

    The key is :func:`request_hash` of the request with the model name filled in (the inner
    provider's when the config names none) and the sample index. Hits come back with
    ``cached=True`` and usage zeroed except ``cached_calls=1``; misses go to the inner provider
    and are stored. Errors are never cached.

    Args:
        inner: The provider that answers misses.
        cache: A cache, or a path for one (see :class:`RequestCache`).
    """

    def __init__(self, inner: ModelProvider, cache: RequestCache | str | os.PathLike[str]) -> None:
        self.inner = inner
        self.cache = cache if isinstance(cache, RequestCache) else RequestCache(cache)
        self.name = inner.name
        self.model = provider_model(inner)

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        """Answer from the cache, else from the inner provider (see :class:`ModelProvider`)."""
        config = resolve_config(self.inner, config)
        key = request_hash(messages, tools, config, sample_index)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        output = await self.inner.generate(messages, tools, config, sample_index)
        if not output.cached:
            self.cache.put(key, output)
        return output
