"""A ClickHouse server's HTTP interface over this process's embedded engine: a stand-in behind ``clickhouse://``.

No ClickHouse server can be installed where the tests and benches run, yet the server code path (a
``clickhouse://`` DSN, separate owner and query users, a read-only profile, settings sent per request) is
the one deployments use, and the one several replicas share. This serves that path from chDB: each request
is authenticated as one of ``users``, runs on a fresh engine connection with that user's profile applied
(a ``readonly`` profile refuses a different value of any setting, as the server does), and answers in the
format the statement names. It speaks as much of the protocol as clickhouse-connect's HTTP client uses.

One engine per process: the stand-in must be the only chDB user of its process, or use the same path.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlparse

import chdb

_TRANSPORT = {
    "query", "database", "query_id", "session_id", "session_timeout", "session_check", "compress", "decompress",
    "enable_http_compression", "wait_end_of_query", "send_progress_in_http_headers", "default_format", "user",
    "password", "client_protocol_version", "buffer_size", "http_headers_progress_interval_ms",
    "http_wait_end_of_query", "quota_key",
}  # fmt: skip
_FORMAT = re.compile(r"\bFORMAT\s+(\w+)\s*;?\s*$", re.IGNORECASE)
_INSERT = re.compile(r"^\s*INSERT\s", re.IGNORECASE)


@dataclass(frozen=True)
class StandInUser:
    password: str
    settings: Mapping[str, str] = field(default_factory=dict)
    """The user's settings profile; ``readonly`` in it is applied last and pins every other value."""


@dataclass(frozen=True)
class Request:
    user: str
    sql: str
    settings: dict[str, str]


class EngineError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClickHouseStandIn:
    """Serve ``users`` over HTTP on 127.0.0.1 from the embedded engine at ``path``."""

    def __init__(self, path: str, users: Mapping[str, StandInUser]) -> None:
        self.path = path
        self.users = dict(users)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._engine: Any = None
        """A connection held from start to stop. chDB stops its engine when the last connection to a path closes,
        and each request opens and closes its own: without this one, every idle moment stopped the engine, and
        the next request paid its start and found what it held in memory gone (``SYSTEM STOP MERGES``, Memory
        tables), unlike a server."""

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])

    def dsn(self, user: str) -> str:
        """A ``clickhouse://`` DSN for ``user`` (with its password) on this stand-in."""
        return f"clickhouse://{quote(user)}:{quote(self.users[user].password)}@127.0.0.1:{self.port}/"

    def start(self, port: int = 0) -> None:
        os.makedirs(self.path, exist_ok=True)
        self._engine = chdb.connect(self.path)  # type: ignore[no-untyped-call]
        standin = self

        class Handler(_Handler):
            owner = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="clickhouse-standin", daemon=True)
        self._thread.start()

    def stop(self, *, close_engine: bool = True) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._engine is not None and close_engine:
            self._engine.close()
            self._engine = None

    def run(
        self,
        user: str,
        sql: str,
        data: bytes | None,
        settings: dict[str, str],
        database: str,
        bound: dict[str, str] | None = None,
    ) -> bytes:
        """One statement as ``user``; the engine's output in the statement's format (TabSeparated without one)."""
        with self._lock:
            self.requests.append(Request(user, sql, dict(settings)))
        profile = dict(self.users[user].settings)
        readonly = profile.pop("readonly", "0")
        if readonly != "0":
            for name, value in settings.items():
                if str(profile.get(name, value)) != str(value) or name not in profile:
                    raise EngineError(164, f"Cannot modify '{name}' setting in readonly mode. (READONLY)")
        connection = chdb.connect(self.path)  # type: ignore[no-untyped-call]
        infile = None
        try:
            if database:
                _run(connection, f"USE {_identifier(database)}", "TabSeparated")
            for name, value in {**profile, **settings}.items():
                _run(connection, f"SET {_identifier(name)} = {_literal(value)}", "TabSeparated")
            if readonly != "0":
                _run(connection, f"SET readonly = {_literal(readonly)}", "TabSeparated")
            fmt = (found.group(1) if (found := _FORMAT.search(sql)) else "") or "TabSeparated"
            if data is not None and _INSERT.match(sql):
                with tempfile.NamedTemporaryFile(suffix=".rows", delete=False) as handle:
                    handle.write(data)
                    infile = handle.name
                sql = _FORMAT.sub(f"FROM INFILE '{infile}' FORMAT {fmt}", sql)
                fmt = "TabSeparated"
            return bytes(_run(connection, sql, fmt, bound).bytes())
        finally:
            connection.close()
            if infile is not None:
                os.unlink(infile)


def _run(connection: Any, sql: str, fmt: str, bound: dict[str, str] | None = None) -> Any:
    try:
        return connection.query(sql, fmt, params=bound or {})
    except Exception as exc:
        message = str(exc)
        code = re.search(r"Code: (\d+)", message)
        raise EngineError(int(code.group(1)) if code else 1000, message) from None


def _identifier(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise EngineError(62, f"Syntax error: {name!r} is not an identifier")
    return name


def _literal(value: str) -> str:
    return (
        value if re.fullmatch(r"-?\d+(\.\d+)?", value) else "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    )


class _Handler(BaseHTTPRequestHandler):
    owner: ClickHouseStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if urlparse(self.path).path in ("/ping", "/"):
            self._answer(200, b"Ok.\n")
        else:
            self._answer(404, b"not found\n")

    def do_POST(self) -> None:
        params = dict(parse_qsl(urlparse(self.path).query, keep_blank_values=True))
        body = self._body()
        try:
            user = self._user(params)
            if encoding := self.headers.get("Content-Encoding"):
                body = _decompress(body, encoding)
            if self.headers.get_content_type() == "multipart/form-data":  # bound values too long for a URL
                params.update(_form_fields(self.headers.get("Content-Type", ""), body))
                body = b""
            sql, data = _statement(params.get("query", ""), body)
            settings = {k: v for k, v in params.items() if k not in _TRANSPORT and not k.startswith("param_")}
            bound = {k.removeprefix("param_"): v for k, v in params.items() if k.startswith("param_")}
            out = self.owner.run(user, sql, data, settings, params.get("database", ""), bound)
        except EngineError as exc:
            text = str(exc) if str(exc).startswith("Code:") else f"Code: {exc.code}. DB::Exception: {exc}"
            self._answer(500, f"{text}\n".encode(), {"X-ClickHouse-Exception-Code": str(exc.code)})
            return
        summary = {"read_rows": "0", "read_bytes": "0", "written_rows": "0", "written_bytes": "0"}
        headers = {"X-ClickHouse-Summary": json.dumps(summary), "X-ClickHouse-Query-Id": params.get("query_id", "")}
        self._answer(200, out, headers)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers, up to the blank line
            pass
        return b"".join(chunks)

    def _user(self, params: dict[str, str]) -> str:
        name = self.headers.get("X-ClickHouse-User") or params.get("user", "")
        password = self.headers.get("X-ClickHouse-Key") or params.get("password", "")
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            name, _, password = base64.b64decode(auth[6:]).decode().partition(":")
        known = self.owner.users.get(name or "default")
        if known is None or known.password != password:
            raise EngineError(516, f"{name or 'default'}: Authentication failed (AUTHENTICATION_FAILED)")
        return name or "default"

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _statement(query: str, body: bytes) -> tuple[str, bytes | None]:
    """The SQL and an insert's rows: the SQL is the ``query`` parameter, the body's first line, or the body."""
    if query:
        if _INSERT.match(query) and _FORMAT.search(query):
            return query, body
        return (query + " " + body.decode()).strip(), None
    if _INSERT.match(body[:200].decode("utf-8", "replace")):
        head, _, rest = body.partition(b"\n")
        if _FORMAT.search(head.decode()):
            return head.decode(), rest
    return body.decode(), None


def _form_fields(content_type: str, body: bytes) -> dict[str, str]:
    """The named fields of a ``multipart/form-data`` body: the query and its ``param_`` values.

    clickhouse-connect moves bound values there when they are too long for a URL; a server reads them.
    """
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            fields[name] = payload.decode() if isinstance(payload, bytes) else ""
            if len(fields[name]) > MAX_FIELD_VALUE_SIZE:  # a server refuses it, so a reader must bound its values
                raise EngineError(1000, f"Field value too long: {name} over http_max_field_value_size")
    return fields


MAX_FIELD_VALUE_SIZE = 128 * 1024
"""A server's ``http_max_field_value_size`` (its default): the longest form field it reads, e.g. one bound array
of about 3,700 trace ids."""


def _decompress(data: bytes, encoding: str) -> bytes:
    from clickhouse_connect.driver._backend.chdb_backend import _decompress as decompress

    return bytes(decompress(data, encoding))


def users_from_sql(*texts: str) -> dict[str, StandInUser]:
    """The users and profiles that ``deploy/clickhouse``'s statements create, each with password ``CHANGE-ME``.

    Reads ``CREATE SETTINGS PROFILE name SETTINGS k = v [CONST], ...`` and ``CREATE USER name ... SETTINGS
    PROFILE 'name'``: the parts of those files that decide what a connection may do.
    """
    text = re.sub(r"--[^\n]*", "", "\n".join(texts))
    profiles: dict[str, dict[str, str]] = {}
    users: dict[str, StandInUser] = {}
    for statement in (" ".join(chunk.split()) for chunk in text.split(";")):
        profile = re.match(
            r"CREATE SETTINGS PROFILE (?:IF NOT EXISTS )?(\w+)(?: ON CLUSTER \S+)? SETTINGS (.*)$", statement
        )
        if profile:
            pairs = re.findall(r"(\w+) = ('[^']*'|[\w.]+)", profile.group(2))
            profiles[profile.group(1)] = {key: value.strip("'") for key, value in pairs}
        user = re.match(r"CREATE USER (?:IF NOT EXISTS )?(\w+).*?BY '([^']*)'.*?SETTINGS PROFILE '(\w+)'", statement)
        if user:
            users[user.group(1)] = StandInUser(user.group(2), profiles.get(user.group(3), {}))
    return users


def main(argv: list[str] | None = None) -> int:
    """``python -m spanscore.testing.clickhouse_standin PATH USERS.sql...``: serve until SIGTERM.

    Prints ``port N`` once listening, so a parent process (a test, a bench) knows where to point its DSNs.
    """
    import signal
    import sys
    from pathlib import Path

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: python -m spanscore.testing.clickhouse_standin PATH USERS.sql...", file=sys.stderr)
        return 2
    users = users_from_sql(*(Path(name).read_text(encoding="utf-8") for name in args[1:]))
    standin = ClickHouseStandIn(args[0], users)
    standin.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"port {standin.port}", flush=True)
    stop.wait()
    standin.stop(close_engine=False)
    # No interpreter shutdown: the engine's exit with a request thread still inside it hung for 50 minutes
    # once (a fleet test's teardown). Every insert it answered is on disk already; a server killed now loses
    # nothing either.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())


def spawn(path: str, *user_files: str, timeout_s: float = 60.0) -> tuple[Any, int]:
    """The stand-in in a child process of its own (its own engine); ``(process, port)`` once it listens.

    The caller stops it by its PID (``process.terminate()``) when done.
    """
    import subprocess
    import sys
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "spanscore.testing.clickhouse_standin", path, *user_files],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout_s
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("port ") or time.monotonic() > deadline:
        process.kill()
        raise RuntimeError(f"the ClickHouse stand-in did not start: {line!r}")
    return process, int(line.split()[1])


def stop(process: Any, timeout_s: float = 30.0) -> None:
    """Stop a stand-in started by ``spawn``: SIGTERM, then SIGKILL if it has not exited within ``timeout_s``.

    Its engine's shutdown at exit can outlast any fair wait on a loaded machine (seen past 30 s at load 10); a
    stand-in keeps nothing worth a clean stop, and a teardown must not fail a test that passed.
    """
    import subprocess

    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout_s)
