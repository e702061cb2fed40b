"""``report compare`` / ``POST /api/v1/compare`` over stored scores (#41): the store adds up the sums, the
figures equal the same comparison made from the rows in memory, and a version can be a score column, an
attribute kept with the scores, or any attribute of the run's root span (read from the spans).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from spanscore.alerting.comparison import VERDICTS, Observation, Settings, Sums, compare
from spanscore.alerting.version_report import CompareRequest, as_document, compare_store
from spanscore.errors import ConfigError
from spanscore.records import SpanRecord
from spanscore.server.auth import TokenCheck
from spanscore.server.compare_api import CompareApi
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.compare import version_sums
from spanscore.storage.reads.compare_details import version_details
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import ScoreRow, score_id
from tests.ports import free_port

HOUR_NS = 3600 * 10**9
VERSIONS = {"1.4.0": (0.6, 1.0, "gpt-4o"), "1.5.0": (0.75, 0.25, "gpt-4.1")}
"""version -> (true pass rate, sampling rate, model)."""


def _rows() -> tuple[list[ScoreRow], list[SpanRecord]]:
    rng = random.Random(4)
    rows, spans = [], []
    for index in range(900):
        version = "1.4.0" if index % 3 else "1.5.0"
        rate_true, sample_rate, model = VERSIONS[version]
        trace_id = f"{index:032x}"
        for scorer, value in (("correct", float(rng.random() < rate_true)), ("tone", rng.random())):
            rows.append(ScoreRow(
                score_id=score_id("r", scorer, "1", trace_id, "s" * 16),
                run_timestamp_ns=time.time_ns() - (index % 5 + 1) * HOUR_NS,
                trace_id=trace_id, span_id="s" * 16, run_id="s" * 16, service_name="svc", agent_name="a", model=model,
                session_id="", user_id="", rule="r", scorer=scorer, scorer_version="1", score=value, label="",
                reason="", status="ok", error="", sample_rate=sample_rate, higher_is_better=True, judge_model="j",
                input_tokens=0, output_tokens=0, cost_usd=0.0, duration_ms=1.0, ready_reason="quiet_period",
                run_duration_ms=100.0 + index, run_error="",
                attributes={"version.service.version": version, "run.input_tokens": "20", "run.output_tokens": "5"},
            ))  # fmt: skip
        spans.append(SpanRecord(
            trace_id=trace_id, span_id="s" * 16, parent_span_id="", name="agent", kind="Internal",
            start_time_ns=time.time_ns() - HOUR_NS, end_time_ns=time.time_ns() - HOUR_NS + 10**8,
            service_name="svc", attributes={"feature.flag": "new" if version == "1.5.0" else "old"},
        ))  # fmt: skip
    return rows, spans


def _expected(rows: list[ScoreRow], key: object) -> dict[str, object]:
    groups: dict[str, dict[str, list[Observation]]] = {}
    for row in rows:
        version = key(row)  # type: ignore[operator]
        groups.setdefault(row.scorer, {}).setdefault(version, []).append(Observation(row.score or 0.0, row.sample_rate))
    baseline = sorted({v for g in groups.values() for v in g})[0]
    settings = Settings(baseline)
    sums = {s: {v: Sums.of(o) for v, o in g.items()} for s, g in groups.items()}
    return as_document("x", settings, compare(sums, settings))


def _same_figures(found: dict[str, object], expected: dict[str, object]) -> None:
    for got, want in zip(found["scorers"], expected["scorers"], strict=True):  # type: ignore[call-overload]
        assert got["scorer"] == want["scorer"]
        for g, w in zip(got["versions"], want["versions"], strict=True):
            assert (g["version"], g["n"], g["verdict"], g["n_needed"]) == (
                w["version"],
                w["n"],
                w["verdict"],
                w["n_needed"],
            )
            for name in ("n_eff", "mean", "ci_low", "ci_high", "diff", "diff_low", "diff_high"):
                assert g[name] == (None if w[name] is None else pytest.approx(w[name], rel=1e-6, abs=1e-9)), name


@pytest.mark.parametrize(
    ("by", "baseline", "key"),
    [
        ("service.version", "1.4.0", lambda r: r.attributes["version.service.version"]),
        ("gen_ai.request.model", "gpt-4.1", lambda r: r.model),
        ("feature.flag", "new", lambda r: "new" if r.attributes["version.service.version"] == "1.5.0" else "old"),
    ],
)
async def test_stored_comparison_equals_the_in_memory_one(
    store: ClickHouseStore, by: str, baseline: str, key: object
) -> None:
    rows, spans = _rows()
    store.insert_scores_sync(rows)
    store.insert_spans_sync(spans)
    found = await compare_store(store, CompareRequest(by, baseline, "1d"))
    _same_figures(found, _expected(rows, key))
    new = found["scorers"][0]["versions"][1]
    assert new["latency_p50_ms"] > 100 and new["input_tokens_per_run"] == 20.0


async def test_an_unknown_baseline_or_attribute_is_a_clear_error(store: ClickHouseStore) -> None:
    rows, _ = _rows()
    store.insert_scores_sync(rows)
    with pytest.raises(ConfigError, match="'1.3.0' has no scores.*1.4.0, 1.5.0"):
        await compare_store(store, CompareRequest("service.version", "1.3.0", "1d"))
    with pytest.raises(ConfigError, match="no scores with a 'nothing.here'"):
        await compare_store(store, CompareRequest("nothing.here", "1", "1d"))
    with pytest.raises(ConfigError, match="by must be an attribute name"):
        await compare_store(store, CompareRequest("x' OR 1=1", "1", "1d"))


async def test_post_compare_answers_the_document_and_names_bad_fields(store: ClickHouseStore) -> None:
    rows, _ = _rows()
    store.insert_scores_sync(rows)
    app = web.Application()
    CompareApi(store, TokenCheck(())).add_routes(app)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        answer = await client.post(
            "/api/v1/compare", json={"by": "service.version", "baseline": "1.4.0", "since": "1d"}
        )
        assert answer.status == 200
        document = await answer.json()
        assert [v["version"] for v in document["scorers"][0]["versions"]] == ["1.4.0", "1.5.0"]
        bad = await client.post("/api/v1/compare", json={"baseline": "", "confidence": 2, "since": "forever", "x": 1})
        assert bad.status == 400
        text = await bad.text()
        for problem in ("unknown field 'x'", "baseline must name", "confidence must be", "since"):
            assert problem in text


SEED = """
from spanscore.config import load_config
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.compare import version_sums
from spanscore.storage.reads.compare_details import version_details
from tests.unit.storage.test_compare_store import _rows

store = ClickHouseStore.from_config(load_config(None).storage)
store.open()
store.insert_scores_sync(_rows()[0])
store.close()
"""


def test_report_compare_reads_the_store_when_no_service_answers(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(repo), "SPANSCORE_API__PORT": str(free_port())}
    seeded = subprocess.run([sys.executable, "-c", SEED], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300, check=False)  # fmt: skip
    assert seeded.returncode == 0, seeded.stderr
    argv = ["report", "compare", "--by", "service.version", "--baseline", "1.4.0", "--since", "24h"]
    done = subprocess.run([sys.executable, "-m", "spanscore.cli", *argv, "--format", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["by"] == "service.version" and [s["scorer"] for s in document["scorers"]] == ["correct", "tone"]
    assert {v["verdict"] for s in document["scorers"] for v in s["versions"][1:]} <= set(VERDICTS)
    table = subprocess.run([sys.executable, "-m", "spanscore.cli", *argv], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert table.returncode == 0 and "latency_p50_ms" in table.stdout and "1.5.0" in table.stdout


@pytest.mark.parametrize("by", ["service.version", "gen_ai.request.model", "rule"])
async def test_the_rollup_adds_up_the_same_sums_as_the_scores(store: ClickHouseStore, by: str) -> None:
    """The roll-up path (a kept attribute, a score column) gives the raw path's figures on the same scores."""
    rows, _ = _rows()
    rows[0] = dataclasses.replace(rows[0], status="error", score=None)  # not ok: counted by neither
    store.insert_scores_sync(rows[:1000])
    store.insert_scores_sync(rows[1000:])  # two inserts: two roll-up parts that merge
    rolled = await version_sums(store, by, 86400)
    raw = await version_sums(store, by, 86400, rollup=False)
    assert [(r.scorer, r.version, r.n) for r in rolled] == [(r.scorer, r.version, r.n) for r in raw]
    assert sum(r.n for r in raw) == len(rows) - 1
    for got, want in zip(rolled, raw, strict=True):
        for name in ("w", "w2", "wy", "w2y", "w2y2", "w4", "low", "high", "latency_p50_ms", "latency_p95_ms"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-9), name
        assert (got.binary, got.input_tokens, got.output_tokens) == (want.binary, want.input_tokens, want.output_tokens)


async def test_a_configured_attribute_is_answered_from_the_rollup(store: ClickHouseStore) -> None:
    """With the raw scores gone (deleted here to tell the paths apart) the kept attribute still compares from the
    roll-up, and an ad-hoc attribute, which the roll-up cannot hold, reads the raw scores and finds none."""
    rows, spans = _rows()
    store.insert_scores_sync(rows)
    store.insert_spans_sync(spans)
    expected = _expected(rows, lambda r: r.attributes["version.service.version"])
    store.internal_query("TRUNCATE TABLE scores")
    found = await compare_store(store, CompareRequest("service.version", "1.4.0", "1d"))
    _same_figures(found, expected)
    with pytest.raises(ConfigError, match="no scores with a 'feature.flag'"):
        await compare_store(store, CompareRequest("feature.flag", "new", "1d"))


@pytest.mark.parametrize("by", ["service.version", "gen_ai.request.model"])
async def test_the_page_gets_hourly_means_and_each_versions_worst_runs(store: ClickHouseStore, by: str) -> None:
    """The chart's points equal the weighted means of the scores per hour, by the roll-up and by the scores; the
    worst runs are each version's lowest scores."""
    rows, _ = _rows()
    store.insert_scores_sync(rows)
    found = await version_details(store, by, 86400)
    key = (lambda r: r.attributes["version.service.version"]) if by == "service.version" else (lambda r: r.model)
    sums: dict[tuple[str, str, int], list[float]] = {}
    for r in rows:
        hour_ms = r.run_timestamp_ns // HOUR_NS * 3600 * 1000
        point = sums.setdefault((r.scorer, key(r), hour_ms), [0.0, 0.0, 0])
        point[0] += (r.score or 0.0) / r.sample_rate
        point[1] += 1 / r.sample_rate
        point[2] += 1
    assert {(p["scorer"], p["version"], p["hour_ms"]) for p in found["series"]} == set(sums)
    for p in found["series"]:
        wy, w, n = sums[(p["scorer"], p["version"], p["hour_ms"])]
        assert (p["mean"], p["n"]) == (pytest.approx(wy / w), n)
    store.internal_query("TRUNCATE TABLE scores_versions_1h")  # the raw path gives the same points
    raw = (await version_details(store, by, 86400))["series"]
    assert [(p["scorer"], p["version"], p["hour_ms"], p["n"]) for p in raw] == [
        (p["scorer"], p["version"], p["hour_ms"], p["n"]) for p in found["series"]
    ]
    assert [p["mean"] for p in raw] == pytest.approx([p["mean"] for p in found["series"]])
    for scorer, version in {(p["scorer"], p["version"]) for p in found["series"]}:
        lowest = sorted((r.score or 0.0) for r in rows if r.scorer == scorer and key(r) == version)[:5]
        worst = [w["score"] for w in found["worst"] if (w["scorer"], w["version"]) == (scorer, version)]
        assert worst == lowest


async def test_runs_of_two_versions_on_the_same_input_are_paired(store: ClickHouseStore) -> None:
    """Inputs that runs of at least two versions had are listed with those runs; an input one version alone
    had, or that repeats within one version, is not."""
    rows, _ = _rows()
    store.insert_scores_sync(rows)
    versions = {r.trace_id: r.attributes["version.service.version"] for r in rows}
    traces = sorted(versions)
    inputs = {traces[0]: "refund please", traces[1]: "refund please", traces[2]: "hello", traces[4]: "hello",
              traces[3]: "only new", traces[5]: "x"}  # fmt: skip
    assert (versions[traces[0]], versions[traces[1]]) == ("1.5.0", "1.4.0") and versions[traces[4]] == "1.4.0"
    store.insert_scored_runs_sync([
        ScoredRunRow(time.time_ns() - HOUR_NS, trace, trace[:16], "s" * 16, "svc", "a",
                     json.dumps({"input": [{"role": "user", "content": text}]}))
        for trace, text in inputs.items()
    ])  # fmt: skip
    found = (await version_details(store, "service.version", 86400))["same_input"]
    assert [(i["input"][:60], i["runs"]) for i in found] == [
        ('[{"role":"user","content":"refund please"}]', [
            {"version": "1.4.0", "trace_id": traces[1]}, {"version": "1.5.0", "trace_id": traces[0]}]),
    ]  # fmt: skip
