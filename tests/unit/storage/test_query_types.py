"""Every aggregate a type string names is found, however it is spelled; a spelling it cannot read is refused."""

from __future__ import annotations

import pytest

from spanscore.errors import PermanentError
from spanscore.storage.query.costs import check_type


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("AggregateFunction(groupArrayInsertAt, UInt64)", ["groupArrayInsertAt"]),
        ("aggregatefunction(groupArrayInsertAt, UInt64)", ["groupArrayInsertAt"]),
        ("AggregateFunction(1, `groupArrayInsertAt`, UInt64)", ["groupArrayInsertAt"]),
        ('AggregateFunction( 7 , "groupArrayInsertAt", UInt64)', ["groupArrayInsertAt"]),
        ("Map(String, Array(SimpleAggregateFunction(any, UInt64)))", ["any"]),
        ("AggregateFunction(quantile(0.5), Float64)", ["quantile"]),
        ("Tuple(AggregateFunction UInt8, b AggregateFunction(uniq, UInt8))", ["uniq"]),
        ("Nullable(String)", []),
    ],
)
def test_each_aggregate_a_type_names_is_checked(text: str, named: list[str]) -> None:
    seen: list[str] = []
    check_type(text, seen.append)
    assert seen == named


@pytest.mark.parametrize(
    "text",
    [
        "AggregateFunction(/* hidden */ groupArrayInsertAt, UInt64)",
        "AggregateFunction\u200b(groupArrayInsertAt, UInt64)",
        "AggregateFunction(1.0, groupArrayInsertAt, UInt64)",
        "AggregateFunction()",
    ],
)
def test_a_type_whose_function_cannot_be_read_is_refused(text: str) -> None:
    with pytest.raises(PermanentError, match="cannot tell which function"):
        check_type(text, lambda name: None)
