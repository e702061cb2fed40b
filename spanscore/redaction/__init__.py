"""Redaction of personal data and secrets in run text before it leaves the process (issue #42).

A judge rule sends run text to a provider the operator named; this package finds what must not go there
(emails, phone numbers, cards, IBANs, national ids, IP addresses, secrets, credentials in URLs, and the
operator's own patterns and word lists) and replaces each value with a stable placeholder (``<EMAIL_1>``).
It sits low in the layers so that the scorers (the judge path), the CLI and the collector can all use it,
and it imports no pipeline stage.
"""

from spanscore.redaction.detectors import BUILTIN_DETECTORS, Finding
from spanscore.redaction.redactor import Placeholders, Redacted, Redactor

__all__ = ["BUILTIN_DETECTORS", "Finding", "Placeholders", "Redacted", "Redactor"]
