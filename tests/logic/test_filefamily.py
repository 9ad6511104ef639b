"""Family files: parsed without running, executed only in a sandboxed worker, loaded by the
registry like built-ins, identical to running the same code in-process."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from veritask.logic import (
    FAMILY_PATH_ENV,
    Family,
    FamilyCodeError,
    FamilyFileError,
    FileFamily,
    GateSettings,
    SandboxCall,
    SandboxLimits,
    SandboxWorker,
    all_families,
    family_from_source,
    get_family,
    make_instance,
    parse_family_source,
    run_gates,
    score_answer,
)

SUM_FAMILY = r'''
"""Sum of a list, with a set-based tie to show the fixed hash seed."""

import random  # allowed, but generate must only use its rng argument

FAMILY = {
    "id": "file_sum",
    "version": "1",
    "category": "symbolic",
    "title": "List sum",
    "template": "Add up these [Input Slot 1] numbers: [Input Slot 2]. What is the total?",
    "answer_format": "Answer with the integer only.",
    "tags": ["test"],
}


def generate(difficulty, rng):
    k = 2 + difficulty
    numbers = [rng.randint(1, 10 * difficulty) for _ in range(k)]
    print("noise on stdout must not break the protocol")
    return {"numbers": numbers, "pairs": [(1, 2)]}, [str(k), ", ".join(map(str, numbers))]


def solution_loop(inputs):
    total = 0
    for n in inputs["numbers"]:
        total += n
    return total


def solution_builtin(inputs):
    return sum(inputs["numbers"])


def check(inputs, answer_text):
    return answer_text.strip() == str(sum(inputs["numbers"]))


def size(inputs):
    return len(inputs["numbers"])


def solve_text(question):
    import re

    listed = re.search(r"numbers: ([-0-9, ]+)\. What", question)
    return sum(int(n) for n in listed.group(1).split(", ")) if listed else None
'''


def _in_process(source: str) -> Family:
    """The same file run in-process (trusted test code only), as a plain Family."""
    scope: dict[str, Any] = {}
    exec(compile(source, "<in-process>", "exec"), scope)
    meta = scope["FAMILY"]
    return Family(
        id=meta["id"],
        version=meta["version"],
        category=meta["category"],
        title=meta["title"],
        template=meta["template"],
        generate=scope["generate"],
        validators=(scope["solution_loop"], scope["solution_builtin"]),
        answer_format=meta["answer_format"],
    )


@pytest.fixture(scope="module")
def family_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("families")
    (directory / "file_sum.py").write_text(SUM_FAMILY, encoding="utf-8")
    (directory / "_helper.py").write_text("not a family file", encoding="utf-8")
    yield directory
    family = get_family("file_sum", [directory])
    assert isinstance(family, FileFamily)
    family.close()


def test_metadata_is_read_without_running_the_file() -> None:
    spec = parse_family_source(SUM_FAMILY + "\nraise SystemExit('never runs')\n")
    assert spec.id == "file_sum" and spec.meta["tags"] == ["test"]
    assert spec.validators == ("solution_loop", "solution_builtin")
    assert spec.has_check and spec.has_size


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.replace("FAMILY = {", "OTHER = {"), "no module-level FAMILY"),
        (lambda s: s.replace('"file_sum"', '"File-Sum"'), "snake_case"),
        (lambda s: s.replace('"symbolic"', '"magic"'), "is not one of"),
        (lambda s: s.replace("[Input Slot 2]", "[Input Slot 3]"), "no gap"),
        (
            lambda s: s.replace("def generate(difficulty, rng)", "def gen(difficulty, rng)"),
            "generate",
        ),
        (lambda s: s.replace("def solution_builtin", "def other"), "at least 2 validator"),
        (lambda s: s.replace("def solution_loop(inputs)", "def solution_loop(a, b)"), "argument"),
        (lambda s: s.replace('"version": "1",', '"version": "1", "author": "x",'), "unknown keys"),
        (lambda s: s.replace('"title": "List sum"', '"title": "List" + "sum"'), "literal dict"),
        (lambda s: s + "\ndef broken(:\n", "syntax error"),
    ],
)
def test_invalid_files_are_rejected_with_a_reason(edit: Any, message: str) -> None:
    with pytest.raises(FamilyFileError, match=message):
        parse_family_source(edit(SUM_FAMILY))


def test_registry_loads_files_like_builtins(family_dir: Path, monkeypatch: Any) -> None:
    family = get_family("file_sum", [family_dir])
    assert isinstance(family, FileFamily) and family.tags == ("test",)
    assert get_family("file_sum", [family_dir]) is family  # one worker per loaded file
    everything = all_families([family_dir])
    assert "file_sum" in everything and "arithmetic_chain" in everything
    monkeypatch.setenv(FAMILY_PATH_ENV, str(family_dir))
    assert get_family("file_sum") is family
    assert get_family("arithmetic_chain").id == "arithmetic_chain"
    monkeypatch.delenv(FAMILY_PATH_ENV)
    with pytest.raises(KeyError, match="unknown family 'file_sum'"):
        get_family("file_sum")


def test_instances_match_the_code_run_in_process(family_dir: Path) -> None:
    sandboxed = get_family("file_sum", [family_dir])
    local = _in_process(SUM_FAMILY)
    for difficulty in (1, 4, 10):
        for index in range(3):
            a = make_instance(sandboxed, difficulty, seed=5, index=index)
            b = make_instance(local, difficulty, seed=5, index=index)
            assert (a.question, a.answer) == (b.question, b.answer)
            assert a.inputs == json.loads(json.dumps(b.inputs))  # tuples arrive as lists
            assert score_answer(a.answer, a, sandboxed) == 1.0
            assert score_answer(a.answer + " exactly", a, sandboxed) == 0.0
    # the rng continues where the sandboxed generate left it, as in-process
    rng_a, rng_b = random.Random(11), random.Random(11)
    sandboxed.generate(6, rng_a)
    local.generate(6, rng_b)
    assert rng_a.random() == rng_b.random()


def test_generate_many_batches_the_same_instances(family_dir: Path) -> None:
    family = get_family("file_sum", [family_dir])
    assert isinstance(family, FileFamily)
    batch = family.generate_many([(d, random.Random(d)) for d in range(1, 11)])
    single = [family.generate(d, random.Random(d)) for d in range(1, 11)]
    assert batch == single


def test_static_gates_pass_for_a_good_file(family_dir: Path) -> None:
    settings = GateSettings(per_level=20, consensus_per_level=5)
    record = run_gates(get_family("file_sum", [family_dir]), settings=settings)
    assert record.passed, record.problems
    assert record.consensus is not None and record.consensus.instances == 50


def test_an_id_clash_is_an_error(tmp_path: Path) -> None:
    clash = SUM_FAMILY.replace('"file_sum"', '"arithmetic_chain"')
    (tmp_path / "mine.py").write_text(clash, encoding="utf-8")
    with pytest.raises(FamilyFileError, match="id 'arithmetic_chain' of a built-in"):
        get_family("arithmetic_chain", [tmp_path])
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.py").write_text(SUM_FAMILY, encoding="utf-8")
    (other / "b.py").write_text(SUM_FAMILY, encoding="utf-8")
    with pytest.raises(FamilyFileError, match="defined by both"):
        all_families([other])


ESCAPES = {
    "socket": "    import socket\n    socket.create_connection(('127.0.0.1', 9))\n",
    "raw_socket": "    import _socket\n    _socket.socket().connect(('127.0.0.1', 9))\n",
    "write": "    open('/tmp/veritask-escape.txt', 'w').write('x')\n",
    "subprocess": "    import sys\n    sys.modules['os'].system('true')\n",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_sandbox_stops_escapes_in_registry_families(name: str, tmp_path: Path) -> None:
    body = ESCAPES[name]
    source = SUM_FAMILY.replace('"file_sum"', f'"escape_{name}"').replace(
        "def generate(difficulty, rng):\n", f"def generate(difficulty, rng):\n{body}"
    )
    (tmp_path / f"escape_{name}.py").write_text(source, encoding="utf-8")
    family = get_family(f"escape_{name}", [tmp_path])
    assert isinstance(family, FileFamily)
    try:
        with pytest.raises(FamilyCodeError) as caught:
            make_instance(family, 3)
        assert caught.value.kind == "forbidden" and caught.value.function == "generate"
        record = run_gates(family, settings=GateSettings(per_level=2, consensus_per_level=1))
        assert not record.passed and any("forbidden" in p for p in record.problems)
    finally:
        family.close()
    assert not Path("/tmp/veritask-escape.txt").exists()


def test_results_must_be_json_data() -> None:
    source = SUM_FAMILY.replace('return sum(inputs["numbers"])', "return set(inputs['numbers'])")
    family = family_from_source(source)
    try:
        with pytest.raises(FamilyCodeError, match="set, not JSON data"):
            make_instance(family, 2)
    finally:
        family.close()


def test_worker_restarts_after_a_timeout_and_survives_a_cpu_limit() -> None:
    code = (
        "import time\n"
        "def slow():\n    time.sleep(30)\n"
        "def spin():\n    while True:\n        pass\n"
        "def ok(x):\n    return x + 1\n"
    )
    # the wall limit leaves room for the CPU limit to fire first on a loaded machine
    with SandboxWorker(code, SandboxLimits(cpu_seconds=0.3, wall_seconds=2.0)) as worker:
        assert worker.call("ok", [1]).value == 2
        assert worker.call("spin").kind == "cpu"
        assert worker.call("ok", [2]).value == 3 and worker.starts == 1  # same child
        results = worker.call_many(
            [SandboxCall("ok", [3]), SandboxCall("slow"), SandboxCall("ok", [4])]
        )
        assert [r.kind for r in results] == ["ok", "timeout", "ok"]
        assert results[2].value == 5 and worker.starts == 2  # restarted after the timeout


def test_code_that_fails_to_load_fails_every_call_without_restarting() -> None:
    with SandboxWorker("import socket\n") as worker:
        first, second = worker.call("f"), worker.call("f")
        assert first.kind == second.kind == "forbidden" and "socket" in (first.error or "")
        assert worker.starts == 1


def test_the_worker_accounts_for_the_cpu_its_code_uses_across_restarts() -> None:
    """Gate 1 times a family file on CPU time, the sandboxed child's included, so a loaded
    machine (wall time) cannot fail it and a busy child cannot hide its cost."""
    code = (
        "import time\n"
        "def burn(n):\n    t = time.process_time()\n"
        "    while time.process_time() - t < n:\n        pass\n    return 1\n"
        "def slow():\n    time.sleep(30)\n"
    )
    with SandboxWorker(code, SandboxLimits(cpu_seconds=2.0, wall_seconds=4.0)) as worker:
        assert worker.cpu_used() == 0.0
        before = worker.cpu_used()
        assert worker.call("burn", [0.2]).value == 1
        first = worker.cpu_used()
        assert first - before >= 0.2
        assert worker.call("slow").kind == "timeout"  # the child is replaced
        assert worker.call("burn", [0.1]).value == 1 and worker.starts == 2
        assert worker.cpu_used() - first >= 0.1  # the first child's time is kept
