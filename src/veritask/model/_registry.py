"""Provider registry: the one door through which real providers and test doubles enter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from veritask.model._cache import CachedProvider
from veritask.model._replay import ReplayProvider
from veritask.model._scripted import ScriptedProvider
from veritask.model._types import ModelProvider

ProviderFactory = Callable[..., ModelProvider]
"""Called as ``factory(argument, **options)``; ``argument`` is the spec after ``scheme:``."""

_FACTORIES: dict[str, ProviderFactory] = {}


def register_provider(scheme: str, factory: ProviderFactory) -> None:
    """Make ``get_provider("<scheme>:...")`` build providers with ``factory``.

    Registering an existing scheme replaces its factory.

    Args:
        scheme: The spec prefix (no ``:``).
        factory: Called as ``factory(argument, **options)``, where ``argument`` is the part of
            the spec after ``scheme:`` (empty when there is none).

    Raises:
        ValueError: The scheme is empty or contains ``:``.
    """
    if not scheme or ":" in scheme:
        raise ValueError(f"invalid provider scheme {scheme!r}")
    _FACTORIES[scheme] = factory


def registered_schemes() -> list[str]:
    """The registered schemes, sorted."""
    return sorted(_FACTORIES)


def get_provider(spec: str, **options: Any) -> ModelProvider:
    """Build a provider from a spec such as ``openai:MODEL``, ``scripted`` or ``replay:PATH``.

    Args:
        spec: ``scheme`` or ``scheme:argument``.
        **options: Passed to the scheme's factory, except ``cache_dir`` which, when given,
            wraps the provider in a :class:`CachedProvider` at that path.

    Returns:
        The provider.

    Raises:
        ValueError: Unknown scheme (the message lists the registered ones), or an argument
            the factory rejects.
    """
    scheme, _, argument = spec.partition(":")
    factory = _FACTORIES.get(scheme)
    if factory is None:
        raise ValueError(
            f"unknown model provider {scheme!r} in spec {spec!r}; "
            f"registered: {', '.join(registered_schemes())}"
        )
    cache_dir = options.pop("cache_dir", None)
    provider = factory(argument, **options)
    return CachedProvider(provider, cache_dir) if cache_dir is not None else provider


def _openai_factory(model: str, **options: Any) -> ModelProvider:
    """``openai:MODEL``; the SDK is imported only when such a provider is built."""
    if not model:
        raise ValueError("spec 'openai:MODEL' needs a model name, e.g. 'openai:gpt-4o-mini'")
    from veritask.model._openai import OpenAIProvider

    return OpenAIProvider(model, **options)


def _scripted_factory(argument: str, **options: Any) -> ModelProvider:
    """``scripted`` (option ``script``: a list of items or a callable)."""
    if "script" not in options:
        raise ValueError("the scripted provider needs a script=... option")
    if argument:
        options.setdefault("model", argument)
    return ScriptedProvider(options.pop("script"), **options)


def _replay_factory(path: str, **options: Any) -> ModelProvider:
    """``replay:PATH.jsonl``."""
    if not path:
        raise ValueError("spec 'replay:PATH' needs the path of a recording")
    return ReplayProvider(path, **options)


register_provider("openai", _openai_factory)
register_provider("scripted", _scripted_factory)
register_provider("replay", _replay_factory)
