"""Where the synthesizer's made-up values come from, and what keeps them inside the schema.

Every value the Set Designer or the Sampler invents follows these rules (design note 0004):

- **Schema first.** Numbers are drawn inside the interval the column's ``check`` allows
  (``check_bounds``), and every candidate is evaluated against the column's NOT NULL, enum and
  ``check`` on a scratch row (``RowChecker``) before it is used; a whole cloned row is checked
  the same way, column by column, before it is written.
- **The spec's word wins.** A column's ``values`` pool, else its ``faker`` provider.
- **Meaning next.** A Faker provider chosen from the column's name and description (an
  ``email``, a ``phone``, a ``city``...); people's names for the name column of a table of
  people (the actor table, or a table whose name or name column says it holds persons).
- **Free text from the domain's own sentences.** Purposes, reasons and notes recombine the
  clauses of the column's existing values ("Board meeting" + "in Chicago"), never Faker
  catch-phrases.
- **Time runs forward.** Two time-like columns of one table that a rule compares keep the order
  the seed rows show (``booking_step <= departure_step``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from veritask.env import RowChecker
from veritask.policy import Column, DomainSpec, Table, check_bounds

Number = int | float

FREE_TEXT = (
    "purpose", "reason", "description", "notes", "note", "comment", "subject", "issue",
    "summary", "message", "details", "explanation", "resolution",
)  # fmt: skip
"""Words that mark a column as free text written by a person."""

PERSON_WORDS = frozenset(
    {
        "user", "member", "customer", "client", "patient", "student", "staff", "agent",
        "employee", "clinician", "doctor", "physician", "nurse", "instructor", "teacher",
        "professor", "advisor", "traveller", "traveler", "person", "people", "passenger",
        "guest", "applicant", "manager", "owner", "contact", "worker", "tenant", "borrower",
    }
)  # fmt: skip
"""Table-name words that say a table holds people."""

MEANING: tuple[tuple[tuple[str, ...], str], ...] = (
    (("email", "e-mail"), "email"),
    (("phone", "telephone", "mobile"), "phone_number"),
    (("first name", "given name", "first_name", "given_name"), "first_name"),
    (("last name", "surname", "family name", "last_name", "family_name"), "last_name"),
    (("full name", "full_name"), "name"),
    (("street", "address"), "street_address"),
    (("city", "town"), "city"),
    (("country",), "country"),
    (("zip", "postcode", "postal"), "postcode"),
    (("company", "employer", "organization", "organisation"), "company"),
    (("url", "website"), "url"),
    (("username", "login"), "user_name"),
)
"""Words in a column's name or description -> the Faker provider for it (first match wins)."""

REAL_CITIES = (
    "Amsterdam", "Atlanta", "Austin", "Barcelona", "Berlin", "Boston", "Chicago", "Dallas",
    "Denver", "Dublin", "Frankfurt", "Hamburg", "Houston", "Lisbon", "London", "Los Angeles",
    "Madrid", "Miami", "Milan", "Montreal", "Munich", "New York", "Paris", "Philadelphia",
    "Phoenix", "Portland", "Prague", "Rome", "San Diego", "San Francisco", "Seattle",
    "Singapore", "Stockholm", "Sydney", "Tokyo", "Toronto", "Vancouver", "Vienna", "Zurich",
)  # fmt: skip
"""Places a made-up sentence may name (Faker's towns, 'Lake Elizabethborough', read as fake)."""

PLAIN_NOTES = (
    "As discussed on the phone",
    "Details as agreed with the team",
    "Following up on the earlier request",
    "Please see the details on file",
    "Needed for the current project",
    "Requested by the account holder",
)
"""Sentences for a free-text column with no value of its own and no pool (Faker's words read
as word salad: 'Hot end ball')."""

TIME_SUFFIXES = ("_step", "_at", "_date", "_time", "_day")
_PERSON_LABELS = ("name", "full_name", "display_name")
_PREPOSITIONS = re.compile(r"\s(in|for|at|on|to|with|from|after|before)\s", re.I)
_NEW_OLD = re.compile(r"\b(?:NEW|OLD)\.([a-z][a-z0-9_]*)")
_TITLE = re.compile(r"^[A-Z][\w.'-]*(?:\s[A-Z][\w.'-]*)*$")
_HONORIFIC = re.compile(r"^(Dr\.|Prof\.|Mr\.|Ms\.|Mrs\.)\s")
_SUFFIX = re.compile(r"\s(MD|NP|PhD|RN|PA|Jr\.|Sr\.)$")


def _words(*texts: str) -> set[str]:
    out: set[str] = set()
    for text in texts:
        low = text.lower()
        out |= set(re.split(r"[^a-z0-9]+", low)) | {low}
    return out


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def is_time(col: Column) -> bool:
    """True for a numeric column that holds a point in time (``*_step``, ``*_at``, ...)."""
    return col.type in ("INTEGER", "REAL") and (
        col.name == "step" or col.name.endswith(TIME_SUFFIXES)
    )


def person_table(table: Table, actor: str) -> bool:
    """True when the rows of ``table`` are people."""
    if table.name == actor:
        return True
    words = {_singular(w) for w in table.name.split("_")} | set(table.name.split("_"))
    if words & PERSON_WORDS:
        return True
    return any(
        c.name in _PERSON_LABELS and "full name" in c.description.lower() for c in table.columns
    )


def meaning_provider(table: Table, col: Column, actor: str) -> str | None:
    """The Faker provider a column's name and description call for (None: no clear meaning)."""
    if col.faker:
        return col.faker
    if col.type != "TEXT" or col.enum is not None or col.references or col.primary_key:
        return None
    if col.name in _PERSON_LABELS and person_table(table, actor):
        return "name"
    words = _words(col.name, col.description) | set(col.name.split("_"))
    text = f"{col.name.replace('_', ' ')} {col.description.lower()}"
    for keys, provider in MEANING:
        if any(k in words or (" " in k and k in text) for k in keys):
            return provider
    return None


def _time_pairs(spec: DomainSpec, table: Table) -> list[tuple[str, str]]:
    """(earlier, later) time-like columns of ``table`` that some rule on it compares, ordered
    as every seed row with both values orders them (by a subtraction's sides otherwise)."""
    times = {c.name for c in table.columns if is_time(c)}
    pairs: list[tuple[str, str]] = []
    for rule in spec.rules:
        if rule.table != table.name:
            continue
        text = f"{rule.when or ''} {rule.condition}"
        named = [c for c in dict.fromkeys(_NEW_OLD.findall(text)) if c in times]
        for i, a in enumerate(named):
            for b in named[i + 1 :]:
                pair = _order(spec, table.name, a, b, text)
                if pair is not None and pair not in pairs:
                    pairs.append(pair)
    return pairs


def _order(spec: DomainSpec, table: str, a: str, b: str, text: str) -> tuple[str, str] | None:
    pairs = [(r.get(a), r.get(b)) for r in spec.seed.get(table, [])]
    seen = [(x, y) for x, y in pairs if isinstance(x, int | float) and isinstance(y, int | float)]
    if seen and all(x <= y for x, y in seen):
        return a, b
    if seen and all(y <= x for x, y in seen):
        return b, a
    if re.search(rf"\.{b}\s*-\s*(?:NEW|OLD)\.{a}\b", text):
        return a, b
    if re.search(rf"\.{a}\s*-\s*(?:NEW|OLD)\.{b}\b", text):
        return b, a
    return None


@dataclass
class ValueRules:
    """The value-generation rules of one spec (bounds, providers, time order, scratch checks)."""

    spec: DomainSpec
    actor: str
    bounds: dict[tuple[str, str], tuple[Number | None, Number | None]] = field(default_factory=dict)
    order: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _checker: RowChecker | None = field(default=None, repr=False, compare=False)
    _ok: dict[tuple[str, str, Any], bool] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_spec(cls, spec: DomainSpec, actor: str) -> ValueRules:
        """Derive the rules of ``spec`` (the actor table decides whose names are people's)."""
        rules = cls(spec, actor)
        for table in spec.tables:
            for col in table.columns:
                if col.check and col.type in ("INTEGER", "REAL"):
                    rules.bounds[(table.name, col.name)] = check_bounds(col)
            rules.order[table.name] = _time_pairs(spec, table)
        return rules

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_checker": None, "_ok": {}}

    @property
    def checker(self) -> RowChecker:
        """The scratch evaluator (opened on first use)."""
        if self._checker is None:
            self._checker = RowChecker(self.spec)
        return self._checker

    def allowed(self, table: str, column: str, value: Any) -> bool:
        """True when ``value`` alone satisfies the column's constraints (cached)."""
        key = (table, column, value)
        hit = self._ok.get(key)
        if hit is None:
            lo, hi = self.bounds.get((table, column), (None, None))
            inside = not isinstance(value, int | float) or (
                (lo is None or value >= lo) and (hi is None or value <= hi)
            )
            hit = inside and self.checker.column_ok(table, column, {column: value})
            if len(self._ok) < 100_000:
                self._ok[key] = hit
        return hit

    def clamp(self, table: str, col: Column, value: Number) -> Number:
        """``value`` moved into the interval the column's ``check`` allows."""
        lo, hi = self.bounds.get((table, col.name), (None, None))
        if lo is not None and value < lo:
            value = lo
        if hi is not None and value > hi:
            value = hi
        return round(value) if col.type == "INTEGER" else round(value, 2)

    def violations(self, table: str, row: dict[str, Any]) -> list[str]:
        """Columns of ``table`` whose constraints the whole ``row`` breaks."""
        return self.checker.violations(table, row)

    def provider(self, table: Table, col: Column) -> str | None:
        """The Faker provider for new values of ``col`` (declared or from its meaning)."""
        return meaning_provider(table, col, self.actor)

    def drawn(self, table: Table, col: Column, rng: random.Random, faker: Faker) -> Any:
        """A value from the spec's pool or the column's provider; None when it has neither."""
        if col.values:
            return rng.choice(col.values)
        name = self.provider(table, col)
        if name is None:
            return None
        if name == "phone_number":  # Faker's own formats add extensions ('x916') and prefixes
            return faker.numerify("###-###-####")
        return str(getattr(faker, name)())

    def free_text(self, existing: list[str], rng: random.Random, faker: Faker) -> str:
        """A sentence in the column's own style: a head clause of one existing value with the
        tail clause of another ("Board meeting" + "in Atlanta"), places sometimes another real
        city."""
        if not existing:  # no sentence of the domain's own: a plain one, never word salad
            return rng.choice(PLAIN_NOTES)
        parts = [p for p in (_split(v) for v in existing) if p is not None]
        if not parts:
            return rng.choice(existing)
        head = rng.choice(parts)[0]
        prep, tail = rng.choice([(p, t) for _, p, t in parts])
        if prep.lower() == "in" and _TITLE.match(tail) and rng.random() < 0.5:
            # another real city (a made-up town reads as no real note), not one already named
            fresh = [c for c in REAL_CITIES if not any(c in v for v in existing)]
            tail = faker.random_element(fresh) if fresh else tail
        return f"{head} {prep} {tail}"

    def person_name(self, like: str, faker: Faker) -> str:
        """A person's name, keeping the title or suffix of the name it replaces (Dr., NP)."""
        name = f"{faker.first_name()} {faker.last_name()}"
        pre, post = _HONORIFIC.match(like), _SUFFIX.search(like)
        return f"{pre.group(1) + ' ' if pre else ''}{name}{post.group(0) if post else ''}"


def _split(value: str) -> tuple[str, str, str] | None:
    """``"Board meeting in New York"`` -> ``("Board meeting", "in", "New York")``."""
    found = list(_PREPOSITIONS.finditer(value))
    if not found:
        return None
    m = found[-1]
    head, tail = value[: m.start()].strip(), value[m.end() :].strip()
    return (head, m.group(1), tail) if head and tail else None


LINE_MARKS = ("Select", "Classic", "Essential", "Everyday")
_LINE = re.compile(rf"^(?:{'|'.join(LINE_MARKS)})\s+")


def variant(label: str, rng: random.Random) -> str:
    """Another member of a catalogue, named like ``label``: its numbers redrawn
    ("Laptop Pro 14" -> "Laptop Pro 16"), or a product-line word in front ("Saver" ->
    "Everyday Saver"). Never a series mark ("Saver III"): a customer does not name a product
    by one, and marks stack ("Checking II IV")."""
    if re.search(r"\d", label):
        return re.sub(
            r"\d+", lambda m: str(max(1, int(m.group(0)) + rng.choice([-4, -2, 2, 4, 6]))), label
        )
    base = _LINE.sub("", label)  # one line word at most: never "Select Classic Checking"
    marks = [m for m in LINE_MARKS if not label.startswith(f"{m} ")]
    words = base.split()
    if len(words) > 1 and not words[0].isupper() and words[1].islower() and len(words[1]) > 3:
        # sentence case ("Front brake pads" -> "Select front brake pads"); a place keeps its
        # capital ("Isle of Wren")
        base = base[:1].lower() + base[1:]
    return f"{rng.choice(marks)} {base}"


def renamed(value: Any, old_name: str, new_name: str) -> Any:
    """``value`` with the parts of ``old_name`` it spells replaced by those of ``new_name``
    ("ana.ribeiro@example.com", "Ana Ribeiro" -> "Jeremy Sullivan" gives
    "jeremy.sullivan@example.com"): an e-mail, user name or handle made from a person's name
    follows the name. Words both names share (a title such as "Dr.") stay; other values are
    returned unchanged."""
    if not isinstance(value, str) or not old_name or value == old_name:
        return value
    old = [_letters(p) for p in old_name.split() if not p.endswith(".")]  # no "Dr."
    new = [_letters(p) for p in new_name.split() if not p.endswith(".")]
    old, new = [w for w in old if len(w) >= 2], [w for w in new if len(w) >= 2]
    shared = set(old) & set(new)
    old, new = [w for w in old if w not in shared], [w for w in new if w not in shared]
    if not old or not new:
        return value
    pairs = {w: new[min(i, len(new) - 1)] for i, w in enumerate(old)}
    pairs[old[-1]] = new[-1]  # the surname goes to the surname
    pattern = re.compile("|".join(re.escape(w) for w in sorted(pairs, key=len, reverse=True)), re.I)
    if not pattern.search(value):
        return value

    def swap(m: re.Match[str]) -> str:
        word = pairs[m.group(0).lower()]
        return word.capitalize() if m.group(0)[:1].isupper() else word

    return pattern.sub(swap, value)


def _letters(word: str) -> str:
    """``"Min-ji"`` -> ``"minji"``: the letters of a name part as an address spells them."""
    return re.sub(r"[^a-z]", "", word.lower())


def free_text(col: Column) -> bool:
    """True when the column holds a sentence a person writes (a purpose, a reason, a note)."""
    words = _words(col.name) | {_singular(w) for w in col.name.split("_")}
    return bool(words & set(FREE_TEXT)) or col.name in ("title", "subject")


def kind_variant(like: str, rng: random.Random, faker: Faker) -> str:
    """Another name of the same kind: ``"Lakeside Pharmacy"`` -> ``"Moreno Pharmacy"`` (the
    last word names the kind); a one-word value is kept."""
    words = like.split()
    if len(words) < 2 or not words[-1][:1].isupper():
        return like
    return f"{faker.last_name() if rng.random() < 0.5 else faker.city()} {words[-1]}"


def keep_time_order(
    pairs: list[tuple[str, str]],
    args: dict[str, Any],
    target: dict[str, Any] | None,
    fixed: set[str],
) -> None:
    """Make the time points in ``args`` run forward for each (earlier, later) pair: two sampled
    points out of order swap; one sampled point out of order with the row's other point moves
    onto it. Columns in ``fixed`` are never changed."""
    for early, late in pairs:
        known = {**(target or {}), **args}
        first, last = known.get(early), known.get(late)
        if not isinstance(first, int | float) or not isinstance(last, int | float) or first <= last:
            continue
        if early in args and late in args and not {early, late} & fixed:
            args[early], args[late] = last, first
        elif late in args and late not in fixed:
            args[late] = first
        elif early in args and early not in fixed:
            args[early] = last


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
