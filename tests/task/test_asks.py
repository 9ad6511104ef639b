"""``check`` refuses requests that name tools, tables, columns or rules the domain lacks.

Every request of every generated package speaks of its own domain; each kind of edit to one
request (resealed, so only this check can see it) is reported as an integrity failure that
names the request and the field.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask.env import CompiledDomain
from veritask.task import DatasetDir, TaskPackage, check_dataset, load_dataset
from veritask.task._asks import ask_problems

DOMAINS = ("retail", "travel", "clinic", "gym", "registrar", "mock")


@pytest.fixture(scope="module")
def datasets(builtin_datasets: dict[str, Path]) -> dict[str, Path]:
    return builtin_datasets


@pytest.mark.parametrize("domain", DOMAINS)
def test_generated_requests_speak_of_their_domain(datasets: dict[str, Path], domain: str) -> None:
    ds = DatasetDir(datasets[domain])
    compiled = CompiledDomain.from_spec(ds.domain_spec(domain))
    for pkg in load_dataset(datasets[domain]):
        assert ask_problems(pkg.task, compiled.spec, compiled.tools) == []


def _first_ask(data: dict[str, Any], with_key: str) -> dict[str, Any]:
    for sub in data["task"]["sub_goals"]:
        ask = sub.get("ask")
        if isinstance(ask, dict) and ask.get(with_key):
            return ask
    raise LookupError(with_key)


def _set_tool(d: dict[str, Any]) -> str:
    _first_ask(d, "tool")["tool"] = "drop_everything"
    return "ask.tool: 'drop_everything' is not a write tool"


def _set_table(d: dict[str, Any]) -> str:
    _first_ask(d, "target")["target"]["table"] = "no_such_table"
    return "table 'no_such_table' is not in the spec"


def _set_column(d: dict[str, Any]) -> str:
    target = _first_ask(d, "target")["target"]
    target["match"] = {"no_such_column": 1}
    return "has no column 'no_such_column'"


def _set_value(d: dict[str, Any]) -> str:
    _first_ask(d, "tool")["values"] = {"no_such_argument": 1}
    return "has no argument 'no_such_argument'"


def _set_rule(d: dict[str, Any]) -> str:
    for sub in d["task"]["sub_goals"]:
        if sub.get("fallbacks"):
            sub["fallbacks"][0]["rule"] = "NO_SUCH_RULE"
            return "'NO_SUCH_RULE' is not a rule of the spec"
    raise LookupError("fallbacks")


EDITS: dict[str, Callable[[dict[str, Any]], str]] = {
    "tool": _set_tool,
    "table": _set_table,
    "column": _set_column,
    "value": _set_value,
    "rule": _set_rule,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_request_is_an_integrity_failure(
    datasets: dict[str, Path], tmp_path: Path, edit: str
) -> None:
    for domain in DOMAINS:
        data = Path(shutil.copytree(datasets[domain], tmp_path / f"{domain}-{edit}"))
        ds = DatasetDir(data)
        packages = load_dataset(data)
        for i, pkg in enumerate(packages):
            raw = json.loads(pkg.model_dump_json())
            try:
                why = EDITS[edit](raw)
            except LookupError:
                continue
            packages[i] = TaskPackage.model_validate(raw)
            ds.manifest.write_text("".join(p.model_dump_json() + "\n" for p in packages))
            ds.seal(packages)
            report = check_dataset(data)
            found = [f for f in report.failures if f["id"] == pkg.id and f["kind"] == "integrity"]
            assert any(
                f["detail"].startswith("task.sub_goals[") and why in f["detail"] for f in found
            ), found
            return
    pytest.fail(f"no package of any domain has a request to edit for {edit!r}")
