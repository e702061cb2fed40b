"""``spanscore judge check``: how far does a judge model agree with careful human verdicts?

Before switching LLM rules on, a team picks a judge model. This command runs
every LLM scorer (or the ``--scorer`` ones) on the labelled set shipped with
spanscore (``judge_check_cases``) against that model, one case at a time,
and prints per scorer: cases run, judge errors, exact verdict agreement
(cases whose final verdict list equals the human one, label for label),
mean absolute score error against the human score, cost and median latency.
The judge is reached like the ``score`` command's: ``--model`` (litellm
string), ``--api-base`` and ``--api-key-env``.

Exit status: 0 when the check ran, 2 for bad usage, 3 when no case could be
scored at all (the judge is unreachable or never answers the question).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from spanscore.errors import ConfigError
from spanscore.offline.judge_check_cases import CASES, LabelledCase
from spanscore.scorers.base import ScoreResult, Status
from spanscore.scorers.judge.client import JudgeClient, JudgeConfig
from spanscore.scorers.registry import build

__all__ = ["ScorerAgreement", "check_judge", "main"]


@dataclass
class ScorerAgreement:
    """What one scorer's cases showed about the judge."""

    scorer: str
    cases: int = 0
    errors: int = 0
    compared: int = 0
    exact: int = 0
    score_errors: list[float] = field(default_factory=list)
    cost_usd: float = 0.0
    cost_known: bool = True
    """False once any judge call had no price in litellm's table: the cost is unknown, not the sum shown."""
    durations_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, case: LabelledCase, result: ScoreResult) -> None:
        self.cases += 1
        self.cost_usd += result.cost_usd
        self.cost_known = self.cost_known and result.cost_known
        self.durations_ms.append(result.duration_ms)
        if result.status is not Status.OK or result.score is None:
            self.errors += 1
            self.failures.append(f"{case.name}: {result.status.value}: {result.error or result.reason or ''}"[:300])
            return
        self.score_errors.append(abs(result.score - case.score))
        list_field, key = case.verdicts
        if not list_field:
            return
        self.compared += 1
        judged = [item.get(key) for item in (result.steps.get("analyze") or {}).get(list_field) or []]
        if judged == case.human_labels():
            self.exact += 1
        else:
            self.failures.append(f"{case.name}: verdicts {judged} vs human {case.human_labels()}"[:300])

    def row(self) -> str:
        agreement = f"{self.exact}/{self.compared} ({self.exact / self.compared:.0%})" if self.compared else "n/a"
        error = f"{statistics.fmean(self.score_errors):.3f}" if self.score_errors else "n/a"
        latency = f"{statistics.median(self.durations_ms):.0f}" if self.durations_ms else "n/a"
        return (
            f"{self.scorer:<24} {self.cases:>5} {self.errors:>6} {agreement:>14} {error:>11} "
            f"{f'{self.cost_usd:.5f}' if self.cost_known else 'unknown':>10} {latency:>10}"
        )


HEADER = (
    f"{'scorer':<24} {'cases':>5} {'errors':>6} {'exact verdicts':>14} {'score error':>11} {'cost $':>10} "
    f"{'p50 ms':>10}"
)


async def check_judge(
    config: JudgeConfig, scorers: Sequence[str] | None = None, *, client: JudgeClient | None = None
) -> dict[str, ScorerAgreement]:
    """Run the labelled cases of ``scorers`` (all when ``None``) against the judge ``config`` names."""
    chosen = [case for case in CASES if scorers is None or case.scorer in scorers]
    own_client = client is None
    active = client or JudgeClient()
    judge = config.model_dump(exclude_none=True)
    report: dict[str, ScorerAgreement] = {}
    try:
        for case in chosen:
            scorer = build(case.scorer, judge=judge, client=active, **case.options)
            result = await scorer.arun(case.run)
            report.setdefault(case.scorer, ScorerAgreement(case.scorer)).add(case, result)
    finally:
        if own_client:
            await active.aclose()
    return report


def print_report(report: dict[str, ScorerAgreement], model: str, out: TextIO, *, verbose: bool = False) -> None:
    out.write(f"judge check: {model} on {sum(a.cases for a in report.values())} labelled case(s)\n{HEADER}\n")
    for agreement in report.values():
        out.write(agreement.row() + "\n")
    if verbose:
        for agreement in report.values():
            for failure in agreement.failures:
                out.write(f"  {agreement.scorer}: {failure}\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spanscore judge check",
        description="Run the LLM scorers on spanscore's labelled cases against a judge and report agreement.",
    )
    parser.add_argument("-c", "--config", help="YAML configuration file: its judge: section is the judge checked")
    parser.add_argument("--model", help="litellm model string, e.g. openai/gpt-4o-mini (overrides the config's)")
    parser.add_argument("--scorer", action="append", metavar="NAME", help="only this scorer (repeatable)")
    parser.add_argument("--api-base", metavar="URL", help="base URL of an OpenAI-compatible judge server")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the judge's API key")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every disagreement and error")
    return parser


def _config(args: argparse.Namespace, base: Mapping[str, Any]) -> JudgeConfig:
    known = sorted({case.scorer for case in CASES})
    unknown = sorted(set(args.scorer or ()) - set(known))
    if unknown:
        raise ConfigError(f"--scorer {', '.join(unknown)}: no labelled cases; choose from {', '.join(known)}")
    values: dict[str, Any] = dict(base)
    if args.model:
        values["model"] = args.model
    if not values.get("model"):
        raise ConfigError("name the judge: --model MODEL, or -c FILE whose judge: section names a model")
    if args.api_base:
        values["api_base"] = args.api_base
    if args.api_key_env:
        values["api_key_env"] = args.api_key_env
    try:
        return JudgeConfig(**values)
    except ValueError as exc:
        raise ConfigError(f"--model/--api-base/--api-key-env: {exc}") from None


def main(argv: Sequence[str] | None = None, load_judge: Callable[[str | None], Mapping[str, Any]] | None = None) -> int:
    """Run ``judge check``; 0 when it ran, 2 for bad usage, 3 when no case could be scored.

    ``load_judge`` reads the ``judge:`` section of the ``-c`` file (the command line passes the service's own
    config loader, which this layer cannot import).
    """
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        base = load_judge(args.config) if load_judge is not None and args.config else {}
        config = _config(args, base)
    except ConfigError as exc:
        print(f"spanscore judge check: {exc}", file=sys.stderr)
        return 2
    report = asyncio.run(check_judge(config, args.scorer))
    print_report(report, config.model, sys.stdout, verbose=args.verbose)
    if all(agreement.errors == agreement.cases for agreement in report.values()):
        print("spanscore judge check: no case could be scored; is the judge reachable?", file=sys.stderr)
        return 3
    return 0
