"""Exports of trajectories for fine-tuning: Hugging Face chat, OpenAI JSONL and ShareGPT rows,
with the assistant's turns as targets, or the user's (user-simulator data)."""

from veritask.export._chat import RAW_KEY
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
    "FORMATS",
    "RAW_KEY",
    "ROLES",
    "SftFormat",
    "SftRole",
    "export_sft",
    "is_verified",
    "packages_by_id",
    "read_trajectories",
    "to_hf_row",
    "to_openai_row",
    "to_sharegpt_row",
    "user_view",
    "user_views",
    "verified",
]
