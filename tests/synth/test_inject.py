"""Resource injection's four strategies: perturbed clones, substitutes, deliberate trade-offs
(a better-looking record the rule rejects next to the compliant one it copies) and noise in a
volume the spec or the plan sets, every injected row inside the schema."""

from __future__ import annotations

import random

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, build_image
from veritask.policy import DomainSpec
from veritask.synth._analysis import DomainModel
from veritask.synth._designer import faker_for
from veritask.synth._inject import ResourceInjector


def _rows(spec: DomainSpec) -> dict[str, list[dict[str, object]]]:
    return {k: [dict(r) for r in v] for k, v in spec.seed.items()}


def _injector(name: str) -> tuple[DomainSpec, ResourceInjector]:
    spec = load_domain(name)
    return spec, ResourceInjector(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))


def test_a_trade_off_is_better_on_a_number_and_rejected_by_the_rule() -> None:
    spec, injector = _injector("clinic")
    found = 0
    for seed in range(4):
        rows = _rows(spec)
        injector.counts.clear()
        injector.inject(rows, seed, random.Random(seed), faker_for(seed))
        found += injector.counts["trade_off"]
        env = Environment(injector.domain, build_image(spec, rows))
        seeded = {r["id"] for r in spec.seed["slots"]}
        for slot in [r for r in rows["slots"] if r["id"] not in seeded]:
            booked = env.evaluate(
                "NOT EXISTS (SELECT 1 FROM slots WHERE id = NEW.slot_id AND booked = 0)",
                "insert_appointments",
                {"slot_id": slot["id"]},
            )
            assert booked, slot  # every injected slot is the cheaper option the rule rejects
        env.close()
    assert found > 0


def test_the_trade_off_never_breaks_the_rule_for_its_compliant_twin() -> None:
    spec, injector = _injector("mock")
    rows = _rows(spec)
    injector.inject(rows, 1, random.Random(1), faker_for(1))
    books = rows["books"]
    cheap = [
        b
        for b in books
        if b["available"] == 0 and b["id"] not in {s["id"] for s in spec.seed["books"]}
    ]
    for book in cheap:
        twins = [b for b in books if b["available"] == 1 and b["daily_fee"] > book["daily_fee"]]
        assert twins, book


def test_noise_volume_comes_from_the_plan_or_the_spec_and_loads() -> None:
    spec, plain = _injector("registrar")
    noisy = spec.model_copy(
        update={
            "tables": [
                t.model_copy(update={"noise": 120}) if t.name == "staff" else t for t in spec.tables
            ]
        }
    )
    by_spec = ResourceInjector(plain.domain, DomainModel.from_spec(noisy))
    sizes = []
    for injector, plan in ((by_spec, None), (plain, 120)):
        rows = _rows(spec)
        injector.inject(rows, 7, random.Random(7), faker_for(7), plan)
        assert injector.counts["noise"] >= 100
        sizes.append(len(rows["staff"]))
    assert spec.spec_hash() != noisy.spec_hash()
    env = Environment(plain.domain, build_image(spec, rows))
    page = env.call("query_staff", {"limit": 20})
    assert page.ok and page.result["total"] == sizes[-1] > len(page.result["rows"]) == 20
    env.close()


def test_injection_is_deterministic_in_the_seed() -> None:
    spec, injector = _injector("mock")
    a, b = _rows(spec), _rows(spec)
    injector.inject(a, 5, random.Random(5), faker_for(5), noise=5)
    injector.inject(b, 5, random.Random(5), faker_for(5), noise=5)
    assert a == b
