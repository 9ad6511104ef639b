"""Logic instances in the Hub's format: reasoning-gym entries that load and score again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.export import HubFormatError, export_logic_hf, rg_entry
from veritask.logic import get_family, produce, write_jsonl
from veritask.logic.rg import score_entry

datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Arithmetic-chain instances of two splits in one file (as ``logic generate`` writes)."""
    family = get_family("arithmetic_chain")
    path = tmp_path_factory.mktemp("logic") / "logic.jsonl"
    records = []
    for split in ("train", "test"):
        production = produce([family], 4, difficulty=2, seed=3, split=split)
        records += [{**inst.to_json(), "category": family.category} for inst in production]
    write_jsonl(path, records)
    return path


def test_logic_export_loads_as_reasoning_gym_entries(instances: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    result = CliRunner().invoke(
        cli,
        ["logic", "export", str(instances), "--format", "hf", "--out", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert sorted(loaded) == ["test", "train"]
    assert (len(loaded["train"]), len(loaded["test"])) == (4, 4)
    lines = [json.loads(line) for line in instances.read_text().splitlines()]
    for row in loaded["train"]:
        entry = rg_entry(row)
        assert set(entry) == {"question", "answer", "metadata"}
        meta = entry["metadata"]
        assert meta["source_dataset"] == meta["family"] == "arithmetic_chain"
        assert isinstance(meta["inputs"], dict)
        assert score_entry(entry["answer"], entry) == 1.0
        assert score_entry("not a number", entry) == 0.0
    first = rg_entry(loaded["train"][0])
    assert first["metadata"]["inputs"] == lines[0]["inputs"]
    assert first["question"] == lines[0]["question"]


def test_logic_card_and_bytes(instances: Path, tmp_path: Path) -> None:
    one = export_logic_hf(instances, tmp_path / "one", license="cc0-1.0")
    two = export_logic_hf(instances, tmp_path / "two", license="cc0-1.0")
    files = sorted(p.relative_to(one.out) for p in one.out.rglob("*") if p.is_file())
    assert [str(f) for f in files] == [
        "README.md",
        "instances/test-00000-of-00001.parquet",
        "instances/train-00000-of-00001.parquet",
    ]
    for rel in files:
        assert (one.out / rel).read_bytes() == (two.out / rel).read_bytes()
    _, front, prose = (one.out / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta["license"] == "cc0-1.0"
    assert meta["configs"][0]["config_name"] == "instances"
    assert {f["split"] for f in meta["configs"][0]["data_files"]} == {"train", "test"}
    assert "8 re-generated from their seeds" in prose
    assert "| arithmetic_chain | symbolic | 8 | 2 |" in prose


def test_a_line_that_does_not_regenerate_is_not_exported(instances: Path, tmp_path: Path) -> None:
    lines = instances.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["answer"] = "12345678"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    with pytest.raises(HubFormatError, match="1 lines do not re-generate"):
        export_logic_hf(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_push_sends_each_config_then_the_card(
    instances: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--push goes through DatasetDict.push_to_hub and HfApi.upload_file (recorded here, so
    nothing leaves the machine)."""
    hub = pytest.importorskip("huggingface_hub")
    calls: list[tuple[str, object]] = []

    def push_to_hub(self: dict[str, object], repo_id: str, **kwargs: object) -> None:
        calls.append(("push", (repo_id, sorted(self), kwargs)))

    def upload_file(self: object, **kwargs: object) -> None:
        calls.append(("card", kwargs))

    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub", push_to_hub)
    monkeypatch.setattr(hub.HfApi, "upload_file", upload_file)
    export_logic_hf(instances, tmp_path / "hf", push_to="me/logic")
    assert calls[0] == (
        "push",
        (
            "me/logic",
            ["test", "train"],
            {"config_name": "instances", "set_default": True, "private": False},
        ),
    )
    kind, card = calls[1]
    assert kind == "card" and isinstance(card, dict)
    assert card["repo_id"] == "me/logic" and card["path_in_repo"] == "README.md"
    assert card["repo_type"] == "dataset" and str(card["path_or_fileobj"]).endswith("README.md")
