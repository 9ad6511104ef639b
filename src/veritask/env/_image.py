"""Database files a user names: checked to be SQLite before the engine opens them.

SQLite reports a file that is not a database late and unhelpfully (``file is not a
database`` on the first query, or ``MemoryError`` when an empty image is deserialized), so a
state file is checked here first, by its 100-byte header, and the error names the file.
"""

from __future__ import annotations

from pathlib import Path

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100


class NotADatabase(ValueError):
    """A file given as a SQLite state is empty, too short, or not a SQLite database."""


def check_image(data: bytes, source: str) -> bytes:
    """Return ``data`` when it starts like a SQLite database image.

    Args:
        data: The image (the file's bytes).
        source: What to call it in the error (a path).

    Returns:
        ``data`` unchanged.

    Raises:
        NotADatabase: Empty, shorter than the SQLite header, or without its magic string.
    """
    if not data:
        raise NotADatabase(f"{source} is empty, not a SQLite database")
    if len(data) < _HEADER_BYTES or not data.startswith(SQLITE_MAGIC):
        raise NotADatabase(f"{source} is not a SQLite database (no SQLite header)")
    return data


def read_database(path: str | Path) -> bytes:
    """The bytes of a SQLite database file, checked by :func:`check_image`.

    Raises:
        NotADatabase: The file is not a SQLite database.
        OSError: The file cannot be read.
    """
    return check_image(Path(path).read_bytes(), str(path))


def check_database_file(path: str | Path) -> None:
    """Check a database file's header without reading the whole file.

    Raises:
        NotADatabase: The file is not a SQLite database.
        OSError: The file cannot be read.
    """
    with Path(path).open("rb") as handle:
        head = handle.read(_HEADER_BYTES)
    check_image(head, str(path))
