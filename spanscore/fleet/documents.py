"""Reading JSON that another Keeper client wrote: refused with a reason when malformed, never an exception.

Anyone who can write a fleet's nodes (any Keeper client, when ``fleet.auth_env`` is unset) decides their
bytes, so a node is decoded as untrusted input: at most ``MAX_BYTES`` (ZooKeeper's own node limit), nesting
at most ``MAX_DEPTH`` deep (checked on the bytes before the parser recurses, so 5,000 brackets cannot raise
``RecursionError``), and of the shape the reader expects. A refused node is a ``MalformedNode`` naming the
node and what is wrong; callers count it and show it, and keep what they had.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_BYTES = 1 << 20
MAX_DEPTH = 32
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class MalformedNode(ValueError):
    """A Keeper node whose bytes are not the document this replica expects; the message says why."""


def decode_node(data: bytes, node: str) -> Any:
    """The JSON value in ``data``; ``MalformedNode`` when it is too big, too deep, or not JSON."""
    if len(data) > MAX_BYTES:
        raise MalformedNode(f"Keeper node {node} holds {len(data):,} bytes, more than {MAX_BYTES:,}")
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b'""', data)):
        depth += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            raise MalformedNode(f"Keeper node {node} nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedNode(f"Keeper node {node} is not JSON ({exc})") from None


def decode_object(data: bytes, node: str) -> dict[str, Any]:
    """A JSON object node (a member's status, an alert state); ``MalformedNode`` for anything else."""
    value = decode_node(data, node)
    if not isinstance(value, dict):
        raise MalformedNode(f"Keeper node {node} holds a JSON {type(value).__name__}, not an object")
    return value


def decode_rules(data: bytes, node: str) -> dict[str, Any]:
    """A published rule set: an object whose ``rules`` is a list of objects; ``MalformedNode`` otherwise."""
    document = decode_object(data, node)
    rules = document.get("rules")
    if not isinstance(rules, list) or not all(isinstance(rule, dict) for rule in rules):
        raise MalformedNode(f'Keeper node {node} is not a rule set: "rules" must be a list of rule objects')
    return document
