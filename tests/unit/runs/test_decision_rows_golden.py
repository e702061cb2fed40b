"""What rules decide and score on the recorded fixtures is what main decided and scored (#43).

``bench.decision_rows`` replays every recorded framework fixture through the live scoring stage (assembler,
ready poller, dispatcher, rule engine, code scorers) under five rules, alone and together: one that selects
nothing, one by agent name, one by a root span attribute, one by model at 50 %, one sampling half of all runs.
The decision and score rows must equal tests/fixtures/decision_rows.golden, which main's code wrote before
readiness learnt to skip building runs no rule can select.
"""

from __future__ import annotations

import json

from bench.decision_rows import GOLDEN, compare, replay_all


async def test_the_fixtures_decision_and_score_rows_are_the_golden_ones() -> None:
    golden = GOLDEN.read_text().splitlines()
    dump = await replay_all()
    assert compare(golden, dump) == []


def test_the_golden_holds_every_outcome_the_comparison_must_guard() -> None:
    """A golden without filtered_out, sampled and score rows could not show a change in any of them."""
    seen = set()
    for line in GOLDEN.read_text().splitlines():
        rule_set, _, row = line.partition("\t")
        fields = json.loads(row)
        seen.add((rule_set, fields["row"], fields.get("decision", fields.get("status"))))
    assert ("selects-nothing", "decision", "filtered_out") in seen
    for rule_set in ("by-agent", "by-span-attribute", "by-model", "half-of-all", "all"):
        assert (rule_set, "decision", "filtered_out") in seen or rule_set == "half-of-all", rule_set
        assert (rule_set, "decision", "sampled") in seen, rule_set
        assert (rule_set, "score", "ok") in seen, rule_set


def test_one_changed_value_in_a_row_is_a_difference() -> None:
    golden = GOLDEN.read_text().splitlines()
    changed = [golden[0].replace('"agent_name": "', '"agent_name": "x', 1), *golden[1:]]
    assert changed != golden
    assert any(line.startswith("-") and "agent_name" in line for line in compare(golden, changed))
    assert compare(golden, golden) == []
