"""Request bodies parsed with bounds: nesting depth, and no YAML aliases.

Every API body is at most a megabyte, but size alone does not bound cost. A 200 kB JSON body of
100,000 nested brackets made the standard parser raise ``RecursionError`` (a 500, and a traceback in
the log); 443 bytes of YAML aliases expand, once walked, into 100,000 filter conditions. So:

- JSON is parsed by orjson, which stops at its own recursion limit instead of exhausting Python's, and
  the result is then held to ``MAX_DEPTH`` levels by an iterative walk, so nothing recursive downstream
  (validation, rule checks) can meet a deeper value;
- YAML is parsed by a safe loader that refuses aliases outright (an API body has no use for them) and
  counts depth while composing, before any Python object is built.

Each refusal is a ``PermanentError`` (400) that says what to change.

Bodies are read whole, up to their endpoint's limit, by ``read_limited``. ``request.content.read(n)`` returns
what happens to be buffered, so a valid body over about 128 kB, sent in more than one piece, was cut and
answered "not valid JSON"; and a limit checked on such a read did not hold.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from spanscore.errors import PayloadTooLargeError, PermanentError

MAX_DEPTH = 64
MAX_BODY_BYTES = 1 << 20
"""The limit of an API body unless its endpoint has its own (scores: 4 MiB)."""


async def read_limited(request: web.Request, limit: int = MAX_BODY_BYTES, what: str = "request body") -> bytes:
    """The whole body of ``request``, refused (413) the moment it is known to exceed ``limit`` bytes."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise _too_large(what, limit, f"{declared} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            raise _too_large(what, limit, f"more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(what: str, limit: int, sent: str) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"{what} is too large: {sent} sent, and the limit is {limit} bytes")


def json_body(raw: bytes, what: str) -> Any:
    """``raw`` as JSON (empty: None), at most ``MAX_DEPTH`` levels deep."""
    if not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc).lower() or "recursion" in str(exc).lower():
            raise _too_deep(what) from None
        raise PermanentError(f"{what} is not valid JSON: {exc}") from None
    _check_depth(value, what)
    return value


def yaml_body(text: str, what: str) -> Any:
    """``text`` as YAML: safe types only, no aliases, at most ``MAX_DEPTH`` levels deep."""
    loader = _BoundedLoader(text, what)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _check_depth(value: Any, what: str) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise _too_deep(what)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)


def _too_deep(what: str) -> PermanentError:
    return PermanentError(f"{what} is nested too deep: at most {MAX_DEPTH} levels of objects and lists are accepted")


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases and counting depth as it composes nodes."""

    def __init__(self, text: str, what: str) -> None:
        super().__init__(text)
        self._what = what
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise PermanentError(
                f"{self._what}: YAML aliases (*name) are not accepted (line {mark.line + 1}); write the value out"
            )
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _too_deep(self._what)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
