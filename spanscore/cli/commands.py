"""Command line: argument parsing only; the work happens in the service and the stores.

``spanscore serve`` runs the service; ``spanscore query`` runs a read-only SQL
query through the running service's API, or directly on the store when no
service is running; ``spanscore score`` scores runs offline (see
``spanscore.offline.score_files``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import sys
from collections.abc import Callable, Sequence

from spanscore.cli import rules as rules_cli
from spanscore.cli.logs import EscapingFormatter
from spanscore.cli.operation_text import backfill_text, cancel_text, preview_text
from spanscore.cli.parser import build_parser
from spanscore.cli.reach import (
    api_url,
    call_api,
    held_by_another_process,
    listener_problem,
    no_service,
    query_service,
    query_store,
    refuse_store_held_elsewhere,
    require_existing_store,
    unopenable,
)
from spanscore.cli.status_text import format_status
from spanscore.cli.tables import format_table
from spanscore.config import ServiceConfig, load_config
from spanscore.errors import ConfigError, SpanscoreError
from spanscore.printable import printable
from spanscore.sampling.rule_sets import parse_rules_document
from spanscore.storage.dsn import redact


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "score":
        offline = importlib.import_module("spanscore.offline.score_files")
        return int(offline.main(args_list[1:]))
    if args_list[:2] == ["judge", "check"]:
        return _judge_check(args_list[2:])
    args = build_parser().parse_args(args_list)
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

    busy = (
        f"spanscore: cannot start: the store {redact(config.storage.dsn)} is open in another process, most likely "
        "another `spanscore serve`; stop that one, or give this one its own storage.data_dir "
        "(SPANSCORE_STORAGE__DATA_DIR)"
    )
    if held_by_another_process(config.storage.dsn):
        print(busy, file=sys.stderr)
        return 1
    try:
        if config.fleet is not None:
            config.fleet.require_shared_store(config.storage.dsn)
        return await run_until_signal(config, default_rule=apply_default_rules(config), config_path=config_path)
    except ConfigError as exc:
        print(f"spanscore: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"spanscore: cannot start: {listener_problem(config, exc)}", file=sys.stderr)
        return 1
    except Exception:
        if not held_by_another_process(config.storage.dsn):
            raise
        print(busy, file=sys.stderr)  # both started at once: the other one took the engine's lock first
        return 1


def _query(config: ServiceConfig, sql: str, output: str) -> int:
    fmt = "json" if output == "table" else output
    try:
        body = query_service(config, sql, fmt)
        source = f"the service at {api_url(config)}"
        if body is None:
            body = query_store(config, sql, fmt)
            source = f"the store {redact(config.storage.dsn)} (no service answered on {api_url(config)})"
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


def _report(config: ServiceConfig, args: argparse.Namespace) -> int:
    from spanscore.cli.report import agreement_report, trend

    def run_query(sql: str, fmt: str) -> bytes:
        body = query_service(config, sql, fmt)
        return body if body is not None else query_store(config, sql, fmt)

    if args.report_command == "compare":
        return _compare(config, args)
    if args.report_command == "agreement":
        code, text = agreement_report(run_query, args.scorer, args.name, args.source, args.since, args.format)
        (sys.stdout if code == 0 else sys.stderr).write(text)
        return code
    sys.stdout.write(trend(run_query, args.scorer, args.since, args.by, args.format, args.rule))
    return 0


def _compare(config: ServiceConfig, args: argparse.Namespace) -> int:
    from spanscore.cli.compare import compare_csv, compare_stored

    if args.scores_csv is not None:
        by = args.by or "version"
        text = compare_csv(args.scores_csv, by, args.baseline, args.confidence, args.format, args.min_effect)
    else:
        by = args.by or "service.version"
        text = compare_stored(
            config, by, args.baseline, args.since, args.confidence, args.format, args.min_effect, args.scorer
        )
    sys.stdout.write(text)
    return 0


def _status(config: ServiceConfig, output: str) -> int:
    body = call_api(config, "status", None, 10)
    if body is None:
        raise SpanscoreError(no_service(config))
    metrics = json.loads(body)
    if output == "json":
        print(json.dumps(metrics, indent=2, sort_keys=True))
    else:
        sys.stdout.write(format_status(metrics, api_url(config)))
    return 0


def _deadletter(config: ServiceConfig, args: argparse.Namespace) -> int:
    """Through the running service's API, or on the spool directory and store directly when none runs."""
    from spanscore.cli import deadletter as deadletter_cli

    if args.deadletter_command == "list":
        body = call_api(config, "deadletter", None, 10)
        listing = json.loads(body) if body is not None else deadletter_cli.list_locally(config)
        sys.stdout.write(deadletter_cli.format_listing(listing, args.format))
        return 0
    payload = {"writer": args.writer, "id": args.entry_id}
    body = call_api(config, "deadletter/replay", payload, 600)
    result = json.loads(body) if body is not None else asyncio.run(deadletter_cli.replay_locally(config, payload))
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def _backfill(config: ServiceConfig, rule: str | None, since: str, cancel: bool, output: str = "table") -> int:
    """Backfill with progress on stderr; Ctrl-C or ``--cancel`` stops it on the service (cli/backfill_client.py)."""
    from spanscore.cli import backfill_client

    if cancel:
        answer = backfill_client.cancel(config, call_api, rule)
        print(json.dumps(answer, indent=2, sort_keys=True) if output == "json" else cancel_text(answer))
        return 0 if answer.get("cancelled") else 1
    if not rule:
        raise SpanscoreError("backfill needs a rule name (or --cancel)")
    try:
        result = backfill_client.run_remote(config, rule, since, call_api)
    except KeyboardInterrupt:
        return 130
    if result is None:
        result = asyncio.run(_operation_locally(config, "backfill", rule, since))
    print(json.dumps(result, indent=2, sort_keys=True) if output == "json" else backfill_text(result))
    return 0


def _operation(
    config: ServiceConfig, path: str, rule: str, since: str, file: str | None = None, output: str = "table"
) -> int:
    """Preview or backfill through the running service, or on the store directly when none runs.

    A preview with ``file`` previews that file's rules, applied nowhere yet: the service checks them as it would
    a PUT and estimates their judge calls and cost over the window.
    """
    rules = rules_cli.read_rules(file) if file else None
    request: dict[str, object] = {"rule": rule, "since": since} | ({"rules": rules} if rules is not None else {})
    body = call_api(config, path, request, 3600)
    if body is not None:
        result = json.loads(body)
    else:
        result = asyncio.run(_operation_locally(config, path, rule, since, rules))
    print(json.dumps(result, indent=2, sort_keys=True) if output == "json" else preview_text(result, since))
    return 0


async def _operation_locally(
    config: ServiceConfig, path: str, rule: str, since: str, rules: list[dict[str, object]] | None = None
) -> dict[str, object]:
    """Preview or backfill on the store itself when no service runs; never creates or migrates a store."""
    from spanscore.server.default_rules import apply_default_rules
    from spanscore.server.service import Service

    require_existing_store(config)
    refuse_store_held_elsewhere(config)
    config.storage.migrate = False
    apply_default_rules(config)  # the rules serve would have loaded
    service = Service(config)
    try:
        await asyncio.to_thread(service.store.open)
    except Exception as exc:
        raise SpanscoreError(unopenable(config, exc)) from None
    try:
        if path == "backfill":
            return await service.operations.backfill(rule, since)
        given = None if rules is None else parse_rules_document({"rules": rules}, source="--file")
        return await service.operations.preview(rule, since, given)
    finally:
        await asyncio.to_thread(service.store.close)


def _runs_show(config: ServiceConfig, trace_id: str, output: str) -> int:
    """Print what the scorers received for a trace, read through the running service's API."""
    from urllib.parse import quote

    from spanscore.cli.scored_run_text import format_scored_runs

    body = call_api(config, f"runs/{quote(trace_id.strip(), safe='')}", None, 30)
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
    from spanscore.storage.clickhouse import ClickHouseStore
    from spanscore.storage.schema.state import missing_migrations

    config.storage.migrate = True
    store = ClickHouseStore.from_config(config.storage)
    try:
        store.open_schema()
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


def _config_check(config: ServiceConfig, args: argparse.Namespace) -> int:
    """What ``serve`` would refuse, found without binding a port; with ``--dsn``, what that store's user lacks."""
    import os

    from spanscore.cli.config_check import check_config
    from spanscore.cli.server_check import check_dsn
    from spanscore.server.default_rules import apply_default_rules

    if apply_default_rules(config):
        print("no rules: key, so serve loads the default rule")
    for line in check_config(config, os.environ):
        print(line)
    print(f"config {args.config or '<defaults>'}: OK")
    status = check_dsn(config, args.dsn, args.role) if args.dsn else 0
    if getattr(args, "keeper", False):
        from spanscore.cli.fleet_check import check_keeper

        status = max(status, check_keeper(config))
    return status


def _judge_check(argv: list[str]) -> int:
    """``spanscore judge check``: the LLM scorers' labelled cases against a judge (see scorers.judge_check)."""
    judge_check = importlib.import_module("spanscore.offline.judge_check")
    return int(judge_check.main(argv, load_judge=lambda path: dict(load_config(path).judge)))


_COMMANDS: dict[str, Callable[[ServiceConfig, argparse.Namespace], int]] = {
    "query": lambda config, args: _query(config, args.sql, args.format),
    "status": lambda config, args: _status(config, args.format),
    "rules": lambda config, args: (
        _operation(config, "rules/preview", args.rule, args.since, args.file, args.format)
        if args.rules_command == "preview"
        else rules_cli.run(
            args.rules_command,
            getattr(args, "file", ""),
            lambda *a, **k: call_api(config, *a, **k),
            no_service(config),
        )
    ),
    "backfill": lambda config, args: _backfill(config, args.rule, args.since, args.cancel, args.format),
    "report": _report,
    "demo": lambda config, args: _demo(config, args.traces, args.hours),
    "migrate": lambda config, args: _migrate(config),
    "config": _config_check,
    "deadletter": _deadletter,
    "runs": lambda config, args: _runs_show(config, args.trace_id, args.format),
}
"""The subcommands that run against a loaded config, other than ``serve``."""


if __name__ == "__main__":
    raise SystemExit(main())
