"""import_sql: a DomainSpec from raw SQLite DDL and triggers (LOGIGEN Appendix A)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.policy import (
    RAISE_PATTERN,
    DomainSpec,
    SpecError,
    compile_sql,
    import_sql,
    render_wiki,
)

DATA = Path(__file__).parent / "data"
APPENDIX = (DATA / "appendix_a.sql").read_text(encoding="utf-8")
TRIGGER_RE = re.compile(
    r"CREATE TRIGGER (\w+)\s+(BEFORE|AFTER) (INSERT|UPDATE)(?: OF \w+)? ON (\w+)(.*?)\nEND;", re.S
)


@pytest.fixture(scope="module")
def spec() -> DomainSpec:
    return import_sql(APPENDIX, name="corporate_travel", source="appendix_a.sql")


def by_id(items: list[Any]) -> dict[str, Any]:
    return {item.id: item for item in items}


def mini(sql: str, name: str = "mini") -> DomainSpec:
    return import_sql(sql, name=name, source="mini.sql")


# -- tables ------------------------------------------------------------------------------------


def test_tables_tiers_and_access(spec: DomainSpec) -> None:
    expected = {
        "flight_classes": "reference",
        "preferred_vendors": "reference",
        "travel_policies": "reference",
        "companies": "entity",
        "users": "entity",
        "approvals": "transaction",
        "flight_bookings": "transaction",
        "hotel_bookings": "transaction",
        "travel_requests": "transaction",
    }
    assert {t.name: t.tier for t in spec.tables} == expected
    for table in spec.tables:
        assert table.writable == (table.tier == "transaction")


def test_columns_enums_defaults_and_keys(spec: DomainSpec) -> None:
    fb = spec.table("flight_bookings")
    assert fb.column_names[:3] == ["id", "travel_request_id", "flight_code"]
    assert fb.column("status").enum == ["PENDING", "APPROVED", "TICKETED", "CANCELLED"]
    assert fb.column("status").default == "PENDING" and fb.column("status").not_null
    assert fb.column("policy_violation_flag").enum == [0, 1]
    assert fb.column("cost").type == "INTEGER" and fb.column("flight_code").type == "TEXT"
    assert fb.column("cancellation_step").not_null is False
    ident = fb.column("id")
    assert ident.primary_key and ident.autoincrement and ident.technical
    assert spec.table("companies").column("active").default == 1
    assert spec.table("users").column("id").primary_key
    assert not spec.table("users").column("id").autoincrement


def test_foreign_keys(spec: DomainSpec) -> None:
    refs = {
        f"{t.name}.{c.name}": c.references for t in spec.tables for c in t.columns if c.references
    }
    assert refs == {
        "users.company_id": "companies.id",
        "approvals.flight_booking_id": "flight_bookings.id",
        "approvals.approver_id": "users.id",
        "flight_bookings.travel_request_id": "travel_requests.id",
        "flight_bookings.class": "flight_classes.id",
        "hotel_bookings.travel_request_id": "travel_requests.id",
        "hotel_bookings.hotel_vendor_id": "preferred_vendors.id",
        "travel_requests.user_id": "users.id",
    }


def test_unique_checks_and_lifecycles(spec: DomainSpec) -> None:
    assert spec.table("travel_policies").unique == [["company_id", "user_level"]]
    count = spec.table("travel_requests").column("flight_booking_count")
    assert count.check == "flight_booking_count >= 0 AND flight_booking_count <= 3"
    lifecycles = {t.name: t.lifecycle for t in spec.tables if t.lifecycle}
    assert lifecycles["users"].column == "active" and lifecycles["users"].inactive_values == [0]
    assert lifecycles["approvals"].inactive_values == ["DENIED"]
    assert lifecycles["flight_bookings"].inactive_values == ["CANCELLED"]


# -- triggers ----------------------------------------------------------------------------------


def test_one_rule_per_raise_branch_with_the_right_codes(spec: DomainSpec) -> None:
    rules = by_id(spec.rules)
    before = [m for m in TRIGGER_RE.finditer(APPENDIX) if m[2] == "BEFORE"]
    assert len(before) == 10
    total = 0
    for match in before:
        codes = re.findall(r"RAISE\(ABORT, '\[(\w+)\]", match[5])
        for i, code in enumerate(codes, start=1):
            rule = rules[f"{match[1].upper()}_{i}"]
            assert rule.code == code
            assert rule.table == match[4] and rule.on == [match[3].lower()]
        assert f"{match[1].upper()}_{len(codes) + 1}" not in rules
        total += len(codes)
    assert len(spec.rules) == total == 47


def test_rule_fields(spec: DomainSpec) -> None:
    rules = by_id(spec.rules)
    cancel = rules["VALIDATE_FLIGHT_CANCELLATION_2"]
    assert cancel.code == "PROVENANCE_REQUIRED"
    assert cancel.message == "Cancellation step must be provided"
    assert cancel.hint == "See the policy: Cancellation step must be provided"
    assert cancel.condition == "NEW.cancellation_step IS NULL"
    assert cancel.when is not None
    assert "NEW.status = 'CANCELLED' AND OLD.status != 'CANCELLED'" in cancel.when
    assert "NEW.status IS NOT OLD.status" in cancel.when
    assert rules["PREVENT_FLIGHT_MODIFICATION_AFTER_FINAL_1"].when == (
        "OLD.status IN ('TICKETED', 'CANCELLED')"
    )
    assert rules["VALIDATE_TRAVEL_REQUEST_INSERT_1"].when is None
    assert rules["VALIDATE_TRAVEL_REQUEST_INSERT_2"].message == "User's company is inactive"
    assert cancel.transaction == "update_flight_bookings"


def test_categories_are_guessed_from_codes(spec: DomainSpec) -> None:
    expected = {
        "QUOTA_EXCEEDED": "quota",
        "IRREVERSIBLE": "irreversibility",
        "IMMUTABLE": "irreversibility",
        "CALCULATION_ERROR": "calculation",
        "CALCULATION_REQUIRED": "calculation",
        "AUTHORITY_ERROR": "authority",
        "CONFLICT_OF_INTEREST": "authority",
        "PREREQ_FAIL": "prerequisite",
        "SYSTEM_CONTROL": "system_control",
        "SYSTEM_ERROR": "system_control",
        "POLICY_VIOLATION": "policy",
        "REQUIRED_FIELD": "policy",
        "LOGIC_ERROR": "policy",
        "PROVENANCE_REQUIRED": "policy",
    }
    assert {r.code: r.category for r in spec.rules} == expected


def test_quota_threshold_is_lifted(spec: DomainSpec) -> None:
    quota = by_id(spec.rules)["ENFORCE_FLIGHT_BOOKING_QUOTA_1"]
    assert quota.threshold is not None
    assert quota.threshold.value == 3
    assert quota.threshold.quantity == "travel_requests.flight_booking_count"
    assert quota.condition.endswith(">= {threshold}")


def test_after_triggers_become_verbatim_effects(spec: DomainSpec) -> None:
    after = [m for m in TRIGGER_RE.finditer(APPENDIX) if m[2] == "AFTER"]
    effects = by_id(spec.effects)
    assert set(effects) == {m[1].upper() for m in after}
    for match in after:
        effect = effects[match[1].upper()]
        assert effect.table == match[4] and effect.on == match[3].lower()
        body = match[5].split("BEGIN", 1)[1]
        assert " ".join(effect.sql.split()) == " ".join(body.split())
    recalc = effects["RECALC_FLIGHT_QUOTA_AFTER_STATUS_CHANGE"]
    assert recalc.when is not None and "NEW.status != OLD.status" in recalc.when
    assert effects["PROCESS_FLIGHT_BOOKING_AFTER_INSERT"].transaction == "insert_flight_bookings"


def test_rules_follow_sqlite_firing_order(spec: DomainSpec) -> None:
    ids = [r.id for r in spec.rules if r.table == "flight_bookings" and r.on == ["insert"]]
    # validate_flight_booking_insert was created after enforce_flight_booking_quota: it fires first
    assert ids.index("VALIDATE_FLIGHT_BOOKING_INSERT_1") < ids.index(
        "ENFORCE_FLIGHT_BOOKING_QUOTA_1"
    )


def test_generic_transactions_and_minimal_wiki(spec: DomainSpec) -> None:
    txs = by_id(spec.transactions)
    assert set(txs) == {
        f"{kind}_{t}"
        for t in ("approvals", "flight_bookings", "hotel_bookings", "travel_requests")
        for kind in ("insert", "update")
    }
    assert txs["insert_travel_requests"].parameters == ["user_id", "trip_purpose", "current_step"]
    assert txs["update_approvals"].parameters[0] == "id"
    assert spec.wiki.persona == "You are a helpful assistant for corporate_travel."
    text = render_wiki(spec)
    for rule in spec.rules:
        assert f"[{rule.code}] {rule.message}" in text


# -- behaviour: the compiled import acts like the original script ------------------------------

REFERENCE_ROWS = [
    "INSERT INTO companies (id, name, active) VALUES ('c1', 'Acme', 1), ('c0', 'Gone', 0)",
    "INSERT INTO users VALUES ('u_staff', 'c1', 'STAFF', 1), ('u_mgr', 'c1', 'MANAGER', 1),"
    " ('u_dir', 'c1', 'DIRECTOR', 1), ('u_gone', 'c0', 'STAFF', 1), ('u_off', 'c1', 'STAFF', 0)",
    "INSERT INTO travel_policies VALUES ('p1', 'c1', 'STAFF', 1000, 'PREFERRED'),"
    " ('p2', 'c1', 'MANAGER', 2000, 'ANY'), ('p3', 'c1', 'DIRECTOR', 5000, 'ANY')",
    "INSERT INTO flight_classes VALUES ('ECONOMY', 'Economy'), ('BUSINESS', 'Business')",
    "INSERT INTO preferred_vendors VALUES ('v_pref', 'Inn', 'PREFERRED'),"
    " ('v_std', 'Motel', 'STANDARD')",
]
TR = "INSERT INTO travel_requests (user_id, trip_purpose, current_step) VALUES (?, ?, 1)"
FLIGHT = (
    "INSERT INTO flight_bookings (travel_request_id, flight_code, cost, class, departure_step,"
    " booking_step, approval_status) VALUES (?, 'F', ?, ?, ?, 1, ?)"
)
HOTEL = (
    "INSERT INTO hotel_bookings (travel_request_id, hotel_vendor_id, cost, booking_step)"
    " VALUES (?, ?, 300, 1)"
)
FB_SET = "UPDATE flight_bookings SET {} WHERE id = ?"
SCENARIO: list[tuple[str, tuple[Any, ...], str]] = [
    (TR, ("u_off", "Trip"), "PREREQ_FAIL"),
    (TR, ("u_gone", "Trip"), "PREREQ_FAIL"),
    (TR, ("u_staff", ""), "POLICY_VIOLATION"),
    (TR, ("u_staff", "Board meeting"), "ok"),
    (TR, ("u_mgr", "Audit"), "ok"),
    (FLIGHT, (1, 300, "BUSINESS", 10, "NOT_REQUIRED"), "POLICY_VIOLATION"),
    (FLIGHT, (1, 1500, "ECONOMY", 10, "NOT_REQUIRED"), "POLICY_VIOLATION"),
    (FLIGHT, (1, 1500, "ECONOMY", 10, "PENDING"), "ok"),
    (FLIGHT, (1, 200, "ECONOMY", 10, "PENDING"), "LOGIC_ERROR"),
    (FLIGHT, (1, 200, "ECONOMY", 10, "NOT_REQUIRED"), "ok"),
    (FLIGHT, (1, 1500, "ECONOMY", 2, "NOT_REQUIRED"), "ok"),
    (
        "INSERT INTO flight_bookings (travel_request_id, flight_code, cost, class, departure_step,"
        " booking_step, policy_violation_flag) VALUES (1, 'F', 100, 'ECONOMY', 10, 1, 1)",
        (),
        "SYSTEM_CONTROL",
    ),
    (
        "UPDATE approvals SET status = 'APPROVED', approver_id = ? WHERE id = 1",
        ("u_staff",),
        "AUTHORITY_ERROR",
    ),
    ("UPDATE approvals SET status = 'APPROVED', approver_id = ? WHERE id = 1", ("u_mgr",), "ok"),
    ("UPDATE approvals SET status = 'DENIED' WHERE id = 1", (), "IRREVERSIBLE"),
    (
        FB_SET.format("status = 'CANCELLED', cancellation_step = 2, refund_amount = 1500"),
        (1,),
        "IMMUTABLE",
    ),
    (FB_SET.format("status = 'CANCELLED'"), (2,), "PROVENANCE_REQUIRED"),
    (
        FB_SET.format("status = 'CANCELLED', cancellation_step = 5, refund_amount = 200"),
        (2,),
        "CALCULATION_ERROR",
    ),
    (FB_SET.format("status = 'CANCELLED', cancellation_step = 5, refund_amount = 100"), (2,), "ok"),
    (FB_SET.format("status = 'APPROVED'"), (2,), "IMMUTABLE"),
    (FB_SET.format("status = 'APPROVED'"), (3,), "ok"),
    (FLIGHT, (1, 100, "ECONOMY", 10, "NOT_REQUIRED"), "ok"),
    (FB_SET.format("status = 'APPROVED'"), (4,), "ok"),
    (FLIGHT, (1, 100, "ECONOMY", 10, "NOT_REQUIRED"), "QUOTA_EXCEEDED"),
    (FLIGHT, (1, 100, "BUSINESS", 10, "NOT_REQUIRED"), "POLICY_VIOLATION"),
    ("UPDATE travel_requests SET status = 'CANCELLED' WHERE id = 2", (), "ok"),
    (FLIGHT, (2, 100, "ECONOMY", 10, "NOT_REQUIRED"), "PREREQ_FAIL"),
    (HOTEL, (1, "v_std"), "POLICY_VIOLATION"),
    (HOTEL, (1, "v_none"), "POLICY_VIOLATION"),
    (HOTEL, (1, "v_pref"), "ok"),
    ("UPDATE hotel_bookings SET status = 'CONFIRMED' WHERE id = 1", (), "ok"),
    (
        "UPDATE hotel_bookings SET status = 'CANCELLED', cancellation_step = 2,"
        " refund_amount = 300 WHERE id = 1",
        (),
        "IMMUTABLE",
    ),
]


def run(script: str) -> tuple[list[tuple[str, str]], dict[str, list[Any]]]:
    """Run the scenario on a fresh database built by ``script``: outcomes and final rows."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    for row in REFERENCE_ROWS:
        conn.execute(row)
    outcomes = []
    for sql, params, _ in SCENARIO:
        try:
            conn.execute(sql, params)
            outcomes.append(("ok", ""))
        except sqlite3.DatabaseError as exc:
            outcomes.append(normalise(str(exc)))
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    state = {
        t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
        for t in tables
        if not t.startswith(("sqlite_", "vt_"))
    }
    conn.close()
    return outcomes, state


def normalise(message: str) -> tuple[str, str]:
    compiled = RAISE_PATTERN.match(message)
    if compiled:
        return compiled["code"], compiled["message"]
    original = re.match(r"^\[(\w+)\] (.*)$", message, re.S)
    assert original, message
    return original[1], original[2]


def test_compiled_import_is_accepted_by_sqlite(spec: DomainSpec) -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(compile_sql(spec).full)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {t.name for t in spec.tables} <= names


def test_compiled_import_behaves_like_the_original_script(spec: DomainSpec) -> None:
    original, original_state = run(APPENDIX)
    imported, imported_state = run(compile_sql(spec).full)
    assert [o[0] for o in original] == [expected for _, _, expected in SCENARIO]
    assert imported == original
    assert imported_state == original_state


def test_fourth_flight_booking_is_rejected_with_quota_exceeded(spec: DomainSpec) -> None:
    for script in (APPENDIX, compile_sql(spec).full):
        conn = sqlite3.connect(":memory:")
        conn.executescript(script)
        for row in REFERENCE_ROWS:
            conn.execute(row)
        conn.execute(TR, ("u_staff", "Trip"))
        for _ in range(3):
            conn.execute(FLIGHT, (1, 100, "ECONOMY", 10, "NOT_REQUIRED"))
        # Appendix A only recounts on status changes; a status change brings the count to 3.
        conn.execute(FB_SET.format("status = 'APPROVED'"), (1,))
        with pytest.raises(sqlite3.IntegrityError, match=r"^\[QUOTA_EXCEEDED\] Maximum 3 flight"):
            conn.execute(FLIGHT, (1, 100, "ECONOMY", 10, "NOT_REQUIRED"))


# -- other shapes ------------------------------------------------------------------------------


def test_tier_falls_back_to_autoincrement() -> None:
    spec = mini(
        "CREATE TABLE people (id TEXT PRIMARY KEY, name TEXT NOT NULL);\n"
        "CREATE TABLE visits (id INTEGER PRIMARY KEY AUTOINCREMENT, person_id TEXT"
        " REFERENCES people, n REAL DEFAULT (2.5));"
    )
    assert [(t.name, t.tier, t.access) for t in spec.tables] == [
        ("people", "entity", "read-only"),
        ("visits", "transaction", "read-write"),
    ]
    visits = spec.table("visits")
    assert visits.column("person_id").references == "people.id"
    assert visits.column("n").type == "REAL" and visits.column("n").default == 2.5


def test_select_raise_where_else_null_and_update_of_columns() -> None:
    spec = mini(
        "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, a INTEGER, b INTEGER);\n"
        "CREATE TRIGGER guard BEFORE UPDATE OF a, b ON t FOR EACH ROW BEGIN\n"
        "  SELECT RAISE(ABORT, '[TOO_BIG] a is too big') WHERE NEW.a > 10;\n"
        "  SELECT CASE WHEN NEW.b < 0 THEN RAISE(FAIL, '[NEGATIVE] b is negative') ELSE NULL END;\n"
        "END;"
    )
    first, second = spec.rules
    assert (first.id, first.code, first.condition) == ("GUARD_1", "TOO_BIG", "NEW.a > 10")
    assert (second.id, second.code, second.condition) == ("GUARD_2", "NEGATIVE", "NEW.b < 0")
    assert first.when == "NEW.a IS NOT OLD.a OR NEW.b IS NOT OLD.b"


@pytest.mark.parametrize("name", builtin_domains())
def test_round_trips_a_compiled_builtin_domain(name: str) -> None:
    original = load_domain(name)
    spec = import_sql(compile_sql(original).full, name=f"{name}_again")
    for table in original.tables:
        imported = spec.table(table.name)
        for col in table.columns:
            got = imported.column(col.name)
            assert (got.type, got.enum, got.references, got.default, got.primary_key) == (
                col.type,
                col.enum,
                col.references,
                col.default,
                col.primary_key,
            )
    assert sorted(r.code for r in spec.rules) == sorted(r.code for r in original.rules)
    assert len(spec.effects) == len(original.effects)


# -- errors ------------------------------------------------------------------------------------


def error_of(sql: str, name: str = "mini") -> str:
    with pytest.raises(SpecError) as info:
        import_sql(sql, name=name, source="bad.sql")
    return str(info.value)


def test_sqlite_syntax_error_names_the_statement_and_line() -> None:
    message = error_of("CREATE TABLE ok (id TEXT PRIMARY KEY);\n\nCREATE TABLE broken (id TEXT,,);")
    assert (
        "bad.sql:3" in message and "CREATE TABLE broken" in message and "SQLite rejected" in message
    )


def test_missing_semicolon_after_trigger_end_is_reported() -> None:
    message = error_of(
        "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, a INTEGER);\n"
        "CREATE TRIGGER one BEFORE INSERT ON t BEGIN SELECT CASE WHEN NEW.a < 0 THEN"
        " RAISE(ABORT, '[NEG] negative') END; END\n"
        "CREATE TRIGGER two BEFORE INSERT ON t BEGIN SELECT 1; END;"
    )
    assert "CREATE TRIGGER one" in message and "SQLite rejected" in message


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("", "no statements"),
        ("INSERT INTO t VALUES (1);", "only CREATE TABLE"),
        ("CREATE TABLE t (a TEXT);\nCREATE VIEW v AS SELECT a FROM t;", "only CREATE TABLE"),
        (
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);\n"
            "CREATE TRIGGER side BEFORE INSERT ON t BEGIN UPDATE t SET a = 'x'; END;",
            "trigger side: body statement 1 is not SELECT CASE",
        ),
        (
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);\n"
            "CREATE TRIGGER nocode BEFORE INSERT ON t BEGIN"
            " SELECT CASE WHEN NEW.a IS NULL THEN RAISE(ABORT, 'a is required') END; END;",
            "trigger nocode: branch 1: expected THEN RAISE",
        ),
        (
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT);\n"
            "CREATE TRIGGER del BEFORE DELETE ON t BEGIN SELECT 1; END;",
            "trigger del: only BEFORE/AFTER INSERT/UPDATE",
        ),
        (
            "CREATE TABLE t (id TEXT PRIMARY KEY, at TEXT DEFAULT CURRENT_TIMESTAMP);",
            "t.at: default",
        ),
        ("CREATE TABLE t (id TEXT PRIMARY KEY, b BLOB);", "t.b: column type 'BLOB'"),
        ("CREATE TABLE t (a TEXT, b TEXT, PRIMARY KEY (a, b));", "composite primary keys"),
    ],
)
def test_unsupported_input_is_a_clear_spec_error(sql: str, expected: str) -> None:
    assert expected in error_of(sql)


def test_invalid_names_fail_spec_validation() -> None:
    assert "name" in error_of("CREATE TABLE t (id TEXT PRIMARY KEY);", name="Bad-Name")
