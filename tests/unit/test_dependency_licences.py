"""Every runtime dependency (and theirs) is under a licence that fits spanscore's Apache-2.0.

The runtime dependencies are pyproject's ``dependencies`` followed transitively through the installed
distributions' metadata (License-Expression, License, classifiers). A distribution whose only licences
are GPL-family fails, as does one with no licence information (review it and add it to REVIEWED).
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
COPYLEFT = re.compile(r"\b(A|L)?GPL|General Public License", re.IGNORECASE)
PERMISSIVE = re.compile(
    r"\b(MIT|BSD|Apache|ISC|PSF|Python Software Foundation|MPL|Mozilla|Unlicense|Zlib|CC0|HPND|0BSD)\b",
    re.IGNORECASE,
)
REVIEWED: dict[str, str] = {}
"""Distributions without licence metadata, checked by hand: name -> licence found and where."""


def licence_texts(meta: metadata.PackageMetadata) -> list[str]:
    texts = [meta.get("License-Expression") or "", (meta.get("License") or "").splitlines()[0:1]]
    flat = [t for t in texts if isinstance(t, str)] + [line for t in texts if isinstance(t, list) for line in t]
    flat += [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return [text for text in flat if text.strip()]


def verdict(texts: list[str]) -> str | None:
    """Why these licence statements do not fit an Apache-2.0 project, or None when they do."""
    if not texts:
        return "no licence information"
    joined = " | ".join(texts)
    if COPYLEFT.search(joined) and not PERMISSIVE.search(joined):
        return f"GPL-family only: {joined}"
    return None


def runtime_distributions() -> dict[str, metadata.Distribution]:
    found: dict[str, metadata.Distribution] = {}
    pending = [Requirement(text) for text in tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]["dependencies"]]
    while pending:
        requirement = pending.pop()
        key = requirement.name.lower().replace("_", "-")
        if key in found:
            continue
        distribution = metadata.distribution(requirement.name)
        found[key] = distribution
        extras = {"", *requirement.extras}
        for text in distribution.requires or []:
            child = Requirement(text)
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                pending.append(child)
    return found


def test_every_runtime_dependency_has_a_licence_that_fits_apache_2() -> None:
    distributions = runtime_distributions()
    assert "litellm" in distributions and "pydantic-core" in distributions  # the walk follows the tree
    problems = {
        name: problem
        for name, distribution in sorted(distributions.items())
        if name not in REVIEWED and (problem := verdict(licence_texts(distribution.metadata)))
    }
    assert problems == {}


@pytest.mark.parametrize(
    ("texts", "fits"),
    [
        (["GPL"], False),
        (["License :: OSI Approved :: GNU General Public License v3 (GPLv3)"], False),
        (["AGPL-3.0-only"], False),
        (["LGPL-3.0-or-later"], False),
        (["LGPL-3.0-or-later OR MPL-2.0"], True),
        (["Apache-2.0"], True),
        (["License :: OSI Approved :: MIT License"], True),
        ([], False),
    ],
)
def test_verdict_reads_licence_statements(texts: list[str], fits: bool) -> None:
    assert (verdict(texts) is None) == fits


def test_the_afinn_word_list_is_carried_with_its_own_licence() -> None:
    data = Path(__file__).resolve().parents[2] / "spanscore" / "scorers" / "code" / "data"
    notice = (data / "AFINN-en-165.NOTICE.txt").read_text("utf-8")
    assert "Finn Årup Nielsen" in notice and "Open Database License" in notice
    assert (data / "AFINN-en-165.LICENSE.txt").read_text("utf-8").startswith("## ODC Open Database License (ODbL)")
    assert len((data / "AFINN-en-165.txt").read_text("utf-8").splitlines()) == 3382
