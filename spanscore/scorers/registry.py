"""Scorer lookup: built-in ids, scorers other modules register, and ``module:attribute`` paths.

``build(name, **options)`` is the one way the service, the config loader and
the offline ``score`` command turn a scorer name into a :class:`Scorer`. A
name is either a registered id (``content_similarity``) or an import path
(``my_package.scorers:politeness``) whose attribute is a ``Scorer`` or a
factory returning one. Built-in modules register themselves with
:func:`register` when ``spanscore.scorers.code`` and ``spanscore.scorers.llm``
are imported, which ``build`` does on first use.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from spanscore.errors import ConfigError
from spanscore.scorers.base import Scorer

logger = logging.getLogger(__name__)

ScorerFactory = Callable[..., Scorer]
FactoryT = TypeVar("FactoryT", bound=ScorerFactory)

_FACTORIES: dict[str, ScorerFactory] = {}
_CODE_MODULE = "spanscore.scorers.code"
_BUILTIN_MODULES = (_CODE_MODULE, "spanscore.scorers.llm")
_discovered = False


def register(name: str, *, replace: bool = False) -> Callable[[FactoryT], FactoryT]:
    """Register a factory under ``name``: ``@register("my_scorer") def make(**options) -> Scorer``.

    Registering a taken name raises ``ConfigError`` unless ``replace=True``
    (two modules silently fighting over one id would be worse).
    """

    def decorate(factory: FactoryT) -> FactoryT:
        if name in _FACTORIES and _FACTORIES[name] is not factory and not replace:
            raise ConfigError(f"scorer id {name!r} is already registered by {_FACTORIES[name].__module__}")
        _FACTORIES[name] = factory
        return factory

    return decorate


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for module in _BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            # Only a missing built-in package is expected (the LLM scorers are optional); a missing
            # dependency inside one is a real problem and must surface.
            if exc.name != module:
                raise
            logger.debug("scorer module not present module=%s", module)


def code_builtins() -> list[str]:
    """The ids of the built-in code scorers, sorted (loads only them, not the LLM scorers' judge stack)."""
    importlib.import_module(_CODE_MODULE)
    return sorted(name for name, factory in _FACTORIES.items() if factory.__module__.startswith(_CODE_MODULE + "."))


def available() -> list[str]:
    """The registered scorer ids, sorted."""
    _discover()
    return sorted(_FACTORIES)


def build(name: str, **options: Any) -> Scorer:
    """Return the scorer called ``name`` configured with ``options``.

    Raises ``ConfigError`` naming the problem for an unknown id, an import
    path that does not resolve, or an option the scorer does not take.
    """
    if ":" in name:
        return _build_from_path(name, options)
    importlib.import_module(_CODE_MODULE)  # a code scorer needs no LLM module (and no litellm) loaded
    factory = _FACTORIES.get(name)
    if factory is None:
        _discover()
        factory = _FACTORIES.get(name)
    if factory is None:
        from spanscore.scorers.preflight import unknown_scorer

        raise ConfigError(unknown_scorer(name, available()))
    return _call_factory(name, factory, options)


def _build_from_path(path: str, options: dict[str, Any]) -> Scorer:
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"scorer path {path!r} must look like 'package.module:attribute'")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"scorer path {path!r}: cannot import {module_name!r} ({exc})") from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise ConfigError(f"scorer path {path!r}: {module_name!r} has no attribute {attribute!r}") from exc
    if isinstance(target, Scorer):
        if options:
            raise ConfigError(
                f"scorer path {path!r} names a ready scorer, which takes no options; got {sorted(options)}"
            )
        target.origin = (path, {})
        return target
    if callable(target):
        return _call_factory(path, target, options)
    raise ConfigError(f"scorer path {path!r} names a {type(target).__name__}, not a Scorer or a factory")


def _call_factory(name: str, factory: ScorerFactory, options: dict[str, Any]) -> Scorer:
    _check_options(name, factory, options)
    try:
        scorer = factory(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"scorer {name!r}: {exc}") from exc
    if not isinstance(scorer, Scorer):
        raise ConfigError(f"scorer {name!r}: the factory returned {type(scorer).__name__}, not a Scorer")
    scorer.origin = (name, dict(options))
    return scorer


def _check_options(name: str, factory: ScorerFactory, options: dict[str, Any]) -> None:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    unknown = sorted(set(options) - accepted)
    if unknown:
        choices = ", ".join(sorted(accepted)) or "none"
        raise ConfigError(f"scorer {name!r}: unknown option(s) {', '.join(unknown)}; it takes: {choices}")
