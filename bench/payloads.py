"""Pre-encoded OTLP trace export requests for the load generator.

A request is built and serialised once (``Template``); every send copies the
bytes and overwrites the first 8 bytes of each span's trace id, and the first 4
of each root span's id (where it is a parent id too), with a request sequence
number, so each request stores distinct rows and distinct runs (a run's id is
its root span's id: repeated, sampling would call them duplicates and score none)
while the load generator spends almost no CPU on encoding. Spans come in traces of ``TRACE_SIZE`` (one
root, the rest its children), the shape agent runs have.
"""

from __future__ import annotations

import json
import os
import struct
import time
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

TRACE_SIZE = 10
LLM_MESSAGE_BYTES = 5000


def _kv(key: str, value: str | int) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _llm_attributes() -> list[KeyValue]:
    """About 5 KB of GenAI message attributes, as an instrumented chat call records them."""
    sentence = "The customer asks about the refund policy for an order placed last week. "
    prompt = (sentence * (LLM_MESSAGE_BYTES * 3 // 5 // len(sentence) + 1))[: LLM_MESSAGE_BYTES * 3 // 5]
    answer = (sentence * (LLM_MESSAGE_BYTES * 2 // 5 // len(sentence) + 1))[: LLM_MESSAGE_BYTES * 2 // 5]
    messages_in = json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}])
    messages_out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])
    return [
        _kv("gen_ai.operation.name", "chat"),
        _kv("gen_ai.system", "openai"),
        _kv("gen_ai.request.model", "gpt-4o-mini"),
        _kv("gen_ai.usage.input_tokens", 1200),
        _kv("gen_ai.usage.output_tokens", 400),
        _kv("gen_ai.input.messages", messages_in),
        _kv("gen_ai.output.messages", messages_out),
    ]


def _small_attributes() -> list[KeyValue]:
    return [_kv("http.method", "GET"), _kv("http.status_code", 200), _kv("component", "bench")]


@dataclass(slots=True)
class Template:
    """One serialised request plus where each span's trace id, and each root span's id, sits in it."""

    body: bytes
    spans: int
    trace_id_offsets: list[int]
    root_id_offsets: list[int]

    def encode(self, sequence: int) -> bytes:
        """The request for ``sequence``: same spans, trace ids and root span ids unique to this request."""
        out = bytearray(self.body)
        prefix = struct.pack(">Q", sequence + 1)
        for offset in self.trace_id_offsets:
            out[offset : offset + 8] = prefix
        root_prefix = prefix[4:]  # the low 32 bits; the root ids' random rest tells a request's traces apart
        for offset in self.root_id_offsets:
            out[offset : offset + 4] = root_prefix
        return bytes(out)


def build_request(
    spans: int, llm: bool, *, service: str = "bench-agent"
) -> tuple[ExportTraceServiceRequest, list[bytes], list[bytes]]:
    """A request of ``spans`` spans; returns it, the trace ids and the root span ids it uses (random, distinct)."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend([_kv("service.name", service), _kv("host.name", "bench")])
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "bench"
    attributes = _llm_attributes() if llm else _small_attributes()
    now = time.time_ns()
    trace_ids: list[bytes] = []
    root_ids: list[bytes] = []
    root_id = b""
    for index in range(spans):
        if index % TRACE_SIZE == 0:
            trace_ids.append(os.urandom(16))
            root_id = os.urandom(8)
            root_ids.append(root_id)
        span = scope_spans.spans.add()
        span.trace_id = trace_ids[-1]
        span.span_id = root_id if index % TRACE_SIZE == 0 else os.urandom(8)
        if index % TRACE_SIZE:
            span.parent_span_id = root_id
        span.name = "chat gpt-4o-mini" if llm else f"step-{index % TRACE_SIZE}"
        span.kind = Span.SPAN_KIND_CLIENT if llm else Span.SPAN_KIND_INTERNAL
        span.start_time_unix_nano = now - 2_000_000
        span.end_time_unix_nano = now
        span.attributes.extend(attributes)
    return request, trace_ids, root_ids


def _offsets(body: bytes, values: list[bytes]) -> list[int]:
    offsets: list[int] = []
    for value in values:
        start = 0
        while (found := body.find(value, start)) >= 0:
            offsets.append(found)
            start = found + len(value)
    return offsets


def build_template(spans: int, llm: bool) -> Template:
    request, trace_ids, root_ids = build_request(spans, llm)
    body = request.SerializeToString()
    offsets = _offsets(body, trace_ids)
    if len(offsets) != spans:
        raise RuntimeError(f"expected {spans} trace id occurrences in the template, found {len(offsets)}")
    root_offsets = _offsets(body, root_ids)  # each root's own id and its children's parent ids
    if len(root_offsets) != spans:
        raise RuntimeError(f"expected {spans} root span id occurrences in the template, found {len(root_offsets)}")
    return Template(body=body, spans=spans, trace_id_offsets=offsets, root_id_offsets=root_offsets)
