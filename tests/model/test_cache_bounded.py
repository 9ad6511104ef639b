"""A request cache entry we did not write (deep nesting, Latin-1 bytes) is a miss, not a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask.model._cache import RequestCache


@pytest.mark.parametrize(
    "body", [b"[" * 100_000 + b"]" * 100_000, b'{"text": "caf\xe9"}', b"\x00\x01"]
)
def test_broken_cache_entry_is_a_miss(tmp_path: Path, body: bytes) -> None:
    cache = RequestCache(tmp_path / "cache")
    key = "ab" + "0" * 62
    path = tmp_path / "cache" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(body)
    assert cache.get(key) is None
