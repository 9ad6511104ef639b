"""Atomic file writes: a killed process leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path


def atomic_write(path: Path, data: bytes, durable: bool = False) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and an atomic rename.

    ``durable`` also fsyncs before the rename (survives power loss, costs about a millisecond).
    The temporary file is removed if anything fails.
    """
    write_lines_atomic(path, [data], durable=durable)


def atomic_write_text(path: Path, text: str, durable: bool = False) -> None:
    """:func:`atomic_write` of a text as UTF-8."""
    atomic_write(path, text.encode("utf-8"), durable=durable)


def write_lines_atomic(path: Path, chunks: Iterable[bytes], durable: bool = False) -> int:
    """Write the chunks in order to ``path`` atomically; returns how many chunks were written.

    The chunks are streamed to the temporary file, so a large JSONL file need not be held in
    memory.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of this process and thread (not mkstemp): the file gets the umask's usual mode
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    count = 0
    try:
        with open(tmp, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
                count += 1
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return count
