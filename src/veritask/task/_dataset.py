"""Dataset directories: a manifest of packages plus content-addressed states and policies.

Layout::

    DIR/run.json                  what was asked for (domain, n, seed, generator, spec hash)
    DIR/manifest.jsonl            one TaskPackage per line, in task-index order
    DIR/states/                   every state once, content-addressed (origins are shared by
                                  the tasks of a scene): ``<sha256>.sqlite.z`` compressed origins,
                                  ``<sha256>.pack`` page deltas of each unit's targets from their
                                  origins, ``<sha256>.sqlite`` full images (older datasets, and
                                  copies materialized for tools that open files)
    DIR/policies/<sha256>.md      the wiki policy text
    DIR/parts/<unit>.jsonl.gz     finished work units; the manifest is assembled from them
    DIR/costs/<unit>.json         what each unit spent on model calls, per module (LLM mode only)
    DIR/digest.json               the seal: hashes of run.json, of every package field (in
                                  manifest order) and of every other file
    DIR/spec.yaml                 the domain spec, when the run was given a spec file (not a
                                  built-in name): readers load the domain from it

Every file is written to a temporary name and renamed into place, so a run killed at any moment
leaves only whole files behind and a rerun skips the units already present. States are written
whole by ``put_state``; when a unit's part is written, its targets become deltas in one pack and
its origins are compressed (see ``veritask.task._compact`` and
``docs/design/0025-compact-datasets-and-scale.md``).
"""

from __future__ import annotations

import gc
import gzip
import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veritask._util import atomic_write, decode_text, decompress, read_json, sha256
from veritask.domains import load_domain
from veritask.policy import DomainSpec, render_wiki
from veritask.task._compact import (
    PACK_SUFFIX,
    ZIP_SUFFIX,
    PackEntry,
    PackError,
    compress_image,
    decompress_image,
    make_runs_delta,
    pack_bytes,
    read_pack_index,
)
from veritask.task._integrity import DIGEST_FILE, write_seal
from veritask.task._package import TaskPackage

_CACHE_BYTES = 64 << 20
"""Decoded states kept in memory per directory, in bytes (origins serve a scene's tasks)."""
SPEC_FILE = "spec.yaml"
"""The copy of the domain spec in a dataset generated from a spec file."""
_PACK_HELD_BYTES = 64 << 20
"""Packs up to this size are read whole once and their delta bodies cut from memory."""


class DatasetError(ValueError):
    """A dataset directory is not valid; ``problems`` says where and why."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"invalid dataset:\n{shown}{more}")


@dataclass
class DatasetDir:
    """Reading and writing the files of one dataset directory."""

    root: Path
    _packs: dict[str, PackEntry] | None = field(default=None, init=False, repr=False, compare=False)
    _cache: OrderedDict[str, bytes] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    _cache_bytes: int = field(default=0, init=False, repr=False, compare=False)
    _listing: set[str] | None = field(default=None, init=False, repr=False, compare=False)
    _pack_files: dict[Path, bytes] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _policies: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root = Path(state["root"])
        self._packs = None
        self._cache = OrderedDict()
        self._cache_bytes = 0
        self._listing = None
        self._pack_files = {}
        self._policies = {}

    @property
    def manifest(self) -> Path:
        """Path of the manifest."""
        return self.root / "manifest.jsonl"

    def state_path(self, digest: str) -> Path:
        """Where the full image of the state with this sha256 lives (when it is stored whole)."""
        return self.root / "states" / f"{digest}.sqlite"

    def compressed_path(self, digest: str) -> Path:
        """Where the compressed image of the state with this sha256 lives (origins)."""
        return self.root / "states" / f"{digest}{ZIP_SUFFIX}"

    def policy_path(self, digest: str) -> Path:
        """Where the policy text with this sha256 lives."""
        return self.root / "policies" / f"{digest}.md"

    def part_path(self, unit: int) -> Path:
        """Where the packages of one work unit are kept (gzip-compressed JSON lines)."""
        return self.root / "parts" / f"unit-{unit:06d}.jsonl.gz"

    def _legacy_part_path(self, unit: int) -> Path:
        return self.root / "parts" / f"unit-{unit:06d}.jsonl"

    def costs_path(self, unit: int) -> Path:
        """Where the model spending of one work unit lives (LLM mode)."""
        return self.root / "costs" / f"unit-{unit:06d}.json"

    def write_costs(self, unit: int, ledger: dict[str, Any]) -> None:
        """Atomically record one unit's spending (a ``CostLedger.to_json()``); written before
        the unit's part, so a finished unit always has its costs and a rerun overwrites them."""
        body = json.dumps(ledger, indent=2, sort_keys=True) + "\n"
        atomic_write(self.costs_path(unit), body.encode("utf-8"))

    def read_costs(self, unit: int) -> dict[str, Any] | None:
        """One unit's recorded spending, or None when it has none (symbolic runs)."""
        path = self.costs_path(unit)
        if not path.exists():
            return None
        data: dict[str, Any] = read_json(path)
        return data

    def put_state(self, data: bytes) -> str:
        """Store a state once (whole, until its unit's part is written); return its sha256."""
        digest = sha256(data)
        path = self.state_path(digest)
        if not path.exists() and not self.compressed_path(digest).exists():
            atomic_write(path, data)
            self._wrote(path)
        return digest

    def _pack_index(self) -> dict[str, PackEntry]:
        """Every delta of every pack in ``states/``, by target digest (read once)."""
        if self._packs is None:
            index: dict[str, PackEntry] = {}
            folder = self.root / "states"
            for path in sorted(folder.glob(f"*{PACK_SUFFIX}")) if folder.is_dir() else []:
                try:
                    index.update(read_pack_index(path))
                except OSError:  # an unreadable pack: its targets are reported missing
                    continue
            self._packs = index
        return self._packs

    def has_state(self, digest: str) -> bool:
        """True when the state is stored in any form (whole, compressed or as a delta)."""
        names = self._stored_names()
        return (
            f"{digest}.sqlite" in names
            or f"{digest}{ZIP_SUFFIX}" in names
            or digest in self._pack_index()
            or self.state_path(digest).exists()
            or self.compressed_path(digest).exists()
        )

    def put_policy(self, text: str) -> str:
        """Store a policy text once; return its sha256."""
        data = text.encode("utf-8")
        digest = sha256(data)
        path = self.policy_path(digest)
        if not path.exists():
            atomic_write(path, data)
        return digest

    def stored_compactly(self, digest: str) -> bool:
        """True when the state is stored compressed or as a delta (not only whole)."""
        return self.compressed_path(digest).exists() or digest in self._pack_index()

    def read_state(self, digest: str, keep: bool = True) -> bytes:
        """The full image of a stored state, rebuilt from its delta or decompressed if need be.

        The bytes are returned as stored; ``check`` verifies that they hash to ``digest``.

        Args:
            digest: The state's sha256 (its name).
            keep: Keep the image in this directory's cache of recently read states. A state
                read once (a target, as ``check`` reads it) is better not kept: the cache
                holds images that serve many reads (origins, and the bases of deltas).

        Raises:
            FileNotFoundError: The state is not stored.
            PackError: Its compressed form or delta cannot be decoded (an ``OSError``).
        """
        found = self._cache.get(digest)
        if found is not None:
            self._cache.move_to_end(digest)
            return found
        data = self._load_state(digest)
        if not keep:
            return data
        self._cache[digest] = data
        self._cache_bytes += len(data)
        while self._cache_bytes > _CACHE_BYTES and len(self._cache) > 1:
            self._cache_bytes -= len(self._cache.popitem(last=False)[1])
        return data

    def _stored_names(self) -> set[str]:
        """File names in ``states/`` when first asked, plus those this object wrote since
        (see ``_load_state``)."""
        if self._listing is None:
            folder = self.root / "states"
            self._listing = set(os.listdir(folder)) if folder.is_dir() else set()
        return self._listing

    def _wrote(self, path: Path) -> None:
        if self._listing is not None:
            self._listing.add(path.name)

    def _load_state(self, digest: str) -> bytes:
        """The state read from its whole image, its compressed image or its delta, in this order.

        A state listed in ``states/`` when first asked is read from that file; one in a pack
        is rebuilt without asking the file system for the two names it has not got. Only a
        state in neither is looked for on disk again (it may have been written since).
        """
        names = self._stored_names()
        whole, packed = f"{digest}.sqlite", digest in self._pack_index()
        zipped = f"{digest}{ZIP_SUFFIX}"
        if not packed or whole in names or zipped in names:
            for path, decode in (
                (self.state_path(digest), None),
                (self.compressed_path(digest), decompress_image),
            ):
                try:
                    raw = path.read_bytes()
                except FileNotFoundError:
                    continue
                return raw if decode is None else decode(raw)
        entry = self._pack_index().get(digest)
        if entry is None:
            raise FileNotFoundError(f"state {digest} is not in {self.root / 'states'}")
        if entry.base == digest:
            raise PackError(f"state {digest[:12]}… is a delta from itself")
        base = self.read_state(entry.base)
        return entry.rebuild(base, self._body(entry))

    def _body(self, entry: PackEntry) -> bytes | None:
        """A delta's compressed body, cut from its pack file read whole once (packs are named
        by their content's sha256, so the bytes cannot go stale). None for a pack larger than
        ``_PACK_HELD_BYTES``: its bodies are read one by one."""
        data = self._pack_files.get(entry.path)
        if data is None:
            if entry.path.stat().st_size > _PACK_HELD_BYTES:
                return None
            data = self._pack_files[entry.path] = entry.path.read_bytes()
        return data[entry.offset : entry.offset + entry.length]

    def materialize(self, digest: str) -> Path:
        """Write the full image of a state as ``states/<sha256>.sqlite`` (for tools that open
        files) unless it is there already; return its path."""
        path = self.state_path(digest)
        if not path.exists():
            atomic_write(path, self.read_state(digest))
            self._wrote(path)
        return path

    def compact(self, packages: Iterable[TaskPackage]) -> int:
        """Store the targets of ``packages`` as deltas from their origins (one pack) and their
        origins compressed; return how many targets became deltas.

        Only states stored whole are touched. Each delta is applied and compared with the whole
        image before that image is removed, so a state is never lost.
        """
        pkgs = list(packages)
        origins = {p.origin for p in pkgs}
        deltas = []
        for pkg in pkgs:
            path = self.state_path(pkg.target)
            if pkg.target in origins or not path.exists():
                continue
            base, target = self.read_state(pkg.origin), path.read_bytes()
            delta = make_runs_delta(pkg.origin, base, target)
            if delta.apply(base) == target:
                deltas.append(delta)
        if deltas:
            body = pack_bytes(deltas)
            atomic_write(self.root / "states" / f"{sha256(body)}{PACK_SUFFIX}", body)
            self._packs = None
            self._pack_files = {}
        for origin in sorted(origins):
            self._compress(origin)
        for delta in deltas:
            self.state_path(delta.target).unlink(missing_ok=True)
        return len(deltas)

    def _compress(self, digest: str) -> None:
        """Replace a whole stored image by its compressed form."""
        path = self.state_path(digest)
        if not path.exists():
            return
        data = path.read_bytes()
        atomic_write(self.compressed_path(digest), compress_image(data))
        self._wrote(self.compressed_path(digest))
        path.unlink(missing_ok=True)

    def read_policy(self, digest: str) -> str:
        """The text of a stored policy, as stored (for display; see ``verified_policy``)."""
        return self.policy_path(digest).read_text(encoding="utf-8")

    def rendered_policy(self, domain: str) -> str:
        """The policy the spec of ``domain`` renders to (the only policy its packages may
        name).

        Raises:
            ValueError: The spec cannot be loaded.
        """
        if domain not in self._policies:
            self._policies[domain] = render_wiki(self.domain_spec(domain))
        return self._policies[domain]

    def verified_policy(self, digest: str, domain: str) -> str:
        """The policy text for a package of ``domain`` naming ``digest``: the policy rendered
        from the domain's spec, when it hashes to ``digest`` and the stored file holds exactly
        it. This is the text that may reach an agent's system prompt.

        Raises:
            DatasetError: The package names another policy, or the stored file differs.
        """
        text = self.rendered_policy(domain)
        data = text.encode("utf-8")
        if sha256(data) != digest:
            raise DatasetError(
                [f"policy {digest[:12]}… is not the policy of domain {domain!r}'s spec"]
            )
        path = self.policy_path(digest)
        if not path.is_file() or path.read_bytes() != data:
            raise DatasetError([f"{path}: differs from the policy of domain {domain!r}'s spec"])
        return text

    def write_part(self, unit: int, packages: Iterable[TaskPackage]) -> None:
        """Atomically write one finished work unit, after compacting its states."""
        pkgs = list(packages)
        self.compact(pkgs)
        body = "".join(p.model_dump_json() + "\n" for p in pkgs).encode("utf-8")
        atomic_write(self.part_path(unit), gzip.compress(body, mtime=0))

    def has_part(self, unit: int) -> bool:
        """True when the work unit was already finished."""
        return self.part_path(unit).exists() or self._legacy_part_path(unit).exists()

    def read_part(self, unit: int) -> str:
        """The JSON lines of one finished work unit (compressed or, in older runs, plain)."""
        path = self.part_path(unit)
        if path.exists():
            return decode_text(
                decompress(path.read_bytes(), what=str(path), fmt="gzip"), str(path), "JSON"
            )
        return self._legacy_part_path(unit).read_text(encoding="utf-8")

    def assemble(self, units: int, limit: int) -> int:
        """Concatenate the parts of units ``0..units-1`` into the manifest (first ``limit``
        packages); return how many were written."""
        lines: list[str] = []
        for unit in range(units):
            lines += self.read_part(unit).splitlines(keepends=True)
        lines = lines[:limit]
        atomic_write(self.manifest, "".join(lines).encode("utf-8"), durable=True)
        self.seal([TaskPackage.model_validate_json(line) for line in lines])
        return len(lines)

    @property
    def digest_path(self) -> Path:
        """Path of the seal (``digest.json``)."""
        return self.root / DIGEST_FILE

    def seal(self, packages: list[TaskPackage]) -> None:
        """Record the digest of ``run.json``, of the manifest's packages (in this order) and of
        every file in the directory, so ``check`` can name any field, package or file changed
        afterwards. Call it last: a file written after it is reported as extra."""
        write_seal(self.root, packages)

    def write_run(self, info: dict[str, Any]) -> None:
        """Record what the run was asked to do."""
        atomic_write(
            self.root / "run.json", (json.dumps(info, indent=2, sort_keys=True) + "\n").encode()
        )

    @property
    def spec_path(self) -> Path:
        """Path of the dataset's copy of its domain spec (``spec.yaml``)."""
        return self.root / SPEC_FILE

    def put_spec(self, text: str) -> None:
        """Keep a copy of the spec file the run was given, so readers find the domain again
        wherever the dataset and the spec file move."""
        atomic_write(self.spec_path, text.encode("utf-8"))

    def domain_spec(self, name: str) -> DomainSpec:
        """The spec of the packages whose ``domain`` is ``name``.

        The dataset's own copy (``spec.yaml``) when it declares that name; otherwise the
        built-in domain ``name`` (or, in datasets made before copies were kept, the spec path
        the packages name).

        Raises:
            ValueError: The spec cannot be loaded (``SpecError`` is a ``ValueError``).
        """
        if self.spec_path.exists():
            spec = load_domain(self.spec_path)
            if spec.name == name:
                return spec
        return load_domain(name)

    def read_run(self) -> dict[str, Any] | None:
        """The recorded run settings, if any."""
        path = self.root / "run.json"
        if not path.exists():
            return None
        data: dict[str, Any] = read_json(path)
        return data


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No automatic garbage collection inside the block (it is put back as it was after).

    Parsing a manifest builds many long-lived objects and no cycles, and each automatic
    collection on the way traverses every object built so far: with it on, loading 1,000
    retail packages took twice as long. Garbage made meanwhile is collected by the next
    collection after the block."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _parse_lines(path: Path) -> Iterator[tuple[int, TaskPackage | None, str | None]]:
    for lineno, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield lineno, None, f"<line>: not UTF-8 text (byte {exc.start})"
            continue
        if not line.strip():
            yield lineno, None, "empty line"
            continue
        try:
            yield lineno, TaskPackage.model_validate_json(line), None
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "<line>"
            yield lineno, None, f"{loc}: {first['msg']}"


def load_dataset(root: str | Path | DatasetDir, *, check_files: bool = True) -> list[TaskPackage]:
    """Load and validate a manifest; raise DatasetError explaining every problem found.

    Checks that every line is a valid package, that ids are unique, and (with ``check_files``)
    that the states and policies each package refers to exist. ``root`` may be a
    :class:`DatasetDir` the caller goes on using: what it learns of ``states/`` on the way (the
    listing, the packs' indexes) then serves the caller's reads too.
    """
    ds = root if isinstance(root, DatasetDir) else DatasetDir(Path(root))
    if not ds.manifest.exists():
        raise DatasetError([f"{ds.manifest}: no manifest (is this a dataset directory?)"])
    problems: list[str] = []
    packages: list[TaskPackage] = []
    seen: dict[str, int] = {}
    policies: set[str] = set()
    with _gc_paused():
        parsed = list(_parse_lines(ds.manifest))
    for lineno, pkg, err in parsed:
        if pkg is None:
            problems.append(f"{ds.manifest}:{lineno}: {err}")
            continue
        if pkg.id in seen:
            problems.append(
                f"{ds.manifest}:{lineno}: duplicate id {pkg.id!r} (first on line {seen[pkg.id]})"
            )
        seen[pkg.id] = lineno
        if check_files:
            for what, digest in (("origin", pkg.origin), ("target", pkg.target)):
                if not ds.has_state(digest):
                    problems.append(
                        f"{ds.manifest}:{lineno}: {pkg.id}: {what} state {digest[:12]}… is missing from states/"
                    )
            if pkg.policy not in policies and ds.policy_path(pkg.policy).exists():
                policies.add(pkg.policy)
            if pkg.policy not in policies:
                problems.append(
                    f"{ds.manifest}:{lineno}: {pkg.id}: policy {pkg.policy[:12]}… is missing from policies/"
                )
        packages.append(pkg)
    if problems:
        raise DatasetError(problems)
    return packages


@contextmanager
def loaded_apart(root: str | Path | DatasetDir) -> Iterator[list[TaskPackage]]:
    """:func:`load_dataset`, with what it built kept out of the collector's passes in the block.

    A pass over a dataset keeps every package alive to its end, and each full collection on
    the way would traverse all of them again: the heap as it is once loaded is frozen
    (``gc.freeze``) for the block and unfrozen after it, so nothing is lost to the collector.
    When something else froze the heap already, it is left as it is."""
    with _gc_paused():
        packages = load_dataset(root)
        freeze = gc.get_freeze_count() == 0
        if freeze:
            gc.freeze()
    try:
        yield packages
    finally:
        if freeze:
            gc.unfreeze()
