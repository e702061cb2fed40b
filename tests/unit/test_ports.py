"""The ports tests pick for the services they start: never the same one twice, never another worker's."""

from __future__ import annotations

import pytest

from spanscore.testing import ports


def test_a_process_never_picks_the_same_port_twice() -> None:
    """A CI run started a service whose HTTP and API ports were one pick apart and equal: 'port already in use'.
    Two thousand random picks from the ~22,000 ports below the ephemeral range repeat one about 88 times."""
    picked = [ports.free_port() for _ in range(2_000)]
    assert len(set(picked)) == len(picked)


@pytest.mark.parametrize("worker", [0, 1, 2])
def test_each_xdist_worker_picks_from_its_own_slice(monkeypatch: pytest.MonkeyPatch, worker: int) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    assert ports._worker_slice(10_000, 39_999) == (10_000 + worker * 10_000, 19_999 + worker * 10_000)
    low, high = ports._worker_slice(10_000, ports._ephemeral_start() - 1)
    for _ in range(50):
        assert low <= ports.free_port() <= high
