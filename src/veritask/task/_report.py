"""Dataset statistics: difficulty and tag mix, boundary density, rule and tool coverage."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from veritask.policy import DomainSpec, build_tools
from veritask.task._costs import PriceTable, cost_report, dataset_ledger
from veritask.task._dataset import DatasetDir, load_dataset
from veritask.task._dual import dual_section
from veritask.task._lint import repeated_texts, standing_cast, text_repeats
from veritask.task._package import ARCHETYPES, TAGS, TaskPackage
from veritask.task._reach import uncovered, unreachable

_DIFFICULTIES = ("L1", "L2", "L3")


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _write_tools(spec: DomainSpec) -> set[str]:
    """The write tools some actor of a task can call: every ``insert_*`` / ``update_*`` tool
    but those the spec reserves for the system (``veritask.task._reach``: no request of the
    agent or the user can ever get one through, so a task cannot use it)."""
    reserved = set(unreachable(spec)[1])
    return {
        name
        for name, tool in build_tools(spec).items()
        if tool.kind in ("insert", "update") and name not in reserved
    }


def _coverage(found: set[str], available: set[str]) -> float:
    """Share of ``available`` that was found; a domain with nothing to cover counts as 1.0."""
    return len(found & available) / len(available) if available else 1.0


def _domain_coverage(
    packages: Sequence[TaskPackage], spec: DomainSpec
) -> tuple[float, float, dict[str, dict[str, str]]]:
    """(rule coverage, write-tool coverage, what was not covered and why) of one domain's
    packages."""
    rules = {r.id for r in spec.rules}
    exercised = {r for p in packages for r in p.rules_exercised}
    tools = _write_tools(spec)
    called = {c.tool for p in packages for c in p.witness if c.ok}
    missing = uncovered(spec, exercised, called)
    return _coverage(exercised, rules), _coverage(called, tools), missing


def _coverages(
    packages: Sequence[TaskPackage], spec: DomainSpec | None, ds: DatasetDir
) -> tuple[float, float, dict[str, dict[str, dict[str, str]]]]:
    """Coverage per domain, averaged over the domains present (unweighted), and what each
    domain left uncovered."""
    by_domain: dict[str, list[TaskPackage]] = defaultdict(list)
    for pkg in packages:
        by_domain[pkg.domain].append(pkg)
    if not by_domain:
        return 0.0, 0.0, {}
    found = {
        name: _domain_coverage(group, spec if spec is not None else ds.domain_spec(name))
        for name, group in sorted(by_domain.items())
    }
    rules = sum(r for r, _, _ in found.values()) / len(found)
    tools = sum(t for _, t, _ in found.values()) / len(found)
    missing = {name: m for name, (_, _, m) in found.items()}
    return round(rules, 4), round(tools, 4), missing


def _spec_of(spec: DomainSpec | None, ds: DatasetDir) -> Callable[[str], DomainSpec]:
    """The spec of a domain name: the one given, else the dataset's (read once per name)."""
    cache: dict[str, DomainSpec] = {}

    def of(name: str) -> DomainSpec:
        if spec is not None:
            return spec
        if name not in cache:
            cache[name] = ds.domain_spec(name)
        return cache[name]

    return of


def _tag_counts(packages: Sequence[TaskPackage]) -> dict[str, int]:
    counts = Counter(t for p in packages for t in p.tags)
    out = {tag: counts.get(tag, 0) for tag in TAGS}
    out.update({tag: n for tag, n in sorted(counts.items()) if tag not in out})
    return out


def _cast(packages: list[TaskPackage]) -> dict[str, Any]:
    """Users with tasks, and the largest share over a uniform one within the standing cast
    (``veritask.task._lint.standing_cast``)."""
    users = standing_cast(packages)
    if not users:
        return {"users": len({p.user_profile.user_id for p in packages}), "max_over_uniform": 0.0}
    uniform = sum(users.values()) / len(users)
    return {
        "users": len({p.user_profile.user_id for p in packages}),
        "max_over_uniform": round(max(users.values()) / uniform, 2),
    }


def _archetypes(packages: Sequence[TaskPackage]) -> dict[str, Any]:
    """The archetype mix of the non-refusal tasks (count and share), and how many packages of
    all carry a construction (built, not labelled)."""
    tasks = [p for p in packages if not p.refusal]
    counts = Counter(p.user_profile.archetype for p in tasks)
    return {
        "counts": {a: counts.get(a, 0) for a in ARCHETYPES},
        "shares": {a: _share(counts.get(a, 0), len(tasks)) for a in ARCHETYPES},
        "built": sum(1 for p in packages if p.construction is not None),
    }


def _boundaries(
    packages: Sequence[TaskPackage], spec_of: Callable[[str], DomainSpec]
) -> dict[str, Any]:
    """Boundary-seeded packages per boundary kind and per rule category, as counts and as
    densities over all tasks: an Edge construction (a witness call one change from a rule), or
    a Rookie one whose request leaves out a value a rule tests (kind ``omission``: one
    omission from the violation)."""
    n = len(packages)
    kinds: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    for pkg in packages:
        built = pkg.construction
        if built is None or built.archetype not in ("edge", "rookie") or built.rule is None:
            continue
        kinds[built.boundary or "unknown"] += 1
        spec = spec_of(pkg.domain)
        rules = {r.id: r.category for r in spec.rules}
        categories[rules.get(built.rule, "unknown")] += 1
    return {
        "kinds": dict(sorted(kinds.items())),
        "categories": dict(sorted(categories.items())),
        "kind_density": {k: _share(v, n) for k, v in sorted(kinds.items())},
        "category_density": {k: _share(v, n) for k, v in sorted(categories.items())},
    }


def _statistics(
    packages: list[TaskPackage], spec: DomainSpec | None, ds: DatasetDir
) -> dict[str, Any]:
    """Every section of ``report_dataset`` but the costs."""
    n = len(packages)
    difficulty = Counter[str](p.difficulty for p in packages)
    rule_coverage, tool_coverage, missing = _coverages(packages, spec, ds)
    specs = _spec_of(spec, ds)
    report: dict[str, Any] = {
        "tasks": n,
        "difficulty": {d: difficulty.get(d, 0) for d in _DIFFICULTIES},
        "tags": _tag_counts(packages),
        "boundary_density": _share(sum(1 for p in packages if p.boundary_hits > 0), n),
        "rule_coverage": rule_coverage,
        "tool_coverage": tool_coverage,
        "mean_witness_calls": round(sum(len(p.witness) for p in packages) / n, 4) if n else 0.0,
        "refusal_share": _share(sum(1 for p in packages if p.refusal), n),
        "repeated_texts": repeated_texts(packages),
        "repeats": text_repeats(packages),
        "cast": _cast(packages),
        "uncovered": missing,
        "archetypes": _archetypes(packages),
        "boundaries": _boundaries(packages, specs),
        **dual_section(packages, specs),
    }
    return report


def report_dataset(
    root: str | Path, spec: DomainSpec | None = None, prices: PriceTable | None = None
) -> dict[str, Any]:
    """Statistics of a dataset directory (shares rounded to 4 decimals, 0.0 when empty).

    * ``boundary_density``: share of tasks whose witness hit at least one policy violation
      (``boundary_hits > 0``).
    * ``rule_coverage``: rules in any package's ``rules_exercised`` over the spec's rules.
    * ``tool_coverage``: write tools (``insert_*`` / ``update_*``) some witness called
      successfully over the write tools some actor of a task can call: a tool the spec
      reserves for the system (``veritask.task._reach``) is not counted; ``uncovered`` still
      lists it, with that reason.
    * ``refusal_share``: share of refusal tasks; ``dual_control`` (domains with user tools or a
      hand-off only): ``veritask.task._dual.dual_report``.
    * ``repeated_texts``: packages repeating an earlier one's text on another origin.
    * ``repeats``: each text made more than once, with its packages and whether their state
      pairs differ (``veritask.task._lint.text_repeats``).
    * ``cast``: ``{"users", "max_over_uniform"}``: users, and the largest one's share over a
      uniform share of the standing cast (users with tasks on several origins).
    * ``archetypes``: the archetype mix of the non-refusal tasks (``_archetypes``).
    * ``boundaries``: boundary-seeded packages per kind and rule category (``_boundaries``).
    * ``uncovered``: ``{domain: {"rules": {id: why}, "tools": {name: why}}}``, what no
      package covered: ``"not reached"``, or ``"unreachable by construction: <reason>"``
      when the spec rules it out (``veritask.task._reach``).

    When a directory mixes domains, both coverages are computed per domain and then averaged
    with equal weight per domain (not per task). A domain with no rules (or no write tools)
    counts as fully covered.

    Args:
        root: The dataset directory.
        spec: The spec to measure coverage against; by default each package's domain as the
            dataset names it (``DatasetDir.domain_spec``).
        prices: Prices per million tokens (module, model or ``default``) to recompute the
            cost section with (``veritask.task._costs``); by default the recorded costs.

    Returns:
        ``{"tasks", "difficulty": {"L1", "L2", "L3"}, "tags": {tag: count},
        "boundary_density", "rule_coverage", "tool_coverage", "mean_witness_calls",
        "refusal_share", "repeated_texts", "repeats", "cast", "uncovered", "archetypes", "boundaries"}``;
        ``tags`` lists every known tag (0 when unused) and any other found. With model calls
        (LLM mode) also ``"costs"`` (:func:`~veritask.task._costs.cost_report`)

    Raises:
        DatasetError: The manifest is invalid or refers to missing states or policies.
    """
    packages = load_dataset(root)
    ds = DatasetDir(Path(root))
    report = _statistics(packages, spec, ds)
    ledger = dataset_ledger(root)
    if ledger is not None:
        report["costs"] = cost_report(ledger, len(packages), ds.read_run(), prices)
    return report
