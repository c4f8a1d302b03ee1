"""How one parameter is read from a request, in each protocol: the readers every request type uses.

Owns the wire shapes both protocols decode to (`QueryParams`, `JsonBody`), the `ActionRequest`
protocol every request type follows (`QueueActionRequest` when it names a queue), and the
field readers: the query protocol's flattened names (`Attribute.1.Name`,
`MessageAttribute.1.Value.StringValue`, `TagKey.1`...) and the JSON members (strings,
integers, lists, maps, objects). They check only presence and types (MissingParameter,
InvalidParameterValue for a value of the wrong type or a non-integer). A required list or
map is present when the request names it at all: in JSON even empty (`[]`, `{}`); in the
query protocol by an entry, or by the bare name with an empty value, which is how botocore
sends an empty list.

Imports `cqs.domain.model` and `cqs.domain.errors` only: never aiohttp, the service or storage.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Protocol, Self, TypedDict, TypeVar

from cqs.domain.errors import InvalidParameterValue, MissingParameter
from cqs.domain.model import MessageAttributeValue

QueryParams = Mapping[str, str]
JsonBody = Mapping[str, object]


class ActionRequest(Protocol):
    """What every request type offers: a reader per protocol."""

    @classmethod
    def from_query(cls, params: QueryParams) -> Self: ...

    @classmethod
    def from_json(cls, body: JsonBody) -> Self: ...


class QueueActionRequest(ActionRequest, Protocol):
    """A request type of an action on the one queue its `QueueUrl` names."""

    @property
    def queue_url(self) -> str: ...


AnyRequest = TypeVar("AnyRequest", bound=ActionRequest)
Member = TypeVar("Member")  # what a field reader returns


def missing_parameter(name: str) -> MissingParameter:
    return MissingParameter(f"The request must contain the parameter {name}.")


# An optionally signed run of ASCII digits; at most 18 significant ones (every SQS integer
# fits), so that no huge number is converted (slow, and refused by Python past 4300 digits).
_INTEGER = re.compile(r"\s*([+-]?)0*([0-9]{1,18})\s*")


def _integer(value: str, name: str) -> int:
    match = _INTEGER.fullmatch(value)
    if match is None:
        shown = value if len(value) <= 40 else value[:20] + "..."
        raise InvalidParameterValue(
            f"Value {shown} for parameter {name} is invalid. Reason: must be an integer of at"
            " most 18 digits."
        )
    sign, digits = match.groups()
    return int(sign + digits)


def _base64(text: str, name: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise InvalidParameterValue(
            f"The binary value of {name} is not valid base64."
        ) from exc


# --- query protocol -------------------------------------------------------------------------

def query_required(params: QueryParams, name: str) -> str:
    value = params.get(name)
    if value is None:
        raise missing_parameter(name)
    return value


def query_int(params: QueryParams, name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    return _integer(value, name)


def query_required_int(params: QueryParams, name: str) -> int:
    value = query_int(params, name)
    if value is None:
        raise missing_parameter(name)
    return value


class PageParameters(TypedDict):
    """A paged list action's page, by its request type's field names: how many at most, and
    the token of where the previous page ended."""

    max_results: int | None
    next_token: str | None


def query_page(params: QueryParams) -> PageParameters:
    return PageParameters(
        max_results=query_int(params, "MaxResults"), next_token=params.get("NextToken")
    )


def _query_indexed(params: QueryParams, prefix: str) -> list[tuple[int, str, str]]:
    """(index, rest, value) for every `prefix.<index>[.<rest>]` parameter."""
    found: list[tuple[int, str, str]] = []
    head = prefix + "."
    for key, value in params.items():
        if not key.startswith(head):
            continue
        index, _, rest = key[len(head):].partition(".")
        if index.isdigit():
            found.append((int(index), rest, value))
    return found


def query_list(params: QueryParams, *prefixes: str) -> tuple[str, ...]:
    """`Prefix.1`, `Prefix.2`... in index order. One prefix: every value, repeats kept, as
    the JSON protocol's lists keep them (so OverLimit counts 8 ActionName values alike).
    Several (a legacy and a current name of one list): merged, one of each."""
    values: list[str] = []
    for prefix in prefixes:
        items = sorted((index, value) for index, rest, value in _query_indexed(params, prefix)
                       if rest == "")
        values.extend(value for _, value in items)
    return tuple(values) if len(prefixes) == 1 else tuple(dict.fromkeys(values))


def query_has(params: QueryParams, prefix: str) -> bool:
    """Whether the request names the list or map `prefix` (an entry, or the bare name)."""
    head = prefix + "."
    return prefix in params or any(key.startswith(head) for key in params)


def query_required_list(params: QueryParams, prefix: str) -> tuple[str, ...]:
    if not query_has(params, prefix):
        raise missing_parameter(prefix + ".N")
    return query_list(params, prefix)


def query_groups(params: QueryParams, prefix: str) -> list[dict[str, str]]:
    """The sub-parameters of `prefix.1.*`, `prefix.2.*`... in index order."""
    groups: dict[int, dict[str, str]] = {}
    for index, rest, value in _query_indexed(params, prefix):
        if rest:
            groups.setdefault(index, {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def query_string_map(
    params: QueryParams, prefix: str, key_name: str, value_name: str
) -> dict[str, str]:
    """`Attribute.1.Name`/`Attribute.1.Value` pairs; also the unindexed legacy pair."""
    pairs = query_groups(params, prefix)
    legacy = {
        rest: value for key, value in params.items()
        for rest in (key_name, value_name) if key == f"{prefix}.{rest}"
    }
    if legacy:
        pairs.append(legacy)
    result: dict[str, str] = {}
    for pair in pairs:
        if key_name not in pair:
            raise missing_parameter(f"{prefix}.N.{key_name}")
        if value_name not in pair:
            raise missing_parameter(f"{prefix}.N.{value_name}")
        result[pair[key_name]] = pair[value_name]
    return result


def query_required_string_map(
    params: QueryParams, prefix: str, key_name: str, value_name: str
) -> dict[str, str]:
    if not query_has(params, prefix):
        raise missing_parameter(f"{prefix}.N.{key_name}")
    return query_string_map(params, prefix, key_name, value_name)


def query_message_attributes(
    params: QueryParams, prefix: str
) -> dict[str, MessageAttributeValue]:
    result: dict[str, MessageAttributeValue] = {}
    for group in query_groups(params, prefix):
        name = group.get("Name")
        if name is None:
            raise missing_parameter(f"{prefix}.N.Name")
        data_type = group.get("Value.DataType")
        if not data_type:
            raise missing_parameter(f"{prefix}.N.Value.DataType")
        binary = group.get("Value.BinaryValue")
        result[name] = MessageAttributeValue(
            data_type=data_type,
            string_value=group.get("Value.StringValue"),
            binary_value=None if binary is None else _base64(binary, f"{prefix}.{name}"),
        )
    return result


# --- JSON protocol --------------------------------------------------------------------------

def _wrong_type(name: str, expected: str) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"Value for parameter {name} is invalid. Reason: must be {expected}."
    )


def json_str(body: JsonBody, name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong_type(name, "a string")
    return value


def json_required_str(body: JsonBody, name: str) -> str:
    value = json_str(body, name)
    if value is None:
        raise missing_parameter(name)
    return value


def json_int(body: JsonBody, name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise _wrong_type(name, "an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):  # lenient: some hand-written clients quote numbers
        return _integer(value, name)
    raise _wrong_type(name, "an integer")


def json_required_int(body: JsonBody, name: str) -> int:
    value = json_int(body, name)
    if value is None:
        raise missing_parameter(name)
    return value


def json_page(body: JsonBody) -> PageParameters:
    return PageParameters(
        max_results=json_int(body, "MaxResults"), next_token=json_str(body, "NextToken")
    )


def json_str_list(body: JsonBody, name: str) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _wrong_type(name, "a list of strings")
    return tuple(value)


class AttributeNames(TypedDict):
    """The attributes a receive (or a peek) asks to see, by ReceiveRequest's (and
    PeekRequest's) field names."""

    system_attribute_names: tuple[str, ...]
    message_attribute_names: tuple[str, ...]


def json_attribute_names(body: JsonBody) -> AttributeNames:
    """The attributes a receive (or peek) asks for; the system ones are the legacy
    AttributeNames and the current MessageSystemAttributeNames together, each name once."""
    legacy = json_str_list(body, "AttributeNames")
    current = json_str_list(body, "MessageSystemAttributeNames")
    return AttributeNames(
        system_attribute_names=tuple(dict.fromkeys(legacy + current)),
        message_attribute_names=json_str_list(body, "MessageAttributeNames"),
    )


def json_str_map(body: JsonBody, name: str) -> dict[str, str]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise _wrong_type(name, "a map of strings")
    return dict(value)


def _json_object(value: object, name: str) -> JsonBody:
    if not isinstance(value, dict):
        raise _wrong_type(name, "an object")
    return value


def json_objects(body: JsonBody, name: str) -> list[JsonBody]:
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type(name, "a list")
    return [_json_object(item, name) for item in value]


def _json_required(read: Callable[[JsonBody, str], Member]) -> Callable[[JsonBody, str], Member]:
    """`read` for a member the request must name: null counts as absent, `[]` or `{}` not."""

    def read_required(body: JsonBody, name: str) -> Member:
        if body.get(name) is None:
            raise missing_parameter(name)
        return read(body, name)

    return read_required


json_required_str_list = _json_required(json_str_list)
json_required_str_map = _json_required(json_str_map)
json_required_objects = _json_required(json_objects)


def json_message_attributes(body: JsonBody, name: str) -> dict[str, MessageAttributeValue]:
    value = body.get(name)
    if value is None:
        return {}
    result: dict[str, MessageAttributeValue] = {}
    for attribute_name, raw in _json_object(value, name).items():
        attribute = _json_object(raw, f"{name}.{attribute_name}")
        data_type = json_str(attribute, "DataType")
        if not data_type:
            raise missing_parameter(f"{name}.{attribute_name}.DataType")
        binary = json_str(attribute, "BinaryValue")
        result[attribute_name] = MessageAttributeValue(
            data_type=data_type,
            string_value=json_str(attribute, "StringValue"),
            binary_value=None if binary is None else _base64(binary, f"{name}.{attribute_name}"),
        )
    return result
