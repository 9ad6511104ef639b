"""A domain kept as a folder (the built-ins' layout) is given to the CLI by the folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import spec_path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the mock domain as ``ferry/spec.yaml``."""
    target = tmp_path / "ferry"
    target.mkdir()
    shutil.copy(spec_path("mock"), target / "spec.yaml")
    return target


@pytest.mark.parametrize("command", [["validate"], ["tools"], ["schema"], ["policy"]])
def test_spec_commands_take_the_folder(folder: Path, command: list[str]) -> None:
    by_folder = CliRunner().invoke(cli, [*command, str(folder)], catch_exceptions=False)
    by_file = CliRunner().invoke(cli, [*command, str(folder / "spec.yaml")], catch_exceptions=False)
    assert by_folder.exit_code == 0, by_folder.output
    assert by_folder.output == by_file.output


def test_generate_takes_the_folder(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["generate", "--domain", str(folder), "--n", "3", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"3 packages in {out}" in result.output


def test_a_folder_without_a_spec_is_refused_with_its_name(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["validate", str(empty)])
    assert result.exit_code != 0
    assert f"{empty} is a directory without a spec.yaml" in result.output
    assert "Traceback" not in result.output
