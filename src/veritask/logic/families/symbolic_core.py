"""Symbolic families: string rewriting, Vigenere decoding, base conversion, custom sorting and a
stack machine. Each family has two independently written validators."""

from __future__ import annotations

import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import STEPS
from veritask.logic._text import number
from veritask.logic._textonly import between, findall

Inputs = dict[str, Any]
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"

# --------------------------------------------------------------------------- string rewriting


def gen_rewrite(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """A start string, an ordered rule list and a step budget of ``STEPS[d-1]`` (30 at level 10).

    A draw is kept only when every step of the budget rewrites the string into one not seen
    before (no early fixed point, no cycle) and the string grows by at most ``2 + steps // 5``
    letters, so each of the steps is a dependent rewrite rather than a no-op or a repeat of a
    growing rule."""
    alphabet = "abc" if difficulty <= 5 else "abcd"
    steps = STEPS[difficulty - 1]
    while True:
        rules = _draw_rules(rng, alphabet, 2 + difficulty // 3)
        start = "".join(rng.choice(alphabet) for _ in range(4 + difficulty // 2))
        longest = len(start) + 2 + steps // 5
        done, final = _rewrite_fresh(start, rules, steps, longest)
        if done == steps and len(final) <= longest:
            break
    rule_text = "; ".join(f"rule {i + 1}: {a} -> {b}" for i, (a, b) in enumerate(rules))
    return {"start": start, "rules": rules, "steps": steps}, [start, rule_text, str(steps)]


def _draw_rules(rng: random.Random, alphabet: str, count: int) -> list[list[str]]:
    """``count`` rules with distinct left sides of 1-2 letters and a different right side."""
    rules: list[list[str]] = []
    seen: set[str] = set()
    while len(rules) < count:
        lhs = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 2)))
        rhs = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 2)))
        if lhs == rhs or lhs in seen:
            continue
        seen.add(lhs)
        rules.append([lhs, rhs])
    return rules


def _rewrite_fresh(start: str, rules: list[list[str]], steps: int, longest: int) -> tuple[int, str]:
    """Rewrite up to ``steps`` times; stop at a fixed point, at a string seen before, or early
    once the string can no longer end within ``longest`` letters (a step shortens it by one
    letter at most). Returns how many rewrites gave a new string, and the last new string."""
    s, seen = start, {start}
    for done in range(steps):
        hit = next(((lhs, rhs) for lhs, rhs in rules if lhs in s), None)
        if hit is None or len(s) - (steps - done) > longest:
            return done, s
        nxt = s.replace(hit[0], hit[1], 1)
        if nxt in seen:
            return done, s
        s = nxt
        seen.add(s)
    return steps, s


def solve_rewrite_replace(inputs: Inputs) -> str:
    """Apply the first applicable rule with ``str.replace`` (count 1) each step."""
    s = str(inputs["start"])
    for _ in range(int(inputs["steps"])):
        for lhs, rhs in inputs["rules"]:
            if lhs in s:
                s = s.replace(lhs, rhs, 1)
                break
        else:
            break
    return s


def solve_rewrite_scan(inputs: Inputs) -> str:
    """Apply rules by scanning positions with a regex search (independent of ``replace``)."""
    s = str(inputs["start"])
    patterns = [(re.compile(re.escape(lhs)), rhs) for lhs, rhs in inputs["rules"]]
    steps = int(inputs["steps"])
    while steps > 0:
        for pattern, rhs in patterns:
            m = pattern.search(s)
            if m is not None:
                s = s[: m.start()] + rhs + s[m.end() :]
                steps -= 1
                break
        else:
            return s
    return s


# --------------------------------------------------------------------------- vigenere

_WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "green",
    "light",
    "music",
    "paper",
    "table",
    "window",
    "garden",
    "silver",
    "bridge",
    "candle",
    "forest",
    "orange",
    "planet",
    "rocket",
    "summer",
    "winter",
    "yellow",
    "violet",
    "dragon",
    "castle",
    "engine",
    "friend",
    "jungle",
    "ladder",
    "market",
    "needle",
    "pencil",
    "rabbit",
    "saddle",
    "thunder",
    "velvet",
    "wizard",
    "anchor",
    "basket",
    "cotton",
    "desert",
    "falcon",
    "harbor",
    "island",
    "lemon",
    "mirror",
    "ocean",
    "pepper",
    "quartz",
    "shadow",
    "tiger",
    "valley",
    "walnut",
    "zebra",
    "copper",
    "meadow",
]


def gen_vigenere(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """2 + d//2 plain words enciphered with a key of length 1 (Caesar) up to 5: the words
    and the key length take turns to grow, so every level is larger than the one below."""
    words = [rng.choice(_WORDS) for _ in range(2 + difficulty // 2)]
    key_len = 1 + (difficulty - 1) // 2
    key = "".join(rng.choice("bcdefghijklmnopqrstuvwxyz") for _ in range(key_len))
    plain = " ".join(words)
    out: list[str] = []
    k = 0
    for ch in plain:
        if ch == " ":
            out.append(ch)
            continue
        shift = ord(key[k % key_len]) - 97
        out.append(chr((ord(ch) - 97 + shift) % 26 + 97))
        k += 1
    cipher = "".join(out)
    return {"ciphertext": cipher, "key": key}, [cipher, key]


def solve_vigenere_ord(inputs: Inputs) -> str:
    """Subtract key shifts with character arithmetic."""
    key = str(inputs["key"])
    res: list[str] = []
    k = 0
    for ch in str(inputs["ciphertext"]):
        if ch.isalpha():
            res.append(chr((ord(ch) - ord(key[k % len(key)])) % 26 + 97))
            k += 1
        else:
            res.append(ch)
    return "".join(res)


_ALPHA = "abcdefghijklmnopqrstuvwxyz"
_TABLES = {c: str.maketrans(_ALPHA[i:] + _ALPHA[:i], _ALPHA) for i, c in enumerate(_ALPHA)}


def solve_vigenere_table(inputs: Inputs) -> str:
    """Decode word by word with per-key-letter translation tables."""
    alpha = "abcdefghijklmnopqrstuvwxyz"
    tables = {c: str.maketrans(alpha[i:] + alpha[:i], alpha) for i, c in enumerate(alpha)}
    key = str(inputs["key"])
    letters = [c for c in str(inputs["ciphertext"]) if c != " "]
    plain = [c.translate(tables[key[i % len(key)]]) for i, c in enumerate(letters)]
    words: list[str] = []
    pos = 0
    for w in str(inputs["ciphertext"]).split(" "):
        words.append("".join(plain[pos : pos + len(w)]))
        pos += len(w)
    return " ".join(words)


# --------------------------------------------------------------------------- base conversion

_BASES = (2, 3, 4, 5, 6, 7, 8, 9, 12, 16)


def gen_base(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """A number written in one base, to be rewritten in another; magnitude grows with difficulty."""
    src, dst = rng.sample(_BASES, 2)
    value = rng.randint(2 ** (3 + 2 * difficulty), 2 ** (5 + 2 * difficulty))
    digits = ""
    v = value
    while v:
        v, r = divmod(v, src)
        digits = _DIGITS[r] + digits
    return {"number": digits, "from": src, "to": dst}, [digits, str(src), str(dst)]


def solve_base_divmod(inputs: Inputs) -> str:
    """Parse with ``int(s, base)``, emit by repeated divmod."""
    value = int(str(inputs["number"]), int(inputs["from"]))
    base = int(inputs["to"])
    out: list[str] = []
    while value:
        value, r = divmod(value, base)
        out.append(_DIGITS[r])
    return "".join(reversed(out)) or "0"


def solve_base_powers(inputs: Inputs) -> str:
    """Parse by Horner's rule, emit by descending powers of the target base."""
    src, dst = int(inputs["from"]), int(inputs["to"])
    value = 0
    for ch in str(inputs["number"]):
        value = value * src + "0123456789abcdef".index(ch)
    power = 1
    while power * dst <= value:
        power *= dst
    out = ""
    while power >= 1:
        d = value // power
        out += "0123456789abcdef"[d]
        value -= d * power
        power //= dst
    return out


# --------------------------------------------------------------------------- custom sort

_SORT_RULES = (
    "by the sum of their decimal digits, ascending; ties broken by value, descending",
    "by remainder modulo {p}, ascending; ties broken by value, ascending",
    "by the number of 1s in their binary representation, descending; ties broken by value, ascending",
    "by their last decimal digit, ascending; ties broken by value, descending",
    "by distance from {p}, ascending; ties broken by value, ascending",
)


def gen_sort(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """4 + difficulty distinct integers and one of five two-level ordering rules."""
    n = 4 + difficulty
    nums = rng.sample(range(1, 20 + 12 * difficulty), n)
    rule = rng.randrange(len(_SORT_RULES))
    param = rng.randint(3, 7) if rule == 1 else rng.randint(5, 15 + 12 * difficulty)
    text = _SORT_RULES[rule].format(p=param)
    return {"numbers": nums, "rule": rule, "param": param}, [
        ", ".join(map(str, nums)),
        text,
    ]


def solve_sort_key(inputs: Inputs) -> list[int]:
    """Sort with a tuple key."""
    rule, p = int(inputs["rule"]), int(inputs["param"])
    keys = (
        lambda x: (sum(map(int, str(x))), -x),
        lambda x: (x % p, x),
        lambda x: (-bin(x).count("1"), x),
        lambda x: (x % 10, -x),
        lambda x: (abs(x - p), x),
    )
    return sorted(inputs["numbers"], key=keys[rule])


def _digit_sum(x: int) -> int:
    total = 0
    while x:
        x, r = divmod(x, 10)
        total += r
    return total


def _ones(x: int) -> int:
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


def solve_sort_compare(inputs: Inputs) -> list[int]:
    """Insertion sort with an explicit pairwise comparator (independent of the key version)."""
    rule, p = int(inputs["rule"]), int(inputs["param"])

    def cmp(a: int, b: int) -> int:
        if rule == 0:
            da, db = _digit_sum(a), _digit_sum(b)
            return da - db if da != db else b - a
        if rule == 1:
            ra, rb = a - p * (a // p), b - p * (b // p)
            return ra - rb if ra != rb else a - b
        if rule == 2:
            oa, ob = _ones(a), _ones(b)
            return ob - oa if oa != ob else a - b
        if rule == 3:
            la, lb = int(str(a)[-1]), int(str(b)[-1])
            return la - lb if la != lb else b - a
        xa, xb = max(a - p, p - a), max(b - p, p - b)
        return xa - xb if xa != xb else a - b

    out: list[int] = []
    for x in inputs["numbers"]:
        i = len(out)
        while i > 0 and cmp(out[i - 1], x) > 0:
            i -= 1
        out.insert(i, x)
    return out


# --------------------------------------------------------------------------- stack machine


def _stack_options(stack: list[int], difficulty: int) -> list[str]:
    """The instructions a program may use next: arithmetic from level 1, ``dup`` and ``swap``
    from level 3, ``pop`` and ``mul`` from level 6."""
    options = ["push", "push"]
    if stack and difficulty >= 3:
        options.append("dup")
    if len(stack) >= 2:
        options += ["add", "sub", "add", "sub"]
        if difficulty >= 3:
            options.append("swap")
        if difficulty >= 6:
            options.append("pop")
            if abs(stack[-1] * stack[-2]) <= 200:
                options.append("mul")
    return options


_DELTA = {"push": 1, "dup": 1, "swap": 0, "pop": -1, "add": -1, "sub": -1, "mul": -1}


def gen_stack(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """A valid program of exactly ``2 + STEPS[difficulty - 1]`` instructions (one length per
    level) ending in an arithmetic instruction; the instruction set grows at levels 3 and 6."""
    length = 2 + STEPS[difficulty - 1]
    prog: list[str] = []
    stack: list[int] = []
    while len(prog) < length - 1:
        left = length - 2 - len(prog)  # instructions still to choose after this one
        # keep two values on the stack for the last instruction
        options = [
            o for o in _stack_options(stack, difficulty) if len(stack) + _DELTA[o] + left >= 2
        ]
        op = rng.choice(options)
        if op == "push":
            n = rng.randint(1, 9)
            stack.append(n)
            prog.append(f"push {n}")
            continue
        prog.append(op)
        if op == "dup":
            stack.append(stack[-1])
        elif op == "pop":
            stack.pop()
        elif op == "swap":
            stack[-1], stack[-2] = stack[-2], stack[-1]
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(a + b if op == "add" else a - b if op == "sub" else a * b)
    prog.append(rng.choice(("add", "sub")))
    return {"program": prog}, ["\n".join(prog)]


def solve_stack_list(inputs: Inputs) -> int:
    """Interpret with a Python list as the stack."""
    stack: list[int] = []
    for ins in inputs["program"]:
        parts = ins.split()
        op = parts[0]
        if op == "push":
            stack.append(int(parts[1]))
        elif op == "dup":
            stack.append(stack[-1])
        elif op == "pop":
            stack.pop()
        elif op == "swap":
            stack[-1], stack[-2] = stack[-2], stack[-1]
        else:
            b = stack.pop()
            a = stack.pop()
            stack.append(a + b if op == "add" else a - b if op == "sub" else a * b)
    return stack[-1]


Cons = tuple[int, Any] | None


def solve_stack_cons(inputs: Inputs) -> int:
    """Interpret with an immutable cons-list stack and a dispatch table."""

    def binary(f: Any) -> Any:
        return lambda s, _: (f(s[1][0], s[0]), s[1][1])

    table: dict[str, Any] = {
        "push": lambda s, arg: (int(arg), s),
        "dup": lambda s, _: (s[0], s),
        "pop": lambda s, _: s[1],
        "swap": lambda s, _: (s[1][0], (s[0], s[1][1])),
        "add": binary(lambda a, b: a + b),
        "sub": binary(lambda a, b: a - b),
        "mul": binary(lambda a, b: a * b),
    }
    stack: Cons = None
    for ins in inputs["program"]:
        name, _, arg = ins.partition(" ")
        stack = table[name](stack, arg)
    assert stack is not None
    return int(stack[0])


# --------------------------------------------------------------------------- text-only solvers


def text_rewrite(question: str) -> str:
    """Read the start string, the rules in order and the step budget; rewrite."""
    text = between(question, "Start with the string ", ".")
    rules = findall(r"rule \d+: (\w+) -> (\w+)", question)
    for _ in range(number(between(question, "Perform at most "))):
        hit = next(((lhs, rhs) for lhs, rhs in rules if lhs in text), None)
        if hit is None:
            break
        at = text.find(hit[0])
        text = text[:at] + hit[1] + text[at + len(hit[0]) :]
    return text


def text_vigenere(question: str) -> str:
    """Read the ciphertext and the key; shift each letter back by its key letter."""
    cipher = between(question, "The text ", " was encrypted")
    key = between(question, "using the key ", ":")
    out, k = [], 0
    for ch in cipher:
        if ch == " ":
            out.append(ch)
            continue
        out.append(_ALPHA[(_ALPHA.index(ch) - _ALPHA.index(key[k % len(key)])) % 26])
        k += 1
    return "".join(out)


def text_base(question: str) -> str:
    """Read the digits and both bases; convert through an integer."""
    digits = between(question, "The number ", " is written")
    value = int(digits, number(between(question, "in base ")))
    target = number(between(question, "Write it in base "))
    out = ""
    while value:
        value, r = divmod(value, target)
        out = _DIGITS[r] + out
    return out or "0"


def _sort_key(rule: str, param: int) -> Any:
    if rule.startswith("by the sum"):
        return lambda x: (sum(map(int, str(x))), -x)
    if rule.startswith("by remainder"):
        return lambda x: (x % param, x)
    if rule.startswith("by the number of 1s"):
        return lambda x: (-bin(x).count("1"), x)
    if rule.startswith("by their last"):
        return lambda x: (x % 10, -x)
    if rule.startswith("by distance"):
        return lambda x: (abs(x - param), x)
    raise ValueError(f"unknown rule {rule!r}")


def text_sort(question: str) -> list[int]:
    """Read the numbers and the rule (with its parameter); sort by the rule's key."""
    match = re.match(r"Sort the numbers ([\d, ]+?) (by .*)\.\n", question)
    if match is None:
        raise ValueError("no numbers and rule")
    numbers = [int(x) for x in match.group(1).split(", ")]
    rule = match.group(2)
    params = re.findall(r"(?:modulo|from) (\d+)", rule)
    return sorted(numbers, key=_sort_key(rule, int(params[0]) if params else 0))


def text_stack(question: str) -> int:
    """Read the program lines; run them on a list."""
    stack: list[int] = []
    for line in between(question, "per line:\n", "\npush n puts").split("\n"):
        op, _, arg = line.partition(" ")
        if op == "push":
            stack.append(int(arg))
        elif op == "dup":
            stack.append(stack[-1])
        elif op == "pop":
            stack.pop()
        elif op == "swap":
            stack[-2:] = stack[-1], stack[-2]
        else:
            b, a = stack.pop(), stack.pop()
            stack.append({"add": a + b, "sub": a - b, "mul": a * b}[op])
    return stack[-1]


FAMILIES = (
    Family(
        id="string_rewrite",
        version="4",
        category="symbolic",
        title="String rewriting",
        template=(
            "Start with the string [Input Slot 1]. Rewrite rules, in priority order: "
            "[Input Slot 2]. At each step, take the first rule (lowest number) whose left side "
            "occurs in the string and replace the leftmost occurrence of that left side with its "
            "right side. Perform at most [Input Slot 3] steps, stopping early if no rule applies. "
            "What is the final string?"
        ),
        generate=gen_rewrite,
        validators=(solve_rewrite_replace, solve_rewrite_scan),
        answer_format="Answer with the final string only.",
        size=lambda inputs: int(inputs["steps"]) + len(inputs["rules"]) + len(inputs["start"]),
        text_solver=text_rewrite,
        trivial=lambda inputs: solve_rewrite_replace(inputs) == inputs["start"],
    ),
    Family(
        id="vigenere_decode",
        version="2",
        category="symbolic",
        title="Vigenere decoding",
        template=(
            "The text [Input Slot 1] was encrypted with a Vigenere cipher using the key "
            "[Input Slot 2]: each letter was shifted forward in the alphabet (wrapping from z to "
            "a) by the position of the matching key letter (a=0, b=1, ..., z=25). The key repeats "
            "and advances only on letters; spaces are kept unchanged. What is the original text?"
        ),
        generate=gen_vigenere,
        validators=(solve_vigenere_ord, solve_vigenere_table),
        answer_format="Answer with the decrypted text only, in lowercase.",
        size=lambda inputs: len(inputs["key"]) + len(str(inputs["ciphertext"]).split()),
        text_solver=text_vigenere,
    ),
    Family(
        id="base_conversion",
        version="2",
        category="symbolic",
        title="Base conversion",
        template=(
            "The number [Input Slot 1] is written in base [Input Slot 2] (digits above 9 are "
            "a, b, c, ...). Write it in base [Input Slot 3]."
        ),
        generate=gen_base,
        validators=(solve_base_divmod, solve_base_powers),
        answer_format="Answer with the digits only (lowercase letters for digits above 9).",
        size=lambda inputs: int(str(inputs["number"]), int(inputs["from"])).bit_length(),
        text_solver=text_base,
    ),
    Family(
        id="custom_sort",
        version="2",
        category="symbolic",
        title="Sorting by a custom rule",
        template="Sort the numbers [Input Slot 1] [Input Slot 2].",
        generate=gen_sort,
        validators=(solve_sort_key, solve_sort_compare),
        answer_format="Answer with the sorted numbers separated by commas.",
        size=lambda inputs: len(inputs["numbers"]),
        text_solver=text_sort,
    ),
    Family(
        id="stack_machine",
        version="4",
        category="symbolic",
        title="Stack machine output",
        template=(
            "A stack machine starts with an empty stack and runs this program, one instruction "
            "per line:\n[Input Slot 1]\n"
            "push n puts n on top; dup copies the top; pop removes the top; swap exchanges the "
            "top two; add, sub and mul pop the top value b and then a, and push a+b, a-b or a*b. "
            "What value is on top of the stack at the end?"
        ),
        generate=gen_stack,
        validators=(solve_stack_list, solve_stack_cons),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["program"]),
        text_solver=text_stack,
    ),
)
