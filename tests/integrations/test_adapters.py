"""The OpenAI-endpoint episode and the adapters on it (AReaL, ART, SkyRL), driven end to end
by an oracle or a do-nothing policy served as a chat-completions endpoint in process (the real
``openai`` client over an ``httpx`` mock transport): oracle 1.0, noop 0.0 on non-refusal tasks."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")

from veritask.integrations import run_episode  # noqa: E402
from veritask.integrations.areal import VeritaskAReaLAgent  # noqa: E402
from veritask.integrations.art import art_rollout  # noqa: E402
from veritask.integrations.skyrl import VeritaskTextEnv, skyrl_rows  # noqa: E402
from veritask.integrations.toolparse import parse_tool_calls, strip_tool_calls  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402

BASE = "http://policy.test/v1"


@pytest.fixture(scope="module")
def task(solvable: list[TaskPackage]) -> TaskPackage:
    return solvable[0]


def _endpoint(witness: list[Any]) -> Any:
    """An httpx client whose transport answers chat completions like the oracle (the k-th
    witness call on the k-th assistant turn, then text) or, with no witness, the noop agent."""

    def handle(request: Any) -> Any:
        body = json.loads(request.content)
        assert body["tools"], "the domain's tools reach the model"
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        message: dict[str, Any] = {"role": "assistant", "content": "All done."}
        finish = "stop"
        if turn < len(witness):
            call = witness[turn]
            arguments = json.dumps(call.args)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{turn}",
                        "type": "function",
                        "function": {"name": call.tool, "arguments": arguments},
                    }
                ],
            }
            finish = "tool_calls"
        payload = {
            "id": f"cmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return httpx.Response(200, json=payload)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def _expected(mode: str) -> float:
    return 1.0 if mode == "oracle" else 0.0


def _witness(task: TaskPackage, mode: str) -> list[Any]:
    return list(task.witness) if mode == "oracle" else []


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_run_episode_through_the_openai_client(dataset: str, task: TaskPackage, mode: str) -> None:
    async def play() -> Any:
        async with _endpoint(_witness(task, mode)) as http:
            return await run_episode(task.id, BASE, "policy", "k", http, dataset=dataset)

    result = asyncio.run(play())
    assert result.reward == _expected(mode) and result.task_id == task.id
    assert len(result.turn_rewards) == sum(1 for m in result.messages if m["role"] == "assistant")
    assert all(o.choice is not None for o in result.outputs)


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_areal_agent_workflow(dataset: str, task: TaskPackage, mode: str) -> None:
    agent = VeritaskAReaLAgent(dataset=dataset, temperature=1.0)

    async def play() -> float:
        async with _endpoint(_witness(task, mode)) as http:
            return await agent.run({"task_id": task.id}, base_url=BASE, http_client=http)

    assert asyncio.run(play()) == _expected(mode)


class _ArtTrajectory:
    """ART's ``Trajectory`` fields as ``art/trajectories.py`` declares them."""

    def __init__(
        self, messages_and_choices: list[Any], tools: list[Any], reward: float, metrics: dict
    ) -> None:
        self.messages_and_choices, self.reward, self.metrics = messages_and_choices, reward, metrics
        self.tools = tools


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_art_rollout(
    dataset: str, task: TaskPackage, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "art" not in sys.modules or not hasattr(sys.modules["art"], "TrainableModel"):
        monkeypatch.setitem(sys.modules, "art", types.SimpleNamespace(Trajectory=_ArtTrajectory))
    model = types.SimpleNamespace(
        name="policy", inference_base_url=BASE, inference_api_key="k", inference_model_name="p"
    )

    async def play() -> Any:
        async with _endpoint(_witness(task, mode)) as http:
            return await art_rollout(model, task.id, dataset=dataset, http_client=http)

    traj = asyncio.run(play())
    assert traj.reward == _expected(mode)
    kinds = {type(item).__name__ for item in traj.messages_and_choices}
    assert kinds == {"dict", "Choice"}  # raw choices for the trainable turns
    assert traj.tools and {t["function"]["name"] for t in traj.tools} >= {
        c.tool for c in task.witness
    }


def test_art_follows_the_latest_checkpoint() -> None:
    from veritask.integrations.art import inference_name

    class Model:
        inference_model_name = "agent-001@0"  # what the backend answered at registration
        step = 3

        def get_inference_name(self) -> str:
            return f"agent-001@{self.step}"

    assert inference_name(Model()) == "agent-001@3"
    legacy = types.SimpleNamespace(name="agent-001", inference_model_name="agent-001@0")
    assert inference_name(legacy) == "agent-001@0"


def _hermes(call: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': call.tool, 'arguments': call.args})}\n</tool_call>"


def _xml(call: Any) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for k, v in call.args.items()
    )
    return f"<tool_call>\n<function={call.tool}>\n{params}</function>\n</tool_call>"


@pytest.mark.parametrize(
    ("mode", "render"), [("oracle", _hermes), ("oracle", _xml), ("noop", _hermes)]
)
def test_skyrl_text_env(dataset: str, task: TaskPackage, mode: str, render: Any) -> None:
    row = next(r for r in skyrl_rows(dataset) if r["extra_info"]["task_id"] == task.id)
    assert row["env_class"] == "veritask"
    env = VeritaskTextEnv({}, row)
    prompt, meta = env.init(row["prompt"])
    assert prompt == row["prompt"] and meta["tools"]
    out: dict[str, Any] = {"done": False}
    for call in _witness(task, mode):
        out = env.step("Let me do that.\n" + render(call))
        assert out["observations"][0]["content"].startswith("<tool_response>")
    for _ in range(20):
        if out["done"]:
            break
        out = env.step("All done.")
    assert out["done"] and out["reward"] == _expected(mode)
    env.close()


def test_tool_call_parsing() -> None:
    text = 'ok <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    xml = "<tool_call>\n<function=g>\n<parameter=b>\nx y\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>"
    (hermes,) = parse_tool_calls(text)
    assert hermes["function"] == {"name": "f", "arguments": '{"a": 1}'}
    (q3,) = parse_tool_calls(xml)
    assert q3["function"]["name"] == "g"
    assert json.loads(q3["function"]["arguments"]) == {"b": "x y", "n": 3}
    (bad,) = parse_tool_calls("<tool_call>{oops</tool_call>")
    assert bad["function"]["name"] == "__invalid__"
    assert strip_tool_calls(text) == "ok"
    assert parse_tool_calls("no calls") == []


def test_skyrl_registration(dataset: str) -> None:
    skyrl_gym = pytest.importorskip("skyrl_gym")
    from veritask.integrations.skyrl import register

    register()
    row = skyrl_rows(dataset)[0]
    env = skyrl_gym.make("veritask", env_config={}, extras=row)
    assert isinstance(env, VeritaskTextEnv)
    assert env.init(row["prompt"])[1]["task_id"] == row["extra_info"]["task_id"]
    env.close()


def _rllm_modules() -> dict[str, Any]:
    """rLLM's ``rllm.types`` (``Step``, ``Trajectory``, ``Episode``) and ``rllm.eval.types``
    (``EvalOutput``, ``Signal``) with the fields ``rllm/types.py`` and ``rllm/eval/types.py``
    declare and the adapter uses (rLLM is not on PyPI)."""
    from dataclasses import dataclass, field

    from pydantic import BaseModel, Field

    class Step(BaseModel):
        chat_completions: list[dict[str, Any]] = Field(default_factory=list)
        model_response: str = ""
        reward: float = 0.0
        done: bool = False

    class Trajectory(BaseModel):
        name: str = "default_traj_name"
        task: Any = None
        steps: list[Step] = Field(default_factory=list)
        reward: float | None = None
        metadata: dict | None = None

    class Episode(BaseModel):
        task: Any = None
        trajectories: list[Trajectory] = Field(default_factory=list)

    @dataclass
    class Signal:
        name: str
        value: float
        metadata: dict = field(default_factory=dict)

    @dataclass
    class EvalOutput:
        reward: float
        is_correct: bool
        signals: list[Signal] = field(default_factory=list)
        metadata: dict = field(default_factory=dict)

    rllm = types.ModuleType("rllm")
    rllm_types = types.SimpleNamespace(Step=Step, Trajectory=Trajectory, Episode=Episode)
    eval_types = types.SimpleNamespace(EvalOutput=EvalOutput, Signal=Signal)
    return {
        "rllm": rllm,
        "rllm.types": rllm_types,
        "rllm.eval": rllm,
        "rllm.eval.types": eval_types,
    }


@pytest.fixture
def rllm(monkeypatch: pytest.MonkeyPatch) -> Any:
    try:
        import rllm.types as real  # the real package when installed
    except ImportError:
        for name, module in _rllm_modules().items():
            monkeypatch.setitem(sys.modules, name, module)
        real = sys.modules["rllm.types"]
    return real


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_rllm_flow_and_evaluator(dataset: str, task: TaskPackage, mode: str, rllm: Any) -> None:
    from veritask.integrations.rllm import VeritaskEvaluator, VeritaskFlow, rllm_rows

    row = next(r for r in rllm_rows(dataset) if r["task_id"] == task.id)
    rllm_task = types.SimpleNamespace(id=row["id"], instruction=row["instruction"], metadata=row)
    config = types.SimpleNamespace(base_url=BASE, model="policy", session_uid="s", metadata={})

    async def play() -> Any:
        async with _endpoint(_witness(task, mode)) as http:
            return await VeritaskFlow(http_client=http).arun(rllm_task, config)

    traj = asyncio.run(play())
    assert traj.reward == _expected(mode)
    assert traj.steps and traj.steps[-1].done
    assert traj.steps[0].chat_completions[-1]["role"] == "assistant"
    episode = rllm.Episode(task=row, trajectories=[traj])
    out = VeritaskEvaluator().evaluate(rllm_task, episode)
    assert out.reward == _expected(mode) and out.is_correct is (mode == "oracle")
    assert {s.name for s in out.signals} == {"proximity", "violations"}


def test_rllm_evaluator_refuses_foreign_or_missing_runs(dataset: str, rllm: Any) -> None:
    from veritask.integrations.rllm import VeritaskEvaluator

    empty = rllm.Episode(task={}, trajectories=[rllm.Trajectory()])
    assert VeritaskEvaluator().evaluate({"task_id": "x"}, empty).reward == 0.0
    meta = {"veritask": {"task_id": "a", "dataset_dir": dataset, "calls": []}}
    other = rllm.Episode(trajectories=[rllm.Trajectory(metadata=meta)])
    with pytest.raises(ValueError, match="episode played"):
        VeritaskEvaluator().evaluate({"task_id": "b"}, other)


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_areal_per_response_rewards_are_keyed_by_completion_id(
    dataset: str, task: TaskPackage, mode: str
) -> None:
    agent = VeritaskAReaLAgent(dataset=dataset, per_response=True)

    async def play() -> Any:
        async with _endpoint(_witness(task, mode)) as http:
            one = agent.run({"task_id": task.id}, base_url=BASE, http_client=http)
            # a second episode on the same client at the same time records only its own ids
            other = VeritaskAReaLAgent(dataset=dataset).run(
                {"task_id": task.id}, base_url=BASE, http_client=http
            )
            return await asyncio.gather(one, other)

    rewards, alone = asyncio.run(play())
    turns = len(_witness(task, mode)) + (1 if mode == "oracle" else 0)
    assert isinstance(rewards, dict) and list(rewards)[: len(_witness(task, mode))] == [
        f"cmpl-{i}" for i in range(len(_witness(task, mode)))
    ]
    assert len(rewards) >= turns and list(rewards.values())[-1] == _expected(mode) == alone
    dense = list(rewards.values())[:-1]  # the per-turn P_t changes: they add up to P_T - P_0
    assert all(-1.0 <= r <= 1.0 for r in dense) and (mode == "oracle" or not any(dense))
