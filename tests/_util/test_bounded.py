"""The bounded readers: every limit and every malformed input gives one ``InputError`` naming
the file, the line where known and what was wrong; nothing recurses on the input's nesting."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask._util import (
    InputError,
    Limits,
    decompress,
    parse_json,
    read_json,
    read_jsonl,
    read_text,
    read_yaml,
)

DEEP = 100_000
ALIAS_BOMB = (
    "a: &a ["
    + ",".join(["xxxxxxxxxx"] * 10)
    + "]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n"
        for i in range(8)
    )
)
"""Nine levels of ten aliases each: a kilobyte standing for about 10**10 bytes."""

JSON_CASES: list[tuple[str, bytes, str, int | None]] = [
    ("deep arrays", b"[" * DEEP + b"]" * DEEP, "nested more than 200 levels deep", None),
    (
        "deep objects",
        b'{"a":' * DEEP + b"1" + b"}" * DEEP,
        "nested more than 200 levels deep",
        None,
    ),
    ("huge exponent", b'{"x": 1e999999}', "the number 1e999999 is out of range", None),
    ("huge integer", b"1" * 100_000, "more digits than Python reads", None),
    ("truncated", b'{"a": [1, 2,\n  3', "ends early (a truncated file?)", 2),
    ("bad token", b'{"a": 1,\n "b": nope}', "is not JSON: Expecting value", 2),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\x00", "is binary (a NUL byte), not JSON", 3),
    ("not utf-8", b'{"a": "caf\xe9"}', "is not UTF-8 text", 1),
]


def _assert_error(exc: InputError, label: str, message: str, line: int | None) -> None:
    assert message in str(exc)
    assert str(exc).startswith(label)
    assert exc.line == line


@pytest.mark.parametrize(
    ("case", "data", "message", "line"), JSON_CASES, ids=[c[0] for c in JSON_CASES]
)
def test_read_json_refuses(
    tmp_path: Path, case: str, data: bytes, message: str, line: int | None
) -> None:
    path = tmp_path / f"{case}.json"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read_json(path)
    _assert_error(info.value, str(path), message, line)


ONE_LINE = [c for c in JSON_CASES if b"\n" not in c[1]]
"""The cases that fit on one line of a JSON-lines file."""


@pytest.mark.parametrize(
    ("case", "data", "message", "line"), ONE_LINE, ids=[c[0] for c in ONE_LINE]
)
def test_read_jsonl_names_the_line(
    tmp_path: Path, case: str, data: bytes, message: str, line: int | None
) -> None:
    del line  # the row's line in the file is checked instead
    path = tmp_path / f"{case}.jsonl"
    path.write_bytes(b'{"ok": 1}\n\n' + data + b"\n")
    with pytest.raises(InputError) as info:
        read_jsonl(path)
    assert message in str(info.value)
    assert info.value.line == 3


def test_good_json_is_read_and_nan_kept(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text('{"a": [1, 2.5, "[[[["]}\n\n[NaN]\n', encoding="utf-8")
    rows = read_jsonl(path)
    assert rows[0] == {"a": [1, 2.5, "[[[["]}
    assert rows[1][0] != rows[1][0]  # NaN, as Python writes it


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    text = '{"s": "' + "[" * 5_000 + '\\"' + "{" * 5_000 + '"}'
    assert parse_json(text)["s"].startswith("[[[")


def test_depth_limit_is_exact() -> None:
    limits = Limits(max_depth=3)
    assert parse_json("[[[1]]]", limits=limits) == [[[1]]]
    with pytest.raises(InputError, match="nested more than 3 levels deep"):
        parse_json("[[[[1]]]]", limits=limits)


def test_size_limit_is_checked_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b"1," * 600 + b"1]")
    with pytest.raises(InputError, match="larger than the limit of 1000 bytes"):
        read_json(path, limits=Limits(max_bytes=1000))


def test_read_text_refuses_binary_and_names_what(tmp_path: Path) -> None:
    path = tmp_path / "image.bin"
    path.write_bytes(b"line one\nline two\n\x00\x01")
    with pytest.raises(InputError) as info:
        read_text(path, what="tools file")
    assert str(info.value) == "tools file:3: is binary (a NUL byte), not text"


YAML_CASES: list[tuple[str, str, str, int | None]] = [
    ("complex key", "a: 1\n? [a, b]\n: 2\n", "a mapping key is itself a list or mapping", 2),
    ("mapping key", "x:\n  ? {k: v}\n  : 2\n", "a mapping key is itself a list or mapping", 2),
    ("alias bomb", ALIAS_BOMB, "YAML aliases expand to more than the limit of", None),
    ("deep flow", "[" * DEEP + "]" * DEEP, "YAML is nested more than 200 levels deep", 1),
    ("deep block", "".join("  " * i + "- \n" for i in range(300)), "nested more than 200", 201),
    ("self alias", "a: &x [1, *x]\n", "refers to itself", 1),
    ("bad syntax", "a: [1, 2\nb: 3\n", "is not valid YAML", None),
    ("python tag", "a: !!python/object:os.system x\n", "could not determine a constructor", 1),
]


@pytest.mark.parametrize(
    ("case", "text", "message", "line"), YAML_CASES, ids=[c[0] for c in YAML_CASES]
)
def test_read_yaml_refuses(
    tmp_path: Path, case: str, text: str, message: str, line: int | None
) -> None:
    path = tmp_path / f"{case}.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_yaml(path)
    assert message in str(info.value)
    assert str(info.value).startswith(str(path))
    if line is not None:
        assert info.value.line == line


def test_alias_bomb_is_measured_in_bytes_not_nodes() -> None:
    one_node_megabyte = "a: &a " + "x" * 2_000 + "\nb: [" + ", ".join(["*a"] * 600) + "]\n"
    with pytest.raises(InputError, match="expand to more than the limit of 1000000 bytes"):
        read_yaml(one_node_megabyte.encode(), limits=Limits(max_expanded=1_000_000))
    assert len(read_yaml(one_node_megabyte.encode())["b"]) == 600


def test_yaml_non_utf8_and_good_yaml(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        read_yaml(path)
    path.write_text("a: &v [1, 2]\nb: *v\non: yes\n", encoding="utf-8")
    assert read_yaml(path) == {"a": [1, 2], "b": [1, 2], True: True}


ZIP_CASES: list[tuple[str, Callable[[bytes], bytes], Any]] = [
    ("zlib", zlib.compress, "zlib"),
    ("gzip", gzip.compress, "gzip"),
]


@pytest.mark.parametrize(("name", "pack", "fmt"), ZIP_CASES, ids=[c[0] for c in ZIP_CASES])
def test_decompress_refuses_a_bomb_without_inflating_it(
    name: str, pack: Callable[[bytes], bytes], fmt: Any
) -> None:
    bomb = pack(bytes(64 << 20))  # 64 MiB of zeros in about 64 kB
    with pytest.raises(InputError, match="inflates to more than the limit of 1048576 bytes"):
        decompress(bomb, what=name, fmt=fmt, max_size=1 << 20)
    assert decompress(pack(b"hello"), fmt=fmt) == b"hello"


@pytest.mark.parametrize("fmt", ["zlib", "gzip"])
def test_decompress_truncated_and_corrupt(fmt: Any) -> None:
    data = zlib.compress(b"x" * 1000) if fmt == "zlib" else gzip.compress(b"x" * 1000)
    with pytest.raises(InputError, match="ends early"):
        decompress(data[: len(data) // 2], what="state", fmt=fmt)
    with pytest.raises(InputError, match=f"state: is not valid {fmt} data"):
        decompress(b"not compressed at all", what="state", fmt=fmt)


def test_gzip_members_are_all_read() -> None:
    assert decompress(gzip.compress(b"ab") + gzip.compress(b"cd"), fmt="gzip") == b"abcd"


def test_input_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^x\.json:4: boom$"):
        raise InputError("x.json", "boom", 4)
