"""Every per-item judge answer is built by one helper (#27 duplicates), and the judge sees the schema a class gives."""

from __future__ import annotations

from pydantic import BaseModel, Field

from spanscore.scorers.llm.verdicts import YesNo, judged_item, judged_list


class TurnVerdict(BaseModel):
    turn: int = Field(ge=1)
    verdict: YesNo
    reason: str = ""


class TurnVerdicts(BaseModel):
    verdicts: list[TurnVerdict] = Field(min_length=1)


def test_a_judged_item_and_its_list_have_the_schema_of_the_classes_written_out() -> None:
    item = judged_item("TurnVerdict", "turn", (int, Field(ge=1)), "verdict", YesNo)
    items = judged_list("TurnVerdicts", "verdicts", item, at_least=1)
    assert item.model_json_schema() == TurnVerdict.model_json_schema()
    assert items.model_json_schema() == TurnVerdicts.model_json_schema()
    parsed = items.model_validate({"verdicts": [{"turn": 2, "verdict": " Yes "}]})
    assert parsed.model_dump() == {"verdicts": [{"turn": 2, "verdict": "yes", "reason": ""}]}
