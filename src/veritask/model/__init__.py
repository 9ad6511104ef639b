"""Model providers: one interface over OpenAI-compatible endpoints, scripts and replays.

Build providers with :func:`get_provider` (``openai:MODEL``, ``scripted``, ``replay:PATH``);
test doubles enter through :func:`register_provider`. The ``openai`` SDK is imported only
when an ``openai:`` provider is built (by ``get_provider``), so it is not re-exported here.
"""

from typing import Any

from veritask.model._cache import CachedProvider, RequestCache
from veritask.model._convert import from_chat_completion, normalize_message, to_chat_request
from veritask.model._errors import ErrorInfo, classify_error, connection_reason
from veritask.model._hash import TRANSPORT_FIELDS, canonical_request, request_hash
from veritask.model._registry import get_provider, register_provider, registered_schemes
from veritask.model._replay import RecordingProvider, ReplayProvider, load_recording
from veritask.model._scripted import ScriptedProvider, ScriptItem
from veritask.model._structured import (
    CostLedger,
    ModelRole,
    ModuleCost,
    StructuredOutputError,
    ask,
    extract_block,
    extract_json,
    parse_model,
)
from veritask.model._types import (
    ErrorKind,
    GenerateConfig,
    ModelOutput,
    ModelProvider,
    Prices,
    ProviderError,
    ReplayMiss,
    ScriptExhausted,
)
from veritask.model._usage import Usage


def openai_choice(choice: Any) -> Any:
    """``ModelOutput.choice`` as the ``openai`` SDK's ``Choice`` (imports the SDK)."""
    from veritask.model._openai import openai_choice as convert

    return convert(choice)


__all__ = [
    "TRANSPORT_FIELDS",
    "CachedProvider",
    "CostLedger",
    "ErrorInfo",
    "ErrorKind",
    "GenerateConfig",
    "ModelOutput",
    "ModelProvider",
    "ModelRole",
    "ModuleCost",
    "Prices",
    "ProviderError",
    "RecordingProvider",
    "ReplayMiss",
    "ReplayProvider",
    "RequestCache",
    "ScriptExhausted",
    "ScriptItem",
    "ScriptedProvider",
    "StructuredOutputError",
    "Usage",
    "ask",
    "canonical_request",
    "classify_error",
    "connection_reason",
    "extract_block",
    "extract_json",
    "from_chat_completion",
    "get_provider",
    "load_recording",
    "normalize_message",
    "openai_choice",
    "parse_model",
    "register_provider",
    "registered_schemes",
    "request_hash",
    "to_chat_request",
]
