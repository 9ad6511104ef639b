"""Task packages, dataset directories, trajectories and sessions over a task."""

from veritask._util import atomic_write, sha256
from veritask.task._archive import compact_dataset, pack_dataset, unpack_dataset
from veritask.task._certify import Certificate, certify, outcome_mismatch, replay, replay_witness
from veritask.task._check import CheckReport, check_dataset
from veritask.task._costs import PriceTable, cost_report, dataset_ledger, load_prices
from veritask.task._dataset import SPEC_FILE, DatasetDir, DatasetError, load_dataset
from veritask.task._grounded import Ungrounded, grounding, package_asks, task_asks, unstated_in
from veritask.task._lint import (
    LINT_KINDS,
    LintFinding,
    clock_column,
    intent_columns,
    is_time_column,
    key_names,
    kind_table,
    lint_dataset,
    lint_package,
    named_column,
    normalised_text,
    repeated_texts,
    standing_cast,
    status_of_procedure,
    tested_words,
)
from veritask.task._package import (
    ARCHETYPES,
    TAGS,
    Archetype,
    Ask,
    BuiltRow,
    Construction,
    Fallback,
    Preference,
    RowRef,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
)
from veritask.task._prefer import best_row, preference_args
from veritask.task._protocol import Session
from veritask.task._report import report_dataset
from veritask.task._session import EnvSession
from veritask.task._spoiler import decided_spoilers, find_spoilers, text_keys
from veritask.task._store import Closable, SessionStore, SessionStoreFull, UnknownSession
from veritask.task._tau2 import export_tau2
from veritask.task._trajectory import EpisodeEnd, StopReason, ToolStep, Trajectory

__all__ = [
    "ARCHETYPES",
    "LINT_KINDS",
    "SPEC_FILE",
    "TAGS",
    "Archetype",
    "Ask",
    "BuiltRow",
    "Certificate",
    "CheckReport",
    "Closable",
    "Construction",
    "DatasetDir",
    "DatasetError",
    "EnvSession",
    "EpisodeEnd",
    "Fallback",
    "LintFinding",
    "Preference",
    "PriceTable",
    "RowRef",
    "Session",
    "SessionStore",
    "SessionStoreFull",
    "StopReason",
    "SubGoal",
    "TaskDescription",
    "TaskPackage",
    "ToolStep",
    "Trajectory",
    "Ungrounded",
    "UnknownSession",
    "UserProfile",
    "WitnessCall",
    "atomic_write",
    "best_row",
    "certify",
    "check_dataset",
    "clock_column",
    "compact_dataset",
    "cost_report",
    "dataset_ledger",
    "decided_spoilers",
    "export_tau2",
    "find_spoilers",
    "grounding",
    "intent_columns",
    "is_time_column",
    "key_names",
    "kind_table",
    "lint_dataset",
    "lint_package",
    "load_dataset",
    "load_prices",
    "named_column",
    "normalised_text",
    "outcome_mismatch",
    "pack_dataset",
    "package_asks",
    "preference_args",
    "repeated_texts",
    "replay",
    "replay_witness",
    "report_dataset",
    "sha256",
    "standing_cast",
    "status_of_procedure",
    "task_asks",
    "tested_words",
    "text_keys",
    "unpack_dataset",
    "unstated_in",
]
