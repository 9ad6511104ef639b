"""``report`` lists each task text made more than once and says whether the repeats are other
tasks (their state pairs differ) or the same task twice."""

from __future__ import annotations

from typing import Any

from veritask.task import SubGoal, TaskDescription, TaskPackage, UserProfile, text_repeats

H = "0" * 64


def _package(pid: str, text: str, origin: str, target: str) -> TaskPackage:
    task = TaskDescription(
        who_you_are="You are Diane.",
        total_goal="goal",
        sub_goals=[SubGoal(title="t", request=text)],
    )
    fields: dict[str, Any] = {
        "id": pid,
        "domain": "travel",
        "spec_hash": "x",
        "policy": H,
        "task": task,
        "task_description": text,
        "user_profile": UserProfile(user_id="u1", name="Diane", archetype="rookie"),
        "origin": origin,
        "target": target,
        "witness": [],
        "difficulty": "L1",
        "tags": [],
        "rules_exercised": [],
        "boundary_hits": 0,
        "seed": 0,
        "generator": "test",
    }
    return TaskPackage(**fields)


def test_repeats_are_grouped_by_normalised_text_with_their_state_pairs() -> None:
    a, b, c = "a" * 64, "b" * 64, "c" * 64
    pkgs = [
        _package("p1", "Cancel my booking.", a, b),
        _package("p2", "cancel my   booking", b, c),
        _package("p3", "Book a crossing.", a, b),
        _package("p4", "Book a crossing", a, b),
        _package("p5", "Book a crossing!", c, c),
        _package("p6", "Something else", a, c),
    ]
    repeats = text_repeats(pkgs)
    assert [r["packages"] for r in repeats] == [["p3", "p4", "p5"], ["p1", "p2"]]
    assert [r["differ"] for r in repeats] == [False, True]
    assert [r["state_pairs"] for r in repeats] == [2, 2]
    assert repeats[1]["text"] == "Cancel my booking."
