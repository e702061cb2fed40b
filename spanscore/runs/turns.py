"""Where a turn begins in a model call's conversation, and the tool work the turn did after it.

A model call in a session is sent the whole conversation so far; the turn's prompt is what the user
added after the last answer, and everything after that prompt (assistant tool calls, tool results)
is the turn's own tool work. Some instrumentations leave a step's tool calls out of its output
(LiteLLM's callback records no parts for them, #29): the next call's history still holds them.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanscore.run import Message, ToolCall, last_turn


def users_turn(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The user messages at the end of a conversation, after its last assistant or tool message.

    A conversation that ends with the turn's own tool work (assistant tool calls without text, tool
    results) after the user's messages is a later model call of that turn: its prompt is those user
    messages. Any other conversation that does not end with the user (or holds nothing else) is kept whole.
    """
    end = len(messages)
    while end and _tool_work(messages[end - 1]):
        end -= 1
    if end == len(messages) or not end or messages[end - 1].role != "user":
        end = len(messages)
    head = messages[:end]
    turn = last_turn(head)
    if len(turn) == len(head):  # nothing but user and system messages
        return head
    return turn if any(message.role == "user" for message in turn) else messages


def _tool_work(message: Message) -> bool:
    """A tool result, or an assistant message that only calls tools."""
    if message.role == "tool":
        return True
    return message.role == "assistant" and bool(message.tool_calls) and not message.content.strip()


def history_calls(
    inputs: Sequence[tuple[int, tuple[Message, ...] | None]], requested: Sequence[tuple[int, ToolCall]]
) -> list[tuple[int, ToolCall]]:
    """The turn's tool calls that only later model calls' histories show, each once, with the call's time.

    ``inputs`` are the run's model calls after its first (start time, input messages): the first one's history
    is from before the run. A call is the turn's when it stands
    in the tool work after the turn's prompt. One that ``requested`` (the calls the model's outputs hold)
    already has, by id, or by name and arguments when either has no id, is not added again.
    """
    seen = [call for _, call in requested]
    found: list[tuple[int, ToolCall]] = []
    for time_ns, messages in inputs:
        for message in _turn_work(messages or ()):
            for call in message.tool_calls:
                if not any(_same_call(call, other) for other in seen):
                    seen.append(call)
                    found.append((time_ns, call))
    return found


def _turn_work(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The tool work at the end of a conversation, after the last user message (nothing if it ends otherwise)."""
    end = len(messages)
    start = end
    while start and _tool_work(messages[start - 1]):
        start -= 1
    if start == end or not start or messages[start - 1].role != "user":
        return ()
    return messages[start:end]


def _same_call(call: ToolCall, other: ToolCall) -> bool:
    if call.id is not None and other.id is not None:
        return call.id == other.id
    return call.name == other.name and call.arguments == other.arguments
