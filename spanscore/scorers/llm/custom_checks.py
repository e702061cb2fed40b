"""The ``expect`` of a custom judge step given in the config, turned into ``judge_checks`` rules.

A custom step from the config says which list of its answer judges which
items (``{items: ratings, one_per: extract.promises}``); this module checks
that declaration when the scorer is built (errors name the step and the key)
and returns the function the step calls to know, for one run, how many items
were asked about and which labels are allowed. The labels come from the
step's own JSON schema (the ``enum`` of the ``label`` field), so the rubric
and the check cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from spanscore.scorers import StepContext
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.steps import Expectation, run_context

_KEYS = {"items", "one_per", "index_field", "label"}


def configured_expectation(where: str, spec: Any, schema: type[BaseModel] | Mapping[str, Any]) -> Expectation:
    """Validate a config ``expect`` mapping and return the step's expectation; ``where`` prefixes errors."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: expect must be a mapping like {{items: verdicts, one_per: extract.claims}}")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: expect has unknown key(s) {unknown}; use {sorted(_KEYS)}")
    items, one_per = spec.get("items"), spec.get("one_per")
    if not isinstance(items, str) or not items:
        raise ValueError(f"{where}: expect.items must name the answer's list field")
    if not isinstance(one_per, str) or not (one_per in ("context", "turns") or one_per.startswith("extract.")):
        raise ValueError(
            f"{where}: expect.one_per must be 'context', 'turns' or 'extract.<list field>', got {one_per!r}"
        )
    label = spec.get("label")
    labels = _labels(where, schema, items, label) if label is not None else ()
    index_field = spec.get("index_field")

    def expect(step: StepContext) -> list[ItemsExpected]:
        if one_per == "context":
            count = len(run_context(step.run, None) or [])
        elif one_per == "turns":
            count = len(step.run.turns or ())
        else:
            count = len((step.preprocess_result or {}).get(one_per.removeprefix("extract.")) or [])
        return [ItemsExpected(items, count, index_field=index_field, label_field=label, labels=labels)]

    return expect


def _labels(where: str, schema: type[BaseModel] | Mapping[str, Any], items: str, label: str) -> tuple[str, ...]:
    json_schema = schema.model_json_schema() if isinstance(schema, type) else dict(schema)
    try:
        item_schema = json_schema["properties"][items]["items"]
        item_schema = _resolve(json_schema, item_schema)
        enum = _resolve(json_schema, item_schema["properties"][label])["enum"]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: expect.label {label!r} must be an enum field of the {items!r} items") from None
    return tuple(str(value) for value in enum)


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        resolved: Mapping[str, Any] = root["$defs"][reference.removeprefix("#/$defs/")]
        return resolved
    return node
