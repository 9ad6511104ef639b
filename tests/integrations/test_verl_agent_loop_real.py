"""The veritask agent loop through verl's own classes (``make test-verl``; skipped where verl is
not installed): built from verl's registry by ``hydra.utils.instantiate`` with the arguments
verl's ``AgentLoopWorker`` passes, on a tiny local byte-level tokenizer with a ChatML template,
verl's hermes tool parser and continuous-token builder, and a scripted ``server_manager`` that
answers like the oracle or the do-nothing policy. Nothing is downloaded and no GPU is used."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl.experimental.agent_loop.tool_agent_loop")

import hydra
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from veritask.integrations import verl_agent_loop as val
from veritask.integrations.verl import verl_rows
from veritask.task import TaskPackage

CHATML = (
    "{% for m in messages %}"
    "{% if m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}"
    "<|im_end|>\n"
    "{% elif m.role == 'tool' %}<|im_start|>user\n<tool_response>{{ m.content }}"
    "</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    bpe = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tk.train_from_iterator(['<tool_call>{"name": "query", "arguments": {}}'], trainer=bpe)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = CHATML
    return tok


# dataset, packages and solvable: conftest.py beside this file


@pytest.fixture(scope="module")
def rows(dataset: str) -> dict[str, dict[str, Any]]:
    return {r["extra_info"]["task_id"]: r for r in verl_rows(dataset, agent_name=val.AGENT_NAME)}


class Server:
    """``server_manager``: one scripted reply per ``generate`` (then "All done.")."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer, self.replies, self.calls = tokenizer, list(replies), 0

    async def generate(self, request_id: str, *, prompt_ids: list[int], **kw: Any) -> Any:
        self.calls += 1
        text = (self.replies.pop(0) if self.replies else "All done.") + "<|im_end|>"
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return TokenOutput(token_ids=ids, extra_fields={"global_steps": 3})


def config() -> Any:
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 131072,
                    "response_length": 131072,
                    "full_determinism": False,
                    "multi_turn": {
                        "max_user_turns": None,
                        "max_assistant_turns": 40,
                        "max_parallel_calls": 1,
                        "max_tool_response_length": 4096,
                        "tool_response_truncate_side": "middle",
                        "format": "hermes",
                    },
                }
            },
            "data": {"apply_chat_template_kwargs": {}, "mm_processor_kwargs": {}},
        }
    )


def build(entry: Any, tokenizer: Any, server: Server) -> Any:
    """The loop as verl's ``AgentLoopWorker._run_agent_loop`` builds it."""
    cfg = config()
    return hydra.utils.instantiate(
        config=entry,
        trainer_config=DictConfigWrap(config=cfg),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(cfg.data),
        tools=ToolListWrap([]),
    )


def oracle(task: TaskPackage) -> list[str]:
    return [
        f"<tool_call>{json.dumps({'name': c.tool, 'arguments': c.args}, default=str)}</tool_call>"
        for c in task.witness
    ]


def play(
    entry: Any, tokenizer: Any, server: Server, row: dict[str, Any], extra_info: Any = None
) -> Any:
    """Build the loop and run one row, inside one event loop (verl binds the loop at build)."""

    async def go() -> Any:
        loop = build(entry, tokenizer, server)
        assert isinstance(loop, val.VeritaskAgentLoop)
        return await loop.run(
            {"temperature": 1.0},
            raw_prompt=row["prompt"],
            extra_info=row["extra_info"] if extra_info is None else extra_info,
            tools_kwargs={},
            data_source=row["data_source"],
        )

    return asyncio.run(go())


def test_registered_under_its_name() -> None:
    assert _agent_loop_registry[val.AGENT_NAME] == {"_target_": f"{val.__name__}.VeritaskAgentLoop"}
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    assert issubclass(val.VeritaskAgentLoop, ToolAgentLoop)


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_episodes_through_verls_tool_agent_loop(
    mode: str, tokenizer: Any, solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    entry = _agent_loop_registry[val.AGENT_NAME]
    for task in solvable:
        server = Server(tokenizer, oracle(task) if mode == "oracle" else [])
        output = play(entry, tokenizer, server, rows[task.id])
        expected = 1.0 if mode == "oracle" else 0.0
        assert output.reward_score == expected
        summary = output.extra_fields[val.RESULT_KEY]
        assert summary["reward"] == expected and summary["user_stopped"] is True
        assert val.SESSION_KEY not in output.extra_fields
        assert output.extra_fields["global_steps"] == 3
        mask = output.response_mask
        generated = [t for t, m in zip(output.response_ids, mask, strict=True) if m == 1]
        inserted = [t for t, m in zip(output.response_ids, mask, strict=True) if m == 0]
        text = tokenizer.decode(generated, skip_special_tokens=True)
        assert text.count("All done.") == server.calls - len(task.witness) * (mode == "oracle")
        # every reply but the last is followed by an inserted turn: a tool result or the user's
        assert tokenizer.decode(inserted).count("<|im_start|>user\n") == server.calls - 1
        assert output.as_dict()["rm_scores"][-1] == expected


def test_the_agent_loop_config_file_drives_it(
    dataset: str,
    tokenizer: Any,
    solvable: list[TaskPackage],
    rows: dict[str, dict[str, Any]],
    tmp_path: Path,
) -> None:
    paths = val.write_verl_files(dataset, str(tmp_path))
    (entry,) = OmegaConf.load(paths["agent_loop_config"])  # as AgentLoopWorker reads it
    task = solvable[0]
    server = Server(tokenizer, oracle(task))
    output = play(entry, tokenizer, server, rows[task.id], {"task_id": task.id})  # dataset: entry
    assert output.reward_score == 1.0
