"""Compact state storage: page deltas in packs, compressed origins, single-file archives.

A task's s_target differs from its s_origin only in the pages its witness touched: the rows it
tracked (inserted, updated), their indexes, the engine's change-tracking tables and the file
header. A *delta* stores exactly those differences, XOR-ed with the origin's bytes and
compressed, so a target costs a few hundred bytes instead of a whole image. Version-1 packs
store every changed page whole (mostly zeros once XOR-ed: about 40 KB to decompress per
retail target); version-2 packs, written since, store only the runs of changed bytes inside
those pages (their offsets and lengths, then the XOR-ed bytes: a few hundred bytes), so a
target is rebuilt without inflating and XOR-ing whole pages. Both are read. Applying the delta to the origin
gives back the target byte for byte: the package's ``target`` stays the sha256 of the full
image, and ``check`` verifies that origin + delta hashes to it.

Files (inside ``states/``)::

    <sha256>.sqlite     a full image (datasets made before compaction; materialized copies)
    <sha256>.sqlite.z   a full image, zlib-compressed (origins)
    <sha256>.pack       the deltas of one work unit's targets, named by the pack's own hash

A pack is ``MAGIC``, one JSON header line listing its entries (target, base, size, changed
pages in version 1, offset and length of the compressed body) and the concatenated bodies.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import re
import shutil
import struct
import tarfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from veritask._util import InputError, Limits, decompress, parse_json, sha256

MAGIC = b"VTPACK1\n"
CHUNK = 4096
"""Bytes per compared page (SQLite's default page size; any size gives exact results)."""
PACK_SUFFIX = ".pack"
ZIP_SUFFIX = ".sqlite.z"
_LEVEL = 6
PACK_VERSION = 2
"""The pack format written (1: whole XOR-ed pages; 2: runs of changed bytes)."""
_RUN = re.compile(rb"[^\0]+(?:\0{1,8}[^\0]+)*")
"""A run of changed (non-zero once XOR-ed) bytes; gaps of up to 8 unchanged bytes are kept
inside a run (cheaper than a new offset and length)."""


MAX_IMAGE_BYTES = 256 << 20
"""The largest state image read back (a pack entry's claimed size, an inflated ``.sqlite.z``);
built-in domains' states are well under a megabyte."""
MAX_HEADER_BYTES = 64 << 20
"""The longest pack header line read."""
MAX_ARCHIVE_BYTES = 4 << 30
"""The most bytes an archive may unpack to in all (each member also at most this)."""
_HEADER_LIMITS = Limits(max_bytes=MAX_HEADER_BYTES, max_depth=8)


class PackError(OSError):
    """A pack, compressed state or archive cannot be read (an ``OSError``, like a missing or
    unreadable file, so readers report it the same way)."""


@dataclass(frozen=True)
class Delta:
    """The pages of ``target`` that differ from ``base``, XOR-ed with ``base`` and compressed."""

    target: str
    base: str
    size: int
    pages: tuple[int, ...]
    body: bytes
    version: int = 1

    def header(self, offset: int) -> dict[str, object]:
        """This delta's entry in a pack header, its body stored at ``offset``."""
        entry: dict[str, object] = {
            "target": self.target,
            "base": self.base,
            "size": self.size,
            "offset": offset,
            "length": len(self.body),
        }
        if self.version == 1:
            entry["pages"] = list(self.pages)
        return entry

    def apply(self, base: bytes) -> bytes:
        """The target rebuilt from ``base``."""
        if self.version == 1:
            return apply_delta(base, self.size, self.pages, self.body)
        return apply_runs(base, self.size, self.body)


def _xor(a: bytes, b: bytes) -> bytes:
    """Byte-wise XOR of two equal-length strings."""
    n = len(a)
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).to_bytes(n, "little")


def _page(data: bytes, index: int, size: int) -> bytes:
    """Page ``index`` of ``data`` cut to the target ``size``, zero-padded past ``data``'s end."""
    start = index * CHUNK
    length = min(CHUNK, size - start)
    return data[start : start + length].ljust(length, b"\0")


def _changed_pages(base: bytes, target: bytes) -> Iterator[tuple[int, bytes]]:
    """Each page of ``target`` that differs from ``base``: its index and the two XOR-ed."""
    size = len(target)
    for index in range((size + CHUNK - 1) // CHUNK):
        new = _page(target, index, size)
        old = _page(base, index, size)
        if new != old:
            yield index, _xor(new, old)


def make_delta(base_digest: str, base: bytes, target: bytes) -> Delta:
    """The delta that turns ``base`` into ``target``."""
    size = len(target)
    pages: list[int] = []
    chunks: list[bytes] = []
    for index, xored in _changed_pages(base, target):
        pages.append(index)
        chunks.append(xored)
    body = zlib.compress(b"".join(chunks), _LEVEL)
    return Delta(sha256(target), base_digest, size, tuple(pages), body)


def apply_delta(base: bytes, size: int, pages: Sequence[int], body: bytes) -> bytes:
    """The image a delta describes, rebuilt from its base.

    Raises:
        PackError: The body is not valid compressed data or does not match its pages.
    """
    _check_size(size)
    xored = _inflate(body, "delta body", size)
    if len(base) == size and all(a < b for a, b in itertools.pairwise(pages)):
        return _apply_in_order(base, size, pages, xored)
    out = bytearray(base[:size].ljust(size, b"\0"))
    for start, length, part in _page_parts(size, pages, xored):
        out[start : start + length] = _xor(bytes(out[start : start + length]), part)
    return bytes(out)


def _check_size(size: int) -> None:
    """Refuse an image size past ``MAX_IMAGE_BYTES`` before anything is allocated for it."""
    if not 0 <= size <= MAX_IMAGE_BYTES:
        raise PackError(f"a state of {size} bytes is past the limit of {MAX_IMAGE_BYTES}")


def _inflate(body: bytes, what: str, cap: int) -> bytes:
    """zlib ``body`` inflated to at most ``cap`` bytes (streamed: a bomb is never held whole).

    Raises:
        PackError: The body is corrupt, truncated or inflates past ``cap``.
    """
    try:
        return decompress(body, what=what, max_size=cap)
    except InputError as exc:
        raise PackError(str(exc)) from None


def _page_parts(size: int, pages: Sequence[int], xored: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Each listed page's offset, length and XOR-ed bytes cut from ``xored``.

    Raises:
        PackError: ``xored`` is shorter or longer than the pages need.
    """
    pos = 0
    for index in pages:
        start = index * CHUNK
        length = min(CHUNK, size - start)
        part = xored[pos : pos + length]
        if len(part) != length:
            raise PackError("delta body is shorter than its pages")
        yield start, length, part
        pos += length
    if pos != len(xored):
        raise PackError("delta body is longer than its pages")


def _apply_in_order(base: bytes, size: int, pages: Sequence[int], xored: bytes) -> bytes:
    """``apply_delta`` for the common case (pages ascending, base as long as the target):
    the unchanged runs are joined from views of ``base``, so the image is copied once."""
    view = memoryview(base)
    parts: list[bytes | memoryview] = []
    done = 0
    for start, length, part in _page_parts(size, pages, xored):
        parts += (view[done:start], _xor(base[start : start + length], part))
        done = start + length
    parts.append(view[done:])
    return b"".join(parts)


def make_runs_delta(base_digest: str, base: bytes, target: bytes) -> Delta:
    """The version-2 delta that turns ``base`` into ``target``: the runs of bytes that differ,
    XOR-ed with ``base`` (zero-padded to the target's size).

    The decompressed body is the run count (u32), an (offset, length) pair per run (u32 each,
    ascending, offsets into the image) and the runs' XOR-ed bytes, all little-endian."""
    size = len(target)
    spans: list[int] = []
    chunks: list[bytes] = []
    for index, xored in _changed_pages(base, target):
        start = index * CHUNK
        for m in _RUN.finditer(xored):
            spans += (start + m.start(), m.end() - m.start())
            chunks.append(m.group())
    head = struct.pack(f"<{1 + len(spans)}I", len(spans) // 2, *spans)
    body = zlib.compress(head + b"".join(chunks), _LEVEL)
    return Delta(sha256(target), base_digest, size, (), body, version=2)


def apply_runs(base: bytes, size: int, body: bytes) -> bytes:
    """The image a version-2 delta describes, rebuilt from its base (copied once).

    Raises:
        PackError: The body is not valid compressed data, or its runs are not ascending,
            inside the image and exactly as long as its bytes.
    """
    _check_size(size)
    raw = _inflate(body, "delta body", 2 * size + 16)  # runs are 9+ bytes apart: 8 B per run
    try:
        (count,) = struct.unpack_from("<I", raw)
        spans = struct.unpack_from(f"<{2 * count}I", raw, 4)
    except struct.error as exc:
        raise PackError(f"delta body is corrupt: {exc}") from exc
    if len(base) != size:
        base = base[:size].ljust(size, b"\0")
    view = memoryview(base)
    parts: list[bytes | memoryview] = []
    pos, done = 4 + 8 * count, 0
    for start, length in zip(spans[::2], spans[1::2], strict=True):
        end = start + length
        if start < done or end > size or length == 0 or pos + length > len(raw):
            raise PackError("delta runs are out of order, outside the image or truncated")
        parts += (view[done:start], _xor(base[start:end], raw[pos : pos + length]))
        pos, done = pos + length, end
    if pos != len(raw):
        raise PackError("delta body is longer than its runs")
    parts.append(view[done:])
    return b"".join(parts)


def pack_bytes(deltas: Iterable[Delta], version: int = PACK_VERSION) -> bytes:
    """A pack holding ``deltas`` (in the order given), all of format ``version``."""
    entries: list[dict[str, object]] = []
    bodies: list[bytes] = []
    offset = 0
    for delta in deltas:
        if delta.version != version:
            raise ValueError(f"a version-{delta.version} delta in a version-{version} pack")
        entries.append(delta.header(offset))
        bodies.append(delta.body)
        offset += len(delta.body)
    head = {"version": version, "chunk": CHUNK, "entries": entries}
    header = json.dumps(head, sort_keys=True)
    return MAGIC + header.encode("utf-8") + b"\n" + b"".join(bodies)


@dataclass(frozen=True)
class PackEntry:
    """Where one target's delta lives."""

    path: Path
    base: str
    size: int
    pages: tuple[int, ...]
    offset: int
    length: int
    version: int = 1

    def rebuild(self, base: bytes, body: bytes | None = None) -> bytes:
        """The target rebuilt from ``base`` (the image named ``self.base``).

        Args:
            base: The base image.
            body: The delta's compressed body when the caller has read it already (else it is
                read from the pack).

        Raises:
            PackError: The body cannot be read, decoded or does not fit its description.
            OSError: The pack cannot be read.
        """
        if body is None:
            body = read_body(self)
        if self.version == 1:
            return apply_delta(base, self.size, self.pages, body)
        return apply_runs(base, self.size, body)


def read_pack_index(path: Path) -> dict[str, PackEntry]:
    """The entries of a pack file, by target digest.

    Each entry's claimed size is checked against ``MAX_IMAGE_BYTES`` and its body against the
    file's actual length before anything is allocated for it.

    Raises:
        PackError: The file is not a pack, or its header is malformed or out of bounds.
        OSError: It cannot be read.
    """
    with path.open("rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise PackError(f"{path.name}: not a veritask pack")
        line = fh.readline(MAX_HEADER_BYTES + 1)
        total = os.fstat(fh.fileno()).st_size
    if not line.endswith(b"\n"):
        raise PackError(f"{path.name}: the header line is cut or over {MAX_HEADER_BYTES} bytes")
    start = len(MAGIC) + len(line)
    try:
        header = parse_json(line, what=path.name, limits=_HEADER_LIMITS)
        if not isinstance(header, dict):
            raise PackError(f"{path.name}: bad header: not a JSON object")
        version = _header_version(path, header)
        entries = [_entry(path, e, version, start, total) for e in header["entries"]]
    except InputError as exc:
        raise PackError(f"{exc.what}: bad header: {exc.reason}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise PackError(f"{path.name}: bad header: {exc}") from None
    return {target: entry for target, entry in entries}


def _header_version(path: Path, header: dict[str, object]) -> int:
    if header.get("chunk") != CHUNK:
        raise PackError(f"{path.name}: page size {header.get('chunk')} is not {CHUNK}")
    version = header.get("version")
    if version not in (1, 2):
        raise PackError(f"{path.name}: pack version {version} is not 1 or 2")
    return int(str(version))


def _entry(
    path: Path, e: dict[str, object], version: int, start: int, total: int
) -> tuple[str, PackEntry]:
    """One header entry, its claims checked against the limits and the file's length."""
    size, offset, length = int(str(e["size"])), int(str(e["offset"])), int(str(e["length"]))
    if not 0 <= size <= MAX_IMAGE_BYTES:
        raise PackError(
            f"{path.name}: an entry claims {size} bytes, past the limit of {MAX_IMAGE_BYTES}"
        )
    if offset < 0 or length < 0 or start + offset + length > total:
        raise PackError(f"{path.name}: an entry's body lies outside the file ({total} bytes)")
    pages: tuple[int, ...] = ()
    if version == 1:
        raw_pages = e["pages"]
        if not isinstance(raw_pages, list):
            raise PackError(f"{path.name}: bad header: pages is not a list")
        pages = tuple(int(p) for p in raw_pages)
        if any(not 0 <= p * CHUNK < max(size, 1) for p in pages):
            raise PackError(f"{path.name}: an entry names a page outside its image")
    entry = PackEntry(path, str(e["base"]), size, pages, start + offset, length, version)
    return str(e["target"]), entry


def read_body(entry: PackEntry) -> bytes:
    """The compressed body of one delta."""
    with entry.path.open("rb") as fh:
        fh.seek(entry.offset)
        return fh.read(entry.length)


def compress_image(data: bytes) -> bytes:
    """A full image, compressed for ``<sha256>.sqlite.z``."""
    return zlib.compress(data, _LEVEL)


def decompress_image(data: bytes) -> bytes:
    """The image stored in a ``<sha256>.sqlite.z`` file.

    Raises:
        PackError: The file is not valid compressed data, or inflates past
            ``MAX_IMAGE_BYTES``.
    """
    return _inflate(data, "compressed state", MAX_IMAGE_BYTES)


def _members(root: Path) -> list[Path]:
    """Every file under ``root`` (sorted, so an archive's member order is deterministic)."""
    return sorted(p for p in root.rglob("*") if p.is_file())


def write_archive(root: Path, out: Path) -> int:
    """Write every file of the dataset directory ``root`` into one tar file; return the count.

    Members are stored in sorted order with fixed metadata (mode 0644, time 0, no owner), so the
    same directory always gives the same archive bytes. States are already compressed; the
    manifest and the rest are compressed by the archive (gzip, time 0).
    """
    files = _members(root)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            info = tarfile.TarInfo(path.relative_to(root).as_posix())
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out.write_bytes(gzip.compress(raw.getvalue(), compresslevel=6, mtime=0))
    return len(files)


def extract_archive(archive: Path, root: Path) -> int:
    """Unpack an archive made by :func:`write_archive` into ``root``; return the file count.

    Raises:
        PackError: The archive is not one, or names a path outside ``root``.
    """
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            return _extract(tar, archive, root)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise PackError(f"{archive}: not a dataset archive: {exc}") from exc


def _extract(tar: tarfile.TarFile, archive: Path, root: Path) -> int:
    """Write each member, streamed, refusing paths outside ``root`` and sizes past the cap."""
    count, written = 0, 0
    for member in tar:
        target = (root / member.name).resolve()
        if not member.isfile() or not target.is_relative_to(root.resolve()):
            raise PackError(f"{archive}: refusing member {member.name!r}")
        written += member.size
        if written > MAX_ARCHIVE_BYTES:
            raise PackError(
                f"{archive}: member {member.name!r} claims {member.size} bytes; the archive "
                f"would unpack past the limit of {MAX_ARCHIVE_BYTES} bytes"
            )
        source = tar.extractfile(member)
        assert source is not None
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
            done = out.tell()
        if done != member.size:
            raise PackError(f"{archive}: member {member.name!r} is cut short (truncated archive)")
        count += 1
    return count
