"""Answer schemas shared by several LLM scorers, and tolerant label parsing.

Judges write "Yes", " no " or "UNSURE" as often as "yes"; labels are
normalised (trimmed, lower-cased, spaces to underscores) before validation so
that only a genuinely wrong label is rejected.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, create_model


def _label(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower().replace(" ", "_")
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_label)]
YesNoUnsure = Annotated[Literal["yes", "no", "unsure"], BeforeValidator(_label)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class Claims(BaseModel):
    """Preprocess answer: the self-contained claims found in a text."""

    claims: list[str]


class Statements(BaseModel):
    statements: list[str]


class Opinions(BaseModel):
    opinions: list[str]


def judged_item(name: str, subject: str, subject_type: Any, label: str, labels: Any) -> type[BaseModel]:
    """One item as a judge answers it: what it judged, its label, then its reason.

    ``subject_type`` is a pydantic field definition; the label (one of ``labels``) is required. The schema
    is the one a class written out would have (same name, fields, order and titles): the judge sees no change.
    """
    fields: dict[str, Any] = {subject: subject_type, label: (labels, ...), "reason": (str, "")}
    return create_model(name, **fields)


def judged_list(name: str, field: str, item: Any, *, at_least: int = 0) -> type[BaseModel]:
    """A judge's whole answer: its items in order under ``field`` (``at_least`` of them when given)."""
    fields: dict[str, Any] = {field: (list[item], Field(min_length=at_least) if at_least else ...)}
    return create_model(name, **fields)


ClaimVerdict = judged_item("ClaimVerdict", "claim", (str, ""), "verdict", YesNoUnsure)
ClaimVerdicts = judged_list("ClaimVerdicts", "verdicts", ClaimVerdict)
BinaryResult = judged_item("BinaryResult", "statement", (str, ""), "result", YesNo)
BinaryResults = judged_list("BinaryResults", "results", BinaryResult)


def labelled(value: Any) -> Any:
    """The label normaliser, for schemas defined elsewhere."""
    return _label(value)
