"""Images of one domain keep every table at the same page, and say so in their schema cookie.

SQLite re-prepares a cached statement only when the schema cookie changes; a prepared
statement reads each table at the root page it was prepared with. An environment that restores
images whose tables sit at other pages under the same cookie reads another table's rows
without an error. ``build_image`` therefore creates every table (the change-tracking ones too)
before any row, and stamps the image with a cookie that digests ``sqlite_master``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, build_image
from veritask.env._build import _compiled, insert_rows, layout_cookie
from veritask.env._state import rebase
from veritask.policy import DomainSpec

DOMAINS = ["mock", "travel", "retail", "clinic"]


def _roots(image: bytes) -> list[tuple[str, int]]:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    rows = conn.execute("SELECT name, rootpage FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    return [(str(n), int(p)) for n, p in rows]


def _cookie(image: bytes) -> int:
    return int.from_bytes(image[40:44], "big")


def _more_rows(spec: DomainSpec, copies: int) -> dict[str, list[dict[str, Any]]]:
    """The seed with ``copies`` extra copies of each row of the tables keyed by an integer id."""
    rows = {name: [dict(r) for r in table_rows] for name, table_rows in spec.seed.items()}
    for table in spec.tables:
        key = table.primary_key[0] if table.primary_key else None
        have = rows.get(table.name, [])
        if key is None or key.type != "INTEGER" or not have or table.name not in rows:
            continue
        top = max(int(r[key.name]) for r in have)
        unique = [c.name for c in table.columns if c.unique and c.name != key.name]
        original = list(have)
        for i in range(copies):
            for j, row in enumerate(original):
                extra = {**row, key.name: top + 1 + i * len(original) + j}
                for col in unique:
                    extra[col] = f"{extra[col]}-{i}-{j}"
                rows[table.name].append(extra)
    return rows


@pytest.mark.parametrize("domain", DOMAINS)
def test_tables_sit_at_the_same_pages_whatever_the_rows(domain: str) -> None:
    spec = load_domain(domain)
    base = build_image(spec)
    seeded = sum(len(r) for r in spec.seed.values())
    for copies in (1, 8, 40):
        rows = _more_rows(spec, copies)
        try:
            image = build_image(spec, rows)
        except ValueError:
            continue  # a copy broke a constraint of this spec: nothing to compare
        assert _roots(image) == _roots(base)
        assert _cookie(image) == _cookie(base)
        if sum(len(r) for r in rows.values()) > seeded + 200:
            assert len(image) > len(base)  # the rows took pages, and moved no table


def _old_style(spec: DomainSpec, rows: Any) -> bytes:
    """An image laid out as before this rule: change tracking created after the rows, and the
    cookie SQLite counts up by itself."""
    compiled = _compiled(spec)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA page_size = 1024")
    conn.executescript(compiled.sql.tables)
    conn.execute("BEGIN")
    insert_rows(conn, spec, rows)
    conn.execute("COMMIT")
    conn.executescript(compiled.sql.triggers + "\n" + "\n".join(compiled.tracking))
    rebase(conn, compiled.layout)
    image = conn.serialize()
    conn.close()
    return image


@settings(max_examples=12, deadline=None)
@given(domain=st.sampled_from(DOMAINS), copies=st.integers(min_value=0, max_value=30))
def test_an_environment_reads_images_of_either_layout_as_a_fresh_reader_does(
    domain: str, copies: int
) -> None:
    spec = load_domain(domain)
    try:
        old = _old_style(spec, _more_rows(spec, copies))
    except ValueError:
        return
    env = Environment(CompiledDomain.from_spec(spec))
    try:
        new = env.image()
        for image in (new, old, new, old):
            env.restore(image)
            fresh = sqlite3.connect(":memory:")
            fresh.deserialize(image)
            for table in spec.tables:
                got = env.call(f"query_{table.name}", {"limit": 100})
                assert got.ok, got.error
                cols = ", ".join(f'"{c}"' for c in table.column_names)
                want = fresh.execute(
                    f'SELECT {cols} FROM "{table.name}" ORDER BY rowid LIMIT 100'
                ).fetchall()
                assert [tuple(r.values()) for r in got.result["rows"]] == want
            fresh.close()
    finally:
        env.close()


def test_the_cookie_digests_names_pages_and_sql() -> None:
    spec = load_domain("travel")
    image = build_image(spec)
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    assert layout_cookie(conn) == _cookie(image)
    conn.execute("CREATE TABLE extra (x)")
    assert layout_cookie(conn) != _cookie(image)
    conn.close()


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_bytes_a_call_writes_do_not_depend_on_the_connection_s_past(domain: str) -> None:
    """The same calls on the same image give the same bytes in a fresh environment, in one
    that has run other calls, and right after the schema was read again (schema format 1: the
    integers 0 and 1 are always written as one-byte integers)."""
    spec = load_domain(domain)
    compiled = CompiledDomain.from_spec(spec)
    calls = [
        (c.tool, dict(c.args))
        for owner in [*spec.rules, *spec.effects]
        for ex in owner.examples
        for c in ex.calls
    ]
    start = build_image(spec)
    assert int.from_bytes(start[44:48], "big") == 1

    def run(env: Environment, warm: bool, reread: bool) -> bytes:
        if warm:
            env.restore(start)
            for tool, args in calls:
                env.call(tool, args)
        env.restore(start)
        if reread:
            env.select("SELECT count(*) FROM sqlite_master WHERE name = ?", (f"x{warm}",))
        for tool, args in calls:
            env.call(tool, args)
        return env.image()

    images = set()
    for warm, reread in ((False, False), (True, False), (True, True), (False, True)):
        env = Environment(compiled)
        try:
            images.add(run(env, warm, reread))
        finally:
            env.close()
    assert len(images) == 1
