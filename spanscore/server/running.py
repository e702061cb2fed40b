"""Runs a service until a signal arrives: SIGTERM or SIGINT drains and stops it, SIGHUP re-reads its rules.

Also the process tuning ``spanscore serve`` does once started (the GIL switch interval, the garbage
collector's frozen start-up objects, glibc's return of large blocks), which the benchmarks repeat to measure
what is served.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import signal
import sys
from typing import Any

from spanscore.config import ServiceConfig
from spanscore.server.banner import serve_banner
from spanscore.server.service import Service

log = logging.getLogger(__name__)


SWITCH_INTERVAL_S = 0.001
"""How long a thread may hold the GIL while another waits for it (CPython's default is 5 ms).

While the decode thread works through a large export, every step of a small request on the event
loop (a socket read, a hand-off between threads, the answer) waits for the GIL up to this long;
a small export takes about ten such steps, so 5 ms made it 50 ms or more. At 1 ms the decode of a
20,000-span export gets a few percent slower and small requests during it stay fast
(bench/decode_stall.py, docs/ack-modes.md)."""


COLLECTOR_THRESHOLDS = (10_000, 20, 100)
"""The cyclic garbage collector's thresholds while serving (CPython's defaults: 700, 10, 10).

With a rule, run assembly holds every pending trace's spans (seconds of traffic, a few hundred thousand
objects), and they turn over all the time, so CPython's full collections came every few seconds, walked
them all and found almost nothing: 80-184 ms with the GIL held, collecting 0-26 objects, each one an
acknowledgement stall (bench.ack_modes' rule, 22,000 small spans/s spooled, machine at rest). What serving
makes in cycles dies young and is still found by the young generations; full collections come about ten
times less often. Same minutes, ack p99 at that rate: spooled 436-478 ms -> 223-315 ms (3 runs each); stored,
where the insert sets the p99, no change beyond noise (164-291 ms before, 136-246 ms after and one run
of 709 ms, 6 runs each; docs/ack-modes.md, "At rest")."""


def tune_for_serving() -> None:
    """Once started: freeze start-up objects out of the collector, collect less often, shorten the GIL interval."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    freeze_startup_objects()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    return_large_blocks()


MMAP_THRESHOLD_BYTES = 1 << 20
"""Allocations from this size up get pages of their own, given back to the system when freed."""


def return_large_blocks() -> None:
    """Make glibc's malloc give large blocks back when freed, whatever sizes came before.

    glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB), after which such
    blocks come from the heap and stay resident: eight 24 MiB exports received one after another grew the
    service 2.5 times as much as one did (bench/grpc_admission.py). A fixed threshold turns that off.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return
    m_mmap_threshold = -3
    mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES)


def freeze_startup_objects() -> None:
    """Take what start-up left alive out of the cyclic garbage collector's reach.

    Imported modules, the config and the schema (about 83,000 tracked objects after a start without
    LLM judges, many more once litellm is loaded) live as long as the process, yet every full
    collection walked them all: pauses of the event loop of up to 107 ms under load, which showed as
    ack p99. Frozen, a full collection only walks what serving allocated (41 ms at most, same load).
    """
    gc.collect()
    gc.freeze()


async def run_until_signal(config: ServiceConfig, *, default_rule: bool = False, config_path: str | None = None) -> int:
    """Serve until SIGTERM or SIGINT, then drain and return the exit code; SIGHUP re-reads the rules."""
    service = Service(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    reloads: set[asyncio.Task[Any]] = set()

    def reload() -> None:
        if config_path is None:
            log.warning("SIGHUP ignored: the service was started without a config file (-c) to re-read")
            return
        task = loop.create_task(service.rule_control.reload_from(config_path))
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    loop.add_signal_handler(signal.SIGHUP, reload)
    if service.fleet is not None:  # a replica refused at join (its name is taken) stops rather than idle
        service.fleet.fleet.on_refused(lambda _: loop.call_soon_threadsafe(stop.set))
    try:
        await service.start()
    except Exception:
        await service.shutdown()
        raise
    tune_for_serving()
    addresses = " ".join(f"{k}={v}" for k, v in service.addresses().items())
    log.info("spanscore serving %s storage=%s", addresses, config.storage.database)
    ports = {name: c.port for name, c in (("grpc", service.grpc), ("http", service.http), ("api", service.api)) if c}
    print(serve_banner(config, service.addresses(), ports, default_rule), flush=True)
    await stop.wait()
    refused = service.fleet.fleet.refused if service.fleet is not None else None
    log.info("refused by the fleet: draining" if refused else "signal received: draining")
    try:
        await asyncio.wait_for(service.shutdown(), config.shutdown_timeout_s)
    except TimeoutError:
        log.error("shutdown did not finish within %.0fs", config.shutdown_timeout_s)
        return 1
    if service.fleet is not None and service.fleet.fleet.refused:
        log.error("stopped: refused by the fleet: %s", service.fleet.fleet.refused)
        return 1
    log.info("stopped cleanly spans_stored=%d", service.span_writer.stats.stored)
    return 0
