"""Seed rows in data files a spec names (``seed_files``), as ``import-tau2`` writes them.

τ²-bench's airline database is 7.2 MB as YAML rows, over the spec text's limit; the importer
keeps the rows in ``seed.json`` beside the spec, pinned by its digest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from veritask.policy import SpecError, dump_spec, load_spec, parse_spec, write_seed_file
from veritask.policy.tau2 import import_tau2

ROOT = Path(__file__).parent.parent / "fixtures" / "tau2" / "retail"


def _split(tmp_path: Path) -> tuple[Path, str]:
    """The fixture's retail spec written with its seed rows in ``seed.json``; its inline hash."""
    spec = import_tau2(ROOT, "retail").spec
    entry = write_seed_file(spec.seed, tmp_path, "seed.json")
    text = dump_spec(spec.model_copy(update={"seed": {}}))
    (tmp_path / "spec.yaml").write_text(text + yaml.safe_dump({"seed_files": [entry]}))
    return tmp_path / "spec.yaml", spec.spec_hash()


def test_a_spec_with_a_seed_file_loads_as_if_the_rows_were_inline(tmp_path: Path) -> None:
    path, inline_hash = _split(tmp_path)
    spec = load_spec(path)
    assert spec.spec_hash() == inline_hash
    assert len(spec.seed["orders"]) == 4 and "\nseed:" not in path.read_text()


def test_seed_file_rows_follow_the_inline_rows(tmp_path: Path) -> None:
    path, _ = _split(tmp_path)
    data = yaml.safe_load(path.read_text())
    whole = json.loads((tmp_path / "seed.json").read_text())
    first, rest = whole["users"][:1], whole["users"][1:]
    whole["users"] = rest
    entry = write_seed_file(whole, tmp_path, "seed.json")
    data["seed"] = {"users": first}
    data["seed_files"] = [entry]
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    assert load_spec(path).seed["users"] == [*first, *rest]


def test_a_changed_seed_file_is_refused(tmp_path: Path) -> None:
    path, _ = _split(tmp_path)
    seed = tmp_path / "seed.json"
    seed.write_bytes(seed.read_bytes().replace(b'"pending"', b'"delivered"', 1))
    with pytest.raises(SpecError, match="sha256 differs") as info:
        load_spec(path)
    assert info.value.issues[0].field == "seed_files[0]"


@pytest.mark.parametrize("bad", ["../seed.json", "/etc/seed.json", "a\\..\\seed.json"])
def test_a_seed_file_outside_the_spec_folder_is_refused(tmp_path: Path, bad: str) -> None:
    path, _ = _split(tmp_path)
    text = path.read_text().replace("path: seed.json", f"path: '{bad}'")
    path.write_text(text)
    with pytest.raises(SpecError, match="not a relative path inside"):
        load_spec(path)


def test_missing_and_malformed_seed_files_are_refused(tmp_path: Path) -> None:
    path, _ = _split(tmp_path)
    (tmp_path / "seed.json").unlink()
    with pytest.raises(SpecError, match=r"cannot read seed\.json"):
        load_spec(path)
    data = b'["not", "rows"]\n'
    (tmp_path / "seed.json").write_bytes(data)
    text = path.read_text()
    digest = hashlib.sha256(data).hexdigest()
    path.write_text(text[: text.index("sha256:")] + f"sha256: {digest}\n")
    with pytest.raises(SpecError, match="not a JSON object of row lists"):
        load_spec(path)


def test_a_spec_text_without_a_file_may_not_name_seed_files(tmp_path: Path) -> None:
    path, _ = _split(tmp_path)
    with pytest.raises(SpecError, match="relative to a spec file"):
        parse_spec(path.read_text())


def test_import_tau2_writes_the_seed_beside_the_spec(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from veritask._cli.main import cli

    out = tmp_path / "retail"
    result = CliRunner().invoke(
        cli, ["import-tau2", str(ROOT), "--domain", "retail", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "seed:" not in (out / "spec.yaml").read_text()
    assert load_spec(out / "spec.yaml") == import_tau2(ROOT, "retail").spec
