"""The checker on 1,000 clean exports (0 changes) and 200 perturbed ones (right class, right
outcome, and a repair that gives back the clean trajectory)."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.simulate.conftest import FORMATS, Exports

from veritask._cli.main import cli
from veritask.simulate import (
    ERROR_CLASSES,
    Call,
    ToolCatalog,
    Turn,
    check_record,
    read_row,
    write_row,
)

Perturb = Callable[[list[Turn], ToolCatalog, random.Random], bool]


def canonical(turns: list[Turn]) -> list[Any]:
    """What a trajectory says, independent of its serialization."""

    def args(call: Call) -> Any:
        raw = call.raw
        return json.loads(raw) if isinstance(raw, str) and raw else (raw or {})

    return [
        (t.role, t.text, [(c.name, args(c), c.call_id) for c in t.calls], t.call_id) for t in turns
    ]


def test_clean_exports_get_no_change(exports: Exports) -> None:
    total = 0
    for fmt in FORMATS:
        for domain, record in exports.rows[fmt]:
            source = json.dumps(record, ensure_ascii=False)
            outcome = check_record(source, record, exports.catalogs[domain])
            assert outcome.status == "clean", (fmt, [i.to_json() for i in outcome.issues])
            assert outcome.output == source
            total += 1
    assert total >= 1000


# -- perturbations, one per (class, outcome) ----------------------------------------------------


def _calls(turns: list[Turn]) -> list[Call]:
    return [c for t in turns for c in t.calls]


def _pick(rng: random.Random, items: list[Any]) -> Any:
    return items[rng.randrange(len(items))] if items else None


def _set_args(call: Call, args: dict[str, Any]) -> None:
    call.raw = json.dumps(args) if isinstance(call.raw, str) else dict(args)
    call.args = None


def _args(call: Call) -> dict[str, Any]:
    return json.loads(call.raw) if isinstance(call.raw, str) else dict(call.raw or {})


def json_broken(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    call = _pick(rng, [c for c in _calls(turns) if _args(c)])
    if call is None:
        return False
    text = json.dumps(_args(call))
    broken = text[:-1] if rng.random() < 0.5 else text[:-1] + ",}"
    call.raw = broken if isinstance(call.raw, str) else {"__raw__": broken}
    return True


def json_garbage(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    call = _pick(rng, _calls(turns))
    if call is None:
        return False
    call.raw = "see above <<<" if isinstance(call.raw, str) else {"__raw__": "see above <<<"}
    return True


def tool_typo(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    call = _pick(rng, _calls(turns))
    if call is None:
        return False
    call.name = call.name.upper() if rng.random() < 0.5 else call.name.replace("_", "-")
    return True


def tool_invented(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    call = _pick(rng, _calls(turns))
    if call is None:
        return False
    call.name = "teleport_customer"
    return True


def key_renamed(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    call = _pick(rng, [c for c in _calls(turns) if _args(c)])
    if call is None:
        return False
    args = _args(call)
    key = _pick(rng, sorted(args))
    parts = key.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    new = camel if camel != key else key.upper()
    _set_args(call, {(new if k == key else k): v for k, v in args.items()})
    return True


def key_invented(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    call = _pick(rng, _calls(turns))
    if call is None:
        return False
    _set_args(call, {**_args(call), "zzq_flux_capacitor": 1})
    return True


def _typed(turns: list[Turn], catalog: ToolCatalog, rng: random.Random, kind: str) -> Any:
    options = []
    for call in _calls(turns):
        tool = catalog.get(call.name)
        for key, value in _args(call).items():
            param = tool.param(key) if tool else None
            if param is not None and param.type == kind and param.enum is None:
                options.append((call, key, value))
    return _pick(rng, options)


def type_coercible(turns: list[Turn], catalog: ToolCatalog, rng: random.Random) -> bool:
    found = _typed(turns, catalog, rng, "integer")
    if found is None:
        return False
    call, key, value = found
    _set_args(call, {**_args(call), key: str(value)})
    return True


def type_wrong(turns: list[Turn], catalog: ToolCatalog, rng: random.Random) -> bool:
    found = _typed(turns, catalog, rng, "string")
    if found is None:
        return False
    call, key, value = found
    _set_args(call, {**_args(call), key: {"value": value}})
    return True


def _enum(turns: list[Turn], catalog: ToolCatalog, rng: random.Random) -> Any:
    options = []
    for call in _calls(turns):
        tool = catalog.get(call.name)
        for key, value in _args(call).items():
            param = tool.param(key) if tool else None
            if param and param.enum and isinstance(value, str) and value.lower() != value:
                options.append((call, key, value))
    return _pick(rng, options)


def enum_case(turns: list[Turn], catalog: ToolCatalog, rng: random.Random) -> bool:
    found = _enum(turns, catalog, rng)
    if found is None:
        return False
    call, key, value = found
    _set_args(call, {**_args(call), key: value.lower()})
    return True


def enum_wrong(turns: list[Turn], catalog: ToolCatalog, rng: random.Random) -> bool:
    found = _enum(turns, catalog, rng)
    if found is None:
        return False
    call, key, _value = found
    _set_args(call, {**_args(call), key: "NOT_A_STATUS"})
    return True


def required_dropped(turns: list[Turn], catalog: ToolCatalog, rng: random.Random) -> bool:
    options = []
    for call in _calls(turns):
        tool = catalog.get(call.name)
        required = [p.name for p in tool.params if p.required] if tool else []
        options += [(call, key) for key in required if key in _args(call)]
    found = _pick(rng, options)
    if found is None:
        return False
    call, key = found
    _set_args(call, {k: v for k, v in _args(call).items() if k != key})
    return True


def system_moved(turns: list[Turn], _c: ToolCatalog, _rng: random.Random) -> bool:
    if len(turns) < 3 or turns[0].role != "system":
        return False
    turns.insert(2, turns.pop(0))
    return True


def observation_swapped(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    spots = [
        i
        for i, t in enumerate(turns[:-1])
        if len(t.calls) == 1
        and turns[i + 1].role == "tool"
        and (i + 2 >= len(turns) or turns[i + 2].role != "tool")
    ]
    i = _pick(rng, spots)
    if i is None:
        return False
    turns[i], turns[i + 1] = turns[i + 1], turns[i]
    return True


def opener_dropped(turns: list[Turn], _c: ToolCatalog, _rng: random.Random) -> bool:
    first = next((i for i, t in enumerate(turns) if t.role == "user"), None)
    if first is None or first + 1 >= len(turns) or turns[first + 1].role != "assistant":
        return False
    del turns[first]
    return True


def observation_dropped(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    # not between two equal turns: without the observation they read as a repeated turn
    spots = [
        i
        for i, t in enumerate(turns)
        if t.role == "tool" and not (0 < i < len(turns) - 1 and turns[i - 1] == turns[i + 1])
    ]
    i = _pick(rng, spots)
    if i is None:
        return False
    del turns[i]
    return True


def _text_turns(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.role == "user" and t.text]


def think_misplaced(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    turn = _pick(rng, _text_turns(turns))
    if turn is None:
        return False
    turn.text = f"<think>They want a change.</think> {turn.text}"
    return True


def think_unclosed(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    turn = _pick(rng, _text_turns(turns))
    if turn is None:
        return False
    turn.text = f"<think>They want {turn.text}"
    return True


def turn_repeated(turns: list[Turn], _c: ToolCatalog, rng: random.Random) -> bool:
    spots = [i for i, t in enumerate(turns) if t.role == "user"]
    i = _pick(rng, spots)
    if i is None:
        return False
    turns.insert(i + 1, turns[i].copy())
    return True


CASES: list[tuple[str, str, Perturb]] = [
    ("json_syntax", "repaired", json_broken),
    ("json_syntax", "rejected", json_garbage),
    ("unknown_tool", "repaired", tool_typo),
    ("unknown_tool", "rejected", tool_invented),
    ("argument_key", "repaired", key_renamed),
    ("argument_key", "rejected", key_invented),
    ("argument_type", "repaired", type_coercible),
    ("argument_type", "rejected", type_wrong),
    ("argument_value", "repaired", enum_case),
    ("argument_value", "rejected", enum_wrong),
    ("required_field", "rejected", required_dropped),
    ("role_order", "repaired", system_moved),
    ("role_order", "repaired", observation_swapped),
    ("role_order", "rejected", opener_dropped),
    ("missing_observation", "rejected", observation_dropped),
    ("think_placement", "repaired", think_misplaced),
    ("think_placement", "rejected", think_unclosed),
    ("repeated_turn", "repaired", turn_repeated),
]


def broken_fixture(exports: Exports, n: int = 200) -> list[tuple[str, str, str, str, Any, Any]]:
    """``n`` perturbed rows: (class, outcome, format, domain, broken record, clean record)."""
    rng = random.Random(16)
    out = []
    attempt = 0
    while len(out) < n:
        cls, outcome, perturb = CASES[len(out) % len(CASES)]
        fmt = FORMATS[(len(out) + attempt) % len(FORMATS)]
        domain, clean = exports.rows[fmt][rng.randrange(len(exports.rows[fmt]))]
        row = read_row(clean)
        turns = [t.copy() for t in row.turns]
        attempt += 1
        if perturb(turns, exports.catalogs[domain], rng):
            broken = json.loads(json.dumps(write_row(row, turns)))
            out.append((cls, outcome, fmt, domain, broken, clean))
    return out


def test_broken_trajectories_are_repaired_or_rejected_by_class(exports: Exports) -> None:
    fixture = broken_fixture(exports)
    assert len(fixture) == 200
    assert {c for c, *_ in fixture} == set(ERROR_CLASSES)
    tally: Counter[tuple[str, str]] = Counter()
    for cls, outcome, fmt, domain, broken, clean in fixture:
        result = check_record(json.dumps(broken), broken, exports.catalogs[domain])
        where = (cls, outcome, fmt, [i.to_json() for i in result.issues])
        assert result.status == outcome, where
        assert {i.cls for i in result.issues} == {cls}, where
        if outcome == "repaired":
            assert result.output is not None
            repaired = read_row(json.loads(result.output)).turns
            assert canonical(repaired) == canonical(read_row(clean).turns), where
        tally[(cls, outcome)] += 1
    assert min(tally.values()) >= 5


def test_check_command_reports_counts_per_class(exports: Exports, tmp_path: Path) -> None:
    fixture = broken_fixture(exports, 36)
    travel = [(c, o, b) for c, o, _f, d, b, _ in fixture if d == "travel"]
    clean = [r for d, r in exports.rows["openai"][:30] if d == "travel"]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*clean, *(b for *_, b in travel)]))
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "check",
            str(path),
            "--tools",
            "travel",
            "--json",
            "--out",
            str(tmp_path / "o.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    expected = Counter(c for c, _o, _b in travel)
    for cls in ERROR_CLASSES:
        assert report["classes"][cls]["found"] >= expected[cls]
    rejected = sum(1 for _c, o, _b in travel if o == "rejected")
    assert report["rejected"] == rejected
    assert report["clean"] == len(clean)
    kept = (tmp_path / "o.jsonl").read_text().splitlines()
    assert len(kept) == report["clean"] + report["repaired"]
    assert len((tmp_path / "o.jsonl.rejected.jsonl").read_text().splitlines()) == rejected
