"""Recording model calls to JSONL, and replaying them without any model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from veritask._util import iter_jsonl, read_text
from veritask.model._hash import canonical_request, request_hash
from veritask.model._types import (
    GenerateConfig,
    ModelOutput,
    ModelProvider,
    ReplayMiss,
    provider_model,
    resolve_config,
)


class RecordingProvider:
    """Wraps a provider and appends every answered request to a JSONL file.

    Each line is ``{"hash", "request", "response"}``: the :func:`request_hash`, the canonical
    request (no transport fields, so no API key) and ``ModelOutput.to_dict()``. The file is what
    :class:`ReplayProvider` reads. Failed calls are not recorded.

    Args:
        inner: The provider that answers.
        path: The JSONL file (appended to; parent directories are created).
    """

    def __init__(self, inner: ModelProvider, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name = inner.name
        self.model = provider_model(inner)

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        """Answer through the inner provider and record the exchange."""
        config = resolve_config(self.inner, config)
        output = await self.inner.generate(messages, tools, config, sample_index)
        record = {
            "hash": request_hash(messages, tools, config, sample_index),
            "request": canonical_request(messages, tools, config, sample_index),
            "response": output.to_dict(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        return output


def load_recording(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a JSONL recording, in order (blank lines skipped).

    Raises:
        ValueError: A line is not a JSON object with ``hash`` and ``response``
            (:class:`~veritask._util.InputError` when the file is not UTF-8 JSON lines within
            the reader's limits).
    """
    records = []
    text = read_text(Path(path), what=str(path))
    for number, record in iter_jsonl(text, what=str(path)):
        if not isinstance(record, dict) or "hash" not in record or "response" not in record:
            raise ValueError(f"{path}:{number}: not a recording line (needs hash and response)")
        records.append(record)
    return records


def _single_model(records: list[dict[str, Any]]) -> str:
    """The model every record names, or empty when they name several (or none)."""
    models = {str(r.get("request", {}).get("model", "")) for r in records}
    return models.pop() if len(models) == 1 else ""


class ReplayProvider:
    """Answers from a recording by request hash; never calls a model.

    Args:
        path: A JSONL file written by :class:`RecordingProvider`.
        model: The model name used in hashes when the config names none; by default the one
            model the recording holds (pass it when the recording holds several).
    """

    def __init__(self, path: str | os.PathLike[str], *, model: str | None = None) -> None:
        self.path = Path(path)
        records = load_recording(self.path)
        self._responses: dict[str, dict[str, Any]] = {}
        for record in records:
            self._responses.setdefault(str(record["hash"]), record["response"])
        self.name = "replay"
        self.model = model if model is not None else _single_model(records)

    def __len__(self) -> int:
        return len(self._responses)

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        """The recorded output for this request (see :class:`ModelProvider`).

        Raises:
            ReplayMiss: Nothing was recorded for this request's hash.
        """
        config = resolve_config(self, config)
        key = request_hash(messages, tools, config, sample_index)
        response = self._responses.get(key)
        if response is None:
            raise ReplayMiss(
                f"no recorded response for request hash {key} (model {config.model!r}, "
                f"{len(messages)} message(s), sample {sample_index}) in {self.path} "
                f"({len(self._responses)} recorded)"
            )
        return ModelOutput.from_dict(response)
