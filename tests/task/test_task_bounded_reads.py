"""Dataset files read through the bounded readers: run.json, digest.json, cost files, packs,
compressed states and archives refuse deep nesting, bombs and false sizes with a located
message, never a RecursionError or MemoryError."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zlib
from pathlib import Path

import pytest

from veritask._util import InputError
from veritask.task import unpack_dataset
from veritask.task._compact import (
    MAGIC,
    MAX_IMAGE_BYTES,
    PackError,
    decompress_image,
    make_runs_delta,
    pack_bytes,
    read_pack_index,
)
from veritask.task._costs import load_prices
from veritask.task._dataset import DatasetDir
from veritask.task._integrity import Dataset, compare_seal

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_run_json_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match=r"run\.json: JSON is nested more than 200 levels deep"):
        DatasetDir(tmp_path).read_run()


def test_deep_cost_file_is_refused(tmp_path: Path) -> None:
    ds = DatasetDir(tmp_path)
    ds.costs_path(0).parent.mkdir(parents=True, exist_ok=True)
    ds.costs_path(0).write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match="nested more than 200 levels deep"):
        ds.read_costs(0)


def test_deep_digest_is_reported_as_tampering(tmp_path: Path) -> None:
    found = compare_seal(DEEP, Dataset(tmp_path, None, []))
    assert [t.subject for t in found] == ["digest.json"]
    assert "nested more than 200 levels deep" in found[0].detail


def test_price_file_with_a_complex_key_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("default: {prompt: 1, completion: 2}\n? [a, b]\n: 3\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"prices\.yaml:2: a mapping key is itself a list"):
        load_prices(str(path))


def _pack(tmp_path: Path, header: object, body: bytes = b"") -> Path:
    path = tmp_path / "x.pack"
    path.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + body)
    return path


def _entry(**over: object) -> dict[str, object]:
    entry: dict[str, object] = {"target": "t", "base": "b", "size": 10, "offset": 0, "length": 4}
    return {**entry, **over}


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"version": 2, "chunk": 4096, "entries": [_entry(size=10**12)]}, "claims 1000000000000"),
        ({"version": 2, "chunk": 4096, "entries": [_entry(length=10**9)]}, "outside the file"),
        ({"version": 2, "chunk": 4096, "entries": [_entry(offset=-1)]}, "outside the file"),
        ({"version": 1, "chunk": 4096, "entries": [_entry(pages=[10**6])]}, "page outside"),
        ({"version": 2, "chunk": 4096, "entries": [{}]}, "bad header"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_pack_header_claims_are_checked_before_allocating(
    tmp_path: Path, header: object, message: str
) -> None:
    with pytest.raises(PackError, match=message):
        read_pack_index(_pack(tmp_path, header, b"abcd"))


def test_deep_pack_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.pack"
    path.write_bytes(MAGIC + DEEP.encode() + b"\n")
    with pytest.raises(PackError, match=r"deep\.pack: bad header: JSON is nested more than 8"):
        read_pack_index(path)


def test_a_real_pack_still_reads_and_rebuilds(tmp_path: Path) -> None:
    base, target = bytes(9000), b"\1" * 100 + bytes(8900)
    path = tmp_path / "p.pack"
    path.write_bytes(pack_bytes([make_runs_delta("b", base, target)]))
    (entry,) = read_pack_index(path).values()
    assert entry.rebuild(base) == target


def test_zlib_bomb_as_a_compressed_state_is_refused() -> None:
    inflater = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    bomb = b"".join(inflater.compress(chunk) for _ in range(MAX_IMAGE_BYTES // len(chunk) + 1))
    bomb += inflater.flush()
    with pytest.raises(PackError, match=f"inflates to more than the limit of {MAX_IMAGE_BYTES}"):
        decompress_image(bomb)
    with pytest.raises(PackError, match="is not valid zlib data"):
        decompress_image(b"garbage")


def _archive(tmp_path: Path, name: str, data: bytes, claimed: int) -> Path:
    """A gzip tar whose one member holds ``data`` but whose PAX header claims ``claimed``."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.pax_headers = {"size": str(claimed)}
        tar.addfile(info, io.BytesIO(data))
    path = tmp_path / "a.vtpack"
    path.write_bytes(gzip.compress(raw.getvalue()))
    return path


def test_archive_member_claiming_a_terabyte_is_refused(tmp_path: Path) -> None:
    path = _archive(tmp_path, "manifest.jsonl", b"{}\n", 10**12)
    with pytest.raises(PackError, match="claims 1000000000000 bytes; the archive would unpack"):
        unpack_dataset(path, tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.jsonl").exists()


def test_archive_member_cut_short_is_refused(tmp_path: Path) -> None:
    path = _archive(tmp_path, "manifest.jsonl", b"{}\n", 10**6)
    with pytest.raises(PackError, match=r"a\.vtpack: not a dataset archive"):
        unpack_dataset(path, tmp_path / "out")
