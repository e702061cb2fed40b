"""Whether an untrusted query may run, decided on the engine's own parse tree.

The query API never reads SQL text itself to decide what a query does. The engine parses the
text (``parseQueryToJSON``, through the query connection, with the text as a bound parameter)
and this module walks the resulting tree against an allowlist: one SELECT (UNION, INTERSECT,
EXCEPT and WITH included), ``SHOW TABLES``, ``DESCRIBE`` of one of spanscore's own tables,
``EXPLAIN`` of an accepted SELECT. Whitespace, comments, quoting and case are the engine's
business: they are gone from the tree. What runs is not the user's text but the engine's
canonical formatting of it (``formatQuerySingleLine``), accepted only when it parses back to the
very tree that was checked, so the statement executed is the statement checked.

Function names are resolved as the engine resolves them (case-insensitive names and aliases from
``system.functions``), so ``FILE``, a backquoted `` `file` `` or an alias all meet the same rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from spanscore.errors import PermanentError
from spanscore.storage.query.allowlist import (
    ALLOWED_COMBINATORS,
    ALLOWED_FUNCTIONS,
    ALLOWED_SYSTEM_TABLES,
    ALLOWED_TABLE_FUNCTIONS,
    PARSER_FORMS,
)
from spanscore.storage.query.costs import check_call

_EXPLAIN_KINDS = frozenset(
    {"EXPLAIN", "EXPLAIN AST", "EXPLAIN SYNTAX", "EXPLAIN PIPELINE", "EXPLAIN QUERY TREE", "EXPLAIN ESTIMATE"}
)
# Node types a read query is made of; any other node (a statement, a SETTINGS list, ...) is refused.
_ALLOWED_NODES = frozenset(
    "SelectWithUnionQuery SelectIntersectExceptQuery SelectQuery ExpressionList Identifier Literal Function "
    "Asterisk QualifiedAsterisk ColumnsListMatcher ColumnsRegexpMatcher QualifiedColumnsListMatcher "
    "QualifiedColumnsRegexpMatcher ColumnsTransformerList ColumnsApplyTransformer ColumnsExceptTransformer "
    "ColumnsReplaceTransformer ColumnsReplaceTransformerReplacement TablesInSelectQuery TablesInSelectQueryElement "
    "TableExpression TableIdentifier TableJoin ArrayJoin Subquery WithElement OrderByElement SampleRatio "
    "WindowDefinition WindowListElement InterpolateElement QueryParameter".split()
)
# Parts of a statement that change where its output goes or how it runs.
_REFUSED_PARTS = {
    "out_file": "INTO OUTFILE is not allowed",
    "compression": "INTO OUTFILE is not allowed",
    "format_ast": "queries may not carry FORMAT: choose the output format with the API's format option",
    "settings": "queries may not carry SETTINGS: the query API sets readonly and its limits itself",
}


@dataclass(frozen=True, slots=True)
class FunctionCatalog:
    """The engine's function names, for resolving a name in a query the way the engine does."""

    exact: Mapping[str, str]
    """Every function name and alias -> the name it resolves to."""
    folded: Mapping[str, str]
    """Lower-cased names of case-insensitive functions -> the name they resolve to."""
    aggregates: frozenset[str]
    table_functions: frozenset[str]
    """Lower-cased table function names."""

    @classmethod
    def from_rows(cls, functions: list[tuple[Any, ...]], table_functions: list[tuple[Any, ...]]) -> FunctionCatalog:
        """Build from ``system.functions`` (name, is_aggregate, case_insensitive, alias_to) and table function names."""
        exact: dict[str, str] = {}
        folded: dict[str, str] = {}
        aggregates: set[str] = set()
        for name, is_aggregate, case_insensitive, alias_to in functions:
            target = alias_to or name
            exact[name] = target
            if case_insensitive:
                folded[name.lower()] = target
            if is_aggregate:
                aggregates.add(name)
        return cls(exact, folded, frozenset(aggregates), frozenset(str(row[0]).lower() for row in table_functions))

    def resolve(self, name: str) -> str | None:
        """The function the engine would call for ``name``, or None when it knows no such function."""
        if name in self.exact:
            return self.exact[name]
        if name.lower() in self.folded:
            return self.folded[name.lower()]
        for suffix in ALLOWED_COMBINATORS:
            if name.endswith(suffix) and len(name) > len(suffix):
                base = self.resolve(name[: -len(suffix)])
                if base is not None and (base in self.aggregates or base.endswith(ALLOWED_COMBINATORS)):
                    return base
        return None


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """What the engine made of one query: its tree, its canonical text and that text's own tree."""

    tree: str
    canonical: str
    canonical_tree: str


_DESCRIBE = re.compile(r"DESCRIBE TABLE (?P<table>.+)", re.DOTALL)


def statement_to_run(parsed: ParsedQuery, describe_tree: str | None, context: CheckContext) -> str:
    """Check the engine's parse of a query and return the statement to execute; raises PermanentError why not.

    ``describe_tree`` is the engine's parse of ``SELECT * FROM <table>`` for a DESCRIBE (whose own
    node the engine cannot print as JSON); None for other statements.
    """
    if parsed.canonical == "SHOW TABLES":
        return "SHOW TABLES"
    if describe_tree is not None:
        return "DESCRIBE TABLE " + _described_table(json.loads(describe_tree), context)
    if parsed.tree != parsed.canonical_tree:
        raise PermanentError("query is not accepted: the engine reads its own formatting of it differently")
    root = json.loads(parsed.tree)
    kind = root.get("type")
    if kind == "ExplainQuery":
        if root.get("kind") not in _EXPLAIN_KINDS:
            raise PermanentError(f"{root.get('kind')} is not allowed; EXPLAIN works on SELECT queries")
        inner = root.get("query") or {}
        if inner.get("type") != "SelectWithUnionQuery":
            raise PermanentError("EXPLAIN is allowed for SELECT queries only")
    elif kind != "SelectWithUnionQuery":
        shown = "SHOW TABLES (without FROM or LIKE)" if kind == "ShowTablesQuery" else str(kind)
        raise PermanentError(
            f"only read queries are allowed (SELECT, WITH, SHOW TABLES, DESCRIBE, EXPLAIN), got {shown!r}"
        )
    check_tree(root, context)
    return parsed.canonical


def wrap(canonical: str) -> str:
    """A SELECT as the one subquery of ``SELECT * FROM (...)``.

    The engine's result caps (max_result_rows, max_result_bytes) miss some outermost SELECTs: one
    without FROM, or a UNION with such an arm (``SELECT arrayJoin(range(10**6))``,
    ``... UNION ALL SELECT 0``). An outer SELECT reading a subquery is always held to them.
    """
    return f"SELECT * FROM ({canonical})"


def wrapped_statement(root: Mapping[str, Any], canonical: str, wrapped_tree: str) -> str:
    """``wrap(canonical)``, once the engine's parse shows it is exactly the checked tree inside ``SELECT *``."""
    try:
        outer = json.loads(wrapped_tree)
        (select,) = outer["list_of_selects"]["children"]
        (star,) = select["select"]["children"]
        (element,) = select["tables"]["children"]
        (inner,) = element["table_expression"]["subquery"]["children"]
        exact = star == {"type": "Asterisk"} and set(select) == {"type", "select", "tables"} and inner == root
    except (KeyError, TypeError, ValueError):
        exact = False
    if not exact:
        raise PermanentError("query is not accepted: the engine reads it differently inside a subquery")
    return wrap(canonical)


def describe_target(canonical: str) -> str | None:
    """For a canonical ``DESCRIBE TABLE x``, the ``SELECT * FROM x`` the engine parses to check ``x``."""
    match = _DESCRIBE.fullmatch(canonical)
    return f"SELECT * FROM {match.group('table')}" if match else None


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What a check needs to know about the engine it runs on."""

    database: str
    databases: frozenset[str]
    """Every database the engine has now (a dotted name starting with one reaches it)."""
    functions: FunctionCatalog


def check_tree(root: Mapping[str, Any], context: CheckContext) -> None:
    """Walk a parse tree; raise PermanentError naming the first thing the query API does not allow."""
    for node, parent_key in _nodes(root, ""):
        kind = node.get("type")
        if kind is not None and kind not in _ALLOWED_NODES and node is not root:
            if kind == "SetQuery":
                raise PermanentError(_REFUSED_PARTS["settings"])
            raise PermanentError(f"query contains a {kind}, which the query API does not allow")
        for key, reason in _REFUSED_PARTS.items():
            if key in node:
                raise PermanentError(reason)
        if node.get("is_outfile_append") or node.get("is_outfile_truncate") or node.get("is_into_outfile_with_stdout"):
            raise PermanentError(_REFUSED_PARTS["out_file"])
        if kind == "Function":
            name = str(node.get("name", ""))
            _check_function(name, parent_key == "table_function", context)
            check_call(context.functions.resolve(name) or name, node, lambda f: _check_function(f, False, context))
        elif kind == "TableIdentifier":
            _check_table(_name_parts(node), context)
        elif kind == "Identifier":
            _check_identifier(_name_parts(node), context)
        for key, value in node.items():
            # APPLY(f) names its function in func_name; any other key that names a function is held to the same rule.
            if "func" in key.lower() and isinstance(value, str):
                _check_function(value, False, context)


def _nodes(value: Any, key: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every dict in the tree with the key it hangs under (``table_function`` marks a table function)."""
    if isinstance(value, dict):
        yield value, key
        for child_key, child in value.items():
            yield from _nodes(child, child_key)
    elif isinstance(value, list):
        for child in value:
            yield from _nodes(child, key)


def _name_parts(node: Mapping[str, Any]) -> list[str]:
    parts = node.get("name_parts")
    return [str(part) for part in parts] if isinstance(parts, list) else [str(node.get("name", ""))]


def _check_function(name: str, as_table: bool, context: CheckContext) -> None:
    """Allow ``name`` only when it resolves to a function on the allowlist (``query_allowlist``)."""
    if as_table:
        if name not in ALLOWED_TABLE_FUNCTIONS:
            allowed = ", ".join(sorted(ALLOWED_TABLE_FUNCTIONS))
            raise PermanentError(f"table function {name}() is not allowed in the query API (allowed: {allowed})")
        return
    if name in PARSER_FORMS:
        return
    resolved = context.functions.resolve(name)
    if resolved is None:
        raise PermanentError(f"unknown function {name}(): not a function the query API knows")
    if resolved not in ALLOWED_FUNCTIONS:
        raise PermanentError(
            f"function {name}() is not allowed in the query API: it is not on the allowlist of pure, read-only "
            "functions (docs/security.md, 'The query API')"
        )


def _check_table(parts: list[str], context: CheckContext) -> None:
    if len(parts) == 1:
        return  # an unqualified name: a WITH name or a table of spanscore's database (the connection's default)
    if len(parts) == 2 and parts[0] == context.database:
        return
    if len(parts) == 2 and parts[0] == "system" and parts[1] in ALLOWED_SYSTEM_TABLES:
        return
    raise PermanentError(
        f"table {'.'.join(parts)} is not allowed: queries read spanscore's database {context.database!r} only"
    )


def _check_identifier(parts: list[str], context: CheckContext) -> None:
    """A dotted name whose first part is another database reaches that database (``x IN system.users``)."""
    if len(parts) < 2:
        return
    first = parts[0]
    others = {name.lower() for name in context.databases if name != context.database}
    if first != context.database and first.lower() in others:
        raise PermanentError(
            f"{'.'.join(parts)} names database {first!r}: queries read spanscore's database "
            f"{context.database!r} only (rename a table alias that clashes with a database name)"
        )


def _described_table(tree: Mapping[str, Any], context: CheckContext) -> str:
    """The one table a DESCRIBE names, as a quoted ``db.table``; refuses anything else."""
    selects = tree.get("list_of_selects", {}).get("children", [])
    try:
        (select,) = selects
        (element,) = select["tables"]["children"]
        identifier = element["table_expression"]["database_and_table_name"]
    except (KeyError, TypeError, ValueError):
        raise PermanentError("DESCRIBE is allowed for one of spanscore's tables only (DESCRIBE TABLE name)") from None
    parts = _name_parts(identifier)
    if len(parts) == 1:
        parts = [context.database, parts[0]]
    if len(parts) != 2 or parts[0] != context.database or set(select) - {"type", "select", "tables"}:
        raise PermanentError("DESCRIBE is allowed for one of spanscore's tables only (DESCRIBE TABLE name)")
    return ".".join(quote_identifier(part) for part in parts)


def quote_identifier(name: str) -> str:
    """A backquoted identifier the engine reads back as exactly ``name``."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def load_catalog(client: Any) -> FunctionCatalog:
    """The engine's function and table function names, read once per connection."""
    functions = client.query("SELECT name, is_aggregate, case_insensitive, alias_to FROM system.functions")
    table_functions = client.query("SELECT name FROM system.table_functions")
    return FunctionCatalog.from_rows(list(functions.result_rows), list(table_functions.result_rows))


def engine_checked_statement(client: Any, sql: str, database: str, catalog: FunctionCatalog) -> str:
    """Have the engine parse ``sql`` (a bound parameter, never spliced), check the tree, return what to run.

    Raises PermanentError for a query that does not parse or is not allowed; the engine's
    own syntax message is kept. ``client`` errors other than parse errors propagate.
    """
    row = client.query(
        "SELECT formatQuerySingleLine({sql:String}), (SELECT groupArray(name) FROM system.databases)",
        parameters={"sql": sql},
    ).result_rows[0]
    canonical, databases = str(row[0]), frozenset(str(name) for name in row[1])
    context = CheckContext(database, databases, catalog)
    target = describe_target(canonical)
    if target is not None:
        described = client.query("SELECT parseQueryToJSON({sql:String})", parameters={"sql": target})
        describe_tree = described.result_rows[0][0]
        return statement_to_run(ParsedQuery("", canonical, ""), str(describe_tree), context)
    trees = client.query(
        "SELECT parseQueryToJSON({sql:String}), parseQueryToJSON({canonical:String})",
        parameters={"sql": sql, "canonical": canonical},
    ).result_rows[0]
    parsed = ParsedQuery(str(trees[0]), canonical, str(trees[1]))
    statement = statement_to_run(parsed, None, context)
    if json.loads(parsed.tree).get("type") != "SelectWithUnionQuery":
        return statement
    wrapped = client.query("SELECT parseQueryToJSON({sql:String})", parameters={"sql": wrap(canonical)})
    return wrapped_statement(json.loads(parsed.tree), canonical, str(wrapped.result_rows[0][0]))
