"""Scripted model answers for the blueprint DAG: three seed topics to three services.

Answers are keyed by the ``Task: <stage> | Key: <unit>`` line that opens every DAG prompt and by
the attempt (a repair request adds an assistant turn). The relation questions are answered from
``RELATED`` for whatever candidates a batch lists.
"""

from __future__ import annotations

import json
import re
from typing import Any

TOPICS = ["education", "healthcare", "fitness"]


def _j(value: Any) -> str:
    return "```json\n" + json.dumps(value) + "\n```"


def _num(name: str, lo: int, hi: int) -> dict[str, Any]:
    return {"name": name, "type": "int", "min": lo, "max": hi}


ENTITIES = [
    {
        "name": "Student",
        "is_person": True,
        "description": "A person enrolled at a school",
        "attributes": [
            {"name": "student_id", "type": "string"},
            {"name": "full_name", "type": "string"},
            {"name": "email", "type": "string"},
            {"name": "is_active", "type": "bool"},
            _num("year", 1, 6),
            {"name": "standing", "type": "enum", "values": ["GOOD", "PROBATION"]},
        ],
    },
    {
        "name": "Course",
        "description": "A course offered for credit",
        "attributes": [
            {"name": "id", "type": "string"},
            {"name": "title", "type": "string"},
            _num("credits", 1, 6),
            {"name": "open", "type": "bool"},
        ],
    },
    {
        "name": "Patient",
        "is_person": True,
        "description": "A person receiving care",
        "attributes": [
            {"name": "name", "type": "string"},
            {"name": "insured", "type": "bool"},
            _num("age", 0, 110),
            {"name": "weight", "type": "number"},
        ],
    },
    {
        "name": "TherapyProgram",
        "description": "A course of therapy sessions",
        "attributes": [
            {"name": "title", "type": "string"},
            _num("sessions", 1, 30),
            {"name": "intake", "type": "enum", "values": ["OPEN", "FULL"]},
        ],
    },
    {
        "name": "Member",
        "is_person": True,
        "description": "A gym member",
        "attributes": [
            {"name": "full_name", "type": "string"},
            {"name": "city", "type": "string"},
            {"name": "plan", "type": "enum", "values": ["BASIC", "PREMIUM"]},
        ],
    },
    {
        "name": "FitnessClass",
        "description": "A scheduled group class",
        "attributes": [
            {"name": "title", "type": "string"},
            _num("capacity", 5, 40),
            {"name": "level", "type": "enum", "values": ["BEGINNER", "ADVANCED"]},
        ],
    },
    {
        "name": "Instructor",
        "is_person": True,
        "description": "Teaches fitness classes",
        "attributes": [{"name": "name", "type": "string"}, {"name": "certified", "type": "bool"}],
    },
    {"name": "UserSession", "description": "A login session", "attributes": []},
]

RELATED = {
    "student": ["course"],
    "patient": ["therapy_program"],
    "member": ["fitness_class", "instructor"],
    "instructor": ["fitness_class"],
}

ENROLLMENT = {
    "name": "course_enrollment",
    "description": "Students enroll in courses and drop them.",
    "core": "student",
    "peripherals": ["course"],
    "relationships": [
        {
            "name": "enrollment",
            "links": ["course"],
            "attributes": [_num("start_step", 1, 50), _num("hours", 1, 20)],
            "statuses": ["ENROLLED", "DROPPED", "COMPLETED"],
            "final": ["DROPPED", "COMPLETED"],
        }
    ],
    "functions": [
        {
            "name": "enroll_in_course",
            "kind": "create",
            "relationship": "enrollment",
            "parameters": ["student_id", "course_id", "start_step", "hours"],
        },
        {
            "name": "drop_course",
            "kind": "update",
            "relationship": "enrollment",
            "parameters": ["id", "status"],
        },
        {"name": "list_enrollments", "kind": "lookup", "relationship": "enrollment"},
    ],
    "policies": [
        {
            "id": "ACTIVE_STUDENT",
            "kind": "requires",
            "function": "enroll_in_course",
            "entity": "student",
            "column": "is_active",
            "value": "true",
        },
        {
            "id": "GOOD_STANDING",
            "kind": "requires",
            "function": "enroll_in_course",
            "entity": "student",
            "column": "standing",
            "value": "GOOD",
        },
        {
            "id": "COURSE_OPEN",
            "kind": "requires",
            "function": "enroll_in_course",
            "entity": "course",
            "column": "open",
            "value": 1,
        },
        {"id": "ENROLLMENT_QUOTA", "kind": "quota", "function": "enroll_in_course", "limit": 3},
        {
            "id": "HOURS_CAP",
            "kind": "max_value",
            "function": "enroll_in_course",
            "column": "hours",
            "limit": 12,
        },
    ],
}


def _program(column: str) -> dict[str, Any]:
    return {
        "name": "program_enrollment",
        "description": "Patients join therapy programs.",
        "core": "patient",
        "peripherals": ["therapy_program"],
        "relationships": [
            {
                "name": "program_signup",
                "links": ["therapy_program"],
                "attributes": [_num("weekly_visits", 1, 5)],
                "statuses": ["ACTIVE", "FINISHED"],
                "final": ["FINISHED"],
            }
        ],
        "functions": [
            {
                "name": "join_program",
                "kind": "create",
                "relationship": "program_signup",
                "parameters": ["patient_id", "therapy_program_id", "weekly_visits"],
            },
            {"name": "finish_program", "kind": "update", "relationship": "program_signup"},
        ],
        "policies": [
            {
                "id": "INSURED",
                "kind": "requires",
                "function": "join_program",
                "entity": "patient",
                "column": column,
                "value": True,
            },
            {
                "id": "INTAKE_OPEN",
                "kind": "requires",
                "function": "join_program",
                "entity": "therapy_program",
                "column": "intake",
                "value": "OPEN",
            },
            {"id": "ONE_PROGRAM", "kind": "quota", "function": "join_program", "limit": 1},
        ],
    }


BOOKING = {
    "name": "ClassBooking",
    "description": "Members book group classes.",
    "core": "Member",
    "peripherals": ["FitnessClasses"],
    "relationships": [
        {
            "name": "booking",
            "links": ["FitnessClasses"],
            "attributes": [
                _num("class_step", 1, 100),
                {"name": "spot", "type": "enum", "values": ["FRONT", "BACK"]},
            ],
            "statuses": ["BOOKED", "CANCELLED", "ATTENDED"],
            "final": ["CANCELLED", "ATTENDED"],
        }
    ],
    "functions": [
        {
            "name": "book_class",
            "kind": "create",
            "relationship": "booking",
            "parameters": ["member_id", "fitness_class_id", "class_step", "spot"],
        },
        {"name": "cancel_booking", "kind": "update", "relationship": "booking"},
    ],
    "policies": [
        {
            "id": "premium_only",
            "kind": "requires",
            "function": "book_class",
            "entity": "member",
            "column": "plan",
            "value": "PREMIUM",
        },
        {"id": "BOOKING_QUOTA", "kind": "quota", "function": "book_class", "limit": 2},
    ],
}

TEACHING = {
    "name": "class_teaching",
    "description": "Instructors take classes.",
    "core": "instructor",
    "peripherals": ["fitness_class"],
    "relationships": [
        {
            "name": "assignment",
            "links": ["payroll"],
            "statuses": ["ASSIGNED", "DONE"],
            "final": ["DONE"],
        }
    ],
    "functions": [
        {
            "name": "assign",
            "kind": "create",
            "relationship": "assignment",
            "parameters": ["instructor_id", "payroll_id"],
        }
    ],
}

ANSWERS: dict[tuple[str, str], list[str]] = {
    ("domains", "education"): [
        _j(
            {
                "domains": [
                    "course_registration",
                    "tutoring",
                    "student_housing",
                    "Course Registrations",
                ]
            }
        )
    ],
    ("domains", "healthcare"): [
        "I think these fit: "
        + json.dumps(
            {
                "domains": [
                    "physical_therapy",
                    "medical_billing",
                    "management",
                    "patient_intake_and_triage_desk",
                ]
            }
        )
    ],
    ("domains", "fitness"): [
        _j(
            {
                "domains": [
                    "gym_classes",
                    "personal_training",
                    "tutoring_service",
                    "nutrition_coaching",
                ]
            }
        )
    ],
    ("entities", "all"): ["not json at all", _j({"entities": ENTITIES})],
    ("outlines", "student"): [
        _j({"outlines": [{"name": "course_enrollment", "peripherals": ["Course"]}]})
    ],
    ("outlines", "patient"): [
        _j({"outlines": [{"name": "program_enrollment", "peripherals": ["therapy_program"]}]})
    ],
    ("outlines", "member"): [
        _j({"outlines": [{"name": "class_booking", "peripherals": ["fitness_class"]}]})
    ],
    ("outlines", "instructor"): [
        _j({"outlines": [{"name": "class_teaching", "peripherals": ["fitness_class"]}]})
    ],
    ("blueprints", "course_enrollment"): [_j(ENROLLMENT)],
    ("blueprints", "program_enrollment"): [_j(_program("has_insurance"))],
    ("blueprints", "class_booking"): [_j({"name": "class_booking"}), _j(BOOKING)],
    ("blueprints", "class_teaching"): [_j(TEACHING)] * 3,
    ("fix", "program_enrollment#1"): [_j(_program("insured"))],
}

_HEAD = re.compile(r"Task: (\S+) \| Key: (\S+)")


def _related(messages: list[dict[str, Any]], key: str) -> str:
    person = key.split(".")[0]
    text = str(messages[1]["content"])
    candidates = re.findall(r"^- (\w+):", text, re.MULTILINE)
    return _j({"related": [c for c in candidates if c in RELATED.get(person, [])]})


def _template(messages: list[dict[str, Any]], key: str) -> str:
    """A template that keeps every placeholder the path lists (LLM template mode)."""
    lines = [ln for ln in str(messages[1]["content"]).splitlines() if ln.startswith("- ")]
    holes = list(dict.fromkeys(re.findall(r"<\w+\.\w+>", "\n".join(lines))))
    text = "Please sort this out for me" + (f", using {', '.join(holes)}" if holes else "") + "."
    return _j({"motivation": f"My schedule changed ({key[-4:]}).", "text": text})


def judged_low(key: str) -> bool:
    """Whether the scripted judge scores template ``key`` below the bar (about a third)."""
    return int(key[-2:], 16) % 3 == 0


def _judge(key: str) -> str:
    low = judged_low(key)
    scores = {"semantic_clarity": 5, "logical_coherence": 5, "completeness": 5}
    scores |= {"naturalness": 2 if low else 4, "specificity": 2 if low else 5}
    return _j({**scores, "reason": "stilted" if low else "fine"})


def answer(messages: list[dict[str, Any]], tools: Any = None) -> str:
    """The scripted answer to a DAG request (``tools`` unused by the DAG)."""
    del tools
    match = _HEAD.search(str(messages[1]["content"]))
    if match is None:
        raise AssertionError(f"not a DAG prompt: {messages[1]['content'][:80]!r}")
    task, key = match.groups()
    if task == "graph":
        return _related(messages, key)
    if task in ("template", "judge"):
        return _template(messages, key) if task == "template" else _judge(key)
    attempt = sum(1 for m in messages if m["role"] == "assistant")
    script = ANSWERS[(task, key)]
    return script[min(attempt, len(script) - 1)]
