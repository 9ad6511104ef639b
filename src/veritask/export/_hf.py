"""Task datasets in the Hub's format: Parquet configs written with ``datasets`` and a card.

See :mod:`veritask.export._hf_layout` for the configs and columns, and
``docs/design/0048-hub-format.md`` for why the rebuilt dataset is sealed anew.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from veritask import __version__
from veritask._util import loads_untrusted, sha256
from veritask.export._hf_card import DEFAULT_LICENSE, CardSpec, one_split, table, write_card
from veritask.export._hf_layout import (
    EXTRA_FIELD,
    FILES,
    IMAGE_LEVEL,
    JSON_FIELDS,
    POLICIES,
    STATES,
    TASKS,
    HubFormatError,
    Written,
    features,
    push,
    require_datasets,
    write_config,
)
from veritask.task import DatasetDir, TaskPackage, check_dataset, load_dataset, report_dataset

_COPIED = (
    "id",
    "domain",
    "spec_hash",
    "policy",
    "origin",
    "target",
    "reward_basis",
    "difficulty",
    "tags",
    "rules_exercised",
    "boundary_hits",
    "refusal",
    "seed",
    "generator",
)
"""Package fields a ``tasks`` row holds under their own names."""
_NOT_CARRIED = ("manifest.jsonl", "run-manifest.json", "states/", "policies/", "parts/")
"""Files a rebuild makes again (from the rows, states and policies), so not carried as files;
``run-manifest.json`` records the generating run's units, which a rebuild does not have."""


def task_row(index: int, pkg: TaskPackage) -> dict[str, Any]:
    """One package as a row of the ``tasks`` config (a dataset that ``check`` certifies)."""
    data = pkg.model_dump(mode="json")
    return {
        "index": index,
        "id": pkg.id,
        "domain": pkg.domain,
        "prompt": pkg.task_description,
        "total_goal": pkg.task.total_goal,
        "difficulty": pkg.difficulty,
        "tags": list(pkg.tags),
        "rules_exercised": list(pkg.rules_exercised),
        "reward_basis": list(pkg.reward_basis),
        "refusal": pkg.refusal,
        "boundary_hits": pkg.boundary_hits,
        "witness_tools": [call.tool for call in pkg.witness],
        "certified": True,
        "grounded": True,
        "spoiler_free": True,
        "origin": pkg.origin,
        "target": pkg.target,
        "policy": pkg.policy,
        "spec_hash": pkg.spec_hash,
        "seed": pkg.seed,
        "generator": pkg.generator,
        **{name: json.dumps(data[name], ensure_ascii=False) for name in JSON_FIELDS},
        EXTRA_FIELD: json.dumps(_extra(data), ensure_ascii=False),
    }


def _extra(data: dict[str, Any]) -> dict[str, Any]:
    """The package fields no column of their own holds (optional ones such as the archetype's
    ``construction``), so that every field round-trips, including ones added later."""
    held = {*JSON_FIELDS, *_COPIED, "task_description"}
    return {k: v for k, v in data.items() if k not in held}


def package_of(row: dict[str, Any]) -> TaskPackage:
    """The package a ``tasks`` row holds (the inverse of :func:`task_row`).

    Raises:
        ValueError: The row is not a package (a ``pydantic.ValidationError`` or bad JSON).
    """
    data = {name: loads_untrusted(row[name]) for name in JSON_FIELDS}
    data |= {key: row[key] for key in _COPIED}
    extra = loads_untrusted(row.get(EXTRA_FIELD) or "{}")
    if not isinstance(extra, dict):
        raise ValueError(f"{EXTRA_FIELD}: not a JSON object")
    data |= extra
    data["task_description"] = row["prompt"]
    return TaskPackage.model_validate(data)


def _state_rows(ds: DatasetDir, packages: list[TaskPackage]) -> list[dict[str, Any]]:
    """Every state once, in order of first use, as a zlib-compressed image."""
    origins = {p.origin for p in packages}
    order = list(dict.fromkeys(d for p in packages for d in (p.origin, p.target)))
    rows = []
    for digest in order:
        image = ds.read_state(digest)
        if sha256(image) != digest:
            raise HubFormatError(f"state {digest[:12]}…: its bytes do not hash to its name")
        role = "origin" if digest in origins else "target"
        rows.append(
            {"sha256": digest, "role": role, "image_zlib": zlib.compress(image, IMAGE_LEVEL)}
        )
    return rows


def _file_rows(root: Path) -> list[dict[str, Any]]:
    """The directory's other files (run, spec, seal, costs), sorted by path."""
    rows = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel in _NOT_CARRIED or rel.startswith(_NOT_CARRIED[2:]):
            continue
        data = path.read_bytes()
        rows.append({"path": rel, "sha256": sha256(data), "data": data})
    return rows


def _checked(root: Path) -> dict[str, Any]:
    """``check``'s report of a dataset that passes it.

    Raises:
        HubFormatError: Some package fails (a Hub dataset holds certified tasks only).
    """
    report = check_dataset(root).to_json()
    if report["failures"]:
        shown = [f"{f['id']}: {f['kind']}: {f['detail']}" for f in report["failures"][:20]]
        head = f"'veritask check {root}' fails; only certified datasets are exported"
        raise HubFormatError("\n  ".join([head, *shown]))
    return report


def export_hf(
    directory: str | Path,
    out: str | Path,
    *,
    license: str = DEFAULT_LICENSE,
    push_to: str | None = None,
    command: str | None = None,
) -> Written:
    """Write a task dataset in the Hub's format: Parquet configs and a dataset card.

    The dataset is checked first (every witness replayed); one with a failing package is not
    exported. The same directory gives the same bytes.

    Args:
        directory: A dataset directory (``veritask generate``'s output).
        out: The folder to write (created; files of an earlier export are replaced).
        license: The licence id the card names.
        push_to: A Hub repo id to push to afterwards (needs the user's token, ``HF_TOKEN``).
        command: The command line to show in the card's "how it was made".

    Returns:
        The folder and the rows per config.

    Raises:
        HubFormatError: The dataset does not pass ``check``, or ``datasets`` is missing.
        DatasetError: The directory is not a valid dataset.
    """
    require_datasets()  # before the check, which takes a while
    root, dest = Path(directory), Path(out)
    ds = DatasetDir(root)
    packages = load_dataset(ds)
    checked = _checked(root)
    rows = {
        TASKS: [task_row(i, p) for i, p in enumerate(packages)],
        STATES: _state_rows(ds, packages),
        POLICIES: [
            {"sha256": d, "text": ds.read_policy(d)}
            for d in dict.fromkeys(p.policy for p in packages)
        ],
        FILES: _file_rows(root),
    }
    written = {name: write_config(dest, name, r, features(name)) for name, r in rows.items()}
    spec_configs = {name: one_split(d) for name, d in written.items()}
    spec = CardSpec(
        title=_title(packages),
        license=license,
        rows=len(packages),
        configs=spec_configs,
        tags=["veritask", "agents", "tool-use", "verifiable-rewards", *_domains(packages)],
        sections=_sections(root, packages, checked, report_dataset(root), license, command),
    )
    card = write_card(dest, spec)
    if push_to:
        push(dest, spec_configs, push_to)
    return Written(dest, {name: len(r) for name, r in rows.items()}, card)


def _domains(packages: Iterable[TaskPackage]) -> list[str]:
    return sorted({p.domain for p in packages})


def _title(packages: list[TaskPackage]) -> str:
    return f"veritask {', '.join(_domains(packages)) or 'empty'} tasks ({len(packages)})"


def _made(root: Path, command: str | None) -> str:
    """How the dataset was made: its run settings, the generator, the commands."""
    run = DatasetDir(root).read_run() or {}
    lines = [
        f"- domain: `{run.get('domain', '?')}`, seed `{run.get('seed', '?')}`, "
        f"{run.get('n', '?')} packages asked for",
        f"- generator: `{run.get('generator', '?')}`; spec sha256 `{run.get('spec_hash', '?')}`",
        f"- exported with veritask {__version__}",
    ]
    if "domain" in run and "n" in run:
        domain = run.get("spec") or run["domain"]
        lines.append(
            f"- made with: `veritask generate --domain {domain} --n {run['n']} "
            f"--seed {run.get('seed', 0)} --out DIR`"
        )
    if run.get("spec"):
        lines.append(f"- the spec file `{run['spec']}` is in the `files` config")
    if command:
        lines.append(f"- exported with: `{command}`")
    return "\n".join(lines)


def _quality(checked: dict[str, Any], report: dict[str, Any], packages: list[TaskPackage]) -> str:
    """``check`` and ``report`` in prose and tables."""
    n = checked["tasks"]
    head = (
        f"`veritask check` before export: {checked['certified']} of {n} certified (the witness "
        f"replays on the initial state and ends at the target state), {checked['grounded']} "
        f"grounded, {checked['spoiler_free']} spoiler-free, {checked['duplicates']} duplicates, "
        f"{len(checked['failures'])} failures."
    )
    lint = checked["lint"]["counts"]
    if lint:
        head += " Lint findings (not failures): " + ", ".join(f"{k} {v}" for k, v in lint.items())
    tiers = table(("tier", "tasks"), sorted(report["difficulty"].items()))
    tags = table(("tag", "tasks"), [(k, v) for k, v in report["tags"].items() if v])
    rules = Counter(r for p in packages for r in p.rules_exercised)
    rule_table = table(("rule", "tasks exercising it"), sorted(rules.items()))
    stats = (
        f"Rule coverage {report['rule_coverage']}, tool coverage {report['tool_coverage']}, "
        f"boundary density {report['boundary_density']}, refusal share "
        f"{report['refusal_share']}, mean witness calls {report['mean_witness_calls']}."
    )
    return "\n\n".join([head, stats, tiers, tags, rule_table])


def _sections(
    root: Path,
    packages: list[TaskPackage],
    checked: dict[str, Any],
    report: dict[str, Any],
    license: str,
    command: str | None,
) -> dict[str, str]:
    return {
        "What this is": _WHAT,
        "How it was made": _made(root, command),
        "Quality report": _quality(checked, report, packages),
        "Loading and rebuilding": _USE,
        "Licence": f"`{license}`. The tasks are generated from the domain spec named above.",
    }


_WHAT = """\
Certified tasks for tool-using agents, made by veritask.
Each row of the `tasks` config is one task: `prompt` is the user scenario the user simulator
plays (structured in `task`, JSON), `user_profile` the simulated user, `witness` (JSON) the tool
calls that solve it with what the environment answered, `reward_basis` how an episode is scored,
`difficulty` its tier, `tags` and `rules_exercised` what it tests. `origin` and `target` are the
sha256 of the initial and the expected final database state; the `states` config holds each
state once (`image_zlib`: the SQLite file, zlib-compressed), `policies` the policy text the
agent reads. `certified`, `grounded` and `spoiler_free` are the certificates `veritask check`
established before export."""

_USE = """\
```python
import datasets, zlib
tasks = datasets.load_dataset(REPO, split="train")            # the default config, tasks
states = datasets.load_dataset(REPO, "states", split="train")
image = {r["sha256"]: r for r in states}[tasks[0]["origin"]]["image_zlib"]
open("origin.sqlite", "wb").write(zlib.decompress(image))
```

`veritask import-hf REPO --out DIR` rebuilds a veritask dataset directory, sealed anew, and
`veritask check DIR` replays every witness again: the certificates are re-established, not
trusted. The import also compares every task with the seal the dataset was exported with
(`files`: `digest.json`) and refuses a task that was edited since."""
