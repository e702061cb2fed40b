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
            if worker.is_alive():  # a request that already ended (an unknown rule, say) has no progress to show
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
    line = progress_line(json.loads(body))
    if line is not None:
        sys.stderr.write(f"\r{line}   ")
        sys.stderr.flush()


def progress_line(status: dict[str, Any]) -> str | None:
    """The progress line for the service's latest backfill, or None when none is running.

    A finished backfill is the previous one (this request's has not started yet) or this one, whose
    answer is printed next: either way not progress. The ETA is "unknown" until a run was scored.
    """
    if "backfill_total" not in status or status.get("backfill_finished", 0) > 0:
        return None
    done, total = int(status["backfill_done"]), int(status["backfill_total"])
    rate, eta = float(status["backfill_rate_runs_per_s"]), float(status["backfill_eta_s"])
    return f"backfill {done}/{total} runs  {rate:.1f} runs/s  ETA {f'{eta:.0f}s' if eta >= 0 else 'unknown'}"
