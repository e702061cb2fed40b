"""Spans become JSON in chunks (so no single call holds the GIL for a whole large batch), byte for byte as one call."""

from __future__ import annotations

import orjson
import pytest

from bench.payloads import build_request
from spanscore.collector.decode import spans_from_request
from spanscore.storage.rows import ENCODE_CHUNK, records_to_json, spans_from_json


@pytest.mark.parametrize("count", [0, 1, ENCODE_CHUNK, ENCODE_CHUNK + 1, 2 * ENCODE_CHUNK, 2 * ENCODE_CHUNK + 7])
def test_chunked_encoding_is_the_one_call_encoding(count: int) -> None:
    request = build_request(max(count, 1), llm=False)[0]
    spans = spans_from_request(request).items[:count]
    encoded = records_to_json(spans)
    assert encoded == orjson.dumps(spans)
    assert [span.span_id for span in spans_from_json(encoded)] == [span.span_id for span in spans]
