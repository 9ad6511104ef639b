"""An architect seed file we did not write: a complex key, an alias bomb, deep nesting or
Latin-1 bytes are refused as ``SeedError`` with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask.synth._architect_seed import SeedError, load_seed

BOMB = "a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 300) + "]\n"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"name: x\n? [a, b]\n: 1\n", "seed.yaml:2: <yaml>: a mapping key is itself a list"),
        (BOMB.encode(), "seed.yaml:2: <yaml>: YAML aliases expand to more than the limit"),
        (b"a: " + b"[" * 50_000 + b"]" * 50_000, "<yaml>: YAML is nested more than 64 levels"),
        (b"name: caf\xe9\n", "seed.yaml:1: <file>: is not UTF-8 text"),
    ],
)
def test_bad_seed_file_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "seed.yaml"
    path.write_bytes(data)
    with pytest.raises(SeedError) as info:
        load_seed(path)
    assert message in str(info.value)
