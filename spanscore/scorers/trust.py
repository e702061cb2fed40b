"""What a rule sent over the API may ask of a scorer: a choice among what the operator configured.

The trust model (docs/security.md): only the operator's config file names code, addresses, files and
credentials. A rule arriving through ``PUT /api/v1/rules`` comes from whoever holds the API token, or,
on a token-less loopback API, from any local process; it may pick registered scorers, set their
options and sampling, and nothing else. Three things are the operator's alone:

- **code**: a scorer named by import path (``package.module:attribute``) is imported, i.e. runs, so an
  API rule may only reuse a path the config file already names; a custom scorer's ``score`` given as
  an import path is refused outright;
- **where text goes and with which key**: ``judge``, ``step_judges``, ``model`` and the endpoint and key
  settings anywhere in a scorer's options, since each one chooses a host that receives run text with
  a bearer token, or a file read as that token;
- **the judge client itself** (``client``), which is never data.

The check reads the raw document before anything is built: building a scorer from an import path is
itself the code execution this prevents.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

OPERATOR_ONLY_OPTIONS: Mapping[str, str] = {
    "judge": "a judge (model, endpoint, key)",
    "step_judges": "a judge per step (model, endpoint, key)",
    "model": "a judge model, and with it the provider that receives run text",
    "client": "a judge client",
    "api_base": "an endpoint that receives run text",
    "api_key": "a credential",
    "api_key_env": "the environment variable read as a credential",
    "api_key_file": "a file read as a credential",
    "api_version": "a provider endpoint setting",
}
_MAX_DEPTH = 32


def api_rule_problems(document: Any, operator_paths: frozenset[str]) -> list[str]:
    """Every scorer use in a ``{"rules": [...]}`` document that only the config file may make, one line each.

    ``operator_paths`` are the import-path scorers the config file names; an API rule may reuse those.
    """
    problems: list[str] = []
    rules = document.get("rules") if isinstance(document, Mapping) else None
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        scorers = rule.get("scorers") if isinstance(rule, Mapping) else None
        for j, spec in enumerate(scorers if isinstance(scorers, list) else []):
            where = f"rules[{i}].scorers[{j}]"
            name = spec.get("name") if isinstance(spec, Mapping) else spec
            if isinstance(name, str) and ":" in name and name not in operator_paths:
                problems.append(
                    f"{where}: scorer {name!r} is an import path, and importing it runs code: only the config file "
                    "may name code (add it to a rule there and reload with SIGHUP; API rules may then reuse it)"
                )
            if isinstance(spec, Mapping):
                options = spec.get("options") if set(spec) == {"name", "options"} else spec
                problems.extend(f"{where}.{path}: {why}" for path, why in _operator_only(options, ""))
    return problems


def _operator_only(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > _MAX_DEPTH:
        yield path or "options", f"options nested deeper than {_MAX_DEPTH} levels"
        return
    if isinstance(value, Mapping):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            if key in OPERATOR_ONLY_OPTIONS:
                yield (
                    child_path,
                    (
                        f"sets {OPERATOR_ONLY_OPTIONS[key]}; only the config file may choose where run text goes "
                        "and with which credential (the API's rules use the operator's judge)"
                    ),
                )
            elif key == "score" and isinstance(child, str):
                yield (
                    child_path,
                    (
                        f"{child!r} is an import path, and importing it runs code: only the config file may name code "
                        "(give the score as a rule mapping: fraction, mean or field)"
                    ),
                )
            else:
                yield from _operator_only(child, child_path, depth + 1)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _operator_only(child, f"{path}[{index}]", depth + 1)
