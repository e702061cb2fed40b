"""Keys of the service's metrics dict: a metric name with optional labels, ``name{label="value",...}``.

The dict (``Service.metrics()``) feeds both ``/api/v1/status`` as JSON and ``/metrics`` in the Prometheus
text format. Producers build keys with :func:`metric_key`, which escapes label values the way Prometheus
does (backslash, double quote, newline), so :func:`parse_metric_key` gets the name and labels back
exactly, whatever a rule name contains.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?$", re.DOTALL)
_LABEL = re.compile(r'(?P<label>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"(?:,|$)', re.DOTALL)
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def metric_key(name: str, **labels: str) -> str:
    """``name`` alone, or ``name{label="value",...}`` with the values escaped."""
    if not labels:
        return name
    pairs = ",".join(f'{label}="{_escape(value)}"' for label, value in labels.items())
    return f"{name}{{{pairs}}}"


def parse_metric_key(key: str) -> tuple[str, dict[str, str]]:
    """The name and labels of a key built by :func:`metric_key`; ValueError for anything else."""
    match = _KEY.match(key)
    if match is None:
        raise ValueError(f"not a metric key: {key!r}")
    text = match["labels"] or ""
    labels: dict[str, str] = {}
    position = 0
    while position < len(text):
        pair = _LABEL.match(text, position)
        if pair is None:
            raise ValueError(f"malformed labels in metric key {key!r}")
        labels[pair["label"]] = re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], pair["value"])
        position = pair.end()
    return match["name"], labels


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
