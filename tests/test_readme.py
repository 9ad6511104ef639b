"""The README's examples run as written: its Python blocks and its console transcripts."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from rich.console import Console
from tests._readme_console import Block, Fixture, Shell, first_mismatch, parse_blocks

from veritask._cli.main import cli
from veritask.task import load_dataset

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
MOCK = ROOT / "src" / "veritask" / "domains" / "mock" / "spec.yaml"

_MEMBER_ACTIVE_EXAMPLE = (
    "{member_id: m_lapsed, book_id: b_dune, due_step: 10}, expect: MEMBER_ACTIVE"
)


def _write_broken(cwd: Path) -> None:
    # The mock domain with one misspelled tier.
    text = MOCK.read_text()
    assert "    tier: entity\n" in text
    (cwd / "broken.yaml").write_text(text.replace("    tier: entity\n", "    tier: entities\n", 1))


def _write_library(cwd: Path) -> None:
    # The mock domain with one wrong example: an active member is expected to be refused.
    text = MOCK.read_text()
    assert _MEMBER_ACTIVE_EXAMPLE in text
    wrong = _MEMBER_ACTIVE_EXAMPLE.replace("m_lapsed", "m_ana")
    (cwd / "library.yaml").write_text(text.replace(_MEMBER_ACTIVE_EXAMPLE, wrong, 1))


def _copy_appendix_a(cwd: Path) -> None:
    name = "tests/policy/data/appendix_a.sql"
    (cwd / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / name, cwd / name)


FIXTURES: dict[str, Fixture] = {
    "broken.yaml": _write_broken,
    "library.yaml": _write_library,
    "tests/policy/data/appendix_a.sql": _copy_appendix_a,
}


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Shell]:
    """A shell in a fresh directory whose rich consoles print 100 columns, as in the README."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    for module in [
        m for name, m in list(__import__("sys").modules.items()) if name.startswith("veritask._cli")
    ]:
        for value in vars(module).values():
            if isinstance(value, Console):
                monkeypatch.setattr(value, "_width", 100)
    yield Shell(FIXTURES)


def run_transcripts(blocks: list[Block], shell: Shell, cwd: Path) -> list[str]:
    """Run every block that is not skipped; return one message per mismatching command."""
    problems = []
    for block in blocks:
        if block.skip is not None:
            continue
        for command in block.commands:
            actual = shell.run(command.text, cwd)
            bad = first_mismatch(command.expected, actual)
            if bad is not None:
                shown = command.expected[bad] if bad < len(command.expected) else "<end>"
                problems.append(
                    f"README.md:{command.line + 1 + bad}: `{command.text}` does not print "
                    f"{shown!r}; it prints:\n" + "\n".join(actual)
                )
    return problems


def test_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "out" / "readme-mock" / "manifest.jsonl").exists()


def test_console_transcripts_print_what_the_readme_shows(shell: Shell, tmp_path: Path) -> None:
    blocks = parse_blocks(README.read_text())
    skipped = [b for b in blocks if b.skip is not None]
    assert len(blocks) - len(skipped) >= 20
    allowed = ("needs a model endpoint", "needs a Ray cluster", "needs a file of", "starts servers")
    assert all(b.skip is not None and b.skip.startswith(allowed) for b in skipped)
    assert run_transcripts(blocks, shell, tmp_path) == []
    _the_example_task_is_the_generated_one(tmp_path / "data" / "travel")


def _the_example_task_is_the_generated_one(dataset: Path) -> None:
    # The README quotes one task of the dataset its `generate` transcript wrote.
    found = re.search(
        r"Here is one generated task \(`(?P<id>[^`]+)`, (?P<level>L\d)\)\..*?```text\n(?P<text>.*?)```"
        r"\s+Its witness \((?P<calls>\d+) calls\)",
        README.read_text(),
        re.S,
    )
    assert found, "the README's example task is missing"
    (pkg,) = [p for p in load_dataset(dataset) if p.id == found["id"]]
    assert (pkg.difficulty, len(pkg.witness)) == (found["level"], int(found["calls"]))
    assert pkg.task_description.rstrip() == found["text"].rstrip()


def _cli_commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        full = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            yield from _cli_commands(command, full)
        else:
            yield full, command


def _readme_json_claim() -> tuple[set[str], set[str]]:
    found = re.search(
        r"take `--json`[^:]*:(?P<json>[^.]*)\.\s+The others[^:]*:(?P<text>[^.]*)\.",
        README.read_text(),
    )
    assert found, "the README's statement of which commands take --json is missing"
    names = {key: set(re.findall(r"`([^`]+)`", found[key])) for key in ("json", "text")}
    return names["json"], names["text"]


def test_the_readme_names_exactly_the_commands_that_take_json() -> None:
    commands = dict(_cli_commands(cli))
    with_json = {n for n, c in commands.items() if any("--json" in p.opts for p in c.params)}
    claimed_json, claimed_text = _readme_json_claim()
    assert claimed_json == with_json
    assert claimed_text == set(commands) - with_json


def test_an_edited_output_line_is_reported_with_its_line(shell: Shell, tmp_path: Path) -> None:
    text = README.read_text()
    original = "ok: travel (9 tables, 41 rules, 9 effects)\n"
    assert text.count(original) == 1
    edited = text.replace(original, original.replace("41", "42"))
    line = edited[: edited.index("42 rules")].count("\n") + 1
    (block,) = [b for b in parse_blocks(edited) if b.commands[0].text == "veritask validate travel"]
    (problem,) = run_transcripts([block], shell, tmp_path)
    assert problem.startswith(f"README.md:{line}: `veritask validate travel` does not print")
    assert "41 rules" in problem and "'ok: travel (9 tables, 42 rules, 9 effects)'" in problem


@pytest.mark.parametrize(
    ("expected", "actual", "mismatch"),
    [
        (["a", "b"], ["a", "b  "], None),
        (["a", "...", "d"], ["a", "b", "c", "d"], None),
        (["a", "...", "d"], ["a", "d"], None),
        (["took <...>s", "..."], ["took 0.2s", "x"], None),
        (["a", "c"], ["a", "b"], 1),
        (["a"], ["a", "extra"], 1),
        (["...", "z"], ["a", "b"], 1),
        (["took <...>s"], ["took 2 min"], 0),
    ],
)
def test_elisions(expected: list[str], actual: list[str], mismatch: int | None) -> None:
    assert first_mismatch(expected, actual) == mismatch


def test_unsupported_shell_syntax_is_refused(shell: Shell, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unsupported"):
        shell.run("veritask domains | sort", tmp_path)
    with pytest.raises(ValueError, match="unsupported"):
        shell.run("rm -rf data", tmp_path)


def test_the_demo_hint_runs_from_a_new_shell() -> None:
    from veritask._cli.demo import next_hint, script_path

    script = Path(script_path())
    assert script.name == "veritask" and script.is_file()
    assert next_hint().startswith(f"next: {script} check out/demo-travel;")
    assert f"; {script} export out/demo-travel --format tau2" in next_hint()


def test_transcripts_run_the_console_script_s_command_group() -> None:
    # `veritask` in a transcript is the click group the installed console script calls.
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'(?m)^veritask = "veritask\._cli\.main:main"$', pyproject)
