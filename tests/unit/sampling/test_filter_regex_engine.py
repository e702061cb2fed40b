"""Filter regexes run on a linear-time engine: a pattern that backtracks in Python's ``re`` costs nothing here.

A rule's ``where`` is evaluated for every finished run on the service's event loop; with a backtracking
engine, ``^(a+)+$`` against a long attribute stalled every listener (/healthz included) for seconds.
"""

from __future__ import annotations

import pytest

from spanscore.run import Run
from spanscore.sampling.filters import FilterError, parse_filter


def _run(agent_name: str) -> Run:
    return Run("question", "answer", trace_id="0af7651916cd43dd8448eb211c80319c", agent_name=agent_name)


@pytest.mark.parametrize("pattern", ["^(a+)+$", "(a|aa)+$", "(a*)*b$", "^(\\w+\\s?)*$"])
def test_catastrophic_patterns_decide_a_long_subject_at_once(pattern: str) -> None:
    compiled = parse_filter({"agent.name": {"regex": pattern}}, path="where")
    # With Python's backtracking engine each of these takes longer than the suite's timeout.
    assert compiled.matches(_run("a" * 50_000 + "!")) is False


def test_ordinary_patterns_still_match() -> None:
    compiled = parse_filter({"agent.name": {"regex": "^tri(age|al)$"}}, path="where")
    assert compiled.matches(_run("triage"))
    assert not compiled.matches(_run("triages"))


@pytest.mark.parametrize(("pattern", "why"), [("(a)\\1", "backreference"), ("a(?=b)", "lookahead")])
def test_patterns_only_a_backtracking_engine_can_run_are_refused_by_name(pattern: str, why: str) -> None:
    with pytest.raises(FilterError) as refused:
        parse_filter({"agent.name": {"regex": pattern}}, path="where")
    message = str(refused.value)
    assert "where.agent.name.regex" in message or "agent.name" in message
    assert "regular expression" in message and "RE2" in message
