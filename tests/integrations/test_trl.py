"""TRL integration: generated tool methods pass transformers' schema extraction with veritask's
schema, oracle episodes through the class earn 1.0, and a real GRPOTrainer accepts the class and
runs a training step on CPU with a tiny, locally built model."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from veritask.integrations import VeritaskEnv
from veritask.integrations.trl import (
    VeritaskTRLEnv,
    build_grpo_dataset,
    environment_factories,
    make_environment_class,
    proximity_reward,
    score_completion,
    veritask_reward,
    violation_penalty,
)
from veritask.synth import generate
from veritask.task import TaskPackage

DOMAINS = ["mock", "travel"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("trl")
    out = {}
    for domain in DOMAINS:
        generate(domain, 10, 3, root / domain)
        out[domain] = str(root / domain)
    return out


def _packages(dataset: str) -> dict[str, TaskPackage]:
    return {p.id: p for p in VeritaskEnv(dataset).source.packages}


def _tool_methods(cls: type) -> list[str]:
    """What TRL exposes as tools: public functions other than reset and get_reward."""
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def _veritask_tools(dataset: str) -> dict[str, dict[str, Any]]:
    env = VeritaskEnv(dataset)
    env.reset(0)
    return {t["function"]["name"]: t["function"] for t in env.tools}


@pytest.mark.parametrize("domain", DOMAINS)
def test_tool_methods_match_the_veritask_schemas(datasets: dict[str, str], domain: str) -> None:
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    cls = make_environment_class(datasets[domain])
    instance = cls()
    want = _veritask_tools(datasets[domain])
    assert sorted(_tool_methods(cls)) == sorted(want)
    for name, spec in want.items():
        got = get_json_schema(getattr(instance, name))["function"]
        assert get_json_schema(getattr(cls, name))["function"] == got
        assert got["name"] == name
        assert got["description"] == spec["description"].strip()
        params, props = got["parameters"], spec["parameters"]["properties"]
        assert list(params["properties"]) == list(props)
        assert params.get("required", []) == spec["parameters"]["required"]
        for arg, schema in props.items():
            extracted = params["properties"][arg]
            assert extracted["type"] == schema["type"], (name, arg)
            assert extracted.get("enum") == schema.get("enum"), (name, arg)
            if "description" in schema:
                assert extracted["description"] == " ".join(schema["description"].split())
            assert extracted.get("nullable", False) == (arg not in spec["parameters"]["required"])


def test_python_keyword_arguments_keep_their_names(datasets: dict[str, str]) -> None:
    """travel's flight bookings have a ``class`` column: the method takes ``class=...``."""
    cls = make_environment_class(datasets["travel"])
    sig = inspect.signature(cls.query_flight_bookings)  # type: ignore[attr-defined]
    assert "class" in sig.parameters
    env = cls()
    env.reset(task_id=next(iter(_packages(datasets["travel"]))))
    rows = json.loads(env.query_flight_bookings(**{"class": "ECONOMY"}))  # type: ignore[attr-defined]
    assert all(r["class"] == "ECONOMY" for r in rows["rows"])


def test_chat_template_rendering_accepts_every_method(datasets: dict[str, str]) -> None:
    """transformers' own callable-to-schema path, the one TRL's apply_chat_template uses."""
    utils = pytest.importorskip("transformers.utils.chat_template_utils")
    cls = make_environment_class(datasets["travel"])
    env = cls()
    methods = [getattr(env, n) for n in _tool_methods(cls)]
    rendered, _ = utils.render_jinja_template(
        conversations=[[{"role": "user", "content": "hi"}]],
        tools=methods,
        chat_template="{{ tools | tojson }}",
    )
    names = {t["function"]["name"] for t in json.loads(rendered[0])}
    assert names == set(_veritask_tools(datasets["travel"]))


@pytest.mark.parametrize("domain", DOMAINS)
def test_oracle_episodes_earn_the_verified_reward(datasets: dict[str, str], domain: str) -> None:
    dataset = datasets[domain]
    cls = make_environment_class(dataset)
    packages = _packages(dataset)
    rows = build_grpo_dataset(dataset)
    assert set(rows.column_names) >= {"prompt", "task_id", "domain"}
    assert len(rows) == len(packages)
    env = cls()  # one instance reused across rows, as TRL's pool does
    for row in rows:
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert env.reset(**row) == ""  # the prompt already holds the whole observation
        for call in packages[row["task_id"]].witness:
            answer = getattr(env, call.tool)(**call.args)
            assert isinstance(answer, str) and json.loads(answer) is not None
        assert env.get_reward() == 1.0, row["task_id"]
        traj = env.veritask_env.trajectory()
        assert [s.tool for s in traj.steps] == [c.tool for c in packages[row["task_id"]].witness]
        assert all(traj.messages[s.turn]["role"] == "assistant" for s in traj.steps)


def test_noop_episodes(datasets: dict[str, str]) -> None:
    dataset = datasets["mock"]
    cls = make_environment_class(dataset)
    packages = _packages(dataset)
    env = cls()
    seen = set()
    for row in build_grpo_dataset(dataset):
        env.reset(**row)
        refusal = packages[row["task_id"]].refusal
        assert env.get_reward() == (1.0 if refusal else 0.0)
        seen.add(refusal)
    assert seen == {True, False}


def test_instances_are_isolated(datasets: dict[str, str]) -> None:
    dataset = datasets["mock"]
    cls = make_environment_class(dataset)
    pkg = next(p for p in _packages(dataset).values() if not p.refusal)
    solver, idle = cls(), cls()
    solver.reset(task_id=pkg.id)
    idle.reset(task_id=pkg.id)
    for call in pkg.witness:
        getattr(solver, call.tool)(**call.args)
    assert (solver.get_reward(), idle.get_reward()) == (1.0, 0.0)


def test_reset_without_a_prepared_prompt(datasets: dict[str, str]) -> None:
    dataset = datasets["mock"]
    cls = make_environment_class(dataset)
    env = cls()
    obs = env.reset(prompt=[{"role": "user", "content": ""}])  # TRL's placeholder prompt
    assert env.veritask_env.task.policy in obs
    assert env.veritask_env.messages[1]["content"] in obs
    first = env.veritask_env.task.package.id
    env.reset(prompt=[{"role": "user", "content": ""}])
    assert env.veritask_env.task.package.id != first  # cycles through the tasks


def test_bad_calls_answer_structured_errors(datasets: dict[str, str]) -> None:
    cls = make_environment_class(datasets["mock"])
    env = cls()
    with pytest.raises(RuntimeError):
        env.query_books()  # type: ignore[attr-defined]
    env.reset(task_id=next(iter(_packages(datasets["mock"]))))
    answer = json.loads(env.insert_loans(member_id="nobody", book_id="b_dune", bogus=1))  # type: ignore[attr-defined]
    assert "error" in answer and answer["error"]["code"]
    assert env.veritask_env.steps[-1].ok is False


def test_reward_functions(datasets: dict[str, str]) -> None:
    dataset = datasets["mock"]
    cls = make_environment_class(dataset)
    pkg = next(p for p in _packages(dataset).values() if not p.refusal)
    solved, idle = cls(), cls()
    for env in (solved, idle):
        env.reset(task_id=pkg.id)
    for call in pkg.witness:
        getattr(solved, call.tool)(**call.args)
    completions: list[Any] = [[{"role": "assistant", "content": "done"}]] * 2
    assert veritask_reward(completions, environments=[solved, idle]) == [1.0, 0.0]
    prox = proximity_reward(completions, environments=[solved, idle])
    assert prox[0] == 1.0 and prox[1] is not None and prox[1] < 1.0
    refused = sum(1 for s in solved.veritask_env.steps if s.error and s.error.get("violated_rule"))
    assert violation_penalty(completions, environments=[solved, idle]) == [-float(refused), 0.0]
    # without environments: replay the completion's tool calls (TRL's completion format)
    oracle = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": c.tool, "arguments": c.args}}
                for c in pkg.witness
            ],
        }
    ]
    idle_completion = [{"role": "assistant", "content": "no"}]
    replayed = veritask_reward([oracle, idle_completion], task_id=[pkg.id] * 2, dataset=dataset)
    assert replayed == [1.0, 0.0]
    assert score_completion(dataset, pkg.id, oracle)["reward"] == 1.0
    assert veritask_reward(completions) == [None, None]


def test_one_class_per_domain(datasets: dict[str, str]) -> None:
    classes = environment_factories(datasets["travel"])
    assert list(classes) == ["travel"] and issubclass(classes["travel"], VeritaskTRLEnv)
    with pytest.raises(ValueError):
        make_environment_class(datasets["travel"], domain="mock")
    rows = build_grpo_dataset(datasets["travel"], environment_column=True)
    assert set(rows["environment"]) == {"travel"}


def _tiny_tokenizer_and_model() -> tuple[Any, Any]:
    """A byte-level BPE tokenizer with Qwen3's chat template (shipped by TRL) and a random
    one-layer Qwen3 model: nothing is downloaded."""
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
    specials += ["<think>", "</think>", "<tool_response>", "</tool_response>"]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    bpe = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tk.train_from_iterator(['{"name": "query", "arguments": {}}'], trainer=bpe)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    config = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
    )
    return tok, Qwen3ForCausalLM(config)


@pytest.mark.parametrize("domain", DOMAINS)
def test_grpo_trainer_accepts_the_environment(
    datasets: dict[str, str], domain: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRL's GRPOTrainer probes the class (reset, tools, get_reward) and renders every tool
    method into the prompt as its trainer does; on ``mock`` (short policy) it also runs one GRPO
    step on CPU, rewarded by the environment's get_reward."""
    trl = pytest.importorskip("trl")
    pytest.importorskip("torch")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    dataset = datasets[domain]
    cls = make_environment_class(dataset)
    rows = build_grpo_dataset(dataset).select(range(2))
    tok, model = _tiny_tokenizer_and_model()
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=1,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
    )
    trainer = trl.GRPOTrainer(
        model=model, processing_class=tok, args=args, train_dataset=rows, environment_factory=cls
    )
    tools = _veritask_tools(dataset)
    assert sorted(t.__name__ for t in trainer.tools) == sorted(tools)
    assert cls.__name__ in trainer.reward_func_names
    rendered = trainer.processing_class.apply_chat_template(
        rows[0]["prompt"], tools=trainer.tools, tokenize=False, add_generation_prompt=True
    )
    for name in tools:
        assert f'"name": "{name}"' in rendered
    if domain != "mock":
        return
    trainer.train()
    logged = trainer.state.log_history[0]
    assert 0.0 <= logged[f"rewards/{cls.__name__}/mean"] <= 1.0
