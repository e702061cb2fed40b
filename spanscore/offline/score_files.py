"""``spanscore score``: score runs from a file, for CI (like Mastra's ``runEvals``, without an agent).

Reads runs as JSON lines (``{"id", "input", "output", "context", "ground_truth",
"tool_calls", "system"}``) or an OTLP/JSON trace export (one request, or one
request per line as the collector's file exporter writes), scores each run with
every ``--scorer``, prints one JSON line per run and scorer on stdout and a
summary on stderr.

Exit status: 0 when every threshold holds, 1 when a ``--min``/``--max``
threshold fails (on a scorer's mean over the runs it scored), 2 for bad usage
or invalid input, with a message naming the line and field, and 3 when the
evidence is missing: a scorer scored no run at all, or a scorer errored on
some run (judge down, judge answers that never matched the question). A CI
job must not pass on no evidence; ``--allow-errors`` accepts errors and
unscored scorers (the summary still says why). Runs that a scorer cannot
score (missing input, not applicable, error) are counted in the summary and
never enter the mean.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from spanscore.errors import ConfigError, SpanscoreError
from spanscore.run import Run
from spanscore.scorers.base import Scorer, ScoreResult, Status
from spanscore.scorers.registry import build

if TYPE_CHECKING:  # the judge client loads litellm (seconds): only once a judge is wanted, never for --help
    from spanscore.scorers.judge.current import Judge

RUN_FIELDS = {
    "id": (str, int),
    "input": (str, list, dict),
    "output": (str, list, dict),
    "context": (list,),
    "ground_truth": (str,),
    "tool_calls": (list,),
    "system": (str, list),
}


class InputError(SpanscoreError):
    """The runs file cannot be read as runs; the message names the line and field."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spanscore score",
        description="Score runs offline from JSONL or an OTLP/JSON trace export; one JSON line per run and scorer.",
    )
    parser.add_argument("--scorer", action="append", required=True, metavar="NAME", help="scorer id or module:attr")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='scorer option; VALUE is JSON when it parses (true, 0.5, ["a"]) else text; prefix SCORER. to target one',
    )
    parser.add_argument("--min", action="append", default=[], metavar="NAME=THRESHOLD", help="fail if mean < THRESHOLD")
    parser.add_argument("--max", action="append", default=[], metavar="NAME=THRESHOLD", help="fail if mean > THRESHOLD")
    parser.add_argument("--judge-model", metavar="MODEL", help="litellm model string for LLM scorers' judge")
    parser.add_argument("--judge-api-base", metavar="URL", help="base URL of an OpenAI-compatible judge server")
    parser.add_argument("--judge-api-key-env", metavar="VAR", help="environment variable holding the judge's API key")
    parser.add_argument(
        "--allow-errors",
        action="store_true",
        help="exit 0 even when a scorer errored on a run or scored no run (default: exit 3)",
    )
    parser.add_argument("file", metavar="FILE", help="runs file (JSONL or OTLP/JSON); '-' reads stdin")
    return parser


def _configure_judge(args: argparse.Namespace) -> Judge:
    """The judge LLM scorers are built with: the default one, with the --judge-* flags applied."""
    from spanscore.scorers.judge.current import current_judge

    flags = {"model": args.judge_model, "api_base": args.judge_api_base, "api_key_env": args.judge_api_key_env}
    overrides = {key: value for key, value in flags.items() if value is not None}
    judge = current_judge()
    if not overrides:
        return judge
    from pydantic import ValidationError

    try:
        return judge.with_overrides(overrides)
    except ValidationError as exc:
        raise ConfigError(f"--judge-*: {exc.errors()[0]['msg']}") from None


def _check_judges(args: argparse.Namespace, names: list[str], options: dict[str, dict[str, Any]]) -> None:
    """Unknown scorers and LLM scorers without a judge the user named fail before anything is scored."""
    import os

    from spanscore.scorers.preflight import ScorerUse, check_scorers

    flags = {"model": args.judge_model, "api_base": args.judge_api_base, "api_key_env": args.judge_api_key_env}
    judge = {key: value for key, value in flags.items() if value is not None}
    uses = [ScorerUse(f"--scorer {name}", name, options[name]) for name in names]
    check_scorers(uses, judge, os.environ, source="arguments")


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _split_pair(text: str, flag: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"{flag} {text!r} must look like KEY=VALUE")
    return key.strip(), value


def _options_for(names: list[str], pairs: list[str]) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {name: {} for name in names}
    for pair in pairs:
        key, value = _split_pair(pair, "--option")
        target, dot, option = key.rpartition(".")
        if dot and target in options:
            options[target][option] = _parse_value(value)
        else:
            for name in names:
                options[name][key] = _parse_value(value)
    return options


def _thresholds(pairs: list[str], flag: str, names: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        name, value = _split_pair(pair, flag)
        if name not in names:
            raise ConfigError(f"{flag} {pair!r}: {name!r} is not one of the --scorer names {names}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ConfigError(f"{flag} {pair!r}: threshold must be a number") from None
    return out


def _check_record(record: Any, line: int) -> None:
    if not isinstance(record, dict):
        raise InputError(f"line {line}: expected a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(RUN_FIELDS))
    if unknown:  # a misspelt key ("inpt") would otherwise become a silent missing_input
        names = ", ".join(map(repr, unknown))
        raise InputError(f"line {line}: unknown field(s) {names}; a run has {', '.join(RUN_FIELDS)}")
    for name, types in RUN_FIELDS.items():
        value = record.get(name)
        if value is not None and not isinstance(value, types):
            kinds = " or ".join("text" if t is str else t.__name__ for t in types)
            raise InputError(f"line {line}: field {name!r} must be {kinds}, got {type(value).__name__}")
    for index, item in enumerate(record.get("context") or ()):
        if not isinstance(item, str):
            raise InputError(f"line {line}: field 'context[{index}]' must be text, got {type(item).__name__}")


def run_from_record(record: dict[str, Any], line: int) -> Run:
    """Validate one JSONL record and build its ``Run``; ``InputError`` names the line and field."""
    _check_record(record, line)
    try:
        return Run(
            input=record.get("input"),
            output=record.get("output"),
            context=record.get("context"),
            ground_truth=record.get("ground_truth"),
            tool_calls=record.get("tool_calls"),
            system=record.get("system"),
            run_id=str(record.get("id", line)),
        )
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(f"line {line}: {exc}") from None


def _is_otlp(value: Any) -> bool:
    return isinstance(value, dict) and "resourceSpans" in value


def _runs_from_otlp(requests: list[tuple[int, Any]]) -> list[Run]:
    try:
        from spanscore.runs.assembly import runs_from_spans
    except ImportError:
        raise InputError("OTLP input needs the normalizer (spanscore.runs.assembly), which is not installed") from None
    from spanscore.collector.decode import parse_traces, spans_from_request

    spans = []
    for line, request in requests:
        try:
            decoded = spans_from_request(parse_traces(json.dumps(request).encode(), json_body=True))
        except SpanscoreError as exc:
            raise InputError(f"line {line}: {exc}") from None
        if decoded.rejected:
            raise InputError(f"line {line}: {decoded.rejected} span(s) rejected: {decoded.error_message}")
        spans.extend(decoded.items)
    return runs_from_spans(spans)


def read_runs(text: str) -> list[Run]:
    """Runs from JSONL text or an OTLP/JSON export (whole document or one request per line)."""
    stripped = text.strip()
    if not stripped:
        raise InputError("the input has no runs")
    try:
        whole = json.loads(stripped)
    except ValueError:
        whole = None
    if _is_otlp(whole):
        return _runs_from_otlp([(1, whole)])
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except ValueError as exc:
            raise InputError(f"line {number}: not valid JSON ({exc.args[0] if exc.args else exc})") from None
    if records and all(_is_otlp(r) for _, r in records):
        return _runs_from_otlp(records)
    return [run_from_record(record, number) for number, record in records]


@dataclass(slots=True)
class _Summary:
    scores: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    def add(self, result: ScoreResult) -> None:
        self.statuses[result.status.value] = self.statuses.get(result.status.value, 0) + 1
        if result.status is Status.OK and result.score is not None:
            self.scores.append(result.score)

    @property
    def mean(self) -> float | None:
        return sum(self.scores) / len(self.scores) if self.scores else None


def _score_all(runs: list[Run], scorers: dict[str, Scorer], out: TextIO) -> dict[str, _Summary]:
    summaries = {name: _Summary() for name in scorers}
    for run in runs:
        for name, scorer in scorers.items():
            result = scorer.run(run)
            summaries[name].add(result)
            line = {"id": run.run_id, "scorer": name, "score": result.score, "status": result.status.value}
            line["reason"] = result.reason if result.status is not Status.ERROR else result.error
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return summaries


def _report(
    summaries: dict[str, _Summary], minimums: dict[str, float], maximums: dict[str, float], err: TextIO
) -> bool:
    passed = True
    for name, summary in summaries.items():
        mean = summary.mean
        verdicts = []
        for bound, limit in (("min", minimums.get(name)), ("max", maximums.get(name))):
            if limit is None:
                continue
            ok = mean is not None and (mean >= limit if bound == "min" else mean <= limit)
            passed = passed and ok
            verdicts.append(f"{bound} {limit:g} {'pass' if ok else 'FAIL'}")
        counts = " ".join(f"{k}={v}" for k, v in sorted(summary.statuses.items()))
        shown = "n/a" if mean is None else f"{mean:.4f}"
        err.write(f"{name}: mean={shown} scored={len(summary.scores)} {counts} {' '.join(verdicts)}".rstrip() + "\n")
    return passed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``score`` command; returns the exit status (0 ok, 1 threshold failed, 2 invalid, 3 no evidence)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    names: list[str] = args.scorer
    try:
        judge = _configure_judge(args)
        options = _options_for(names, args.option)
        _check_judges(args, names, options)
        from spanscore.scorers.judge.current import using_judge

        with using_judge(judge):
            scorers = {name: build(name, **options[name]) for name in names}
        minimums = _thresholds(args.min, "--min", names)
        maximums = _thresholds(args.max, "--max", names)
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read()
        runs = read_runs(text)
    except (ConfigError, InputError) as exc:
        print(f"spanscore score: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"spanscore score: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    summaries = _score_all(runs, scorers, sys.stdout)
    sys.stdout.flush()
    if not _report(summaries, minimums, maximums, sys.stderr):
        return 1
    problems = missing_evidence(summaries)
    for problem in problems:
        print(f"spanscore score: {problem}", file=sys.stderr)
    if problems and not args.allow_errors:
        print("spanscore score: failing for lack of evidence (pass --allow-errors to accept this)", file=sys.stderr)
        return 3
    return 0


def missing_evidence(summaries: dict[str, _Summary]) -> list[str]:
    """Why the scores do not stand as evidence: scorers that scored nothing, or errored on some run."""
    problems = []
    for name, summary in summaries.items():
        errors = summary.statuses.get(Status.ERROR.value, 0)
        if errors:
            problems.append(f"{name}: {errors} run(s) ended in error (see the 'reason' of their lines)")
        if not summary.scores:
            counts = ", ".join(f"{k}={v}" for k, v in sorted(summary.statuses.items())) or "no runs"
            problems.append(f"{name}: no run was scored ({counts})")
    return problems


if __name__ == "__main__":
    sys.exit(main())
