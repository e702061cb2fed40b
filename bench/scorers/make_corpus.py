"""Build the golden corpus: runs and (scorer, options) cases, deterministic from a fixed seed.

Writes tests/fixtures/golden/corpus.jsonl (runs in the ``spanscore score`` JSONL
format) and tests/fixtures/golden/cases.jsonl (which scorer with which options
scores which run). ``reference.mjs`` then runs @mastra/evals on every case and
writes reference.jsonl. All texts are written for this corpus.

Usage: python bench/scorers/make_corpus.py [--held-out | --fresh]

``--held-out`` writes a second corpus to tests/fixtures/golden/held_out from a
sentence pool that was not used while tuning the scorers, to check that the
agreement figures are not an artefact of the main corpus. It was later used to
refine the completeness rules, so ``--fresh`` writes tests/fixtures/golden/fresh
from a third pool written after the rules were final: the honest estimate.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "golden"

SENTENCES = [
    "The service was excellent and the staff were friendly.",
    "I am very disappointed with the slow delivery.",
    "Please reset my password and send a confirmation email.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "The capital of France is Paris.",
    "Recursion is when a function calls itself on a smaller problem.",
    "Our quarterly revenue grew by 12% compared with last year.",
    "The weather in London will be rainy with a high of 14 degrees.",
    "She explained the results clearly, but the charts were confusing.",
    "Install the package, then run the tests before you commit.",
    "The database migration failed because the disk was full.",
    "We love the new dashboard; it is fast and beautiful!",
    "This is terrible, the app crashed three times today.",
    "Machine learning models require data preprocessing and feature engineering.",
    "JavaScript frameworks like React and Vue make interfaces easier to build.",
    "TypeScript offers interfaces, generics, and type inference.",
    "The committee will meet on Tuesday to discuss the budget.",
    "He went to the store yesterday and bought apples, bread and milk.",
    "Don't worry, the refund has been processed successfully.",
    "Can you summarise the meeting notes for the marketing team?",
    "The patient reported mild pain after the surgery.",
    "Cats sleep for most of the day and hunt at night.",
    "The train was delayed by forty minutes, which was annoying.",
    "Our support team is happy to help with any questions.",
    "Running the benchmark twice gives more stable numbers.",
    "The kids were playing happily in the park.",
    "I hate waiting in long queues at the airport.",
    "The new policy improves safety but increases costs.",
    "Write a function that sorts a list of integers.",
    "The museum opens at nine and closes at five.",
    "Thanks so much, that was really helpful!",
    "The report is wrong and the numbers do not add up.",
    "Climate change affects agriculture, health and migration.",
    "We are investigating the outage and will update you soon.",
    "The best way to learn a language is to speak it every day.",
    "Unfortunately, your order was cancelled due to a payment error.",
    "The algorithm has a time complexity of O(n log n).",
    "Green tea contains antioxidants and a little caffeine.",
    "The user clicked the button, but nothing happened.",
    "Great job on the launch, everyone worked incredibly hard.",
]

SPECIAL_TEXTS = [
    "",
    " ",
    "a",
    "OK",
    "Yes.",
    "No!",
    "42",
    "3.14159",
    "2024-06-01 12:30:00",
    "Order #12345 costs $99.99 (incl. 20% VAT).",
    "!!!???...,,,;;;",
    "Wait... what?! Really?!?!",
    "\"Quoted\" words, 'single quotes' and (parentheses) [brackets] {braces}.",
    "Hello World",
    "hello   world",
    "HELLO\tWORLD\n",
    "Café naïve résumé über façade",
    "Ünïcödé ǅ ß ŉ İstanbul",
    "日本語のテキストです。東京は大きい。",
    "Привет, как дела? Всё хорошо.",
    "مرحبا بالعالم",
    "I love it 😀 👍 great",
    "This is awful 😡 😢 sad",
    "emoji only 🎉🎉🎉",
    "def add(a, b):\n    return a + b\n",
    "SELECT name, count(*) FROM users WHERE age > 30 GROUP BY name;",
    "const x = { key: 'value', list: [1, 2, 3] }; console.log(x);",
    "curl -X POST https://example.test/api/v1/items -d '{\"a\": 1}'",
    "quickBrownFox camelCaseWords snake_case_words kebab-case-words",
    "React.js, Node.js and Vue.js are JavaScript tools.",
    "e-mail, re-run, co-operate, state-of-the-art",
    "It's, don't, can't, won't, isn't, we're, they've",
    "<p>Some <b>HTML</b> markup</p>",
    "line one\nline two\nline three",
    "tabs\tand\tspaces   mixed \u00a0 nbsp",
    "1 2 3 4 5 6 7 8 9 10",
    "v1.2.3 and v2.0.0-beta.1 released",
    "not good, not bad, not happy",
    "I can't say I love it, but it isn't terrible.",
]

# A second pool, never looked at while writing the completeness rules: the held-out corpus uses only these.
HELD_OUT_SENTENCES = [
    "The engineers deployed a fix after the alarms went off at midnight.",
    "Our hotel room was spotless and the view was stunning.",
    "The invoice lists three items that we never ordered.",
    "Students who practise daily usually remember more vocabulary.",
    "The river flooded the village twice during the winter.",
    "I would like to change my flight to an earlier departure.",
    "Nobody answered the phone, so I sent an email instead.",
    "The recipe needs two eggs, a cup of flour and some sugar.",
    "Her presentation impressed the investors and secured the funding.",
    "The printer keeps jamming whenever someone prints double-sided pages.",
    "Volcanoes release gases that can change the climate for years.",
    "The library extended its opening hours for the exam period.",
    "We were told the package had been delivered, but it never arrived.",
    "Mix the paint slowly so that bubbles do not form.",
    "The striker scored twice and the crowd cheered loudly.",
    "This update breaks the login page on older browsers.",
    "The garden looks lovely now that the roses are blooming.",
    "He forgot his keys again and waited outside for an hour.",
    "The contract expires next month unless both parties renew it.",
    "Bees pollinate flowers while they collect nectar.",
    "I'm thrilled with the results; you've done amazing work!",
    "The server rejects requests that exceed the size limit.",
    "Rain is expected tomorrow, so bring an umbrella.",
    "The committee postponed the vote because members were missing.",
    "Sorting a large array quickly requires a good pivot strategy.",
    "The chef tasted the soup and added more salt.",
    "Our neighbours are building a fence between the gardens.",
    "The lecture covered entropy, enthalpy and free energy.",
    "They've cancelled the concert, which is really disappointing.",
    "Check the logs before you restart the service.",
]

# A third pool, written after the completeness rules were final and never used to change them.
FRESH_SENTENCES = [
    "The pilot announced that the plane would land twenty minutes early.",
    "My grandmother bakes bread every Sunday morning.",
    "The firewall blocked several suspicious connections overnight.",
    "We should have booked the tickets weeks ago.",
    "The kitten chased the ball under the sofa.",
    "Prices rose sharply after the factory closed.",
    "The translator struggled with the idioms in the novel.",
    "Please attach the signed form before Friday.",
    "The orchestra rehearsed the symphony until late evening.",
    "He isn't sure whether the bridge will reopen this year.",
    "Our team migrated the billing system to the cloud.",
    "The soup tastes bland, so I added pepper and lemon.",
    "Astronomers discovered a comet orbiting beyond Neptune.",
    "The shop refunds purchases within thirty days.",
    "The app kept freezing, which was incredibly frustrating.",
    "Doctors recommend drinking water regularly during hot weather.",
    "The tourists photographed the cathedral from the square.",
    "If the build fails, the pipeline notifies the owner.",
    "She's been learning Spanish since she moved to Madrid.",
    "The farmers harvested the wheat before the storm arrived.",
    "This laptop overheats when several videos play at once.",
    "The mayor promised new bike lanes across the city.",
    "Wolves travel long distances in search of food.",
    "The auditors found no errors in the accounts.",
    "You'll receive a tracking number once the parcel ships.",
    "The museum's new exhibit celebrates local artists.",
    "Nobody noticed that the clock had stopped.",
    "The startup hired ten engineers and opened an office in Berlin.",
    "Sorry for the delay; we're handling an unusual volume of requests.",
    "The glacier has retreated dramatically over the last century.",
]

LONG_WORDS = (
    "system data user request response model agent tool search weather report error value result process "
    "analysis feature performance network server client query index cache memory thread queue worker "
    "happy sad good bad great terrible excellent poor wonderful awful calm angry quickly slowly carefully"
).split()


def _long_text(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choice(SENTENCES) for _ in range(sentences))


def _word_soup(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(LONG_WORDS) for _ in range(words)) + "."


def _mutate(rng: random.Random, text: str) -> str:
    """A related text: drop, swap, re-case or re-space some words."""
    words = text.split(" ")
    kind = rng.randrange(6)
    if kind == 0 and len(words) > 3:
        del words[rng.randrange(len(words))]
    elif kind == 1 and len(words) > 3:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == 2:
        return text.upper() if rng.random() < 0.5 else text.lower()
    elif kind == 3:
        return "  ".join(words) + "\n"
    elif kind == 4:
        words.insert(rng.randrange(len(words) + 1), rng.choice(LONG_WORDS))
    else:
        return text.replace(".", "!").replace(",", "")
    return " ".join(words)


def _text_pairs(rng: random.Random, sentences: list[str]) -> list[tuple[Any, Any]]:
    pairs: list[tuple[Any, Any]] = []
    for a in SPECIAL_TEXTS:
        pairs.append((a, rng.choice(SPECIAL_TEXTS)))
        pairs.append((rng.choice(SENTENCES), a))
        pairs.append((a, a))
    for s in SENTENCES:
        pairs.append((s, _mutate(rng, s)))
        pairs.append((s, rng.choice(SENTENCES)))
        pairs.append((s, s))
    for _ in range(60):
        source = _long_text(rng, rng.randint(3, 12))
        pairs.append((source, _mutate(rng, source) if rng.random() < 0.5 else _long_text(rng, rng.randint(2, 10))))
    for _ in range(20):
        pairs.append((_word_soup(rng, rng.randint(5, 60)), _word_soup(rng, rng.randint(5, 60))))
    for _ in range(30):  # conversations: message lists on both sides
        turns = [{"role": "user", "content": rng.choice(SENTENCES)}]
        if rng.random() < 0.5:
            turns += [
                {"role": "assistant", "content": rng.choice(SENTENCES)},
                {"role": "user", "content": _mutate(rng, rng.choice(SENTENCES))},
            ]
        outs = [
            {"role": "assistant", "content": rng.choice(SENTENCES + SPECIAL_TEXTS)} for _ in range(rng.randint(1, 3))
        ]
        pairs.append((turns, outs))
    return pairs


TOOLS = ["weather-tool", "search-tool", "auth-tool", "fetch-tool", "log-tool", "calendar-tool", "email-tool"]


def _tool_runs(rng: random.Random) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Tool-call runs, each with the option sets to score it under."""
    runs: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    fixed = [
        (["weather-tool"], [{"expected_tool": "weather-tool"}]),
        (["search-tool", "weather-tool"], [{"expected_tool": "weather-tool", "strict_mode": True}]),
        (
            ["auth-tool", "fetch-tool"],
            [{"expected_tool": "auth-tool", "expected_tool_order": ["auth-tool", "fetch-tool"], "strict_mode": True}],
        ),
        (
            ["auth-tool", "log-tool", "fetch-tool"],
            [{"expected_tool": "auth-tool", "expected_tool_order": ["auth-tool", "fetch-tool"], "strict_mode": False}],
        ),
        (["search-tool"], [{"expected_tool": "weather-tool", "strict_mode": False}]),
        ([], [{"expected_tool": "weather-tool"}, {"expected_tool_order": ["auth-tool"]}]),
    ]
    for tools, options in fixed:
        runs.append(({"input": "What's the weather in London?", "output": "Done.", "tools": tools}, options))
    for _ in range(80):
        tools = [rng.choice(TOOLS) for _ in range(rng.randint(0, 5))]
        options: list[dict[str, Any]] = []
        for _ in range(3):
            opt: dict[str, Any] = {"expected_tool": rng.choice(TOOLS)}
            if rng.random() < 0.5:
                opt["strict_mode"] = rng.random() < 0.5
            if rng.random() < 0.5:
                pool = tools if tools and rng.random() < 0.7 else TOOLS
                opt["expected_tool_order"] = rng.sample(pool, k=min(len(pool), rng.randint(1, 3)))
                if rng.random() < 0.2:
                    del opt["expected_tool"]
            options.append(opt)
        runs.append(({"input": rng.choice(SENTENCES), "output": rng.choice(SENTENCES + [""]), "tools": tools}, options))
    return runs


def main() -> None:
    global SENTENCES
    held_out, fresh = "--held-out" in sys.argv, "--fresh" in sys.argv
    target = OUT / "held_out" if held_out else OUT / "fresh" if fresh else OUT
    if held_out:
        SENTENCES = HELD_OUT_SENTENCES
    elif fresh:
        SENTENCES = FRESH_SENTENCES
    rng = random.Random(20261122 if held_out else 20261123 if fresh else 20261121)
    target.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    cases: list[dict[str, Any]] = []
    for n, (inp, out) in enumerate(_text_pairs(rng, SENTENCES)):
        run_id = f"text-{n:04d}"
        runs.append({"id": run_id, "input": inp, "output": out})
        for scorer in ("completeness", "keyword_coverage", "textual_difference"):
            cases.append({"run": run_id, "scorer": scorer, "options": {}})
        cases.append({"run": run_id, "scorer": "content_similarity", "options": {}})
        ignore_case, ignore_ws = rng.random() < 0.5, rng.random() < 0.5
        cases.append(
            {
                "run": run_id,
                "scorer": "content_similarity",
                "options": {"ignore_case": ignore_case, "ignore_whitespace": ignore_ws},
            }
        )
        cases.append({"run": run_id, "scorer": "tone_consistency", "options": {}})
        if rng.random() < 0.3:
            tone = rng.choice(SENTENCES + SPECIAL_TEXTS[:5])
            cases.append({"run": run_id, "scorer": "tone_consistency", "options": {"reference_tone": tone}})
    for n, (spec, option_sets) in enumerate(_tool_runs(rng)):
        run_id = f"tools-{n:04d}"
        calls = [
            {"name": t, "arguments": {"q": i}, "result": "ok", "id": f"call-{i}"} for i, t in enumerate(spec["tools"])
        ]
        if n % 3 == 0 and calls:  # tool calls carried on the output messages instead of the run
            run = {
                "id": run_id,
                "input": spec["input"],
                "output": [
                    {"role": "assistant", "content": "", "tool_calls": calls},
                    {"role": "assistant", "content": spec["output"]},
                ],
            }
        else:
            run = {"id": run_id, "input": spec["input"], "output": spec["output"], "tool_calls": calls}
        runs.append(run)
        for options in option_sets:
            cases.append({"run": run_id, "scorer": "tool_call_accuracy", "options": options})
    for n, case in enumerate(cases):
        case["case"] = n
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for run in runs:
            f.write(json.dumps(run, ensure_ascii=False) + "\n")
    with (target / "cases.jsonl").open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"{len(runs)} runs, {len(cases)} cases -> {target}")


if __name__ == "__main__":
    main()
