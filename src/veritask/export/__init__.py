"""Exports of trajectories for fine-tuning: Hugging Face chat, OpenAI JSONL and ShareGPT rows,
with the assistant's turns as targets, or the user's (user-simulator data); task datasets and
logic instances in the Hugging Face Hub's format, and back."""

from veritask.export._chat import RAW_KEY
from veritask.export._hf import export_hf, package_of, task_row
from veritask.export._hf_card import DEFAULT_LICENSE
from veritask.export._hf_import import Imported, compare_with_seal, import_hf
from veritask.export._hf_layout import CONFIGS, HF_EXTRA, HubFormatError, Written
from veritask.export._hf_logic import export_logic_hf, logic_row, rg_entry
from veritask.export._io import (
    FORMATS,
    ROLES,
    SftFormat,
    SftRole,
    export_sft,
    is_verified,
    read_trajectories,
    verified,
)
from veritask.export._sft import to_hf_row, to_openai_row, to_sharegpt_row
from veritask.export._user import packages_by_id, user_view, user_views

__all__ = [
    "CONFIGS",
    "DEFAULT_LICENSE",
    "FORMATS",
    "HF_EXTRA",
    "RAW_KEY",
    "ROLES",
    "HubFormatError",
    "Imported",
    "SftFormat",
    "SftRole",
    "Written",
    "compare_with_seal",
    "export_hf",
    "export_logic_hf",
    "export_sft",
    "import_hf",
    "is_verified",
    "logic_row",
    "package_of",
    "packages_by_id",
    "read_trajectories",
    "rg_entry",
    "task_row",
    "to_hf_row",
    "to_openai_row",
    "to_sharegpt_row",
    "user_view",
    "user_views",
    "verified",
]
