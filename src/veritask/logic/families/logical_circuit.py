"""Logical: evaluate a small Boolean circuit and name the gates whose output is true."""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import SIZES
from veritask.logic._textonly import Undetermined, findall

_OPS = ("AND", "OR", "XOR", "NAND", "NOR", "NOT")


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """2-4 inputs and ``SIZES[d - 1]`` gates (20 at level 10: 2^20 candidate answers), each
    reading earlier inputs or gates."""
    n_in = 2 + difficulty // 4
    n_gates = SIZES[difficulty - 1]
    values = [rng.randint(0, 1) for _ in range(n_in)]
    gates: list[list[Any]] = []
    for g in range(n_gates):
        signals = [f"x{i + 1}" for i in range(n_in)] + [f"g{j + 1}" for j in range(g)]
        # favour recent gates so the circuit is deep rather than flat
        weights = [1] * n_in + [2 + j for j in range(g)]
        op = rng.choice(_OPS)
        if op == "NOT":
            gates.append([op, rng.choices(signals, weights)[0]])
        else:
            a = rng.choices(signals, weights)[0]
            b = rng.choices(signals, weights)[0]
            while b == a:
                b = rng.choices(signals, weights)[0]
            gates.append([op, a, b])
    inputs_text = ", ".join(f"x{i + 1} = {v}" for i, v in enumerate(values))
    gates_text = "\n".join(f"g{i + 1} = {g[0]}({', '.join(g[1:])})" for i, g in enumerate(gates))
    return {"values": values, "gates": gates}, [inputs_text, gates_text]


def solve_forward(inputs: dict[str, Any]) -> list[str] | str:
    """Evaluate gates in order into a table of signal values."""
    env = {f"x{i + 1}": int(v) for i, v in enumerate(inputs["values"])}
    true_gates = []
    for i, gate in enumerate(inputs["gates"]):
        op, args = gate[0], [env[s] for s in gate[1:]]
        if op == "NOT":
            out = 1 - args[0]
        elif op == "AND":
            out = args[0] & args[1]
        elif op == "OR":
            out = args[0] | args[1]
        elif op == "XOR":
            out = args[0] ^ args[1]
        elif op == "NAND":
            out = 1 - (args[0] & args[1])
        else:
            out = 1 - (args[0] | args[1])
        env[f"g{i + 1}"] = out
        if out:
            true_gates.append(f"g{i + 1}")
    return true_gates or "none"


def solve_recursive(inputs: dict[str, Any]) -> list[str] | str:
    """Evaluate each gate on demand, recursively and memoized, with Python booleans."""
    gates = inputs["gates"]
    values = inputs["values"]
    table: dict[str, Callable[[bool, bool], bool]] = {
        "AND": lambda a, b: a and b,
        "OR": lambda a, b: a or b,
        "XOR": lambda a, b: a != b,
        "NAND": lambda a, b: not (a and b),
        "NOR": lambda a, b: not (a or b),
    }

    @cache
    def value(signal: str) -> bool:
        index = int(signal[1:]) - 1
        if signal[0] == "x":
            return bool(values[index])
        gate = gates[index]
        if gate[0] == "NOT":
            return not value(gate[1])
        return bool(table[gate[0]](value(gate[1]), value(gate[2])))

    names = [f"g{i + 1}" for i in range(len(gates))]
    return [g for g in names if value(g)] or "none"


_TEXT_OPS: dict[str, Callable[[list[int]], int]] = {
    "AND": lambda v: v[0] & v[1],
    "OR": lambda v: v[0] | v[1],
    "XOR": lambda v: v[0] ^ v[1],
    "NAND": lambda v: 1 - (v[0] & v[1]),
    "NOR": lambda v: 1 - (v[0] | v[1]),
    "NOT": lambda v: 1 - v[0],
}


def text_circuit(question: str) -> list[str] | str:
    """Read the input values and the gate lines; evaluate the gates in the order given."""
    env = {name: int(v) for name, v in findall(r"(x\d+) = ([01])", question)}
    true_gates = []
    for name, op, args in findall(r"(g\d+) = ([A-Z]+)\(([^)]*)\)", question):
        if any(a not in env for a in args.split(", ")):
            raise Undetermined(f"{name} reads a signal not defined before it")
        env[name] = _TEXT_OPS[op]([env[a] for a in args.split(", ")])
        if env[name]:
            true_gates.append(name)
    return true_gates or "none"


FAMILIES = (
    Family(
        id="boolean_circuit_gates",
        version="3",
        category="logical",
        title="Boolean circuit gates",
        template=(
            "A Boolean circuit has inputs [Input Slot 1] (1 is true, 0 is false) and these "
            "gates:\n[Input Slot 2]\nWhich gates output 1?"
        ),
        generate=generate,
        validators=(solve_forward, solve_recursive),
        answer_format=(
            "Answer with the gate names in increasing order of their number, separated by "
            "commas (e.g. g1, g3), or 'none' if no gate outputs 1."
        ),
        size=lambda inputs: len(inputs["gates"]) + len(inputs["values"]),
        text_solver=text_circuit,
    ),
)
