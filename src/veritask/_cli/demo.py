"""``make demo``: the environment engine at work on the built-in travel domain, offline."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.panel import Panel

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, diff

console = Console()

GOOD = {
    "travel_request_id": 2,
    "flight_code": "DL488",
    "cost": 480,
    "class": "BUSINESS",
    "departure_step": 18,
    "booking_step": 6,
    "approval_status": "NOT_REQUIRED",
}
QUOTA = {**GOOD, "flight_code": "B6990", "cost": 320}
CABIN = {
    **GOOD,
    "travel_request_id": 1,
    "flight_code": "AA101",
    "booking_step": 10,
    "departure_step": 20,
}


def _show(title: str, tool: str, args: dict[str, Any], env: Environment) -> None:
    result = env.call(tool, args)
    style = "green" if result.ok else "red"
    body = f"{tool}({json.dumps(args)})\n\n" + json.dumps(result.to_json(), indent=2)
    console.print(Panel(body, title=title, border_style=style))


def main() -> None:
    """Compile travel, book a flight, get two rejections with structured errors, show the diff."""
    spec = load_domain("travel")
    domain = CompiledDomain.from_spec(spec)
    console.rule("[bold]veritask demo: the corporate travel domain (LOGIGEN Appendix A)")
    console.print(
        f"compiled [bold]{spec.name}[/bold]: {len(spec.tables)} tables, {len(spec.rules)} rules "
        f"(BEFORE triggers), {len(spec.effects)} effects (AFTER triggers), {len(domain.tools)} tools"
    )
    env = Environment(domain)
    origin = env.snapshot()
    _show(
        "1. a director books a business-class flight under $500 (waiver: no approval)",
        "insert_flight_bookings",
        GOOD,
        env,
    )
    before = env.snapshot().data
    _show(
        "2. a fourth flight on the same request hits the quota (3)",
        "insert_flight_bookings",
        QUOTA,
        env,
    )
    _show("3. a STAFF user asks for BUSINESS class", "insert_flight_bookings", CABIN, env)
    console.print(
        f"rejected calls left the database byte-identical: {env.snapshot().data == before}"
    )
    d = diff(origin, env.snapshot())
    console.print(
        Panel(
            json.dumps(d.to_json(), indent=2), title=f"4. DIFF(origin, now): distance {d.distance}"
        )
    )


if __name__ == "__main__":
    main()
