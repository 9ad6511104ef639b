"""Dataset directory pages: the report as charts, the task table, one page per task."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veritask._view._charts import bars
from veritask._view._diff import diff_views
from veritask._view._pages import Page, Query, fixed_columns, pretty, slug, yes_no
from veritask._view._state_pages import (
    StateReader,
    policy_page,
    policy_path,
    rule_anchor,
    state_page,
    state_path,
)
from veritask.env import CompiledDomain, Environment, Layout, Snapshot, diff
from veritask.policy import DomainSpec
from veritask.task import DatasetDir, TaskPackage, certify, grounding, load_dataset, report_dataset

FILTERS = ("difficulty", "tag", "rule", "refusal", "certified", "grounded")
"""Query parameters the task table filters on (with ``q``, a search in ids and task text)."""


@dataclass(frozen=True)
class TaskCheck:
    """A task's two certificates, recomputed by the viewer.

    Attributes:
        certified: The witness replays from s_origin to s_target.
        detail: Why it is not certified.
        ungrounded: The writes (or arguments) the task text does not determine.
    """

    certified: bool
    detail: str | None
    ungrounded: list[str]

    @property
    def grounded(self) -> bool:
        """True when the task's text determines every write of its witness."""
        return not self.ungrounded


def check_tasks(ds: DatasetDir, packages: list[TaskPackage]) -> dict[str, TaskCheck]:
    """Replay and ground every package (one environment per domain)."""
    envs: dict[str, Environment] = {}
    out: dict[str, TaskCheck] = {}
    try:
        for pkg in packages:
            if pkg.domain not in envs:
                envs[pkg.domain] = Environment(CompiledDomain.from_spec(ds.domain_spec(pkg.domain)))
            env, origin = envs[pkg.domain], ds.read_state(pkg.origin)
            cert = certify(pkg, env, origin, ds.read_state(pkg.target))
            problems = [u.describe() for u in grounding(pkg, env, origin)]
            out[pkg.id] = TaskCheck(cert.certified, cert.detail, problems)
    finally:
        for env in envs.values():
            env.close()
    return out


def task_row(pkg: TaskPackage, check: TaskCheck | None) -> dict[str, Any]:
    """The task table's row of one package (``text`` is what the search looks in)."""
    return {
        "id": pkg.id,
        "slug": slug(pkg.id),
        "difficulty": pkg.difficulty,
        "tags": pkg.tags,
        "rules": pkg.rules_exercised,
        "refusal": yes_no(pkg.refusal),
        "calls": len(pkg.witness),
        "boundary_hits": pkg.boundary_hits,
        "certified": yes_no(check.certified if check else None),
        "grounded": yes_no(check.grounded if check else None),
        "text": f"{pkg.id}\n{pkg.task_description}".lower(),
    }


def matches(row: dict[str, Any], query: Query) -> bool:
    """True when the row passes every filter the query sets (empty values set none)."""
    for name in FILTERS:
        wanted = query.get(name, "")
        if not wanted:
            continue
        if name == "tag" and wanted not in row["tags"]:
            return False
        if name == "rule" and wanted not in row["rules"]:
            return False
        if name not in ("tag", "rule") and row[name] != wanted:
            return False
    q = query.get("q", "").strip().lower()
    return not q or q in row["text"]


class DatasetPages:
    """The pages of one dataset directory."""

    kind = "dataset"

    def __init__(self, root: Path, *, check: bool = False) -> None:
        self.ds = DatasetDir(root)
        self.name = root.resolve().name
        self.packages = load_dataset(root)
        self.by_slug = {slug(p.id): p for p in self.packages}
        self.report = report_dataset(root)
        self.checks = check_tasks(self.ds, self.packages) if check else None
        self.specs: dict[str, DomainSpec] = {}
        self.runs: dict[str, list[dict[str, Any]]] = {}
        """Task id -> its trajectories in the same site (``href`` from the site root, ``trial``,
        ``agent``, ``reward``); filled by whoever mounts trajectories beside the dataset."""
        self.origins: dict[str, tuple[str, list[str]]] = {}
        """Initial state digest -> its domain and the tasks starting from it."""
        for pkg in self.packages:
            self.origins.setdefault(pkg.origin, (pkg.domain, []))[1].append(pkg.id)
        self.by_state = {slug(d): d for d in self.origins}
        self.domains = sorted({p.domain for p in self.packages})
        self.by_domain = {slug(d): d for d in self.domains}
        self.states = StateReader(self.spec, self.ds.read_state)
        policies = [
            (policy_path(d), "policy" if len(self.domains) == 1 else f"policy {d}")
            for d in self.domains
        ]
        self.nav = [("index.html", "report"), ("tasks.html", "tasks"), *policies]

    def paths(self) -> list[str]:
        """The report, the task table, one page per task, per initial state and per domain's
        policy."""
        return [
            "index.html",
            "tasks.html",
            *[f"task/{s}.html" for s in self.by_slug],
            *[state_path(d) for d in self.origins],
            *[policy_path(d) for d in self.domains],
        ]

    def page(self, path: str, query: Query) -> Page | None:
        """The page at ``path``."""
        if path == "index.html":
            return self.report_page()
        if path == "tasks.html":
            return self.table_page(query)
        if path.startswith("task/") and path.endswith(".html"):
            pkg = self.by_slug.get(path[len("task/") : -len(".html")])
            return self.task_page(pkg) if pkg is not None else None
        name = path.removesuffix(".html")
        if path.startswith("state/") and name[len("state/") :] in self.by_state:
            digest = self.by_state[name[len("state/") :]]
            domain, tasks = self.origins[digest]
            return state_page(self.states, domain, digest, tasks, query)
        if path.startswith("policy/") and name[len("policy/") :] in self.by_domain:
            domain = self.by_domain[name[len("policy/") :]]
            exercised = Counter(
                r for p in self.packages if p.domain == domain for r in p.rules_exercised
            )
            return policy_page(self.spec(domain), dict(exercised))
        return None

    def _check(self, pkg: TaskPackage) -> TaskCheck | None:
        return self.checks.get(pkg.id) if self.checks is not None else None

    def report_page(self) -> Page:
        """The report's figures as charts."""
        rep = self.report
        shares = [
            (name.replace("_", " "), float(rep[name]))
            for name in ("boundary_density", "rule_coverage", "tool_coverage", "refusal_share")
        ]
        if self.checks is not None:
            n = len(self.checks) or 1
            shares.append(("certified share", sum(c.certified for c in self.checks.values()) / n))
            shares.append(("grounded share", sum(c.grounded for c in self.checks.values()) / n))
        rules = Counter(r for p in self.packages for r in p.rules_exercised)
        charts = {
            "difficulty": bars([(d, float(n)) for d, n in rep["difficulty"].items()]),
            "tags": bars([(t, float(n)) for t, n in rep["tags"].items()]),
            "shares": bars(shares, scale=1.0),
            "rules": bars([(r, float(n)) for r, n in rules.most_common()]),
        }
        failing = [
            (i, c) for i, c in (self.checks or {}).items() if not c.certified or not c.grounded
        ]
        return Page(
            "dataset_report.html",
            "report",
            {
                "report": rep,
                "charts": charts,
                "run": self.ds.read_run(),
                "failing": failing,
                "checked": self.checks is not None,
                "slug": slug,
            },
        )

    def table_page(self, query: Query) -> Page:
        """The task table, filtered by ``query``."""
        rows = [task_row(p, self._check(p)) for p in self.packages]
        options = {
            "difficulty": sorted({r["difficulty"] for r in rows}),
            "tag": sorted({t for r in rows for t in r["tags"]}),
            "rule": sorted({x for r in rows for x in r["rules"]}),
            "refusal": ["yes", "no"],
        }
        if self.checks is not None:
            options |= {"certified": ["yes", "no"], "grounded": ["yes", "no"]}
        shown = [r for r in rows if matches(r, query)]
        return Page(
            "dataset_tasks.html",
            "tasks",
            {
                "rows": shown,
                "total": len(rows),
                "options": options,
                "query": dict(query),
                "checked": self.checks is not None,
            },
        )

    def spec(self, domain: str) -> DomainSpec:
        """The spec of a domain of the dataset (loaded once)."""
        if domain not in self.specs:
            self.specs[domain] = self.ds.domain_spec(domain)
        return self.specs[domain]

    def task_page(self, pkg: TaskPackage) -> Page:
        """One task: its text, the user, the witness and the origin -> target diff."""
        spec = self.spec(pkg.domain)
        layout = Layout.from_spec(spec)
        origin = Snapshot(self.ds.read_state(pkg.origin), layout)
        target = Snapshot(self.ds.read_state(pkg.target), layout)
        gold = diff(origin, target).to_json()
        calls = [
            {"index": i, "call": c, "args": pretty(c.args), "result": pretty(c.result)}
            for i, c in enumerate(pkg.witness)
        ]
        return Page(
            "dataset_task.html",
            pkg.id,
            {
                "pkg": pkg,
                "calls": calls,
                "tables": diff_views(gold, fixed_columns(spec)),
                "distance": gold["distance"],
                "check": self._check(pkg),
                "attributes": pretty(pkg.user_profile.attributes),
                "runs": self.runs.get(pkg.id, []),
                "state_href": state_path(pkg.origin),
                "policy_href": policy_path(pkg.domain),
                "rule_links": [
                    (r, f"{policy_path(pkg.domain)}#{rule_anchor(r)}") for r in pkg.rules_exercised
                ],
            },
        )
