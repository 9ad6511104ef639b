"""EnvSession (one session over a start state) and SessionStore (the one session table)."""

from __future__ import annotations

import asyncio
import json

import pytest

from veritask.env import CompiledDomain, Environment
from veritask.task import EnvSession, EpisodeEnd, SessionStore, SessionStoreFull, UnknownSession

GOOD_LOAN = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}


class Box:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_store_refuses_beyond_capacity_after_expiring_idle_sessions() -> None:
    now = [0.0]
    store: SessionStore[Box] = SessionStore(capacity=2, idle_timeout=10, clock=lambda: now[0])
    a, b = Box(), Box()
    key_a = store.add(a)
    now[0] = 6.0
    store.add(b)
    with pytest.raises(SessionStoreFull):
        store.add(Box())
    now[0] = 12.0  # a is idle for 12 s, b for 6 s: adding expires a and fits
    store.add(Box())
    assert a.closed == 1 and b.closed == 0 and key_a not in store and len(store) == 2


def test_store_evicts_the_oldest_and_replaces_a_key() -> None:
    store: SessionStore[Box] = SessionStore(capacity=2, when_full="evict")
    boxes = [Box() for _ in range(3)]
    for i, box in enumerate(boxes):
        store.add(box, f"k{i}")
    assert boxes[0].closed == 1 and "k0" not in store and len(store) == 2
    newer = Box()
    store.add(newer, "k1")  # same key: the old one is closed, nothing else is evicted
    assert boxes[1].closed == 1 and store.get("k1") is newer and "k2" in store


def test_use_locks_one_session_and_fails_once_it_is_gone() -> None:
    store: SessionStore[Box] = SessionStore()
    box = Box()
    key = store.add(box)
    with store.use(key) as found:
        assert found is box
    assert store.discard(key) and box.closed == 1
    assert not store.discard(key)
    with pytest.raises(UnknownSession), store.use(key):
        pass
    store.close()


def test_expire_every_reaps_in_the_background() -> None:
    store: SessionStore[Box] = SessionStore(idle_timeout=0.05)
    box = Box()
    store.add(box)

    async def run() -> None:
        reaper = asyncio.create_task(store.expire_every(interval=0.01))
        for _ in range(200):
            if not len(store):
                break
            await asyncio.sleep(0.01)
        reaper.cancel()

    asyncio.run(run())
    assert box.closed == 1 and not len(store)


def test_env_session_records_steps_with_their_distance(
    compiled: dict[str, CompiledDomain],
) -> None:
    domain = compiled["mock"]
    target_env = Environment(domain)
    assert target_env.call("insert_loans", GOOD_LOAN).ok
    session = EnvSession(domain, domain.seed, target_env.image())
    assert session.distance == session.initial_distance and session.initial_distance
    assert session.proximity == pytest.approx(0.0, abs=1e-5)

    message, result = session.step(
        {"id": "c1", "function": {"name": "insert_loans", "arguments": json.dumps(GOOD_LOAN)}}, 3
    )
    assert result.ok and message["tool_call_id"] == "c1"
    step = session.steps[-1]
    assert (step.turn, step.call_id, step.writes, step.distance) == (3, "c1", True, 0)
    assert session.proximity == 1.0

    bad = session.call("insert_loans", "{not json")
    assert not bad.ok and session.steps[-1].args is None and session.calls == 2

    session.reset()
    assert session.steps == [] and session.calls == 0
    assert session.distance == session.initial_distance
    session.close()
    with pytest.raises(RuntimeError):
        _ = session.env
    target_env.close()


def test_env_session_without_target_or_recording(compiled: dict[str, CompiledDomain]) -> None:
    domain = compiled["mock"]
    with EnvSession(domain, domain.seed, record=False) as session:
        assert session.call("insert_loans", GOOD_LOAN).ok
        assert session.steps == [] and session.calls == 1
        assert session.distance is None and session.proximity is None
        with pytest.raises(ValueError, match="task package"):
            session.trajectory(EpisodeEnd([], "a", "u", "agent_done"))
