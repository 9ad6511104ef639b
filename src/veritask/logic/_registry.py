"""The family registry: built-in families plus family files found on a search path.

Built-ins are the modules in ``veritask.logic.families`` (each exports ``FAMILIES``). Family
files (see ``veritask.logic._filefamily``) are the ``*.py`` files, except those starting with
``_``, in the directories passed as ``extra_dirs`` followed by those listed in the
``VERITASK_FAMILY_PATH`` environment variable (``os.pathsep``-separated). A file family whose id
is a built-in's, or another file's, is an error. Loaded file families are cached per file (and
reloaded when the file changes), so each keeps one sandboxed worker.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from veritask.logic._family import Family
from veritask.logic._filefamily import FamilyFileError, FileFamily, load_family_file

FAMILY_PATH_ENV = "VERITASK_FAMILY_PATH"
"""The environment variable listing family-file directories."""

DirLike = str | os.PathLike[str]

_LOADED: dict[Path, tuple[tuple[int, int], FileFamily]] = {}
_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def builtin_families() -> dict[str, Family]:
    """All built-in families by id (modules under ``veritask.logic.families``)."""
    import veritask.logic.families as pkg

    out: dict[str, Family] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for family in getattr(module, "FAMILIES", ()):
            if family.id in out:
                raise ValueError(f"duplicate family id {family.id!r} in {info.name}")
            out[family.id] = family
    return out


def family_dirs(extra_dirs: Iterable[DirLike] = ()) -> list[Path]:
    """The family-file directories searched: ``extra_dirs``, then ``VERITASK_FAMILY_PATH``.

    Directories that do not exist are skipped; each directory is listed once.
    """
    env = [p for p in os.environ.get(FAMILY_PATH_ENV, "").split(os.pathsep) if p]
    out: list[Path] = []
    seen: set[Path] = set()
    for entry in [*extra_dirs, *env]:
        path = Path(entry).expanduser().resolve()
        if path.is_dir() and path not in seen:
            seen.add(path)
            out.append(path)
    return out


def file_families(extra_dirs: Iterable[DirLike] = ()) -> dict[str, FileFamily]:
    """The file families on the search path, by id (sorted).

    Raises:
        FamilyFileError: A file is not a valid family file, or two files share an id.
    """
    out: dict[str, FileFamily] = {}
    for directory in family_dirs(extra_dirs):
        for path in sorted(directory.glob("*.py")):
            if path.name.startswith("_") or not path.is_file():
                continue
            family = _load_cached(path)
            if family.id in out:
                raise FamilyFileError(
                    f"family id {family.id!r} is defined by both {out[family.id].path} and {path}"
                )
            out[family.id] = family
    return dict(sorted(out.items()))


def all_families(extra_dirs: Iterable[DirLike] = ()) -> dict[str, Family]:
    """Built-in and file families by id (sorted).

    Raises:
        FamilyFileError: A file family reuses a built-in id, or a file is invalid.
    """
    builtins = builtin_families()
    files = file_families(extra_dirs)
    for family_id, family in files.items():
        if family_id in builtins:
            raise FamilyFileError(
                f"family file {family.path} uses the id {family_id!r} of a built-in family"
            )
    return dict(sorted({**builtins, **files}.items()))


def get_family(family_id: str, extra_dirs: Iterable[DirLike] = ()) -> Family:
    """A built-in or file family by id.

    Raises:
        KeyError: No family has this id (the message lists the known ones).
        FamilyFileError: A file on the search path is invalid or clashes with another id.
    """
    families = all_families(extra_dirs)
    if family_id not in families:
        raise KeyError(f"unknown family {family_id!r}; known: {', '.join(sorted(families))}")
    return families[family_id]


def _load_cached(path: Path) -> FileFamily:
    """The family of a file, loaded once per (file, modification time, size)."""
    stat = path.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        cached = _LOADED.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        family = load_family_file(path)
        if cached is not None:
            cached[1].close()
        _LOADED[path] = (key, family)
        return family
