"""Every command's --help says what the command does and what each of its arguments means (#30 item 8)."""

from __future__ import annotations

import argparse

from spanscore.cli.parser import build_parser


def _commands(parser: argparse.ArgumentParser, path: str = "spanscore") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, f"{path} {name}")
    return found


def test_every_command_describes_itself_and_every_argument_has_help() -> None:
    problems = []
    for path, parser in _commands(build_parser()):
        if path == "spanscore score":
            continue  # parsed by the offline scorer's own parser, whose help is checked with it
        if not parser.description:
            problems.append(f"{path}: no description at the top of --help")
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            if not action.help:
                problems.append(f"{path}: {'/'.join(action.option_strings) or action.dest} has no help")
    assert not problems, "\n".join(problems)


def test_help_loads_no_judge_client_and_shows_defaults() -> None:
    """Issue #40 item 10: `score --help` took 4 s because it loaded litellm; `demo --help` hid its defaults."""
    import subprocess
    import sys

    probe = (
        "import sys, contextlib, io\n"
        "from spanscore.cli.commands import main\n"
        "for argv in (['score', '--help'], ['demo', '--help'], ['query', '--help']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(out):\n"
        "        main(argv)\n"
        "    print(out.getvalue())\n"
        "print('litellm loaded' if 'litellm' in sys.modules else 'no litellm')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.rstrip().endswith("no litellm"), done.stdout[-300:]
    assert "(default: 30)" in done.stdout and "(default: 6" in done.stdout, done.stdout
    assert "WITH" in done.stdout and "SELECT" in done.stdout
