"""Logic instances in the Hub's format, as reasoning-gym entries: ``question``, ``answer``,
``metadata``.

``metadata`` holds the fields ``veritask.logic.rg`` puts there (``source_dataset``,
``source_index``, ``family``, ``version``, ``category``, ``split``, ``seed``, ``index``,
``difficulty``) and the hidden ``inputs`` as JSON text: instances of different families have
different inputs, which one Parquet column type cannot hold. :func:`rg_entry` turns a row back
into the entry ``score_entry`` and reasoning-gym-style trainers take.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veritask import __version__
from veritask._util import loads_untrusted, read_json
from veritask.export._hf_card import DEFAULT_LICENSE, CardSpec, table, write_card
from veritask.export._hf_layout import HubFormatError, Written, push, require_datasets, write_config
from veritask.logic import Family, read_records, report

LOGIC = "instances"
"""The one config of a logic dataset; its splits are the instances' splits."""


def _features() -> Any:
    datasets = require_datasets()
    value = datasets.Value
    meta = {
        "source_dataset": value("string"),
        "source_index": value("int64"),
        "family": value("string"),
        "version": value("string"),
        "category": value("string"),
        "split": value("string"),
        "seed": value("int64"),
        "index": value("int64"),
        "difficulty": value("int32"),
        "inputs": value("string"),
    }
    return datasets.Features(
        {"question": value("string"), "answer": value("string"), "metadata": meta}
    )


def logic_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """One ``logic generate`` line as a row: reasoning-gym's entry, ``inputs`` as JSON text."""
    return {
        "question": record["question"],
        "answer": record["answer"],
        "metadata": {
            "source_dataset": record["family"],
            "source_index": record["index"],
            "family": record["family"],
            "version": str(record["version"]),
            "category": record.get("category", ""),
            "split": record["split"],
            "seed": record["seed"],
            "index": record["index"],
            "difficulty": record["difficulty"],
            "inputs": json.dumps(record.get("inputs", {}), ensure_ascii=False),
        },
    }


def rg_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    """The reasoning-gym entry a row holds (``metadata["inputs"]`` a dict again), as
    ``veritask.logic.rg.score_entry`` and reasoning-gym-style trainers take it."""
    meta = dict(row["metadata"])
    meta["inputs"] = loads_untrusted(meta["inputs"])
    return {"question": row["question"], "answer": row["answer"], "metadata": meta}


def _validated(path: Path, families: Mapping[str, Family] | None) -> dict[str, Any]:
    """``logic report``'s figures for a file every known line of which re-generates.

    Raises:
        HubFormatError: A line does not re-generate to itself, or errs.
    """
    data = report(path, families=families)
    validation = data["validation"]
    if validation["mismatches"] or validation["errors"]:
        raise HubFormatError(
            f"'veritask logic report {path}': {validation['mismatches']} lines do not "
            f"re-generate to themselves and {validation['errors']} err; only valid lines "
            "are exported"
        )
    return data


def export_logic_hf(
    path: str | Path,
    out: str | Path,
    *,
    families: Mapping[str, Family] | None = None,
    license: str = DEFAULT_LICENSE,
    push_to: str | None = None,
    command: str | None = None,
) -> Written:
    """Write a ``logic generate`` JSONL file in the Hub's format, one split per instance split.

    Args:
        path: The JSONL file.
        out: The folder to write.
        families: Families to re-generate lines with (default: built-in and file families).
        license: The licence id the card names.
        push_to: A Hub repo id to push to afterwards (needs the user's token, ``HF_TOKEN``).
        command: The command line to show in the card.

    Returns:
        The folder and the rows per split.

    Raises:
        HubFormatError: A line does not re-generate, or ``datasets`` is missing.
        ValueError: A line is not an instance record.
    """
    require_datasets()
    src, dest = Path(path), Path(out)
    checked = _validated(src, families)
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, record in read_records(src):
        by_split[str(record["split"])].append(logic_row(record))
    feats = _features()
    splits = {
        name: write_config(dest, LOGIC, rows, feats, split=name)
        for name, rows in sorted(by_split.items())
    }
    count = sum(len(rows) for rows in by_split.values())
    spec = CardSpec(
        title=f"veritask logic tasks ({count})",
        license=license,
        rows=count,
        configs={LOGIC: splits},
        tags=["veritask", "reasoning", "reasoning-gym", "verifiable-rewards"],
        task_categories=["question-answering", "text-generation"],
        sections=_sections(src, checked, license, command),
    )
    card = write_card(dest, spec)
    if push_to:
        push(dest, {LOGIC: splits}, push_to)
    return Written(dest, {name: len(rows) for name, rows in by_split.items()}, card)


def _made(src: Path, command: str | None) -> str:
    sidecar = src.with_name(src.name + ".run.json")
    config = read_json(sidecar).get("config", {}) if sidecar.is_file() else {}
    lines = [f"- exported with veritask {__version__}"]
    if config:
        fams = ", ".join(config.get("families", []))
        lines.insert(0, f"- families (id@version): {fams}")
        lines.insert(
            1,
            f"- {config.get('n')} instances per family, seed {config.get('seed')}, split "
            f"`{config.get('split')}`, difficulty {config.get('difficulty')}, mix "
            f"`{config.get('mix')}`",
        )
        level = (
            f"--difficulty {config['difficulty']}"
            if config.get("difficulty") is not None
            else f"--mix {config.get('mix')}"
        )
        lines.append(
            f"- made with: `veritask logic generate FAMILY --n {config.get('n')} {level} "
            f"--seed {config.get('seed')} --split {config.get('split')} --out FILE`"
        )
    if command:
        lines.append(f"- exported with: `{command}`")
    return "\n".join(lines)


def _quality(data: dict[str, Any]) -> str:
    validation, degenerate = data["validation"], data["degenerate"]
    head = (
        f"`veritask logic report` before export: {data['instances']} instances, "
        f"{validation['checked']} re-generated from their seeds with the same question and "
        f"answer, {validation['mismatches']} mismatches, {validation['unverified']} "
        f"unverified (family unknown here), {data['duplicates']['questions']} duplicate "
        f"questions, {len(degenerate['cells'])} degenerate (family, difficulty) cells."
    )
    rows = [
        (fid, fam["category"], fam["instances"], ", ".join(sorted(fam["difficulties"], key=int)))
        for fid, fam in data["families"].items()
    ]
    fam_table = table(("family", "category", "instances", "difficulties"), rows)
    diff = Counter({int(k): v for k, v in data["difficulties"].items()})
    diff_table = table(("difficulty", "instances"), sorted(diff.items()))
    return "\n\n".join([head, fam_table, diff_table])


def _sections(src: Path, data: dict[str, Any], license: str, command: str | None) -> dict[str, str]:
    return {
        "What this is": _WHAT,
        "How it was made": _made(src, command),
        "Quality report": _quality(data),
        "Use": _USE,
        "Licence": f"`{license}`.",
    }


_WHAT = """\
Logic and reasoning problems with one canonical answer each, made by veritask's task families.
Rows are reasoning-gym entries: `question`, `answer`, and `metadata` (family, version, split,
seed, index and difficulty rebuild the instance; `inputs`, JSON text, is its hidden state)."""

_USE = """\
```python
import datasets
from veritask.export import rg_entry
from veritask.logic.rg import score_entry
rows = datasets.load_dataset(REPO, split="train")
entry = rg_entry(rows[0])
score_entry(entry["answer"], entry)   # 1.0: strict, the family's checker decides
```"""
