"""Procedural tools: declarative steps through the engine (docs/design/0043-procedural-tools.md)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from veritask.env import CompiledDomain, Environment
from veritask.policy import spec_from_data
from veritask.policy._procedure import ProcedureError

SEEDBANK = """
name: seedbank
wiki: {title: Seed bank, persona: a seed bank clerk}
tables:
  - name: growers
    tier: entity
    access: read-write
    columns:
      - {name: id, type: TEXT, primary_key: true}
      - {name: name, type: TEXT, not_null: true}
      - {name: status, type: TEXT, enum: [active, suspended]}
      - {name: credit, type: REAL, not_null: true}
  - name: lots
    tier: reference
    access: read-only
    columns:
      - {name: id, type: TEXT, primary_key: true}
      - {name: species, type: TEXT}
      - {name: grams, type: INTEGER, not_null: true}
      - {name: price, type: REAL, not_null: true}
  - name: withdrawals
    tier: transaction
    access: read-write
    insert_only: true
    columns:
      - {name: id, type: INTEGER, primary_key: true, autoincrement: true}
      - {name: grower_id, type: TEXT, references: growers.id}
      - {name: lot_id, type: TEXT, references: lots.id}
      - {name: grams, type: INTEGER}
      - {name: cost, type: REAL}
rules:
  - id: MAX_GRAMS
    table: withdrawals
    "on": [insert]
    condition: NEW.grams > 50
    code: TOO_MUCH
    message: At most 50 g per withdrawal.
    hint: Withdraw less.
effects:
  - id: TAKE_SEED
    table: withdrawals
    "on": insert
    description: The lot loses the grams withdrawn.
    sql: UPDATE lots SET grams = grams - NEW.grams WHERE id = NEW.lot_id
seed:
  growers:
    - {id: g1, name: Ada, status: active, credit: 10.0}
    - {id: g2, name: Bo, status: suspended, credit: 50.0}
  lots:
    - {id: l1, species: basil, grams: 100, price: 0.125}
    - {id: l2, species: dill, grams: 20, price: 0.1}
procedures:
  - name: withdraw_seeds
    description: Withdraw the same weight from several lots and charge the grower.
    access: write
    params:
      - {name: grower_id, type: string}
      - {name: lot_ids, type: array, items: string}
      - {name: grams, type: integer}
    steps:
      - {op: read, table: growers, where: {id: grower_id}, into: grower, missing: Grower not found}
      - op: require
        condition: grower.status = 'active'
        message: Grower is suspended
        code: SUSPENDED
      - {op: compute, into: total, expr: "0"}
      - op: foreach
        over: lot_ids
        item: lot_id
        steps:
          - {op: read, table: lots, where: {id: lot_id}, into: lot, missing: Lot not found}
          - {op: require, condition: lot.grams >= grams, message: Not enough seed in lot}
          - {op: compute, into: cost, expr: "py_round(lot.price * grams, 2)"}
          - op: insert
            table: withdrawals
            values: {grower_id: grower_id, lot_id: lot_id, grams: grams, cost: cost}
          - {op: compute, into: total, expr: total + cost}
      - {op: require, condition: grower.credit >= total, message: Insufficient credit}
      - {op: update, table: growers, where: {id: grower_id}, values: {credit: grower.credit - total}}
      - op: return
        value:
          grower: grower.name
          spent: total
          lots: {each: lot_ids, as: x, value: "x"}
  - name: grower_report
    description: A grower and their withdrawals.
    access: read
    params:
      - {name: grower_id, type: string}
    steps:
      - {op: read, table: growers, where: {id: grower_id}, into: grower, missing: Grower not found}
      - {op: read, table: withdrawals, where: {grower_id: grower_id}, into: ws, many: true,
         order_by: [lot_id]}
      - op: return
        value:
          name: grower.name
          count: vt_len(ws)
          withdrawals: {each: ws, as: w, value: {lot: w.lot_id, cost: w.cost}}
  - name: rounding
    description: Python's and SQLite's rounding of a number to two places.
    access: read
    params:
      - {name: x, type: number}
    steps:
      - {op: return, value: {py: "py_round(x, 2)", sql: "round(x, 2)", raw: x}}
"""


def _data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(SEEDBANK)
    data.update(changes)
    return data


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(spec_from_data(_data()))


def test_a_write_procedure_runs_its_steps_and_returns_its_template(domain: CompiledDomain) -> None:
    env = Environment(domain)
    root = env.snapshot()
    result = env.call("withdraw_seeds", {"grower_id": "g1", "lot_ids": ["l1", "l2"], "grams": 10})
    assert result.ok, result.error
    assert result.state_changed
    assert result.result == {"grower": "Ada", "spent": 2.25, "lots": ["l1", "l2"]}
    assert list(result.result) == ["grower", "spent", "lots"]  # template key order is kept
    # the effect ran for each insert; the update went through the same tracked write path
    assert {r["id"]: r["grams"] for r in env.rows("lots")} == {"l1": 90, "l2": 10}
    assert [r["credit"] for r in env.rows("growers")] == [7.75, 50.0]
    changes = env.diff(root).tables  # rows only the seed has are "added" from here
    assert len(changes["withdrawals"].removed) == 2
    assert len(changes["lots"].added) == len(changes["lots"].removed) == 2
    assert len(changes["growers"].added) == len(changes["growers"].removed) == 1


def test_a_read_procedure_maps_rows_into_a_list(domain: CompiledDomain) -> None:
    env = Environment(domain)
    env.call("withdraw_seeds", {"grower_id": "g1", "lot_ids": ["l2", "l1"], "grams": 4})
    result = env.call("grower_report", {"grower_id": "g1"})
    assert result.ok and not result.state_changed
    assert result.result == {
        "name": "Ada",
        "count": 2,
        "withdrawals": [{"lot": "l1", "cost": 0.5}, {"lot": "l2", "cost": 0.4}],
    }


@pytest.mark.parametrize(
    ("args", "code", "message", "rule"),
    [
        ({"grower_id": "zz", "lot_ids": ["l1"], "grams": 1}, "NOT_FOUND", "Grower not found", None),
        (
            {"grower_id": "g2", "lot_ids": ["l1"], "grams": 1},
            "SUSPENDED",
            "Grower is suspended",
            None,
        ),
        # the first lot was written before the second is found missing
        (
            {"grower_id": "g1", "lot_ids": ["l1", "l9"], "grams": 1},
            "NOT_FOUND",
            "Lot not found",
            None,
        ),
        (
            {"grower_id": "g1", "lot_ids": ["l1", "l2"], "grams": 30},
            "REJECTED",
            "Not enough seed in lot",
            None,
        ),
        # both withdrawals were inserted (and their effects ran) before the credit check fails
        (
            {"grower_id": "g1", "lot_ids": ["l1", "l1"], "grams": 45},
            "REJECTED",
            "Insufficient credit",
            None,
        ),
        # a rule trigger refuses the insert inside the loop
        (
            {"grower_id": "g1", "lot_ids": ["l1"], "grams": 60},
            "TOO_MUCH",
            "At most 50 g per withdrawal.",
            "MAX_GRAMS",
        ),
    ],
)
def test_a_refused_procedure_leaves_the_state_byte_identical(
    domain: CompiledDomain, args: dict[str, Any], code: str, message: str, rule: str | None
) -> None:
    env = Environment(domain)
    before = env.image()
    result = env.call("withdraw_seeds", args)
    assert not result.ok and result.error is not None
    assert (result.error.code, result.error.message, result.error.violated_rule) == (
        code,
        message,
        rule,
    )
    assert not result.state_changed
    assert env.image() == before


def test_py_round_is_pythons_round_not_sqlites(domain: CompiledDomain) -> None:
    env = Environment(domain)
    # 0.125 is exact in binary: Python rounds the tie to even, SQLite away from zero
    assert env.call("rounding", {"x": 0.125}).result == {"py": 0.12, "sql": 0.13, "raw": 0.125}
    # 2.675 is stored just below the tie: Python rounds the binary value down, SQLite up
    assert env.call("rounding", {"x": 2.675}).result == {"py": 2.67, "sql": 2.68, "raw": 2.675}
    # the float artefact of a subtraction is kept as Python would compute it
    assert env.call("rounding", {"x": 50.0 - 49.95}).result["raw"] == 50.0 - 49.95


def test_same_calls_give_byte_identical_states(domain: CompiledDomain) -> None:
    images = []
    for _ in range(2):
        env = Environment(domain)
        env.call("withdraw_seeds", {"grower_id": "g1", "lot_ids": ["l1", "l2"], "grams": 3})
        images.append(env.image())
    assert images[0] == images[1]


def test_arguments_are_checked_against_the_declared_schema(domain: CompiledDomain) -> None:
    env = Environment(domain)
    bad = env.call("withdraw_seeds", {"grower_id": "g1", "lot_ids": [1, 2], "grams": 3})
    assert bad.error is not None and bad.error.code == "INVALID_TYPE"
    missing = env.call("withdraw_seeds", {"grower_id": "g1", "grams": 3})
    assert missing.error is not None and missing.error.code == "MISSING_ARGUMENT"
    schema = env.tools["withdraw_seeds"].openai_schema()["function"]["parameters"]
    assert schema["properties"]["lot_ids"] == {"type": "array", "items": {"type": "string"}}
    assert schema["required"] == ["grower_id", "lot_ids", "grams"]
    assert env.tools["withdraw_seeds"].writes and not env.tools["grower_report"].writes
    extra = env.call("withdraw_seeds", {"grower_id": "g1", "lot_ids": [], "grams": 1, "pin": 1})
    assert extra.error is not None and extra.error.code == "UNKNOWN_ARGUMENT"


def test_atomic_tools_can_be_left_out() -> None:
    env = Environment(CompiledDomain.from_spec(spec_from_data(_data(atomic_tools=False))))
    assert list(env.tools) == ["withdraw_seeds", "grower_report", "rounding"]
    assert env.call("query_growers", {}).error is not None


def _with_step(step: dict[str, Any], access: str = "read") -> dict[str, Any]:
    proc = {
        "name": "probe",
        "description": "d",
        "access": access,
        "params": [{"name": "grower_id", "type": "string"}],
        "steps": [step],
    }
    return _data(procedures=[proc])


@pytest.mark.parametrize(
    ("step", "access", "fragment"),
    [
        ({"op": "return", "value": "(SELECT credit FROM growers)"}, "read", "not allowed"),
        (
            {"op": "return", "value": "load_extension('x')"},
            "read",
            "'load_extension' is not allowed",
        ),
        ({"op": "return", "value": "nobody + 1"}, "read", "unknown variable 'nobody'"),
        ({"op": "read", "table": "ghosts", "into": "g"}, "read", "unknown table 'ghosts'"),
        (
            {"op": "read", "table": "growers", "where": {"pin": "1"}, "into": "g"},
            "read",
            "no column 'pin'",
        ),
        (
            {
                "op": "update",
                "table": "growers",
                "where": {"id": "grower_id"},
                "values": {"credit": "0"},
            },
            "read",
            "access is read",
        ),
        ({"op": "return", "value": "1; DROP TABLE growers"}, "read", "Block is not allowed"),
    ],
)
def test_a_procedure_outside_the_form_does_not_compile(
    step: dict[str, Any], access: str, fragment: str
) -> None:
    with pytest.raises(ProcedureError, match=fragment):
        CompiledDomain.from_spec(spec_from_data(_with_step(step, access)))


def test_a_read_only_table_is_still_guarded_by_the_authorizer() -> None:
    step = {"op": "update", "table": "lots", "where": {"id": "grower_id"}, "values": {"grams": "0"}}
    env = Environment(CompiledDomain.from_spec(spec_from_data(_with_step(step, "write"))))
    before = env.image()
    result = env.call("probe", {"grower_id": "l1"})
    assert result.error is not None and result.error.code == "FORBIDDEN"
    assert env.image() == before


def test_template_forms_decode_compact_and_key(domain: CompiledDomain) -> None:
    step = {
        "op": "return",
        "value": {
            "compact": {"$compact": {"id": "grower_id", "none": "NULL", "n": "2.5500000000000007"}},
            "decoded": {"$json": "json_array(1, 'a')"},
            "keyed": {"each": "lots", "as": "l", "key": "l.id", "value": "l.grams"},
        },
    }
    read = {"op": "read", "table": "lots", "into": "lots", "many": True}
    data = _with_step(read)
    data["procedures"][0]["steps"].append(step)
    env = Environment(CompiledDomain.from_spec(spec_from_data(data)))
    assert env.call("probe", {"grower_id": "g1"}).result == {
        "compact": {"id": "g1", "n": 2.5500000000000007},  # the double, all 17 digits
        "decoded": [1, "a"],
        "keyed": {"l1": 100, "l2": 20},
    }


def test_a_require_message_can_be_an_expression() -> None:
    step = {"op": "require", "condition": "0", "message_expr": "'No grower ' || grower_id"}
    env = Environment(CompiledDomain.from_spec(spec_from_data(_with_step(step))))
    result = env.call("probe", {"grower_id": "g7"})
    assert result.error is not None and result.error.message == "No grower g7"
