"""The faithful agent reads the rest of a list result shown in part (``next_offset``)."""

from __future__ import annotations

import asyncio
import json

from veritask.agent import FaithfulAgent
from veritask.domains import load_domain


def test_a_list_shown_in_part_is_read_to_the_end() -> None:
    agent = FaithfulAgent(load_domain("travel"))
    table = agent.spec.tables[0].name
    agent.pending = (f"query_{table}", {"limit": 100})
    shown = {"rows": [{"x": 1}], "total": 3, "limit": 100, "offset": 0, "next_offset": 1}
    turn = asyncio.run(agent.respond([{"role": "tool", "content": json.dumps(shown)}], []))
    call = turn.message["tool_calls"][0]["function"]
    assert call["name"] == f"query_{table}"
    assert json.loads(call["arguments"]) == {"limit": 100, "offset": 1}
    assert agent.seen[table] == [{"x": 1}]


def test_a_whole_list_asks_for_no_page() -> None:
    agent = FaithfulAgent(load_domain("travel"))
    table = agent.spec.tables[0].name
    agent.pending = (f"query_{table}", {"limit": 100})
    whole = {"rows": [{"x": 1}], "total": 1, "limit": 100, "offset": 0}
    turn = asyncio.run(agent.respond([{"role": "tool", "content": json.dumps(whole)}], []))
    assert not turn.message.get("tool_calls")
