"""Exports of trajectories for fine-tuning: Hugging Face chat, OpenAI JSONL and ShareGPT rows."""

from veritask.export._chat import RAW_KEY
from veritask.export._io import (
    FORMATS,
    SftFormat,
    export_sft,
    is_verified,
    read_trajectories,
    verified,
)
from veritask.export._sft import to_hf_row, to_openai_row, to_sharegpt_row

__all__ = [
    "FORMATS",
    "RAW_KEY",
    "SftFormat",
    "export_sft",
    "is_verified",
    "read_trajectories",
    "to_hf_row",
    "to_openai_row",
    "to_sharegpt_row",
    "verified",
]
