"""AG2 (the AutoGen 0.2 line) chats as OpenInference records them.

AG2's agents talk in pairs: a chat is ``sender.initiate_chat(recipient, message=...)``, and the
usual sender is the user's stand-in (a ``UserProxyAgent``, or the ``user`` executor that
``agent.run(...)`` creates), which relays the user's message and runs the tools the recipient
asks for. The instrumentation makes that call the run's AGENT span and names it after the sender
(``agent.name``); the agent that answers is ``ag2.recipient.name``. The span's input value is the
call's arguments (``{"message": ..., "sender": ..., "recipient": ...}``), its output the chat's last
message. Every reply is an AGENT span of its own (``NAME.generate_reply``, its input the history
that agent holds), and a tool execution is a TOOL span whose output is AG2's ``(success, message)``
pair.
"""

from __future__ import annotations

from collections.abc import Mapping

RECIPIENT = "ag2.recipient.name"


def answering_agent(attributes: Mapping[str, str]) -> str | None:
    """The agent that answers a chat span: its recipient, since the sender speaks for the user."""
    return attributes.get(RECIPIENT) or None
