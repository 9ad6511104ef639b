"""Stable seeds derived from any parts (the one seed hash of the package)."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts, stable across processes and platforms (unlike ``hash``).

    The parts are joined with the unit separator ``\\x1f`` after ``str()``, so
    ``derive_seed("a", 1)`` and ``derive_seed("a", "1")`` are the same seed.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
