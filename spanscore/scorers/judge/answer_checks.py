"""Does a judge's answer answer the question it was asked? One check for every LLM scorer.

A schema-valid answer can still be the wrong answer: three claims asked about
and one verdict returned, a ``context_index`` of 7 when two pieces were
shown, the same piece judged twice, a label outside the rubric. Scored as
is, such an answer turns into a confident number (one "yes" out of one is
1.0). So every judge step states what it asked for as :class:`ItemsExpected`
rules, :func:`answer_problems` lists every way the answer falls short, and
the judge client (``judge.JudgeClient.ask``) re-asks once quoting those
problems and otherwise raises ``JudgeAnswerError``: the run is recorded as an
error, never scored. Built-in and custom scorers go through this same path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AnswerCheck", "ItemsExpected", "answer_problems", "check_for"]

AnswerCheck = Callable[[Mapping[str, Any]], list[str]]
"""Given the validated answer as JSON-ready data, the problems found (empty when it answers the question)."""


@dataclass(frozen=True, slots=True)
class ItemsExpected:
    """One list in the answer that must judge each of ``count`` items exactly once.

    ``index_field`` names the field carrying the item's 0-based index when the judge addresses items by index
    (context pieces); without it, entries are matched to items by position. ``label_field`` and ``labels`` give
    the allowed labels; ``one_label_each`` says every label must appear exactly once (named dimensions).
    """

    field: str
    count: int
    index_field: str | None = None
    label_field: str | None = None
    labels: tuple[str, ...] = ()
    one_label_each: bool = False


def answer_problems(answer: Mapping[str, Any], expected: Sequence[ItemsExpected]) -> list[str]:
    """Every way ``answer`` fails ``expected``, each phrased so it can be quoted back to the judge."""
    problems: list[str] = []
    for rule in expected:
        items = answer.get(rule.field)
        if not isinstance(items, list):
            problems.append(f"'{rule.field}' is missing: give a list with one entry per item")
            continue
        if len(items) != rule.count:
            problems.append(
                f"'{rule.field}' has {len(items)} entries but {rule.count} items were given: judge each item once"
            )
        if rule.index_field is not None:
            problems.extend(_index_problems(rule, items))
        if rule.label_field is not None and rule.labels:
            problems.extend(_label_problems(rule, items))
    return problems


def check_for(expected: Sequence[ItemsExpected]) -> AnswerCheck:
    """The check the judge client runs on an answer for a step that expects ``expected``."""
    rules = tuple(expected)
    return lambda answer: answer_problems(answer, rules)


def _index_problems(rule: ItemsExpected, items: list[Any]) -> list[str]:
    problems: list[str] = []
    seen: set[int] = set()
    for position, item in enumerate(items):
        index = item.get(rule.index_field) if isinstance(item, Mapping) else None
        if isinstance(index, bool) or not isinstance(index, int):
            problems.append(f"'{rule.field}'[{position}] has no integer '{rule.index_field}'")
        elif not 0 <= index < rule.count:
            problems.append(f"'{rule.field}'[{position}].{rule.index_field} is {index}, outside 0..{rule.count - 1}")
        elif index in seen:
            problems.append(f"item {index} is judged more than once in '{rule.field}'")
        else:
            seen.add(index)
    unjudged = [str(index) for index in range(rule.count) if index not in seen]
    if unjudged and len(items) <= rule.count:
        problems.append(f"item(s) {', '.join(unjudged[:10])} not judged in '{rule.field}'")
    return problems


def _label_problems(rule: ItemsExpected, items: list[Any]) -> list[str]:
    problems: list[str] = []
    counts: dict[str, int] = {}
    allowed = ", ".join(rule.labels)
    for position, item in enumerate(items):
        label = item.get(rule.label_field) if isinstance(item, Mapping) else None
        if label not in rule.labels:
            problems.append(f"'{rule.field}'[{position}].{rule.label_field} is {label!r}, not one of: {allowed}")
        else:
            counts[label] = counts.get(label, 0) + 1
    if rule.one_label_each:
        repeated = sorted(label for label, count in counts.items() if count > 1)
        absent = [label for label in rule.labels if label not in counts]
        if repeated:
            problems.append(f"'{rule.field}' repeats {', '.join(repeated)}: give each exactly once")
        if absent:
            problems.append(f"'{rule.field}' lacks {', '.join(absent)}")
    return problems
