"""What a scorer is asked about: the last question of the input, whatever history it carries."""

from __future__ import annotations

import pytest

from spanscore.run import Message, Run


@pytest.mark.parametrize(
    ("messages", "asked"),
    [
        ([("user", "What is the weather in Paris?")], "What is the weather in Paris?"),
        ([("system", "Be brief."), ("user", "Hi"), ("user", "Weather?")], "Hi\nWeather?"),
        # a caller that passes the conversation so far (AI SDK's messages): the new question only
        ([("user", "Paris?"), ("assistant", "Sunny."), ("user", "And in Rome?")], "And in Rome?"),
        ([("user", "Paris?"), ("assistant", ""), ("tool", "{}"), ("assistant", "Sunny."), ("user", "Rome?")], "Rome?"),
        # nothing asked after the last answer: the run's user messages
        ([("user", "Paris?"), ("assistant", "Sunny.")], "Paris?"),
        # no user message at all: all of its text
        ([("system", "Summarise the log.")], "Summarise the log."),
    ],
)
def test_input_text_is_the_turns_question(messages: list[tuple[str, str]], asked: str) -> None:
    assert Run([Message(role, text) for role, text in messages], "ok").input_text == asked


def test_no_input_is_none() -> None:
    assert Run(None, "ok").input_text is None
