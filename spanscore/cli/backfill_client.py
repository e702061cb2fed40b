"""``spanscore backfill`` against a running service: a progress line on stderr, Ctrl-C cancels on the server.

The backfill request blocks until the service finishes, so it runs on a thread while the main
thread polls ``/api/v1/status`` for the ``backfill_*`` figures. Ctrl-C reaches the main thread,
which asks the service to cancel (``{"cancel": true}``) rather than leave the backfill running
with nobody watching; what was scored stays written and a later backfill resumes with the rest.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import Any

from spanscore.errors import SpanscoreError

CallApi = Callable[[Any, str, "dict[str, object] | None", float], "bytes | None"]


def cancel(config: Any, call_api: CallApi, rule: str | None = None) -> dict[str, Any]:
    """Cancel the service's backfill of ``rule`` (every running one without it); the answer names them."""
    request: dict[str, object] = {"cancel": True} if rule is None else {"cancel": True, "rule": rule}
    body = call_api(config, "backfill", request, 10)
    if body is None:
        from spanscore.cli.reach import no_service

        raise SpanscoreError(f"{no_service(config)}; nothing to cancel")
    result: dict[str, Any] = json.loads(body)
    return result


def run_remote(config: Any, rule: str, since: str, call_api: CallApi) -> dict[str, Any] | None:
    """The service's backfill result, or None when no service answers (the caller then runs it locally)."""
    outcome: dict[str, Any] = {}

    def request() -> None:
        try:
            outcome["body"] = call_api(config, "backfill", {"rule": rule, "since": since}, 3600)
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=request, name="backfill-request", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(1.0)
            _print_progress(config, call_api)
    except KeyboardInterrupt:
        answer = cancel(config, call_api, rule)
        print("\nbackfill cancelled on the service" if answer.get("cancelled") else "", file=sys.stderr)
        raise
    if "error" in outcome:
        raise outcome["error"]
    sys.stderr.write("\n")
    body = outcome.get("body")
    return None if body is None else dict(json.loads(body))


def _print_progress(config: Any, call_api: CallApi) -> None:
    try:
        body = call_api(config, "status", None, 5)
    except SpanscoreError:
        return
    if body is None:
        return
    status = json.loads(body)
    if "backfill_total" not in status:
        return
    done, total = int(status["backfill_done"]), int(status["backfill_total"])
    rate, eta = status["backfill_rate_runs_per_s"], status["backfill_eta_s"]
    sys.stderr.write(f"\rbackfill {done}/{total} runs  {rate:.0f} runs/s  ETA {max(eta, 0):.0f}s   ")
    sys.stderr.flush()
