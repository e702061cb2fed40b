"""Runs and score results cross to worker processes pickled by their slots (spanscore.slots_pickle): nothing lost.

Every run, span view and session view of the recorded framework fixtures, and a score result with every field
set, must come back equal, field by field, with the same types, and rebuilt without calling ``__init__``
(``Run``'s own ``__init__`` coerces its arguments: a rebuild through it could change a value).
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from bench.decision_rows import fixture_names
from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.run import Run, Turn
from spanscore.runs.assembly import assemble_runs
from spanscore.runs.sessions import session_view
from spanscore.scorers.results import ScoreResult, Status


def _fixture_runs() -> list[Run]:
    runs: list[Run] = []
    for path in fixture_names():
        spans = spans_from_request(parse_traces(path.read_bytes(), json_body=True)).items
        for item in assemble_runs(spans, span_targets=("llm", "tool", "retrieval"), views_first=False):
            runs.extend((item.run, *item.views))
    return runs


def _same(made: Any, back: Any) -> None:
    """Equal, of the same type, and so on down every dataclass field and every tuple or mapping item."""
    assert type(back) is type(made)
    if dataclasses.is_dataclass(made):
        for field in dataclasses.fields(made):
            _same(getattr(made, field.name), getattr(back, field.name))
    elif isinstance(made, tuple | list):
        assert len(back) == len(made)
        for one, other in zip(made, back, strict=True):
            _same(one, other)
    elif isinstance(made, dict):
        assert list(back) == list(made)
        for key, value in made.items():
            _same(value, back[key])
    else:
        assert back == made


def test_every_fixture_run_and_view_comes_back_the_same() -> None:
    runs = _fixture_runs()
    assert len(runs) > 200
    kinds = {run.target for run in runs}
    assert {"run", "llm", "tool"} <= kinds
    assert any(run.input and any(message.tool_calls for message in run.input + (run.output or ())) for run in runs)
    with_session = [run for run in runs if run.session_id and run.target == "run"]
    assert with_session
    session = session_view("s1", [Turn.of(run) for run in with_session[:3]], with_session[-1])
    assert session.turns
    runs.append(session)
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(runs, protocol))
        for made, copy in zip(runs, back, strict=True):
            assert copy == made
            _same(made, copy)


def test_a_rebuild_does_not_call_init(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _fixture_runs()[0]
    data = pickle.dumps(run)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("__init__ called on unpickling")

    monkeypatch.setattr(Run, "__init__", refuse)
    assert pickle.loads(data) == run


def test_a_score_result_with_every_field_set_comes_back_the_same() -> None:
    result = ScoreResult(
        "faithfulness", "2", Status.ERROR, 0.25, "why", "boom", "judge", True, 3.5, ("output",), "r1",
        {"claims": ["a", "b"], "verdicts": ({"v": 1},)}, {"judge": "prompt"}, 1.5, 2.5, {"judge": 2.0}, "gpt",
        10, 20, 0.001, "json_schema", False, {"output": 90_000}, {"email": 2},
    )  # fmt: skip
    assert all(
        getattr(result, field.name) != field.default
        for field in dataclasses.fields(ScoreResult)
        if field.default is not dataclasses.MISSING
    )
    back = pickle.loads(pickle.dumps(result, pickle.HIGHEST_PROTOCOL))
    assert back == result
    _same(result, back)


def test_pickling_a_run_and_a_result_does_not_list_dataclass_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """What made the hand-off slow: dataclasses' own pickling calls ``fields()`` for every object."""
    run = _fixture_runs()[0]
    result = ScoreResult("s", "1", Status.OK, 0.5)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("dataclasses.fields called while pickling")

    monkeypatch.setattr(dataclasses, "fields", refuse)
    assert pickle.loads(pickle.dumps([run, result])) == [run, result]


@dataclasses.dataclass(frozen=True, slots=True)
class Tagged(ScoreResult):
    tag: str = ""


def test_a_subclass_keeps_its_own_class_and_fields() -> None:
    made = Tagged("s", "1", Status.OK, 0.5, tag="mine")
    back = pickle.loads(pickle.dumps(made))
    assert type(back) is Tagged and back == made and back.tag == "mine"
