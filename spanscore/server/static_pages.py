"""The dashboard's pages are put together from shared parts once, when the service loads its assets.

The run and session pages share their whole top (head, header, sign-in form, status line) and the
index shares the sign-in form, so each is written once under ``static/parts/`` and a page names it on
a line of its own: ``<!-- include parts/top.html title="Run" page="run" -->``. The part's
``{{name}}`` fields take the values given there; a part may include another. Nothing is assembled per
request, and the parts are not served on their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PARTS = "parts/"
_INCLUDE = re.compile(r'^[ \t]*<!-- include (?P<part>[\w./-]+)(?P<values>(?: \w+="[^"]*")*) -->\n', re.MULTILINE)
_VALUE = re.compile(r'(\w+)="([^"]*)"')
_FIELD = re.compile(r"\{\{(\w+)\}\}")


def render_page(text: str, parts: Mapping[str, str], *, depth: int = 0) -> str:
    """``text`` with every include line replaced by its part, the part's fields filled in.

    Raises ``ValueError`` naming the part when a page includes one that does not exist, leaves a field
    without a value, or includes parts more than eight deep (a part that includes itself).
    """
    if depth > 8:
        raise ValueError("dashboard parts include each other more than 8 deep (does a part include itself?)")

    def expand(match: re.Match[str]) -> str:
        name = match["part"]
        if name not in parts:
            raise ValueError(f"a dashboard page includes {name!r}, which is not a file under static/{PARTS}")
        values = dict(_VALUE.findall(match["values"]))
        missing = sorted({field for field in _FIELD.findall(parts[name]) if field not in values})
        if missing:
            raise ValueError(f"the dashboard part {name!r} needs a value for {', '.join(missing)}")
        body = _FIELD.sub(lambda field: values[field[1]], parts[name])
        return render_page(body, parts, depth=depth + 1)

    return _INCLUDE.sub(expand, text)


def assemble(assets: dict[str, tuple[bytes, str]]) -> dict[str, tuple[bytes, str]]:
    """The assets to serve: pages with their parts included, and the parts themselves left out."""
    parts = {path: body.decode() for path, (body, _) in assets.items() if path.startswith(PARTS)}
    served: dict[str, tuple[bytes, str]] = {}
    for path, (body, content_type) in assets.items():
        if path.startswith(PARTS):
            continue
        if path.endswith(".html"):
            body = render_page(body.decode(), parts).encode()
        served[path] = (body, content_type)
    return served
