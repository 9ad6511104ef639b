"""Task packages and dataset directories."""

from veritask.task._check import CheckReport, check_dataset
from veritask.task._costs import PriceTable, cost_report, dataset_ledger, load_prices
from veritask.task._dataset import DatasetDir, DatasetError, atomic_write, load_dataset, sha256
from veritask.task._package import (
    TAGS,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
)
from veritask.task._report import report_dataset
from veritask.task._spoiler import find_spoilers, text_keys
from veritask.task._tau2 import export_tau2

__all__ = [
    "TAGS",
    "CheckReport",
    "DatasetDir",
    "DatasetError",
    "PriceTable",
    "SubGoal",
    "TaskDescription",
    "TaskPackage",
    "UserProfile",
    "WitnessCall",
    "atomic_write",
    "check_dataset",
    "cost_report",
    "dataset_ledger",
    "export_tau2",
    "find_spoilers",
    "load_dataset",
    "load_prices",
    "report_dataset",
    "sha256",
    "text_keys",
]
