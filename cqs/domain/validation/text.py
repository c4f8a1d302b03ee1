"""The one character rule for text from clients, and the one way their JSON is parsed.

Owns the characters SQS allows in a message body (the XML 1.0 character range), which every
text field of a request must pass, with the error text AWS gives; and `load_json`, JSON
parsed with bounded depth and integer length. Pure functions: imports `cqs.domain.errors`,
`.limits` and the standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.validation.limits import MAX_JSON_DEPTH, MAX_JSON_INTEGER_DIGITS

# Characters SQS accepts in a message (the XML 1.0 character range); anything else is refused.
_DISALLOWED_CHARACTER = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

INVALID_CHARACTERS_MESSAGE = (
    "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF"
    " | #xE000 to #xFFFD | #x10000 to #x10FFFF"
)


def is_sqs_text(value: str) -> bool:
    """Whether every character of `value` is one SQS allows in a message body."""
    return _DISALLOWED_CHARACTER.search(value) is None


def validate_text(value: str, parameter: str, *, is_name: bool = False) -> None:
    """The one character rule for text fields: the characters SQS allows in message bodies.

    A lone UTF-16 surrogate (which JSON can carry but UTF-8 cannot) is outside the set too.
    With `is_name`, `value` is a member name inside `parameter` (a map key, a form name).
    """
    if not is_sqs_text(value):
        subject = f"A name in {parameter}" if is_name else f"Value for parameter {parameter}"
        raise InvalidParameterValue(
            f"{subject} is invalid. Reason: {INVALID_CHARACTERS_MESSAGE}."
        )


class UnreadableJson(ValueError):
    """JSON text refused by `load_json`; `reason` completes "The <document> ..." for a client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def load_json(text: str) -> object:
    """`text` parsed as JSON, refusing nesting deeper than MAX_JSON_DEPTH and integers longer
    than MAX_JSON_INTEGER_DIGITS digits (converting huge ones is slow, and Python refuses
    past 4300 digits). Raises UnreadableJson, whose reason names no parser internals."""
    try:
        parsed = json.loads(text, parse_int=_bounded_json_integer)
    except UnreadableJson:
        raise
    except RecursionError:
        raise _too_deep() from None
    except json.JSONDecodeError as exc:
        raise UnreadableJson(
            f"is not valid JSON (line {exc.lineno}, column {exc.colno})."
        ) from None
    if _json_depth(parsed) > MAX_JSON_DEPTH:
        raise _too_deep()
    return parsed


def _too_deep() -> UnreadableJson:
    return UnreadableJson(f"is nested more than {MAX_JSON_DEPTH} levels deep.")


def _bounded_json_integer(digits: str) -> int:
    if len(digits.lstrip("-").lstrip("0")) > MAX_JSON_INTEGER_DIGITS:
        raise UnreadableJson(f"has an integer of more than {MAX_JSON_INTEGER_DIGITS} digits.")
    return int(digits)


def _json_depth(value: object) -> int:
    """Nesting depth of parsed JSON (a scalar is 0), without recursion."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        pending.extend((child, depth + 1) for child in children)
    return deepest
