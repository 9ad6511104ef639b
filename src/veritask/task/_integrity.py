"""Tamper evidence for dataset directories: a digest sealed at generation, and file checks.

A dataset is *sealed* when its manifest is assembled: ``digest.json`` records the sha256 of
``run.json``; for every package, in manifest order, a short hash of each of its fields and the
sha256 of its manifest line (``line``); and the sha256 of every file under the directory
(``files``, by relative path) except the seal itself. The file's own ``digest`` is the sha256 of the
rest of it. ``veritask check`` recomputes all of it and names the package and field that
changed, the package out of place, and each extra, missing or changed file. A package whose
manifest line still hashes to its sealed ``line`` has every field as sealed, so its fields are
compared only when the line differs. A whole image ``states/<sha256>.sqlite`` the seal does not
list is accepted when the seal lists that state in compact form and the image hashes to its
name: it is a copy made for tools that open files (``DatasetDir.materialize``). Seals of
version 1 (no order, no file listing) are refused with a request to seal again.

States and policies are content-addressed, so their bytes are checked against their names, and
every state's schema against the schema the current domain spec compiles to (a dropped trigger
is a changed schema).

The digest detects edits, not a forger who also recomputes it; the replay, diff, schema and
policy checks do not depend on it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text, canonical_json, parse_json, sha256, sha256_text
from veritask.env import CompiledDomain, Environment
from veritask.task._package import TaskPackage
from veritask.task._schema_pages import SchemaKey, has_schema, schema_key

DIGEST_FILE = "digest.json"
DIGEST_VERSION = 2
_WHOLE_STATE = re.compile(r"states/([0-9a-f]{64})\.sqlite")
_KEYS_KEPT = 64
"""Schema keys a ``StateVerifier`` keeps (about 40 KB each): the origins of the packages being
checked, which come scene by scene."""
_FIELD_HASH = 16
"""Hex digits kept per field hash: enough to name the changed field, small on disk."""


@dataclass(frozen=True)
class Tamper:
    """One integrity problem: which package (or file) and which field."""

    subject: str
    field: str
    detail: str

    def describe(self) -> str:
        """``field: detail``, the text a check report shows."""
        return f"{self.field}: {self.detail}"


def field_hashes(pkg: TaskPackage) -> dict[str, str]:
    """A short hash of each field of a package, by field name."""
    data = pkg.model_dump(mode="json")
    return {name: sha256_text(canonical_json(value))[:_FIELD_HASH] for name, value in data.items()}


def manifest_line(pkg: TaskPackage) -> bytes:
    """A package's line in the manifest, without its newline."""
    return pkg.model_dump_json().encode("utf-8")


def _entry(pkg: TaskPackage) -> dict[str, Any]:
    """A package's seal entry: its id, its field hashes and, when the package reads back from
    its manifest line with the same field hashes, the sha256 of that line."""
    fields = field_hashes(pkg)
    entry: dict[str, Any] = {"id": pkg.id, "fields": fields}
    line = manifest_line(pkg)
    if field_hashes(TaskPackage.model_validate_json(line)) == fields:
        entry["line"] = sha256(line)
    return entry


def file_listing(root: Path) -> dict[str, str]:
    """The sha256 of every file under ``root`` by relative POSIX path, sorted by path, except
    the seal; a symbolic link (to a file or a folder, not followed) as ``link:<target>``."""
    found: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if rel == DIGEST_FILE:
                continue
            if path.is_symlink():
                found[rel] = f"link:{os.readlink(path)}"
            else:
                found[rel] = sha256(path.read_bytes())
    return dict(sorted(found.items()))


def _body(
    run: bytes | None, packages: Iterable[TaskPackage], files: dict[str, str]
) -> dict[str, Any]:
    return {
        "version": DIGEST_VERSION,
        "run": sha256(run) if run is not None else None,
        "packages": [_entry(p) for p in packages],
        "files": files,
    }


def seal_text(run: bytes | None, packages: Iterable[TaskPackage], files: dict[str, str]) -> str:
    """The text of ``digest.json`` for a run file, the packages of a manifest (in order) and
    the directory's file listing (:func:`file_listing`)."""
    body = _body(run, packages, files)
    return json.dumps({**body, "digest": sha256_text(canonical_json(body))}, indent=1) + "\n"


def write_seal(root: Path, packages: Sequence[TaskPackage]) -> None:
    """Seal the dataset directory ``root``: write its ``digest.json`` atomically, covering
    ``run.json``, ``packages`` in this order and every file under ``root`` as it is now."""
    run_path = root / "run.json"
    run = run_path.read_bytes() if run_path.exists() else None
    text = seal_text(run, packages, file_listing(root))
    atomic_write_text(root / DIGEST_FILE, text, durable=True)


def _read_seal(text: str) -> dict[str, Any] | str:
    """The parsed digest file, or why it cannot be trusted."""
    try:
        data = parse_json(text, what=DIGEST_FILE)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(data, dict) or data.get("version") not in (1, DIGEST_VERSION):
        return f"not a version-{DIGEST_VERSION} digest"
    body = {k: v for k, v in data.items() if k != "digest"}
    if data.get("digest") != sha256_text(canonical_json(body)):
        return "its own digest does not match its content (the file was edited)"
    if not isinstance(data.get("packages"), list):
        return "has no package list"
    if data["version"] == DIGEST_VERSION and not isinstance(data.get("files"), dict):
        return "has no file listing"
    return data


OLDER_SEAL = (
    "sealed by an older version (no manifest order, no file listing): "
    "re-run generate/compact to seal it again"
)


@dataclass(frozen=True)
class Dataset:
    """What a seal is compared with: a dataset directory as it is now.

    Attributes:
        root: The directory (its files are listed again).
        run: The bytes of ``run.json``, or None when it is missing.
        packages: The packages of the manifest, in order.
        lines: The manifest lines the packages were read from (same order, no newlines); a
            package whose line hashes to its sealed ``line`` skips the field comparison. None,
            or a list of another length, compares every field.
        compact: Tells whether a state is stored compressed or as a delta (a whole image of
            such a state is a copy for tools, accepted when it hashes to its name).
    """

    root: Path
    run: bytes | None
    packages: Sequence[TaskPackage]
    lines: Sequence[bytes] | None = None
    compact: Callable[[str], bool] = field(default=lambda _: False)


def compare_seal(recorded: str | None, now: Dataset) -> list[Tamper]:
    """Every difference between a recorded digest and the dataset as it is now.

    Args:
        recorded: The text of ``digest.json``, or None when the file is missing.
        now: The dataset directory, its run file and its packages.

    Returns:
        One :class:`Tamper` per changed field, missing, added or moved package, extra, missing
        or changed file, or changed run file; one naming the older seal for a version-1 seal
        (its packages and run file are still compared).
    """
    if recorded is None:
        return [Tamper(DIGEST_FILE, "digest", "missing: the dataset was never sealed")]
    seal = _read_seal(recorded)
    if isinstance(seal, str):
        return [Tamper(DIGEST_FILE, "digest", seal)]
    found = compare_packages(seal, now.run, now.packages, now.lines)
    if seal["version"] != DIGEST_VERSION:
        return [Tamper(DIGEST_FILE, "digest", OLDER_SEAL), *found]
    found += _compare_order(seal["packages"], now.packages)
    found += compare_files(seal["files"], now.root, now.compact)
    return found


def compare_packages(
    seal: dict[str, Any],
    run: bytes | None,
    packages: Sequence[TaskPackage],
    lines: Sequence[bytes] | None = None,
) -> list[Tamper]:
    """The run file and each package's fields against a parsed seal (any version)."""
    found: list[Tamper] = []
    if seal.get("run") != (sha256(run) if run is not None else None):
        found.append(Tamper("run.json", "run.json", "differs from the sealed run file"))
    sealed = {e.get("id"): e for e in seal["packages"] if isinstance(e, dict)}
    raw = lines if lines is not None and len(lines) == len(packages) else [None] * len(packages)
    for pkg, line in zip(packages, raw, strict=True):
        found += _compare_package(pkg, sealed.pop(pkg.id, None), line)
    found += [Tamper(str(i), "id", "sealed package is missing from the manifest") for i in sealed]
    return found


def _compare_order(entries: list[Any], packages: Sequence[TaskPackage]) -> list[Tamper]:
    """One ``order`` tamper naming the first package whose place differs from the seal's
    (among packages both have; added or missing ones are reported apart)."""
    sealed = [e.get("id") for e in entries if isinstance(e, dict)]
    present = {p.id for p in packages}
    kept = [i for i in sealed if i in present]
    known = set(kept)
    now = [p.id for p in packages if p.id in known]
    for place, (was, is_) in enumerate(zip(kept, now, strict=False)):
        if was != is_:
            return [
                Tamper(
                    is_,
                    "order",
                    f"manifest line {place + 1} was {was!r} when sealed (manifest reordered)",
                )
            ]
    return []


def compare_files(
    sealed: dict[str, Any], root: Path, compact: Callable[[str], bool]
) -> list[Tamper]:
    """Each file under ``root`` that is not in the sealed listing, missing from it or changed.

    A whole image of a state the seal lists in compact form is accepted when it hashes to its
    name (see the module docstring)."""
    now = file_listing(root)
    found: list[Tamper] = []
    for rel in sorted(set(sealed) | set(now)):
        if rel not in now:
            found.append(Tamper(rel, "file", "missing (it was sealed)"))
        elif rel not in sealed:
            if not _sealed_copy(rel, now[rel], sealed, compact):
                found.append(Tamper(rel, "file", "extra: not in the sealed file listing"))
        elif sealed[rel] != now[rel]:
            found.append(Tamper(rel, "file", "differs from the sealed file"))
    return found


def _sealed_copy(
    rel: str, digest: str, sealed: dict[str, Any], compact: Callable[[str], bool]
) -> bool:
    """True for a whole image ``states/<d>.sqlite`` whose bytes hash to ``d`` when ``d`` is
    stored compressed or as a delta in sealed files (the same state, made whole for tools)."""
    match = _WHOLE_STATE.fullmatch(rel)
    if match is None or match.group(1) != digest:
        return False
    packs = any(k.startswith("states/") and k.endswith(".pack") for k in sealed)
    return (f"states/{digest}.sqlite.z" in sealed or packs) and compact(digest)


def _compare_package(
    pkg: TaskPackage, entry: dict[str, Any] | None, line: bytes | None
) -> Iterator[Tamper]:
    if entry is None:
        yield Tamper(pkg.id, "id", "package is not in the sealed dataset (added or renamed)")
        return
    if line is not None and "line" in entry and sha256(line) == entry["line"]:
        return  # the line as sealed: every field is as sealed
    fields = entry.get("fields", {})
    fields = fields if isinstance(fields, dict) else {}
    now = field_hashes(pkg)
    for name in sorted(set(now) | set(fields)):
        if now.get(name) != fields.get(name):
            yield Tamper(pkg.id, name, "differs from the sealed value")


_SCHEMA_SQL = "SELECT type, name, coalesce(sql, '') FROM sqlite_master"
_SCHEMA_ROOTS_SQL = "SELECT type, name, coalesce(sql, ''), rootpage FROM sqlite_master"


def _read_schema(conn: sqlite3.Connection, image: bytes) -> list[tuple[str, str, str]]:
    conn.deserialize(image)
    rows = conn.execute(_SCHEMA_SQL).fetchall()
    return sorted((str(t), str(n), str(s)) for t, n, s in rows)


def schema_of(image: bytes) -> list[tuple[str, str, str]]:
    """``(type, name, sql)`` of every schema object of a SQLite image, sorted.

    Raises:
        sqlite3.Error: The bytes are not a SQLite image.
    """
    conn = sqlite3.connect(":memory:")
    try:
        return _read_schema(conn, image)
    finally:
        conn.close()


def reference_schema(compiled: CompiledDomain) -> list[tuple[str, str, str]]:
    """The schema every state of a domain must have: the one its spec compiles to."""
    env = Environment(compiled)
    try:
        return schema_of(env.snapshot().data)
    finally:
        env.close()


_ROOTS_SQL = "SELECT name, rootpage FROM sqlite_master WHERE rootpage > 0"


def _cookie(image: bytes) -> int:
    return int.from_bytes(image[40:44], "big")


@dataclass(frozen=True)
class RootPages:
    """Where a domain's images keep each table and index, under which schema cookie.

    SQLite re-prepares a cached statement only when the schema cookie changes, and a prepared
    statement reads each table at the root page it was prepared with: an image with the spec's
    cookie must keep every table where the spec's images do, or the engine would read other
    pages (design note 0033). An image with another cookie is read afresh by SQLite."""

    cookie: int
    roots: dict[str, int]

    @classmethod
    def of(cls, compiled: CompiledDomain) -> RootPages:
        """The root pages of the images ``compiled``'s spec builds (read from its seed image)."""
        conn = sqlite3.connect(":memory:")
        try:
            conn.deserialize(compiled.seed)
            roots = {str(n): int(p) for n, p in conn.execute(_ROOTS_SQL)}
        finally:
            conn.close()
        return cls(_cookie(compiled.seed), roots)

    def moved(self, image: bytes, rows: Iterable[Sequence[Any]]) -> list[str]:
        """The tables and indexes ``rows`` (``name, rootpage`` pairs of ``image``) keep at
        other pages under this cookie (empty under another cookie)."""
        if _cookie(image) != self.cookie:
            return []
        return sorted(str(n) for n, p in rows if p and self.roots.get(str(n)) != p)


def _hash_problem(data: bytes, name: str) -> str | None:
    if sha256(data) != name:
        return f"state {name[:12]}… does not hash to its name (the file was edited)"
    return None


def _schema_problem(
    name: str, found: list[tuple[str, str, str]], schema: list[tuple[str, str, str]]
) -> str | None:
    if found != schema:
        changed = sorted({n for _, n, _ in set(found) ^ set(schema)})
        return f"state {name[:12]}… has another schema than the spec's ({', '.join(changed)})"
    return None


def state_problem(data: bytes, name: str, schema: list[tuple[str, str, str]] | None) -> str | None:
    """Why a stored state cannot be trusted (None when it can).

    Args:
        data: The state file's bytes.
        name: The sha256 the file is named by.
        schema: The domain's reference schema, or None when the domain cannot be loaded.
    """
    problem = _hash_problem(data, name)
    if problem is not None or schema is None:
        return problem
    try:
        found = schema_of(data)
    except sqlite3.Error as exc:
        return f"state {name[:12]}… is not a SQLite image: {exc}"
    return _schema_problem(name, found, schema)


class StateVerifier:
    """``state_problem`` for the many states of one domain, at a fraction of its cost.

    Three things make the per-state check cheap without trusting anything more:

    - The schema is read on one connection that every image is deserialized into. A fresh
      connection parses the whole schema (every table, index and trigger) before its first
      query; this one keeps its parse while images carry the same schema cookie, and
      ``sqlite_master`` is still read from each image's own pages, so what is compared is what
      the image holds.
    - ``sqlite_master``'s rows, in the order the image stores them, are first compared as they
      come with those of an image already found to have the spec's schema: equal lists are
      equal sorted lists. Anything else (or an error) is sorted and compared as before, so the
      verdicts and messages are the same.
    - Verdicts are kept by content digest: a state's bytes are hashed on every call and the
      cached verdict is used only for the digest they actually hash to, so it can never stand
      for other bytes under the same name.
    """

    def __init__(self, schema: list[tuple[str, str, str]], roots: RootPages | None = None) -> None:
        self.schema = schema
        self.roots = roots
        self._conn: sqlite3.Connection | None = None
        self._verdicts: dict[str, str | None] = {}
        self._schema_keys: OrderedDict[str, SchemaKey | None] = OrderedDict()
        self._good_rows: list[Any] | None = None
        self._loaded: bytes | None = None

    def problem(self, data: bytes, name: str, like: str | None = None) -> str | None:
        """Why the state ``data``, stored as ``name``, cannot be trusted (None when it can).

        ``like`` names a state this one was reached from (its origin): when that state was
        found to have the spec's schema by reading it, and ``data`` has every byte that schema
        is read from equal to it, the schema is not read again (``has_schema``). A state
        checked without ``like`` and found good keeps its ``SchemaKey`` for that."""
        problem = _hash_problem(data, name)
        if problem is not None:
            return problem
        if name not in self._verdicts:  # name == sha256(data) here
            key = self._key_of(like)
            if key is not None and has_schema(data, key):
                self._verdicts[name] = None
            else:
                self._verdicts[name] = verdict = self._check_schema(data, name)
                if verdict is None and like is None:
                    self._keep_key(name, schema_key(data))
        return self._verdicts[name]

    def _key_of(self, name: str | None) -> SchemaKey | None:
        """The kept ``SchemaKey`` of a good state, if any (marked as recently used)."""
        key = self._schema_keys.get(name) if name is not None else None
        if key is not None and name is not None:
            self._schema_keys.move_to_end(name)
        return key

    def _keep_key(self, name: str, key: SchemaKey | None) -> None:
        """Keep a good state's ``SchemaKey`` (the ``_KEYS_KEPT`` most recent ones)."""
        self._schema_keys[name] = key
        if len(self._schema_keys) > _KEYS_KEPT:
            self._schema_keys.popitem(last=False)

    def connection(self) -> sqlite3.Connection:
        """The shared connection (opened on first use), for other reads of this domain's
        images: whoever uses it deserializes their image first."""
        self._loaded = None
        return self._open()

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(":memory:")
        return self._conn

    def _holding(self, data: bytes) -> sqlite3.Connection:
        """The connection with ``data`` deserialized into it (unless it holds it already)."""
        conn = self._open()
        if self._loaded is not data:
            self._loaded = None
            conn.deserialize(data)
            self._loaded = data
        return conn

    def _check_schema(self, data: bytes, name: str) -> str | None:
        try:
            rows = self._holding(data).execute(_SCHEMA_ROOTS_SQL).fetchall()
        except sqlite3.Error as exc:
            self.close()  # start the next image on a fresh connection
            return f"state {name[:12]}… is not a SQLite image: {exc}"
        if rows == self._good_rows:
            return None
        found = sorted((str(t), str(n), str(s)) for t, n, s, _ in rows)
        problem = _schema_problem(name, found, self.schema)
        moved = self.roots.moved(data, ((n, p) for _, n, _, p in rows)) if self.roots else []
        if problem is None and moved:
            problem = (
                f"state {name[:12]}… has another schema than the spec's "
                f"({', '.join(moved)} at other pages under the same schema cookie)"
            )
        if problem is None and all(type(v) in (str, int) for row in rows for v in row):
            self._good_rows = rows
        return problem

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        self._loaded = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
