"""Shared judging of edge-case runs for the blind checkers (bench/redact/inputs.py, bench/compare_check/inputs.py).

A case expects either "error:<words>" (a non-zero exit whose message contains the words, without a traceback)
or a predicate over the parsed output of a successful run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable
from typing import Any


def judge(
    proc: subprocess.CompletedProcess[str],
    expect: str | Callable[[Any], bool],
    parse: Callable[[str], Any],
    describe: Callable[[Any], str],
) -> tuple[bool, str]:
    said = (proc.stderr.strip().splitlines() or [""])[-1][:200]
    if isinstance(expect, str):
        words = expect.split(":", 1)[1].lower()
        ok = proc.returncode != 0 and words in proc.stderr.lower() and "Traceback" not in proc.stderr
        return ok, f"exit {proc.returncode}: {said!r}"
    if proc.returncode != 0:
        return False, f"exit {proc.returncode}: {said!r}"
    try:
        out = parse(proc.stdout)
        return bool(expect(out)), describe(out)
    except (ValueError, KeyError, IndexError, TypeError, StopIteration) as exc:
        return False, f"output unusable: {exc}"


def report(results: Iterable[tuple[str, bool, str]], width: int) -> int:
    """Print one line per case; exit status 1 when any case went otherwise than expected."""
    total = failed = 0
    for name, ok, detail in results:
        total += 1
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:{width}} {detail}")
    print(f"{total - failed} of {total} cases as expected")
    return 1 if failed else 0
