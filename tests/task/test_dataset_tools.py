"""check_dataset, report_dataset, export_tau2 and the dataset loader, on a hand-built dataset."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests._hand_built import hand_built, witness_of

from veritask.env import CompiledDomain, Environment
from veritask.policy import render_wiki
from veritask.task import (
    Ask,
    CheckReport,
    DatasetDir,
    DatasetError,
    Fallback,
    RowRef,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
    check_dataset,
    export_tau2,
    load_dataset,
    report_dataset,
)

LEND_DUNE = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}
LEND_LAPSED = {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 4}
LEND_EMMA = {"member_id": "m_ana", "book_id": "b_emma", "due_step": 4}
LEND_HOBBIT = {"member_id": "m_ana", "book_id": "b_hobbit", "due_step": 4}
RETURN_EMMA = {"id": 1, "status": "RETURNED", "return_step": 3, "late_fee": 0}
DUNE = RowRef(table="books", match={"title": "Dune"})
EMMA = RowRef(table="books", match={"title": "Emma"})
HOBBIT = RowRef(table="books", match={"title": "The Hobbit"})
ASK_DUNE = Ask(
    transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE}, values={"due_step": 4}
)
ASK_RETURN = Ask(
    transaction="return_book",
    tool="update_loans",
    target=RowRef(table="loans", match={"book_id": EMMA, "status": "OPEN"}),
    values={"status": "RETURNED", "return_step": 3},
)
ASK_EMMA = Ask(
    transaction="lend_book", tool="insert_loans", refs={"book_id": EMMA}, values={"due_step": 4}
)
ASK_HOBBIT = ASK_EMMA.model_copy(update={"refs": {"book_id": HOBBIT}})


@dataclass
class Built:
    """A dataset directory and the packages in its manifest."""

    root: Path
    packages: list[TaskPackage]


def _episode(
    compiled: CompiledDomain, ds: DatasetDir, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[str, str, list[WitnessCall]]:
    """Run calls from the seed state; store s_origin and s_target; return (origin, target, witness)."""
    env = Environment(compiled)
    try:
        origin = ds.put_state(env.snapshot().data)
        witness = witness_of(env, calls)
        target = ds.put_state(env.snapshot().data)
    finally:
        env.close()
    return origin, target, witness


def _description(
    goal: str, ask: Ask, fallback: Fallback, who: str = "I am Ana Ruiz, a library member."
) -> TaskDescription:
    sub = SubGoal(
        title="Ask",
        request=goal,
        reactive_triggers=["If refused, ask why."],
        ask=ask,
        fallbacks=[fallback],
    )
    return TaskDescription(
        who_you_are=who,
        cognitive_gaps=["You do not know which books are on the shelf."],
        total_goal=goal,
        sub_goals=[sub],
    )


def _package(
    task_id: str,
    compiled: CompiledDomain,
    policy: str,
    episode: tuple[str, str, list[WitnessCall]],
    **fields: Any,
) -> TaskPackage:
    origin, target, witness = episode
    task = _description(fields.pop("goal"), fields.pop("ask"), fields.pop("fallback"))
    user = UserProfile(user_id="m_ana", name="Ana Ruiz", archetype="rookie", known_ids=["m_ana"])
    return hand_built(
        task,
        witness,
        user,
        id=task_id,
        spec_hash=compiled.spec.spec_hash(),
        policy=policy,
        origin=origin,
        target=target,
        seed=7,
        generator="hand-built",
        **fields,
    )


def write_manifest(root: Path, packages: list[TaskPackage]) -> None:
    """Replace the manifest of a dataset directory and seal it, as a generator does (the checks
    these tests exercise must hold on their own, whatever the seal says)."""
    DatasetDir(root).manifest.write_text("".join(p.model_dump_json() + "\n" for p in packages))
    DatasetDir(root).seal(packages)


@pytest.fixture
def built(tmp_path: Path, compiled: dict[str, CompiledDomain]) -> Built:
    """Four packages of the mock domain: t1 lends after a rejection, t2 returns a loan, t3 is a
    refusal (target == origin), t4 lends another book after a rejection."""
    mock = compiled["mock"]
    ds = DatasetDir(tmp_path / "data")
    policy = ds.put_policy(render_wiki(mock.spec))
    lend = _episode(
        mock,
        ds,
        [
            ("query_books", {"title": "Dune"}),
            ("insert_loans", LEND_LAPSED),
            ("insert_loans", LEND_DUNE),
        ],
    )
    give_back = _episode(
        mock,
        ds,
        [
            ("query_books", {"title": "Emma"}),
            ("query_loans", {"book_id": "b_emma", "status": "OPEN"}),
            ("update_loans", RETURN_EMMA),
        ],
    )
    refuse = _episode(mock, ds, [("insert_loans", LEND_LAPSED)])
    swap = _episode(
        mock,
        ds,
        [("query_books", {}), ("insert_loans", LEND_EMMA), ("insert_loans", LEND_HOBBIT)],
    )
    packages = [
        _package(
            "t1",
            mock,
            policy,
            lend,
            goal="Borrow Dune, due step 4.",
            ask=ASK_DUNE,
            fallback=Fallback(rule="MEMBER_ACTIVE", then=ASK_DUNE),
            difficulty="L2",
            tags=["conditional", "hidden-constraint"],
            rules_exercised=["MEMBER_ACTIVE"],
            boundary_hits=1,
        ),
        _package(
            "t2",
            mock,
            policy,
            give_back,
            goal="Return Emma, my OPEN loan: RETURNED at step 3.",
            ask=ASK_RETURN,
            fallback=Fallback(rule="LATE_FEE"),
            difficulty="L1",
            tags=["linear"],
            rules_exercised=["LATE_FEE"],
            boundary_hits=0,
        ),
        _package(
            "t3",
            mock,
            policy,
            refuse,
            goal="Borrow Dune for my friend Lee, due step 4.",
            ask=ASK_DUNE,
            fallback=Fallback(rule="MEMBER_ACTIVE"),
            difficulty="L1",
            tags=["refusal"],
            rules_exercised=["MEMBER_ACTIVE"],
            boundary_hits=1,
            refusal=True,
        ),
        _package(
            "t4",
            mock,
            policy,
            swap,
            goal="Borrow Emma, or else The Hobbit, due step 4.",
            ask=ASK_EMMA,
            fallback=Fallback(rule="BOOK_AVAILABLE", then=ASK_HOBBIT),
            difficulty="L3",
            tags=["multi-step", "adversarial"],
            rules_exercised=["BOOK_AVAILABLE"],
            boundary_hits=1,
        ),
    ]
    write_manifest(ds.root, packages)
    return Built(ds.root, packages)  # fmt: skip


def _kinds(report: CheckReport) -> list[tuple[str, str]]:
    return [(f["id"], f["kind"]) for f in report.failures]


# -- fixture sanity ----------------------------------------------------------------------------


def test_fixture_shapes(built: Built) -> None:
    t1, _, t3, _ = built.packages
    assert [c.ok for c in t1.witness] == [True, False, True]
    assert t1.witness[1].error is not None
    assert t1.witness[1].error["violated_rule"] == "MEMBER_ACTIVE"
    assert t3.origin == t3.target
    assert t1.origin == t3.origin  # tasks of a scene share their origin state


# -- check ------------------------------------------------------------------------------------


def test_check_certifies_a_clean_dataset(built: Built) -> None:
    report = check_dataset(built.root)
    payload = report.to_json()
    # the lint reports (and does not fail) a hand-built trigger on the agent's own late fee,
    # and t4's other book after a refusal: a book is what the loan is for (category_swap)
    assert payload.pop("lint")["counts"] == {"calculation_trigger": 1, "category_swap": 1}
    assert payload == {
        "tasks": 4,
        "certified": 4,
        "spoiler_free": 4,
        "grounded": 4,
        "duplicates": 0,
        "failures": [],
    }
    assert report.ok


def test_check_tampered_witness_arg_is_a_replay_failure(built: Built) -> None:
    t1 = built.packages[0]
    calls = list(t1.witness)
    calls[1] = calls[1].model_copy(update={"args": LEND_DUNE})  # would now be accepted
    write_manifest(built.root, [t1.model_copy(update={"witness": calls}), *built.packages[1:]])
    report = check_dataset(built.root)
    assert _kinds(report) == [("t1", "replay")]
    assert "call 1 insert_loans" in report.failures[0]["detail"]
    assert report.certified == 3


def test_check_tampered_result_is_a_replay_failure(built: Built) -> None:
    t1 = built.packages[0]
    calls = list(t1.witness)
    calls[2] = calls[2].model_copy(update={"result": {**calls[2].result, "due_step": 9}})
    write_manifest(built.root, [t1.model_copy(update={"witness": calls}), *built.packages[1:]])
    report = check_dataset(built.root)
    assert _kinds(report) == [("t1", "replay")]
    assert "result differs" in report.failures[0]["detail"]


def test_check_wrong_rule_is_a_replay_failure(built: Built) -> None:
    t3 = built.packages[2]
    call = t3.witness[0]
    assert call.error is not None
    wrong = call.model_copy(update={"error": {**call.error, "violated_rule": "LOAN_QUOTA"}})
    write_manifest(
        built.root,
        [*built.packages[:2], t3.model_copy(update={"witness": [wrong]}), built.packages[3]],
    )
    report = check_dataset(built.root)
    assert _kinds(report) == [("t3", "replay")]
    assert "violated_rule" in report.failures[0]["detail"]


def test_check_wrong_target_is_a_diff_failure(
    built: Built, compiled: dict[str, CompiledDomain]
) -> None:
    _, other, _ = _episode(
        compiled["mock"], DatasetDir(built.root), [("insert_loans", {**LEND_HOBBIT, "due_step": 9})]
    )
    t1, t2 = built.packages[:2]
    write_manifest(built.root, [t1, t2.model_copy(update={"target": other}), *built.packages[2:]])
    report = check_dataset(built.root)
    assert _kinds(report) == [("t2", "diff")]
    assert "row(s) from s_target" in report.failures[0]["detail"]
    assert report.certified == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Please run insert_loans for me.", "insert_loans"),
        ("I want the book b_dune.", "b_dune"),
        ("My loan is #1.", "#1"),
    ],
)
def test_check_spoiler_in_description(built: Built, text: str, needle: str) -> None:
    t1 = built.packages[0]
    spoiled = t1.model_copy(update={"task_description": t1.task_description + "\n" + text})
    write_manifest(built.root, [spoiled, *built.packages[1:]])
    report = check_dataset(built.root)
    assert _kinds(report) == [("t1", "spoiler")]
    assert needle in report.failures[0]["detail"]
    assert (report.spoiler_free, report.certified) == (3, 4)


def test_check_known_id_is_not_a_spoiler(built: Built) -> None:
    t1 = built.packages[0]
    told = t1.model_copy(update={"task_description": t1.task_description + "\nMy card says m_ana."})
    write_manifest(built.root, [told, *built.packages[1:]])
    assert check_dataset(built.root).spoiler_free == 4


def test_check_changed_spec_hash(built: Built) -> None:
    t1 = built.packages[0]
    write_manifest(built.root, [t1.model_copy(update={"spec_hash": "0" * 64}), *built.packages[1:]])
    report = check_dataset(built.root)
    assert _kinds(report) == [("t1", "spec_hash")]
    # The witness still replays against the current spec, so the task stays certified.
    assert report.certified == 4


def test_check_duplicate_origin_target_pair(built: Built) -> None:
    copy = built.packages[1].model_copy(update={"id": "t2-again"})
    write_manifest(built.root, [*built.packages, copy])
    report = check_dataset(built.root)
    assert report.duplicates == 1
    assert _kinds(report) == [("t2-again", "duplicate")]
    assert "'t2'" in report.failures[0]["detail"]
    assert report.tasks == report.certified == 5


def test_check_garbage_target_file_is_an_integrity_failure(built: Built) -> None:
    path = DatasetDir(built.root).state_path(built.packages[1].target)
    path.write_bytes(b"not a database")
    report = check_dataset(built.root)
    name = f"states/{path.name}"
    assert _kinds(report) == [(name, "integrity"), ("t2", "integrity")]
    assert report.failures.pop(0)["detail"] == "file: differs from the sealed file"
    assert "target: state" in report.failures[0]["detail"]
    assert "does not hash to its name" in report.failures[0]["detail"]


def test_check_unknown_domain_is_a_spec_hash_failure(built: Built) -> None:
    t1 = built.packages[0]
    write_manifest(
        built.root, [t1.model_copy(update={"domain": "no-such-domain"}), *built.packages[1:]]
    )
    report = check_dataset(built.root)
    assert _kinds(report) == [("t1", "spec_hash")]
    assert "cannot be loaded" in report.failures[0]["detail"]
    assert (report.certified, report.spoiler_free) == (3, 3)


def test_check_caps_failures(built: Built) -> None:
    t2 = built.packages[1]
    many = [t2.model_copy(update={"id": f"d{i}"}) for i in range(120)]
    write_manifest(built.root, [t2, *many])
    report = check_dataset(built.root)
    assert report.duplicates == 120
    assert len(report.failures) == 100


# -- report -----------------------------------------------------------------------------------


def test_report_numbers(built: Built) -> None:
    assert report_dataset(built.root) == {
        "tasks": 4,
        "difficulty": {"L1": 2, "L2": 1, "L3": 1},
        "tags": {
            "linear": 1,
            "conditional": 1,
            "multi-step": 1,
            "waterfall": 0,
            "adversarial": 1,
            "state-based": 0,
            "hidden-constraint": 1,
            "refusal": 1,
        },
        "boundary_density": 0.75,  # t1, t3, t4
        "rule_coverage": 0.5,  # MEMBER_ACTIVE, LATE_FEE, BOOK_AVAILABLE of 6 rules
        "tool_coverage": 1.0,  # insert_loans and update_loans of 2 write tools
        "mean_witness_calls": 2.5,  # (3 + 1 + 1 + 2) / 4
        "refusal_share": 0.25,
        "repeated_texts": 0,
        "repeats": [],
        "cast": {"users": 1, "max_over_uniform": 1.0},  # all four are for m_ana
        "uncovered": {
            "mock": {
                "rules": {
                    r: "not reached: not sampled"
                    for r in ("LOAN_QUOTA", "RETURN_FINAL", "RETURN_STEP_REQUIRED")
                },
                "tools": {},
            }
        },
        "archetypes": {  # hand-built packages: labelled rookie, nothing built
            "counts": {"mismatch": 0, "entangled": 0, "rookie": 3, "edge": 0},
            "shares": {"mismatch": 0.0, "entangled": 0.0, "rookie": 1.0, "edge": 0.0},
            "built": 0,
        },
        "boundaries": {"kinds": {}, "categories": {}, "kind_density": {}, "category_density": {}},
    }


def test_report_subset_rounding(built: Built) -> None:
    t1, _, t3, _ = built.packages
    write_manifest(built.root, [t1, t3, t3.model_copy(update={"id": "t3b", "boundary_hits": 0})])
    got = report_dataset(built.root)
    assert got["tasks"] == 3
    assert got["boundary_density"] == 0.6667
    assert got["rule_coverage"] == 0.1667  # MEMBER_ACTIVE only
    assert got["tool_coverage"] == 0.5  # insert_loans only
    assert got["mean_witness_calls"] == 1.6667
    assert got["refusal_share"] == 0.6667


def test_report_empty(built: Built) -> None:
    write_manifest(built.root, [])
    got = report_dataset(built.root)
    assert got["tasks"] == 0
    assert got["boundary_density"] == got["refusal_share"] == got["mean_witness_calls"] == 0.0


# -- loader -----------------------------------------------------------------------------------


def _lines(built: Built) -> list[str]:
    return DatasetDir(built.root).manifest.read_text().splitlines()


def _problems(root: Path) -> list[str]:
    with pytest.raises(DatasetError) as info:
        load_dataset(root)
    return info.value.problems


def test_loader_accepts_the_fixture(built: Built) -> None:
    assert [p.id for p in load_dataset(built.root)] == ["t1", "t2", "t3", "t4"]


def _corrupt(built: Built, line: str) -> list[str]:
    lines = _lines(built)
    lines[1] = line
    DatasetDir(built.root).manifest.write_text("\n".join(lines) + "\n")
    return _problems(built.root)


def test_loader_rejects_bad_json(built: Built) -> None:
    (problem,) = _corrupt(built, '{"id": "t2", ')
    assert "manifest.jsonl:2:" in problem
    assert "json" in problem.lower()


def test_loader_rejects_missing_field(built: Built) -> None:
    data = json.loads(_lines(built)[1])
    del data["origin"]
    (problem,) = _corrupt(built, json.dumps(data))
    assert "manifest.jsonl:2:" in problem
    assert "origin" in problem
    assert "required" in problem.lower()


def test_loader_rejects_wrong_type(built: Built) -> None:
    data = json.loads(_lines(built)[1])
    data["boundary_hits"] = "many"
    (problem,) = _corrupt(built, json.dumps(data))
    assert "manifest.jsonl:2:" in problem
    assert "boundary_hits" in problem
    assert "integer" in problem


def test_loader_rejects_empty_line(built: Built) -> None:
    (problem,) = _corrupt(built, "   ")
    assert "manifest.jsonl:2:" in problem
    assert "empty line" in problem


def test_loader_rejects_duplicate_ids(built: Built) -> None:
    lines = _lines(built)
    DatasetDir(built.root).manifest.write_text("\n".join([*lines, lines[0]]) + "\n")
    (problem,) = _problems(built.root)
    assert "manifest.jsonl:5:" in problem
    assert "duplicate id 't1'" in problem
    assert "first on line 1" in problem


def test_loader_rejects_missing_state(built: Built) -> None:
    t2 = built.packages[1]
    DatasetDir(built.root).state_path(t2.target).unlink()
    (problem,) = _problems(built.root)
    assert "manifest.jsonl:2:" in problem
    assert "t2: target state" in problem
    assert "missing from states/" in problem


def test_loader_rejects_missing_policy(built: Built) -> None:
    DatasetDir(built.root).policy_path(built.packages[0].policy).unlink()
    problems = _problems(built.root)
    assert len(problems) == 4
    assert all("missing from policies/" in p for p in problems)
    assert [p.split("manifest.jsonl:")[1].split(":")[0] for p in problems] == ["1", "2", "3", "4"]


def test_loader_without_manifest(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path)
    assert "no manifest" in problem


def test_check_raises_on_invalid_dataset(built: Built) -> None:
    DatasetDir(built.root).state_path(built.packages[1].target).unlink()
    with pytest.raises(DatasetError):
        check_dataset(built.root)


# -- tau2 export ------------------------------------------------------------------------------

TASK_KEYS = {"id", "description", "user_scenario", "ticket", "initial_state", "evaluation_criteria"}


def _export(built: Built) -> list[dict[str, Any]]:
    out = built.root.parent / "tau2_tasks.json"
    assert export_tau2(built.root, out) == 4
    tasks: list[dict[str, Any]] = json.loads(out.read_text())
    return tasks


def test_tau2_structure(built: Built) -> None:
    tasks = _export(built)
    assert [t["id"] for t in tasks] == ["t1", "t2", "t3", "t4"]
    for task, pkg in zip(tasks, built.packages, strict=True):
        assert set(task) == TASK_KEYS
        assert set(task["description"]) == {"purpose", "relevant_policies", "notes"}
        instructions = task["user_scenario"]["instructions"]
        assert set(instructions) == {
            "domain",
            "reason_for_call",
            "known_info",
            "unknown_info",
            "task_instructions",
        }
        assert instructions["domain"] == "mock"
        assert instructions["reason_for_call"] == pkg.task.total_goal
        assert instructions["known_info"] == pkg.task.who_you_are
        assert instructions["unknown_info"] == "You do not know which books are on the shelf."
        assert pkg.task.sub_goals[0].request in instructions["task_instructions"]
        criteria = task["evaluation_criteria"]
        assert set(criteria) == {
            "actions",
            "env_assertions",
            "communicate_info",
            "nl_assertions",
            "reward_basis",
        }
        assert criteria["reward_basis"] == ["DB"]
        init = task["initial_state"]["initialization_data"]["agent_data"]["veritask_state"]
        assert init == {
            "domain": "mock",
            "origin": pkg.origin,
            "state_path": f"states/{pkg.origin}.sqlite",
        }
        assert (built.root / init["state_path"]).exists()
        meta = json.loads(task["description"]["notes"])["veritask"]
        assert (meta["difficulty"], meta["tags"]) == (pkg.difficulty, pkg.tags)
        assert (meta["origin"], meta["target"]) == (pkg.origin, pkg.target)


def test_tau2_actions_are_successful_writes(built: Built) -> None:
    by_id = {t["id"]: t["evaluation_criteria"]["actions"] for t in _export(built)}
    assert by_id["t1"] == [
        {
            "action_id": "0_insert_loans",
            "requestor": "assistant",
            "name": "insert_loans",
            "arguments": LEND_DUNE,
        }
    ]
    assert [a["arguments"] for a in by_id["t2"]] == [RETURN_EMMA]
    assert by_id["t3"] == []  # refusal: nothing to write
    assert [a["arguments"] for a in by_id["t4"]] == [LEND_HOBBIT]


def test_tau2_relevant_policies_quote_rules(built: Built) -> None:
    t1 = _export(built)[0]
    assert t1["description"]["relevant_policies"] == (
        "MEMBER_ACTIVE: Member does not exist or is not active."
    )


def test_tau2_reward_basis_mapping(built: Built) -> None:
    t1 = built.packages[0].model_copy(
        update={"reward_basis": ["state_exact", "actions", "communicate"]}
    )
    write_manifest(built.root, [t1])
    out = built.root.parent / "one.json"
    export_tau2(built.root, out)
    (task,) = json.loads(out.read_text())
    assert task["evaluation_criteria"]["reward_basis"] == ["DB", "ACTION", "COMMUNICATE"]


def test_tau2_unknown_reward_basis(built: Built) -> None:
    t1 = built.packages[0].model_copy(update={"reward_basis": ["vibes"]})
    write_manifest(built.root, [t1])
    with pytest.raises(ValueError, match="vibes"):
        export_tau2(built.root, built.root.parent / "x.json")
