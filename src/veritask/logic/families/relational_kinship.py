"""Relational: follow a chain of parent links through a family tree and name the ancestor."""

from __future__ import annotations

import random
import re
from typing import Any

from veritask.logic._family import Family
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
]

_POSSESSIVE = {"m": "his", "f": "her"}


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A full ancestor tree of ``2 + (d-1)//3`` generations plus ``d`` distracting siblings."""
    gens = 2 + (difficulty - 1) // 3
    males = rng.sample(_MALE, len(_MALE))
    females = rng.sample(_FEMALE, len(_FEMALE))
    gender: dict[str, str] = {}

    def new_person(g: str) -> str:
        name = males.pop() if g == "m" else females.pop()
        gender[name] = g
        return name

    start = new_person(rng.choice("mf"))
    facts: list[list[str]] = []
    couples: list[tuple[str, str]] = []
    level = [start]
    for _ in range(gens - 1):
        nxt: list[str] = []
        for child in level:
            father, mother = new_person("m"), new_person("f")
            facts.append([father, "father", child])
            facts.append([mother, "mother", child])
            couples.append((father, mother))
            nxt += [father, mother]
        level = nxt
    for _ in range(difficulty):
        father, mother = rng.choice(couples)
        child = new_person(rng.choice("mf"))
        facts.append([father, "father", child])
        facts.append([mother, "mother", child])
    rng.shuffle(facts)
    length = rng.randint(max(1, gens - 2), gens - 1)
    path = [rng.choice(("father", "mother")) for _ in range(length)]
    # every link names the parent's role (version 2: "C is a son of P" left father or mother
    # to a guess from P's name)
    lines = []
    for parent, rel, child in facts:
        if rng.random() < 0.5:
            lines.append(f"{parent} is the {rel} of {child}.")
        else:
            kid = "son" if gender[child] == "m" else "daughter"
            lines.append(f"{child} is the {kid} of {parent}, {_POSSESSIVE[gender[child]]} {rel}.")
    query = start + "".join(f"'s {rel}" for rel in path)
    return {"facts": facts, "start": start, "path": path}, [" ".join(lines), query]


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
        version="2",
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
