"""Rebuilding a veritask dataset directory from a task dataset in the Hub's format.

The rows are loaded with ``datasets.load_dataset`` (a local folder or a Hub repo id). Every
state's bytes must hash to its name and every policy's text to its; every task is compared with
the seal the dataset was exported with (note 0041's per-package line and field hashes), and an
edited task is refused unless the caller accepts edits. The directory is then written the way
``generate`` writes one (a part, compacted states, the manifest) and sealed anew: the new seal
only covers what was imported, and ``veritask check`` replays every witness again, so no
certificate is taken on trust.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from veritask._util import (
    InputError,
    atomic_write,
    canonical_json,
    decompress,
    loads_untrusted,
    sha256,
    sha256_text,
)
from veritask.export._hf import package_of
from veritask.export._hf_layout import (
    FILES,
    MAX_IMAGE_BYTES,
    POLICIES,
    SPLIT,
    STATES,
    TASKS,
    HubFormatError,
    require_datasets,
)
from veritask.task import DatasetDir, TaskPackage

SEAL = "digest.json"
_FIELD_HASH = 16
"""Hex digits of a field hash in a seal (as ``veritask.task`` writes them)."""
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
"""A Hub repo id, ``user/name``: a source that is not an existing folder must look like one."""
_REBUILT_FOLDERS = ("states", "policies", "parts")
_REBUILT_FILES = ("manifest.jsonl", "run-manifest.json")


@dataclass
class Imported:
    """What :func:`import_hf` rebuilt.

    Attributes:
        out: The dataset directory.
        tasks: Packages written.
        states: States written.
        seal: ``"matched"`` (every task as exported), ``"edited"`` (edits accepted) or
            ``"absent"`` (the dataset carried no seal).
        edits: One line per task that differs from the exported seal.
    """

    out: Path
    tasks: int
    states: int
    seal: str
    edits: list[str] = field(default_factory=list)


def _load(source: str, config: str, cache_dir: str | None) -> Any:
    """One config's ``train`` split, loaded by ``datasets`` (which also checks the row counts
    against the card).

    Raises:
        HubFormatError: Whatever the loader raised, in one line. The loader reads data from
            anywhere and raises many types (Arrow, file, network, verification errors).
    """
    datasets = require_datasets()
    try:
        return datasets.load_dataset(source, config, split=SPLIT, cache_dir=cache_dir)
    except Exception as exc:  # a library boundary: any error becomes one line
        why = str(exc).splitlines()[0][:300] if str(exc) else ""
        raise HubFormatError(
            f"{source}: cannot load its '{config}' config as a task dataset: "
            f"{type(exc).__name__}: {why}"
        ) from None


def _source(source: str | Path) -> str:
    """``source`` as ``load_dataset`` takes it: an existing folder, or a Hub repo id.

    Raises:
        HubFormatError: Neither (a path that does not exist is never sent to the Hub).
    """
    text = str(source)
    if Path(text).exists() or (isinstance(source, str) and _REPO_ID.fullmatch(text)):
        return text
    raise HubFormatError(f"{text} does not exist (give a folder or a Hub repo id, user/name)")


def _packages(rows: Any) -> list[TaskPackage]:
    ordered = sorted(rows, key=lambda r: r["index"])
    packages = []
    for row in ordered:
        try:
            packages.append(package_of(row))
        except (ValidationError, ValueError, KeyError) as exc:
            first = str(exc).splitlines()[0]
            raise HubFormatError(
                f"task row {row.get('id')!r}: not a task package: {first}"
            ) from None
    return packages


def _safe_path(rel: str) -> None:
    """Refuse a carried path that leaves the directory or names a file the rebuild makes."""
    path = PurePosixPath(rel)
    outside = path.is_absolute() or ".." in path.parts or "\\" in rel or "\x00" in rel
    rebuilt = not path.parts or path.parts[0] in _REBUILT_FOLDERS or rel in _REBUILT_FILES
    if outside or rebuilt:
        raise HubFormatError(f"files: {rel!r} is not a file a task dataset carries")


def _files(rows: Any) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for row in rows:
        if not isinstance(row["data"], bytes) or not isinstance(row["path"], str):
            raise HubFormatError(f"files: a row without a path and bytes: {row['path']!r}")
        data = row["data"]
        if row["path"] != SEAL:
            _safe_path(row["path"])
        if sha256(data) != row["sha256"]:
            raise HubFormatError(f"files: {row['path']}: its bytes do not hash to its sha256")
        found[row["path"]] = data
    return found


def _field_hashes(pkg: TaskPackage) -> dict[str, str]:
    data = pkg.model_dump(mode="json")
    return {k: sha256_text(canonical_json(v))[:_FIELD_HASH] for k, v in data.items()}


def _seal_entries(data: bytes) -> list[dict[str, Any]]:
    """The package entries of an exported seal whose own digest holds."""
    try:
        seal = loads_untrusted(data)
        body = {k: v for k, v in seal.items() if k != "digest"}
        entries = seal["packages"]
    except (ValueError, AttributeError, KeyError, TypeError):
        raise HubFormatError("files: digest.json is not a dataset seal") from None
    if seal.get("digest") != sha256_text(canonical_json(body)) or not isinstance(entries, list):
        raise HubFormatError("files: digest.json was edited (its own digest does not match)")
    return [e for e in entries if isinstance(e, dict)]


def compare_with_seal(packages: list[TaskPackage], seal: bytes) -> list[str]:
    """One line per task that differs from the exported seal (order, line, fields).

    Raises:
        HubFormatError: The seal is not one, or was edited itself.
    """
    entries = _seal_entries(seal)
    edits = []
    if len(entries) != len(packages):
        edits.append(f"the seal lists {len(entries)} tasks, the dataset has {len(packages)}")
    for pkg, entry in zip(packages, entries, strict=False):
        if entry.get("id") != pkg.id:
            edits.append(f"{pkg.id}: the seal has {entry.get('id')!r} in its place")
            continue
        if entry.get("line") == sha256(pkg.model_dump_json().encode("utf-8")):
            continue
        sealed = entry.get("fields") or {}
        changed = [k for k, v in _field_hashes(pkg).items() if sealed.get(k) != v]
        edits.append(f"{pkg.id}: differs from the exported seal in {', '.join(changed) or 'form'}")
    return edits


def _write_states(ds: DatasetDir, rows: Any) -> int:
    count = 0
    for row in rows:
        try:
            image = decompress(
                bytes(row["image_zlib"]), what=f"state {row['sha256']}", max_size=MAX_IMAGE_BYTES
            )
        except (InputError, TypeError) as exc:
            raise HubFormatError(f"states: {exc}") from None
        if sha256(image) != row["sha256"]:
            raise HubFormatError(f"states: {row['sha256'][:12]}…: the image does not hash to it")
        ds.put_state(image)
        count += 1
    return count


def _write_policies(ds: DatasetDir, rows: Any) -> None:
    for row in rows:
        if not isinstance(row["text"], str) or ds.put_policy(row["text"]) != row["sha256"]:
            raise HubFormatError(f"policies: {row['sha256'][:12]}…: the text does not hash to it")


def _fresh(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise HubFormatError(f"{out} exists and is not an empty directory; choose another --out")


def import_hf(
    source: str | Path,
    out: str | Path,
    *,
    accept_edits: bool = False,
    cache_dir: str | Path | None = None,
) -> Imported:
    """Rebuild a veritask dataset directory from a task dataset in the Hub's format.

    Args:
        source: A folder ``export_hf`` wrote, or a Hub repo id (``load_dataset`` fetches it).
        out: The directory to write (must not exist, or be empty).
        accept_edits: Rebuild even when tasks differ from the exported seal (``check`` then
            judges them); by default such a dataset is refused and nothing is written.
        cache_dir: The ``datasets`` cache to load through (default: the user's).

    Returns:
        What was written, and the tasks that differ from the exported seal.

    Raises:
        HubFormatError: The source is not a task dataset in the Hub's format, a state or policy
            does not hash to its name, or tasks were edited (without ``accept_edits``).
    """
    src = _source(source)
    if cache_dir is None and Path(src).is_dir():
        # a folder is read through a cache of its own: the user's cache is keyed by the
        # folder's path, and a folder re-exported at the same path would come back stale
        with tempfile.TemporaryDirectory(prefix="veritask-hf-") as private:
            return _import(src, Path(out), accept_edits, private)
    return _import(src, Path(out), accept_edits, None if cache_dir is None else str(cache_dir))


def _import(src: str, dest: Path, accept_edits: bool, cache: str | None) -> Imported:
    """:func:`import_hf` once the source and the cache are settled."""
    _fresh(dest)
    packages = _packages(_load(src, TASKS, cache))
    carried = _files(_load(src, FILES, cache))
    seal = carried.pop(SEAL, None)
    edits = [] if seal is None else compare_with_seal(packages, seal)
    if edits and not accept_edits:
        shown = "\n  ".join(edits[:20])
        raise HubFormatError(f"{len(edits)} tasks differ from the exported seal:\n  {shown}")
    policies, states = _load(src, POLICIES, cache), _load(src, STATES, cache)
    _require_referenced(packages, set(policies["sha256"]), set(states["sha256"]))
    made = not dest.exists()
    try:
        count = _write(DatasetDir(dest), packages, carried, policies, states)
    except BaseException:  # a half-written directory is no dataset: leave it as it was
        shutil.rmtree(dest, ignore_errors=True)
        if not made:
            dest.mkdir()
        raise
    verdict = "absent" if seal is None else ("edited" if edits else "matched")
    return Imported(dest, len(packages), count, verdict, edits)


def _require_referenced(packages: list[TaskPackage], policies: set[str], states: set[str]) -> None:
    """Every state and policy a task names is among the rows.

    Raises:
        HubFormatError: Naming the first task that names a missing one.
    """
    for pkg in packages:
        for what, digest, found in (
            ("origin state", pkg.origin, states),
            ("target state", pkg.target, states),
            ("policy", pkg.policy, policies),
        ):
            if digest not in found:
                raise HubFormatError(f"{pkg.id}: its {what} {digest[:12]}… is not in the dataset")


def _write(
    ds: DatasetDir,
    packages: list[TaskPackage],
    carried: dict[str, bytes],
    policies: Any,
    states: Any,
) -> int:
    """Write the directory as ``generate`` does and seal it; return how many states."""
    for rel, data in carried.items():
        atomic_write(ds.root / rel, data)
    _write_policies(ds, policies)
    count = _write_states(ds, states)
    ds.write_part(0, packages)
    ds.assemble(1, len(packages))
    return count
