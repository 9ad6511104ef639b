"""What a task dataset looks like in the Hugging Face Hub's format: configs, columns, paths.

One folder holds one Parquet file per config and a ``README.md`` dataset card whose YAML front
matter lists the configs, so ``datasets.load_dataset(folder)`` (or a Hub repo id) loads the
default config, ``tasks``, and ``load_dataset(folder, "states")`` the others:

- ``tasks``: one row per task package, in manifest order.
- ``states``: every state once, by sha256: the SQLite image, zlib-compressed (any ``zlib``
  opens it; ``zlib.decompress(row["image_zlib"])`` is the database file).
- ``policies``: the policy texts by sha256.
- ``files``: the other files of the dataset directory (``run.json``, ``spec.yaml``, the seal
  ``digest.json`` as exported, costs), so the directory can be rebuilt.

The paths are those ``DatasetDict.push_to_hub(repo, config_name=...)`` writes, so pushing
the folder's configs leaves the card's ``data_files`` true on the Hub.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

SPLIT = "train"
"""The split every task dataset config has (a task dataset is not split by veritask)."""
TASKS, STATES, POLICIES, FILES = "tasks", "states", "policies", "files"
CONFIGS = (TASKS, STATES, POLICIES, FILES)
"""Config names, the default first."""
JSON_FIELDS = ("task", "user_profile", "witness")
"""Package fields with free-form JSON inside (tool arguments, results): kept as JSON text,
which reads back to the same values in the same key order (a Parquet struct would not)."""
EXTRA_FIELD = "extra"
"""The ``tasks`` column holding, as JSON text, every package field without a column of its own."""
CARD = "README.md"
IMAGE_LEVEL = 6
"""zlib level of the state images (the level veritask compresses origins with)."""
MAX_IMAGE_BYTES = 256 << 20
"""A state image may inflate to at most this many bytes on import."""
HF_EXTRA = "pip install 'veritask[hf]'"


class HubFormatError(ValueError):
    """A folder or repo is not a task dataset in the Hub's format, or does not match itself."""


def require_datasets() -> ModuleType:
    """The ``datasets`` library.

    Raises:
        HubFormatError: It is not installed (naming the extra that installs it).
    """
    try:
        return importlib.import_module("datasets")
    except ImportError:
        raise HubFormatError(f"the Hub format needs the 'datasets' library: {HF_EXTRA}") from None


def data_path(config: str, split: str = SPLIT) -> str:
    """The Parquet file of one config and split, relative to the dataset folder."""
    return f"{config}/{split}-00000-of-00001.parquet"


def features(config: str) -> Any:
    """The ``datasets.Features`` of one task dataset config."""
    datasets = require_datasets()
    value, seq = datasets.Value, datasets.List
    columns: dict[str, dict[str, Any]] = {
        TASKS: {
            "index": value("int32"),
            "id": value("string"),
            "domain": value("string"),
            "prompt": value("string"),
            "total_goal": value("string"),
            "difficulty": value("string"),
            "tags": seq(value("string")),
            "rules_exercised": seq(value("string")),
            "reward_basis": seq(value("string")),
            "refusal": value("bool"),
            "boundary_hits": value("int32"),
            "witness_tools": seq(value("string")),
            "certified": value("bool"),
            "grounded": value("bool"),
            "spoiler_free": value("bool"),
            "origin": value("string"),
            "target": value("string"),
            "policy": value("string"),
            "spec_hash": value("string"),
            "seed": value("int64"),
            "generator": value("string"),
            **{name: value("string") for name in JSON_FIELDS},
            EXTRA_FIELD: value("string"),
        },
        STATES: {"sha256": value("string"), "role": value("string"), "image_zlib": value("binary")},
        POLICIES: {"sha256": value("string"), "text": value("string")},
        FILES: {"path": value("string"), "sha256": value("string"), "data": value("binary")},
    }
    return datasets.Features(columns[config])


@dataclass(frozen=True)
class Written:
    """What an export wrote.

    Attributes:
        out: The dataset folder.
        rows: Rows per config.
        card: The dataset card's path.
    """

    out: Path
    rows: dict[str, int]
    card: Path


def write_config(
    out: Path, config: str, rows: list[dict[str, Any]], feats: Any, *, split: str = SPLIT
) -> Any:
    """Write one split of a config as its Parquet file with ``datasets``; return the
    ``Dataset``.

    Raises:
        HubFormatError: ``datasets`` is not installed.
    """
    datasets = require_datasets()
    columns = {name: [row[name] for row in rows] for name in feats}
    ds = datasets.Dataset.from_dict(columns, features=feats)
    path = out / data_path(config, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_parquet(str(path))
    return ds


def push(
    out: Path, configs: dict[str, dict[str, Any]], repo_id: str, *, private: bool = False
) -> None:
    """Push a written folder to the Hub: each config with ``DatasetDict.push_to_hub``, then
    the folder's card (the one ``push_to_hub`` writes names configs only).

    The token is the user's, from the environment (``HF_TOKEN``) or ``hf auth login``; none is
    read or stored here.

    Args:
        out: The folder the export wrote (its ``README.md`` is uploaded last).
        configs: Config name -> split -> the ``Dataset`` written; the first is the default.
        repo_id: ``user/name`` of the dataset repo (created when missing).
        private: Create the repo private.
    """
    datasets = require_datasets()
    hub = importlib.import_module("huggingface_hub")
    for position, (name, splits) in enumerate(configs.items()):
        datasets.DatasetDict(splits).push_to_hub(
            repo_id, config_name=name, set_default=position == 0, private=private
        )
    hub.HfApi().upload_file(
        path_or_fileobj=str(out / CARD),
        path_in_repo=CARD,
        repo_id=repo_id,
        repo_type="dataset",
        commit_message="Dataset card written by veritask",
    )
