"""How many objects a body may make its decoder build, counted in the wire bytes before anything is built.

A decoder's memory grows with the number of objects it builds, not with the bytes: an empty span event is
2 bytes of protobuf and about 55 bytes once upb has parsed it; ``{}`` is 3 bytes of OTLP/JSON and a Python
dict, a keyword dict and a protobuf message once converted. Bodies made of such items cost about 28 times
their size as protobuf and 70 times as OTLP/JSON (issue #37), before any cap on events or attributes could
apply, because the caps apply to what was built.

The allowance is one object per ``BYTES_PER_OBJECT`` bytes (protobuf) or ``JSON_BYTES_PER_OBJECT`` (JSON), plus
``FREE_OBJECTS``, so small bodies always pass. Real telemetry is far below it: a small agent span is about one
protobuf message per 20 bytes and one JSON object per 50, an LLM span one per several hundred
(``bench/decode_amplification.py``).

- **Protobuf** (``density_problem``): a scan guided by the message descriptors reads each field's tag and
  length, counts nested messages, skips strings without reading them and stops once over the allowance. It
  runs on what ``export_chunks`` would parse alone (a span or header larger than a piece), which is then
  refused by itself; everything else is parsed a piece at a time, which bounds the parser's memory.
- **OTLP/JSON** (``check_json``): every object and array starts with ``{`` or ``[``, so their count in the
  text (those inside strings too: an over-estimate, never an under-) bounds the objects, at memchr speed. A
  body over the allowance is refused whole (413), before it is parsed.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from spanscore.errors import PayloadTooLargeError

BYTES_PER_OBJECT = 8
"""A protobuf body may hold one message per this many of its bytes (and ``FREE_OBJECTS`` more)."""
JSON_BYTES_PER_OBJECT = 16
"""An OTLP/JSON body may hold one object or array per this many of its bytes (and ``FREE_OBJECTS`` more)."""
FREE_OBJECTS = 8192
"""Objects any body may hold whatever its size: bounds small bodies absolutely, so they are never refused."""

_children: dict[str, dict[int, Descriptor]] = {}


def _message_fields(descriptor: Descriptor) -> dict[int, Descriptor]:
    """Field number -> message type, for the message-typed fields of ``descriptor`` (built once per type)."""
    found = _children.get(descriptor.full_name)
    if found is None:
        found = _children[descriptor.full_name] = {
            field.number: field.message_type
            for field in descriptor.fields
            if field.type == FieldDescriptor.TYPE_MESSAGE
        }
    return found


def allowed_objects(size: int, bytes_per_object: int) -> int:
    return size // bytes_per_object + FREE_OBJECTS


def density_problem(payload: bytes, descriptor: Descriptor) -> str:
    """Why ``payload`` (a ``descriptor`` message) holds too many messages for its size, or "" when it does not."""
    allowed = allowed_objects(len(payload), BYTES_PER_OBJECT)
    if len(payload) // 2 <= allowed:
        return ""  # cannot hold more: every message takes a tag byte and a length byte at least
    if _count_messages(payload, descriptor, allowed) <= allowed:
        return ""
    return _refusal(f"more than {allowed:,} protobuf messages", len(payload), BYTES_PER_OBJECT)


def check_json(body: bytes) -> None:
    """Raise ``PayloadTooLargeError`` when OTLP/JSON ``body`` may hold more objects and arrays than allowed."""
    allowed = allowed_objects(len(body), JSON_BYTES_PER_OBJECT)
    if len(body) <= allowed:
        return
    counted = body.count(b"{") + body.count(b"[")
    if counted > allowed:
        raise PayloadTooLargeError(
            "request body " + _refusal(f"up to {counted:,} JSON objects and arrays", len(body), JSON_BYTES_PER_OBJECT)
        )


def _refusal(what: str, size: int, per: int) -> str:
    return (
        f"holds {what} in {size:,} bytes, more than one per {per} bytes (plus {FREE_OBJECTS:,}): decoding it "
        "would cost many times its size. Empty events, attributes or array values are the usual cause: send "
        "them with content, or fewer per request"
    )


def read_varint(body: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``body[pos]`` and the position after it (``ValueError`` past 10 bytes, ``IndexError``: end)."""
    result = shift = 0
    while True:
        byte = body[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def _count_messages(body: bytes, descriptor: Descriptor, allowed: int) -> int:
    """Nested messages in ``body`` (a ``descriptor`` message), counting stopped once past ``allowed``.

    Malformed framing stops the count where it is; the protobuf parser then refuses the body with its reason.
    """
    count = 0
    stack: list[tuple[int, dict[int, Descriptor]]] = [(len(body), _message_fields(descriptor))]
    pos = 0
    try:
        while stack:
            end, fields = stack[-1]
            if pos >= end:
                stack.pop()
                continue
            key = body[pos]  # one-byte tags and lengths (the common case) without a call
            pos += 1
            if key & 0x80:
                key, pos = read_varint(body, pos - 1)
            wire = key & 7
            if wire == 2:
                length = body[pos]
                pos += 1
                if length & 0x80:
                    length, pos = read_varint(body, pos - 1)
                child = fields.get(key >> 3)
                if child is None:
                    pos += length
                    continue
                count += 1
                if count > allowed:
                    return count
                stack.append((min(pos + length, end), _message_fields(child)))
            elif wire == 0:
                _, pos = read_varint(body, pos)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                return count  # groups (3, 4) or garbage: left to the parser
    except (IndexError, ValueError):
        return count  # truncated or malformed: left to the parser
    return count
