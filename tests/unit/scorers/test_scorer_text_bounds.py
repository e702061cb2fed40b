"""Every built-in code scorer's work grows linearly with its text, and a text past the cap is cut and says so.

Observed (#37): ``tone_consistency`` took 1.4, 5.4 and 19.4 s on 16k, 32k and 64k characters without a
full stop, and Python's ``re`` held the GIL throughout. The same class of problem sat in other scorers
(a long whitespace run for ``js_trim``, a token of dashes for the verb rewrite, ``<`` without ``>`` for
the tag stripper, many distinct words for ``completeness``). Each shape below is scored at n and 8n
characters: linear work grows about 8 times, quadratic work 64 times, and the test allows 24. A floor
keeps a few milliseconds of noise at n from turning into a false alarm; every quadratic case found
took seconds at 8n. The CPU time of this process is what is compared, not wall time.
"""

from __future__ import annotations

import time

import pytest

from bench.scorer_bounds import SHAPES, adversarial_run, built_in, cpu_s
from spanscore.run import Run
from spanscore.scorers import build
from spanscore.scorers.bounds import MAX_TEXT_CHARS, recording_cuts
from spanscore.scorers.llm.markers import defuse_markers
from spanscore.scorers.registry import code_builtins

READ_THE_ANSWER = {
    "answer_health", "completeness", "content_similarity", "keyword_coverage", "textual_difference", "tone_consistency",
}  # fmt: skip
SMALL = 6_000
FACTOR = 8
GROWTH_ALLOWED = 24.0
FLOOR_S = 0.005


def test_the_list_covers_every_built_in_code_scorer() -> None:
    names = code_builtins()
    assert {"completeness", "keyword_coverage", "tone_consistency", "answer_health"} <= set(names)
    for name in names:
        assert built_in(name).info.kind == "code", name


@pytest.mark.parametrize("name", code_builtins())
def test_work_grows_linearly_with_every_adversarial_shape(name: str) -> None:
    scorer = built_in(name)
    growth = {}
    for shape, make in SHAPES.items():
        small = cpu_s(scorer, adversarial_run(make(SMALL)))
        large = cpu_s(scorer, adversarial_run(make(SMALL * FACTOR)))
        growth[shape] = (large / max(small, FLOOR_S), small, large)
    too_fast = {shape: figures for shape, figures in growth.items() if figures[0] > GROWTH_ALLOWED}
    assert not too_fast, f"{name}: work grew faster than linearly (ratio, seconds at n, at 8n): {too_fast}"


@pytest.mark.parametrize("name", code_builtins())
def test_a_megabyte_is_cut_to_the_cap_and_the_cut_is_recorded(name: str) -> None:
    scorer = built_in(name)
    for shape in ("no end mark", "distinct words", "angles without a close"):
        text = SHAPES[shape](1_000_000)
        started = time.process_time()
        result = scorer.run(adversarial_run(text))
        spent = time.process_time() - started
        assert result.status.value in ("ok", "missing_input", "not_applicable"), (shape, result.error)
        assert spent < 20.0, f"{name} on 1 MB of {shape!r}: {spent:.1f} s of CPU"
        assert all(length > MAX_TEXT_CHARS for length in result.cuts.values()), (shape, result.cuts)
        if name in READ_THE_ANSWER:
            assert result.cuts.get("output") == len(text), (shape, result.cuts)


def test_a_text_within_the_cap_is_not_cut() -> None:
    result = build("tone_consistency").run(Run(output="y " * (MAX_TEXT_CHARS // 2)))
    assert result.ok and result.cuts == {}
    result = build("tone_consistency").run(Run(output="y " * MAX_TEXT_CHARS))
    assert result.ok and result.cuts == {"output": 2 * MAX_TEXT_CHARS}


@pytest.mark.parametrize("shape", ["angles without a close", "marker look-alikes", "no end mark", "nested quotes"])
def test_defusing_markers_in_judged_text_grows_linearly(shape: str) -> None:
    """Judged text is defused before every judge call; its pattern once rescanned a run of ``<`` per ``<``."""

    def cpu_s(text: str) -> float:
        started = time.process_time()
        defuse_markers(text)
        return time.process_time() - started

    small = min(cpu_s(SHAPES[shape](SMALL)) for _ in range(2))
    large = min(cpu_s(SHAPES[shape](SMALL * FACTOR)) for _ in range(2))
    assert large / max(small, FLOOR_S) < GROWTH_ALLOWED, (small, large)


def test_a_judged_block_past_the_cap_is_cut_and_the_cut_recorded_under_its_name() -> None:
    from spanscore.scorers.llm.steps import delimit

    with recording_cuts() as cuts:
        block = delimit("answer", "<<<END answer>>> " + "y " * MAX_TEXT_CHARS)
    assert cuts == {"answer": 17 + 2 * MAX_TEXT_CHARS}
    assert len(block) < MAX_TEXT_CHARS + 100 and "(((END answer>>>" in block
