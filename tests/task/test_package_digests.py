"""A package names its states and policy by sha256, and those digests become file names: a
package whose digest is a path (``../../secret``) is refused when the dataset loads, so no
command reads, serves or checks a file outside the dataset directory."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from veritask.task import load_dataset


@pytest.mark.parametrize("field", ["policy", "origin", "target"])
def test_a_digest_that_is_a_path_is_refused_naming_line_and_field(
    generated: Callable[[str, int, int], Path], tmp_path: Path, field: str
) -> None:
    root = tmp_path / "ds"
    shutil.copytree(generated("mock", 2, 1), root)
    (tmp_path / "secret.md").write_text("secret text")
    manifest = root / "manifest.jsonl"
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    rows[1][field] = "../../secret"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=rf"manifest.jsonl:2: {field}: ") as info:
        load_dataset(root)
    assert "secret text" not in str(info.value)
