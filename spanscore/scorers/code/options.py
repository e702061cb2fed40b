"""Option checks for the built-in scorers' factories: clear messages naming the option."""

from __future__ import annotations

from typing import Any


def require_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"option {name} must be true or false, got {value!r}")
    return value


def optional_str(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"option {name} must be a string, got {value!r}")
    return value


def optional_str_list(name: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"option {name} must be a list of strings, got {value!r}")
    return tuple(value)
