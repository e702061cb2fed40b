"""Resident memory of a process and every process it started, sampled while something runs.

The OTLP/JSON worker is a child of the service, so a service's cost is the sum over its tree. Used by the
cost benchmarks (``bench/grpc_admission.py``, ``bench/decode_amplification.py``) and by the e2e tests that hold
a real `spanscore serve` to generous memory bounds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def tree_rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, in MiB (Linux)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += _rss_kib(current)
        stack.extend(_children(current))
    return total / 1024


@dataclass
class Peak:
    """The highest tree RSS seen while a ``peak_growth`` block ran, and what it was when the block began."""

    baseline_mib: float = 0.0
    peak_mib: float = 0.0

    @property
    def growth_mib(self) -> float:
        return round(self.peak_mib - self.baseline_mib, 1)


@contextmanager
def peak_growth(pid: int, every_s: float = 0.01) -> Iterator[Peak]:
    """Sample ``pid``'s tree every ``every_s`` while the block runs; the yielded ``Peak`` is final after it."""
    peak = Peak(tree_rss_mib(pid))
    peak.peak_mib = peak.baseline_mib
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every_s):
            peak.peak_mib = max(peak.peak_mib, tree_rss_mib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()
        peak.peak_mib = max(peak.peak_mib, tree_rss_mib(pid))
