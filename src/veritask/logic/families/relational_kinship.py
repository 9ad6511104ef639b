"""Relational: follow a chain of parent links up a line of descent and name the ancestor."""

from __future__ import annotations

import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import STEPS
from veritask.logic._textonly import Undetermined, between

_MALE = [
    "Adam",
    "Boris",
    "Carl",
    "Dmitri",
    "Edgar",
    "Felix",
    "Gavin",
    "Hugo",
    "Ivan",
    "Jonas",
    "Kurt",
    "Liam",
    "Marco",
    "Nils",
    "Oscar",
    "Pablo",
    "Quinn",
    "Rafael",
    "Simon",
    "Tobias",
    "Ulrich",
    "Victor",
    "Walter",
    "Xavier",
    "Yusuf",
    "Zane",
    "Arthur",
    "Bruno",
    "Cedric",
    "Dorian",
    "Elias",
    "Fabian",
    "Gustav",
    "Henrik",
    "Isaac",
    "Jasper",
    "Konrad",
    "Lorenz",
    "Mattias",
    "Nikolai",
    "Otto",
    "Piers",
    "Roland",
    "Stefan",
    "Theo",
    "Ansel",
    "Basil",
]
_FEMALE = [
    "Alice",
    "Beatrix",
    "Clara",
    "Diana",
    "Elena",
    "Fiona",
    "Greta",
    "Hanna",
    "Irene",
    "Julia",
    "Karen",
    "Lena",
    "Maria",
    "Nora",
    "Olivia",
    "Petra",
    "Rosa",
    "Sofia",
    "Tanya",
    "Ursula",
    "Vera",
    "Wanda",
    "Yara",
    "Zoe",
    "Agnes",
    "Bianca",
    "Celia",
    "Daphne",
    "Edith",
    "Freya",
    "Alma",
    "Bettina",
    "Carmen",
    "Dora",
    "Esther",
    "Flora",
    "Gisela",
    "Helga",
    "Ingrid",
    "Judith",
    "Klara",
    "Lotte",
    "Mira",
    "Nadia",
    "Ottilie",
    "Carla",
    "Delia",
]

_POSSESSIVE = {"m": "his", "f": "her"}


class _People:
    """Fresh names without repeats, and each person's gender."""

    def __init__(self, rng: random.Random) -> None:
        self.names = {"m": rng.sample(_MALE, len(_MALE)), "f": rng.sample(_FEMALE, len(_FEMALE))}
        self.gender: dict[str, str] = {}

    def new(self, gender: str) -> str:
        name = self.names[gender].pop()
        self.gender[name] = gender
        return name

    def parents_of(self, child: str) -> list[list[str]]:
        return [[self.new("m"), "father", child], [self.new("f"), "mother", child]]


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A line of descent ``STEPS[d-1]`` generations deep (30 at level 10) and a question that
    climbs it one parent at a time.

    Every person on the line has both parents named, so each hop is a choice the question
    decides and the next hop starts from its result; ``d`` siblings of people on the line and
    the parents of ``d // 2`` parents the line does not take are distractors."""
    people = _People(rng)
    start = people.new(rng.choice("mf"))
    path = [rng.choice(("father", "mother")) for _ in range(STEPS[difficulty - 1])]
    facts: list[list[str]] = []
    couples: list[tuple[str, str]] = []
    not_taken: list[str] = []
    person = start
    for rel in path:
        (father, _, _), (mother, _, _) = parents = people.parents_of(person)
        facts += parents
        couples.append((father, mother))
        person, other = (father, mother) if rel == "father" else (mother, father)
        not_taken.append(other)
    for _ in range(difficulty):
        father, mother = rng.choice(couples)
        child = people.new(rng.choice("mf"))
        facts += [[father, "father", child], [mother, "mother", child]]
    for other in rng.sample(not_taken, min(difficulty // 2, len(not_taken))):
        facts += people.parents_of(other)
    rng.shuffle(facts)
    lines = [_fact_text(fact, people.gender, rng) for fact in facts]
    query = start + "".join(f"'s {rel}" for rel in path)
    return {"facts": facts, "start": start, "path": path}, [" ".join(lines), query]


def _fact_text(fact: list[str], gender: dict[str, str], rng: random.Random) -> str:
    """One parent link, naming the parent's role either way round (version 2: "C is a son of
    P" left father or mother to a guess from P's name)."""
    parent, rel, child = fact
    if rng.random() < 0.5:
        return f"{parent} is the {rel} of {child}."
    kid = "son" if gender[child] == "m" else "daughter"
    return f"{child} is the {kid} of {parent}, {_POSSESSIVE[gender[child]]} {rel}."


def solve_dict(inputs: dict[str, Any]) -> str:
    """Index (child, relation) -> parent, then walk the path."""
    parent = {(c, r): p for p, r, c in inputs["facts"]}
    person = str(inputs["start"])
    for rel in inputs["path"]:
        person = parent[(person, rel)]
    return person


def solve_scan(inputs: dict[str, Any]) -> str:
    """For each step, scan the fact list for the one fact that matches."""
    person = str(inputs["start"])
    for rel in inputs["path"]:
        matches = [f[0] for f in inputs["facts"] if f[2] == person and f[1] == rel]
        if len(matches) != 1:
            raise ValueError("ambiguous or missing parent")
        person = matches[0]
    return person


def text_ancestor(question: str) -> str:
    """Read every parent link with its role from the text; follow the asked chain. A missing
    link, or two people stated in one role, leaves the question undetermined."""
    parent: dict[tuple[str, str], set[str]] = {}
    for p, rel, child in re.findall(r"(\w+) is the (father|mother) of (\w+)\.", question):
        parent.setdefault((child, rel), set()).add(p)
    for child, p, rel in re.findall(
        r"(\w+) is the (?:son|daughter) of (\w+), \w+ (\w+)\.", question
    ):
        parent.setdefault((child, rel), set()).add(p)
    start, *path = between(question, "Who is ", "?").split("'s ")
    person = start
    for rel in path:
        found = parent.get((person, rel), set())
        if len(found) != 1:
            raise Undetermined(f"the text names {len(found)} {rel}(s) of {person}")
        (person,) = found
    return person


FAMILIES = (
    Family(
        id="kinship_ancestor",
        version="3",
        category="relational",
        title="Family-tree ancestor query",
        template="Facts about a family: [Input Slot 1] Who is [Input Slot 2]?",
        generate=generate,
        validators=(solve_dict, solve_scan),
        answer_format="Answer with the person's name only.",
        size=lambda inputs: len(inputs["facts"]) + len(inputs["path"]),
        text_solver=text_ancestor,
    ),
)
