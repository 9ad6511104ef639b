"""Canonical hashing: sha256 of bytes and text, and a canonical JSON form to hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes."""
    return sha256(text.encode("utf-8"))


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: equal values give equal text (and equal hashes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
