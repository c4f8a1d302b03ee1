"""Every member of every SQS operation given a value of the wrong type gives a clear 400
(never a 500), over JSON and the query protocol; generated from botocore's SQS model.

The query protocol carries only text, so there the checks are the ones text can fail: an
integer that is not a number and a binary value that is not base64, both
InvalidParameterValue, as SQS answers them. JSON can carry any type: a string where a number
belongs, a number where a string, list, map or structure belongs. cqs answers those
InvalidParameterValue; SQS's JSON front end may answer them as a SerializationException,
so either is accepted, but always with status 400.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.model import Shape

from tests.wire.model.baselines import Placeholder, operation_names, path_name, valid_request
from tests.wire.model.wire import Members, Scene, operation, send, send_json_as_is

_WRONG_JSON = {"string": 12345, "integer": "twelve", "boolean": "yes", "list": "x",
               "map": ["x"], "structure": "x", "blob": 12345}
_WRONG_QUERY = {"integer": "twelve", "blob": "not base64!"}
_JSON_CODES = {"InvalidParameterValue", "SerializationException"}


def _members(shape: Shape, value: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """(path, type) of every member present in `value` and of every absent top-level one."""
    found: list[tuple[tuple[Any, ...], str]] = []
    if shape.type_name == "structure":
        present = value if isinstance(value, dict) else {}
        for name, member in shape.members.items():
            if name in present or not path:
                found.append(((*path, name), member.type_name))
            if name in present:
                found.extend(_members(member, present[name], (*path, name)))
    elif shape.type_name == "list" and isinstance(value, list) and value:
        found.extend(_members(shape.member, value[0], (*path, 0)))
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            found.extend(_members(shape.value, item, (*path, key)))
    return found


def _with(request: Members, path: tuple[Any, ...], value: Any) -> Members:
    holder: Any = request
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return request


def _cases(wire: str) -> list[Any]:
    wrong = _WRONG_JSON if wire == "json" else _WRONG_QUERY
    cases = []
    for action in operation_names():
        request = valid_request(action, Placeholder())
        for path, type_name in _members(operation("json", action).input_shape, request, ()):
            if type_name in wrong:
                cases.append(pytest.param(action, path, wrong[type_name],
                                          id=f"{path_name(action, path)}:{type_name}"))
    return cases


@pytest.mark.parametrize(("action", "path", "value"), _cases("json"))
def test_a_json_member_of_the_wrong_type_is_a_clear_400(
    scene: Scene, action: str, path: tuple[Any, ...], value: Any
) -> None:
    members = _with(valid_request(action, scene), path, value)
    answer = send_json_as_is(scene.endpoint, action, members)

    assert answer.status == 400 and answer.code in _JSON_CODES, str(answer)


@pytest.mark.parametrize(("action", "path", "value"), _cases("query"))
def test_a_query_integer_or_binary_that_cannot_be_read_is_invalid_parameter_value(
    scene: Scene, action: str, path: tuple[Any, ...], value: Any
) -> None:
    members = _with(valid_request(action, scene), path, value)
    answer = send(scene.endpoint, "query", action, members)

    assert (answer.status, answer.code) == (400, "InvalidParameterValue"), str(answer)
