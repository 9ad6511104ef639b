"""Logic instance file pages: families with answer distributions per difficulty, instances."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from veritask._util import loads_untrusted
from veritask._view._charts import bars
from veritask._view._pages import Page, Query, pretty, slug
from veritask.logic import Family, builtin_families, canonical, read_records, report

_TOP_ANSWERS = 8
GATE_STATES = ("passed", "failed", "none")
"""The ``gates`` filter: a family's gate record passed, failed, or there is none."""
_RECORD_KEYS = {"family", "version", "mode", "passed", "gates"}


def _gate_files(path: Path, gates: Path | None) -> list[Path]:
    if gates is not None:
        return sorted(gates.glob("*.json"))
    here = path.resolve().parent
    return sorted(here.glob("*.gates.json")) + sorted((here / "gates").glob("*.json"))


def read_gate_records(path: Path, gates: Path | None = None) -> dict[str, dict[str, Any]]:
    """Family id -> its gate record (``FamilyGateRecord.to_json``) from the JSON files of
    ``gates`` (``logic gate all --record DIR``), else from ``*.gates.json`` next to the
    instance file and ``gates/*.json`` beside it. Files that are not gate records are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for file in _gate_files(path, gates):
        try:
            record = loads_untrusted(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.keys() >= _RECORD_KEYS:
            out[str(record["family"])] = record
    return out


def gate_state(record: dict[str, Any] | None) -> str:
    """``passed``, ``failed`` or ``none`` (no record)."""
    if record is None:
        return "none"
    return "passed" if record["passed"] else "failed"


def distribution(answers: Counter[str]) -> list[tuple[str, float]]:
    """The most common answers with their counts, the rest summed as ``(other)``."""
    top = answers.most_common(_TOP_ANSWERS)
    rest = sum(answers.values()) - sum(n for _, n in top)
    items = [(a if len(a) <= 24 else a[:23] + "…", float(n)) for a, n in top]
    return items + ([("(other)", float(rest))] if rest else [])


def agreement(record: dict[str, Any], family: Family | None) -> list[dict[str, Any]]:
    """Each validator of a built-in family on the record's inputs, against its answer; empty
    when the family is not built in or is another version (its code is not run here)."""
    if family is None or family.version != str(record["version"]):
        return []
    out = []
    for i, validator in enumerate(family.validators):
        name = getattr(validator, "__name__", f"validator {i + 1}")
        try:
            answer = canonical(validator(record.get("inputs", {})))
        except Exception as exc:  # a failing validator is a finding to show
            out.append({"name": name, "answer": f"{type(exc).__name__}: {exc}", "agrees": False})
            continue
        out.append({"name": name, "answer": answer, "agrees": answer == str(record["answer"])})
    return out


class LogicPages:
    """The pages of one logic instance file (``veritask logic generate``)."""

    kind = "logic"

    def __init__(self, path: Path, *, gates: Path | None = None) -> None:
        """``gates``: a directory of gate records (default: found next to the file)."""
        self.name = path.name
        self.gates = read_gate_records(path, gates)
        self.records = [(n, r) for n, r in read_records(path)]
        self.families = builtin_families()
        self.report = report(path, families=self.families)
        self.by_family: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        for number, record in self.records:
            self.by_family[slug(str(record["family"]))].append((number, record))
        self.by_line = dict(self.records)
        self.nav = [("index.html", "families")]

    def paths(self) -> list[str]:
        """The family list, one page per family and one per instance (by line number)."""
        families = [f"family/{s}.html" for s in self.by_family]
        return ["index.html", *families, *[f"instance/{n}.html" for n, _ in self.records]]

    def page(self, path: str, query: Query) -> Page | None:
        """The page at ``path``."""
        if path == "index.html":
            return self.index_page(query)
        name = path.rpartition("/")[2].removesuffix(".html")
        if path.startswith("family/") and name in self.by_family:
            return self.family_page(name)
        if path.startswith("instance/") and name.isdigit() and int(name) in self.by_line:
            return self.instance_page(int(name))
        return None

    def index_page(self, query: Query) -> Page:
        """Every family with its answer figures, flags and gate outcome (``category`` and
        ``gates`` filter)."""
        rep, wanted = self.report, query.get("category", "")
        gated = query.get("gates", "")
        flagged = {(c["family"], str(c["difficulty"])) for c in rep["degenerate"]["cells"]}
        rows = [
            {
                "id": fid,
                "slug": slug(fid),
                "info": info,
                "flagged": sorted(d for f, d in flagged if f == fid),
                "gates": gate_state(self.gates.get(fid)),
            }
            for fid, info in sorted(rep["families"].items())
            if (not wanted or info["category"] == wanted)
            and (not gated or gate_state(self.gates.get(fid)) == gated)
        ]
        categories = sorted({i["category"] for i in rep["families"].values()})
        chart = bars(
            [
                (f"difficulty {d}", float(n))
                for d, n in sorted(rep["difficulties"].items(), key=lambda kv: int(kv[0]))
            ]
        )
        return Page(
            "logic_index.html",
            "families",
            {
                "rows": rows,
                "report": rep,
                "difficulties": chart,
                "categories": categories,
                "gate_states": GATE_STATES,
                "gated": len(self.gates),
                "query": dict(query),
            },
        )

    def family_page(self, name: str) -> Page:
        """One family: per difficulty, the answer distribution and its figures; its instances."""
        records = self.by_family[name]
        fid = str(records[0][1]["family"])
        by_level: dict[int, Counter[str]] = defaultdict(Counter)
        for _, record in records:
            by_level[int(record["difficulty"])][str(record["answer"])] += 1
        levels = [
            {
                "difficulty": d,
                "chart": bars(distribution(by_level[d])),
                "stats": self.report["families"][fid]["answers_by_difficulty"].get(str(d), {}),
            }
            for d in sorted(by_level)
        ]
        return Page(
            "logic_family.html",
            fid,
            {
                "fid": fid,
                "info": self.report["families"][fid],
                "levels": levels,
                "records": records,
                "gate": self.gates.get(fid),
            },
        )

    def instance_page(self, number: int) -> Page:
        """One instance: question, answer, inputs and the validators' agreement."""
        record = self.by_line[number]
        family = self.families.get(str(record["family"]))
        return Page(
            "logic_instance.html",
            f"{record['family']} line {number}",
            {
                "record": record,
                "number": number,
                "inputs": pretty(record.get("inputs")),
                "family_slug": slug(str(record["family"])),
                "agreement": agreement(record, family),
                "gate": self.gates.get(str(record["family"])),
            },
        )
