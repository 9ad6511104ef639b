"""Offline tests of the model-provider layer: hashing, cache, scripted, replay, registry."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from veritask.model import (
    CachedProvider,
    GenerateConfig,
    ModelOutput,
    ModelProvider,
    Prices,
    ProviderError,
    RecordingProvider,
    ReplayMiss,
    ReplayProvider,
    RequestCache,
    ScriptedProvider,
    ScriptExhausted,
    Usage,
    canonical_request,
    from_chat_completion,
    get_provider,
    register_provider,
    request_hash,
    to_chat_request,
)
from veritask.model._openai import backoff_delay, resolve_endpoint

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Cancel order A1, please."},
]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "cancel_order",
            "description": "Cancel an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def generate(
    provider: ModelProvider,
    messages: list[dict[str, Any]] = MESSAGES,
    tools: list[dict[str, Any]] | None = TOOLS,
    config: GenerateConfig | None = None,
    sample_index: int = 0,
) -> ModelOutput:
    """Run one generate call to completion."""
    return asyncio.run(provider.generate(messages, tools, config, sample_index))


# --- request_hash -------------------------------------------------------------------------


def test_request_hash_is_stable_and_ignores_key_order() -> None:
    config = GenerateConfig(model="m", temperature=0.5, extra={"top_k": 5, "min_p": 0.1})
    reordered = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    same = GenerateConfig(model="m", temperature=0.5, extra={"min_p": 0.1, "top_k": 5})
    first = request_hash(MESSAGES, TOOLS, config, 0)
    assert first == request_hash(MESSAGES, TOOLS, config, 0)
    assert first == request_hash(reordered, TOOLS, same, 0)
    assert len(first) == 64 and int(first, 16) >= 0


def test_request_hash_ignores_transport_fields() -> None:
    plain = GenerateConfig(model="m", extra={"top_k": 5})
    transport = GenerateConfig(
        model="m",
        extra={"top_k": 5, "base_url": "http://x", "api_key": "sk-secret", "timeout": 3},
    )
    assert request_hash(MESSAGES, TOOLS, plain, 0) == request_hash(MESSAGES, TOOLS, transport, 0)
    assert "sk-secret" not in json.dumps(canonical_request(MESSAGES, TOOLS, transport, 0))


@pytest.mark.parametrize(
    ("config", "sample_index", "tools"),
    [
        (GenerateConfig(model="m"), 1, TOOLS),
        (GenerateConfig(model="other"), 0, TOOLS),
        (GenerateConfig(model="m", temperature=0.0), 0, TOOLS),
        (GenerateConfig(model="m", top_p=0.9), 0, TOOLS),
        (GenerateConfig(model="m", max_tokens=10), 0, TOOLS),
        (GenerateConfig(model="m", seed=1), 0, TOOLS),
        (GenerateConfig(model="m", extra={"top_k": 1}), 0, TOOLS),
        (GenerateConfig(model="m"), 0, None),
    ],
)
def test_request_hash_changes_with_what_is_asked(
    config: GenerateConfig, sample_index: int, tools: list[dict[str, Any]] | None
) -> None:
    base = request_hash(MESSAGES, TOOLS, GenerateConfig(model="m"), 0)
    assert request_hash(MESSAGES, tools, config, sample_index) != base


def test_request_hash_treats_no_tools_as_empty_tools() -> None:
    config = GenerateConfig(model="m")
    assert request_hash(MESSAGES, None, config, 0) == request_hash(MESSAGES, [], config, 0)


# --- cache --------------------------------------------------------------------------------


@pytest.mark.parametrize("location", ["cache_dir", "cache.sqlite"])
def test_cache_hit_is_marked_and_its_usage_zeroed(tmp_path: Path, location: str) -> None:
    inner = ScriptedProvider(["hello there"])
    provider = CachedProvider(inner, tmp_path / location)
    miss = generate(provider)
    hit = generate(provider)
    assert not miss.cached and miss.usage.calls == 1 and miss.usage.completion_tokens > 0
    assert hit.cached and hit.message == miss.message and hit.finish_reason == "stop"
    assert hit.usage == Usage(cached_calls=1)
    assert len(inner.requests) == 1
    with pytest.raises(ScriptExhausted):  # another sample is another key
        generate(provider, sample_index=1)


@pytest.mark.parametrize("location", ["cache_dir", "cache.db"])
def test_request_cache_persists_and_keeps_original_usage(tmp_path: Path, location: str) -> None:
    output = ModelOutput({"role": "assistant", "content": "x"}, Usage(prompt_tokens=3, calls=1))
    RequestCache(tmp_path / location).put("abc123", output)
    reopened = RequestCache(tmp_path / location)
    hit = reopened.get("abc123")
    assert hit is not None and hit.cached and hit.message == output.message
    assert reopened.get("missing") is None
    assert reopened.backend == ("dir" if location == "cache_dir" else "sqlite")


def test_request_cache_treats_a_corrupt_entry_as_a_miss(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    cache.put("ab12", ModelOutput({"role": "assistant", "content": "x"}))
    (tmp_path / "ab" / "ab12.json").write_text("{not json", encoding="utf-8")
    assert cache.get("ab12") is None


def test_cached_provider_fills_in_the_model_name(tmp_path: Path) -> None:
    provider = CachedProvider(ScriptedProvider(["a"], model="tiny"), tmp_path)
    generate(provider)
    key = request_hash(MESSAGES, TOOLS, GenerateConfig(model="tiny"), 0)
    assert RequestCache(tmp_path).get(key) is not None


def test_get_provider_with_cache_dir_wraps_in_a_cache(tmp_path: Path) -> None:
    provider = get_provider("scripted", script=["once"], cache_dir=tmp_path)
    assert isinstance(provider, CachedProvider)
    assert generate(provider).text == generate(provider).text == "once"


# --- scripted -----------------------------------------------------------------------------


def test_scripted_shorthand_becomes_wire_format() -> None:
    shorthand = {
        "content": "Let me check.",
        "tool_calls": [
            {"name": "cancel_order", "arguments": {"order_id": "A1"}},
            {"name": "cancel_order", "arguments": '{"order_id": '},
        ],
    }
    provider = ScriptedProvider([shorthand, "Done.", {"tool_calls": [{"name": "f"}]}])
    first, second, third = (generate(provider) for _ in range(3))
    assert first.message == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "cancel_order", "arguments": '{"order_id": "A1"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "cancel_order", "arguments": '{"order_id": '},
            },
        ],
    }
    assert first.finish_reason == "tool_calls"
    assert second.message == {"role": "assistant", "content": "Done."}
    assert second.finish_reason == "stop"
    assert third.message["content"] is None
    assert third.tool_calls[0]["id"] == "call_3"
    assert third.tool_calls[0]["function"]["arguments"] == "{}"


def test_scripted_passes_full_messages_outputs_and_errors_through() -> None:
    full = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "x9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    ready = ModelOutput({"role": "assistant", "content": "ready"}, finish_reason="length")
    provider = ScriptedProvider([full, ready, ProviderError("boom", status_code=503)])
    assert generate(provider).message == full
    assert generate(provider) is ready
    with pytest.raises(ProviderError, match="boom") as info:
        generate(provider)
    assert info.value.status_code == 503


def test_scripted_callable_script_sees_the_request() -> None:
    def script(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        return f"{len(messages)} messages, {len(tools or [])} tools" if len(messages) < 3 else None

    provider = ScriptedProvider(script)
    assert generate(provider).text == "2 messages, 1 tools"
    with pytest.raises(ScriptExhausted):
        generate(provider, messages=[*MESSAGES, {"role": "user", "content": "again"}])
    assert provider.remaining is None


def test_scripted_raises_script_exhausted_with_a_clear_message() -> None:
    provider = ScriptedProvider(["only answer"])
    generate(provider)
    assert provider.remaining == 0
    with pytest.raises(ScriptExhausted, match=r"ran out of script after 1 response") as info:
        generate(provider)
    assert "Cancel order A1" in str(info.value)
    assert isinstance(info.value, ProviderError)


def test_scripted_rejects_unknown_item_types() -> None:
    with pytest.raises(TypeError, match="unsupported script item"):
        generate(ScriptedProvider([42]))  # type: ignore[list-item]


def test_scripted_usage_counts_rough_tokens_and_cost() -> None:
    prices = Prices(prompt_per_million=1_000_000.0, completion_per_million=2_000_000.0)
    provider = ScriptedProvider(["x" * 40], prices=prices)
    output = generate(provider, messages=[{"role": "user", "content": "y" * 80}], tools=None)
    assert output.usage == Usage(prompt_tokens=20, completion_tokens=10, cost=40.0, calls=1)


# --- prices and translation ---------------------------------------------------------------


def test_prices_cost_per_million_tokens() -> None:
    prices = Prices(prompt_per_million=2.5, completion_per_million=10.0)
    assert prices.cost(1_000_000, 0) == pytest.approx(2.5)
    assert prices.cost(1000, 500) == pytest.approx(0.0025 + 0.005)
    assert Prices.coerce({"prompt_per_million": 1.0}) == Prices(prompt_per_million=1.0)
    assert Prices.coerce(None).cost(10**6, 10**6) == 0.0


def completion_payload(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A hand-written chat-completions response body."""
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    payload.update(extra)
    return payload


def test_from_chat_completion_with_tool_calls_and_usage() -> None:
    call = {
        "id": "call_abc",
        "type": "function",
        "function": {"name": "cancel_order", "arguments": '{"order_id":"A1"}'},
    }
    payload = completion_payload(
        {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
        usage={"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200},
    )
    payload["choices"][0]["finish_reason"] = "tool_calls"
    output = from_chat_completion(payload, Prices(1.0, 5.0))
    assert output.message == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert output.finish_reason == "tool_calls" and not output.cached
    assert output.usage.cost == pytest.approx(0.002)
    assert output.usage == Usage(prompt_tokens=1000, completion_tokens=200, cost=0.002, calls=1)


def test_from_chat_completion_text_only_without_usage() -> None:
    payload = completion_payload({"role": "assistant", "content": "Hi", "tool_calls": None})
    output = from_chat_completion(payload)
    assert output.message == {"role": "assistant", "content": "Hi"}
    assert output.usage == Usage(calls=1)
    assert from_chat_completion({**payload, "usage": None}).usage == Usage(calls=1)


def test_from_chat_completion_keeps_malformed_arguments_and_encodes_dicts() -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{oops"}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": {"k": 1}}},
    ]
    output = from_chat_completion(completion_payload({"content": "", "tool_calls": calls}))
    assert [c["function"]["arguments"] for c in output.tool_calls] == ["{oops", '{"k": 1}']


@pytest.mark.parametrize(
    "payload", [{}, {"choices": []}, {"choices": [{"index": 0, "finish_reason": "stop"}]}]
)
def test_from_chat_completion_rejects_payloads_without_a_message(payload: dict[str, Any]) -> None:
    with pytest.raises(ProviderError):
        from_chat_completion(payload)


def test_to_chat_request_omits_unset_parameters() -> None:
    assert to_chat_request(MESSAGES, None, GenerateConfig(model="m")) == {
        "model": "m",
        "messages": MESSAGES,
    }
    config = GenerateConfig(model="m", temperature=0.0, seed=3, extra={"top_k": 2})
    request = to_chat_request(MESSAGES, TOOLS, config)
    assert request["tools"] == TOOLS and request["temperature"] == 0.0 and request["seed"] == 3
    assert request["extra_body"] == {"top_k": 2} and "top_p" not in request


def test_model_output_round_trips_through_dict() -> None:
    output = generate(ScriptedProvider([{"tool_calls": [{"name": "f", "arguments": {}}]}]))
    assert ModelOutput.from_dict(json.loads(json.dumps(output.to_dict()))) == output


# --- recording and replay -----------------------------------------------------------------


def test_recording_then_replaying_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "run" / "calls.jsonl"
    recorder = RecordingProvider(ScriptedProvider(["first", {"tool_calls": [{"name": "f"}]}]), path)
    config = GenerateConfig(temperature=0.7)
    outputs = [generate(recorder, config=config, sample_index=i) for i in range(2)]
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [set(line) for line in lines] == [{"hash", "request", "response"}] * 2
    assert lines[0]["request"]["model"] == "scripted" and lines[1]["request"]["sample_index"] == 1

    replay = get_provider(f"replay:{path}")
    assert isinstance(replay, ReplayProvider) and len(replay) == 2
    assert [generate(replay, config=config, sample_index=i) for i in range(2)] == outputs


def test_replay_miss_names_the_hash(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    generate(RecordingProvider(ScriptedProvider(["a"]), path))
    replay = ReplayProvider(path)
    assert generate(replay).text == "a"
    expected = request_hash(MESSAGES, TOOLS, GenerateConfig(model="scripted"), 5)
    with pytest.raises(ReplayMiss, match=expected):
        generate(replay, sample_index=5)


def test_replay_rejects_lines_that_are_not_records(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"hash": "x", "response": {"message": {}}}\n\n["nope"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:3"):
        ReplayProvider(path)


# --- registry -----------------------------------------------------------------------------


def test_get_provider_rejects_unknown_schemes_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown model provider 'nope'") as info:
        get_provider("nope:model")
    for scheme in ("openai", "replay", "scripted"):
        assert scheme in str(info.value)


@pytest.mark.parametrize("spec", ["openai", "openai:", "replay", "scripted"])
def test_get_provider_rejects_incomplete_specs(spec: str) -> None:
    with pytest.raises(ValueError):
        get_provider(spec)


def test_register_provider_is_the_door_for_test_doubles() -> None:
    def factory(argument: str, **options: Any) -> ModelProvider:
        return ScriptedProvider([f"echo {argument} {options['suffix']}"])

    register_provider("test-echo", factory)
    assert generate(get_provider("test-echo:hi", suffix="!")).text == "echo hi !"
    with pytest.raises(ValueError):
        register_provider("bad:scheme", factory)


def test_get_provider_openai_builds_without_network() -> None:
    provider = get_provider("openai:gpt-test", base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    assert provider.name == "openai:gpt-test"
    assert "sk-x" not in repr(provider)


def test_importing_the_package_does_not_import_the_sdk() -> None:
    code = "import sys, veritask.model; assert 'openai' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- endpoint resolution and backoff ------------------------------------------------------


def test_resolve_endpoint_prefers_options_then_veritask_then_openai_env() -> None:
    env = {"VERITASK_BASE_URL": "http://v/v1", "OPENAI_BASE_URL": "http://o/v1"}
    assert resolve_endpoint("http://opt/v1", "k", env) == ("http://opt/v1", "k")
    assert resolve_endpoint(None, None, env) == ("http://v/v1", "EMPTY")
    assert (
        resolve_endpoint(None, None, {"OPENAI_BASE_URL": "http://o/v1", "OPENAI_API_KEY": "o"})[1]
        == "o"
    )
    assert resolve_endpoint(None, None, {"VERITASK_API_KEY": "v", "OPENAI_API_KEY": "o"}) == (
        None,
        "v",
    )


def test_backoff_grows_exponentially_with_bounded_seeded_jitter() -> None:
    delays = [backoff_delay(n, 1.0, 10.0, random.Random(0)) for n in range(6)]
    for attempt, delay in enumerate(delays):
        ceiling = min(10.0, 2.0**attempt)
        assert ceiling / 2 <= delay <= ceiling
    assert delays == [backoff_delay(n, 1.0, 10.0, random.Random(0)) for n in range(6)]
