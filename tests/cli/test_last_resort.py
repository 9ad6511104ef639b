"""The entry point's last resort: one line for a bug, quiet on a closed pipe, 130 on Ctrl-C."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from veritask._cli._common import OUT_FILE
from veritask._cli._lastresort import DEBUG_ENV, PipeSafeGroup, run
from veritask.env import NotADatabase, check_image, read_database


def _group(error: BaseException) -> click.Group:
    @click.group(cls=PipeSafeGroup)
    def group() -> None:
        """A group whose one command raises ``error``."""

    @group.command("boom")
    def boom() -> None:
        raise error

    @group.command("usage")
    @click.argument("count", type=int)
    def usage(count: int) -> None:
        del count

    return group


def _run(
    group: click.Group, args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stopped:
        run(group, args)
    code = stopped.value.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


@pytest.fixture(autouse=True)
def _handler_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_a_bug_prints_one_line_and_saves_the_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _run(_group(RuntimeError("it broke\nsecond line")), ["boom"], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("Error: RuntimeError: it broke (full traceback saved to ")
    saved = Path(lines[0].rsplit("saved to ", 1)[1].rstrip(")"))
    assert saved.parent == tmp_path / "cache" / "veritask" / "crashes"
    text = saved.read_text(encoding="utf-8")
    assert "Traceback" in text and "RuntimeError: it broke" in text


def test_a_closed_pipe_exits_zero_quietly(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(_group(BrokenPipeError(32, "Broken pipe")), ["boom"], capsys)
    assert (code, err) == (0, "")


def test_ctrl_c_prints_one_line_and_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(_group(KeyboardInterrupt()), ["boom"], capsys)
    assert code == 130
    assert err.strip().splitlines()[-1] == "Error: interrupted"


def test_click_errors_keep_their_message_and_status(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(_group(click.ClickException("clean")), ["boom"], capsys)
    assert (code, err) == (1, "Error: clean\n")
    code, err = _run(_group(RuntimeError()), ["usage", "x"], capsys)
    assert code == 2 and "'x' is not a valid integer" in err


def test_the_debug_switch_lets_the_exception_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(RuntimeError, match="raw"):
        run(_group(RuntimeError("raw")), ["boom"])


def test_veritask_piped_into_head_exits_zero(tmp_path: Path) -> None:
    """A real pipe whose reader leaves after one line: no traceback, no broken-pipe noise."""
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        pytest.skip("needs Linux pipes whose size can be set")
    code = (  # a 4 KiB pipe, so the 45 KB policy cannot fit before the reader leaves
        "import fcntl, sys; from veritask._cli.main import main; "
        "fcntl.fcntl(1, fcntl.F_SETPIPE_SZ, 4096); "
        "sys.argv = ['veritask', 'policy', 'retail']; main()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src"), "HOME": str(tmp_path)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert err == ""


def test_an_output_file_under_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "plain"
    blocker.write_text("x")

    @click.command()
    @click.argument("out", type=OUT_FILE)
    def write(out: str) -> None:
        Path(out).write_text("ok")

    bad = CliRunner().invoke(write, [str(blocker / "out.json")])
    assert bad.exit_code == 2 and "is not a directory" in bad.output
    good = CliRunner().invoke(write, [str(tmp_path / "new" / "deep" / "out.json")])
    assert good.exit_code == 0 and (tmp_path / "new" / "deep" / "out.json").read_text() == "ok"


def test_a_state_file_is_checked_by_its_header(tmp_path: Path) -> None:
    with pytest.raises(NotADatabase, match="empty"):
        check_image(b"", "a.sqlite")
    with pytest.raises(NotADatabase, match="not a SQLite database"):
        check_image(b"SQLite format 2\x00" + bytes(100), "a.sqlite")
    image = b"SQLite format 3\x00" + bytes(200)
    path = tmp_path / "s.sqlite"
    path.write_bytes(image)
    assert read_database(path) == image
