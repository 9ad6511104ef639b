"""Seed rows kept in JSON data files that a spec names (``seed_files``).

A spec's own text is limited to ``MAX_SPEC_BYTES``: that bounds the YAML a reader composes
(rules, tables, tools), and YAML is slow to read. A domain imported from an existing database
(τ²-bench's airline: 26,554 rows, 7.2 MB of YAML) needs more seed data than that. Such a spec
names data files instead of listing the rows inline::

    seed_files:
      - path: seed.json          # relative to the spec's folder, inside it
        sha256: 3f1c...          # of the file's bytes

Each file is one JSON object ``{table: [row, ...]}`` read with the bounded JSON reader, at
most ``MAX_SEED_FILE_BYTES`` bytes, ``MAX_SEED_FILES`` files per spec. Its rows follow the
spec's inline ``seed`` rows of the same table, file by file. The digest pins the data to the
spec's text (a changed file is refused, so a spec parsed once per text stays right), and the
loaded ``DomainSpec`` is the same as if the rows were inline: same fields, same ``spec_hash``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from veritask._util import InputError, Limits, atomic_write, parse_json, read_bytes

SEED_FILES_KEY = "seed_files"
MAX_SEED_FILE_BYTES = 128_000_000
"""The largest seed data file accepted (τ²-bench's airline database is 7.7 MB as rows)."""
MAX_SEED_FILES = 16
"""The most seed data files one spec may name."""
SEED_FILE_LIMITS = Limits(
    max_bytes=MAX_SEED_FILE_BYTES, max_depth=8, max_expanded=MAX_SEED_FILE_BYTES
)


class SeedFileError(ValueError):
    """A ``seed_files`` entry cannot be used; ``index`` is its position in the list."""

    def __init__(self, index: int | None, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def _entry_path(index: int, entry: Any) -> tuple[str, str]:
    if not isinstance(entry, dict) or set(entry) != {"path", "sha256"}:
        raise SeedFileError(index, "an entry is a mapping with exactly 'path' and 'sha256'")
    path, digest = entry["path"], entry["sha256"]
    if not isinstance(path, str) or not isinstance(digest, str):
        raise SeedFileError(index, "'path' and 'sha256' are strings")
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or ".." in parts or "\\" in path:
        raise SeedFileError(index, f"{path!r} is not a relative path inside the spec's folder")
    return path, digest


def seed_file_paths(data: dict[str, Any]) -> list[str]:
    """The relative paths of the seed files spec data names (checked, not read).

    Raises:
        SeedFileError: The entry list is malformed.
    """
    entries = data.get(SEED_FILES_KEY)
    if entries is None:
        return []
    if not isinstance(entries, list) or len(entries) > MAX_SEED_FILES:
        raise SeedFileError(None, f"a list of at most {MAX_SEED_FILES} entries")
    return [_entry_path(i, e)[0] for i, e in enumerate(entries)]


def _read_one(base: Path, index: int, entry: Any) -> dict[str, list[Any]]:
    path, digest = _entry_path(index, entry)
    file = base / path
    try:
        raw = read_bytes(file, what=path, limits=SEED_FILE_LIMITS)
    except OSError as exc:
        raise SeedFileError(index, f"cannot read {path}: {exc.strerror or exc}") from None
    except InputError as exc:
        raise SeedFileError(index, f"{path}: {exc.reason}") from None
    if hashlib.sha256(raw).hexdigest() != digest:
        raise SeedFileError(index, f"{path} is not the file the spec names (sha256 differs)")
    try:
        rows = parse_json(raw, what=path, limits=SEED_FILE_LIMITS)
    except InputError as exc:
        raise SeedFileError(index, f"{path}: {exc.reason}") from None
    if not isinstance(rows, dict) or not all(isinstance(v, list) for v in rows.values()):
        raise SeedFileError(index, f"{path} is not a JSON object of row lists by table")
    return rows


def merge_seed_files(data: dict[str, Any], base: Path | None) -> None:
    """Replace ``seed_files`` in spec data by the rows they hold (appended to ``seed``).

    Args:
        data: Spec data as parsed from YAML; changed in place.
        base: The spec file's folder, or None when the text has no file (then a spec that
            names seed files is refused).

    Raises:
        SeedFileError: An entry is malformed, a file is missing, too large, changed, or not
            rows by table.
    """
    if SEED_FILES_KEY not in data:
        return
    entries = data.pop(SEED_FILES_KEY)
    seed_file_paths({SEED_FILES_KEY: entries})
    if base is None:
        raise SeedFileError(None, "seed files are read relative to a spec file; load it by path")
    seed = data.get("seed")
    merged: dict[str, list[Any]] = dict(seed) if isinstance(seed, dict) else {}
    for index, entry in enumerate(entries):
        for table, rows in _read_one(base, index, entry).items():
            merged[table] = [*merged.get(table, []), *rows]
    data["seed"] = merged


def write_seed_file(
    rows: dict[str, list[dict[str, Any]]], folder: Path, name: str
) -> dict[str, str]:
    """Write seed rows as a data file in ``folder``; return the spec's entry naming it.

    The JSON keeps the given order of tables, rows and fields, so the same rows give the same
    bytes and the same digest.
    """
    text = json.dumps(rows, sort_keys=False, ensure_ascii=False, separators=(",", ":"))
    data = (text + "\n").encode("utf-8")
    atomic_write(folder / name, data)
    return {"path": name, "sha256": hashlib.sha256(data).hexdigest()}


def copy_seed_files(spec_file: Path, text: str, folder: Path) -> None:
    """Copy the seed files the spec text names from beside ``spec_file`` into ``folder``.

    Used where a copy of a spec is kept elsewhere (a dataset keeps its domain's spec), so the
    copy finds its data. Texts that name none copy nothing.
    """
    if SEED_FILES_KEY not in text:
        return
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        return
    for rel in seed_file_paths(data):
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec_file.parent / rel, target)
