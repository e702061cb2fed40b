"""The one filter engine: YAML conditions compiled once into plain predicates.

Rules (``where:``, ``always.where:``) and the preview / backfill path all call
``parse_filter`` on the configured form and ``Filter.matches*`` on runs, so a
live decision and a backfilled one cannot disagree. Parsing does all the
checking (operators, value types, regular expressions) and reports every
problem with its config path; evaluation is closures over a ``FilterSubject``
and never raises. The language is described in ``docs/sampling.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from spanscore.errors import ConfigError
from spanscore.run import Run
from spanscore.sampling.regex import linear_time_regex
from spanscore.sampling.subject import (
    FIELD_ALIASES,
    RUN_FIELDS,
    FieldValue,
    FilterSubject,
    as_number,
    subject_from_mapping,
    subject_from_run,
)

Predicate = Callable[[FilterSubject], bool]
Getter = Callable[[FilterSubject], FieldValue]
Test = Callable[[FieldValue], bool]
Scalar = str | int | float | bool

COMBINATORS = ("all", "any", "not")
OPERATORS = ("eq", "ne", "in", "regex", "contains", "gt", "gte", "lt", "lte", "exists", "not")
_COMPARISONS: Mapping[str, Callable[[float, float], bool]] = {
    "gt": lambda actual, bound: actual > bound,
    "gte": lambda actual, bound: actual >= bound,
    "lt": lambda actual, bound: actual < bound,
    "lte": lambda actual, bound: actual <= bound,
}


class FilterError(ConfigError):
    """A filter that cannot be compiled; ``problems`` holds one ``(path, message)`` per issue."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(f"{path}: {message}" for path, message in self.problems))


@dataclass(frozen=True, slots=True)
class Filter:
    """A compiled filter; ``source`` is the configured form, kept for display and previews."""

    source: Any
    predicate: Predicate = field(compare=False, repr=False)

    def matches(self, run: Run) -> bool:
        """Whether a live run passes the filter."""
        return self.predicate(subject_from_run(run))

    def matches_mapping(self, row: Mapping[str, Any]) -> bool:
        """Whether a plain mapping (a stored row, see ``subject_from_mapping``) passes the filter."""
        return self.predicate(subject_from_mapping(row))

    def matches_subject(self, subject: FilterSubject) -> bool:
        """Whether an already built subject passes; lets one subject serve many rules."""
        return self.predicate(subject)


MATCH_ALL = Filter(source=None, predicate=lambda subject: True)
"""The filter of a rule without ``where``."""


def parse_filter(raw: object, path: str = "where") -> Filter:
    """Compile the configured form of a filter, or raise ``FilterError`` listing every problem.

    ``None`` and ``{}`` match everything. ``path`` prefixes the messages, for
    example ``rules[0].where``.
    """
    if raw is None:
        return MATCH_ALL
    problems: list[tuple[str, str]] = []
    predicate = _compile_mapping(raw, path, problems)
    if problems:
        raise FilterError(problems)
    return Filter(source=raw, predicate=predicate)


def _compile_mapping(raw: object, path: str, problems: list[tuple[str, str]]) -> Predicate:
    if not isinstance(raw, Mapping):
        problems.append((path, f"expected a mapping of conditions, got {_describe(raw)}"))
        return _never
    parts: list[Predicate] = []
    for key, value in raw.items():
        if not isinstance(key, str) or not key:
            problems.append((path, f"keys must be non-empty strings, got {key!r}"))
        elif key in ("all", "any"):
            parts.append(_compile_group(key, value, _key_path(path, key), problems))
        elif key == "not":
            parts.append(_negate(_compile_mapping(value, f"{path}.not", problems)))
        else:
            test = _compile_condition(key, value, _key_path(path, key), problems)
            parts.append(_on_key(_getter_for(key), test))
    return _all_of(parts)


def _key_path(path: str, key: str) -> str:
    """``path.key``, with a key that has blanks or control characters quoted so messages stay one readable line."""
    if key.isprintable() and not any(character.isspace() for character in key):
        return f"{path}.{key}"
    return f"{path}[{key!r}]"


def _compile_group(kind: str, value: object, path: str, problems: list[tuple[str, str]]) -> Predicate:
    if not isinstance(value, list) or not value:
        problems.append((path, f"expected a non-empty list of conditions, got {_describe(value)}"))
        return _never
    members = [_compile_mapping(item, f"{path}[{index}]", problems) for index, item in enumerate(value)]
    return _all_of(members) if kind == "all" else _any_of(members)


def _compile_condition(key: str, value: object, path: str, problems: list[tuple[str, str]]) -> Test:
    """A test on one key's value: a scalar (equality), a list (any of) or an operator mapping."""
    if value is None:
        problems.append((path, "a bare null is ambiguous; use {exists: false} to match a missing key"))
        return _never_value
    if isinstance(value, list):
        return _compile_any_of(key, value, path, problems)
    if isinstance(value, Mapping):
        return _compile_operators(key, value, path, problems)
    if _check_scalar(value, key, path, problems):
        return _equality(value)
    return _never_value


def _compile_any_of(key: str, values: list[object], path: str, problems: list[tuple[str, str]]) -> Test:
    if not values:
        problems.append((path, "an empty list matches nothing; list at least one value"))
        return _never_value
    tests = [_equality(value) for i, value in enumerate(values) if _check_scalar(value, key, f"{path}[{i}]", problems)]
    return lambda actual: any(test(actual) for test in tests)


def _compile_operators(key: str, operators: Mapping[Any, Any], path: str, problems: list[tuple[str, str]]) -> Test:
    if not operators:
        problems.append((path, f"no operator given; expected one of: {', '.join(OPERATORS)}"))
        return _never_value
    tests: list[Test] = []
    for operator, operand in operators.items():
        if operator not in OPERATORS:
            problems.append((path, f"unknown operator {operator!r} (expected one of: {', '.join(OPERATORS)})"))
            continue
        test = _compile_operator(key, operator, operand, f"{path}.{operator}", problems)
        if test is not None:
            tests.append(test)
    return lambda actual: all(test(actual) for test in tests)


def _compile_operator(
    key: str, operator: str, operand: object, path: str, problems: list[tuple[str, str]]
) -> Test | None:
    if operator == "not":
        inner = _compile_condition(key, operand, path, problems)
        return lambda actual: not inner(actual)
    if operator in ("eq", "ne"):
        if not _check_scalar(operand, key, path, problems):
            return None
        equal = _equality(operand)
        return equal if operator == "eq" else (lambda actual: not equal(actual))
    if operator == "in":
        if not isinstance(operand, list):
            problems.append((path, f"expected a list of values, got {_describe(operand)}"))
            return None
        return _compile_any_of(key, operand, path, problems)
    if operator == "exists":
        if not isinstance(operand, bool):
            problems.append((path, f"expected true or false, got {_describe(operand)}"))
            return None
        return lambda actual: (actual is not None) is operand
    if operator in ("regex", "contains"):
        return _compile_text(operator, operand, path, problems)
    bound = operand
    if isinstance(bound, bool) or not isinstance(bound, int | float):
        problems.append((path, f"expected a number, got {_describe(bound)}"))
        return None
    compare, limit = _COMPARISONS[operator], float(bound)

    def numeric(actual: FieldValue) -> bool:
        number = as_number(actual)
        return number is not None and compare(number, limit)

    return numeric


def _compile_text(operator: str, operand: object, path: str, problems: list[tuple[str, str]]) -> Test | None:
    if not isinstance(operand, str):
        problems.append((path, f"expected a string, got {_describe(operand)}"))
        return None
    if operator == "contains":
        return lambda actual: actual is not None and operand in _text(actual)
    try:
        pattern = linear_time_regex(operand)
    except ValueError as error:
        problems.append((path, str(error)))
        return None
    return lambda actual: actual is not None and pattern.search(_text(actual)) is not None


def _check_scalar(value: object, key: str, path: str, problems: list[tuple[str, str]]) -> TypeGuard[Scalar]:
    if not isinstance(value, str | int | float | bool):
        problems.append((path, f"expected a string, number or boolean, got {_describe(value)}"))
        return False
    if key == "error" and not isinstance(value, bool):
        problems.append((path, f"error is true or false, got {value!r}"))
        return False
    return True


def _equality(expected: Scalar) -> Test:
    """Equality that tolerates attribute values being stored as text ("200" == 200, "true" == True)."""
    if isinstance(expected, bool):
        word = "true" if expected else "false"
        return lambda actual: actual is expected or (isinstance(actual, str) and actual.strip().lower() == word)
    if isinstance(expected, int | float):
        number = float(expected)
        return lambda actual: as_number(actual) == number
    expected_number = as_number(expected)

    def equals_text(actual: FieldValue) -> bool:
        if isinstance(actual, str):
            return actual == expected
        if isinstance(actual, bool):
            return expected.strip().lower() == ("true" if actual else "false")
        return actual is not None and expected_number is not None and actual == expected_number

    return equals_text


def _getter_for(key: str) -> Getter:
    """Resolve a key: ``span.``/``resource.`` prefixes, run fields (and aliases), span and resource attributes."""
    if key.startswith("span."):
        name = key.removeprefix("span.")
        return lambda subject: subject.span_attributes.get(name)
    if key.startswith("resource."):
        name = key.removeprefix("resource.")
        return lambda subject: subject.resource_attributes.get(name)
    field_key = FIELD_ALIASES.get(key, key)
    if field_key in RUN_FIELDS:
        return lambda subject: _first_not_none(
            subject.fields.get(field_key), subject.span_attributes.get(key), subject.resource_attributes.get(key)
        )
    return lambda subject: _first_not_none(subject.span_attributes.get(key), subject.resource_attributes.get(key))


def _first_not_none(*values: FieldValue) -> FieldValue:
    for value in values:
        if value is not None:
            return value
    return None


def _on_key(getter: Getter, test: Test) -> Predicate:
    return lambda subject: test(getter(subject))


def _all_of(parts: list[Predicate]) -> Predicate:
    if len(parts) == 1:
        return parts[0]
    return lambda subject: all(part(subject) for part in parts)


def _negate(inner: Predicate) -> Predicate:
    return lambda subject: not inner(subject)


def _any_of(parts: list[Predicate]) -> Predicate:
    return lambda subject: any(part(subject) for part in parts)


def _text(value: FieldValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _never(subject: FilterSubject) -> bool:
    return False


def _never_value(actual: FieldValue) -> bool:
    return False


def _describe(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)
