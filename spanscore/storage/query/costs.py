"""Arguments that make one call cost more than its input: bounded on the parse tree, before anything runs.

The engine checks its time limit, and a ``KILL QUERY``, between blocks only, so the work of one row
runs to its end: a LIKE pattern of 4,000 wildcards over a 1 MB string ran 77.6 s against a 10 s
limit, ``hasAny`` of two 160,000-element arrays 11.6 s, a case-insensitive ``position`` of a 100 kB
needle over 1 MB more than 100 s. Those costs grow with the product of two argument sizes (haystack x
pattern, array x array), so one of the two must be small and known before the query runs: a string
or array literal of bounded size. The other side stays bounded by the memory limit, and then the
whole call is linear in it.

A cast names a type, and a type can name an aggregate function (``AggregateFunction(f, ...)``,
``SimpleAggregateFunction(f, ...)``) whose state code then runs: such a name is held to the same
allowlist as a call of ``f``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from spanscore.errors import PermanentError

MAX_PATTERN_BYTES = 256
"""Bytes of a LIKE or regular expression pattern, of a searched-for string, or of a separator."""
MAX_ARRAY_LITERAL = 256
"""Elements of the literal array one side of ``hasAny``/``hasAll`` (or ``multiSearchAny``'s needles) must be."""

# Functions whose cost is (subject size) x (pattern size): argument index of the pattern.
_PATTERN_ARGUMENT = {
    "like": 1, "notLike": 1, "ilike": 1, "notILike": 1,
    "match": 1, "extract": 1, "extractAll": 1, "replaceRegexpOne": 1, "replaceRegexpAll": 1, "splitByRegexp": 0,
    "replaceOne": 1, "replaceAll": 1, "splitByString": 0,
}  # fmt: skip
# Searches costing haystack x needle in the worst case; either of the first two arguments may be the small one
# (a needle longer than the haystack costs nothing), which also covers ``locate``'s two argument orders.
_SEARCHES = frozenset({"position", "positionCaseInsensitive", "positionUTF8", "locate", "countSubstrings", "hasToken"})
_ARRAY_PAIRS = frozenset({"hasAny", "hasAll"})
# Functions that take a type name, and the argument index of it (-1: the last argument).
_TYPE_ARGUMENT = {"CAST": 1, "_CAST": 1, "accurateCast": 1, "accurateCastOrNull": 1, "accurateCastOrDefault": 1}
_JSON_TYPED = frozenset({"JSONExtract"})
_AGGREGATE_TYPES = frozenset({"aggregatefunction", "simpleaggregatefunction"})
_TYPE_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|`(?P<bq>(?:[^`\\]|\\.)*)`|\"(?P<dq>(?:[^\"\\]|\\.)*)\"|(?P<other>.))"
)


def check_call(name: str, node: Mapping[str, Any], allow_aggregate: Callable[[str], None]) -> None:
    """Refuse a call of ``name`` (already resolved) whose arguments could make one row run unbounded.

    ``allow_aggregate`` raises PermanentError for an aggregate function name the query API does not allow.
    """
    arguments = _arguments(node)
    if name in _PATTERN_ARGUMENT:
        index = _PATTERN_ARGUMENT[name]
        if index < len(arguments):
            _small_string(arguments[index], f"the pattern of {name}()")
    elif name in _SEARCHES and len(arguments) >= 2:
        if not any(_short_string(argument) for argument in arguments[:2]):
            raise PermanentError(
                f"{name}() needs a string literal of at most {MAX_PATTERN_BYTES} bytes as its needle or haystack: "
                "its cost is haystack x needle, which the time limit cannot stop inside one row"
            )
    elif name in _ARRAY_PAIRS and len(arguments) == 2:
        if not any(_array_length(argument) <= MAX_ARRAY_LITERAL for argument in arguments):
            raise PermanentError(
                f"{name}() needs a literal array of at most {MAX_ARRAY_LITERAL} elements as one argument: its "
                f"cost is the product of both sizes; for two large arrays use length(arrayIntersect(a, b)) instead"
            )
    elif name == "multiSearchAny" and len(arguments) >= 2:
        if _array_length(arguments[1]) > MAX_ARRAY_LITERAL or not _literal_strings_short(arguments[1]):
            raise PermanentError(
                f"multiSearchAny() needs a literal array of at most {MAX_ARRAY_LITERAL} needles of at most "
                f"{MAX_PATTERN_BYTES} bytes each"
            )
    type_index = _TYPE_ARGUMENT.get(name, -1 if name in _JSON_TYPED and len(arguments) >= 2 else None)
    if type_index is not None and -len(arguments) <= type_index < len(arguments):  # a call short of it: the engine
        check_type(_type_string(arguments[type_index], name), allow_aggregate)  # refuses it, not an IndexError


def check_type(text: str, allow_aggregate: Callable[[str], None]) -> None:
    """Hold every aggregate function a type names (``AggregateFunction(f, ...)`` at any depth) to the allowlist."""
    tokens = [token for token in _type_tokens(text) if not token[1].isspace()]
    for index, (kind, value) in enumerate(tokens):
        if kind != "name" or value.lower() not in _AGGREGATE_TYPES:
            continue
        following = tokens[index + 1 : index + 2]
        if following != [("other", "(")]:
            if not following or following[0][0] == "name" or following[0][1] in ",)":
                continue  # a bare word (a tuple element called AggregateFunction) names no function
            raise PermanentError(f"type {text!r} is not accepted: the query API cannot tell which function it names")
        arguments = _type_arguments(tokens, index + 2)
        if arguments and all(kind == "other" and value.isdigit() for kind, value in arguments[0]):
            arguments = arguments[1:]  # AggregateFunction(version, f, ...)
        if not arguments or not arguments[0] or arguments[0][0][0] != "name":
            raise PermanentError(f"type {text!r} is not accepted: the query API cannot tell which function it names")
        allow_aggregate(arguments[0][0][1])


def _type_arguments(tokens: list[tuple[str, str]], start: int) -> list[list[tuple[str, str]]]:
    """The top-level arguments of the parenthesis opened just before ``start``, each as its tokens."""
    arguments: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for token in tokens[start:]:
        if token == ("other", ")") and depth == 0:
            break
        if token == ("other", ",") and depth == 0:
            arguments.append([])
            continue
        depth += {"(": 1, ")": -1}.get(token[1], 0) if token[0] == "other" else 0
        arguments[-1].append(token)
    return arguments


def _type_tokens(text: str) -> list[tuple[str, str]]:
    """Names (plain, backquoted or double-quoted, unescaped) and single other characters of a type name."""
    tokens: list[tuple[str, str]] = []
    for match in _TYPE_TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        value = match.group(kind)
        if kind in ("bq", "dq"):
            kind, value = "name", re.sub(r"\\(.)", r"\1", value)
        tokens.append((kind, value))
    return tokens


def _type_string(argument: Mapping[str, Any], name: str) -> str:
    value = _literal(argument)
    if not isinstance(value, str):
        raise PermanentError(f"the type of {name}() must be a string literal, such as CAST(x AS String)")
    return value


def _arguments(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    listed = node.get("arguments")
    children = listed.get("children") if isinstance(listed, dict) else None
    return [child for child in children if isinstance(child, dict)] if isinstance(children, list) else []


def _literal(node: Mapping[str, Any]) -> Any:
    """The Python value of a literal node (strings, numbers, arrays as lists), or None for any other node."""
    if node.get("type") != "Literal" or not isinstance(node.get("value"), dict):
        return None
    return _field(node["value"])


def _field(field: Mapping[str, Any]) -> Any:
    value = field.get("value")
    if isinstance(value, list):
        return [_field(item) if isinstance(item, dict) else item for item in value]
    return value


def _short_string(node: Mapping[str, Any]) -> bool:
    value = _literal(node)
    return isinstance(value, str) and len(value.encode("utf-8")) <= MAX_PATTERN_BYTES


def _small_string(node: Mapping[str, Any], what: str) -> None:
    if not _short_string(node):
        raise PermanentError(
            f"{what} must be a string literal of at most {MAX_PATTERN_BYTES} bytes: its cost grows with the "
            "pattern's size times the text's, which the time limit cannot stop inside one row"
        )


def _array_length(node: Mapping[str, Any]) -> float:
    """Elements of a literal array, or infinity for anything whose size is unknown before it runs."""
    value = _literal(node)
    return len(value) if isinstance(value, list) else float("inf")


def _literal_strings_short(node: Mapping[str, Any]) -> bool:
    value = _literal(node)
    return isinstance(value, list) and all(
        isinstance(item, str) and len(item.encode("utf-8")) <= MAX_PATTERN_BYTES for item in value
    )
