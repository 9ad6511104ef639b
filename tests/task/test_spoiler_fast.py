"""The spoiler check's shortcuts find exactly what the plain computation finds.

For ASCII texts the check looks up words from the ``_`` characters and padded byte searches,
looks for row ids only when a literal hint is present, matches decided values in the lowercased
text and keeps each spec's decided columns; every other text takes the plain path. The plain
computation is written out here as it was, and both are compared on random texts (ASCII and
not) and on the packages of every built-in domain and every unseen fixture spec, as generated
and with spoilers written into their descriptions.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritask.domains import load_domain
from veritask.env import CompiledDomain
from veritask.policy import DomainSpec, ToolSpec, build_tools
from veritask.synth import generate
from veritask.task import DatasetDir, TaskPackage, load_dataset
from veritask.task._package import WitnessCall
from veritask.task._spoiler import (
    _INT_ID,
    IdIndex,
    decided_columns,
    decided_spoilers,
    find_spoilers,
    spec_identifiers,
    text_keys,
)

UNSEEN = Path(__file__).parent.parent / "fixtures" / "unseen_domains"
DOMAINS = ["retail", "travel", "clinic", "gym", "registrar", "mock"] + [
    str(p) for p in sorted(UNSEEN.glob("*.yaml"))
]
_WORD = re.compile(r"[A-Za-z0-9_]+")


def _plain_find(text: str, spec: DomainSpec, ids: Iterable[str], known: Iterable[str]) -> list[str]:
    found: list[str] = []
    words = set(_WORD.findall(text))
    for name in sorted(spec_identifiers(spec) & words):
        found.append(f"schema identifier {name!r}")
    for key in sorted({k for k in ids if k} - set(known)):
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text):
            found.append(f"internal id {key!r}")
    found += [f"row id {m.group(0)!r}" for m in _INT_ID.finditer(text)]
    return found


def _plain_says(text: str, column: str, value: Any, enum: list[Any] | None) -> bool:
    shown = re.escape(str(value))
    words = r"\W+".join(re.escape(w) for w in column.split("_"))
    near = rf"(?<![A-Za-z0-9_]){words}\W+(?:[A-Za-z]+\W+){{0,3}}?{shown}(?![A-Za-z0-9_])"
    if re.search(near, text, re.I):
        return True
    free = isinstance(value, str) and len(value) >= 4 and enum is None
    return free and re.search(rf"(?<![A-Za-z0-9_]){shown}(?![A-Za-z0-9_])", text) is not None


def _plain_decided(text: str, spec: DomainSpec, witness: Iterable[WitnessCall]) -> list[str]:
    found: list[str] = []
    tools = build_tools(spec)
    for call in witness:
        if not call.ok or call.tool not in tools or not tools[call.tool].writes:
            continue
        table = spec.table(tools[call.tool].table)
        for col in sorted(decided_columns(spec, call.tool, tools)):
            value = call.args.get(col)
            if value is None or col not in table.column_names:
                continue
            if _plain_says(text, col, value, table.column(col).enum):
                found.append(f"agent-decided value {col}={value!r}")
    return sorted(set(found))


_PIECES = [
    "order_id",
    "query_orders",
    "c_alice",
    "HOME",
    "a-b",
    "x.y",
    "#12",
    "# 7",
    "ID: 7",
    "ids=3",
    "Row  9",
    "\u0130D 5",
    "\u0131d 6",
    "\u017f",
    "\u212a",
    "\u00e9",
    "_",
    "__",
    "status",
    "ACTIVE",
    "reason code",
    "DAMAGED_IN_TRANSIT",
    "12.5",
    "note",
    "Leave it",
    "amount",
    "Price difference is about",
    "credit_amount:",
    "xamount",
    "refund-AMOUNT of",
    "approval status",
    "Approved",
    "PENDING",
    "3",
]
_TEXTS = st.lists(
    st.tuples(
        st.sampled_from(_PIECES) | st.text(alphabet="ab_1-. #\n:=\u00e9IiRr", max_size=6),
        st.sampled_from([" ", " ", "", "\n", "(", "_", "\u00e9"]),
    ).map("".join),
    max_size=14,
).map("".join)


@settings(max_examples=400, deadline=None)
@example(text="ID: 7", ids=[], known=[])
@example(text="a row 3 (#4)", ids=[], known=[])
@example(text="x_y HOME order_id_ \u00e9", ids=["HOME", "x_y"], known=[])
@example(text="see Row  9", ids=[], known=[])
@example(text="a note on 7", ids=["note", "7"], known=[])
@example(text="x#12 ab-ab-a 1.b a-", ids=["#12", "ab-a", "1.b", "a-", "a-b"], known=[])
@given(
    text=_TEXTS,
    ids=st.lists(
        st.sampled_from(
            ["c_alice", "HOME", "a-b", "x.y", "7", "ACTIVE", "note", "", "#12", "ab-a", "1.b", "a-"]
        ),
        max_size=5,
    ),
    known=st.lists(st.sampled_from(["c_alice", "HOME", "a-b", "nobody"]), max_size=3),
)
def test_find_spoilers_matches_the_plain_computation(
    text: str, ids: list[str], known: list[str]
) -> None:
    spec = load_domain("retail")
    expected = _plain_find(text, spec, ids, known)
    names = spec_identifiers(spec)
    assert find_spoilers(text, spec, IdIndex.of(ids), known, names) == expected
    assert find_spoilers(text, spec, set(ids), known) == expected


_DECIDED_VALUES = st.sampled_from(
    ["DAMAGED_IN_TRANSIT", "Leave it", "note", "approved", "PENDING", "x", "\u00e9t\u00e9", 12.5]
)


@settings(max_examples=600, deadline=None)
@example(domain="retail", text="the Amount is 3", values=[3, 3, 3])
@example(domain="retail", text="xamount 3", values=[3, 3, 3])
@example(domain="travel", text="approval status: PENDING", values=["PENDING"] * 3)
@example(domain="retail", text="amount 4", values=[1, 2, 4])
@given(
    domain=st.sampled_from(["retail", "travel"]),
    text=_TEXTS,
    values=st.lists(_DECIDED_VALUES | st.integers(0, 4), max_size=4),
)
def test_decided_spoilers_match_the_plain_computation(
    domain: str, text: str, values: list[Any]
) -> None:
    spec = load_domain(domain)
    tools = build_tools(spec)
    deciding = sorted(t for t in tools if decided_columns(spec, t, tools))
    # Each tool the agent decides a column of, then the same tools rejected and a query.
    calls = [
        (tool, {col: value for col in decided_columns(spec, tool, tools)})
        for tool, value in zip(deciding + deciding[:1], values, strict=False)
    ]
    witness = [WitnessCall(tool=tool, args=args, ok=True) for tool, args in calls]
    rejected = {col: values[-1] for _, args in calls for col in args}
    witness += [WitnessCall(tool=tool, args=rejected, ok=False) for tool, _ in calls]
    witness.append(WitnessCall(tool=sorted(tools)[0], args={"amount": 3}, ok=True))
    expected = _plain_decided(text, spec, witness)
    assert decided_spoilers(text, spec, witness) == expected
    assert decided_spoilers(text, spec, witness, tools) == expected


def _spoiled(rng: random.Random, pkg: TaskPackage, pool: list[str]) -> Iterator[str]:
    """The description, and copies with pieces of ``pool`` written in at random places."""
    text = pkg.task_description
    yield text
    for _ in range(6):
        edited = text
        for _ in range(rng.randint(1, 3)):
            piece = rng.choice(pool)
            piece = piece.upper() if rng.random() < 0.3 else piece
            at = rng.randint(0, len(edited))
            glue = rng.choice([" ", " ", " ", "", "\n", "_", "\u00e9"])
            edited = edited[:at] + glue + piece + edited[at:]
        yield edited


def _pool(
    pkg: TaskPackage, spec: DomainSpec, ids: set[str], tools: dict[str, ToolSpec]
) -> list[str]:
    pool = sorted(spec_identifiers(spec)) + sorted(ids) + list(pkg.user_profile.known_ids)
    pool += ["#3", "id 4", "ID: 5", "Ids = 6", "row 7", "\u0130D 8"]
    for call in pkg.witness:
        if call.ok and call.tool in tools and tools[call.tool].writes:
            for col in sorted(decided_columns(spec, call.tool, tools)):
                value = call.args.get(col)
                if value is not None:
                    pool += [f"{col.replace('_', ' ')} {value}", f"{col}: {value}", str(value)]
    return pool


@pytest.fixture(scope="module", params=DOMAINS, ids=lambda d: Path(d).stem)
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spoilers") / Path(str(request.param)).stem
    generate(str(request.param), 6, 3, root)
    return root


def test_every_domain_s_packages_get_the_plain_findings(dataset: Path) -> None:
    ds = DatasetDir(dataset)
    packages = load_dataset(ds)
    spec = ds.domain_spec(packages[0].domain)
    tools = CompiledDomain.from_spec(spec).tools
    names = spec_identifiers(spec)
    rng = random.Random(dataset.name)
    spoiled = 0
    for pkg in packages:
        ids = text_keys(spec, ds.read_state(pkg.origin))
        index, known = IdIndex.of(ids), pkg.user_profile.known_ids
        for text in _spoiled(rng, pkg, _pool(pkg, spec, ids, tools)):
            found = find_spoilers(text, spec, index, known, names)
            found += decided_spoilers(text, spec, pkg.witness, tools)
            expected = _plain_find(text, spec, ids, known)
            expected += _plain_decided(text, spec, pkg.witness)
            assert found == expected, (pkg.id, text)
            spoiled += bool(found)
    assert spoiled > 0
