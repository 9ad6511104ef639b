"""LLM mode offline: scripted Client, Consultant and Projector models on the travel domain.

One scripted provider plays every role; it tells them apart by their system prompts. The
Consultant script works the way the prompt asks a model to: it authenticates the client, reads
their trips, offers a menu, resolves the hotel the client describes through reads, asks for
confirmation, makes the write, and when the policy rejects a non-preferred hotel retries with a
preferred one. The Client script introduces itself, picks one option (by its inspiration line),
changes its mind once before confirming, sometimes asks for a hotel for the trip it has just
opened, and stops when told the outcome. The Projector script rewrites the spoiler-free draft it
is given. The scripts are pure functions of the conversation, so a replay gives the same bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, Snapshot
from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelOutput,
    Prices,
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    extract_json,
    load_recording,
    register_provider,
)
from veritask.policy import render_wiki
from veritask.synth import DomainModel, ExplorerLimits, LLMExplorer, generate, replay
from veritask.synth._llm_explorer import ABANDON, STOP
from veritask.task import DatasetDir, check_dataset, load_dataset, report_dataset

Message = dict[str, Any]
Script = Callable[[list[Message], list[Message] | None], Any]

_WHO = re.compile(r'You are (?P<name>[^(\n]+?) \(user id: "(?P<uid>[^"]+)"\)')
_PURPOSE = re.compile(r"(?:request for|call it|my trip) '([^']+)'")
_INSPIRATION = re.compile(r'Inspiration for anything new you need to name or describe: "(.*)"')
_UID = re.compile(r'user id "([^"]+)"')
_OPEN = ("DRAFT", "APPROVED")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _call(name: str, **args: Any) -> Message:
    return {"content": None, "tool_calls": [{"name": name, "arguments": args}]}


def _role(messages: list[Message]) -> str:
    system = str(messages[0]["content"])
    for role in ("Client", "Consultant", "Projector"):
        if system.startswith(f"You are the {role}"):
            return role.lower()
    raise AssertionError(f"unknown role: {system[:60]!r}")


# -- the Client ------------------------------------------------------------------------------


def _goal_line(menu: str, inspiration: str) -> str:
    """Three times in four a hotel for one of the trips offered, else a new trip."""
    trips = re.findall(r"your trip '([^']+)'", menu)
    pick = _digest(inspiration)
    if not trips or pick % 4 == 0:
        return f"I'd like to open a new trip request for '{inspiration}'."
    return _hotel_line(trips[pick // 4 % len(trips)], 150 + pick % 300)


def _hotel_line(trip: str, cost: int) -> str:
    return f"I'd like to book a hotel for my trip '{trip}' for about ${cost}."


def _change_line(goal: str) -> str:
    if "hotel" in goal:
        cost = int(re.findall(r"\$(\d+)", goal)[-1])
        return f"Actually, I changed my mind: make it ${cost - 20}."
    purpose = _PURPOSE.findall(goal)[-1]
    return f"Actually, I changed my mind: call it '{purpose} (extended)'."


def _next_goal(mine: list[str], inspiration: str) -> str:
    """After a new trip, every other client also wants a hotel for it; others are done."""
    goals = [line for line in mine if "I'd like to" in line]
    if len(goals) > 1 or "hotel" in goals[0] or _digest(inspiration) % 2:
        return STOP
    purpose = _PURPOSE.findall(" ".join(mine))[-1]
    return "Also, " + _hotel_line(purpose, 200 + _digest(inspiration) % 100)


def client(messages: list[Message]) -> str:
    """Introduce yourself, pick an option, change your mind once, confirm, maybe ask for one
    more thing, stop."""
    system = str(messages[0]["content"])
    who = _WHO.search(system)
    assert who is not None
    found = _INSPIRATION.search(system)
    inspiration = found[1] if found else "A trip"
    mine = [str(m["content"]) for m in messages if m["role"] == "assistant"]
    heard = str(messages[-1]["content"])
    if not mine:
        return f'Hi, I\'m {who["name"]} (user id "{who["uid"]}"). What can you do for me?'
    if heard.startswith("Done."):
        return _next_goal(mine, inspiration)
    if heard.startswith("I can"):
        return _goal_line(heard, inspiration)
    if heard.startswith("Shall I") and not any(line.startswith("Actually") for line in mine):
        return _change_line(next(line for line in mine if "I'd like to" in line))
    if heard.startswith("Shall I"):
        return "Yes, please go ahead."
    return STOP


# -- the Consultant --------------------------------------------------------------------------

Log = list[tuple[str, dict[str, Any], Any]]


def tool_log(messages: list[Message]) -> Log:
    """``(tool, arguments, payload)`` of every tool call answered so far."""
    asked: dict[str, tuple[str, dict[str, Any]]] = {}
    log = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            asked[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"]))
        if m["role"] == "tool":
            name, args = asked[m["tool_call_id"]]
            log.append((name, args, json.loads(m["content"])))
    return log


def _rows(log: Log, tool: str) -> list[dict[str, Any]]:
    return next((p["rows"] for name, _, p in reversed(log) if name == tool), [])


def _goal(messages: list[Message]) -> tuple[str, str]:
    """The client's current goal line and everything said since."""
    said = [str(m["content"]) for m in messages if m["role"] == "user"]
    at = max(i for i, line in enumerate(said) if "I'd like to" in line)
    return said[at], " ".join(said[at:])


def _trip_proposal(purpose: str, uid: str) -> tuple[str, str, dict[str, Any]]:
    args = {"user_id": uid, "trip_purpose": purpose, "current_step": 10}
    return f"Shall I open the trip '{purpose}' at step 10?", "insert_travel_requests", args


def _hotel_proposal(trip: dict[str, Any], cost: int, log: Log) -> tuple[str, str, dict[str, Any]]:
    """A hotel for the trip: the first non-preferred vendor on file, tried first."""
    vendors = sorted(_rows(log, "query_preferred_vendors"), key=lambda v: str(v["id"]))
    vendor = next((v for v in vendors if v["vendor_type"] == "STANDARD"), vendors[0])
    step = trip["current_step"] or 10
    args = {
        "travel_request_id": trip["id"],
        "hotel_vendor_id": vendor["id"],
        "cost": cost,
        "booking_step": step,
    }
    question = f"Shall I book {vendor['name']} for trip '{trip['trip_purpose']}' at ${cost}, booking step {step}?"
    return question, "insert_hotel_bookings", args


def _after_write(log: Log) -> Message:
    """Report the outcome; after a vendor-type rejection, retry with a preferred hotel."""
    name, args, payload = log[-1]
    vendors = _rows(log, "query_preferred_vendors")
    error = payload.get("error") if isinstance(payload, dict) else None
    if error is None:
        vendor = next((v["name"] for v in vendors if v["id"] == args.get("hotel_vendor_id")), None)
        rejected = [p["error"]["message"] for n, _, p in log if n == name and "error" in p]
        if rejected and vendor is not None:
            return {"content": f"Done. {rejected[-1]}, so I booked {vendor} instead."}
        return {"content": "Done. Anything else?"}
    tried = {a.get("hotel_vendor_id") for n, a, _ in log if n == name}
    fresh = [v for v in vendors if v["vendor_type"] == "PREFERRED" and v["id"] not in tried]
    if error["violated_rule"] == "HOTEL_VENDOR_TYPE" and fresh:
        return _call(name, **{**args, "hotel_vendor_id": fresh[0]["id"]})
    return {"content": f"Sorry, that is not possible: {error['message']}."}


def _menu(log: Log) -> Message:
    trips = [t for t in _rows(log, "query_travel_requests") if t["status"] in _OPEN]
    menu = "".join(f"; or book a hotel for your trip '{t['trip_purpose']}'" for t in trips)
    return {"content": f"I can open a new trip request for you{menu}."}


def consultant(messages: list[Message]) -> Message:
    """Authenticate, read, offer a menu, resolve, confirm, write, recover once."""
    log = tool_log(messages)
    first = next(str(m["content"]) for m in messages if m["role"] == "user")
    uid_match = _UID.search(first)
    assert uid_match is not None
    uid = uid_match[1]
    if not log:
        return _call("query_users", id=uid)
    if len(log) == 1:
        return _call("query_travel_requests", user_id=uid)
    if messages[-1]["role"] == "tool" and log[-1][0].startswith("insert_"):
        return _after_write(log)
    if not any("I'd like to" in str(m["content"]) for m in messages if m["role"] == "user"):
        return _menu(log)
    goal, since = _goal(messages)
    if "hotel" not in goal:
        question, tool, args = _trip_proposal(_PURPOSE.findall(since)[-1], uid)
    else:
        purpose = _PURPOSE.findall(goal)[0]
        trip = next(
            (t for t in _rows(log, "query_travel_requests") if t["trip_purpose"] == purpose), None
        )
        if trip is None:
            return _call("query_travel_requests", user_id=uid)  # a trip opened in this episode
        if not _rows(log, "query_preferred_vendors"):
            return _call("query_preferred_vendors")
        cost = int(re.findall(r"\$(\d+)", since)[-1])
        question, tool, args = _hotel_proposal(trip, cost, log)
    if str(messages[-1]["content"]).startswith("Yes"):
        return _call(tool, **args)
    return {"content": question}


# -- the Projector ---------------------------------------------------------------------------


def projector(messages: list[Message]) -> str:
    """Rewrite the draft with a personality line."""
    draft = extract_json(str(messages[1]["content"]))
    draft["who_you_are"] += " You are friendly, brief, and like to double-check amounts."
    return json.dumps(draft)


def travel_script(
    the_client: Callable[[list[Message]], Any] = client,
    the_consultant: Callable[[list[Message]], Any] = consultant,
    the_projector: Callable[[list[Message]], Any] = projector,
) -> Script:
    """One model for every role, dispatched on the system prompt."""
    roles = {"client": the_client, "consultant": the_consultant, "projector": the_projector}

    def script(messages: list[Message], tools: list[Message] | None) -> Any:
        return roles[_role(messages)](messages)

    return script


PRICES = {"prompt_per_million": 2.0, "completion_per_million": 3.0}


def scripted(script: Script | None = None) -> ScriptedProvider:
    return ScriptedProvider(script or travel_script(), prices=PRICES)


def llm_generate(out: Path, provider: Any, n: int = 10, seed: int = 1, **kw: Any) -> Any:
    return generate("travel", n, seed, out, explorer="llm", model=provider, **kw)


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    """A recorded LLM-mode run of 20 travel packages (two units)."""
    root = tmp_path_factory.mktemp("llm")
    recording = root / "calls.jsonl"
    summary = llm_generate(root / "ds", RecordingProvider(scripted(), recording), n=20)
    return root / "ds", summary, recording


# -- (a) certified packages ------------------------------------------------------------------


def test_llm_mode_packages_are_certified(llm_run: tuple[Path, Any, Path]) -> None:
    out, summary, _ = llm_run
    assert summary.tasks == 20
    report = check_dataset(out).to_json()
    assert report["certified"] == report["spoiler_free"] == report["grounded"] == 20
    assert report["failures"] == []
    spec = load_domain("travel")
    compiled = CompiledDomain.from_spec(spec)
    env = Environment(compiled)
    ds = DatasetDir(out)
    packages = load_dataset(out)
    for pkg in packages:
        assert replay(env, ds.read_state(pkg.origin), pkg.witness), pkg.id
        assert env.distance(Snapshot(ds.read_state(pkg.target), compiled.layout)) == 0
        assert pkg.generator.startswith("veritask-llm/")
        assert "friendly, brief" in pkg.task_description
    # the Consultant's recovery from the vendor-type rule shows up as boundary hits
    assert any("HOTEL_VENDOR_TYPE" in p.rules_exercised for p in packages)
    assert {c.tool for p in packages for c in p.witness if c.ok} >= {
        "insert_travel_requests",
        "insert_hotel_bookings",
    }
    run = json.loads((out / "run.json").read_text())
    assert run["explorer"] == run["projector"] == "llm" and run["model"] == "scripted"


def test_mind_change_is_in_the_dialogue_and_the_final_write(
    llm_run: tuple[Path, Any, Path],
) -> None:
    out, _, recording = llm_run
    said = [r["response"]["message"]["content"] or "" for r in load_recording(recording)]
    assert any(line.startswith("Actually, I changed my mind") for line in said)
    trips = [
        c.args["trip_purpose"]
        for p in load_dataset(out)
        for c in p.witness
        if c.ok and c.tool == "insert_travel_requests"
    ]
    assert trips and all(t.endswith("(extended)") for t in trips)


# -- (b) spoiler repair and discard ----------------------------------------------------------


def leaky_projector(rounds: int) -> tuple[Callable[[list[Message]], str], list[str]]:
    """A projector that leaks a table name and a vendor id in its first ``rounds`` answers of
    each candidate; the repair messages it receives are collected."""
    repairs: list[str] = []

    def answer(messages: list[Message]) -> str:
        draft = extract_json(str(messages[1]["content"]))
        round_ = (len(messages) - 2) // 2
        if round_:
            repairs.append(str(messages[-1]["content"]))
        if round_ < rounds:
            draft["total_goal"] += " (see hotel_bookings for hv_budget_01)"
        return json.dumps(draft)

    return answer, repairs


def test_leaking_description_is_sent_back_and_regenerated(tmp_path: Path) -> None:
    answer, repairs = leaky_projector(rounds=1)
    summary = llm_generate(tmp_path / "ds", scripted(travel_script(the_projector=answer)), n=3)
    assert summary.tasks == 3
    assert repairs and all("schema identifier 'hotel_bookings'" in r for r in repairs)
    assert all("internal id 'hv_budget_01'" in r for r in repairs)
    assert "spoiler leak" not in summary.discarded
    record = summary.costs.modules["projector"]
    assert (record.attempts, record.successes) == (3, 3)
    assert record.calls == 6  # one leaking answer and one accepted answer per package
    assert check_dataset(tmp_path / "ds").ok
    assert not any("hv_budget_01" in p.task_description for p in load_dataset(tmp_path / "ds"))


def test_description_that_keeps_leaking_is_discarded(tmp_path: Path) -> None:
    answer, repairs = leaky_projector(rounds=99)
    summary = llm_generate(tmp_path / "ds", scripted(travel_script(the_projector=answer)), n=2)
    assert summary.tasks == 0
    record = summary.costs.modules["projector"]
    assert summary.discarded["spoiler leak"] == record.attempts > 0
    assert record.successes == 0 and record.calls == 3 * record.attempts  # two repair rounds
    assert len(repairs) == 2 * record.attempts


def vague_projector() -> tuple[Callable[[list[Message]], str], list[str]]:
    """A projector whose first answer per candidate drops every number from the requests and
    merges the sub-goals into one (without their triggers); the repair messages it receives are collected."""
    repairs: list[str] = []

    def answer(messages: list[Message]) -> str:
        draft = extract_json(str(messages[1]["content"]))
        if len(messages) > 2:
            repairs.append(str(messages[-1]["content"]))
            return json.dumps(draft)
        subs = draft["sub_goals"]
        vague = re.sub(r"\d+", "some", " ".join(s["request"] for s in subs))
        draft["sub_goals"] = [{"title": subs[0]["title"], "request": vague}]
        draft["total_goal"] = re.sub(r"\d+", "some", draft["total_goal"])
        return json.dumps(draft)

    return answer, repairs


def test_a_description_that_drops_requested_values_is_sent_back(tmp_path: Path) -> None:
    """The model's text carries the draft's structured requests, so it must still say every
    value they state; an answer that does not is repaired, and every package is grounded."""
    answer, repairs = vague_projector()
    summary = llm_generate(tmp_path / "ds", scripted(travel_script(the_projector=answer)), n=3)
    assert summary.tasks == 3
    assert repairs and all(("sub-goals" in r or "must state" in r) for r in repairs)
    report = check_dataset(tmp_path / "ds")
    assert report.grounded == report.tasks == 3 and report.ok
    for pkg in load_dataset(tmp_path / "ds"):
        assert all(sub.ask is not None for sub in pkg.task.sub_goals)


# -- (c) early stop on irreversible divergence -----------------------------------------------


def diverging_consultant(messages: list[Message]) -> Message:
    """Asked for anything, cancels the first draft trip without bookings: an irreversible
    write."""
    log = tool_log(messages)
    if not log:
        return _call(
            "query_travel_requests", status="DRAFT", flight_booking_count=0, hotel_booking_count=0
        )
    if len(log) == 1:
        trip = log[0][2]["rows"][0]
        return _call("update_travel_requests", id=trip["id"], status="CANCELLED")
    return {"content": "I have cancelled your trip."}


def wary_client(messages: list[Message]) -> str:
    heard = str(messages[-1]["content"])
    if "irreversible" in heard:
        return ABANDON
    return "Please book a hotel for my Chicago workshop."


def test_irreversible_divergence_stops_the_episode_early() -> None:
    spec = load_domain("travel")
    env = Environment(CompiledDomain.from_spec(spec))
    provider = ScriptedProvider(
        travel_script(the_client=wary_client, the_consultant=diverging_consultant)
    )
    ledger = CostLedger()
    limits = ExplorerLimits(max_turns=8)
    explorer = LLMExplorer(
        DomainModel.from_spec(spec), env, provider, render_wiki(spec), ledger, limits
    )
    found = asyncio.run(explorer.explore("u_staff_01"))
    assert found.stop == "irreversible divergence" and found.reason == "irreversible divergence"
    assert found.episode is None
    assert [c.irreversible for c in found.calls] == [False, True]
    assert ledger.modules["client"].calls == 2  # the opening line and the ABANDON
    assert ledger.modules["consultant"].calls == 3
    assert (ledger.modules["client"].attempts, ledger.modules["client"].successes) == (1, 0)


def test_divergence_is_counted_as_a_discard_reason(tmp_path: Path) -> None:
    provider = scripted(travel_script(the_client=wary_client, the_consultant=diverging_consultant))
    # seed 1: its first scene has a draft trip without bookings for the consultant to cancel
    summary = llm_generate(tmp_path / "ds", provider, n=1, seed=1)
    assert summary.discarded.get("irreversible divergence", 0) >= 1


def test_repeated_violations_stop_the_episode() -> None:
    def stubborn(messages: list[Message]) -> Message:
        return _call(
            "insert_travel_requests", user_id="u_staff_01", trip_purpose="", current_step=3
        )

    spec = load_domain("travel")
    env = Environment(CompiledDomain.from_spec(spec))
    provider = ScriptedProvider(travel_script(the_consultant=stubborn))
    explorer = LLMExplorer(DomainModel.from_spec(spec), env, provider, render_wiki(spec))
    found = asyncio.run(explorer.explore("u_staff_01"))
    assert found.stop == "repeated violations"
    assert len(found.calls) == 2  # the same rejected call twice brings no new information


# -- (d) resume does not recharge finished units ---------------------------------------------


class Counting:
    """Counts the calls that reach a provider."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.model, self.calls = inner, inner.name, inner.model, 0

    async def generate(
        self,
        messages: list[Message],
        tools: list[Message] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        self.calls += 1
        out: ModelOutput = await self.inner.generate(messages, tools, config, sample_index)
        return out


def test_resume_does_not_recharge_finished_units(
    tmp_path: Path, llm_run: tuple[Path, Any, Path]
) -> None:
    full, summary, recording = llm_run
    out = tmp_path / "resumed"
    llm_generate(out, ReplayProvider(recording), n=20)
    ds = DatasetDir(out)
    ds.part_path(1).unlink()
    ds.costs_path(1).unlink()
    ds.manifest.unlink()
    counting = Counting(ReplayProvider(recording))
    again = llm_generate(out, counting, n=20)
    assert again.resumed_units == 1
    unit1 = CostLedger.from_json(json.loads(DatasetDir(full).costs_path(1).read_text()))
    assert counting.calls == unit1.total().calls  # only the removed unit was explored again
    assert again.costs.to_json() == summary.costs.to_json()
    assert report_dataset(out)["costs"] == report_dataset(full)["costs"]
    assert ds.manifest.read_bytes() == (full / "manifest.jsonl").read_bytes()


# -- (e) the cost report adds up the scripted usage ------------------------------------------


class Metered:
    """Sums the usage of every answer per role."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.usage: dict[str, list[int]] = {}

    async def generate(
        self,
        messages: list[Message],
        tools: list[Message] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        out = await self.inner.generate(messages, tools, config, sample_index)
        row = self.usage.setdefault(_role(messages), [0, 0, 0])
        row[0] += 1
        row[1] += out.usage.prompt_tokens
        row[2] += out.usage.completion_tokens
        return out


def test_cost_report_adds_up_the_scripted_usage(tmp_path: Path) -> None:
    metered = Metered(scripted())
    llm_generate(tmp_path / "ds", metered, n=4)
    costs = report_dataset(tmp_path / "ds")["costs"]
    assert set(costs["modules"]) == {"client", "consultant", "projector"}
    for role, (calls, prompt, completion) in metered.usage.items():
        row = costs["modules"][role]
        assert (row["turns"], row["prompt_tokens"], row["completion_tokens"]) == (
            calls,
            prompt,
            completion,
        )
        assert row["cost"] == pytest.approx((2 * prompt + 3 * completion) / 1e6)
        assert row["per_package"]["prompt_tokens"] == pytest.approx(prompt / 4)
    total_prompt = sum(u[1] for u in metered.usage.values())
    total_completion = sum(u[2] for u in metered.usage.values())
    assert costs["total"]["prompt_tokens"] == total_prompt
    assert costs["per_package"]["tokens"] == pytest.approx((total_prompt + total_completion) / 4)
    assert costs["modules"]["projector"]["success_rate"] == 1.0
    repriced = report_dataset(tmp_path / "ds", prices={"default": Prices(10, 0)})["costs"]
    assert repriced["total"]["cost"] == pytest.approx(10 * total_prompt / 1e6)


def test_symbolic_datasets_have_no_cost_section(tmp_path: Path) -> None:
    summary = generate("mock", 4, 0, tmp_path / "sym")
    assert summary.costs is None
    assert "costs" not in report_dataset(tmp_path / "sym")
    assert not (tmp_path / "sym" / "costs").exists()


# -- (f) record, then replay: the same bytes -------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_replay_reproduces_the_dataset_bytes(
    tmp_path: Path, llm_run: tuple[Path, Any, Path]
) -> None:
    out, _, recording = llm_run
    llm_generate(tmp_path / "replayed", ReplayProvider(recording), n=20)
    assert _tree(tmp_path / "replayed") == _tree(out)


# -- (g) the command line --------------------------------------------------------------------


def test_cli_llm_without_model_is_a_clear_error(tmp_path: Path) -> None:
    args = ["generate", "--domain", "travel", "--n", "2", "--out", str(tmp_path / "x")]
    result = CliRunner().invoke(cli, [*args, "--explorer", "llm"])
    assert result.exit_code == 2
    assert "--explorer llm calls a model: add --model SPEC" in result.output
    result = CliRunner().invoke(cli, [*args, "--model", "scripted"])
    assert result.exit_code == 2 and "--model is only used with" in result.output
    assert not (tmp_path / "x").exists()


def test_cli_with_a_registered_provider(tmp_path: Path) -> None:
    register_provider("llmtest", lambda argument, **options: scripted())
    out = tmp_path / "ds"
    args = ["generate", "--domain", "travel", "--n", "3", "--seed", "2", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--explorer", "llm", "--model", "llmtest", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 3 and summary["costs"]["total"]["turns"] > 0
    result = CliRunner().invoke(cli, ["check", str(out), "--json"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["report", str(out), "--prices", "2,3"])
    assert result.exit_code == 0 and "consultant" in result.output
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "consultant: [1, 1]\ndefault: {prompt_per_million: 2, completion_per_million: 3}\n"
    )
    result = CliRunner().invoke(cli, ["report", str(out), "--json", "--prices", str(prices)])
    costs = json.loads(result.output)["costs"]
    assert costs["prices"]["consultant"] == {
        "prompt_per_million": 1.0,
        "completion_per_million": 1.0,
    }
    assert costs["prices"]["client"]["prompt_per_million"] == 2.0


# -- modes, workers, argument errors ---------------------------------------------------------


def test_concurrent_units_give_the_same_bytes(
    tmp_path: Path, llm_run: tuple[Path, Any, Path]
) -> None:
    out, _, recording = llm_run
    llm_generate(tmp_path / "w3", ReplayProvider(recording), n=20, workers=3)
    assert _tree(tmp_path / "w3") == _tree(out)


def test_mixed_modes(tmp_path: Path) -> None:
    a = generate("travel", 4, 0, tmp_path / "a", projector="llm", model=scripted())
    assert a.tasks == 4 and a.costs is not None and set(a.costs.modules) == {"projector"}
    b = generate(
        "travel", 4, 0, tmp_path / "b", explorer="llm", projector="symbolic", model=scripted()
    )
    assert b.tasks == 4 and b.costs is not None and set(b.costs.modules) == {"client", "consultant"}
    for out, generator in (
        (a.out, "veritask-symbolic-explorer-llm-projector/"),
        (b.out, "veritask-llm-explorer-symbolic-projector/"),
    ):
        assert check_dataset(out).ok
        assert all(p.generator.startswith(generator) for p in load_dataset(out))


def test_mode_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="calls a model"):
        generate("travel", 2, 0, tmp_path / "x", explorer="llm")
    with pytest.raises(ValueError, match="calls a model"):
        generate("travel", 2, 0, tmp_path / "x", projector="llm")
    with pytest.raises(ValueError, match="only used with"):
        generate("travel", 2, 0, tmp_path / "x", model=scripted())
    with pytest.raises(ValueError, match="must be 'symbolic' or 'llm'"):
        generate("travel", 2, 0, tmp_path / "x", explorer="gpt", model=scripted())  # type: ignore[arg-type]
    llm_generate(tmp_path / "y", scripted(), n=1)
    with pytest.raises(ValueError, match="different run"):
        generate("travel", 1, 1, tmp_path / "y")  # the same directory, now symbolic


def test_build_episode_hits_declined_and_refusal() -> None:
    from veritask.synth._llm_explorer import ExploredCall, build_episode
    from veritask.task import WitnessCall

    model = DomainModel.from_spec(load_domain("travel"))

    def rejected(tool: str, rule: str, **args: Any) -> ExploredCall:
        error = {"code": "X", "message": "no", "violated_rule": rule, "hint": ""}
        return ExploredCall(WitnessCall(tool=tool, args=args, ok=False, error=error))

    def accepted(tool: str, **args: Any) -> ExploredCall:
        return ExploredCall(WitnessCall(tool=tool, args=args, ok=True, result={"id": 9}))

    read = ExploredCall(WitnessCall(tool="query_users", args={"id": "u"}, ok=True))
    trip = {"user_id": "u", "trip_purpose": "Expo", "current_step": 3}
    hotel = {"travel_request_id": 1, "hotel_vendor_id": "hv_budget_01", "cost": 90}
    calls = [
        read,
        rejected("insert_travel_requests", "TR_USER_ACTIVE", **trip),
        rejected("insert_hotel_bookings", "HOTEL_VENDOR_TYPE", **hotel),
        accepted("insert_hotel_bookings", **{**hotel, "hotel_vendor_id": "hv_marriott_01"}),
    ]
    episode = build_episode(model, "u", calls)
    assert episode is not None and episode.refusal is None
    assert episode.declined is not None and episode.declined[3].id == "TR_USER_ACTIVE"
    [goal] = episode.subgoals
    assert goal.tx.tool == "insert_hotel_bookings"
    assert [(h.rule, h.changed) for h in goal.hits] == [
        ("HOTEL_VENDOR_TYPE", {"hotel_vendor_id": ("hv_budget_01", "hv_marriott_01")})
    ]
    assert episode.rejected == ["TR_USER_ACTIVE", "HOTEL_VENDOR_TYPE"]
    refusal = build_episode(model, "u", calls[:2])
    assert refusal is not None and refusal.subgoals == []
    assert refusal.refusal is not None and refusal.refusal[0].tool == "insert_travel_requests"
    assert build_episode(model, "u", [read]) is None


def test_generate_async_runs_inside_an_event_loop(
    llm_run: tuple[Path, Any, Path], tmp_path: Path
) -> None:
    from veritask.synth import generate_async

    recorded, _, recording = llm_run

    async def inside_a_loop() -> Any:
        # a caller that is already async (a notebook, an async trainer) awaits it directly
        return await generate_async(
            "travel", 20, 1, tmp_path / "ds", explorer="llm", model=ReplayProvider(recording)
        )

    summary = asyncio.run(inside_a_loop())
    assert summary.tasks == 20 and summary.costs is not None
    assert (tmp_path / "ds" / "manifest.jsonl").read_bytes() == (
        recorded / "manifest.jsonl"
    ).read_bytes()
    symbolic = asyncio.run(generate_async("mock", 10, 0, tmp_path / "sym"))
    assert symbolic.tasks == 10 and symbolic.costs is None
