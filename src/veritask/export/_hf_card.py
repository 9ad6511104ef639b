"""Dataset cards: YAML front matter the Hub reads (configs, features, licence, size) and prose.

The front matter is made by ``huggingface_hub.DatasetCardData`` and ``datasets``'
``DatasetInfosDict`` (the code the Hub itself uses), not written by hand.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text
from veritask.export._hf_layout import CARD, SPLIT, data_path

DEFAULT_LICENSE = "apache-2.0"
"""The licence a card names unless told otherwise: veritask's, under which its built-in
domain specs (the source of every task) are published."""


def size_category(n: int) -> str:
    """The Hub's size category for ``n`` rows (``n<1K``, ``1K<n<10K`` ...)."""
    bounds = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))
    for bound, name in bounds:
        if n < bound:
            return name
    return "100K<n<1M" if n < 1_000_000 else "n>1M"


@dataclass
class CardSpec:
    """What a card says.

    Attributes:
        title: The pretty name.
        license: An SPDX-like licence id the Hub knows (``apache-2.0``, ``cc-by-4.0`` ...).
        rows: The default config's row count (for the size category).
        configs: Config name -> split name -> the ``Dataset`` written (first config default).
        tags: Hub tags.
        task_categories: Hub task categories.
        sections: Markdown sections after the title, in order: heading -> body.
    """

    title: str
    license: str
    rows: int
    configs: Mapping[str, Mapping[str, Any]]
    tags: list[str] = field(default_factory=list)
    task_categories: list[str] = field(default_factory=lambda: ["text-generation"])
    sections: dict[str, str] = field(default_factory=dict)


def _info(ds: Any, config: str, splits: Mapping[str, Any]) -> Any:
    """A ``DatasetInfo`` of one config with its splits' row counts."""
    info_mod = importlib.import_module("datasets.info")
    splits_mod = importlib.import_module("datasets.splits")
    info = info_mod.DatasetInfo(features=ds.features, config_name=config)
    info.splits = splits_mod.SplitDict(
        {name: splits_mod.SplitInfo(name=name, num_examples=len(d)) for name, d in splits.items()}
    )
    return info


def front_matter(spec: CardSpec) -> str:
    """The card's YAML front matter (without the ``---`` lines)."""
    hub = importlib.import_module("huggingface_hub")
    info_mod = importlib.import_module("datasets.info")
    configs = [
        {
            "config_name": name,
            **({"default": True} if position == 0 else {}),
            "data_files": [{"split": split, "path": data_path(name, split)} for split in splits],
        }
        for position, (name, splits) in enumerate(spec.configs.items())
    ]
    data = hub.DatasetCardData(
        license=spec.license,
        pretty_name=spec.title,
        task_categories=spec.task_categories,
        size_categories=[size_category(spec.rows)],
        tags=spec.tags,
        configs=configs,
    )
    infos = {
        name: _info(next(iter(splits.values())), name, splits)
        for name, splits in spec.configs.items()
    }
    info_mod.DatasetInfosDict(infos).to_dataset_card_data(data)
    text: str = data.to_yaml()
    return text


def render_card(spec: CardSpec) -> str:
    """The whole card: front matter, title, sections."""
    parts = [f"---\n{front_matter(spec)}\n---\n", f"# {spec.title}\n"]
    parts += [f"## {heading}\n\n{body.strip()}\n" for heading, body in spec.sections.items()]
    return "\n".join(parts)


def write_card(out: Path, spec: CardSpec) -> Path:
    """Write ``README.md`` into ``out``; return its path."""
    path = out / CARD
    atomic_write_text(path, render_card(spec))
    return path


def table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def one_split(ds: Any) -> dict[str, Any]:
    """``{"train": ds}``: the splits of a config with a single split."""
    return {SPLIT: ds}
