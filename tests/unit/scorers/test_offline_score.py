import json
from pathlib import Path

import pytest

from spanscore.offline.score_files import InputError, main, read_runs

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "otel_genai.traces.json"


def _write(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_prints_one_line_per_run_and_scorer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(
        tmp_path,
        [
            {"id": "a", "input": "Hello World", "output": "hello   world"},
            {"id": "b", "input": "abc", "output": "xyz", "tool_calls": [{"name": "search"}]},
            {"id": "c", "output": "no input here"},
        ],
    )
    code = main(["--scorer", "content_similarity", "--scorer", "keyword_coverage", str(path)])
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert len(lines) == 6
    assert lines[0] == {
        "id": "a",
        "scorer": "content_similarity",
        "score": 1.0,
        "status": "ok",
        "reason": lines[0]["reason"],
    }
    assert {line["status"] for line in lines if line["id"] == "c"} == {"missing_input"}
    assert all(line["score"] is None for line in lines if line["id"] == "c")
    assert "content_similarity: mean=" in err and "missing_input=1" in err


def test_threshold_failure_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [{"id": "a", "input": "one two", "output": "three four"}])
    assert main(["--scorer", "textual_difference", "--min", "textual_difference=0.9", str(path)]) == 1
    assert "FAIL" in capsys.readouterr().err
    assert main(["--scorer", "textual_difference", "--max", "textual_difference=0.9", str(path)]) == 0


def test_options_are_parsed_as_json_and_targeted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [{"id": "t", "input": "q", "output": "a", "tool_calls": ["auth", "log", "fetch"]}])
    code = main(
        [
            "--scorer",
            "tool_call_accuracy",
            "--option",
            'expected_tool_order=["auth", "fetch"]',
            "--option",
            "tool_call_accuracy.strict_mode=true",
            str(path),
        ]
    )
    line = json.loads(capsys.readouterr().out.splitlines()[0])
    assert code == 0 and line["score"] == 0.0  # strict order forbids the extra "log" call


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"id": "a", "input": 5, "output": "x"}], "line 1: field 'input'"),
        ([{"id": "a", "output": "x"}, "not an object"], "line 2: expected a JSON object"),
        ([{"id": "a", "output": "x", "context": ["ok", 3]}], "line 1: field 'context[1]'"),
        ([{"id": "a", "output": "x", "tool_calls": [{"arguments": {}}]}], "line 1: tool_calls[0]"),
        ([{"id": "a", "output": "x"}, {"id": "b", "inpt": "q", "output": "x"}], "line 2: unknown field(s) 'inpt'"),
    ],
)
def test_invalid_input_names_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[object], message: str
) -> None:
    assert main(["--scorer", "completeness", str(_write(tmp_path, lines))]) == 2
    assert message in capsys.readouterr().err


def test_broken_json_line_and_unknown_scorer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "output": "x"}\n{oops\n', encoding="utf-8")
    assert main(["--scorer", "completeness", str(path)]) == 2
    assert "line 2: not valid JSON" in capsys.readouterr().err
    assert main(["--scorer", "no_such", str(path)]) == 2
    assert "unknown scorer" in capsys.readouterr().err
    assert main(["--scorer", "completeness", "--option", "bogus=1", str(path)]) == 2
    assert "unknown option" in capsys.readouterr().err


def test_otlp_json_export_is_read_through_the_normalizer() -> None:
    runs = read_runs(TRACES.read_text(encoding="utf-8"))
    assert runs and all(run.output is not None for run in runs)


def test_empty_input_is_invalid() -> None:
    with pytest.raises(InputError, match="no runs"):
        read_runs("\n\n")
