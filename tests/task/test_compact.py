"""Compact dataset storage: target deltas, compressed origins, packs and archives."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from veritask.synth import generate
from veritask.task import (
    DatasetDir,
    check_dataset,
    compact_dataset,
    load_dataset,
    pack_dataset,
    unpack_dataset,
)
from veritask.task._compact import PackError, apply_delta, make_delta


@pytest.fixture(scope="module")
def compact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compact") / "ds"
    generate("mock", 12, 3, out)
    return out


def _copy(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest)
    return dest


def test_delta_rebuilds_the_target_byte_for_byte() -> None:
    base = bytes(range(256)) * 40
    target = bytearray(base)
    target[5000:5004] = b"edit"
    target += b"grown" * 1000
    delta = make_delta("b" * 64, base, bytes(target))
    assert delta.pages == (1, 2, 3)
    assert apply_delta(base, delta.size, delta.pages, delta.body) == bytes(target)
    shrunk = make_delta("b" * 64, bytes(target), base[:4096])
    assert apply_delta(bytes(target), shrunk.size, shrunk.pages, shrunk.body) == base[:4096]


def test_a_corrupt_delta_body_is_an_os_error() -> None:
    with pytest.raises(PackError):
        apply_delta(b"", 10, [0], b"not zlib")


def test_generated_targets_are_deltas_and_check_certifies(compact: Path) -> None:
    states = compact / "states"
    assert not list(states.glob("*.sqlite"))
    assert list(states.glob("*.pack")) and list(states.glob("*.sqlite.z"))
    report = check_dataset(compact)
    assert report.ok and report.certified == report.tasks == 12
    ds = DatasetDir(compact)
    for pkg in load_dataset(compact):
        assert ds.has_state(pkg.target) and ds.stored_compactly(pkg.origin)


def test_parts_are_compressed(compact: Path) -> None:
    parts = sorted((compact / "parts").glob("*.jsonl.gz"))
    text = "".join(gzip.decompress(p.read_bytes()).decode() for p in parts)
    assert text == (compact / "manifest.jsonl").read_text()


def test_an_edited_pack_is_caught(compact: Path, tmp_path: Path) -> None:
    data = _copy(compact, tmp_path / "ds")
    (pack,) = sorted((data / "states").glob("*.pack"))[:1]
    raw = bytearray(pack.read_bytes())
    raw[-20] ^= 0xFF  # inside the last delta's compressed body
    pack.write_bytes(bytes(raw))
    report = check_dataset(data)
    assert not report.ok
    name = f"states/{pack.name}"
    assert {"id": name, "kind": "integrity", "detail": "file: differs from the sealed file"} in (
        report.failures
    )
    others = [f for f in report.failures if f["id"] != name]
    assert others and all(
        f["kind"] == "integrity" and "target: state" in f["detail"] for f in others
    )


def test_a_dataset_with_whole_states_loads_and_compacts(compact: Path, tmp_path: Path) -> None:
    """A directory in the older layout (whole images, plain parts) is read as it is, and
    ``compact_dataset`` converts it without changing a package."""
    data = _copy(compact, tmp_path / "old")
    ds = DatasetDir(data)
    packages = load_dataset(data)
    for digest in {p.origin for p in packages} | {p.target for p in packages}:
        ds.materialize(digest)
    for path in (data / "states").glob("*.pack"):
        path.unlink()
    for path in (data / "states").glob("*.sqlite.z"):
        path.unlink()
    for part in (data / "parts").glob("*.jsonl.gz"):
        part.with_suffix("").write_bytes(gzip.decompress(part.read_bytes()))
        part.unlink()
    ds.seal(packages)  # as a dataset written whole was sealed
    manifest = (data / "manifest.jsonl").read_bytes()
    assert check_dataset(data).ok and DatasetDir(data).has_part(0)
    assert compact_dataset(data) > 0
    assert not list((data / "states").glob("*.sqlite"))
    assert (data / "manifest.jsonl").read_bytes() == manifest
    assert check_dataset(data).ok


def test_pack_and_unpack(compact: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.vtpack", tmp_path / "b.vtpack"
    count = pack_dataset(compact, first)
    pack_dataset(compact, second)
    assert first.read_bytes() == second.read_bytes()
    assert unpack_dataset(first, tmp_path / "back") == count
    assert check_dataset(tmp_path / "back").ok
    with pytest.raises(PackError):
        unpack_dataset(first, tmp_path / "back")
