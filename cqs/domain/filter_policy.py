"""Filter policies on message attributes, in Amazon SNS's filter-policy JSON syntax.

Owns reading a policy (`parse`, which refuses a bad one with InvalidParameterValue and
says why) and deciding whether a message's attributes match it (`FilterPolicy.matches`).
A policy is a JSON object: each key names a message attribute, and its value is a list of
conditions, any of which may match (OR); every key must match (AND). Conditions:

- `"red"`: the attribute is a String equal to "red"; `42`: a Number equal to 42;
- `{"prefix": "bl"}`, `{"suffix": "ue"}`, `{"equals-ignore-case": "RED"}` on Strings;
- `{"numeric": [">", 0, "<=", 100]}` (one or two comparisons; `"="` alone) on Numbers;
- `{"exists": true}` / `{"exists": false}`: the attribute is present / absent;
- `{"anything-but": "x"}`, `{"anything-but": ["x", 1]}`, `{"anything-but": {"prefix": "x"}}`:
  present and none of those.

As in SNS, an attribute the message lacks matches only `{"exists": false}`; a
`String.Array` attribute (a JSON array in its string value) matches when any element does.
Pure: imports `cqs.domain.errors`, `cqs.domain.model` and the standard library.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.model import MessageAttributeValue

MAX_KEYS = 5  # SNS: at most five attribute names per policy
MAX_COMBINATIONS = 150  # SNS: the product of the value-list lengths
MAX_POLICY_BYTES = 256 * 1024
_NUMERIC_LIMIT = Decimal(1_000_000_000)  # SNS: numbers from -1e9 to 1e9
_COMPARISONS: Mapping[str, Callable[[Decimal, Decimal], bool]] = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}

# An attribute value as conditions see it: (is_number, text, number or None); None = absent.
_Value = tuple[bool, str, Decimal | None]
Condition = Callable[[list[_Value] | None], bool]


class FilterPolicyError(InvalidParameterValue):
    """A filter policy that is not valid SNS filter-policy JSON (what is wrong, in words)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Invalid parameter: FilterPolicy: {reason}")


@dataclass(frozen=True)
class FilterPolicy:
    """A parsed policy: attribute name -> its conditions (any of which may match)."""

    text: str
    conditions: Mapping[str, Sequence[Condition]]

    def matches(self, attributes: Mapping[str, MessageAttributeValue]) -> bool:
        for name, conditions in self.conditions.items():
            values = _values_of(attributes.get(name))
            if not any(condition(values) for condition in conditions):
                return False
        return True


def parse(text: str) -> FilterPolicy:
    """The policy `text` holds; FilterPolicyError (InvalidParameterValue) if it is not one."""
    if len(text.encode()) > MAX_POLICY_BYTES:
        raise FilterPolicyError(f"the policy is longer than {MAX_POLICY_BYTES} bytes")
    try:
        document = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    except (ValueError, RecursionError) as exc:
        raise FilterPolicyError("it is not valid JSON") from exc
    if not isinstance(document, dict) or not document:
        raise FilterPolicyError("it must be a JSON object naming at least one attribute")
    if len(document) > MAX_KEYS:
        raise FilterPolicyError(f"it names more than {MAX_KEYS} attributes")
    conditions: dict[str, list[Condition]] = {}
    combinations = 1
    for name, listed in document.items():
        if name.startswith("$"):
            raise FilterPolicyError(f"operator {name} is not supported")
        if not isinstance(listed, list) or not listed:
            raise FilterPolicyError(f"the value of {name} must be a non-empty JSON array")
        conditions[name] = [_condition(name, item) for item in listed]
        combinations *= len(listed)
    if combinations > MAX_COMBINATIONS:
        raise FilterPolicyError(f"it has more than {MAX_COMBINATIONS} combinations of values")
    return FilterPolicy(text, conditions)


# --- reading conditions -----------------------------------------------------------------------

def _condition(name: str, item: object) -> Condition:
    if isinstance(item, bool) or item is None:
        raise FilterPolicyError(f"{name}: {json.dumps(item)} is not a string, number or operator")
    if isinstance(item, str):
        return _any_value(lambda value: not value[0] and value[1] == item)
    if isinstance(item, Decimal):
        number = _policy_number(name, item)
        return _any_value(lambda value: value[2] is not None and value[2] == number)
    if not isinstance(item, dict) or len(item) != 1:
        raise FilterPolicyError(f"{name}: an operator must be an object with exactly one key")
    operator, operand = next(iter(item.items()))
    if operator == "exists":
        if not isinstance(operand, bool):
            raise FilterPolicyError(f"{name}: exists takes true or false")
        return lambda values: (values is not None) == operand
    if operator == "prefix":
        text = _operand_text(name, operator, operand)
        return _any_value(lambda value: not value[0] and value[1].startswith(text))
    if operator == "suffix":
        text = _operand_text(name, operator, operand)
        return _any_value(lambda value: not value[0] and value[1].endswith(text))
    if operator == "equals-ignore-case":
        text = _operand_text(name, operator, operand).casefold()
        return _any_value(lambda value: not value[0] and value[1].casefold() == text)
    if operator == "numeric":
        check = _numeric(name, operand)
        return _any_value(lambda value: value[2] is not None and check(value[2]))
    if operator == "anything-but":
        excluded = _anything_but(name, operand)
        return lambda values: values is not None and not any(excluded(v) for v in values)
    raise FilterPolicyError(f"{name}: unrecognized operator {operator}")


def _any_value(test: Callable[[_Value], bool]) -> Condition:
    return lambda values: values is not None and any(test(value) for value in values)


def _operand_text(name: str, operator: str, operand: object) -> str:
    if not isinstance(operand, str) or not operand:
        raise FilterPolicyError(f"{name}: {operator} takes a non-empty string")
    return operand


def _policy_number(name: str, number: Decimal) -> Decimal:
    if not -_NUMERIC_LIMIT <= number <= _NUMERIC_LIMIT:
        raise FilterPolicyError(f"{name}: numbers must be between -1e9 and 1e9")
    return number


def _numeric(name: str, operand: object) -> Callable[[Decimal], bool]:
    if not isinstance(operand, list) or len(operand) not in (2, 4):
        raise FilterPolicyError(f"{name}: numeric takes one or two [operator, number] pairs")
    checks: list[tuple[str, Decimal]] = []
    for index in range(0, len(operand), 2):
        comparison, bound = operand[index], operand[index + 1]
        if comparison not in _COMPARISONS or isinstance(bound, bool) \
                or not isinstance(bound, Decimal):
            raise FilterPolicyError(
                f"{name}: numeric wants an operator (=, <, <=, >, >=) followed by a number"
            )
        checks.append((comparison, _policy_number(name, bound)))
    if len(checks) == 2:
        (low_op, low), (high_op, high) = checks
        if low_op not in (">", ">=") or high_op not in ("<", "<=") or low >= high:
            raise FilterPolicyError(
                f"{name}: a numeric range is a lower bound (> or >=) then a greater upper"
                " bound (< or <=)"
            )
    return lambda number: all(_COMPARISONS[op](number, bound) for op, bound in checks)


def _anything_but(name: str, operand: object) -> Callable[[_Value], bool]:
    """What anything-but excludes: a test on one value."""
    if isinstance(operand, dict):
        if len(operand) != 1 or "prefix" not in operand:
            raise FilterPolicyError(f"{name}: anything-but takes a value, a list or a prefix")
        text = _operand_text(name, "anything-but prefix", operand["prefix"])
        return lambda value: not value[0] and value[1].startswith(text)
    listed = operand if isinstance(operand, list) else [operand]
    if not listed:
        raise FilterPolicyError(f"{name}: anything-but takes a non-empty list")
    if any(not isinstance(item, (str, Decimal)) for item in listed):
        raise FilterPolicyError(f"{name}: anything-but lists only strings and numbers")
    strings = {item for item in listed if isinstance(item, str)}
    numbers = {_policy_number(name, item) for item in listed if isinstance(item, Decimal)}
    return lambda value: (value[2] in numbers) if value[0] else (value[1] in strings)


# --- reading message attributes ---------------------------------------------------------------

def _values_of(attribute: MessageAttributeValue | None) -> list[_Value] | None:
    """The value(s) an attribute offers to conditions; None when the message lacks it.

    Binary attributes offer no value to compare (only `exists` sees them)."""
    if attribute is None:
        return None
    kind = attribute.data_type.split(".", 1)[0]
    text = attribute.string_value
    if text is None:
        return []
    if attribute.data_type == "String.Array":
        return _array_values(text)
    if kind == "Number":
        return [(True, text, _number(text))]
    if kind == "String":
        return [(False, text, None)]
    return []


def _array_values(text: str) -> list[_Value]:
    try:
        items = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    except (ValueError, RecursionError):
        return [(False, text, None)]
    if not isinstance(items, list):
        return [(False, text, None)]
    values: list[_Value] = []
    for item in items:
        if isinstance(item, str):
            values.append((False, item, None))
        elif isinstance(item, Decimal):
            values.append((True, str(item), item))
    return values


def _number(text: str) -> Decimal | None:
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    return number if math.isfinite(number) else None
