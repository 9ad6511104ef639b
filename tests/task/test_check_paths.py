"""``check``'s cheaper paths give the same verdicts and still catch every tampering.

Version-2 packs (runs of changed bytes), seals that hash each manifest line, target tracked
rows read on the verifier's connection, and the directory listing ``DatasetDir`` reads once.
Datasets written before (version-1 packs, seals without line hashes) still load and verify.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritask._util import canonical_json, sha256_text
from veritask.synth import generate
from veritask.task import DatasetDir, check_dataset, load_dataset
from veritask.task._compact import (
    CHUNK,
    Delta,
    PackError,
    apply_runs,
    make_delta,
    make_runs_delta,
    pack_bytes,
    read_pack_index,
)
from veritask.task._spoiler import _INT_ID


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paths") / "retail"
    generate("retail", 12, 2, root)
    return root


@pytest.fixture
def data(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "ds"))


def _report(root: Path) -> dict[str, object]:
    return check_dataset(root).to_json()


def _packs(root: Path) -> list[Path]:
    return sorted((root / "states").glob("*.pack"))


def _rewrite_packs(root: Path, make: object, version: int, edit: str | None = None) -> None:
    """Write every target of the dataset's packs again, as deltas made by ``make`` (``edit``:
    the target whose delta gets one byte of its image flipped)."""
    ds = DatasetDir(root)
    deltas = []
    for path in _packs(root):
        for target, entry in read_pack_index(path).items():
            base = ds.read_state(entry.base)
            image = bytearray(ds.read_state(target))
            if target == edit:
                image[len(image) // 2] ^= 0x01
            delta = make(entry.base, base, bytes(image))  # type: ignore[operator]
            deltas.append(Delta(target, entry.base, delta.size, delta.pages, delta.body, version))
        path.unlink()
    (root / "states" / f"{'0' * 63}1.pack").write_bytes(pack_bytes(deltas, version=version))


@settings(max_examples=60, deadline=None)
@given(
    pages=st.integers(1, 4),
    edits=st.lists(st.tuples(st.integers(0, 4 * CHUNK), st.binary(min_size=1, max_size=40))),
    grow=st.integers(-CHUNK, CHUNK),
    seed=st.integers(0, 255),
)
def test_a_runs_delta_rebuilds_every_target_byte_for_byte(
    pages: int, edits: list[tuple[int, bytes]], grow: int, seed: int
) -> None:
    base = bytes((i * 7 + seed) % 251 for i in range(pages * CHUNK))
    target = bytearray(base[: max(0, len(base) + grow)].ljust(len(base) + grow, b"\1"))
    for at, chunk in edits:
        target[at : at + len(chunk)] = chunk[: max(0, len(target) - at)]
    delta = make_runs_delta("b" * 64, base, bytes(target))
    assert delta.version == 2 and delta.pages == ()
    assert apply_runs(base, delta.size, delta.body) == bytes(target)
    assert delta.apply(base) == make_delta("b" * 64, base, bytes(target)).apply(base)


def _body(spans: list[int], data: bytes) -> bytes:
    return zlib.compress(struct.pack(f"<{1 + len(spans)}I", len(spans) // 2, *spans) + data)


@pytest.mark.parametrize(
    "body",
    [
        b"not zlib",
        zlib.compress(b"\1\0"),  # a count without its runs
        _body([10, 2, 5, 2], b"abcd"),  # runs out of order
        _body([10, 4, 12, 2], b"abcdef"),  # runs overlap
        _body([CHUNK - 1, 4], b"abcd"),  # a run past the image's end
        _body([10, 0], b""),  # an empty run
        _body([10, 4], b"ab"),  # bytes missing
        _body([10, 2], b"abcd"),  # bytes left over
    ],
)
def test_a_malformed_runs_delta_is_a_pack_error(body: bytes) -> None:
    with pytest.raises(PackError):
        apply_runs(bytes(CHUNK), CHUNK, body)


def test_new_packs_are_version_2_and_smaller_than_version_1(pristine: Path, tmp_path: Path) -> None:
    assert _packs(pristine)
    for path in _packs(pristine):
        assert all(e.version == 2 for e in read_pack_index(path).values())
    old = Path(shutil.copytree(pristine, tmp_path / "v1"))
    _rewrite_packs(old, make_delta, 1)
    size = sum(p.stat().st_size for p in _packs(old))
    assert sum(p.stat().st_size for p in _packs(pristine)) < size


def test_version_1_packs_load_and_check_alike(pristine: Path, tmp_path: Path) -> None:
    old = Path(shutil.copytree(pristine, tmp_path / "v1"))
    _rewrite_packs(old, make_delta, 1)
    DatasetDir(old).seal(load_dataset(old))  # as datasets with version-1 packs were sealed
    assert all(e.version == 1 for p in _packs(old) for e in read_pack_index(p).values())
    report = _report(old)
    assert report == _report(pristine) and report["certified"] == 12 and not report["failures"]


@pytest.mark.parametrize(("make", "version"), [(make_runs_delta, 2), (make_delta, 1)])
def test_a_delta_edited_into_another_image_is_caught(
    data: Path, make: object, version: int
) -> None:
    """A delta that decodes cleanly but rebuilds other bytes than the target's name."""
    pkg = next(p for p in load_dataset(data) if p.target != p.origin)
    _rewrite_packs(data, make, version, edit=pkg.target)
    DatasetDir(data).seal(load_dataset(data))  # resealed: the state check does not trust it
    failures = check_dataset(data).failures
    assert failures and all(f["id"] == pkg.id for f in failures)
    assert any(
        f["kind"] == "integrity" and "target: state" in f["detail"] and "hash" in f["detail"]
        for f in failures
    )


def _seal_entries(root: Path, edit: object) -> None:
    """Edit ``digest.json``'s package entries and recompute its own digest."""
    path = root / "digest.json"
    seal = json.loads(path.read_text())
    for entry in seal["packages"]:
        edit(entry)  # type: ignore[operator]
    body = {k: v for k, v in seal.items() if k != "digest"}
    seal["digest"] = sha256_text(canonical_json(body))
    path.write_text(json.dumps(seal, indent=1) + "\n")


def _edit_difficulty(root: Path) -> str:
    path = root / "manifest.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[3])
    record["difficulty"] = "L1" if record["difficulty"] != "L1" else "L2"
    lines[3] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return str(record["id"])


def test_seals_hash_each_line_and_still_name_the_edited_field(data: Path) -> None:
    seal = json.loads((data / "digest.json").read_text())
    assert all(len(e["line"]) == 64 for e in seal["packages"])
    edited = _edit_difficulty(data)
    failures = check_dataset(data).failures
    assert {(f["id"], f["detail"]) for f in failures if f["kind"] == "integrity"} == {
        (edited, "difficulty: differs from the sealed value"),
        ("manifest.jsonl", "file: differs from the sealed file"),
    }


def test_a_seal_without_line_hashes_still_verifies(data: Path) -> None:
    """Seals written before line hashes: every field is compared, as then."""
    _seal_entries(data, lambda e: e.pop("line"))
    assert check_dataset(data).ok
    edited = _edit_difficulty(data)
    failures = check_dataset(data).failures
    assert [f["id"] for f in failures if f["kind"] == "integrity"] == [edited, "manifest.jsonl"]


def test_an_edited_line_hash_is_caught(data: Path) -> None:
    def edit(entry: dict[str, object]) -> None:
        entry["line"] = "0" * 64

    _seal_entries(data, edit)  # resealed: fields are compared instead, all as sealed
    assert check_dataset(data).ok
    path = data / "digest.json"
    seal = json.loads(path.read_text())
    seal["packages"][0]["line"] = "1" * 64  # not resealed
    path.write_text(json.dumps(seal, indent=1) + "\n")
    (failure,) = check_dataset(data).failures
    assert failure["id"] == "digest.json" and "edited" in failure["detail"]


def test_an_edited_origin_is_caught_for_every_task_of_its_scene(data: Path) -> None:
    ds = DatasetDir(data)
    packages = load_dataset(data)
    origin = packages[0].origin
    path = ds.compressed_path(origin)
    image = bytearray(zlib.decompress(path.read_bytes()))
    image[-100] ^= 0x01
    path.write_bytes(zlib.compress(bytes(image)))
    DatasetDir(data).seal(packages)  # resealed: the state check does not trust the seal
    failures = check_dataset(data).failures
    scene = {p.id for p in packages if origin in (p.origin, p.target)}
    assert {f["id"] for f in failures} == scene
    assert all(f["kind"] == "integrity" and "hash to its name" in f["detail"] for f in failures)


def test_a_target_named_by_another_stored_state_is_a_diff(data: Path) -> None:
    """The manifest's target pointed at a valid stored image that is not the witness's end
    state (the package's own origin), resealed: the replay does not reach it."""
    ds = DatasetDir(data)
    packages = load_dataset(data)
    pkg = next(p for p in packages if p.target != p.origin)
    path = ds.manifest
    lines = path.read_text().splitlines()
    index = [p.id for p in packages].index(pkg.id)
    record = json.loads(lines[index])
    record["target"] = pkg.origin
    lines[index] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    ds.seal(load_dataset(data))
    failures = check_dataset(data).failures
    assert (pkg.id, "diff") in {(f["id"], f["kind"]) for f in failures}
    assert {f["kind"] for f in failures} <= {"diff", "duplicate"}, failures


def test_states_written_after_the_listing_are_still_found(data: Path) -> None:
    reader, writer = DatasetDir(data), DatasetDir(data)
    pkg = load_dataset(data)[0]
    reader.read_state(pkg.origin)  # the listing is taken
    digest = writer.put_state(b"not really a database")
    assert reader.has_state(digest)
    assert reader.read_state(digest) == b"not really a database"


def test_the_state_cache_keeps_its_size(pristine: Path) -> None:
    ds = DatasetDir(pristine)
    for pkg in load_dataset(pristine):
        ds.read_state(pkg.target)
    assert ds._cache_bytes == sum(len(v) for v in ds._cache.values()) > 0


_ROW_ID_BEFORE = re.compile(r"(?:#\s*\d+\b|\bids?\b\s*[:=#]?\s*\d+\b|\brow\s+\d+\b)", re.I)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["#", "# ", "id", "ID", "ids", "Id:", "row", "ROW ", "\u0130d", "\u0131d", "\u017f"]
        )
        | st.text(alphabet="0123456789 _-:=#abirIR\u0130\u0131", max_size=6),
        max_size=12,
    ).map("".join)
)
def test_row_ids_are_found_exactly_where_the_pattern_without_lookahead_finds_them(
    text: str,
) -> None:
    assert [m.span() for m in _INT_ID.finditer(text)] == [
        m.span() for m in _ROW_ID_BEFORE.finditer(text)
    ]
