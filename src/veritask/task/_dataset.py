"""Dataset directories: a manifest of packages plus content-addressed states and policies.

Layout::

    DIR/run.json                  what was asked for (domain, n, seed, generator, spec hash)
    DIR/manifest.jsonl            one TaskPackage per line, in task-index order
    DIR/states/<sha256>.sqlite    every state once (origins are shared by the tasks of a scene)
    DIR/policies/<sha256>.md      the wiki policy text
    DIR/parts/<unit>.jsonl        finished work units; the manifest is assembled from them
    DIR/costs/<unit>.json         what each unit spent on model calls, per module (LLM mode only)
    DIR/digest.json               the seal: hashes of run.json and of every package field
    DIR/spec.yaml                 the domain spec, when the run was given a spec file (not a
                                  built-in name): readers load the domain from it

Every file is written to a temporary name and renamed into place, so a run killed at any moment
leaves only whole files behind and a rerun skips the units already present.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veritask._util import atomic_write, sha256
from veritask.domains import load_domain
from veritask.policy import DomainSpec, load_spec
from veritask.task._integrity import DIGEST_FILE, write_seal
from veritask.task._package import TaskPackage

SPEC_FILE = "spec.yaml"
"""The copy of the domain spec in a dataset generated from a spec file."""


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

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    @property
    def manifest(self) -> Path:
        """Path of the manifest."""
        return self.root / "manifest.jsonl"

    def state_path(self, digest: str) -> Path:
        """Where the state with this sha256 lives."""
        return self.root / "states" / f"{digest}.sqlite"

    def policy_path(self, digest: str) -> Path:
        """Where the policy text with this sha256 lives."""
        return self.root / "policies" / f"{digest}.md"

    def part_path(self, unit: int) -> Path:
        """Where the packages of one work unit live until the manifest is assembled."""
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
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def put_state(self, data: bytes) -> str:
        """Store a state once; return its sha256."""
        digest = sha256(data)
        path = self.state_path(digest)
        if not path.exists():
            atomic_write(path, data)
        return digest

    def put_policy(self, text: str) -> str:
        """Store a policy text once; return its sha256."""
        data = text.encode("utf-8")
        digest = sha256(data)
        path = self.policy_path(digest)
        if not path.exists():
            atomic_write(path, data)
        return digest

    def read_state(self, digest: str) -> bytes:
        """The bytes of a stored state."""
        return self.state_path(digest).read_bytes()

    def read_policy(self, digest: str) -> str:
        """The text of a stored policy."""
        return self.policy_path(digest).read_text(encoding="utf-8")

    def write_part(self, unit: int, packages: Iterable[TaskPackage]) -> None:
        """Atomically write one finished work unit."""
        body = "".join(p.model_dump_json() + "\n" for p in packages)
        atomic_write(self.part_path(unit), body.encode("utf-8"))

    def has_part(self, unit: int) -> bool:
        """True when the work unit was already finished."""
        return self.part_path(unit).exists()

    def assemble(self, units: int, limit: int) -> int:
        """Concatenate the parts of units ``0..units-1`` into the manifest (first ``limit``
        packages); return how many were written."""
        lines: list[str] = []
        for unit in range(units):
            lines += self.part_path(unit).read_text(encoding="utf-8").splitlines(keepends=True)
        lines = lines[:limit]
        atomic_write(self.manifest, "".join(lines).encode("utf-8"), durable=True)
        self.seal([TaskPackage.model_validate_json(line) for line in lines])
        return len(lines)

    @property
    def digest_path(self) -> Path:
        """Path of the seal (``digest.json``)."""
        return self.root / DIGEST_FILE

    def seal(self, packages: list[TaskPackage]) -> None:
        """Record the digest of ``run.json`` and of the manifest's packages (in this order), so
        ``check`` can name any field edited afterwards."""
        run = self.root / "run.json"
        write_seal(self.digest_path, run.read_bytes() if run.exists() else None, packages)

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
            spec = load_spec(self.spec_path)
            if spec.name == name:
                return spec
        return load_domain(name)

    def read_run(self) -> dict[str, Any] | None:
        """The recorded run settings, if any."""
        path = self.root / "run.json"
        if not path.exists():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return data


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


def load_dataset(root: str | Path, *, check_files: bool = True) -> list[TaskPackage]:
    """Load and validate a manifest; raise DatasetError explaining every problem found.

    Checks that every line is a valid package, that ids are unique, and (with ``check_files``)
    that the states and policies each package refers to exist.
    """
    ds = DatasetDir(Path(root))
    if not ds.manifest.exists():
        raise DatasetError([f"{ds.manifest}: no manifest (is this a dataset directory?)"])
    problems: list[str] = []
    packages: list[TaskPackage] = []
    seen: dict[str, int] = {}
    for lineno, pkg, err in _parse_lines(ds.manifest):
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
                if not ds.state_path(digest).exists():
                    problems.append(
                        f"{ds.manifest}:{lineno}: {pkg.id}: {what} state {digest[:12]}… is missing from states/"
                    )
            if not ds.policy_path(pkg.policy).exists():
                problems.append(
                    f"{ds.manifest}:{lineno}: {pkg.id}: policy {pkg.policy[:12]}… is missing from policies/"
                )
        packages.append(pkg)
    if problems:
        raise DatasetError(problems)
    return packages
