"""``python -m bench.decision_rows [--regenerate] [--golden PATH] [--out PATH]``.

What rules decide must not change when readiness gets cheaper (#43). This replays every recorded framework
fixture (tests/fixtures/traces: each ``*.traces.json`` with its ``*.logs.json``, decoded as the receivers
decode them) through the live scoring stage in this process (``LiveScoring``: the run assembler on its own
thread, the ready poller, the dispatcher, the rule engine, the code scorers), with ``RULES``: one that selects
none of the runs, one by agent name, one by a root span attribute, one by model, one that samples half of all
runs; each rule alone, then all five together (``RULE_SETS``). It then writes every decision row, score
row and scored run (what the scorers were given) the stage handed to storage, sorted, one JSON line each,
without the columns that hold wall-clock times (when a row was made, how long a scorer took). The dump is
compared with tests/fixtures/decision_rows.golden, made from main's code before the change (``PYTHONPATH=<an
exported main> python bench/decision_rows.py --regenerate``); any difference is printed and the command exits
1. ``--regenerate`` writes the golden instead.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanscore.collector.decode import logs_from_request, parse_logs, parse_traces, spans_from_request
from spanscore.runs.config import RunsConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.live import LiveScoring
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "traces"
GOLDEN = REPO / "tests" / "fixtures" / "decision_rows.golden"
SCORERS = ["completeness", "answer_health"]
RULES: list[dict[str, Any]] = [
    {"name": "selects-nothing", "where": {"service.name": "bench-scored"}, "sample": 0.1, "scorers": SCORERS},
    {
        "name": "by-agent",
        "where": {"agent.name": {"regex": "^weather"}, "service.name": {"regex": "openinference"}},
        "scorers": SCORERS,
    },
    {"name": "by-span-attribute", "where": {"span.gen_ai.operation.name": {"exists": True}}, "scorers": SCORERS},
    {"name": "by-model", "where": {"model": {"contains": "gpt"}}, "sample": 0.5, "salt": "golden", "scorers": SCORERS},
    {"name": "half-of-all", "sample": 0.5, "salt": "golden", "scorers": SCORERS},
]
RULE_SETS: dict[str, list[dict[str, Any]]] = {
    **{rule["name"]: [rule] for rule in RULES},
    "all": RULES,
}
"""Each rule alone (a run none of the set's rules selects is decided ``filtered_out`` by all of them), then all."""
WALL_CLOCK = ("timestamp_ns", "duration_ms")
"""Row columns that say when or how long, not what: left out of the dump."""


class _Rows:
    """The stage's store, as far as its writers go: every row it is handed, kept in memory."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, dict[str, Any]]] = []

    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        self.rows.extend(("score", dataclasses.asdict(row)) for row in rows)

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        self.rows.extend(("decision", dataclasses.asdict(row)) for row in rows)

    async def insert_scored_runs(self, rows: Sequence[ScoredRunRow]) -> None:
        self.rows.extend(("scored_run", dataclasses.asdict(row)) for row in rows)


def fixture_names() -> list[Path]:
    """Every recorded trace export, in a fixed order (node_modules left out)."""
    found = [path for path in FIXTURES.rglob("*.traces.json") if "node_modules" not in path.parts]
    return sorted(found, key=lambda path: path.relative_to(FIXTURES).as_posix())


async def replay(rules: Sequence[dict[str, Any]]) -> list[str]:
    """Every decision and score row the live stage writes for the fixtures with ``rules``, one JSON line each."""
    store = _Rows()
    runs = RunsConfig(quiet_period_s=0.0, max_wait_s=0.01)
    configs = [RuleConfig.model_validate(rule) for rule in rules]
    live = LiveScoring(store, configs, runs=runs, scoring=ScoringConfig(recover_on_start=False))  # type: ignore[arg-type]
    await live.start()
    try:
        await live.poller.stop()  # polled by hand below, once everything is in
        for path in fixture_names():
            spans = spans_from_request(parse_traces(path.read_bytes(), json_body=True)).items
            await live.spans_in.consume(spans)
            logs_path = path.with_name(path.name.replace(".traces.json", ".logs.json"))
            if logs_path.exists():
                await live.logs_in.consume(logs_from_request(parse_logs(logs_path.read_bytes(), json_body=True)).items)
        await asyncio.sleep(0.05)  # past max_wait: every run is ready, its reason set by its root alone
        await live.poller.poll_once()
        await live.workers.drain()
    finally:
        await live.shutdown()
    lines = []
    for kind, row in store.rows:
        kept = {key: value for key, value in row.items() if key not in WALL_CLOCK}
        lines.append(json.dumps({"row": kind, **kept}, sort_keys=True, ensure_ascii=False))
    return lines


async def replay_all() -> list[str]:
    """``replay`` of every rule set, each line led by the set's name, sorted."""
    dump: list[str] = []
    for name, rules in RULE_SETS.items():
        dump.extend(f"{name}\t{line}" for line in await replay(rules))
    return sorted(dump)


def compare(golden: list[str], dump: list[str]) -> list[str]:
    """The lines that differ (unified diff), empty when equal."""
    return list(difflib.unified_diff(golden, dump, "golden", "this tree", lineterm="", n=0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regenerate", action="store_true", help="write the golden instead of comparing")
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    parser.add_argument("--out", type=Path, help="also write this tree's dump here")
    args = parser.parse_args()
    started = time.monotonic()
    dump = asyncio.run(replay_all())
    text = "\n".join(dump) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    if args.regenerate:
        args.golden.write_text(text)
        print(f"wrote {len(dump)} rows to {args.golden}")
        return 0
    differences = compare(args.golden.read_text().splitlines(), dump)
    for line in differences[:200]:
        print(line)
    print(f"{len(dump)} rows, {len(differences)} diff lines, {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
