"""The command line's arguments: every command, its options and their help."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from spanscore import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spanscore", description="Live scoring service for AI agents.")
    parser.add_argument("--version", action="version", version=f"spanscore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the OTLP receivers, storage and the API",
        description="Run the OTLP receivers (gRPC 127.0.0.1:4317, HTTP 127.0.0.1:4318), storage and the API "
        "(127.0.0.1:4319) until SIGTERM or SIGINT, which drain and stop. SIGHUP re-reads the rules of the -c file "
        "(other sections need a restart). Any setting can be overridden by the environment: "
        "SPANSCORE_<SECTION>__<KEY>, e.g. SPANSCORE_API__PORT=5319 or SPANSCORE_COLLECTOR__GRPC__PORT=0.",
    )
    serve.add_argument("-c", "--config", help="YAML configuration file")

    query = commands.add_parser("query", help="run a read-only SQL query")
    query.add_argument("-c", "--config", help="YAML configuration file")
    query.add_argument("--format", choices=["table", "json", "csv", "tsv"], default="table", help="output format")
    query.add_argument("sql", help="one read statement: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN or EXISTS")

    commands.add_parser("score", help="score runs offline from JSONL or an OTLP JSON export", add_help=False)
    judge = commands.add_parser("judge", help="judge tools: 'judge check' measures a judge model's agreement")
    judge.add_argument(
        "judge_command",
        choices=["check"],
        help="check: run the LLM scorers on labelled cases against a judge model (spanscore judge check --help)",
    )

    status = commands.add_parser("status", help="is the service healthy and keeping up: a short summary")
    status.add_argument("-c", "--config", help="YAML configuration file")
    status.add_argument("--format", choices=["table", "json"], default="table", help="json: every metric")

    _add_deadletter_parser(commands)
    _add_rules_parser(commands)
    _add_backfill_and_report_parsers(commands)
    _add_setup_parsers(commands)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """A command's --help opens with the line its parent lists it with, unless it has a longer description.

    argparse shows ``help=`` only in the parent's list, so ``spanscore status --help`` would otherwise say
    nothing about what status does.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if not sub.description and listed.get(name):
                    text = str(listed[name])
                    sub.description = text[0].upper() + text[1:] + "."
                _describe(sub)


if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_rules_parser(commands: Subcommands) -> None:
    rules = commands.add_parser("rules", help="show, preview, compare and apply sampling rules")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    rules_show = rules_commands.add_parser("show", help="the running service's rules, as YAML you can edit and apply")
    rules_show.add_argument("-c", "--config", help="YAML configuration file (how to reach the service's API)")
    rules_preview = rules_commands.add_parser("preview", help="how many stored runs a rule matches and samples")
    rules_preview.add_argument("rule", help="the name of a rule the service runs, or of a rule in --file")
    rules_preview.add_argument(
        "--file", help="preview a rule of this rules or config file, not applied yet (matched, sampled, judge cost)"
    )
    rules_preview.add_argument("--since", default="24h", help="look-back window: 30m, 24h, 7d")
    rules_preview.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    rules_preview.add_argument("-c", "--config", help="YAML configuration file")
    for name, text in (
        ("apply", "replace the running service's rules with the rules: of FILE (validated whole first)"),
        ("diff", "compare the rules: of FILE with the running service's (exit 1 when they differ)"),
    ):
        sub = rules_commands.add_parser(name, help=text)
        sub.add_argument("file", help="a config file or a file holding only rules:")
        sub.add_argument("-c", "--config", help="YAML configuration file (how to reach the service's API)")


def _add_backfill_and_report_parsers(commands: Subcommands) -> None:
    backfill = commands.add_parser("backfill", help="score stored runs with a rule (idempotent, resumable)")
    backfill.add_argument("rule", nargs="?", help="rule name (with --cancel: only that rule's backfill)")
    backfill.add_argument(
        "--cancel", action="store_true", help="cancel the backfill running on the service (every one without a rule)"
    )
    backfill.add_argument("--since", default="24h", help="look-back window: 30m, 24h, 7d")
    backfill.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    backfill.add_argument("-c", "--config", help="YAML configuration file")

    report = commands.add_parser("report", help="named reports over the roll-ups")
    report_commands = report.add_subparsers(dest="report_command", required=True)
    agree = report_commands.add_parser("agreement", help="how far a scorer agrees with human (or other) labels")
    agree.add_argument("--scorer", required=True, help="spanscore's scorer id (the judge being checked)")
    agree.add_argument("--source", default="human", help="whose labels: the source given to POST /api/v1/scores")
    agree.add_argument("--name", help="the outside scores' name, if not the scorer id")
    agree.add_argument("--since", default="30d", help="look-back window: 24h, 7d, 30d")
    agree.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    agree.add_argument("-c", "--config", help="YAML configuration file")
    trend = report_commands.add_parser("trend", help="one scorer's score series with a sparkline")
    trend.add_argument("--scorer", required=True, help="the scorer id (or outside score name) to chart")
    trend.add_argument("--rule", help="only this rule's scores")
    trend.add_argument("--since", default="7d", help="look-back window: 30m, 24h, 7d")
    trend.add_argument("--by", choices=["hour", "day", "week"], default="hour", help="one point per hour, day or week")
    trend.add_argument("--format", choices=["table", "json", "csv"], default="table", help="output format")
    trend.add_argument("-c", "--config", help="YAML configuration file")
    _add_compare_parser(report_commands)


def _add_compare_parser(report_commands: Subcommands) -> None:
    compare = report_commands.add_parser(
        "compare", help="versions side by side per scorer: weighted means, intervals, a verdict (docs/compare.md)"
    )
    compare.add_argument(
        "--by",
        help="what a version is: a run attribute (default service.version), or a column of --scores-csv "
        "(default version)",
    )
    compare.add_argument("--baseline", required=True, help="the version the others are compared with")
    compare.add_argument("--confidence", type=float, default=0.95, help="confidence of intervals and verdicts")
    compare.add_argument(
        "--min-effect", type=float, default=0.05, help="a difference inside +-this counts as none (default 0.05)"
    )
    compare.add_argument("--scores-csv", help="compare a CSV version,scorer,value,inclusion_probability, not the store")
    compare.add_argument("--since", default="24h", help="look-back window over the store: 30m, 24h, 7d")
    compare.add_argument("--scorer", action="append", help="only this scorer (repeatable)")
    compare.add_argument("--format", choices=["table", "json", "csv"], default="table", help="output format")
    compare.add_argument("-c", "--config", help="YAML configuration file")


def _add_setup_parsers(commands: Subcommands) -> None:
    migrate = commands.add_parser("migrate", help="apply the schema migrations once (before replicas with migrate off)")
    migrate.add_argument("-c", "--config", help="YAML configuration file")

    config_command = commands.add_parser("config", help="inspect a configuration file")
    config_commands = config_command.add_subparsers(dest="config_command", required=True)
    config_check = config_commands.add_parser(
        "check",
        help="validate rules, scorers, judge and storage; start nothing; with --dsn, "
        "check that store's schema and its user's grants and settings",
    )
    config_check.add_argument("-c", "--config", help="YAML configuration file")
    config_check.add_argument(
        "--dsn", help="also connect to this store and check its schema, tables and the user's grants and settings"
    )
    config_check.add_argument(
        "--role",
        choices=["owner", "query"],
        help="which spanscore user the --dsn names: owner (migrations, inserts; the default) or query (the "
        "read-only query API user; the default when --dsn equals storage.query_dsn)",
    )
    config_check.add_argument(
        "--keeper",
        action="store_true",
        help="also connect to fleet.keeper (without joining) and report the live replicas, the leader and "
        "whether this file's rules are the fleet's",
    )

    runs = commands.add_parser("runs", help="what was scored: the assembled runs of a trace")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True)
    runs_show = runs_commands.add_parser("show", help="print the input, output, tool calls and sources scored")
    runs_show.add_argument("trace_id", help="32 hex characters, as in the dashboard or the scores table")
    runs_show.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    runs_show.add_argument("-c", "--config", help="YAML configuration file")

    demo = commands.add_parser("demo", help="send synthetic agent traces to a running service")
    demo.add_argument("-c", "--config", help="YAML configuration file (for the gRPC address and token)")
    demo.add_argument("--traces", type=int, default=30, help="how many agent traces to send (default: 30)")
    demo.add_argument("--hours", type=float, default=6.0, help="spread the runs over this many past hours (default: 6)")


def _add_deadletter_parser(commands: Subcommands) -> None:
    deadletter = commands.add_parser("deadletter", help="rows storage refused: list them, or replay them")
    actions = deadletter.add_subparsers(dest="deadletter_command", required=True)
    listing = actions.add_parser("list", help="every dead-lettered batch with the engine's reason")
    listing.add_argument("-c", "--config", help="YAML configuration file")
    listing.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    replay = actions.add_parser("replay", help="send dead-lettered rows through the write path again")
    replay.add_argument("-c", "--config", help="YAML configuration file")
    replay.add_argument(
        "--writer",
        choices=["spans", "logs", "scores", "decisions", "scored_runs", "feedback"],
        help="only this writer's",
    )
    replay.add_argument("--id", dest="entry_id", help="only this entry (see `spanscore deadletter list`)")
