"""Which output messages are the agent's answer: one rule for the run page, the scorers and the sessions.

An agent span may record its whole turn as output (Microsoft Agent Framework does: an assistant
message with no text and the tool call, the tool's result, then the answer). Scoring every message
joined would score ", The weather in Paris is ..." while the page shows the answer, so live scores
would differ from the same scorers on the true answer. The answer is therefore picked once, here:

- the assistant messages with text after the agent's last tool step (a tool result, or a message
  that makes tool calls); text said before or with a tool call is a step, not the answer;
- when nothing with text follows the last step, the last assistant message with text (an LLM
  call's output is one message that may both say something and call a tool);
- when no assistant message has text, every message's text (what the agent's output carried).

Several answer messages are joined with ``", "``: the reference scorers (@mastra/evals) join a
run's output messages that way, and the golden agreement depends on it. Empty texts are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spanscore.run import Message, ToolCall

ANSWER_SEPARATOR = ", "
ANSWER_TOOL = "final_answer"
"""The answer tool's name in the frameworks that make the model answer through one (smolagents, BeeAI)."""


def answer_messages(output: Sequence[Message]) -> tuple[Message, ...]:
    """The assistant messages that make the answer (see the module docstring); empty when none has text."""
    said = [index for index, message in enumerate(output) if message.role == "assistant" and message.content]
    if not said:
        return ()
    steps = [index for index, message in enumerate(output) if message.role == "tool" or message.tool_calls]
    after = [index for index in said if not steps or index > steps[-1]]
    return tuple(output[index] for index in after or said[-1:])


def answer_text(output: Sequence[Message] | None) -> str | None:
    """The answer as one string, exactly as shown and scored; None when the run carried no output."""
    if output is None:
        return None
    messages = answer_messages(output) or tuple(output)
    return ANSWER_SEPARATOR.join(message.content for message in messages if message.content)


def without_answer_tool(
    calls: tuple[ToolCall, ...] | None, output: tuple[Message, ...] | None
) -> tuple[ToolCall, ...] | None:
    """The tool calls without a final call that only hands the answer back (smolagents' ``final_answer``).

    Some frameworks make the model answer through a tool of their own: its one argument and its result are
    the run's answer. That call delivers the answer rather than acting, and counting it would make every
    such run miss an expected tool list that names the user's tools. BeeAI's answer tool returns an
    acknowledgement ("Message has been sent"), not the answer: a last call named ``final_answer`` (the name
    smolagents and BeeAI both give it) whose one argument is the answer is that tool whatever it returns.
    """
    if not calls or output is None:
        return calls
    answer = (answer_text(output) or "").strip()
    last = calls[-1]
    arguments = last.arguments
    if not answer or not isinstance(arguments, Mapping) or len(arguments) != 1:
        return calls
    (value,) = arguments.values()
    hands_back = (last.result or "").strip() == answer or last.name == ANSWER_TOOL
    if isinstance(value, str) and value.strip() == answer and hands_back:
        return calls[:-1]
    return calls
