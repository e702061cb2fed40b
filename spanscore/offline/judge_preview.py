"""What a rule's judges would be sent for one stored run, redacted by the rule's policy, without a judge call.

``spanscore rules preview`` shows it next to the counts and the cost: the operator reads the prompt of the
first judge step of each LLM scorer, with placeholders where the policy masks, before the rule is live.
Later steps depend on earlier answers, so only the first step that renders from the run alone is shown.
"""

from __future__ import annotations

from typing import Any

from spanscore.redaction.redactor import Placeholders, Redactor
from spanscore.run import Run
from spanscore.scorers.base import Scorer
from spanscore.scorers.contracts import StepContext
from spanscore.scorers.llm.steps import CombinedJudgeSteps, JudgeStep

MAX_SHOWN_CHARS = 4_000
"""Of each prompt shown: a preview is read in a terminal."""


def would_send(scorers: list[Scorer], run: Run, redactor: Redactor) -> list[dict[str, Any]]:
    """Per LLM scorer: the step, the redacted prompt (cut to ``MAX_SHOWN_CHARS``) and the detector counts."""
    placeholders = Placeholders()  # one run: the same value has the same placeholder in every prompt shown
    shown: list[dict[str, Any]] = []
    for scorer in scorers:
        if scorer.info.kind != "llm":
            continue
        found = _first_prompt(scorer, run)
        if found is None:
            continue
        step, prompt = found
        redacted = redactor.redact(prompt, placeholders)
        text = redacted.text
        if len(text) > MAX_SHOWN_CHARS:
            text = text[:MAX_SHOWN_CHARS] + f"\n[... {len(text) - MAX_SHOWN_CHARS} more characters]"
        shown.append({"scorer": scorer.info.id, "step": step, "text": text, "masked": redacted.counts()})
    return shown


def _first_prompt(scorer: Scorer, run: Run) -> tuple[str, str] | None:
    for name, step in scorer.steps.items():
        judge = step.parts[0] if isinstance(step, CombinedJudgeSteps) else step
        if not isinstance(judge, JudgeStep):
            continue
        try:
            prompt = judge.prompt(StepContext(run, scorer.info, scorer.options, {}, None))
        except Exception:  # a prompt that needs an earlier step's answer: nothing to show without the judge
            return None
        return None if prompt is None else (name, prompt)
    return None
