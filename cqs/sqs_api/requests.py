"""One frozen request type per SQS action, each with a query reader and a JSON reader.

Owns how each action's parameters are spelled on the wire: the JSON member names of the SQS
model (`Attributes`, `MessageAttributes`, `Entries`, `tags`...) and the query protocol's
flattened names (`Attribute.1.Name`, `MessageAttribute.1.Value.StringValue`,
`SendMessageBatchRequestEntry.1.Id`, `Tag.1.Key`, `TagKey.1`, `AttributeName.1`...).
Readers check only presence and types (MissingParameter, InvalidParameterValue for a value
of the wrong type or a non-integer); SQS limits are the service's to check.

Imports `cqs.model` and `cqs.errors` only: never aiohttp, the service or storage.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, Self, TypeVar

from cqs.errors import InvalidParameterValue, MissingParameter
from cqs.model import MessageAttributeValue, ReceiveRequest, SendRequest

QueryParams = Mapping[str, str]
JsonBody = Mapping[str, object]


class ActionRequest(Protocol):
    """What every request type offers: a reader per protocol."""

    @classmethod
    def from_query(cls, params: QueryParams) -> Self: ...

    @classmethod
    def from_json(cls, body: JsonBody) -> Self: ...


AnyRequest = TypeVar("AnyRequest", bound=ActionRequest)


# --- query protocol helpers ---------------------------------------------------------------

def _missing(name: str) -> MissingParameter:
    return MissingParameter(f"The request must contain the parameter {name}.")


def _q_required(params: QueryParams, name: str) -> str:
    value = params.get(name)
    if value is None:
        raise _missing(name)
    return value


def _q_int(params: QueryParams, name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    return _integer(value, name)


def _q_required_int(params: QueryParams, name: str) -> int:
    value = _q_int(params, name)
    if value is None:
        raise _missing(name)
    return value


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


def _q_indexed(params: QueryParams, prefix: str) -> list[tuple[int, str, str]]:
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


def _q_list(params: QueryParams, *prefixes: str) -> tuple[str, ...]:
    """`Prefix.1`, `Prefix.2`... in index order, over every spelling in `prefixes`."""
    values: list[str] = []
    for prefix in prefixes:
        items = sorted((index, value) for index, rest, value in _q_indexed(params, prefix)
                       if rest == "")
        values.extend(value for _, value in items)
    return tuple(dict.fromkeys(values))  # one of each, first spelling's order


def _q_groups(params: QueryParams, prefix: str) -> list[dict[str, str]]:
    """The sub-parameters of `prefix.1.*`, `prefix.2.*`... in index order."""
    groups: dict[int, dict[str, str]] = {}
    for index, rest, value in _q_indexed(params, prefix):
        if rest:
            groups.setdefault(index, {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def _q_string_map(
    params: QueryParams, prefix: str, key_name: str, value_name: str
) -> dict[str, str]:
    """`Attribute.1.Name`/`Attribute.1.Value` pairs; also the unindexed legacy pair."""
    pairs = _q_groups(params, prefix)
    legacy = {
        rest: value for key, value in params.items()
        for rest in (key_name, value_name) if key == f"{prefix}.{rest}"
    }
    if legacy:
        pairs.append(legacy)
    result: dict[str, str] = {}
    for pair in pairs:
        if key_name not in pair:
            raise _missing(f"{prefix}.N.{key_name}")
        if value_name not in pair:
            raise _missing(f"{prefix}.N.{value_name}")
        result[pair[key_name]] = pair[value_name]
    return result


def _q_message_attributes(
    params: QueryParams, prefix: str
) -> dict[str, MessageAttributeValue]:
    result: dict[str, MessageAttributeValue] = {}
    for group in _q_groups(params, prefix):
        name = group.get("Name")
        if name is None:
            raise _missing(f"{prefix}.N.Name")
        data_type = group.get("Value.DataType")
        if not data_type:
            raise _missing(f"{prefix}.N.Value.DataType")
        binary = group.get("Value.BinaryValue")
        result[name] = MessageAttributeValue(
            data_type=data_type,
            string_value=group.get("Value.StringValue"),
            binary_value=None if binary is None else _base64(binary, f"{prefix}.{name}"),
        )
    return result


def _base64(text: str, name: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise InvalidParameterValue(
            f"The binary value of {name} is not valid base64."
        ) from exc


# --- JSON protocol helpers ----------------------------------------------------------------

def _wrong_type(name: str, expected: str) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"Value for parameter {name} is invalid. Reason: must be {expected}."
    )


def _j_str(body: JsonBody, name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong_type(name, "a string")
    return value


def _j_required_str(body: JsonBody, name: str) -> str:
    value = _j_str(body, name)
    if value is None:
        raise _missing(name)
    return value


def _j_int(body: JsonBody, name: str) -> int | None:
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


def _j_required_int(body: JsonBody, name: str) -> int:
    value = _j_int(body, name)
    if value is None:
        raise _missing(name)
    return value


def _j_str_list(body: JsonBody, name: str) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _wrong_type(name, "a list of strings")
    return tuple(value)


def _j_str_map(body: JsonBody, name: str) -> dict[str, str]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise _wrong_type(name, "a map of strings")
    return dict(value)


def _j_object(value: object, name: str) -> JsonBody:
    if not isinstance(value, dict):
        raise _wrong_type(name, "an object")
    return value


def _j_objects(body: JsonBody, name: str) -> list[JsonBody]:
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type(name, "a list")
    return [_j_object(item, name) for item in value]


def _j_message_attributes(body: JsonBody, name: str) -> dict[str, MessageAttributeValue]:
    value = body.get(name)
    if value is None:
        return {}
    result: dict[str, MessageAttributeValue] = {}
    for attribute_name, raw in _j_object(value, name).items():
        attribute = _j_object(raw, f"{name}.{attribute_name}")
        data_type = _j_str(attribute, "DataType")
        if not data_type:
            raise _missing(f"{name}.{attribute_name}.DataType")
        binary = _j_str(attribute, "BinaryValue")
        result[attribute_name] = MessageAttributeValue(
            data_type=data_type,
            string_value=_j_str(attribute, "StringValue"),
            binary_value=None if binary is None else _base64(binary, f"{name}.{attribute_name}"),
        )
    return result


# --- shared parts ---------------------------------------------------------------------------

def _send_from_query(params: QueryParams) -> SendRequest:
    return SendRequest(
        body=_q_required(params, "MessageBody"),
        delay_seconds=_q_int(params, "DelaySeconds"),
        message_attributes=_q_message_attributes(params, "MessageAttribute"),
        system_attributes=_q_message_attributes(params, "MessageSystemAttribute"),
        message_group_id=params.get("MessageGroupId"),
        message_deduplication_id=params.get("MessageDeduplicationId"),
    )


def _send_from_json(body: JsonBody) -> SendRequest:
    return SendRequest(
        body=_j_required_str(body, "MessageBody"),
        delay_seconds=_j_int(body, "DelaySeconds"),
        message_attributes=_j_message_attributes(body, "MessageAttributes"),
        system_attributes=_j_message_attributes(body, "MessageSystemAttributes"),
        message_group_id=_j_str(body, "MessageGroupId"),
        message_deduplication_id=_j_str(body, "MessageDeduplicationId"),
    )


# --- queues ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CreateQueueRequest:
    queue_name: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            queue_name=_q_required(params, "QueueName"),
            attributes=_q_string_map(params, "Attribute", "Name", "Value"),
            tags=_q_string_map(params, "Tag", "Key", "Value"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            queue_name=_j_required_str(body, "QueueName"),
            attributes=_j_str_map(body, "Attributes"),
            tags=_j_str_map(body, "tags"),  # lower-case in the SQS model
        )


@dataclass(frozen=True, slots=True)
class GetQueueUrlRequest:
    queue_name: str
    queue_owner_account_id: str | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueName"), params.get("QueueOwnerAWSAccountId"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueName"), _j_str(body, "QueueOwnerAWSAccountId"))


@dataclass(frozen=True, slots=True)
class ListQueuesRequest:
    queue_name_prefix: str | None = None
    max_results: int | None = None
    next_token: str | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            params.get("QueueNamePrefix"),
            _q_int(params, "MaxResults"),
            params.get("NextToken"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            _j_str(body, "QueueNamePrefix"),
            _j_int(body, "MaxResults"),
            _j_str(body, "NextToken"),
        )


@dataclass(frozen=True, slots=True)
class QueueUrlRequest:
    """The actions whose only parameter is the queue: DeleteQueue, PurgeQueue, ListQueueTags."""

    queue_url: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"))


@dataclass(frozen=True, slots=True)
class DeleteQueueRequest(QueueUrlRequest):
    pass


@dataclass(frozen=True, slots=True)
class PurgeQueueRequest(QueueUrlRequest):
    pass


@dataclass(frozen=True, slots=True)
class ListQueueTagsRequest(QueueUrlRequest):
    pass


@dataclass(frozen=True, slots=True)
class GetQueueAttributesRequest:
    queue_url: str
    attribute_names: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"), _q_list(params, "AttributeName"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _j_str_list(body, "AttributeNames"))


@dataclass(frozen=True, slots=True)
class SetQueueAttributesRequest:
    queue_url: str
    attributes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            _q_required(params, "QueueUrl"),
            _q_string_map(params, "Attribute", "Name", "Value"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _j_str_map(body, "Attributes"))


@dataclass(frozen=True, slots=True)
class TagQueueRequest:
    queue_url: str
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"), _q_string_map(params, "Tag", "Key", "Value"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _j_str_map(body, "Tags"))


@dataclass(frozen=True, slots=True)
class UntagQueueRequest:
    queue_url: str
    tag_keys: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"), _q_list(params, "TagKey"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _j_str_list(body, "TagKeys"))


# --- messages -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SendMessageRequest:
    queue_url: str
    message: SendRequest

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"), _send_from_query(params))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _send_from_json(body))


@dataclass(frozen=True, slots=True)
class SendMessageBatchRequest:
    queue_url: str
    entries: tuple[tuple[str, SendRequest], ...]  # (entry id, message)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        entries = _q_groups(params, "SendMessageBatchRequestEntry")
        return cls(
            _q_required(params, "QueueUrl"),
            tuple((_q_required(entry, "Id"), _send_from_query(entry)) for entry in entries),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        entries = _j_objects(body, "Entries")
        return cls(
            _j_required_str(body, "QueueUrl"),
            tuple((_j_required_str(entry, "Id"), _send_from_json(entry)) for entry in entries),
        )


@dataclass(frozen=True, slots=True)
class ReceiveMessageRequest:
    queue_url: str
    receive: ReceiveRequest

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        max_number = _q_int(params, "MaxNumberOfMessages")
        return cls(
            _q_required(params, "QueueUrl"),
            ReceiveRequest(
                max_number_of_messages=1 if max_number is None else max_number,
                visibility_timeout=_q_int(params, "VisibilityTimeout"),
                wait_time_seconds=_q_int(params, "WaitTimeSeconds"),
                # The model gives both lists the XML name AttributeName; accept the
                # member-named spelling as well.
                system_attribute_names=_q_list(
                    params, "AttributeName", "MessageSystemAttributeName"
                ),
                message_attribute_names=_q_list(params, "MessageAttributeName"),
                receive_request_attempt_id=params.get("ReceiveRequestAttemptId"),
            ),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        max_number = _j_int(body, "MaxNumberOfMessages")
        legacy = _j_str_list(body, "AttributeNames")
        current = _j_str_list(body, "MessageSystemAttributeNames")
        return cls(
            _j_required_str(body, "QueueUrl"),
            ReceiveRequest(
                max_number_of_messages=1 if max_number is None else max_number,
                visibility_timeout=_j_int(body, "VisibilityTimeout"),
                wait_time_seconds=_j_int(body, "WaitTimeSeconds"),
                system_attribute_names=tuple(dict.fromkeys(legacy + current)),
                message_attribute_names=_j_str_list(body, "MessageAttributeNames"),
                receive_request_attempt_id=_j_str(body, "ReceiveRequestAttemptId"),
            ),
        )


@dataclass(frozen=True, slots=True)
class DeleteMessageRequest:
    queue_url: str
    receipt_handle: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"), _q_required(params, "ReceiptHandle"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _j_required_str(body, "ReceiptHandle"))


@dataclass(frozen=True, slots=True)
class DeleteMessageBatchRequest:
    queue_url: str
    entries: tuple[tuple[str, str], ...]  # (entry id, receipt handle)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        entries = _q_groups(params, "DeleteMessageBatchRequestEntry")
        return cls(
            _q_required(params, "QueueUrl"),
            tuple(
                (_q_required(entry, "Id"), _q_required(entry, "ReceiptHandle"))
                for entry in entries
            ),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        entries = _j_objects(body, "Entries")
        return cls(
            _j_required_str(body, "QueueUrl"),
            tuple(
                (_j_required_str(entry, "Id"), _j_required_str(entry, "ReceiptHandle"))
                for entry in entries
            ),
        )


@dataclass(frozen=True, slots=True)
class ChangeMessageVisibilityRequest:
    queue_url: str
    receipt_handle: str
    visibility_timeout: int

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            _q_required(params, "QueueUrl"),
            _q_required(params, "ReceiptHandle"),
            _q_required_int(params, "VisibilityTimeout"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            _j_required_str(body, "QueueUrl"),
            _j_required_str(body, "ReceiptHandle"),
            _j_required_int(body, "VisibilityTimeout"),
        )


@dataclass(frozen=True, slots=True)
class ChangeMessageVisibilityBatchRequest:
    queue_url: str
    entries: tuple[tuple[str, str, int], ...]  # (entry id, receipt handle, timeout)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        entries = _q_groups(params, "ChangeMessageVisibilityBatchRequestEntry")
        return cls(
            _q_required(params, "QueueUrl"),
            tuple(
                (
                    _q_required(entry, "Id"),
                    _q_required(entry, "ReceiptHandle"),
                    _q_required_int(entry, "VisibilityTimeout"),
                )
                for entry in entries
            ),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        entries = _j_objects(body, "Entries")
        return cls(
            _j_required_str(body, "QueueUrl"),
            tuple(
                (
                    _j_required_str(entry, "Id"),
                    _j_required_str(entry, "ReceiptHandle"),
                    _j_required_int(entry, "VisibilityTimeout"),
                )
                for entry in entries
            ),
        )


# --- dead-letter queues, move tasks and permissions ------------------------------------------

@dataclass(frozen=True, slots=True)
class ListDeadLetterSourceQueuesRequest:
    queue_url: str
    max_results: int | None = None
    next_token: str | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            _q_required(params, "QueueUrl"),
            _q_int(params, "MaxResults"),
            params.get("NextToken"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            _j_required_str(body, "QueueUrl"),
            _j_int(body, "MaxResults"),
            _j_str(body, "NextToken"),
        )


@dataclass(frozen=True, slots=True)
class AddPermissionRequest:
    queue_url: str
    label: str
    account_ids: tuple[str, ...]
    actions: tuple[str, ...]

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            _q_required(params, "QueueUrl"),
            _q_required(params, "Label"),
            _q_list(params, "AWSAccountId"),
            _q_list(params, "ActionName"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            _j_required_str(body, "QueueUrl"),
            _j_required_str(body, "Label"),
            _j_str_list(body, "AWSAccountIds"),
            _j_str_list(body, "Actions"),
        )


@dataclass(frozen=True, slots=True)
class RemovePermissionRequest:
    queue_url: str
    label: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "QueueUrl"), _q_required(params, "Label"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "QueueUrl"), _j_required_str(body, "Label"))


@dataclass(frozen=True, slots=True)
class StartMessageMoveTaskRequest:
    source_arn: str
    destination_arn: str | None = None
    max_number_of_messages_per_second: int | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            _q_required(params, "SourceArn"),
            params.get("DestinationArn") or None,
            _q_int(params, "MaxNumberOfMessagesPerSecond"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            _j_required_str(body, "SourceArn"),
            _j_str(body, "DestinationArn") or None,
            _j_int(body, "MaxNumberOfMessagesPerSecond"),
        )


@dataclass(frozen=True, slots=True)
class ListMessageMoveTasksRequest:
    source_arn: str
    max_results: int | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "SourceArn"), _q_int(params, "MaxResults"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "SourceArn"), _j_int(body, "MaxResults"))


@dataclass(frozen=True, slots=True)
class CancelMessageMoveTaskRequest:
    task_handle: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(_q_required(params, "TaskHandle"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(_j_required_str(body, "TaskHandle"))
