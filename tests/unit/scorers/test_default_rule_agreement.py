"""The default rule tells healthy runs from broken ones, on a labelled set of 44 runs.

tests/fixtures/default_rule/labelled_runs.json holds healthy runs in many shapes (one-word facts, code,
lists, other languages, tool use, answers *about* errors) and broken ones in the ways agents visibly
break (empty, null, stack traces, error text, templates left in, echoes, refusals, cut off, errored
runs, failed tools). The default rule must pass every healthy run, and fail at least 90% of the broken.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spanscore.run import Run
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers import build
from spanscore.scoring.rows import label
from spanscore.server.default_rules import DEFAULT_RULE

CASES = json.loads((Path(__file__).parents[2] / "fixtures/default_rule/labelled_runs.json").read_text("utf-8"))


def _run(case: dict[str, Any]) -> Run:
    return Run(
        case["input"],
        case["output"],
        trace_id="0af7651916cd43dd8448eb211c80319c",
        tool_calls=case.get("tool_calls"),
        error=case.get("error"),
        attributes=case.get("attributes", {}),
    )


def _verdict(case: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether the default rule passes the run (every scorer's label is pass), and the failing reasons."""
    rule = RuleConfig.model_validate(DEFAULT_RULE)
    failing = []
    for spec in rule.scorers:
        scorer = build(spec.name, **spec.options)
        result = scorer.run(_run(case))
        if label(result, scorer.info.higher_is_better, 0.5) != "pass":
            failing.append(f"{spec.name}: {result.score} {result.reason}")
    return not failing, failing


def test_the_set_is_balanced_and_large_enough() -> None:
    healthy = sum(case["label"] == "healthy" for case in CASES)
    assert len(CASES) >= 40 and healthy >= 20 and len(CASES) - healthy >= 20


@pytest.mark.parametrize("case", [c for c in CASES if c["label"] == "healthy"], ids=lambda c: c["why"])
def test_no_healthy_run_fails_the_default_rule(case: dict[str, Any]) -> None:
    passed, failing = _verdict(case)
    assert passed, failing


def test_the_default_rule_fails_the_broken_runs() -> None:
    broken = [case for case in CASES if case["label"] == "broken"]
    missed = [case["why"] for case in broken if _verdict(case)[0]]
    agreement = 1 - len(missed) / len(broken)
    print(f"default rule on {len(broken)} broken runs: {agreement:.0%} failed; passed by mistake: {missed}")
    assert agreement >= 0.9, missed
