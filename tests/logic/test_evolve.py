"""The evolution loop with a scripted agent: propose, independent validators, gates, refine,
playbook, saving, loading the result through the registry, and the ``evolve`` command."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from veritask._cli import logic_gate_cmds
from veritask.logic import (
    EvolveSettings,
    Family,
    FileFamily,
    GateSettings,
    Playbook,
    evolve,
    get_family,
    make_instance,
)
from veritask.logic._draft import parse_draft, parse_validator, strip_validators
from veritask.model import CostLedger, ScriptedProvider, register_provider

Messages = list[dict[str, Any]]
GATES = GateSettings(per_level=20, consensus_per_level=5)

SUM_FILE = """
FAMILY = {
    "id": "evolved_sum",
    "version": "1",
    "category": "symbolic",
    "title": "Signed list sum",
    "template": "Add up these numbers: [Input Slot 1]. What is the total?",
    "answer_format": "Answer with the integer only.",
}


def generate(difficulty, rng):
    numbers = [rng.randint(-20 * difficulty, 20 * difficulty) for _ in range(2 + difficulty)]
    return {"numbers": numbers}, [", ".join(map(str, numbers))]


def solution(inputs):
    return sum(inputs["numbers"])


def size(inputs):
    return len(inputs["numbers"])


def solve_text(question):
    import re

    listed = re.search(r": ([-0-9, ]+)[.?]", question)
    return sum(int(n) for n in listed.group(1).split(", ")) if listed else None
"""
PARITY_FILE = (
    SUM_FILE.replace(
        "Add up these numbers: [Input Slot 1]. What is the total?",
        "Is the total of these numbers ever odd or even, other than one billion: [Input Slot 1]?",
    )
    .replace('return sum(inputs["numbers"])', 'return sum(inputs["numbers"]) != 10**9')
    .replace("    return total\n", "    return total != 10**9\n")
    .replace(
        'return sum(int(n) for n in listed.group(1).split(", ")) if listed else None',
        'return sum(int(n) for n in listed.group(1).split(", ")) != 10**9 if listed else None',
    )
)
PARITY_FILE = PARITY_FILE.replace("Answer with the integer only.", "Answer yes or no.")
SLOTS_FILE = SUM_FILE.replace(
    "numbers: [Input Slot 1].", "numbers ([Input Slot 2]): [Input Slot 1]."
)
LESSONS = '```json\n{"lessons": ["Sum-like answers spread well across difficulties."]}\n```'
POOL_SUM = """```python
from __future__ import annotations
STEP = 1

def _add(a, b):
    return a + b * STEP

def solution(inputs):
    total = 0
    for n in inputs["numbers"]:
        total = _add(total, n)
    return total
```"""
POOL_PARITY = "```python\ndef solution(inputs):\n    return sum(inputs['numbers']) != 10**9\n```"
VERDICT = json.dumps(
    {
        **{
            c: {"passed": True, "reason": "ok"}
            for c in (
                "well_posed",
                "unambiguous_answer_format",
                "answer_derivable",
                "difficulty_scaling",
                "no_leaked_answer",
            )
        },
        "verdict": "pass",
        "feedback": "",
    }
)


def _block(source: str, extra: str = "") -> str:
    return f"Here is the family.\n```python\n{source}```\n{extra}"


def agent(proposals: list[str], refinement: str | None = None) -> ScriptedProvider:
    """A scripted agent: the proposals in turn (then ``refinement`` for every refine round),
    an independent validator builder, a reviewer that passes, and a blind solver that computes
    the answer from the question."""
    queue = list(proposals)

    def script(messages: Messages, tools: Any) -> str:
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        last = messages[-1]["content"]
        if system.startswith("You are a code reasoning agent"):
            if last.startswith("Round") and refinement is not None:
                return refinement
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if system.startswith("You write independent validators"):
            return POOL_PARITY if "even" in last else POOL_SUM
        if system.startswith("You review task families"):
            return VERDICT
        return _solve(last)

    return ScriptedProvider(script)


def _solve(prompt: str) -> str:
    numbers = [int(n) for n in re.findall(r"-?\d+", prompt.split("## Problem")[1].split("\n\n")[1])]
    if "even" in prompt:
        return "\\boxed{" + ("yes" if sum(numbers) != 10**9 else "no") + "}"
    return f"\\boxed{{{sum(numbers)}}}"


def _in_process(path: Path) -> Family:
    """The saved file run in-process (trusted test code), with every validator."""
    scope: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    meta = scope["FAMILY"]
    names = [n for n in scope if n == "solution" or n.startswith("solution_")]
    return Family(
        id=meta["id"],
        version=meta["version"],
        category=meta["category"],
        title=meta["title"],
        template=meta["template"],
        generate=scope["generate"],
        validators=tuple(scope[n] for n in names),
        answer_format=meta["answer_format"],
    )


@pytest.fixture(autouse=True)
def _no_family_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERITASK_FAMILY_PATH", raising=False)


def run(provider: ScriptedProvider, out: Path, **kw: Any) -> Any:
    kw.setdefault("gates", GATES)
    ledger = kw.pop("ledger", None)
    return evolve("arithmetic_chain", provider, EvolveSettings(out_dir=out, **kw), ledger=ledger)


def test_evolved_family_passes_is_saved_and_loads_through_the_registry(tmp_path: Path) -> None:
    provider = agent([_block(SUM_FILE, LESSONS)])
    ledger = CostLedger()
    result = run(provider, tmp_path, ledger=ledger)
    assert result.accepted and result.family == "evolved_sum", result.to_json()["rounds"]
    assert [r.outcome for r in result.rounds] == ["accepted"]
    path = tmp_path / "evolved_sum.py"
    assert result.path == str(path) and (tmp_path / "evolved_sum.gates.json").exists()
    gates = json.loads((tmp_path / "evolved_sum.gates.json").read_text())
    assert gates["passed"] and gates["mode"] == "full"
    assert gates["gates"]["consensus"]["validators"] == [
        "solution",
        "solution_pool_1",
        "solution_pool_2",
    ]
    assert set(ledger.modules) == {"propose", "validators", "review", "blind_review"}
    assert ledger.modules["validators"].calls == 2
    # the validator builder never saw the agent's validator
    builder = [
        r for r in provider.requests if r["messages"][0]["content"].startswith("You write indep")
    ]
    assert builder and all(
        'return sum(inputs["numbers"])' not in r["messages"][1]["content"] for r in builder
    )
    # loads like a built-in and gives the instances its code gives in-process
    family = get_family("evolved_sum", [tmp_path])
    assert isinstance(family, FileFamily) and len(family.validators) == 3
    local = _in_process(path)
    for difficulty in (1, 5, 10):
        for index in range(3):
            a = make_instance(family, difficulty, split="test", seed=9, index=index)
            b = make_instance(local, difficulty, split="test", seed=9, index=index)
            assert (a.question, a.answer, dict(a.inputs)) == (b.question, b.answer, dict(b.inputs))
    playbook = json.loads((tmp_path / "playbook.json").read_text())
    assert any(e["text"].startswith("Sum-like answers") for e in playbook["entries"])
    family.close()


def test_a_degenerate_candidate_is_refined_in_round_2_and_accepted(tmp_path: Path) -> None:
    provider = agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE))
    result = run(provider, tmp_path)
    assert [r.outcome for r in result.rounds] == ["rejected", "accepted"]
    first = result.rounds[0]
    assert any("answer 'yes'" in p or "answer 'no'" in p for p in first.problems), first.problems
    assert first.gates is not None and first.gates["skipped"]["review"].startswith("gate1_static")
    refine = [r for r in provider.requests if r["messages"][-1]["content"].startswith("Round 1")]
    assert refine and "of instances" in refine[0]["messages"][-1]["content"]
    keys = {e["key"] for e in json.loads((tmp_path / "playbook.json").read_text())["entries"]}
    assert "degenerate" in keys
    assert get_family("evolved_sum", [tmp_path]).id == "evolved_sum"


def test_a_slot_mismatch_is_caught_and_refined(tmp_path: Path) -> None:
    result = run(agent([_block(SLOTS_FILE)], refinement=_block(SUM_FILE)), tmp_path)
    assert [r.outcome for r in result.rounds] == ["error", "accepted"]
    assert "template has 2 slots, generator gave 1" in result.rounds[0].problems[0]


def test_a_candidate_that_never_passes_is_rejected_after_t_max_rounds(tmp_path: Path) -> None:
    provider = agent([_block(PARITY_FILE)], refinement=_block(PARITY_FILE))
    result = run(provider, tmp_path, t_max=2, playbook_limit=3)
    assert not result.accepted and [r.outcome for r in result.rounds] == ["rejected"] * 2
    assert not list(tmp_path.glob("*.py")) and not (tmp_path / "evolved_sum.gates.json").exists()
    playbook = json.loads((tmp_path / "playbook.json").read_text())
    assert playbook["limit"] == 3 and len(playbook["entries"]) <= 3
    agent_calls = [r for r in provider.requests if "code reasoning" in r["messages"][0]["content"]]
    assert len(agent_calls) == 2


def test_malformed_agent_output_is_repaired_or_rejected(tmp_path: Path) -> None:
    ledger = CostLedger()
    fixed = run(agent(["I would make it harder.", _block(SUM_FILE)]), tmp_path / "a", ledger=ledger)
    assert fixed.accepted and ledger.modules["propose"].calls == 2
    hopeless = run(agent(["no code, sorry"]), tmp_path / "b", t_max=1)
    assert not hopeless.accepted and hopeless.rounds[0].outcome == "error"
    assert "no ```python block" in hopeless.rounds[0].problems[0]


def test_same_seed_and_answers_give_identical_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        run(agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE)), tmp_path / name)
    for file in ("evolved_sum.py", "evolved_sum.gates.json", "playbook.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


def test_each_round_writes_a_deterministic_record_under_its_stable_id(tmp_path: Path) -> None:
    for name in ("a", "b"):
        run(
            agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE)),
            tmp_path / name,
            rounds_dir=tmp_path / name / "rounds",
        )
    files = sorted(p.name for p in (tmp_path / "a" / "rounds").iterdir())
    assert files == ["arithmetic_chain.round1.json", "arithmetic_chain.round2.json"]
    for file in files:
        a = (tmp_path / "a" / "rounds" / file).read_bytes()
        assert a == (tmp_path / "b" / "rounds" / file).read_bytes()
    first = json.loads((tmp_path / "a" / "rounds" / files[0]).read_text())
    assert first["id"] == "arithmetic_chain.round1" and first["seed_family"] == "arithmetic_chain"
    assert (first["round"], first["stage"], first["outcome"]) == (1, "propose", "rejected")
    assert not list((tmp_path / "a" / "rounds").glob(".*"))  # no temporary file left behind


def test_evolve_settings_own_the_seed_and_config_of_their_gates(tmp_path: Path) -> None:
    settings = EvolveSettings(out_dir=tmp_path, seed=7, gates=GATES)
    assert settings.gate_settings().seed == 7 and settings.gate_settings().per_level == 20
    assert settings.playbook_file == tmp_path / "playbook.json"
    with pytest.raises(ValueError, match="set seed and config on EvolveSettings"):
        EvolveSettings(out_dir=tmp_path, seed=7, gates=GateSettings(seed=3))


def test_playbook_is_bounded_and_drops_the_least_useful() -> None:
    book = Playbook(limit=3)
    book.add("a", "lesson a")
    book.add("b", "lesson b")
    book.add("a", "lesson a, reworded")  # reinforced: score 2
    book.add("c", "lesson c")
    book.add("d", "lesson d")  # full: drops b (score 1, oldest)
    assert [e.key for e in book.entries] == ["a", "c", "d"]
    assert book.lessons()[0] == "lesson a, reworded"
    for i in range(50):
        book.add(f"k{i}", f"lesson {i}")
        assert len(book.entries) <= 3
    assert Playbook.from_json(book.to_json()) == book


def test_pool_validators_are_wrapped_so_helpers_cannot_clash() -> None:
    wrapped = parse_validator(POOL_SUM, 2)
    tree = ast.parse(wrapped)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["solution_pool_2"]
    scope: dict[str, Any] = {}
    exec(wrapped, scope)
    assert scope["solution_pool_2"]({"numbers": [1, 2, 3]}) == 6
    with pytest.raises(ValueError, match="def solution"):
        parse_validator("```python\ndef solve(inputs):\n    return 1\n```")
    with pytest.raises(ValueError, match="global"):
        parse_validator("```python\nX = 1\ndef solution(inputs):\n    global X\n    return X\n```")
    assert "def solution(" not in strip_validators(SUM_FILE)
    assert "def generate(" in strip_validators(SUM_FILE)
    with pytest.raises(ValueError, match="already taken"):
        parse_draft(_block(SUM_FILE), taken={"evolved_sum"})


# --- the evolve command ------------------------------------------------------------------------


def _invoke(*args: str) -> tuple[int, str]:
    group = click.Group("logic")
    logic_gate_cmds.register(group)
    result = CliRunner().invoke(group, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _register(scheme: str, make: Callable[[], ScriptedProvider]) -> None:
    register_provider(scheme, lambda argument, **options: make())


def test_evolve_command_json_and_the_result_gates_from_the_registry(tmp_path: Path) -> None:
    _register("evolvetest", lambda: agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE)))
    out = tmp_path / "evolved"
    code, text = _invoke(
        "evolve", "arithmetic_chain", "--model", "evolvetest", "--out", str(out),
        "--rounds", "2", "--per-level", "20", "--json",
    )  # fmt: skip
    assert code == 0, text
    data = json.loads(text)
    assert set(data) == {
        "seed_family",
        "accepted",
        "family",
        "path",
        "gates_path",
        "rounds",
        "costs",
        "playbook",
    }
    assert data["accepted"] and [r["outcome"] for r in data["rounds"]] == ["rejected", "accepted"]
    assert set(data["costs"]) == {
        "propose",
        "refine",
        "validators",
        "review",
        "blind_review",
        "total",
    }
    code, text = _invoke(
        "gate", "evolved_sum", "--families-dir", str(out), "--per-level", "20", "--json"
    )
    assert code == 0 and json.loads(text)["passed"]


def test_evolve_command_exits_1_when_nothing_passes(tmp_path: Path) -> None:
    _register("neverpasses", lambda: agent([_block(PARITY_FILE)], refinement=_block(PARITY_FILE)))
    code, text = _invoke(
        "evolve", "arithmetic_chain", "--model", "neverpasses", "--out", str(tmp_path),
        "--rounds", "1", "--per-level", "20",
    )  # fmt: skip
    assert code == 1 and "round 1 (propose): rejected evolved_sum" in text
    assert "rejected after 1 round(s)" in text


# --- rounds on the pipeline: resume, refusal, the sandbox opt-out ------------------------------


class _Killed(BaseException):
    """Stands for the process being killed: nothing catches it."""


class _Killing:
    """Passes requests to ``inner`` until one matches ``kill``; that one kills the run."""

    def __init__(self, inner: ScriptedProvider, kill: Callable[[Messages], bool]) -> None:
        self.inner, self.kill, self.name = inner, kill, inner.name

    async def generate(self, messages: Messages, *args: Any, **kwargs: Any) -> Any:
        if self.kill(messages):
            raise _Killed
        return await self.inner.generate(messages, *args, **kwargs)


def _first_refine(messages: Messages) -> bool:
    return str(messages[-1]["content"]).startswith("Round 1")


OUTPUTS = ("evolved_sum.py", "evolved_sum.gates.json", "playbook.json")


def _evolution(out: Path) -> dict[str, Any]:
    text = (out / "evolved_sum.evolution.json").read_text()
    data: dict[str, Any] = json.loads(text.replace(str(out), "OUT"))
    return data


def test_a_killed_run_resumes_after_the_last_committed_round_without_asking_again(
    tmp_path: Path,
) -> None:
    def provider() -> ScriptedProvider:
        return agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE))

    whole = provider()
    run(whole, tmp_path / "a")
    first = provider()
    with pytest.raises(_Killed):  # killed in round 2, at the agent's first refine call
        run(_Killing(first, _first_refine), tmp_path / "b")  # type: ignore[arg-type]
    run_dir = tmp_path / "b" / "runs" / "arithmetic_chain"
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "arithmetic_chain.round1.json",
        "run-manifest.json",
    ]
    assert not (tmp_path / "b" / "evolved_sum.py").exists()
    rest = provider()
    result = run(rest, tmp_path / "b")
    assert [r.outcome for r in result.rounds] == ["rejected", "accepted"]
    # round 1's calls are not made again: the two runs together made the uninterrupted calls
    assert len(first.requests) + len(rest.requests) == len(whole.requests)
    assert rest.requests == whole.requests[len(first.requests) :]
    for name in OUTPUTS:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert _evolution(tmp_path / "b") == _evolution(tmp_path / "a")
    # a finished run is not played again; outputs a kill left unwritten are written again
    for name in (*OUTPUTS, "runs/arithmetic_chain/result.json"):
        (tmp_path / "b" / name).unlink()
    idle = agent([])
    again = run(idle, tmp_path / "b")
    assert idle.requests == [] and again.to_json() == result.to_json()
    for name in OUTPUTS:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_round_records_are_the_units_and_more_rounds_continue_a_rejected_run(
    tmp_path: Path,
) -> None:
    never = agent([_block(PARITY_FILE)], refinement=_block(PARITY_FILE))
    rejected = run(never, tmp_path, t_max=1, rounds_dir=tmp_path / "plain")
    assert not rejected.accepted
    unit = json.loads((tmp_path / "runs/arithmetic_chain/arithmetic_chain.round1.json").read_text())
    plain = json.loads((tmp_path / "plain/arithmetic_chain.round1.json").read_text())
    assert {k: unit[k] for k in plain} == plain
    assert {"conversation", "playbook", "cost", "source"} <= set(unit) - set(plain)
    more = agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE))
    result = run(more, tmp_path, t_max=2, rounds_dir=tmp_path / "plain")
    assert [r.outcome for r in result.rounds] == ["rejected", "accepted"]
    assert not any("code reasoning" in r["messages"][0]["content"] and len(r["messages"]) == 2
                   for r in more.requests)  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == [
        "arithmetic_chain.round1.json",
        "arithmetic_chain.round2.json",
    ]


def test_a_rerun_with_another_config_is_refused_naming_the_field(tmp_path: Path) -> None:
    from veritask.pipeline import RunConflict

    run(agent([_block(SUM_FILE)]), tmp_path)
    for settings, says in (
        ({"seed": 1}, "seed: was 0, now 1"),
        ({"extra_validators": 1}, "extra_validators: was 2, now 1"),
        ({"gates": GateSettings(per_level=30)}, "gates.per_level: was 20, now 30"),
    ):
        provider = agent([_block(SUM_FILE)])
        with pytest.raises(RunConflict, match=re.escape(says)):
            run(provider, tmp_path, **settings)
        assert provider.requests == []
    elsewhere = run(agent([_block(SUM_FILE)]), tmp_path / "x", seed=1, run_dir=tmp_path / "r")
    assert elsewhere.accepted


def test_evolve_takes_the_sandbox_opt_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from veritask.logic import SandboxSupport, SandboxUnavailable, _sandbox

    missing = SandboxSupport(0, False, None, ("no Landlock (evolve argument test)",))
    monkeypatch.setattr(_sandbox, "sandbox_support", lambda: missing)
    provider = agent([_block(SUM_FILE)])
    with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox"):
        run(provider, tmp_path)
    assert provider.requests == []  # refused before any model call
    with pytest.warns(RuntimeWarning, match="WITHOUT the OS sandbox"):
        result = evolve(
            "arithmetic_chain",
            provider,
            EvolveSettings(out_dir=tmp_path, gates=GATES),
            unsafe_no_sandbox=True,
        )
    assert result.accepted


def test_evolve_command_refuses_a_rerun_with_another_seed(tmp_path: Path) -> None:
    _register("evolveonce", lambda: agent([_block(SUM_FILE)]))
    args = ["evolve", "arithmetic_chain", "--model", "evolveonce", "--out", str(tmp_path)]
    args += ["--per-level", "20"]
    assert _invoke(*args)[0] == 0
    group = click.Group("logic")
    logic_gate_cmds.register(group)
    refused = CliRunner().invoke(group, [*args, "--seed", "3"])
    assert refused.exit_code == 1
    assert "(config differs in seed: was 0, now 3);" in refused.output
