"""Whether a SQLite image holds the schema of one already verified, read from its bytes.

SQLite reads ``sqlite_master`` from the schema B-tree alone: its root on page 1 after the
100-byte file header, its interior, leaf and overflow pages, and the header fields that say how
to read them (page size, reserved bytes, encoding, schema format). An image whose every one of
those bytes is equal to those of an image found to have the spec's schema yields the same
``sqlite_master`` rows, so it has the same schema, and no SQL needs to run. A target reached by
writes to a few rows differs from its origin only in data pages and in three header counters
(the file change counter, the page count and the version-valid-for number), so this is the
common case for ``check``; anything else falls back to reading the schema (design note 0033).

The pages are found by walking the B-tree here: SQLite's ``dbstat`` table would list them, but
it is an optional compile-time feature, costs about 0.7 ms per image, and crashed the process on
one spelling of the schema table's name in SQLite 3.40.
"""

from __future__ import annotations

from dataclasses import dataclass

_HEADER = 100
_MAGIC = b"SQLite format 3\0"
_FREE_HEADER = ((24, 32), (92, 96))
"""Header bytes a write changes that do not bear on reading the schema: the file change counter
and the in-header page count (24-31), and the version-valid-for number (92-95)."""
_INTERIOR_TABLE, _LEAF_TABLE = 0x05, 0x0D


@dataclass(frozen=True)
class SchemaKey:
    """Where an image's schema is read from, and those bytes.

    Attributes:
        size: The page size.
        pages: Page numbers (1-based, ascending) of the schema B-tree, overflow pages included.
        schema: Page 1 (without the counters a write changes), then the other pages' bytes.
    """

    size: int
    pages: tuple[int, ...]
    schema: bytes


def page_size(image: bytes) -> int | None:
    """The page size a SQLite image's header gives, or None when the header is not SQLite's."""
    if len(image) < _HEADER or not image.startswith(_MAGIC):
        return None
    raw = int.from_bytes(image[16:18], "big")
    return 65536 if raw == 1 else raw


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's big-endian varint at ``pos``: its value and the position after it."""
    value = 0
    for i in range(8):
        byte = data[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    return (value << 8) | data[pos + 8], pos + 9


class _Walk:
    """The pages of the table B-tree rooted at page 1, found by reading its pages."""

    def __init__(self, image: bytes, size: int) -> None:
        self.image = image
        self.size = size
        self.usable = size - image[20]
        self.count = len(image) // size
        self.seen: set[int] = set()

    def take(self, page: int) -> int:
        """Mark ``page`` as read; its byte offset. Raises ValueError for a page out of range
        or read twice (a malformed tree)."""
        if not 1 <= page <= self.count or page in self.seen:
            raise ValueError(f"page {page}")
        self.seen.add(page)
        return (page - 1) * self.size

    def tree(self) -> None:
        stack = [1]
        while stack:
            page = stack.pop()
            start = self.take(page)
            head = start + (_HEADER if page == 1 else 0)
            kind, cells = self.image[head], int.from_bytes(self.image[head + 3 : head + 5], "big")
            if kind == _INTERIOR_TABLE:
                stack.append(int.from_bytes(self.image[head + 8 : head + 12], "big"))
                stack += (self._u32(start + self._cell(head + 12, i)) for i in range(cells))
            elif kind == _LEAF_TABLE:
                for i in range(cells):
                    self._leaf_cell(start + self._cell(head + 8, i))
            else:
                raise ValueError(f"page {page} is not a table B-tree page")

    def _cell(self, pointers: int, index: int) -> int:
        return int.from_bytes(self.image[pointers + 2 * index : pointers + 2 * index + 2], "big")

    def _u32(self, pos: int) -> int:
        return int.from_bytes(self.image[pos : pos + 4], "big")

    def _leaf_cell(self, pos: int) -> None:
        """Follow a leaf cell's overflow chain (the payload-split rule of SQLite's file format)."""
        payload, pos = _varint(self.image, pos)
        _, pos = _varint(self.image, pos)  # the rowid
        most = self.usable - 35
        if payload <= most:
            return
        least = (self.usable - 12) * 32 // 255 - 23
        local = least + (payload - least) % (self.usable - 4)
        local = local if local <= most else least
        remaining, page = payload - local, self._u32(pos + local)
        while remaining > 0:
            start = self.take(page)
            remaining -= self.usable - 4
            page = self._u32(start)


def _schema_bytes(image: bytes, size: int, pages: tuple[int, ...]) -> bytes:
    """Page 1 without the counters a write changes, then every other page of ``pages``."""
    view = memoryview(image)
    parts: list[memoryview] = []
    start = 0
    for begin, end in _FREE_HEADER:
        parts.append(view[start:begin])
        start = end
    parts.append(view[start:size])
    parts += (view[(page - 1) * size : page * size] for page in pages[1:])  # [0] is page 1
    return b"".join(parts)


def _count_ok(image: bytes, size: int) -> bool:
    """The image is whole pages and its header's page count says so (a short count would hide
    pages the schema is read from)."""
    return len(image) % size == 0 and int.from_bytes(image[28:32], "big") == len(image) // size


def schema_key(image: bytes) -> SchemaKey | None:
    """The schema pages of a SQLite image and the digest of their bytes; None when the image
    is not one this can read (then the schema is read with SQL)."""
    size = page_size(image)
    if size is None or not 512 <= size <= 65536 or not _count_ok(image, size):
        return None
    walk = _Walk(image, size)
    try:
        walk.tree()
    except (ValueError, IndexError):
        return None
    pages = tuple(sorted(walk.seen))
    return SchemaKey(size, pages, _schema_bytes(image, size, pages))


def has_schema(image: bytes, key: SchemaKey) -> bool:
    """True when ``image`` has every byte the schema of ``key``'s image is read from equal to
    that image's (False says nothing: the caller reads the schema instead)."""
    size = key.size
    if page_size(image) != size or not _count_ok(image, size):
        return False
    if len(image) < key.pages[-1] * size:
        return False
    return _schema_bytes(image, size, key.pages) == key.schema
