"""Shared doubles for the sampling tests: a clock the test moves by hand, and random trace ids."""

from __future__ import annotations

import random

# 2026-11-21 12:00:00 UTC: mid-day, so budget tests have half a day left.
NOON = 1_795_262_400.0


class FakeClock:
    """Unix seconds that only move when the test says so."""

    def __init__(self, now: float = NOON) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def random_trace_ids(count: int, seed: int) -> list[str]:
    """Trace ids as a W3C level 2 SDK makes them (128 random bits), reproducible per seed."""
    generator = random.Random(seed)
    return [f"{generator.getrandbits(128) | 1:032x}" for _ in range(count)]
