"""Re-certify a dataset directory: replay every witness, diff against s_target, check spoilers.

``check_dataset`` trusts nothing the generator wrote. For each package it restores s_origin into
an environment of the package's domain (each domain compiled once, one environment per domain
reused across packages), replays the witness calls in order, compares each outcome with the
recorded one and diffs the final state against s_target. It also checks that the domain spec is
still the one the package was generated from, that the task text is spoiler-free, that no two
packages share an (origin, target) pair, that the directory is as sealed (fields, manifest
order, every file) and that every package's policy is the one its spec renders.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veritask._util import sha256, sha256_text
from veritask.env import CompiledDomain, Environment, Snapshot, data_calls
from veritask.policy import render_wiki
from veritask.task._asks import AskChecker
from veritask.task._dataset import DatasetDir, loaded_apart
from veritask.task._grounded import certify_grounded
from veritask.task._integrity import (
    Dataset,
    RootPages,
    StateVerifier,
    compare_seal,
    reference_schema,
)
from veritask.task._lint import LintFinding, lint_dataset, lint_package
from veritask.task._package import TaskPackage
from veritask.task._spoiler import (
    IdIndex,
    decided_spoilers,
    find_spoilers,
    spec_identifiers,
    text_keys,
)

FailureKind = Literal[
    "replay", "diff", "spoiler", "ungrounded", "duplicate", "spec_hash", "integrity"
]
MAX_FAILURES = 100
"""At most this many failures are listed in a report (all are still counted in the totals)."""
_ORIGIN_CACHE = 64


@dataclass
class CheckReport:
    """What ``check_dataset`` found.

    Attributes:
        tasks: Packages in the manifest.
        certified: Packages whose witness replayed with the recorded outcomes and ended at
            s_target (distance 0) under the current domain spec.
        spoiler_free: Packages whose task description passed the spoiler check (no internal
            id, schema identifier, or value the agent must work out).
        grounded: Packages whose text determines every write of the witness (the second
            certificate, :func:`veritask.task.grounding`).
        duplicates: Packages whose (origin, target) pair repeats an earlier package's.
        failures: ``{"id", "kind", "detail"}`` per problem, at most ``MAX_FAILURES`` of them.
    """

    tasks: int = 0
    certified: int = 0
    spoiler_free: int = 0
    grounded: int = 0
    duplicates: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    lint: list[LintFinding] = field(default_factory=list)
    """The semantic lint's findings (``veritask.task.lint_package`` and ``lint_dataset``):
    reported, not failures; at most ``MAX_FAILURES`` are listed, all are counted."""
    lint_counts: dict[str, int] = field(default_factory=dict)

    def add_lint(self, found: list[LintFinding]) -> None:
        """Count (and list, up to ``MAX_FAILURES``) semantic-lint findings."""
        for f in found:
            self.lint_counts[f.kind] = self.lint_counts.get(f.kind, 0) + 1
            if len(self.lint) < MAX_FAILURES:
                self.lint.append(f)

    @property
    def ok(self) -> bool:
        """True when every package is certified, spoiler-free, unique and on the current spec."""
        return not self.failures

    def add_failure(self, task_id: str, kind: FailureKind, detail: str) -> None:
        """Record one failure (kept only while fewer than ``MAX_FAILURES`` are listed)."""
        if len(self.failures) < MAX_FAILURES:
            self.failures.append({"id": task_id, "kind": kind, "detail": detail})

    def to_json(self) -> dict[str, Any]:
        """The report as ``{"tasks", "certified", "spoiler_free", "grounded", "duplicates",
        "failures", "lint": {"counts", "findings"}}``."""
        return {
            "tasks": self.tasks,
            "certified": self.certified,
            "spoiler_free": self.spoiler_free,
            "grounded": self.grounded,
            "duplicates": self.duplicates,
            "failures": [dict(f) for f in self.failures],
            "lint": {
                "counts": dict(sorted(self.lint_counts.items())),
                "findings": [f.to_json() for f in self.lint],
            },
        }


@dataclass
class _Origin:
    data: bytes
    keys: IdIndex


@dataclass
class _Domain:
    """One domain as loaded for this run: compiled once, one environment, its current hash."""

    key: str
    compiled: CompiledDomain
    spec_hash: str
    env: Environment
    verifier: StateVerifier
    identifiers: frozenset[str]
    asks: AskChecker
    policy: str
    """The sha256 of the policy rendered from the spec."""


class _Checker:
    """Per-run caches: loaded domains and recently used origins."""

    def __init__(self, ds: DatasetDir) -> None:
        self.ds = ds
        self.domains: dict[str, _Domain | str] = {}
        self.origins: OrderedDict[tuple[str, str], _Origin] = OrderedDict()
        self.files: dict[tuple[str, str], str | None] = {}

    def close(self) -> None:
        for dom in self.domains.values():
            if isinstance(dom, _Domain):
                dom.env.close()
                dom.verifier.close()

    def domain(self, name: str) -> _Domain | str:
        """The loaded domain, or why it cannot be loaded."""
        if name not in self.domains:
            try:
                compiled = CompiledDomain.from_spec(self.ds.domain_spec(name))
            except (ValueError, OSError) as exc:
                self.domains[name] = f"domain {name!r} cannot be loaded: {exc}"
            else:
                hash_ = compiled.spec.spec_hash()
                verifier = StateVerifier(reference_schema(compiled), RootPages.of(compiled))
                env = Environment(compiled)
                names = spec_identifiers(compiled.spec)
                asks = AskChecker(compiled.spec, compiled.tools)
                policy = sha256_text(render_wiki(compiled.spec))
                self.domains[name] = _Domain(
                    name, compiled, hash_, env, verifier, names, asks, policy
                )
        return self.domains[name]

    def state_problem(self, dom: _Domain, digest: str, like: str | None = None) -> str | None:
        """Why a stored state cannot be trusted (its bytes, name and schema), once per state;
        ``like`` names the state it was reached from (see ``StateVerifier.problem``)."""
        key = (dom.key, digest)
        if key not in self.files:
            try:
                data = self.ds.read_state(digest)
            except OSError as exc:
                self.files[key] = f"state {digest[:12]}… cannot be read: {exc}"
            else:
                self.files[key] = dom.verifier.problem(data, digest, like)
        return self.files[key]

    def policy_problem(self, dom: _Domain, digest: str) -> str | None:
        """Why a package of ``dom`` cannot name the stored policy ``digest`` (None when it
        can): the file must hash to its name and hold the policy rendered from the spec."""
        key = ("policy", digest)
        if key not in self.files:
            path = self.ds.policy_path(digest)
            data = path.read_bytes()
            if sha256(data) != digest:
                self.files[key] = f"{path.name}: {digest[:12]}… does not hash to its name"
            else:
                self.files[key] = None
        if self.files[key] is not None or digest == dom.policy:
            return self.files[key]
        return (
            f"policies/{digest}.md: is not the policy rendered from domain {dom.key!r}'s spec "
            f"({dom.policy[:12]}…)"
        )

    def target(self, dom: _Domain, pkg: TaskPackage) -> tuple[str | None, bytes | None]:
        """Why a package's stored target cannot be trusted (as ``state_problem``), and its
        bytes when it can. A target usually serves one package: the first time it is asked
        for, it is read without being kept in the dataset's cache (which keeps the states
        that serve many packages, origins), verified, and its verdict kept as any state's."""
        key = (dom.key, pkg.target)
        if key in self.files:  # verified in this run already (an origin, a repeated target)
            problem = self.files[key]
            return problem, (self.ds.read_state(pkg.target) if problem is None else None)
        try:
            data = self.ds.read_state(pkg.target, keep=False)
        except OSError as exc:
            self.files[key] = f"state {pkg.target[:12]}… cannot be read: {exc}"
            return self.files[key], None
        problem = self.files[key] = dom.verifier.problem(data, pkg.target, pkg.origin)
        return problem, (data if problem is None else None)

    def origin(self, dom: _Domain, digest: str) -> _Origin:
        """Origin bytes and their internal ids, read once per (domain, origin) while recent."""
        key = (dom.key, digest)
        found = self.origins.get(key)
        if found is None:
            data = self.ds.read_state(digest)
            keys = text_keys(dom.compiled.spec, data, dom.verifier.connection())
            found = _Origin(data, IdIndex.of(keys))
            self.origins[key] = found
            if len(self.origins) > _ORIGIN_CACHE:
                self.origins.popitem(last=False)
        else:
            self.origins.move_to_end(key)
        return found


def _check_state(
    dom: _Domain, pkg: TaskPackage, origin: _Origin, target: bytes, report: CheckReport
) -> None:
    """Replay, diff and ground on one replay: certified when the replay and the diff pass,
    grounded when also every write is determined by the text (each ungrounded write is listed
    with the argument that is not)."""
    snap = Snapshot(target, dom.compiled.layout)  # its rows are read only if a diff is needed
    cert, ungrounded = certify_grounded(pkg, dom.env, origin.data, snap)
    if cert.kind is not None:
        detail = cert.detail or ""
        if detail.startswith("s_target is not readable"):
            detail = detail.replace("s_target", f"s_target {pkg.target[:12]}…", 1)
        report.add_failure(pkg.id, cert.kind, detail)
        return
    report.certified += 1
    report.add_lint(lint_package(dom.compiled.spec, dom.compiled.tools, pkg, dom.env, origin.data))
    if ungrounded:
        report.add_failure(pkg.id, "ungrounded", "; ".join(u.describe() for u in ungrounded))
    else:
        report.grounded += 1


def _check_spoilers(dom: _Domain, pkg: TaskPackage, origin: _Origin, report: CheckReport) -> None:
    spec, known = dom.compiled.spec, pkg.user_profile.known_ids
    found = find_spoilers(pkg.task_description, spec, origin.keys, known, dom.identifiers)
    found += decided_spoilers(pkg.task_description, spec, pkg.witness, dom.compiled.tools)
    if found:
        report.add_failure(pkg.id, "spoiler", "; ".join(found))
    else:
        report.spoiler_free += 1


def _check_files(
    checker: _Checker, dom: _Domain, pkg: TaskPackage, report: CheckReport
) -> bytes | None:
    """Integrity of the package's states and policy: the target's bytes, or None when a state
    cannot be trusted (then nothing is replayed on it)."""
    problem = checker.policy_problem(dom, pkg.policy)
    if problem is not None:
        report.add_failure(pkg.id, "integrity", f"policy: {problem}")
    if not pkg.reward_basis:
        report.add_failure(pkg.id, "integrity", "reward_basis: empty (nothing would be verified)")
    origin = checker.state_problem(dom, pkg.origin)
    if origin is not None:
        report.add_failure(pkg.id, "integrity", f"origin: {origin}")
    problem, target = checker.target(dom, pkg)
    if problem is not None:
        report.add_failure(pkg.id, "integrity", f"target: {problem}")
    return None if origin is not None else target


def _check_seal(checker: _Checker, packages: list[TaskPackage], report: CheckReport) -> None:
    """The dataset against the digest sealed at generation, and run.json against the spec."""
    ds = checker.ds
    run_path = ds.root / "run.json"
    run = run_path.read_bytes() if run_path.exists() else None
    recorded = ds.digest_path.read_text("utf-8", "replace") if ds.digest_path.exists() else None
    lines = ds.manifest.read_bytes().splitlines()
    now = Dataset(ds.root, run, packages, lines, ds.stored_compactly)
    for tamper in compare_seal(recorded, now):
        report.add_failure(tamper.subject, "integrity", tamper.describe())
    try:
        info = ds.read_run()
    except ValueError as exc:
        report.add_failure("run.json", "integrity", f"run.json: not JSON: {exc}")
        return
    if info is None or "domain" not in info or "spec_hash" not in info:
        return
    dom = checker.domain(str(info["domain"]))
    if isinstance(dom, _Domain) and info["spec_hash"] != dom.spec_hash:
        report.add_failure(
            "run.json",
            "integrity",
            f"spec_hash: run.json names spec {str(info['spec_hash'])[:12]}…, "
            f"domain {dom.key!r} is {dom.spec_hash[:12]}…",
        )


def _check_unused_policies(
    ds: DatasetDir, packages: list[TaskPackage], report: CheckReport
) -> None:
    """Every file in ``policies/`` must be the policy of some package (each of those is
    compared with its spec's rendered policy)."""
    folder = ds.root / "policies"
    used = {f"{p.policy}.md" for p in packages}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.name not in used:
            report.add_failure(
                f"policies/{path.name}", "integrity", "policy: no package names this policy file"
            )


def _check_package(checker: _Checker, pkg: TaskPackage, report: CheckReport) -> None:
    dom = checker.domain(pkg.domain)
    if isinstance(dom, str):
        report.add_failure(pkg.id, "spec_hash", dom)
        return
    if pkg.spec_hash != dom.spec_hash:
        report.add_failure(
            pkg.id,
            "spec_hash",
            f"generated against spec {pkg.spec_hash[:12]}…, "
            f"domain {pkg.domain!r} is now {dom.spec_hash[:12]}…",
        )
    for problem in dom.asks.problems(pkg.task):
        report.add_failure(pkg.id, "integrity", f"task.{problem}")
    target = _check_files(checker, dom, pkg, report)
    if target is None:
        return
    try:
        origin = checker.origin(dom, pkg.origin)
    except sqlite3.Error as exc:
        report.add_failure(pkg.id, "replay", f"s_origin {pkg.origin[:12]}… is not readable: {exc}")
        return
    _check_state(dom, pkg, origin, target, report)
    _check_spoilers(dom, pkg, origin, report)


def check_dataset(root: str | Path) -> CheckReport:
    """Re-certify every package of a dataset directory.

    Each package's witness is replayed from s_origin in an environment of its domain (compiled
    once per domain) and the final state diffed against s_target. A package is *certified* when
    every call's outcome matches the recording (ok flag; error code and violated rule for
    rejections; the result for accepted calls) and the distance is 0. Independently, a package
    whose ``spec_hash`` differs from the current domain spec, whose description names something
    the user could not know, or whose (origin, target) pair repeats an earlier one's is listed as
    a failure, and so is a package whose text does not determine a write of its witness
    (``ungrounded``, one failure per package naming each write and argument). A domain that cannot be loaded is reported as a ``spec_hash`` failure.

    Args:
        root: The dataset directory.

    Returns:
        The counts and up to ``MAX_FAILURES`` failures.

    Raises:
        DatasetError: The manifest is invalid or refers to missing states or policies.
    """
    ds = DatasetDir(Path(root))
    with loaded_apart(ds) as packages, data_calls():  # a loaded machine never changes a verdict
        report = CheckReport(tasks=len(packages))
        seen: dict[tuple[str, str], str] = {}
        checker = _Checker(ds)
        try:
            _check_seal(checker, packages, report)
            for pkg in packages:
                pair = (pkg.origin, pkg.target)
                if pair in seen:
                    report.duplicates += 1
                    report.add_failure(
                        pkg.id, "duplicate", f"same origin and target as {seen[pair]!r}"
                    )
                else:
                    seen[pair] = pkg.id
                _check_package(checker, pkg, report)
            _check_unused_policies(ds, packages, report)
            report.add_lint(lint_dataset(packages))
        finally:
            checker.close()
    return report
