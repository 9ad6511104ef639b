"""Build a veritask domain from a user's copy of τ²-bench (docs/design/0044-tau2-mapping.md).

Nothing of τ²-bench ships with veritask: the database, the policy and the tools' descriptions
are read from the user's checkout at run time; the tools' behaviour comes from the procedural
definitions veritask ships (``retail_tools.yaml``), written from what the tools do.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from veritask._util import read_json, read_text
from veritask.policy._spec import DomainSpec
from veritask.policy.tau2 import _airline, _retail

DOMAINS = ("airline", "retail")
TELECOM = (
    "telecom is not supported: its user-side tools simulate the user's phone, a second "
    "database graded by its own hash, whose changes are Python logic this importer does not "
    "map to veritask's user tools (which act on tables of the one database); only airline and "
    "retail can be imported"
)
"""Why ``--domain telecom`` is refused."""
_SCHEMAS: dict[str, Any] = {"airline": _airline, "retail": _retail}
"""Per domain: the module with its ``TABLES``, ``KEYED``, ``REFERENCES`` and flattener."""


@dataclass(frozen=True)
class Tau2Import:
    """An imported domain: its spec, the policy text, and the tools left out (name -> why)."""

    spec: DomainSpec
    policy: str
    unsupported: dict[str, str] = field(default_factory=dict)


def _addr(var: str) -> dict[str, str]:
    keys = ("address1", "address2", "city", "country", "state", "zip")
    return {k: f"{var}.{k}" for k in keys}


def _order_return() -> tuple[list[dict[str, Any]], Any]:
    steps: list[dict[str, Any]] = [
        {"op": "read", "table": "orders", "where": {"order_id": "order_id"}, "into": "o"},
        *(
            {
                "op": "read",
                "table": t,
                "where": {"order_id": "order_id"},
                "into": v,
                "many": True,
                "order_by": ["pos"],
            }
            for t, v in (("order_items", "items"), ("fulfillments", "fs"), ("payments", "ps"))
        ),
    ]
    template: dict[str, Any] = {
        "order_id": "o.order_id",
        "user_id": "o.user_id",
        "address": _addr("o"),
        "items": {
            "each": "items",
            "as": "it",
            "value": {
                "name": "it.name",
                "product_id": "it.product_id",
                "item_id": "it.item_id",
                "price": "it.price",
                "options": {"$json": "it.options"},
            },
        },
        "status": "o.status",
        "fulfillments": {
            "each": "fs",
            "as": "f",
            "value": {
                "tracking_id": {"$json": "f.tracking_id"},
                "item_ids": {"$json": "f.item_ids"},
            },
        },
        "payment_history": {
            "each": "ps",
            "as": "p",
            "value": {
                "transaction_type": "p.transaction_type",
                "amount": "p.amount",
                "payment_method_id": "p.payment_method_id",
            },
        },
        "cancel_reason": "o.cancel_reason",
        "exchange_items": {"$json": "o.exchange_items"},
        "exchange_new_items": {"$json": "o.exchange_new_items"},
        "exchange_payment_method_id": "o.exchange_payment_method_id",
        "exchange_price_difference": "o.exchange_price_difference",
        "return_items": {"$json": "o.return_items"},
        "return_payment_method_id": "o.return_payment_method_id",
    }
    return steps, template


_PAYMENT_METHOD = {  # the fields of its source only (an absent field is null in the row)
    "$compact": {
        "source": "pm.source",
        "id": "pm.id",
        "brand": "pm.brand",
        "last_four": "pm.last_four",
        "balance": "pm.balance",
    }
}


def _user_return() -> tuple[list[dict[str, Any]], Any]:
    steps: list[dict[str, Any]] = [
        {"op": "read", "table": "users", "where": {"user_id": "user_id"}, "into": "u"},
        {
            "op": "read",
            "table": "payment_methods",
            "where": {"user_id": "user_id"},
            "into": "pms",
            "many": True,
            "order_by": ["pos"],
        },
        {
            "op": "read",
            "table": "user_orders",
            "where": {"user_id": "user_id"},
            "into": "uos",
            "many": True,
            "order_by": ["pos"],
        },
    ]
    template: dict[str, Any] = {
        "user_id": "u.user_id",
        "name": {"first_name": "u.first_name", "last_name": "u.last_name"},
        "address": _addr("u"),
        "email": "u.email",
        "payment_methods": {
            "each": "pms",
            "as": "pm",
            "key": "pm.id",
            "value": _PAYMENT_METHOD,
        },
        "orders": {"each": "uos", "as": "uo", "value": "uo.order_id"},
    }
    return steps, template


def _product_return() -> tuple[list[dict[str, Any]], Any]:
    steps: list[dict[str, Any]] = [
        {
            "op": "read",
            "table": "variants",
            "where": {"product_id": "prod.product_id"},
            "into": "vs",
            "many": True,
            "order_by": ["pos"],
        },
    ]
    template: dict[str, Any] = {
        "name": "prod.name",
        "product_id": "prod.product_id",
        "variants": {
            "each": "vs",
            "as": "v",
            "key": "v.item_id",
            "value": {
                "item_id": "v.item_id",
                "options": {"$json": "v.options"},
                "available": {"$json": "iif(v.available, 'true', 'false')"},
                "price": "v.price",
            },
        },
    }
    return steps, template


def _returns(kind: str, shipped: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    if kind in shipped:  # defined next to the tools (airline)
        return list(shipped[kind]["steps"]), shipped[kind]["value"]
    return {"order": _order_return, "user": _user_return, "product": _product_return}[kind]()


def _spliced(steps: list[Any]) -> list[dict[str, Any]]:
    """Steps with YAML aliases of step lists spliced in place (recursively in loops)."""
    out: list[dict[str, Any]] = []
    for step in steps:
        if isinstance(step, list):
            out += _spliced(step)
        elif step.get("op") == "foreach":
            out.append({**step, "steps": _spliced(step["steps"])})
        else:
            out.append(step)
    return out


def _procedure(
    tool: dict[str, Any],
    docs: dict[str, tuple[str, dict[str, str]]],
    shipped: dict[str, Any] | None = None,
) -> dict[str, Any]:
    steps = _spliced(list(tool["steps"]))
    if "returns" in tool:
        more, template = _returns(tool["returns"], shipped or {})
        steps += [*more, {"op": "return", "value": template}]
    description, args = docs.get(tool["name"], (tool["description"], {}))
    flat: list[dict[str, Any]] = []
    for p in tool["params"]:  # a YAML alias of a list of parameters (an address) is spliced
        flat += p if isinstance(p, list) else [p]
    params = [{**p, "description": args.get(p["name"], p.get("description", ""))} for p in flat]
    return {
        "name": tool["name"],
        "description": description,
        "access": tool["access"],
        "params": params,
        "steps": steps,
    }


def tool_docs(source: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Descriptions of a toolkit's tools read from its source without running it: per method
    whose decorator is ``is_tool``, the docstring's text before ``Args:`` and each argument's
    line. The source is parsed (``ast``), never imported."""
    out: dict[str, tuple[str, dict[str, str]]] = {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError, MemoryError, ValueError) as exc:
        raise ValueError(
            f"tools.py is not Python the importer can read ({type(exc).__name__})"
        ) from None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or not any(
            "is_tool" in ast.unparse(d) for d in node.decorator_list
        ):
            continue
        doc = ast.get_docstring(node) or ""
        head, _, rest = doc.partition("Args:")
        args: dict[str, str] = {}
        for line in rest.partition("Returns:")[0].splitlines():
            name, sep, text = line.strip().partition(":")
            if sep and name.isidentifier():
                args[name] = text.strip()
        out[node.name] = (head.strip(), args)
    return out


def _table(schema: Any, name: str) -> dict[str, Any]:
    tier, access, cols = schema.TABLES[name]
    columns: list[dict[str, Any]] = [{"name": c, "type": t} for c, t in cols]
    if name in schema.KEYED:
        columns[0]["primary_key"] = True
    for col in columns:
        if (name, col["name"]) in schema.REFERENCES:
            col["references"] = schema.REFERENCES[(name, col["name"])]
    return {"name": name, "tier": tier, "access": access, "columns": columns}


def airports(source: str) -> list[dict[str, str]]:
    """The airports ``list_all_airports`` returns, read from the toolkit's source: the
    ``iata`` and ``city`` keyword constants of each call in that method, in order. Parsed
    (``ast``), never run; empty when the method or its calls are not there."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return []
    out: list[dict[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "list_all_airports":
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    kw = {k.arg: k.value for k in call.keywords}
                    found = {
                        k: v.value
                        for k, v in kw.items()
                        if k in ("iata", "city")
                        and isinstance(v, ast.Constant)
                        and isinstance(v.value, str)
                    }
                    if len(found) == 2:
                        out.append({"iata": found["iata"], "city": found["city"]})
    return out


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _airports_tool(tool: dict[str, Any], found: list[dict[str, str]]) -> dict[str, Any]:
    """``list_all_airports`` returning the list read from the user's toolkit."""
    value = [{"iata": _quoted(a["iata"]), "city": _quoted(a["city"])} for a in found]
    rest = {k: v for k, v in tool.items() if k != "airports"}
    return {**rest, "steps": [{"op": "return", "value": value}]}


def _tools(domain: str, source: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The shipped tool definitions of a domain, completed from the user's toolkit source."""
    data = load_tools(domain)
    tools: list[dict[str, Any]] = []
    for tool in data["tools"]:
        if tool.get("airports"):
            found = airports(source)
            tool = (
                _airports_tool(tool, found)
                if found
                else {**tool, "unsupported": "the toolkit's airport list was not found"}
            )
        tools.append(tool)
    return tools, data.get("returns") or {}


def load_tools(domain: str) -> dict[str, Any]:
    """The procedural definitions veritask ships for a τ²-bench domain (parsed YAML)."""
    text = resources.files("veritask.policy.tau2").joinpath(f"{domain}_tools.yaml").read_text()
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def load_guards(domain: str) -> list[dict[str, Any]]:
    """The policy guards veritask ships for a τ²-bench domain: rules with ids, codes, messages
    and examples, written from the policy text (``<domain>_guards.yaml``)."""
    text = resources.files("veritask.policy.tau2").joinpath(f"{domain}_guards.yaml").read_text()
    rules: list[dict[Any, Any]] = yaml.safe_load(text)["rules"]
    # YAML 1.1 reads the key ``on`` as true
    return [{("on" if k is True else str(k)): v for k, v in r.items()} for r in rules]


def import_tau2(root: Path, domain: str, guards: bool = False) -> Tau2Import:
    """Read a τ²-bench checkout's domain and build the veritask spec for it.

    Args:
        root: The checkout (``data/tau2/domains/<domain>`` and, optionally, ``src/tau2``).
        domain: ``airline`` or ``retail``.
        guards: Add the policy guards (rules the toolkit does not enforce); off for parity.

    Raises:
        FileNotFoundError: The checkout lacks the domain's ``db.json`` or ``policy.md``.
        ValueError: The domain is not supported.
    """
    if domain == "telecom":
        raise ValueError(TELECOM)
    if domain not in DOMAINS:
        raise ValueError(f"unsupported τ²-bench domain {domain!r}; supported: {', '.join(DOMAINS)}")
    data_dir = root / "data" / "tau2" / "domains" / domain
    db = read_json(data_dir / "db.json")
    policy = read_text(data_dir / "policy.md")
    path = root / "src" / "tau2" / "domains" / domain / "tools.py"
    source = path.read_text(encoding="utf-8") if path.is_file() else ""
    docs = tool_docs(source) if source else {}
    tools, shipped = _tools(domain, source)
    schema = _SCHEMAS[domain]
    unsupported = {t["name"]: t["unsupported"] for t in tools if "unsupported" in t}
    spec = DomainSpec.model_validate(
        {
            "name": f"tau2_{domain}",
            "description": f"τ²-bench's {domain} domain, imported",
            "actor": "users",
            "atomic_tools": False,
            "wiki": {
                "title": f"τ²-bench {domain} policy",
                "persona": "a customer service agent",
                "context": policy,
            },
            "tables": [_table(schema, n) for n in schema.TABLES],
            "procedures": [_procedure(t, docs, shipped) for t in tools if "unsupported" not in t],
            "seed": _seed_rows(domain, db, data_dir / "db.json"),
            "rules": load_guards(domain) if guards else [],
        }
    )
    return Tau2Import(spec, policy, unsupported)


_TOP_KEYS = {
    "airline": "'flights', 'users' and 'reservations'",
    "retail": "'products', 'users' and 'orders'",
}


def _seed_rows(domain: str, db: Any, path: Path) -> dict[str, list[dict[str, Any]]]:
    """The domain's database as rows, or a ValueError saying what it lacks."""
    flatten = _airline.flatten_airline if domain == "airline" else _retail.flatten_retail
    try:
        return flatten(db)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(
            f"{path} is not τ²-bench's {domain} database ({type(exc).__name__}: {exc}); "
            f"expected {_TOP_KEYS[domain]} as τ²-bench writes them"
        ) from None
