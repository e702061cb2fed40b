"""The judged rule ``serve`` suggests next to ``answer_health`` once a judge is configured.

``answer_health`` is local: it sees that a run broke, never that a fluent answer is wrong. A wrong
fact, an answer that contradicts its own tool result, or an answer to another question are only
visible to something that reads for meaning. A judge on every run is costly, so the suggestion is a
sampled rule (one run in twenty, at most a few a minute) whose prompt hands the judge what the local
checks already found (``{health}``), next to the question, the answer and the tool results.
docs/scorers.md shows the same rule; a test keeps the two identical.
"""

from __future__ import annotations

from typing import Any

import yaml

from spanscore.config import ServiceConfig

MEANING_RULES_YAML = """\
rules:
  - name: default
    sample: 1.0
    scorers: [answer_health]
  - name: meaning
    sample: 0.05
    max_per_minute: 6
    scorers:
      - name: llm_judge
        options:
          id: answer_meaning
          instructions: You check an agent's answer for what only its meaning can tell.
          requires: [input, output]
          analyze:
            prompt: |
              Question: {input}
              Answer: {output}
              Tool results and documents: {context}
              What the local checks found: {health}
              Does the answer answer this question, agree with the tool results and documents,
              and state no fact you know to be wrong? ok = 1 when all three hold, else 0.
            schema:
              type: object
              properties: {ok: {type: integer, enum: [0, 1]}, why: {type: string}}
              required: [ok, why]
          score: {field: ok}
"""
"""The default rule and a sampled judge rule beside it, as a user pastes them (any ``rules:`` key replaces the
default rule, so it is repeated). Valid as written: tests load it as rules and build its scorers."""
MEANING_RULE: dict[str, Any] = yaml.safe_load(MEANING_RULES_YAML)["rules"][1]


def judge_hint(config: ServiceConfig) -> list[str]:
    """Banner lines suggesting the judged rule: only with a judge, a rule running answer_health and none judging."""
    if not (config.judge or {}).get("model"):
        return []
    names = {spec.name for rule in config.rules for spec in rule.scorers}
    if "answer_health" not in names or "llm_judge" in names:
        return []
    lines = [
        "  answer_health cannot tell a wrong fact, an answer contradicting its tool result or an answer to",
        "  another question; a judge can, on a sample, told what the local checks found ({health}).",
        "  Add the meaning rule to the config (docs/scorers.md 'A judge next to answer_health'):",
    ]
    lines.extend(f"    {line}" for line in MEANING_RULES_YAML.rstrip().split("\n"))
    return lines
