"""Consistent-probability sampling decisions from a trace id.

Every rule decides with the same arithmetic as OpenTelemetry's consistent
probability sampling: a 56-bit randomness value ``R`` is read from the trace
(the low 7 bytes of the trace id, or the explicit ``rv`` sub-key of the W3C
``tracestate`` ``ot`` entry when present) and compared against a rejection
threshold ``T = (1 - p) * 2**56``; the trace is kept iff ``R >= T``. Because
``T`` only falls as ``p`` rises, a trace kept at 5% is also kept at 10%
(decisions nest across rules), every replica reaches the same answer without
talking to the others, and traces an upstream head sampler kept with the same
scheme are a consistent superset of ours.

A rule may set a ``salt`` to decorrelate itself from the other rules. Salted
randomness is the first 56 bits of a keyed BLAKE2b hash of the trace id's
bytes; it ignores ``rv`` and no longer nests with unsalted rules or upstream
samplers, only with rules that share the same salt.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass

logger = logging.getLogger(__name__)

RANDOMNESS_BITS = 56
MAX_THRESHOLD = 1 << RANDOMNESS_BITS
"""``2**56``: the threshold that rejects everything (probability 0)."""

_RANDOMNESS_MASK = MAX_THRESHOLD - 1
_HEX_DIGITS = frozenset("0123456789abcdef")
_RANDOMNESS_HEX_LENGTH = RANDOMNESS_BITS // 4


class TraceIdError(ValueError):
    """A trace id that cannot carry sampling randomness (wrong length, not hex, all zero)."""


@dataclass(frozen=True, slots=True)
class OtTraceState:
    """The sampling sub-keys of a W3C ``tracestate`` ``ot`` entry; ``None`` when absent or malformed."""

    threshold: int | None = None
    randomness: int | None = None


def threshold_for(probability: float) -> int:
    """The rejection threshold for a sampling probability in [0, 1].

    ``probability * 2**56`` is exact in binary floating point (a power-of-two
    scale), so the only rounding is the final one to an integer and the
    threshold is monotone in the probability, which is what nesting needs.
    """
    if math.isnan(probability) or not 0.0 <= probability <= 1.0:
        raise ValueError(f"sampling probability must be between 0 and 1, got {probability!r}")
    return MAX_THRESHOLD - round(probability * MAX_THRESHOLD)


def probability_of(threshold: int) -> float:
    """The probability a threshold really samples at (the quantized form of the configured one)."""
    if not 0 <= threshold <= MAX_THRESHOLD:
        raise ValueError(f"threshold must be between 0 and 2**56, got {threshold}")
    return (MAX_THRESHOLD - threshold) / MAX_THRESHOLD


def validate_trace_id(trace_id: str) -> str:
    """Return the trace id in lowercase, or raise ``TraceIdError`` saying what is wrong with it."""
    normalized = trace_id.lower()
    if len(normalized) != 32 or not _HEX_DIGITS.issuperset(normalized):
        raise TraceIdError(f"trace id must be 32 hexadecimal digits, got {trace_id!r}")
    if normalized == "0" * 32:
        raise TraceIdError("trace id is all zeros, which W3C trace context defines as invalid")
    return normalized


def randomness_from_trace_id(trace_id: str) -> int:
    """The low 56 bits (last 14 hex digits) of a trace id, the randomness W3C level 2 ids guarantee."""
    return int(validate_trace_id(trace_id)[-_RANDOMNESS_HEX_LENGTH:], 16)


def salted_randomness(trace_id: str, salt: str) -> int:
    """56 bits from a keyed hash of the trace id, so a salted rule draws independently of unsalted ones."""
    key = hashlib.blake2b(salt.encode("utf-8"), digest_size=32).digest()
    digest = hashlib.blake2b(bytes.fromhex(validate_trace_id(trace_id)), key=key, digest_size=7).digest()
    return int.from_bytes(digest, "big")


def parse_ot_tracestate(trace_state: str) -> OtTraceState:
    """Read ``th`` and ``rv`` from the ``ot`` member of a W3C tracestate header value.

    Malformed values are treated as absent (logged at debug), as the
    specification asks: a bad upstream header must not break sampling.
    """
    for member in trace_state.split(","):
        key, separator, value = member.strip().partition("=")
        if separator and key.strip() == "ot":
            return _parse_ot_value(value.strip())
    return OtTraceState()


def _parse_ot_value(value: str) -> OtTraceState:
    threshold: int | None = None
    randomness: int | None = None
    for field in value.split(";"):
        name, _, text = field.partition(":")
        if name == "th":
            threshold = _parse_threshold(text)
        elif name == "rv":
            randomness = _parse_explicit_randomness(text)
    return OtTraceState(threshold=threshold, randomness=randomness)


def _parse_threshold(text: str) -> int | None:
    # 1 to 14 hex digits with trailing zeros dropped; pad them back on the right.
    if not 1 <= len(text) <= _RANDOMNESS_HEX_LENGTH or not _HEX_DIGITS.issuperset(text):
        logger.debug("ignoring malformed tracestate threshold th=%r", text)
        return None
    return int(text.ljust(_RANDOMNESS_HEX_LENGTH, "0"), 16)


def _parse_explicit_randomness(text: str) -> int | None:
    if len(text) != _RANDOMNESS_HEX_LENGTH or not _HEX_DIGITS.issuperset(text):
        logger.debug("ignoring malformed tracestate randomness rv=%r", text)
        return None
    return int(text, 16)


def randomness_for(trace_id: str, *, salt: str | None = None, trace_state: str = "") -> int:
    """The 56-bit randomness a decision uses: salted hash, else ``rv``, else the trace id's low bits.

    The trace id is validated in every case, so a run with a broken id fails
    loudly even when an ``rv`` would have let it through.
    """
    if salt:
        return salted_randomness(trace_id, salt)
    explicit = parse_ot_tracestate(trace_state).randomness if trace_state else None
    if explicit is not None:
        validate_trace_id(trace_id)
        return explicit
    return randomness_from_trace_id(trace_id)


def session_randomness(session_id: str, *, salt: str | None = None) -> int:
    """56 bits from a hash of a session id: a session is sampled whole, and every replica draws the same.

    Session ids are whatever the application chose (not random hex like trace ids), so their bits are
    hashed (BLAKE2b, keyed by the salt when the rule has one) rather than read. An empty id cannot be
    sampled and raises ``TraceIdError``.
    """
    if not session_id:
        raise TraceIdError("session id is empty")
    key = hashlib.blake2b((salt or "").encode("utf-8"), digest_size=32).digest() if salt else b""
    digest = hashlib.blake2b(session_id.encode("utf-8"), key=key, digest_size=7, person=b"spanscore-sess").digest()
    return int.from_bytes(digest, "big")


def is_sampled(trace_id: str, probability: float, *, salt: str | None = None, trace_state: str = "") -> bool:
    """Whether the trace falls inside a sample of the given probability (``R >= T``)."""
    return randomness_for(trace_id, salt=salt, trace_state=trace_state) >= threshold_for(probability)
