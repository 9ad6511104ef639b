"""Schema checks read from bytes, and targets stored as the witness's replay leaves them.

``check`` does not read a target's schema with SQL when every byte that schema is read from
equals its origin's (already read and found good): these tests hold the page walk to SQLite's
own listing, show that any edit of those bytes falls back to the SQL read, that a forged
target with a dropped trigger is still caught, and that a target with other bytes but the
same rows is still certified by the row diff.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests._tamper import drop_trigger

from veritask.domains import load_domain
from veritask.env import PAGE_SIZE, CompiledDomain, insert_rows
from veritask.env._build import _compiled
from veritask.task import DatasetDir, check_dataset, load_dataset
from veritask.task._integrity import RootPages, StateVerifier, reference_schema
from veritask.task._schema_pages import has_schema, page_size, schema_key

DOMAINS = ("retail", "travel", "clinic", "gym", "registrar", "mock")


@pytest.fixture(scope="module")
def datasets(builtin_datasets: dict[str, Path]) -> dict[str, Path]:
    return builtin_datasets


def _states(root: Path) -> list[tuple[bytes, bytes]]:
    ds = DatasetDir(root)
    return [(ds.read_state(p.origin), ds.read_state(p.target)) for p in load_dataset(root)]


def _retarget(root: Path, edit: Callable[[bytes], bytes]) -> str:
    """Store ``edit`` of a package's target under its own name, point the package at it and
    reseal; the package's id."""
    ds = DatasetDir(root)
    packages = load_dataset(root)
    victim = next(p for p in packages if p.target != p.origin)
    image = ds.read_state(victim.target)
    edited = edit(image)
    assert edited != image
    name = ds.put_state(edited)
    forged = [p.model_copy(update={"target": name}) if p.id == victim.id else p for p in packages]
    ds.manifest.write_text("".join(p.model_dump_json() + "\n" for p in forged))
    ds.seal(forged)
    return victim.id


def _dbstat_pages(image: bytes) -> list[int] | None:
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(image)
        rows = conn.execute("SELECT name, pageno FROM dbstat").fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return sorted(p for name, p in rows if name in ("sqlite_schema", "sqlite_master"))


def _with_page_size(image: bytes, size: int) -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    conn.execute(f"PRAGMA page_size = {size}")
    conn.execute("VACUUM")
    data = conn.serialize()
    conn.close()
    return data


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_walk_finds_the_pages_sqlite_lists(datasets: dict[str, Path], domain: str) -> None:
    states = _states(datasets[domain])
    images = [image for pair in states for image in pair]
    images += [_with_page_size(states[0][0], size) for size in (512, 4096, 8192)]
    for image in images:
        key = schema_key(image)
        assert key is not None
        listed = _dbstat_pages(image)
        if listed is None:
            pytest.skip("this SQLite has no dbstat table")
        assert list(key.pages) == listed


@pytest.mark.parametrize("domain", DOMAINS)
def test_targets_share_their_origin_s_schema_bytes(datasets: dict[str, Path], domain: str) -> None:
    for origin, target in _states(datasets[domain]):
        key = schema_key(origin)
        assert key is not None and key.size == PAGE_SIZE == page_size(target)
        assert has_schema(target, key)


@settings(max_examples=60, deadline=None)
@given(where=st.integers(min_value=0), flip=st.integers(min_value=1, max_value=255))
def test_an_edit_of_a_schema_byte_falls_back(
    datasets: dict[str, Path], where: int, flip: int
) -> None:
    origin, target = _states(datasets["retail"])[0]
    key = schema_key(origin)
    assert key is not None
    counters = {*range(24, 32), *range(92, 96)}
    offsets = [i for i in range(100, key.size)] + [i for i in range(100) if i not in counters]
    offsets += [(p - 1) * key.size + i for p in key.pages[1:] for i in range(key.size)]
    at = offsets[where % len(offsets)]
    edited = bytearray(target)
    edited[at] ^= flip
    assert not has_schema(bytes(edited), key)


def test_an_edit_outside_the_schema_keeps_the_key(datasets: dict[str, Path]) -> None:
    origin, target = _states(datasets["retail"])[0]
    key = schema_key(origin)
    assert key is not None
    others = [p for p in range(2, len(target) // key.size + 1) if p not in key.pages]
    for page in others:
        edited = bytearray(target)
        edited[(page - 1) * key.size + key.size // 2] ^= 0xFF
        assert has_schema(bytes(edited), key)
    edited = bytearray(target)
    edited[24:28] = (int.from_bytes(target[24:28], "big") + 7).to_bytes(4, "big")
    assert has_schema(bytes(edited), key)  # the change counter is not read for the schema


def test_not_sqlite_or_a_short_page_count_has_no_key(datasets: dict[str, Path]) -> None:
    origin, target = _states(datasets["retail"])[0]
    key = schema_key(origin)
    assert key is not None
    assert schema_key(b"not a database" * 100) is None
    short = bytearray(target)
    short[28:32] = (len(target) // key.size - 1).to_bytes(4, "big")
    assert not has_schema(bytes(short), key)
    assert not has_schema(target[: key.pages[-1] * key.size - key.size], key)


def test_a_forged_target_with_a_dropped_trigger_is_caught(
    datasets: dict[str, Path], tmp_path: Path
) -> None:
    """The target is read with SQL when its schema bytes differ from its origin's."""
    data = Path(shutil.copytree(datasets["travel"], tmp_path / "ds"))
    victim = _retarget(data, drop_trigger)
    report = check_dataset(data)
    details = [f["detail"] for f in report.failures if f["id"] == victim]
    assert any(d.startswith("target:") and "another schema" in d for d in details), details


def test_the_verifier_gives_the_same_verdicts_with_and_without_the_origin(
    datasets: dict[str, Path],
) -> None:
    compiled = CompiledDomain.from_spec(load_domain("clinic"))
    schema = reference_schema(compiled)
    fast, slow = StateVerifier(schema), StateVerifier(schema)
    ds = DatasetDir(datasets["clinic"])
    try:
        for pkg in load_dataset(datasets["clinic"]):
            origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
            assert fast.problem(origin, pkg.origin) is None
            bad = drop_trigger(target)
            for image in (target, bad):
                name = hashlib.sha256(image).hexdigest()
                assert fast.problem(image, name, like=pkg.origin) == slow.problem(image, name)
    finally:
        fast.close()
        slow.close()


def test_a_target_with_the_same_rows_in_other_bytes_is_still_certified(
    datasets: dict[str, Path], tmp_path: Path
) -> None:
    data = Path(shutil.copytree(datasets["retail"], tmp_path / "ds"))
    _retarget(data, lambda image: _with_page_size(image, PAGE_SIZE))  # VACUUM: rows re-laid
    report = check_dataset(data)
    assert report.ok, report.failures
    assert report.certified == len(load_dataset(data))


def test_tables_moved_under_the_spec_s_cookie_are_another_schema() -> None:
    """An image whose tables sit at other pages but which claims the spec's schema cookie would
    be read by the engine's cached statements at the wrong pages: it is refused."""
    spec = load_domain("travel")
    compiled = CompiledDomain.from_spec(spec)
    roots = RootPages.of(compiled)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    sql = _compiled(spec)
    conn.executescript(sql.sql.tables)
    conn.execute("BEGIN")
    insert_rows(conn, spec, spec.seed)
    conn.execute("COMMIT")
    # change tracking created after the rows, as images were once laid out
    conn.executescript(sql.sql.triggers + "\n" + "\n".join(sql.tracking))
    plain = conn.serialize()
    conn.execute(f"PRAGMA schema_version = {roots.cookie}")
    forged = conn.serialize()
    conn.close()
    verifier = StateVerifier(reference_schema(compiled), roots)
    try:
        problem = verifier.problem(forged, hashlib.sha256(forged).hexdigest())
        assert problem is not None and "under the same schema cookie" in problem
        assert "vt_base_" in problem
        # under its own cookie SQLite reads it afresh: the same names and SQL are the schema
        assert verifier.problem(plain, hashlib.sha256(plain).hexdigest()) is None
    finally:
        verifier.close()
