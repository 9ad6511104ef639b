"""Honest offline gates: checks that do not trust the family's own code to judge itself.

- **Copyable answers** (the trivial-instance filter): the answer's words appear in order in the
  question, or its letters are one word of the question (a grid row that is the answer). Such an
  instance needs no step; at most ``MAX_COPYABLE`` of any level may be copyable.
- **Copy baselines** (the leak gate): family-agnostic guessers that read only the question and
  copy one word of it (the i-th word or number from the start or the end, the word after
  "is"). A guesser right on its own question clearly more often than chance (on another
  question of the level, or a random pick among the question's names or numbers) has found the
  answer in the text.
- **Hidden facts**: two instances with the same question and different answers mean the answer
  depends on something the question does not state. This needs no text solver, so a family
  whose solver "knows" the hidden rule is still caught.
- **Validator independence**: validators are compared by their syntax tree (identifiers renamed
  in order of appearance, docstrings dropped) and by behaviour on perturbed inputs (one
  number in a list moved one further from zero). Two
  validators with the same normalized tree are one validator; a pool needs two distinct ones.
- **Degenerate answers, judged against the answer space**: the most common answer may take at
  most ``max(MAX_SHARE, SPACE_SLACK / k)`` of a level, where ``k`` is the number of distinct
  answers the family gives over all levels: a yes/no family passes at 50/50, a family that
  always says the same thing fails.
"""

from __future__ import annotations

import ast
import copy
import difflib
import inspect
import random
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from veritask.logic._family import (
    Family,
    Instance,
    Validator,
    canonical,
    copyable_answer,
    normalize,
    question_body,
)

MAX_COPYABLE = 0.05
"""The largest share of one level's instances whose answer may be copied from the question."""
MAX_COPY_GAIN = 0.15
"""How much better than chance (the same guesser on another question) a copy guesser may be:
above sampling noise on 100 instances a level (a question that states its answer gains ~1)."""
MAX_SHARE = 0.30
"""The share the most common answer may always take, whatever the answer space."""
SPACE_SLACK = 1.25
"""With ``k`` possible answers the most common may take ``SPACE_SLACK / k`` (sampling noise)."""
MIN_BASELINE_SAMPLE = 20
"""Levels with fewer instances are not judged by the copy baselines (too noisy)."""
BEHAVIOUR_PROBES = 20
"""How many perturbed inputs the behaviour comparison of validators runs."""

_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_PLACES = 6


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def is_copyable(family: Family, inst: Instance) -> bool:
    """True when the instance's answer can be copied from its question (see
    :func:`~veritask.logic._family.copyable_answer`)."""
    return copyable_answer(question_body(family, inst.question), inst.answer)


def _guesses(body: str) -> dict[str, str]:
    """What each copy guesser answers for one question body (normalized)."""
    words = _words(body)
    numbers = _NUMBER.findall(body)
    out: dict[str, str] = {}
    for i in range(_PLACES):
        if i < len(words):
            out[f"word[{i}]"] = words[i]
            out[f"word[-{i + 1}]"] = words[-i - 1]
        if i < len(numbers):
            out[f"number[{i}]"] = numbers[i]
            out[f"number[-{i + 1}]"] = numbers[-i - 1]
    for k, word in enumerate(re.findall(r"\bis ([A-Za-z0-9-]+)", body)[:_PLACES]):
        out[f"after_is[{k}]"] = word.lower()
    return out


@dataclass(frozen=True)
class CopyBaseline:
    """The best copy guesser at one level: its accuracy on the instances' own questions and on
    chance: the larger of the same guesser on another question of the level and of picking one
    of the question's candidate words at random."""

    rule: str
    own: float
    chance: float

    @property
    def gain(self) -> float:
        """How much better than chance the guesser is."""
        return self.own - self.chance


def copy_baselines(family: Family, instances: Sequence[Instance]) -> CopyBaseline | None:
    """The copy guesser with the largest gain over chance on ``instances`` (one level), or None
    for fewer than two instances. Chance pairs each answer with the next instance's question."""
    if len(instances) < 2:
        return None
    answers = [" ".join(_words(i.answer)) for i in instances]
    bodies = [question_body(family, i.question) for i in instances]
    guesses = [_guesses(b) for b in bodies]
    own: Counter[str] = Counter()
    other: Counter[str] = Counter()
    for j, answer in enumerate(answers):
        own.update(rule for rule, g in guesses[j].items() if g == answer)
        shifted = guesses[(j + 1) % len(instances)]
        other.update(rule for rule, g in shifted.items() if g == answer)
    if not own:
        return CopyBaseline("none", 0.0, 0.0)
    n = len(instances)
    pick = sum(_pick_chance(b, a) for b, a in zip(bodies, answers, strict=True)) / n
    rule = max(sorted(own), key=lambda r: own[r] - max(other[r] / n, pick))
    return CopyBaseline(rule, own[rule] / n, max(other[rule] / n, pick))


def _pick_chance(body: str, answer: str) -> float:
    """How often picking one of the question's candidates at random is right: the distinct
    numbers for a numeric answer, else the distinct capitalized words."""
    if _NUMBER.fullmatch(answer):
        candidates = set(_NUMBER.findall(body))
    else:
        candidates = {w.lower() for w in re.findall(r"\b[A-Z][A-Za-z0-9-]*", body)}
    return 1 / len(candidates) if answer in candidates else 0.0


def hidden_fact_examples(family: Family, instances: Iterable[Instance]) -> list[str]:
    """Questions asked twice with different answers: the answer depends on an unstated fact."""
    seen: dict[str, tuple[str, Instance]] = {}
    found: list[str] = []
    for inst in instances:
        key = normalize(question_body(family, inst.question))
        if key not in seen:
            seen[key] = (normalize(inst.answer), inst)
            continue
        answer, first = seen[key]
        if answer != normalize(inst.answer) and len(found) < 3:
            found.append(
                f"d={inst.difficulty} #{first.index} and #{inst.index}: the same question has "
                f"answers {first.answer!r} and {inst.answer!r}"
            )
    return found


# --- degenerate answers ------------------------------------------------------------------------


def degenerate_problems(by_level: Mapping[int, Sequence[Instance]]) -> list[str]:
    """Levels whose most common answer takes more than the answer space allows (see module)."""
    space = {normalize(i.answer) for insts in by_level.values() for i in insts}
    k = len(space)
    allowed = MAX_SHARE if k == 0 else max(MAX_SHARE, SPACE_SLACK / k)
    if k == 1:
        allowed = 0.0
    problems: list[str] = []
    for d, insts in sorted(by_level.items()):
        if not insts:
            continue
        top, count = Counter(i.answer for i in insts).most_common(1)[0]
        if count / len(insts) > allowed:
            problems.append(
                f"d={d}: answer {top!r} is {count}/{len(insts)} of instances (at most "
                f"{allowed:.0%} with {k} distinct answers)"
            )
    return problems


# --- validator independence --------------------------------------------------------------------


class _Rename(ast.NodeTransformer):
    """Identifiers renamed ``v0, v1, ...`` in order of appearance; docstrings dropped."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self._name(node.id), node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(self._name(node.arg)), node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:] or [ast.Pass()]
        node.body = body
        node.name = "f"
        node.decorator_list = []
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)


def _validator_tree(family: Family, validator: Validator) -> ast.AST | None:
    """The syntax tree of a validator: from the family file for a sandboxed one, else from the
    function's source; None when the source cannot be read."""
    name = getattr(validator, "sandbox_function", None)
    source = getattr(family, "source", "")
    if name is not None and source:
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        return None
    try:
        text = textwrap.dedent(inspect.getsource(validator))
        tree = ast.parse(text)
    except (OSError, TypeError, SyntaxError):
        return None
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    if getattr(validator, "__name__", "") == "<lambda>" and len(lambdas) == 1:
        return lambdas[0]
    return tree.body[0] if tree.body else tree


def normalized_dump(tree: ast.AST) -> str:
    """The tree with identifiers renamed and docstrings dropped, as ``ast.dump`` text."""
    return ast.dump(_Rename().visit(copy.deepcopy(tree)), annotate_fields=False)


def _node_sequence(dump: str) -> list[str]:
    return re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\S", dump)


def _perturbed(inputs: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of ``inputs`` with one integer inside a list moved one further from zero (the
    same item for every validator, so behaviour is compared on the same input). Top-level
    numbers (a base, a count) are left alone: a base of 1 or a count of 0 can make an honest
    validator loop forever, and built-in validators run without a time limit."""
    out = copy.deepcopy(dict(inputs))
    paths: list[tuple[list[Any], int]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(node, list) and isinstance(value, int) and not isinstance(value, bool):
                paths.append((node, key))
            elif isinstance(value, (dict, list)):
                walk(value)

    walk(out)
    if paths:
        node, key = paths[rng.randrange(len(paths))]
        node[key] += 1 if node[key] >= 0 else -1
    return out


def _outcome(validator: Validator, inputs: dict[str, Any]) -> str:
    try:
        return "= " + normalize(canonical(validator(copy.deepcopy(inputs))))
    except Exception as exc:  # a crash on a perturbed input is a behaviour too
        return f"! {type(exc).__name__}"


@dataclass
class Independence:
    """How independent a family's validators are.

    Attributes:
        distinct: Validators left once those with the same normalized tree count as one
            (validators whose source cannot be read each count as distinct).
        similarity: ``"i-j"`` -> similarity of the two normalized trees (0-1).
        agreement: ``"i-j"`` -> share of perturbed inputs on which the two behave alike.
        same: Pairs found to be the same function.
    """

    distinct: int
    similarity: dict[str, float] = field(default_factory=dict)
    agreement: dict[str, float] = field(default_factory=dict)
    same: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "distinct": self.distinct,
            "similarity": self.similarity,
            "agreement": self.agreement,
            "same": self.same,
        }


def validator_independence(
    family: Family, instances: Sequence[Instance], probes: int = BEHAVIOUR_PROBES
) -> Independence:
    """Compare the family's validators pairwise by normalized syntax tree and by behaviour on
    ``probes`` perturbed copies of the instances' inputs (seeded, so the figures repeat)."""
    validators = family.validators
    dumps = [_dump_or_none(family, v) for v in validators]
    rng = random.Random(0)
    sample = [_perturbed(i.inputs, rng) for i in list(instances)[:probes]]
    outcomes = [[_outcome(v, x) for x in sample] for v in validators]
    groups: dict[str, int] = {}
    result = Independence(distinct=0)
    for j, dump in enumerate(dumps):
        if dump is None or dump not in groups:
            result.distinct += 1
            if dump is not None:
                groups[dump] = j
    for a, b in combinations(range(len(validators)), 2):
        key = f"{a}-{b}"
        if dumps[a] is not None and dumps[b] is not None:
            ratio = difflib.SequenceMatcher(
                None, _node_sequence(dumps[a] or ""), _node_sequence(dumps[b] or ""), False
            ).ratio()
            result.similarity[key] = round(ratio, 3)
            if dumps[a] == dumps[b]:
                result.same.append(key)
        if sample:
            alike = sum(x == y for x, y in zip(outcomes[a], outcomes[b], strict=True))
            result.agreement[key] = round(alike / len(sample), 3)
    return result


def _dump_or_none(family: Family, validator: Validator) -> str | None:
    tree = _validator_tree(family, validator)
    return None if tree is None else normalized_dump(tree)


# --- the gate ----------------------------------------------------------------------------------


@dataclass
class HonestyReport:
    """What the honest gates found on one family's instances."""

    problems: list[str] = field(default_factory=list)
    copyable: dict[int, float] = field(default_factory=dict)
    copy_gain: dict[int, float] = field(default_factory=dict)
    independence: Independence | None = None

    def figures(self) -> dict[str, Any]:
        """The measured figures, JSON-ready (levels as string keys, so a record read back
        equals the one written)."""
        return {
            "copyable_share": {str(d): v for d, v in self.copyable.items()},
            "copy_baseline_gain": {str(d): v for d, v in self.copy_gain.items()},
            "validators": None if self.independence is None else self.independence.to_json(),
        }


def by_level(instances: Iterable[Instance]) -> dict[int, list[Instance]]:
    """Instances grouped by difficulty."""
    out: dict[int, list[Instance]] = defaultdict(list)
    for inst in instances:
        out[inst.difficulty].append(inst)
    return dict(out)


def honesty_gate(
    family: Family,
    instances: Sequence[Instance],
    *,
    copy_check: Callable[[Family, Instance], bool] = is_copyable,
) -> HonestyReport:
    """Run every honest gate of this module on ``instances`` (all levels)."""
    report = HonestyReport()
    levels = by_level(instances)
    for d, insts in sorted(levels.items()):
        share = sum(copy_check(family, i) for i in insts) / len(insts)
        report.copyable[d] = round(share, 4)
        if share > MAX_COPYABLE:
            report.problems.append(
                f"d={d}: {share:.1%} of answers can be copied from the question "
                f"(at most {MAX_COPYABLE:.0%})"
            )
        base = copy_baselines(family, insts)
        if base is not None and len(insts) >= MIN_BASELINE_SAMPLE:
            report.copy_gain[d] = round(base.gain, 4)
            if base.gain > MAX_COPY_GAIN:
                report.problems.append(
                    f"d={d}: copying {base.rule} of the question is right {base.own:.0%} of the "
                    f"time against {base.chance:.0%} by chance: the question leaks its answer"
                )
    hidden = hidden_fact_examples(family, instances)
    report.problems.extend(f"hidden fact: {h}" for h in hidden)
    report.problems.extend(degenerate_problems(levels))
    report.independence = validator_independence(family, instances)
    if report.independence.distinct < 2:
        same = ", ".join(report.independence.same) or "unreadable"
        report.problems.append(
            f"validators are not independent: {report.independence.distinct} distinct "
            f"(the same function: {same})"
        )
    return report
