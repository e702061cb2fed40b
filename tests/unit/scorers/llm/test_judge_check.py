"""``spanscore judge check`` against the fake judge: the labelled set checks itself, disagreement is measured.

A fake judge scripted with the careful human's answers must agree 100% with zero score error (so every
labelled score follows from its verdicts); one that flips a verdict must show up as disagreement; the
command runs end to end over real HTTP against the standalone fake judge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spanscore.offline.judge_check import check_judge, main
from spanscore.offline.judge_check_cases import CASES
from spanscore.scorers.judge.client import JudgeClient, JudgeConfig
from tests.fakes.fake_openai import Reply

ROOT = Path(__file__).resolve().parents[4]
LLM_SCORERS = {
    "answer_relevancy", "answer_similarity", "bias", "context_precision", "context_recall", "context_relevance",
    "faithfulness", "hallucination", "noise_sensitivity", "prompt_alignment", "summarization",
    "tool_call_accuracy_llm", "toxicity",
}  # fmt: skip


def test_the_labelled_set_covers_every_llm_scorer_and_the_adversarial_kinds():
    assert {case.scorer for case in CASES} == LLM_SCORERS
    names = " ".join(case.name for case in CASES if case.kind == "adversarial")
    assert "injected" in names and "unverifiable" in names and "long context" in names


async def test_a_judge_answering_like_the_humans_agrees_fully(judge_server, judge_client):
    for case in CASES:
        judge_server.script("human", *(Reply.json(answer) for answer in case.answers))
    config = JudgeConfig(model="openai/human", api_base=judge_server.base_url, timeout_s=5.0)
    report = await check_judge(config, client=judge_client)
    assert set(report) == LLM_SCORERS
    for agreement in report.values():
        assert agreement.errors == 0, agreement.failures
        assert agreement.exact == agreement.compared, agreement.failures
        assert max(agreement.score_errors) == pytest.approx(0.0), (agreement.scorer, agreement.failures)


async def test_a_disagreeing_judge_is_measured(judge_server, judge_client):
    cases = [case for case in CASES if case.scorer == "faithfulness"]
    first = cases[0]
    flipped = {"verdicts": [{"verdict": "no"} for _ in first.answers[-1]["verdicts"]]}
    judge_server.script("flip", Reply.json(first.answers[0]), Reply.json(flipped))
    for case in cases[1:]:
        judge_server.script("flip", *(Reply.json(answer) for answer in case.answers))
    config = JudgeConfig(model="openai/flip", api_base=judge_server.base_url, timeout_s=5.0)
    agreement = (await check_judge(config, ["faithfulness"], client=judge_client))["faithfulness"]
    assert (agreement.cases, agreement.compared, agreement.exact) == (len(cases), len(cases), len(cases) - 1)
    assert max(agreement.score_errors) == pytest.approx(first.score)


def test_unknown_scorer_is_a_usage_error(capsys: pytest.CaptureFixture[str]):
    assert main(["--model", "openai/x", "--scorer", "keyword_coverage"]) == 2
    assert "no labelled cases" in capsys.readouterr().err


def test_a_judge_must_be_named_by_flag_or_config(capsys: pytest.CaptureFixture[str]):
    assert main(["--scorer", "toxicity"]) == 2
    assert "--model MODEL, or -c FILE" in capsys.readouterr().err


@pytest.mark.parametrize("judge_from", ["flags", "config"])
def test_the_command_over_http_against_the_standalone_fake_judge(judge_from: str, tmp_path: Path):
    toxicity = next(case for case in CASES if case.scorer == "toxicity")
    command = [sys.executable, str(ROOT / "tests/fakes/fake_openai.py"), "--port", "0"]
    server = subprocess.Popen(
        [*command, "--reply", json.dumps(toxicity.answers[-1])], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[-1]
        env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
        cli = [sys.executable, "-c", "from spanscore.cli.commands import main; raise SystemExit(main())"]
        flags = ["judge", "check", "--model", "openai/judge", "--api-base", url, "--scorer", "toxicity"]
        if judge_from == "config":  # the service's own config file names the judge
            config = tmp_path / "spanscore.yaml"
            config.write_text(f"judge: {{model: openai/judge, api_base: '{url}'}}\n", encoding="utf-8")
            flags = ["judge", "check", "-c", str(config), "--scorer", "toxicity"]
        result = subprocess.run([*cli, *flags], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("toxicity"))
    assert "1/1 (100%)" in row and " 0.000 " in row


@pytest.fixture
def judge_client() -> JudgeClient:
    return JudgeClient(environ={})
