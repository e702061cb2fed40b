"""The service's log format: one record, one line, whatever the values in it say.

Log messages carry text others chose (rule names, span attributes, request fields, engine errors). A
newline in one forges a log line a reader or a log shipper takes as the service's own; an escape
sequence drives the terminal tailing the log. The message is escaped (``spanscore.printable``);
tracebacks, which the service itself writes, are appended as they are.
"""

from __future__ import annotations

import logging

from spanscore.printable import printable


class EscapingFormatter(logging.Formatter):
    """A ``logging.Formatter`` that writes control characters in the message as visible escapes."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)
