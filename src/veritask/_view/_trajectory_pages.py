"""Trajectory file pages: pass^k and rewards over the file, one page per trajectory."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veritask._view._charts import bars, histogram, line
from veritask._view._diff import diff_views, final_vs_target
from veritask._view._pages import Page, Query, fixed_columns, pretty, slug
from veritask.domains import builtin_domains, load_domain
from veritask.env import Layout
from veritask.policy import DomainSpec
from veritask.reward import dense_rewards
from veritask.rollout import rollout_stats
from veritask.rollout._stats import MEASURES
from veritask.task import DatasetDir, TaskPackage, Trajectory, load_dataset
from veritask.verify import VerificationError, gold_diff_for, pass_hat_k_table, verify


def read_trajectories(path: Path) -> list[Trajectory]:
    """Every trajectory of a JSONL file, in file order.

    Raises:
        ValueError: A line that is not a trajectory (its line number says which).
    """
    out: list[Trajectory] = []
    for number, line_text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line_text.strip():
            continue
        try:
            out.append(Trajectory.model_validate_json(line_text))
        except ValidationError as exc:
            raise ValueError(
                f"{path}:{number}: not a trajectory: {exc.errors()[0]['msg']}"
            ) from None
    return out


def pass_table(trajectories: list[Trajectory]) -> dict[str, float]:
    """pass^k for k from 1 to the fewest trials of any task (success: reward 1)."""
    results: dict[str, list[bool]] = defaultdict(list)
    for traj in sorted(trajectories, key=lambda t: t.trial):
        results[traj.task_id].append(traj.reward == 1.0)
    return pass_hat_k_table(results) if results else {}


def timeline(traj: Trajectory) -> list[dict[str, Any]]:
    """The messages in order, tool calls with their arguments, tool results with their step."""
    steps = {s.call_id: s for s in traj.steps}
    out: list[dict[str, Any]] = []
    for index, message in enumerate(traj.messages):
        calls = [
            {
                "name": c.get("function", {}).get("name", "?"),
                "args": c.get("function", {}).get("arguments", ""),
            }
            for c in message.get("tool_calls") or []
        ]
        step = steps.get(str(message.get("tool_call_id", "")))
        content = message.get("content")
        out.append(
            {
                "index": index,
                "role": str(message.get("role", "?")),
                "content": content if isinstance(content, str | None) else pretty(content),
                "calls": calls,
                "step": step,
                "error": pretty(step.error) if step is not None and step.error else None,
            }
        )
    return out


def _selected(traj: Trajectory, query: Query) -> bool:
    task, outcome = query.get("task", ""), query.get("outcome", "")
    if task and traj.task_id != task:
        return False
    return not outcome or (traj.reward == 1.0) == (outcome == "passed")


def _bin(edges: dict[str, int]) -> tuple[str, float]:
    """A histogram bin as a bar: ``3`` or ``3-5`` and its count."""
    low, high = edges["low"], edges["high"]
    return (str(low) if low == high else f"{low}-{high}", float(edges["count"]))


def _builtin_spec(domain: str) -> DomainSpec | None:
    """The built-in domain of that name (None for another domain)."""
    return load_domain(domain) if domain in builtin_domains() else None


class TrajectoryPages:
    """The pages of one trajectories file (with the dataset, final diffs and verdicts)."""

    kind = "trajectories"

    def __init__(
        self, path: Path, dataset: Path | None = None, *, tasks_at: str | None = None
    ) -> None:
        """``tasks_at``: where the dataset's task pages are, relative to the site root
        (``dataset/task/``); None when the site has none."""
        self.name = path.name
        self.tasks_at = tasks_at
        self.trajectories = read_trajectories(path)
        self.ds = DatasetDir(dataset) if dataset is not None else None
        self.packages: dict[str, TaskPackage] = (
            {p.id: p for p in load_dataset(dataset)} if dataset is not None else {}
        )
        self.nav = [("index.html", "summary"), ("stats.html", "statistics")]

    def runs(self, at: str) -> dict[str, list[dict[str, Any]]]:
        """Task id -> its trajectories, for the task pages (``href`` from the site root, with
        these pages mounted at ``at``)."""
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for index, traj in enumerate(self.trajectories):
            out[traj.task_id].append(
                {
                    "href": f"{at}trajectory/{index}.html",
                    "trial": traj.trial,
                    "agent": traj.agent,
                    "reward": traj.reward,
                }
            )
        return dict(out)

    def task_link(self, task_id: str) -> str | None:
        """The task page of ``task_id`` relative to the site root, when the site has it."""
        if self.tasks_at is None or task_id not in self.packages:
            return None
        return f"{self.tasks_at}{slug(task_id)}.html"

    def paths(self) -> list[str]:
        """The summary and one page per trajectory."""
        count = len(self.trajectories)
        return ["index.html", "stats.html", *[f"trajectory/{i}.html" for i in range(count)]]

    def page(self, path: str, query: Query) -> Page | None:
        """The page at ``path``."""
        if path == "index.html":
            return self.summary_page(query)
        if path == "stats.html":
            return self.stats_page()
        if path.startswith("trajectory/") and path.endswith(".html"):
            number = path[len("trajectory/") : -len(".html")]
            if number.isdigit() and int(number) < len(self.trajectories):
                return self.trajectory_page(int(number))
        return None

    def summary_page(self, query: Query) -> Page:
        """pass^k, the reward histogram, stop reasons and the trajectories the query selects
        (``task``: a task id; ``outcome``: ``passed`` or ``failed``)."""
        rewards = [t.reward for t in self.trajectories if t.reward is not None]
        stops = Counter(t.stop_reason for t in self.trajectories)
        rows = [
            {
                "index": i,
                "traj": t,
                "tokens": t.agent_usage.prompt_tokens + t.agent_usage.completion_tokens,
                "task_link": self.task_link(t.task_id),
            }
            for i, t in enumerate(self.trajectories)
            if _selected(t, query)
        ]
        return Page(
            "trajectory_summary.html",
            "summary",
            {
                "passk": pass_table(self.trajectories),
                "rows": rows,
                "tasks": len({t.task_id for t in self.trajectories}),
                "mean": sum(rewards) / len(rewards) if rewards else None,
                "rewards": histogram(rewards),
                "stops": bars([(s, float(n)) for s, n in stops.most_common()]),
                "query": dict(query),
                "task_ids": sorted({t.task_id for t in self.trajectories}),
                "dataset": self.ds.root.resolve().name if self.ds is not None else None,
                "tasks_at": self.tasks_at,
            },
        )

    def stats_page(self) -> Page:
        """Per agent: episodes, turns, messages and tool calls per episode (mean, median, p90
        and a histogram each) and the errors (``rollout_stats``)."""
        stats = rollout_stats(self.trajectories)
        charts = {
            agent: {m: bars([_bin(b) for b in block[m]["histogram"]]) for m in MEASURES}
            for agent, block in stats["agents"].items()
        }
        return Page(
            "rollout_stats.html",
            "statistics",
            {"stats": stats, "charts": charts, "measures": MEASURES},
        )

    def verdict(
        self, traj: Trajectory, pkg: TaskPackage, gold: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """The verifier's components, recomputed against the task (or why they cannot be)."""
        try:
            result = verify(traj, pkg, gold_diff=gold)
        except VerificationError as exc:
            return [{"name": "verify", "passed": None, "score": None, "detail": str(exc)}]
        return [
            {"name": c.name, "passed": c.passed, "score": c.score, "detail": c.detail}
            for c in result.components
        ]

    def trajectory_page(self, index: int) -> Page:
        """One trajectory: timeline, distances, dense rewards, diffs, verdict and usage."""
        traj = self.trajectories[index]
        pkg, data = self.packages.get(traj.task_id), {}
        spec = _builtin_spec(traj.domain)
        if pkg is not None and self.ds is not None:
            spec = self.ds.domain_spec(pkg.domain)
            gold = gold_diff_for(pkg, self.ds, Layout.from_spec(spec))
            final = final_vs_target(traj.agent_diff, gold)
            data = {
                "final": diff_views(final, fixed_columns(spec)),
                "final_distance": final["distance"],
                "verdict": self.verdict(traj, pkg, gold),
            }
        distances = [float(traj.initial_distance)]
        distances += [float(s.distance) for s in traj.steps if s.distance is not None]
        try:
            dense = line([r.reward for r in dense_rewards(traj)], label="dense reward per call")
        except ValueError:
            dense = None
        return Page(
            "trajectory.html",
            f"{traj.task_id} trial {traj.trial}",
            {
                "traj": traj,
                "timeline": timeline(traj),
                "agent": diff_views(traj.agent_diff, fixed_columns(spec)),
                "distance": line(distances, label="distance to the target per call"),
                "dense": dense,
                "task_link": self.task_link(traj.task_id),
                **data,
            },
        )
