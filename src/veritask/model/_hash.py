"""Canonical request form and its hash: the key of caches and recordings."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from veritask.model._types import GenerateConfig

TRANSPORT_FIELDS = frozenset(
    {"base_url", "api_key", "timeout", "max_retries", "extra_headers", "organization", "project"}
)
"""Fields that say how a request travels, not what it asks; never part of the hash."""


def canonical_request(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    config: GenerateConfig | None,
    sample_index: int,
) -> dict[str, Any]:
    """The request as hashed and recorded: what is asked, without how it travels.

    Args:
        messages: OpenAI chat messages.
        tools: OpenAI tool schemas, or None (same as an empty list).
        config: Sampling settings (model name included).
        sample_index: Which sample of this request.

    Returns:
        A JSON-ready dict with the model, sampling parameters, messages, tools and sample index.
    """
    config = config or GenerateConfig()
    extra = {k: v for k, v in config.extra.items() if k not in TRANSPORT_FIELDS}
    return {
        "model": config.model,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "seed": config.seed,
        "extra": extra,
        "messages": messages,
        "tools": tools or [],
        "sample_index": sample_index,
    }


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept, NaN refused."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def request_hash(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    config: GenerateConfig | None,
    sample_index: int,
) -> str:
    """SHA-256 (hex) of the canonical JSON of a request.

    Transport fields (base URL, API key, timeout...) are excluded, even when they appear in
    ``config.extra``; the model name, sampling parameters, messages, tools and sample index
    are included.
    """
    payload = canonical_json(canonical_request(messages, tools, config, sample_index))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
