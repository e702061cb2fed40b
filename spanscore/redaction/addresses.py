"""Detectors for addresses: emails, IP addresses, and credentials inside URLs.

Each finder takes the (already capped) text and yields ``(start, end, value)`` for what it would mask, the
value normalised so that the same address written twice gets the same placeholder. Candidates come from
one RE2 scan; what a regular expression cannot say (a valid address, a dotted version number) is checked
in code on the candidate only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from spanscore.redaction.patterns import compiled
from spanscore.redaction.secrets import is_provider_key

Hit = tuple[int, int, str]

_EMAIL = compiled(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,64}(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,64}){0,8}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}\b"
)
# scheme://userinfo@ where the userinfo holds a password (user:pass, :pass) or is itself a long token.
_URL_USERINFO = compiled(r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://([^\s/?#@\"'<>]{1,256})@")
# Query parameters whose value is a credential by name (signed URLs, keys pasted into links).
_URL_QUERY_SECRET = compiled(
    r"(?i)[?&](?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|password|passwd|pwd|secret|"
    r"client[_-]?secret|sig|signature|x-amz-signature|x-amz-credential|key)=([^\s&#\"'<>]{6,512})"
)
_IPV4 = compiled(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = compiled(r"(?i)(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?:%[0-9a-z]{1,15})?")
_NOBODY = frozenset({"0.0.0.0", "127.0.0.1", "255.255.255.255", "::", "::1"})
"""Addresses that identify no host or person: unspecified, loopback, broadcast."""


def find_emails(text: str) -> Iterator[Hit]:
    for match in _EMAIL.finditer(text):
        start, end = match.start(), match.end()
        if text[start - 1 : start] in ("/", ":") and _is_url_userinfo(text, start):
            continue  # user@host inside scheme://...: the URL detector's business, not an email
        if text[end : end + 1] == ":" and text[end + 1 : end + 2] not in ("", " ", "\n", "\t"):
            continue  # git@github.com:org/repo: an SSH remote (user@host:path), nobody's mailbox
        yield start, end, match.group().lower()


def _is_url_userinfo(text: str, start: int) -> bool:
    return text.rfind("://", max(0, start - 3), start) >= 0


def find_url_credentials(text: str) -> Iterator[Hit]:
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group(1)
        if ":" in userinfo or len(userinfo) >= 20:
            yield match.start(1), match.end(), userinfo
    for match in _URL_QUERY_SECRET.finditer(text):
        if not is_provider_key(match.group(1)):  # a provider's key in a link is a secret, named as one
            yield match.start(1), match.end(1), match.group(1)


def find_ips(text: str) -> Iterator[Hit]:
    for match in _IPV4.finditer(text):
        start, end = match.start(), match.end()
        before, after = text[max(0, start - 1) : start], text[end : end + 2]
        if before in (".", "v", "V") or (after[:1] == "." and after[1:2].isdigit()) or _after_version_word(text, start):
            continue  # part of a longer dotted number, or a version (v1.2.3.4, version 4.1.0.2): not an address
        yield from _ip_hit(match.group(), start, end)
    for match in _IPV6.finditer(text):
        value, end = match.group(), match.end()
        if value.endswith(":") and not value.endswith("::"):
            value, end = value[:-1], end - 1  # "from 2a02:...::a3e: invalid token": the colon ends the address
        if value.count(":") < 7 and "::" not in value:
            continue  # times (10:30:00) and other colon lists: only full or compressed addresses
        if value.strip(":") == "" or not any(c.isdigit() or c.lower() in "abcdef" for c in value):
            continue
        yield from _ip_hit(value, match.start(), end)


def _after_version_word(text: str, start: int) -> bool:
    words = text[max(0, start - 12) : start].lower().split()
    return bool(words) and words[-1].rstrip(":=") in ("version", "ver", "release", "build", "firmware", "v")


def _ip_hit(value: str, start: int, end: int) -> Iterator[Hit]:
    try:
        address = ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return
    if str(address) not in _NOBODY:
        yield start, end, str(address)
