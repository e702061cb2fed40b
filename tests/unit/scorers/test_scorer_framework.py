import asyncio

import pytest

from spanscore import Run
from spanscore.errors import ConfigError, RetryableError
from spanscore.scorers import (
    MissingInput,
    NotApplicable,
    Status,
    StepContext,
    StepOutput,
    build,
    create_scorer,
    register,
)


def _length_scorer():
    return (
        create_scorer("length", version="3", requires=["output"])
        .preprocess(lambda ctx: {"length": len(ctx.run.output_text or "")})
        .analyze(lambda ctx: {"long": ctx.preprocess_result["length"] > 5})
        .generate_score(lambda ctx: 1.0 if ctx.analyze_result["long"] else 0.0)
        .generate_reason(lambda ctx: f"length {ctx.preprocess_result['length']} gives {ctx.score}")
    )


def test_four_steps_run_in_order_and_results_are_kept() -> None:
    result = _length_scorer().run(Run(input="q", output="a long answer", run_id="r1"))
    assert result.status is Status.OK
    assert result.score == 1.0
    assert result.reason == "length 13 gives 1.0"
    assert result.steps["preprocess"] == {"length": 13}
    assert result.steps["analyze"] == {"long": True}
    assert (result.scorer_id, result.scorer_version, result.run_id) == ("length", "3", "r1")
    assert set(result.step_durations_ms) == {"preprocess", "analyze", "generate_score", "generate_reason"}
    assert result.duration_ms >= 0 and result.started_at > 0


def test_missing_declared_field_gives_missing_input_and_runs_no_step() -> None:
    calls: list[str] = []

    def score(ctx: StepContext) -> float:
        calls.append("score")
        return 1.0

    scorer = create_scorer("needs_truth", requires=["ground_truth", "output"]).generate_score(score)
    result = scorer.run(Run(input="q", output=""))
    assert result.status is Status.MISSING_INPUT
    assert result.score is None
    assert result.missing_fields == ("ground_truth",)
    assert calls == []


def test_empty_string_is_not_missing() -> None:
    result = _length_scorer().run(Run(input="q", output=""))
    assert result.status is Status.OK and result.score == 0.0


def test_not_applicable_and_runtime_missing_input() -> None:
    def skip(ctx: StepContext) -> None:
        raise NotApplicable("no tool calls to judge")

    def lack(ctx: StepContext) -> None:
        raise MissingInput(["tool_calls"])

    na = create_scorer("na").preprocess(skip).generate_score(lambda ctx: 1.0).run(Run(output="x"))
    assert na.status is Status.NOT_APPLICABLE and na.score is None and na.reason == "no tool calls to judge"
    mi = create_scorer("mi").preprocess(lack).generate_score(lambda ctx: 1.0).run(Run(output="x"))
    assert mi.status is Status.MISSING_INPUT and mi.missing_fields == ("tool_calls",)


def test_step_error_is_a_result_naming_the_step() -> None:
    def boom(ctx: StepContext) -> None:
        raise RetryableError("judge busy")

    result = create_scorer("err").analyze(boom).generate_score(lambda ctx: 1.0).run(Run(output="x"))
    assert result.status is Status.ERROR
    assert result.failed_step == "analyze"
    assert result.retryable is True
    assert result.error == "RetryableError: judge busy"
    assert result.score is None


@pytest.mark.parametrize("bad", ["0.5", float("nan"), True, None])
def test_non_numeric_score_is_an_error(bad: object) -> None:
    result = create_scorer("bad").generate_score(lambda ctx: bad).run(Run(output="x"))
    assert result.status is Status.ERROR and result.failed_step == "generate_score"


def test_async_judge_like_step_and_accounting() -> None:
    class FakeJudgeStep:
        async def __call__(self, ctx: StepContext) -> StepOutput:
            await asyncio.sleep(0)
            return StepOutput(
                {"verdict": "yes"}, prompt="judge this", judge_model="m", input_tokens=7, output_tokens=3, cost_usd=0.01
            )

    scorer = (
        create_scorer("judge", kind="llm")
        .analyze(FakeJudgeStep())
        .generate_score(lambda ctx: 1.0 if ctx.analyze_result["verdict"] == "yes" else 0.0)
    )
    assert scorer.is_async
    for result in (scorer.run(Run(output="x")), asyncio.run(scorer.arun(Run(output="x")))):
        assert result.score == 1.0
        assert result.prompts == {"analyze": "judge this"}
        assert (result.judge_model, result.input_tokens, result.output_tokens) == ("m", 7, 3)
        assert result.cost_usd == pytest.approx(0.01)


def test_scorer_without_generate_score_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        create_scorer("incomplete").run(Run(output="x"))


def test_unknown_required_field_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown required field"):
        create_scorer("x", requires=["outptu"])


def test_chaining_does_not_mutate_and_with_info_bumps_version() -> None:
    base = create_scorer("c").generate_score(lambda ctx: 0.5)
    v2 = base.with_info(version="2")
    assert base.version == "1" and v2.version == "2"
    assert v2.run(Run(output="x")).scorer_version == "2"


def test_register_and_build_custom_factory() -> None:
    @register("test_constant_scorer", replace=True)
    def make(*, value: float = 0.25):
        return create_scorer("test_constant_scorer").generate_score(lambda ctx: value)

    assert build("test_constant_scorer", value=0.75).run(Run(output="x")).score == 0.75
    with pytest.raises(ConfigError, match="unknown option"):
        build("test_constant_scorer", valeu=1)
    with pytest.raises(ConfigError, match="already registered"):
        register("test_constant_scorer")(lambda: make())


CUSTOM = create_scorer("module_level").generate_score(lambda ctx: 0.5)


def make_custom(*, weight: float = 1.0):
    return create_scorer("module_factory").generate_score(lambda ctx: weight)


def test_build_by_import_path() -> None:
    assert build(f"{__name__}:CUSTOM").run(Run(output="x")).score == 0.5
    assert build(f"{__name__}:make_custom", weight=0.1).run(Run(output="x")).score == 0.1
    with pytest.raises(ConfigError, match="takes no options"):
        build(f"{__name__}:CUSTOM", weight=1)
    with pytest.raises(ConfigError, match="cannot import"):
        build("no_such_module_xyz:thing")
    with pytest.raises(ConfigError, match="has no attribute"):
        build(f"{__name__}:nothing_here")
    with pytest.raises(ConfigError, match="unknown scorer"):
        build("no_such_scorer")


async def test_sync_run_inside_a_loop_points_to_arun() -> None:
    async def judge(ctx: StepContext) -> float:
        return 1.0

    scorer = create_scorer("async_only", kind="llm").generate_score(judge)
    with pytest.raises(RuntimeError, match="arun"):
        scorer.run(Run(output="x"))
    assert (await scorer.arun(Run(output="x"))).score == 1.0
    # code scorers stay callable synchronously even inside a loop
    assert create_scorer("sync").generate_score(lambda ctx: 0.5).run(Run(output="x")).score == 0.5


def test_judge_steps_count_the_calls_one_scored_run_costs_at_least() -> None:
    """`rules preview` estimates judge calls from this: faithfulness asks twice per run, not once."""
    from spanscore.scorers import build

    assert build("faithfulness", model="openai/gpt-4o-mini").judge_steps == 2
    assert build("toxicity", model="openai/gpt-4o-mini").judge_steps == 1
    assert build("completeness").judge_steps == 0
