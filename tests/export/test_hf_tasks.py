"""Task datasets in the Hub's format: export, load_dataset, rebuild, check, tampering, card."""

from __future__ import annotations

import json
import shutil
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask._util import sha256
from veritask.export import HubFormatError, import_hf
from veritask.export._hf_import import _safe_path
from veritask.task import check_dataset

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")
pa = pytest.importorskip("pyarrow")

N = 20


@pytest.fixture(scope="module")
def source(generated: Callable[[str, int, int], Path]) -> Path:
    return generated("travel", N, 1)


@pytest.fixture(scope="module")
def exported(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The travel dataset exported through the command line."""
    out = tmp_path_factory.mktemp("hf") / "travel-hf"
    result = CliRunner().invoke(
        cli, ["export", str(source), "--format", "hf", "--out", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert f"tasks {N}" in result.output
    return out


def _load(folder: Path, cache: Path, config: str | None = None) -> Any:
    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(cache))


def test_load_dataset_reads_tasks_and_states(exported: Path, source: Path, tmp_path: Path) -> None:
    tasks = _load(exported, tmp_path)
    assert len(tasks) == N
    first = json.loads((source / "manifest.jsonl").read_text().splitlines()[0])
    row = tasks[0]
    assert row["id"] == first["id"]
    assert row["prompt"] == first["task_description"]
    assert json.loads(row["witness"]) == first["witness"]
    assert row["difficulty"] == first["difficulty"] and row["tags"] == first["tags"]
    assert row["certified"] and row["grounded"] and row["spoiler_free"]
    states = {r["sha256"]: r for r in _load(exported, tmp_path, "states")}
    image = zlib.decompress(states[row["origin"]]["image_zlib"])
    assert sha256(image) == row["origin"] and image.startswith(b"SQLite format 3\x00")
    assert states[row["origin"]]["role"] == "origin"
    assert {r["origin"] for r in tasks} | {r["target"] for r in tasks} == set(states)
    policies = _load(exported, tmp_path, "policies")
    assert [sha256(p["text"].encode()) for p in policies] == [p["sha256"] for p in policies]
    tasks.save_to_disk(str(tmp_path / "saved"))
    assert datasets.load_from_disk(str(tmp_path / "saved")).to_list() == tasks.to_list()


def test_round_trip_rebuilds_a_directory_check_certifies(
    exported: Path, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "back"
    result = CliRunner().invoke(
        cli, ["import-hf", str(exported), "--out", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "seal matched" in result.output
    assert (out / "manifest.jsonl").read_bytes() == (source / "manifest.jsonl").read_bytes()
    assert (out / "run.json").read_bytes() == (source / "run.json").read_bytes()
    report = check_dataset(out)
    assert (report.tasks, report.certified, report.grounded) == (N, N, N)
    assert report.failures == []


def test_export_is_byte_identical_and_the_licence_reaches_the_card(
    exported: Path, source: Path, tmp_path: Path
) -> None:
    """A second export (another licence) writes the same data files, byte for byte."""
    out = tmp_path / "again"
    result = CliRunner().invoke(
        cli,
        ["export", str(source), "--format", "hf", "--out", str(out), "--license", "cc-by-4.0"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(exported) for p in exported.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for rel in files:
        if rel.name != "README.md":
            assert (out / rel).read_bytes() == (exported / rel).read_bytes(), rel
    card = (out / "README.md").read_text(encoding="utf-8")
    assert yaml.safe_load(card.split("---\n")[1])["license"] == "cc-by-4.0"
    assert card.replace("cc-by-4.0", "apache-2.0") == (exported / "README.md").read_text("utf-8")


def _tamper_witness(folder: Path) -> str:
    """Change one argument of the first write call of the first task whose witness has one;
    return that task's id."""
    path = folder / "tasks" / "train-00000-of-00001.parquet"
    table = pq.read_table(path)
    witnesses = table.column("witness").to_pylist()
    for i, text in enumerate(witnesses):
        calls = json.loads(text)
        for call in calls:
            if call["ok"] and not call["tool"].startswith("query_"):
                key, value = next((k, v) for k, v in call["args"].items() if k != "id")
                call["args"][key] = value + 1 if isinstance(value, int) else f"{value}-x"
                witnesses[i] = json.dumps(calls)
                column = table.schema.get_field_index("witness")
                table = table.set_column(column, "witness", pa.array(witnesses, pa.string()))
                pq.write_table(table, path)
                return str(table.column("id")[i])
    raise AssertionError("no write call to tamper with")


def test_a_tampered_witness_is_refused_and_fails_check(exported: Path, tmp_path: Path) -> None:
    folder = tmp_path / "tampered"
    shutil.copytree(exported, folder)
    task_id = _tamper_witness(folder)
    cache = tmp_path / "cache"
    with pytest.raises(
        HubFormatError, match=f"{task_id}: differs from the exported seal in witness"
    ):
        import_hf(folder, tmp_path / "refused", cache_dir=cache)
    assert not (tmp_path / "refused").exists()
    done = import_hf(folder, tmp_path / "accepted", accept_edits=True, cache_dir=cache)
    assert done.seal == "edited" and len(done.edits) == 1
    report = check_dataset(done.out)
    assert report.certified == N - 1
    assert {f["id"] for f in report.failures if f["kind"] in ("replay", "diff")} == {task_id}


def test_card_front_matter_names_the_licence_and_configs(exported: Path) -> None:
    text = (exported / "README.md").read_text(encoding="utf-8")
    _, front, prose = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta["license"] == "apache-2.0"
    assert meta["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in meta["configs"]] == ["tasks", "states", "policies", "files"]
    assert meta["configs"][0]["default"] is True
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert infos["tasks"]["splits"][0]["num_examples"] == N
    assert "witness" in {f["name"] for f in infos["tasks"]["features"]}
    assert f"{N} of {N} certified" in prose
    assert "--domain travel --n 20 --seed 1" in prose
    assert "| L1 |" in prose or "| L2 |" in prose


def test_import_refuses_a_non_empty_output(exported: Path, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(HubFormatError, match="not an empty directory"):
        import_hf(exported, tmp_path / "full", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize(
    "rel", ["../run.json", "/etc/passwd", "states/a.sqlite", "manifest.jsonl", "parts/u.jsonl.gz"]
)
def test_carried_files_stay_inside_and_never_replace_rebuilt_ones(rel: str) -> None:
    with pytest.raises(HubFormatError, match="is not a file a task dataset carries"):
        _safe_path(rel)


def test_push_needs_the_hf_format(source: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "export",
            str(source),
            "--format",
            "tau2",
            "--out",
            str(tmp_path / "t.json"),
            "--push",
            "me",
        ],
    )
    assert result.exit_code == 2
    assert "--push is only used with --format hf" in result.output


def test_without_datasets_the_export_names_the_extra(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    out = tmp_path / "hf"
    result = CliRunner().invoke(cli, ["export", str(source), "--format", "hf", "--out", str(out)])
    assert result.exit_code == 1
    assert "pip install 'veritask[hf]'" in result.output
    assert not out.exists()


def _drop_row(path: Path, column: str, value: str) -> None:
    table = pq.read_table(path)
    keep = [v != value for v in table.column(column).to_pylist()]
    pq.write_table(table.filter(pa.array(keep)), path)


def test_a_task_whose_state_is_missing_is_named_and_nothing_is_left(
    exported: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "no-state"
    shutil.copytree(exported, folder)
    first = pq.read_table(folder / "tasks" / "train-00000-of-00001.parquet").to_pylist()[0]
    _drop_row(folder / "states" / "train-00000-of-00001.parquet", "sha256", first["target"])
    cache = tmp_path / "cache"
    with pytest.raises(HubFormatError, match=r"cannot load its 'states' config.*SplitsSize"):
        import_hf(folder, tmp_path / "out", cache_dir=cache)  # the card counts one more row
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8")
    start, end = text.index("dataset_info:"), text.index("---\n", 4)
    card.write_text(text[:start] + text[end:], encoding="utf-8")
    with pytest.raises(HubFormatError, match=f"{first['id']}: its target state"):
        import_hf(folder, tmp_path / "out", cache_dir=cache)
    assert not (tmp_path / "out").exists()


def test_a_state_that_does_not_hash_to_its_name_leaves_the_output_as_it_was(
    exported: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "bad-state"
    shutil.copytree(exported, folder)
    path = folder / "states" / "train-00000-of-00001.parquet"
    table = pq.read_table(path)
    images = table.column("image_zlib").to_pylist()
    images[-1] = zlib.compress(b"SQLite format 3\x00 but not the state")
    index = table.schema.get_field_index("image_zlib")
    pq.write_table(table.set_column(index, "image_zlib", pa.array(images, pa.binary())), path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(HubFormatError, match="the image does not hash to it"):
        import_hf(folder, tmp_path / "empty", cache_dir=tmp_path / "cache")
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_folder_exported_again_at_the_same_path_is_read_afresh(
    source: Path, generated: Callable[[str, int, int], Path], tmp_path: Path
) -> None:
    """The user's ``datasets`` cache is keyed by a folder's path: a second export to the same
    path must not come back as the first one."""
    folder = tmp_path / "same-place"
    other = generated("mock", 4, 0)
    for dataset in (source, other):
        shutil.rmtree(folder, ignore_errors=True)
        made = CliRunner().invoke(
            cli, ["export", str(dataset), "--format", "hf", "--out", str(folder)]
        )
        assert made.exit_code == 0, made.output
        back = tmp_path / f"back-{dataset.name}"
        import_hf(folder, back)
        assert (back / "manifest.jsonl").read_bytes() == (dataset / "manifest.jsonl").read_bytes()
