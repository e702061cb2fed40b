"""Command line: argument parsing only; the work happens in the service and the stores.

``spanscore serve`` runs the service; ``spanscore query`` runs a read-only SQL
query through the running service's API, or directly on the store when no
service is running; ``spanscore score`` scores runs offline (see
``spanscore.offline.score_files``).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import importlib
import json
import logging
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from spanscore import __version__
from spanscore.cli import rules as rules_cli
from spanscore.cli.logs import EscapingFormatter
from spanscore.cli.status_text import format_status
from spanscore.cli.tables import format_table
from spanscore.config import ServiceConfig, load_config
from spanscore.errors import ConfigError, SpanscoreError
from spanscore.printable import printable


def _parser() -> argparse.ArgumentParser:
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
    query.add_argument("--format", choices=["table", "json", "csv", "tsv"], default="table")
    query.add_argument("sql", help="one SELECT/SHOW/DESCRIBE/EXPLAIN statement")

    commands.add_parser("score", help="score runs offline from JSONL or an OTLP JSON export", add_help=False)
    judge = commands.add_parser("judge", help="judge tools: 'judge check' measures a judge model's agreement")
    judge.add_argument("judge_command", choices=["check"])

    status = commands.add_parser("status", help="is the service healthy and keeping up: a short summary")
    status.add_argument("-c", "--config", help="YAML configuration file")
    status.add_argument("--format", choices=["table", "json"], default="table", help="json: every metric")

    _add_deadletter_parser(commands)
    rules = commands.add_parser("rules", help="show, preview, compare and apply sampling rules")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    rules_show = rules_commands.add_parser("show", help="the running service's rules, as YAML you can edit and apply")
    rules_show.add_argument("-c", "--config", help="YAML configuration file (how to reach the service's API)")
    rules_preview = rules_commands.add_parser("preview", help="how many stored runs a rule matches and samples")
    rules_preview.add_argument("rule")
    rules_preview.add_argument("--since", default="24h", help="look-back window: 30m, 24h, 7d")
    rules_preview.add_argument("-c", "--config", help="YAML configuration file")
    for name, text in (
        ("apply", "replace the running service's rules with the rules: of FILE (validated whole first)"),
        ("diff", "compare the rules: of FILE with the running service's (exit 1 when they differ)"),
    ):
        sub = rules_commands.add_parser(name, help=text)
        sub.add_argument("file", help="a config file or a file holding only rules:")
        sub.add_argument("-c", "--config", help="YAML configuration file (how to reach the service's API)")

    backfill = commands.add_parser("backfill", help="score stored runs with a rule (idempotent, resumable)")
    backfill.add_argument("rule", nargs="?", help="rule name (not needed with --cancel)")
    backfill.add_argument("--cancel", action="store_true", help="cancel the backfill running on the service")
    backfill.add_argument("--since", default="24h", help="look-back window: 30m, 24h, 7d")
    backfill.add_argument("-c", "--config", help="YAML configuration file")

    report = commands.add_parser("report", help="named reports over the roll-ups")
    report_commands = report.add_subparsers(dest="report_command", required=True)
    agree = report_commands.add_parser("agreement", help="how far a scorer agrees with human (or other) labels")
    agree.add_argument("--scorer", required=True, help="spanscore's scorer id (the judge being checked)")
    agree.add_argument("--source", default="human", help="whose labels: the source given to POST /api/v1/scores")
    agree.add_argument("--name", help="the outside scores' name, if not the scorer id")
    agree.add_argument("--since", default="30d", help="look-back window: 24h, 7d, 30d")
    agree.add_argument("--format", choices=["table", "json"], default="table")
    agree.add_argument("-c", "--config", help="YAML configuration file")
    trend = report_commands.add_parser("trend", help="one scorer's score series with a sparkline")
    trend.add_argument("--scorer", required=True, help="the scorer id (or outside score name) to chart")
    trend.add_argument("--rule", help="only this rule's scores")
    trend.add_argument("--since", default="7d", help="look-back window: 30m, 24h, 7d")
    trend.add_argument("--by", choices=["hour", "day", "week"], default="hour")
    trend.add_argument("--format", choices=["table", "json", "csv"], default="table")
    trend.add_argument("-c", "--config", help="YAML configuration file")

    migrate = commands.add_parser("migrate", help="apply the schema migrations once (before replicas with migrate off)")
    migrate.add_argument("-c", "--config", help="YAML configuration file")

    config_command = commands.add_parser("config", help="inspect a configuration file")
    config_commands = config_command.add_subparsers(dest="config_command", required=True)
    config_check = config_commands.add_parser("check", help="validate rules, scorers, judge and storage; start nothing")
    config_check.add_argument("-c", "--config", help="YAML configuration file")

    runs = commands.add_parser("runs", help="what was scored: the assembled runs of a trace")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True)
    runs_show = runs_commands.add_parser("show", help="print the input, output, tool calls and sources scored")
    runs_show.add_argument("trace_id", help="32 hex characters, as in the dashboard or the scores table")
    runs_show.add_argument("--format", choices=["text", "json"], default="text")
    runs_show.add_argument("-c", "--config", help="YAML configuration file")

    demo = commands.add_parser("demo", help="send synthetic agent traces to a running service")
    demo.add_argument("-c", "--config", help="YAML configuration file (for the gRPC address and token)")
    demo.add_argument("--traces", type=int, default=30, help="how many agent traces to send")
    demo.add_argument("--hours", type=float, default=6.0, help="spread the runs over this many past hours")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "score":
        offline = importlib.import_module("spanscore.offline.score_files")
        return int(offline.main(args_list[1:]))
    if args_list[:2] == ["judge", "check"]:
        return _judge_check(args_list[2:])
    args = _parser().parse_args(args_list)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"spanscore: {exc}", file=sys.stderr)
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=config.log_level, handlers=[handler])
    if args.command == "serve":
        return asyncio.run(_serve(config, args.config))
    command = _COMMANDS.get(args.command)
    if command is None:
        return 2
    try:
        return command(config, args)
    except SpanscoreError as exc:
        print(f"spanscore: {exc}", file=sys.stderr)
        return 1


async def _serve(config: ServiceConfig, config_path: str | None = None) -> int:
    from spanscore.server.default_rules import apply_default_rules
    from spanscore.server.running import run_until_signal

    try:
        return await run_until_signal(config, default_rule=apply_default_rules(config), config_path=config_path)
    except ConfigError as exc:
        print(f"spanscore: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"spanscore: cannot start: {exc}", file=sys.stderr)
        return 1


def _query(config: ServiceConfig, sql: str, output: str) -> int:
    fmt = "json" if output == "table" else output
    try:
        body = _query_service(config, sql, fmt)
        source = f"the service at {api_url(config)}"
        if body is None:
            body = _query_store(config, sql, fmt)
            source = f"the store {config.storage.dsn.split('@')[-1]} (no service answered on {api_url(config)})"
    except SpanscoreError as exc:
        print(f"spanscore: query failed: {exc}", file=sys.stderr)
        return 1
    if output == "table":
        sys.stdout.write(format_table(json.loads(body), source))
    elif sys.stdout.isatty():  # a terminal obeys control characters in the data; a pipe or file gets bytes as stored
        sys.stdout.write(printable(body.decode("utf-8", "replace"), keep="\n\t"))
    else:
        sys.stdout.buffer.write(body)
    sys.stdout.flush()
    return 0


def _query_service(config: ServiceConfig, sql: str, fmt: str) -> bytes | None:
    """Ask the running service; None when nothing listens (then the store is opened directly)."""
    return _call_api(config, "query", {"sql": sql, "format": fmt}, config.storage.query_max_execution_time_s + 5)


def _call_api(
    config: ServiceConfig, path: str, payload: dict[str, object] | None, timeout: float, *, method: str | None = None
) -> bytes | None:
    """Call the running service's API; None when nothing listens. An error answer raises with its message."""
    if not config.api.enabled:
        return None
    request = urllib.request.Request(
        f"{api_url(config)}/api/v1/{path}",
        data=None if payload is None else json.dumps(payload).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method=method or ("GET" if payload is None else "POST"),
    )
    if config.api.auth_tokens:
        request.add_header("Authorization", f"Bearer {config.api.auth_tokens[0]}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            result: bytes = response.read()
            return result
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        try:
            answer = json.loads(detail)
            detail = "\n  ".join([answer["error"], *answer.get("problems", [])])
        except (ValueError, KeyError, TypeError):
            pass
        raise SpanscoreError(detail) from None
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _query_store(config: ServiceConfig, sql: str, fmt: str) -> bytes:
    """Read the store directly (no service answers); never create or migrate one by reading."""
    from spanscore.server.service import store_for

    _require_existing_store(config)
    _refuse_store_held_elsewhere(config)
    config.storage.migrate = False
    store = store_for(config)
    try:
        store.open()
    except Exception as exc:
        raise SpanscoreError(_unopenable(config, exc)) from None
    try:
        return store.query_sync(sql, fmt)
    finally:
        store.close()


def api_url(config: ServiceConfig) -> str:
    """The API address the CLI calls, as a URL."""
    host = "127.0.0.1" if config.api.host in ("0.0.0.0", "::", "") else config.api.host
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if config.api.tls else 'http'}://{shown}:{config.api.port}"


def no_service(config: ServiceConfig) -> str:
    """Why a command that needs the service failed: where it looked, and how to point it elsewhere."""
    return (
        f"no service answers on {api_url(config)} (api.host/api.port); start `spanscore serve`, or point at the "
        "running one with -c <its config> or SPANSCORE_API__PORT=<its API port>"
    )


def _unopenable(config: ServiceConfig, exc: Exception) -> str:
    """Why the store could not be opened, in one line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"cannot open storage {config.storage.dsn}: {text}"


def _refuse_store_held_elsewhere(config: ServiceConfig) -> None:
    """An embedded store another process holds is most often a service whose API is not where the CLI looked.

    The engine locks ``<data dir>/status`` while it has the store open; trying that lock (shared, without
    waiting, released at once) tells before opening, so the user reads where to point the CLI instead of
    the engine's lock error.
    """
    if not config.storage.dsn.startswith("chdb:///"):
        return
    status = Path(config.storage.dsn.removeprefix("chdb://")) / "status"
    try:
        with open(status, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
    except BlockingIOError:
        raise SpanscoreError(
            f"the store {config.storage.dsn} is open in another process, most likely a `spanscore serve` whose "
            f"API is not on {api_url(config)}: point at that service with -c <its config> or "
            "SPANSCORE_API__PORT=<its API port>"
        ) from None
    except OSError:
        return  # no status file yet: nobody holds the store


def _require_existing_store(config: ServiceConfig) -> None:
    dsn = config.storage.dsn
    if not dsn.startswith("chdb:///"):
        return
    path = dsn.removeprefix("chdb://")
    if not (Path(path) / "metadata").is_dir():
        raise SpanscoreError(
            f"no service answers on {api_url(config)} and there is no store at {path}; start `spanscore serve`, "
            "or run this from the service's working directory, or with -c <its config> (storage.data_dir) or "
            "SPANSCORE_API__PORT=<its API port>"
        )


def _report(config: ServiceConfig, args: argparse.Namespace) -> int:
    from spanscore.cli.report import agreement_report, trend

    def run_query(sql: str, fmt: str) -> bytes:
        body = _query_service(config, sql, fmt)
        return body if body is not None else _query_store(config, sql, fmt)

    if args.report_command == "agreement":
        code, text = agreement_report(run_query, args.scorer, args.name, args.source, args.since, args.format)
        (sys.stdout if code == 0 else sys.stderr).write(text)
        return code
    sys.stdout.write(trend(run_query, args.scorer, args.since, args.by, args.format, args.rule))
    return 0


def _status(config: ServiceConfig, output: str) -> int:
    body = _call_api(config, "status", None, 10)
    if body is None:
        raise SpanscoreError(no_service(config))
    metrics = json.loads(body)
    if output == "json":
        print(json.dumps(metrics, indent=2, sort_keys=True))
    else:
        sys.stdout.write(format_status(metrics, api_url(config)))
    return 0


def _add_deadletter_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    deadletter = commands.add_parser("deadletter", help="rows storage refused: list them, or replay them")
    actions = deadletter.add_subparsers(dest="deadletter_command", required=True)
    listing = actions.add_parser("list", help="every dead-lettered batch with the engine's reason")
    listing.add_argument("-c", "--config", help="YAML configuration file")
    listing.add_argument("--format", choices=["table", "json"], default="table")
    replay = actions.add_parser("replay", help="send dead-lettered rows through the write path again")
    replay.add_argument("-c", "--config", help="YAML configuration file")
    replay.add_argument(
        "--writer",
        choices=["spans", "logs", "scores", "decisions", "scored_runs", "feedback"],
        help="only this writer's",
    )
    replay.add_argument("--id", dest="entry_id", help="only this entry (see `spanscore deadletter list`)")


def _deadletter(config: ServiceConfig, args: argparse.Namespace) -> int:
    """Through the running service's API, or on the spool directory and store directly when none runs."""
    from spanscore.cli import deadletter as deadletter_cli

    if args.deadletter_command == "list":
        body = _call_api(config, "deadletter", None, 10)
        listing = json.loads(body) if body is not None else deadletter_cli.list_locally(config)
        sys.stdout.write(deadletter_cli.format_listing(listing, args.format))
        return 0
    payload = {"writer": args.writer, "id": args.entry_id}
    body = _call_api(config, "deadletter/replay", payload, 600)
    result = json.loads(body) if body is not None else asyncio.run(deadletter_cli.replay_locally(config, payload))
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def _backfill(config: ServiceConfig, rule: str | None, since: str, cancel: bool) -> int:
    """Backfill with progress on stderr; Ctrl-C or ``--cancel`` stops it on the service (cli/backfill_client.py)."""
    from spanscore.cli import backfill_client

    if cancel:
        print(json.dumps(backfill_client.cancel(config, _call_api), indent=2, sort_keys=True))
        return 0
    if not rule:
        raise SpanscoreError("backfill needs a rule name (or --cancel)")
    try:
        result = backfill_client.run_remote(config, rule, since, _call_api)
    except KeyboardInterrupt:
        return 130
    if result is None:
        result = asyncio.run(_operation_locally(config, "backfill", rule, since))
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def _operation(config: ServiceConfig, path: str, rule: str, since: str) -> int:
    """Preview or backfill through the running service, or on the store directly when none runs."""
    body = _call_api(config, path, {"rule": rule, "since": since}, 3600)
    if body is not None:
        result = json.loads(body)
    else:
        result = asyncio.run(_operation_locally(config, path, rule, since))
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


async def _operation_locally(config: ServiceConfig, path: str, rule: str, since: str) -> dict[str, object]:
    """Preview or backfill on the store itself when no service runs; never creates or migrates a store."""
    from spanscore.server.default_rules import apply_default_rules
    from spanscore.server.service import Service

    _require_existing_store(config)
    _refuse_store_held_elsewhere(config)
    config.storage.migrate = False
    apply_default_rules(config)  # the rules serve would have loaded
    service = Service(config)
    try:
        await asyncio.to_thread(service.store.open)
    except Exception as exc:
        raise SpanscoreError(_unopenable(config, exc)) from None
    try:
        if path == "backfill":
            return await service.operations.backfill(rule, since)
        return await service.operations.preview(rule, since)
    finally:
        await asyncio.to_thread(service.store.close)


def _runs_show(config: ServiceConfig, trace_id: str, output: str) -> int:
    """Print what the scorers received for a trace, read through the running service's API."""
    from urllib.parse import quote

    from spanscore.cli.scored_run_text import format_scored_runs

    body = _call_api(config, f"runs/{quote(trace_id.strip(), safe='')}", None, 30)
    if body is None:
        raise SpanscoreError(no_service(config))
    result = json.loads(body)
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if output == "json" else format_scored_runs(result["runs"]))
    return 0


def _demo(config: ServiceConfig, traces: int, hours: float) -> int:
    """Send the demo traces and report what the service acknowledged; non-zero unless all of it was."""
    from spanscore.cli.demo import send_demo
    from spanscore.server.banner import dashboard_url, reachable

    if traces < 1 or hours <= 0:
        raise SpanscoreError("demo: --traces must be at least 1 and --hours above 0")
    endpoint = f"{reachable(config.collector.grpc.host)}:{config.collector.grpc.port}"
    tokens = config.collector.auth_tokens
    headers = {"authorization": f"Bearer {tokens[0]}"} if tokens else None
    report = send_demo(endpoint, traces, headers=headers, hours=hours)
    print(
        f"{report.traces_accepted} of {report.traces} agent traces accepted by {endpoint} "
        f"({report.spans_accepted} of {report.spans_created} spans), spread over the past {hours:g} hours"
    )
    if report.spans_accepted < report.spans_created:
        missing = report.spans_created - report.spans_accepted
        print(f"spanscore: {missing} span(s) were not accepted (is spanscore serve running?)", file=sys.stderr)
        return 1
    print("scores appear after the quiet period:")
    url = dashboard_url(config)
    if url:
        print(f"  dashboard: {url}")
    print('  spanscore query "SELECT Rule, Scorer, count(), avg(Score) FROM scores FINAL GROUP BY ALL"')
    return 0


def _migrate(config: ServiceConfig) -> int:
    """Bring the schema up to date once, for deployments whose replicas start with storage.migrate off."""
    from spanscore.server.service import store_for
    from spanscore.storage.schema.state import missing_migrations

    config.storage.migrate = True
    store = store_for(config)
    try:
        store.open()
        missing = missing_migrations(store.client, config.storage.database)
    except SpanscoreError:
        raise
    except Exception as exc:
        raise SpanscoreError(f"migrate: cannot migrate {config.storage.database}: {exc}") from None
    finally:
        store.close()
    if missing:
        raise SpanscoreError(f"migrate: migrations {missing} are still not recorded after migrating")
    print(f"schema of database {config.storage.database} is up to date")
    return 0


def _config_check(config: ServiceConfig, path: str | None) -> int:
    """What ``serve`` would refuse, found without opening storage or binding a port."""
    import os

    from spanscore.cli.config_check import check_config
    from spanscore.server.default_rules import apply_default_rules

    if apply_default_rules(config):
        print("no rules: key, so serve loads the default rule")
    for line in check_config(config, os.environ):
        print(line)
    print(f"config {path or '<defaults>'}: OK")
    return 0


def _judge_check(argv: list[str]) -> int:
    """``spanscore judge check``: the LLM scorers' labelled cases against a judge (see scorers.judge_check)."""
    judge_check = importlib.import_module("spanscore.offline.judge_check")
    return int(judge_check.main(argv, load_judge=lambda path: dict(load_config(path).judge)))


_COMMANDS: dict[str, Callable[[ServiceConfig, argparse.Namespace], int]] = {
    "query": lambda config, args: _query(config, args.sql, args.format),
    "status": lambda config, args: _status(config, args.format),
    "rules": lambda config, args: (
        _operation(config, "rules/preview", args.rule, args.since)
        if args.rules_command == "preview"
        else rules_cli.run(
            args.rules_command,
            getattr(args, "file", ""),
            lambda *a, **k: _call_api(config, *a, **k),
            no_service(config),
        )
    ),
    "backfill": lambda config, args: _backfill(config, args.rule, args.since, args.cancel),
    "report": _report,
    "demo": lambda config, args: _demo(config, args.traces, args.hours),
    "migrate": lambda config, args: _migrate(config),
    "config": lambda config, args: _config_check(config, args.config),
    "deadletter": _deadletter,
    "runs": lambda config, args: _runs_show(config, args.trace_id, args.format),
}
"""The subcommands that run against a loaded config, other than ``serve``."""


if __name__ == "__main__":
    raise SystemExit(main())
