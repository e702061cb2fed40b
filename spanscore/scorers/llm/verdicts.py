"""Answer schemas shared by several LLM scorers, and tolerant label parsing.

Judges write "Yes", " no " or "UNSURE" as often as "yes"; labels are
normalised (trimmed, lower-cased, spaces to underscores) before validation so
that only a genuinely wrong label is rejected.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field


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


class ClaimVerdict(BaseModel):
    claim: str = ""
    verdict: YesNoUnsure
    reason: str = ""


class ClaimVerdicts(BaseModel):
    verdicts: list[ClaimVerdict]


class BinaryResult(BaseModel):
    statement: str = ""
    result: YesNo
    reason: str = ""


class BinaryResults(BaseModel):
    results: list[BinaryResult]


def labelled(value: Any) -> Any:
    """The label normaliser, for schemas defined elsewhere."""
    return _label(value)
