"""Moving datasets: compact an older directory in place, pack a directory into one file and back.

``compact_dataset`` turns a dataset made before compact storage (every state a whole SQLite
image) into the compact layout: each target a delta from its origin, origins compressed. The
manifest and every package field stay as they were, so certificates keep their meaning; the
seal is written again over the new files, after its packages, their order and ``run.json``
were found as sealed. ``pack_dataset`` writes the directory as one gzip-compressed tar file with fixed
metadata (the same directory gives the same bytes); ``unpack_dataset`` restores it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from veritask.task._compact import PackError, extract_archive, write_archive
from veritask.task._dataset import DatasetDir, DatasetError, load_dataset
from veritask.task._integrity import OLDER_SEAL, Dataset, compare_seal
from veritask.task._package import TaskPackage


def compact_dataset(root: str | Path) -> int:
    """Store the targets of a dataset as deltas from their origins; return how many changed.

    Packages are compacted one origin at a time (one pack per scene). Whole images that stay
    (materialized copies of states already stored compactly) are removed.

    Raises:
        DatasetError: The manifest is invalid or refers to missing states.
    """
    ds = DatasetDir(Path(root))
    packages = load_dataset(ds.root)
    _refuse_tampered(ds, packages)
    by_origin: dict[str, list[TaskPackage]] = defaultdict(list)
    for pkg in packages:
        by_origin[pkg.origin].append(pkg)
    changed = sum(ds.compact(group) for _, group in sorted(by_origin.items()))
    _drop_redundant_copies(ds)
    ds.seal(packages)  # the files changed; the packages and their order are as sealed
    return changed


def _refuse_tampered(ds: DatasetDir, packages: list[TaskPackage]) -> None:
    """Compacting seals the directory again: refuse one whose packages, their order, its run
    file or (for a current seal) its files differ from its seal, so a new seal never covers an
    edit. A version-1 seal is compared on its packages and run file."""
    recorded = ds.digest_path.read_text("utf-8", "replace") if ds.digest_path.exists() else None
    run_path = ds.root / "run.json"
    run = run_path.read_bytes() if run_path.exists() else None
    lines = ds.manifest.read_bytes().splitlines()
    now = Dataset(ds.root, run, packages, lines, ds.stored_compactly)
    found = [t for t in compare_seal(recorded, now) if t.detail != OLDER_SEAL]
    if found:
        raise DatasetError([f"{t.subject}: {t.describe()}" for t in found])


def _drop_redundant_copies(ds: DatasetDir) -> None:
    """Remove whole images whose state is also stored compactly (materialized copies)."""
    for path in sorted((ds.root / "states").glob("*.sqlite")):
        if ds.stored_compactly(path.name.removesuffix(".sqlite")):
            path.unlink()


def pack_dataset(root: str | Path, out: str | Path) -> int:
    """Write a dataset directory as a single archive file; return how many files it holds.

    Raises:
        DatasetError: ``root`` is not a valid dataset directory.
    """
    ds = DatasetDir(Path(root))
    load_dataset(ds.root)
    return write_archive(ds.root, Path(out))


def unpack_dataset(archive: str | Path, root: str | Path) -> int:
    """Restore a dataset directory from an archive written by :func:`pack_dataset`.

    Raises:
        PackError: ``root`` already holds a dataset, or the archive is not a dataset archive.
    """
    dest = Path(root)
    if (dest / "manifest.jsonl").exists():
        raise PackError(f"{dest} already holds a dataset; unpack into a new directory")
    dest.mkdir(parents=True, exist_ok=True)
    count = extract_archive(Path(archive), dest)
    load_dataset(dest)
    return count
