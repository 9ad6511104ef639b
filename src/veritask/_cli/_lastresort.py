"""The last resort of the ``veritask`` script: no Python traceback reaches a user.

Every known failure is turned into a one-line ``Error: ...`` where it happens. What is left
(a bug) prints one line naming the exception and a file holding the full traceback, and
exits 1. A closed pipe (``veritask ... | head``) ends quietly with exit 0, and Ctrl-C prints one
line and exits 130. ``VERITASK_TRACEBACK=1`` turns the handler off, so a developer (or a test)
sees the exception itself.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import click

#: Set to ``1`` to let an unexpected exception through with its traceback.
DEBUG_ENV = "VERITASK_TRACEBACK"
_INTERRUPTED = 130


def crash_dir() -> Path:
    """Where tracebacks are saved: ``$XDG_CACHE_HOME/veritask/crashes`` (or
    ``~/.cache/veritask/crashes``), else the temp directory when the home is not writable."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    for root in (Path(base) / "veritask", Path(tempfile.gettempdir()) / "veritask"):
        folder = root / "crashes"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    return Path(tempfile.gettempdir())


def save_traceback(exc: BaseException) -> Path:
    """Write the traceback of ``exc`` to a new file under :func:`crash_dir`; its path.

    Only the traceback is written (no environment, no arguments), so nothing secret that the
    process holds ends up in the file beyond what the exception message itself says.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    handle, name = tempfile.mkstemp(prefix=f"crash-{stamp}-", suffix=".txt", dir=crash_dir())
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write("".join(traceback.format_exception(exc)))
    return Path(name)


def _quiet_broken_pipe() -> None:
    """Stdout's reader went away: point stdout at devnull so the interpreter's final flush
    does not raise again, and exit 0 (what ``head`` expects of a producer)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout has no descriptor (captured): nothing to redirect
        pass
    sys.exit(0)


class PipeSafeGroup(click.Group):
    """A command group whose commands end quietly (exit 0) when stdout's reader goes away.

    Click itself turns a broken pipe into exit 1; the group catches it first, inside
    ``invoke``, so ``veritask ... | head`` succeeds like any other Unix producer.
    """

    def invoke(self, ctx: click.Context) -> Any:
        """Invoke the chosen command; a closed stdout ends the process with status 0."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _quiet_broken_pipe()


def _unexpected(exc: Exception) -> None:
    """One line for an exception no command handled, and exit 1."""
    try:
        where = f"full traceback saved to {save_traceback(exc)}"
    except OSError as err:
        where = f"traceback not saved: {err}"
    message = str(exc).splitlines()[0] if str(exc) else ""
    click.echo(f"Error: {type(exc).__name__}: {message} ({where})", err=True)
    sys.exit(1)


def _aborted(exc: click.Abort) -> None:
    """Ctrl-C (click turns it into ``Abort``) exits 130; any other abort exits 1."""
    if isinstance(exc.__cause__, KeyboardInterrupt):
        click.echo("Error: interrupted", err=True)
        sys.exit(_INTERRUPTED)
    click.echo("Aborted!", err=True)
    sys.exit(1)


def run(group: click.Command, args: list[str] | None = None) -> None:
    """Run ``group`` behind the last-resort handler, then exit with its status.

    Click's own handling (usage errors, ``ClickException``) is kept; what click would let
    through, or turn into a bare exit 1 (a closed pipe), is handled here.

    Args:
        group: The command group.
        args: The arguments; None reads ``sys.argv``.
    """
    if os.environ.get(DEBUG_ENV) == "1":
        group.main(args)
        return
    try:
        code = group.main(args, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort as exc:
        _aborted(exc)
    except KeyboardInterrupt:
        click.echo("Error: interrupted", err=True)
        sys.exit(_INTERRUPTED)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except Exception as exc:
        _unexpected(exc)
    sys.exit(code if isinstance(code, int) else 0)
