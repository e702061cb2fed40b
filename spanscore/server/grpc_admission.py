"""What an OTLP/gRPC export may cost before and while it is read: the token first, then one of a few read slots.

grpcio reads a unary call's whole message before its handler runs, so a token checked in the handler came
after the cost: eight concurrent unauthenticated 48 MiB exports were all refused, yet grew the service by about
700 MB. The receiver therefore registers Export as a *request-streaming* method (the wire format is the same;
the client still sends one message): the handler runs when the call's headers arrive, checks the token, and
only then asks grpcio for the message. An unauthenticated call ends before any of it is read; what the
connection's flow-control window already carried is all it costs.

Authenticated calls are received and decoded at most ``collector.grpc.max_concurrent_reads`` at a time: each
holds its message twice (grpcio's buffer, then Python bytes) and its decoded rows, so that count times
``max_message_bytes`` bounds the memory exports take. A call waits for a slot without reading anything; one
that cannot get a slot in ``SLOT_WAIT_S`` is answered UNAVAILABLE with a retry hint, and a message that takes
longer than ``READ_TIMEOUT_S`` to arrive gives its slot up (a client trickling bytes holds no slot for long).
The slot is given back once the request is decoded, before storage is waited for.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from spanscore.errors import PermanentError
from spanscore.server.read_slots import READ_TIMEOUT_S, ReadSlots

__all__ = ["READ_TIMEOUT_S", "ReadSlots", "read_message"]


async def read_message(context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    """The one message of a unary export, read now (after the token check), within ``READ_TIMEOUT_S``."""
    try:
        message = await asyncio.wait_for(context.read(), READ_TIMEOUT_S)
    except TimeoutError:
        raise PermanentError(f"the export message did not arrive within {READ_TIMEOUT_S:g} s") from None
    if message is grpc.aio.EOF or not isinstance(message, bytes):
        raise PermanentError("the call ended without an export message")
    return message
