"""Memory per open session: the session tracker holding 10,000 open conversations.

Each session gets ``turns`` runs with a question of about 120 characters, an
answer of about 400 and one tool call (small JSON arguments and a 200-character
result), the shape of a support conversation. The figure is the traced Python
heap (``tracemalloc``) the tracker holds divided by the sessions, plus the time
a ``poll_ready`` takes: the once-a-second look at every session, and an
ordinary poll (every 0.2 s) that looks only at the sessions quiet long enough.

    python -m bench.sessions_memory [--sessions 10000] [--turns 5]

``--large`` measures instead one session of 40 runs with 1.8 MB of text each (#37 item 7): the heap the
tracker holds at the default byte caps (``max_session_bytes``), and with the caps lifted, as before them.

    python -m bench.sessions_memory --large
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc

from spanscore.run import Run, ToolCall
from spanscore.runs.config import SessionsConfig
from spanscore.runs.sessions import SessionTracker

S = 1_000_000_000


def _run(session: int, turn: int) -> Run:
    question = f"Session {session}, turn {turn}: my order has not arrived, can you check where it is? " * 1
    answer = ("I checked your order. It left the warehouse yesterday and should arrive tomorrow. " * 5)[:400]
    call = ToolCall(
        "lookup_order", {"order_id": f"A-{session:06d}-{turn}"}, result="{" + '"status": "shipped", ' * 9 + "}"
    )
    return Run(
        question + "x" * max(0, 120 - len(question)),
        answer,
        tool_calls=[call],
        run_id=f"{session:08x}{turn:08x}",
        trace_id=f"{session:016x}{turn:016x}",
        span_id=f"{session:08x}{turn:08x}",
        session_id=f"conversation-{session}",
        service_name="support-bot",
        agent_name="support",
        start_time_ns=turn * S,
        end_time_ns=turn * S + S // 2,
    )


def measure(sessions: int = 10_000, turns: int = 5) -> dict[str, float | int]:
    """Heap the tracker retains once every run it was given is gone: turns, texts, the latest run per session."""
    config = SessionsConfig(max_sessions=sessions, quiet_period_s=3600, max_duration_s=86_400)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracker = SessionTracker(config)
    for turn in range(turns):
        for session in range(sessions):
            tracker.add(_run(session, turn), turn * sessions + session)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    now = turns * sessions + 1
    timings = []
    for offset_s in (0.0, 0.2):  # the first poll looks at every session; one 0.2 s later only at the quiet ones
        started = time.perf_counter()
        ready = tracker.poll_ready(now + int(offset_s * S))
        timings.append((time.perf_counter() - started) * 1000)
        assert ready == [] and tracker.stats.open_sessions == sessions
    return {
        "sessions": sessions,
        "turns_per_session": turns,
        "tracker_bytes": held,
        "bytes_per_session": round(held / sessions),
        "bytes_per_turn": round(held / (sessions * turns)),
        "full_poll_ms": round(timings[0], 2),
        "poll_ms": round(timings[1], 3),
    }


def measure_large(runs: int = 40, text: int = 1_800_000) -> dict[str, float | int]:
    """Heap one session of ``runs`` large turns leaves held, with the byte caps and without them."""
    out: dict[str, float | int] = {"runs": runs, "text_bytes_per_run": text}
    lifted = SessionsConfig(quiet_period_s=3600, max_session_bytes=1 << 50, max_held_bytes=1 << 50)
    for label, config in (("default_caps", SessionsConfig(quiet_period_s=3600)), ("caps_lifted", lifted)):
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tracker = SessionTracker(config)
        for turn in range(runs):
            half = "y" * (text // 2)
            run = Run(
                half + str(turn),
                half + str(turn),
                run_id=f"{turn:016x}",
                trace_id=f"{turn:032x}",
                span_id=f"{turn:016x}",
                session_id="conversation-large",
                start_time_ns=turn * S,
                end_time_ns=turn * S + 1,
            )
            tracker.add(run, turn)
            del run, half
        gc.collect()
        out[f"{label}_held_mb"] = round((tracemalloc.get_traced_memory()[0] - before) / 1e6, 1)
        out[f"{label}_turns_held"] = tracker.stats.held_turns
        tracemalloc.stop()
        del tracker
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--large", action="store_true", help="one session of 40 runs with 1.8 MB of text each")
    args = parser.parse_args()
    result = measure_large() if args.large else measure(args.sessions, args.turns)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
