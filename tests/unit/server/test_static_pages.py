"""The dashboard pages share their top and sign-in form as parts, put together once at load (#27 duplicates)."""

from __future__ import annotations

import pytest

from spanscore.server.dashboard import load_assets
from spanscore.server.static_pages import render_page


def test_every_page_is_served_whole_with_one_sign_in_form_and_no_parts_of_its_own() -> None:
    assets = load_assets()
    for page in ("index.html", "run.html", "session.html"):
        text = assets[page][0].decode()
        assert text.startswith("<!doctype html>") and "<!-- include" not in text and "{{" not in text, page
        assert text.count('<form id="login"') == 1 and text.count('id="status"') == 1, page
    assert "<title>Run · spanscore</title>" in assets["run.html"][0].decode()
    assert 'src="static/session.js"' in assets["session.html"][0].decode()
    assert not [path for path in assets if path.startswith("parts/")]


def test_a_part_takes_the_values_its_include_line_gives_and_may_include_another() -> None:
    parts = {"parts/top.html": "<h1>{{page}}</h1>\n<!-- include parts/sign.html -->\n", "parts/sign.html": "<form>\n"}
    page = '<!-- include parts/top.html page="run" -->\n<main></main>\n'
    assert render_page(page, parts) == "<h1>run</h1>\n<form>\n<main></main>\n"


@pytest.mark.parametrize(
    ("page", "says"),
    [
        ("<!-- include parts/nowhere.html -->\n", "'parts/nowhere.html', which is not a file"),
        ("<!-- include parts/top.html -->\n", "'parts/top.html' needs a value for page"),
        ("<!-- include parts/loop.html -->\n", "more than 8 deep"),
    ],
)
def test_a_page_naming_a_missing_part_or_leaving_a_field_empty_is_refused_by_name(page: str, says: str) -> None:
    parts = {"parts/top.html": "<h1>{{page}}</h1>\n", "parts/loop.html": "<!-- include parts/loop.html -->\n"}
    with pytest.raises(ValueError, match=says):
        render_page(page, parts)
