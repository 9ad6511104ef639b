"""What a dataset cost to make, per pipeline module (the figures of LOGIGEN's Table 5).

LLM-mode runs record each work unit's :class:`~veritask.model.CostLedger` next to its part
(``costs/unit-N.json``). The report sums the ledgers of the finished units and shows, per module,
turns (model calls), prompt and completion tokens, cost and success rate, in total and per
certified package. Costs are the ones recorded at generation (the provider's prices) unless
prices are given, by module or model name, in which case they are recomputed from the tokens.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veritask._util import read_yaml
from veritask.model import CostLedger, ModuleCost, Prices
from veritask.task._dataset import DatasetDir

PriceTable = Mapping[str, Prices]
"""Prices by module name (``client``, ``consultant``, ``projector``...), model name, or
``default``; looked up in that order."""

_UNIT = re.compile(r"unit-(\d+)\.json$")


def dataset_ledger(root: str | Path) -> CostLedger | None:
    """The summed spending of the finished units of a dataset, or None when it recorded none
    (a symbolic run). A unit counts once its part is written."""
    ds = DatasetDir(Path(root))
    folder = ds.root / "costs"
    if not folder.is_dir():
        return None
    total = CostLedger()
    for path in sorted(folder.glob("unit-*.json")):
        match = _UNIT.search(path.name)
        if match is None or not ds.has_part(int(match.group(1))):
            continue
        data = ds.read_costs(int(match.group(1)))
        if data is not None:
            total.merge(CostLedger.from_json(data))
    return total


def _one_price(name: str, value: Any) -> Prices:
    if isinstance(value, list | tuple) and len(value) == 2:
        return Prices(float(value[0]), float(value[1]))
    if isinstance(value, Mapping):
        try:
            return Prices.coerce({k: float(v) for k, v in value.items()})
        except TypeError as exc:
            raise ValueError(f"prices for {name!r}: {exc}") from None
    raise ValueError(
        f"prices for {name!r} must be [prompt, completion] or "
        "{prompt_per_million: ..., completion_per_million: ...}"
    )


def load_prices(source: str) -> dict[str, Prices]:
    """Prices per million tokens from ``PROMPT,COMPLETION`` (every module) or a YAML file
    mapping module or model names (or ``default``) to ``[prompt, completion]`` or
    ``{prompt_per_million: ..., completion_per_million: ...}``.

    Raises:
        ValueError: Neither two numbers nor a readable mapping.
    """
    parts = source.split(",")
    if len(parts) == 2:
        try:
            return {"default": Prices(float(parts[0]), float(parts[1]))}
        except ValueError:
            pass
    path = Path(source)
    if not path.is_file():
        raise ValueError(f"--prices {source!r}: give PROMPT,COMPLETION or a YAML file")
    data = read_yaml(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a mapping of module or model names to prices")
    return {str(name): _one_price(str(name), value) for name, value in data.items()}


def _price_for(prices: PriceTable | None, module: str, model: str | None) -> Prices | None:
    if not prices:
        return None
    for key in (module, model, "default"):
        if key is not None and key in prices:
            return prices[key]
    return None


def _per(value: float, packages: int, digits: int) -> float:
    return round(value / packages, digits) if packages else 0.0


def _row(record: ModuleCost, packages: int) -> dict[str, Any]:
    row = record.to_json()
    row["per_package"] = {
        "turns": _per(record.calls, packages, 4),
        "prompt_tokens": _per(record.prompt_tokens, packages, 4),
        "completion_tokens": _per(record.completion_tokens, packages, 4),
        "cost": _per(record.cost, packages, 8),
    }
    return row


def cost_report(
    ledger: CostLedger,
    packages: int,
    run: Mapping[str, Any] | None = None,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """The cost section of a report.

    Args:
        ledger: The dataset's summed spending.
        packages: Certified packages in the manifest (the per-package denominator).
        run: The run settings (``run.json``): explorer, projector and model are shown.
        prices: Prices to recompute costs with; modules without a match keep recorded costs.

    Returns:
        ``{"explorer", "projector", "model", "prices": {module: prices or "recorded"},
        "modules": {module: row}, "total": row, "per_package": {"prompt_tokens",
        "completion_tokens", "tokens", "cost"}}`` where a row is ``ModuleCost.to_json()`` plus
        ``per_package`` (turns, prompt and completion tokens, cost per certified package).
    """
    run = run or {}
    model = run.get("model")
    total = ModuleCost()
    modules: dict[str, Any] = {}
    used: dict[str, Any] = {}
    for name in sorted(ledger.modules):
        record = copy.copy(ledger.modules[name])
        price = _price_for(prices, name, model)
        if price is not None:
            record.cost = price.cost(record.prompt_tokens, record.completion_tokens)
        used[name] = (
            "recorded"
            if price is None
            else {
                "prompt_per_million": price.prompt_per_million,
                "completion_per_million": price.completion_per_million,
            }
        )
        total.merge(record)
        modules[name] = _row(record, packages)
    # a pipeline's yield: certified packages over the candidates its busiest module tried
    total.attempts = max((r.attempts for r in ledger.modules.values()), default=0)
    total.successes = min(packages, total.attempts)
    tokens = total.prompt_tokens + total.completion_tokens
    return {
        "explorer": run.get("explorer"),
        "projector": run.get("projector"),
        "model": model,
        "prices": used,
        "modules": modules,
        "total": _row(total, packages),
        "per_package": {
            "prompt_tokens": _per(total.prompt_tokens, packages, 4),
            "completion_tokens": _per(total.completion_tokens, packages, 4),
            "tokens": _per(tokens, packages, 4),
            "cost": _per(total.cost, packages, 8),
        },
    }
