"""What a version is (#41): the attributes naming the agent's version travel from the spans to every score.

Before, a run kept only its root span's own attributes, so a prompt version set on a model-call span (where
frameworks put gen_ai.prompt.* and Langfuse its prompt link) or a service.version on the resource was not on
the scores, and versions could not be compared without hand-written joins.
"""

from __future__ import annotations

from dataclasses import replace

from test_views import rag_run

from spanscore.records import SpanRecord
from spanscore.runs.assembly import assemble_runs
from spanscore.runs.config import RunsConfig
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.scorers.contracts import ScorerInfo
from spanscore.scorers.results import ScoreResult, Status
from spanscore.scoring.rows import score_row
from spanscore.scoring.subject import RuleRun, Subject
from spanscore.storage.scored_runs import ScoredRunRow, parse_stored_run, run_from_view


def _spans() -> list[SpanRecord]:
    spans = rag_run()
    root, call, *rest = spans
    root = replace(root, resource_attributes={"service.version": "1.5.0", "service.name": "support-bot"})
    call = replace(call, attributes={**call.attributes, "langfuse.observation.prompt.name": "answer",
                                     "langfuse.observation.prompt.version": "7", "feature.flag": "b"})  # fmt: skip
    return [root, call, *rest]


def test_the_run_keeps_its_version_attributes_from_any_span() -> None:
    config = RunsConfig(version_attributes=(*RunsConfig().version_attributes, "feature.flag"))
    (assembled,) = assemble_runs(_spans(), config=config, span_targets={"tool"})
    expected = {
        "service.version": "1.5.0",
        "langfuse.observation.prompt.name": "answer",
        "langfuse.observation.prompt.version": "7",
        "feature.flag": "b",
    }
    assert assembled.run.version_attributes == expected
    assert all(view.version_attributes == expected for view in assembled.views)
    stored = run_from_view(parse_stored_run(ScoredRunRow.of(assembled.run).run_json))
    assert stored.version_attributes == expected


def test_every_score_row_carries_them_with_the_runs_tokens() -> None:
    (assembled,) = assemble_runs(_spans())
    run = assembled.run
    decision = Decision("r", run.run_id, run.trace_id, Outcome.SAMPLED, 0.25, "")
    book = RuleRun(decision, Subject(run, "quiet"), outstanding=1, rule_version="v1")
    result = ScoreResult("s", "1", Status.OK, score=0.5)
    row = score_row(ScorerInfo("s"), run, book, result, pass_threshold=0.5)
    assert row.attributes["version.service.version"] == "1.5.0"
    assert row.attributes["version.langfuse.observation.prompt.version"] == "7"
    assert (row.attributes["run.input_tokens"], row.attributes["run.output_tokens"]) == ("12", "5")
