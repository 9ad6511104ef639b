"""Ways to tamper with a stored state, shared by the integrity tests."""

from __future__ import annotations

import sqlite3


def drop_trigger(image: bytes) -> bytes:
    """The same image without its first trigger (a policy the engine would no longer enforce)."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    name = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' LIMIT 1").fetchone()
    conn.execute(f'DROP TRIGGER "{name[0]}"')
    data = conn.serialize()
    conn.close()
    return data
