"""``collector.redact``: the redaction policy applied at ingest, before anything is spooled or stored.

For operators who must not store personal data at all: every span attribute value (event attributes
included) and every log body and attribute value goes through the named ``redact.sets`` set between the
limits and the hand-off to storage, so the original is never written to the spool or the store. Code
scorers and judges then see only the redacted text. Pass-through forwarding (``forward.spans``)
sends the request as it was received and is refused together with this option (``config``).

Placeholders here must be stable across export requests, since a run's spans arrive in several: each
value gets ``<KIND_xxxxxxxx>`` from a keyed hash whose key is drawn at start and never stored, so the
same value reads the same within one process's lifetime and cannot be looked up from the placeholder.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from spanscore.records import LogRecord, SpanEvent, SpanRecord
from spanscore.redaction.redactor import Placeholders, Redactor


class KeyedPlaceholders(Placeholders):
    """``<EMAIL_1a2b3c4d>``: a keyed hash of the value, the same for the same value in every request."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        super().__init__()
        self._key = key

    def for_value(self, detector: str, value: str) -> str:
        digest = hmac.new(self._key, f"{detector}\0{value}".encode(), hashlib.sha256).hexdigest()[:8]
        return f"<{detector.upper()}_{digest}>"


class IngestRedaction:
    """One policy for every request; thread-safe (decoding runs on worker threads)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._placeholders = KeyedPlaceholders(secrets.token_bytes(32))
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        """Values masked at ingest, per detector (/metrics)."""

    def spans(self, spans: Sequence[SpanRecord]) -> list[SpanRecord]:
        found: Counter[str] = Counter()
        out = [self._span(span, found) for span in spans]
        self._count(found)
        return out

    def logs(self, records: Sequence[LogRecord]) -> list[LogRecord]:
        found: Counter[str] = Counter()
        out = [
            replace(record, body=self._text(record.body, found), attributes=self._values(record.attributes, found))
            for record in records
        ]
        self._count(found)
        return out

    def _span(self, span: SpanRecord, found: Counter[str]) -> SpanRecord:
        events = tuple(SpanEvent(e.time_ns, e.name, self._values(e.attributes, found)) for e in span.events)
        return replace(span, attributes=self._values(span.attributes, found), events=events)

    def _values(self, attributes: dict[str, str], found: Counter[str]) -> dict[str, str]:
        return {key: self._text(value, found) for key, value in attributes.items()}

    def _text(self, text: str, found: Counter[str]) -> str:
        if not text:
            return text
        redacted = self._redactor.redact(text, self._placeholders)
        found.update(redacted.counts())
        return redacted.text

    def _count(self, found: Counter[str]) -> None:
        if found:
            with self._lock:
                self.counts.update(found)
