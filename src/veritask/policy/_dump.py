"""Write a DomainSpec back as YAML that ``load_spec`` reads to an equal spec."""

from __future__ import annotations

import yaml

from veritask.policy._spec import DomainSpec


class _SpecDumper(yaml.SafeDumper):
    """SafeDumper writing multi-line strings (SQL) as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value.strip() else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SpecDumper.add_representer(str, _represent_str)


def dump_spec(spec: DomainSpec, comment: str = "") -> str:
    """The spec as YAML (defaults omitted); ``comment`` lines become a ``#`` header."""
    header = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines())
    body = yaml.dump(
        spec.model_dump(mode="json", exclude_defaults=True),
        Dumper=_SpecDumper,
        default_flow_style=None,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    return header + body
