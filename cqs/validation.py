"""SQS request rules: names, limits and formats, each failure raised as a `cqs.errors` class.

Owns the SQS limits (queue names, queue attributes and their ranges, message bodies,
message attributes, batches, tags, receive parameters) and the error texts AWS returns for
them, so that clients see the messages they would see from SQS; and the one character
rule for text (the characters SQS allows in a message body), which every text field of a
request must pass, and the one way JSON text from a client is parsed (bounded depth and
integer length). Pure functions, no I/O: imports only `cqs.model`, `cqs.errors` and the
standard library.
"""

from __future__ import annotations

import decimal
import json
import re
from collections.abc import Iterable, Mapping, Sequence

from cqs.errors import (
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidBatchEntryId,
    InvalidMessageContents,
    InvalidParameterValue,
    MessageTooLong,
    MissingParameter,
    TooManyEntriesInBatchRequest,
    TooManyTags,
)
from cqs.model import MessageAttributeValue

# --- limits (AWS SQS API reference and developer guide quotas) -----------------------------

MAX_QUEUE_NAME_LENGTH = 80
FIFO_SUFFIX = ".fifo"
MAX_DELAY_SECONDS = 900
MAX_VISIBILITY_TIMEOUT = 43_200
MAX_WAIT_TIME_SECONDS = 20
MAX_NUMBER_OF_MESSAGES = 10
MAX_BATCH_ENTRIES = 10
MAX_BATCH_ENTRY_ID_LENGTH = 80
MAX_MESSAGE_ATTRIBUTES = 10
MAX_ATTRIBUTE_NAME_LENGTH = 256
MAX_ATTRIBUTE_TYPE_LENGTH = 256
MAX_NUMBER_PRECISION = 38
MAX_TAGS_PER_QUEUE = 50
MAX_TAG_KEY_LENGTH = 128
MAX_TAG_VALUE_LENGTH = 256
MAX_RECEIVE_COUNT = 1000
# JSON from a client (a request body, a Policy): no SQS document comes near these, and they
# keep parsing and reading it cheap and free of RecursionError.
MAX_JSON_DEPTH = 64
MAX_JSON_INTEGER_DIGITS = 40

# Integer queue attributes and their inclusive ranges.
INTEGER_QUEUE_ATTRIBUTES: Mapping[str, tuple[int, int]] = {
    "DelaySeconds": (0, MAX_DELAY_SECONDS),
    "MaximumMessageSize": (1024, 1_048_576),
    "MessageRetentionPeriod": (60, 1_209_600),
    "ReceiveMessageWaitTimeSeconds": (0, MAX_WAIT_TIME_SECONDS),
    "VisibilityTimeout": (0, MAX_VISIBILITY_TIMEOUT),
    "KmsDataKeyReusePeriodSeconds": (60, 86_400),
}
BOOLEAN_QUEUE_ATTRIBUTES = frozenset(
    {"SqsManagedSseEnabled", "FifoQueue", "ContentBasedDeduplication"}
)
CHOICE_QUEUE_ATTRIBUTES: Mapping[str, frozenset[str]] = {
    "DeduplicationScope": frozenset({"messageGroup", "queue"}),
    "FifoThroughputLimit": frozenset({"perQueue", "perMessageGroupId"}),
}
JSON_QUEUE_ATTRIBUTES = frozenset({"Policy", "RedrivePolicy", "RedriveAllowPolicy"})
FREE_TEXT_QUEUE_ATTRIBUTES = frozenset({"KmsMasterKeyId"})
# FifoQueue fixes the queue type; AWS accepts it only in CreateQueue. The other FIFO
# attributes (ContentBasedDeduplication, DeduplicationScope, FifoThroughputLimit) may
# also be changed by SetQueueAttributes, as the AWS reference documents.
CREATE_ONLY_QUEUE_ATTRIBUTES = frozenset({"FifoQueue"})
SETTABLE_QUEUE_ATTRIBUTES = (
    frozenset(INTEGER_QUEUE_ATTRIBUTES)
    | BOOLEAN_QUEUE_ATTRIBUTES
    | frozenset(CHOICE_QUEUE_ATTRIBUTES)
    | JSON_QUEUE_ATTRIBUTES
    | FREE_TEXT_QUEUE_ATTRIBUTES
)

# What GetQueueAttributes may ask for, in the order SQS documents them ("All" is all of them).
READABLE_QUEUE_ATTRIBUTES: tuple[str, ...] = (
    "Policy",
    "VisibilityTimeout",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
    "ApproximateNumberOfMessagesDelayed",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "RedriveAllowPolicy",
    "SqsManagedSseEnabled",
)

MESSAGE_SYSTEM_ATTRIBUTE_NAMES = frozenset({"AWSTraceHeader"})

_QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
_FIFO_QUEUE_NAME_STEM = re.compile(r"[A-Za-z0-9_-]{1,75}")
_PLAIN_INTEGER = re.compile(r"-?[0-9]{1,18}")
_BATCH_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_RESERVED_ATTRIBUTE_PREFIX = re.compile(r"(aws|amazon)\.", re.IGNORECASE)
_ATTRIBUTE_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.\S+)?")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
# Characters SQS accepts in a message (the XML 1.0 character range); anything else is refused.
_DISALLOWED_CHARACTER = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

_INVALID_CHARACTERS_MESSAGE = (
    "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF"
    " | #xE000 to #xFFFD | #x10000 to #x10FFFF"
)
_NUMBER_LIMITS = (decimal.Decimal("1e-128"), decimal.Decimal("1e126"))


# --- text and JSON from clients -------------------------------------------------------------


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
            f"{subject} is invalid. Reason: {_INVALID_CHARACTERS_MESSAGE}."
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


# --- queues -------------------------------------------------------------------------------


def validate_queue_name(name: str, fifo: bool = False) -> None:
    """1-80 alphanumerics, hyphens and underscores; a FIFO queue's name ends in `.fifo`."""
    if fifo:
        stem = name[: -len(FIFO_SUFFIX)] if name.endswith(FIFO_SUFFIX) else None
        if stem is None or not _FIFO_QUEUE_NAME_STEM.fullmatch(stem):
            raise InvalidParameterValue(
                "The name of a FIFO queue can only include alphanumeric characters, hyphens, or"
                " underscores, must end with .fifo suffix and be 1 to 80 in length."
            )
        return
    if not _QUEUE_NAME.fullmatch(name):
        raise InvalidParameterValue(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
        )


def normalize_queue_attributes(attributes: Mapping[str, str], *, creating: bool) -> dict[str, str]:
    """Checks queue attributes a client sets and returns them in stored form.

    Integers become plain decimal without leading zeros, booleans lowercase; JSON policies
    and the KMS key id are kept as given. Defaults are not filled in here. `FifoQueue` is
    accepted only when `creating`; whether a FIFO queue can be created is the service's call.
    """
    normalized: dict[str, str] = {}
    for name, value in attributes.items():
        if name not in SETTABLE_QUEUE_ATTRIBUTES or (
            name in CREATE_ONLY_QUEUE_ATTRIBUTES and not creating
        ):
            raise InvalidAttributeName(f"Unknown Attribute {name}.")
        normalized[name] = _normalize_queue_attribute(name, value)
    return normalized


def _normalize_queue_attribute(name: str, value: str) -> str:
    if name in INTEGER_QUEUE_ATTRIBUTES:
        low, high = INTEGER_QUEUE_ATTRIBUTES[name]
        if not _PLAIN_INTEGER.fullmatch(value) or not low <= int(value) <= high:
            raise _invalid_attribute_value(name)
        return str(int(value))
    if name in BOOLEAN_QUEUE_ATTRIBUTES:
        if value.lower() not in ("true", "false"):
            raise _invalid_attribute_value(name)
        return value.lower()
    if name in CHOICE_QUEUE_ATTRIBUTES:
        if value not in CHOICE_QUEUE_ATTRIBUTES[name]:
            raise _invalid_attribute_value(name)
        return value
    if name == "Policy":
        _parse_json_object(name, value)
    elif name == "RedrivePolicy":
        _validate_redrive_policy(value)
    elif name == "RedriveAllowPolicy":
        _validate_redrive_allow_policy(value)
    return value


def _invalid_attribute_value(name: str) -> InvalidAttributeValue:
    return InvalidAttributeValue(f"Invalid value for the parameter {name}.")


def _parse_json_object(name: str, value: str) -> dict[str, object] | None:
    """The JSON object in `value`; None for "" (which clears the attribute)."""
    if value == "":
        return None
    try:
        parsed = load_json(value)
    except UnreadableJson:
        raise _invalid_attribute_value(name) from None
    if not isinstance(parsed, dict):
        raise _invalid_attribute_value(name)
    return parsed


def _validate_redrive_policy(value: str) -> None:
    policy = _parse_json_object("RedrivePolicy", value)
    if policy is None:
        return
    target = policy.get("deadLetterTargetArn")
    if not isinstance(target, str) or not target:
        raise InvalidParameterValue(
            f"Value {value} for parameter RedrivePolicy is invalid. Reason: Redrive policy"
            " does not contain mandatory attribute: deadLetterTargetArn."
        )
    count = policy.get("maxReceiveCount")
    if isinstance(count, str) and _PLAIN_INTEGER.fullmatch(count):
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RECEIVE_COUNT:
        raise InvalidParameterValue(
            f"Value {value} for parameter RedrivePolicy is invalid. Reason: Invalid value for"
            f" maxReceiveCount: {policy.get('maxReceiveCount')}, valid values are from 1 to"
            f" {MAX_RECEIVE_COUNT} both inclusive."
        )


def _validate_redrive_allow_policy(value: str) -> None:
    policy = _parse_json_object("RedriveAllowPolicy", value)
    if policy is None:
        return
    permission = policy.get("redrivePermission")
    sources = policy.get("sourceQueueArns")
    if permission not in ("allowAll", "denyAll", "byQueue"):
        raise _invalid_attribute_value("RedriveAllowPolicy")
    if permission == "byQueue":
        if (
            not isinstance(sources, list)
            or not 1 <= len(sources) <= 10
            or not all(isinstance(arn, str) and arn for arn in sources)
        ):
            raise _invalid_attribute_value("RedriveAllowPolicy")
    elif sources is not None:
        raise _invalid_attribute_value("RedriveAllowPolicy")


def validate_attribute_names_for_get(names: Iterable[str]) -> list[str]:
    """The attribute names GetQueueAttributes should report, with `All` expanded.

    Keeps the caller's order and drops repeats. The service leaves out names that do not
    apply to the queue (FIFO attributes of a standard queue, an unset Policy).
    """
    requested = list(names)
    for name in requested:
        if name != "All" and name not in READABLE_QUEUE_ATTRIBUTES:
            raise InvalidAttributeName(f"Unknown Attribute {name}.")
    if "All" in requested:
        return list(READABLE_QUEUE_ATTRIBUTES)
    return list(dict.fromkeys(requested))


# --- messages -----------------------------------------------------------------------------


def validate_message_body(body: str | None) -> None:
    """A body is at least one character, all of them in the SQS character set."""
    if not body:
        raise MissingParameter("The request must contain the parameter MessageBody.")
    if _DISALLOWED_CHARACTER.search(body):
        raise InvalidMessageContents(_INVALID_CHARACTERS_MESSAGE)


def validate_message_attributes(attributes: Mapping[str, MessageAttributeValue]) -> None:
    """At most ten attributes, each with a valid name, data type and value."""
    if len(attributes) > MAX_MESSAGE_ATTRIBUTES:
        raise InvalidParameterValue(
            f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum"
            f" [{MAX_MESSAGE_ATTRIBUTES}]."
        )
    for name, value in attributes.items():
        _validate_attribute_name(name)
        _validate_attribute_value(name, value)


def _validate_attribute_name(name: str) -> None:
    if len(name) > MAX_ATTRIBUTE_NAME_LENGTH:
        raise InvalidParameterValue(
            f"Message (user) attribute name must be at most {MAX_ATTRIBUTE_NAME_LENGTH}"
            " characters long."
        )
    if not _ATTRIBUTE_NAME.fullmatch(name):
        raise InvalidParameterValue(
            f"The message attribute name '{name}' is invalid. Attribute name can contain A-Z,"
            " a-z, 0-9, underscore (_), hyphen (-), and period (.) characters."
        )
    if _RESERVED_ATTRIBUTE_PREFIX.match(name) or name.startswith(".") or name.endswith("."):
        raise InvalidParameterValue(
            "You can't use message attribute names beginning with 'AWS.' or 'Amazon.'. These"
            " strings are reserved for internal use. Additionally, they cannot start or end"
            " with '.'."
        )
    if ".." in name:
        raise InvalidParameterValue(
            f"The message attribute name '{name}' is invalid. Attribute name cannot contain"
            " two consecutive periods."
        )


def _validate_attribute_value(name: str, value: MessageAttributeValue) -> None:
    data_type = value.data_type
    if not data_type:
        raise InvalidParameterValue(
            f"The message attribute '{name}' must contain non-empty message attribute type."
        )
    if len(data_type) > MAX_ATTRIBUTE_TYPE_LENGTH:
        raise InvalidParameterValue(
            f"The type of message attribute '{name}' must be at most"
            f" {MAX_ATTRIBUTE_TYPE_LENGTH} characters long."
        )
    type_match = _ATTRIBUTE_DATA_TYPE.fullmatch(data_type)
    if type_match is None or _DISALLOWED_CHARACTER.search(data_type):
        raise InvalidParameterValue(
            f"The message attribute '{name}' has an invalid message attribute type, the set of"
            " supported type prefixes is Binary, Number, and String."
        )
    base_type = type_match.group(1)
    if base_type == "Binary":
        if value.string_value is not None:
            raise _wrong_value_field(name, data_type, "Binary")
        if not value.binary_value:
            raise _empty_attribute_value(name, data_type)
        return
    if value.binary_value is not None:
        raise _wrong_value_field(name, data_type, "String")
    if not value.string_value:
        raise _empty_attribute_value(name, data_type)
    if _DISALLOWED_CHARACTER.search(value.string_value):
        raise InvalidParameterValue(_INVALID_CHARACTERS_MESSAGE)
    if base_type == "Number":
        _validate_number(name, value.string_value)


def _wrong_value_field(name: str, data_type: str, field: str) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"The message attribute '{name}' with type '{data_type}' must use field '{field}'."
    )


def _empty_attribute_value(name: str, data_type: str) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"The message attribute '{name}' must contain non-empty message attribute value for"
        f" message attribute type '{data_type}'."
    )


def _validate_number(name: str, text: str) -> None:
    """SQS numbers: up to 38 significant digits, magnitude between 10^-128 and 10^126 (or 0)."""
    if not _NUMBER.fullmatch(text):
        raise InvalidParameterValue(f"Could not cast message attribute '{name}' value to number.")
    number = decimal.Decimal(text)
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")
    low, high = _NUMBER_LIMITS
    out_of_range = number != 0 and not low <= number.copy_abs() <= high
    if len(digits) > MAX_NUMBER_PRECISION or out_of_range:
        raise InvalidParameterValue(
            f"Value {text} for message attribute '{name}' of type 'Number' is invalid. Reason:"
            f" a number has at most {MAX_NUMBER_PRECISION} digits of precision and lies"
            " between 10^-128 and 10^126."
        )


def validate_message_system_attributes(attributes: Mapping[str, MessageAttributeValue]) -> None:
    """Only AWSTraceHeader, a non-empty String."""
    for name, value in attributes.items():
        if name not in MESSAGE_SYSTEM_ATTRIBUTE_NAMES:
            raise InvalidParameterValue(
                f"Message system attribute name '{name}' is invalid. The only supported message"
                " system attribute is AWSTraceHeader."
            )
        if value.data_type != "String":
            raise InvalidParameterValue(
                f"Message system attribute '{name}' has an invalid data type"
                f" '{value.data_type}'; its type must be String."
            )
        if value.binary_value is not None:
            raise _wrong_value_field(name, value.data_type, "String")
        if not value.string_value:
            raise _empty_attribute_value(name, value.data_type)
        if _DISALLOWED_CHARACTER.search(value.string_value):
            raise InvalidParameterValue(_INVALID_CHARACTERS_MESSAGE)


def message_size(body: str, attributes: Mapping[str, MessageAttributeValue]) -> int:
    """Bytes SQS counts against MaximumMessageSize: body plus each attribute's name, type and value.

    System attributes do not count. Counted before the characters are checked (a batch
    over the limit fails whole), so a lone surrogate counts as its three bytes, not a crash.
    """
    size = _utf8_length(body)
    for name, value in attributes.items():
        size += _utf8_length(name) + _utf8_length(value.data_type)
        if value.string_value is not None:
            size += _utf8_length(value.string_value)
        if value.binary_value is not None:
            size += len(value.binary_value)
    return size


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def validate_message_size(size: int, maximum: int) -> None:
    if size > maximum:
        raise MessageTooLong(
            f"One or more parameters are invalid. Reason: Message must be shorter than {maximum}"
            " bytes."
        )


def message_attribute_selected(name: str, requested: Sequence[str]) -> bool:
    """Whether ReceiveMessage's MessageAttributeNames ask for the attribute `name`.

    `All` and `.*` select everything; `prefix.*` selects names starting with `prefix.`;
    anything else must equal the name.
    """
    for pattern in requested:
        if pattern in ("All", ".*") or pattern == name:
            return True
        if pattern.endswith(".*") and name.startswith(pattern[:-1]):
            return True
    return False


# --- batches ------------------------------------------------------------------------------


def validate_batch_entries(ids: Sequence[str], action: str = "SendMessageBatch") -> None:
    """One to ten entries with distinct, well-formed ids. `action` names the batch action."""
    if not ids:
        raise EmptyBatchRequest(
            f"There should be at least one {action}RequestEntry in the request."
        )
    if len(ids) > MAX_BATCH_ENTRIES:
        raise TooManyEntriesInBatchRequest(
            f"Maximum number of entries per request are {MAX_BATCH_ENTRIES}. You have sent"
            f" {len(ids)}."
        )
    seen: set[str] = set()
    for entry_id in ids:
        if not _BATCH_ENTRY_ID.fullmatch(entry_id):
            raise InvalidBatchEntryId(
                "A batch entry id can only contain alphanumeric characters, hyphens and"
                f" underscores. It can be at most {MAX_BATCH_ENTRY_ID_LENGTH} letters long."
            )
        if entry_id in seen:
            raise BatchEntryIdsNotDistinct(f"Id {entry_id} repeated.")
        seen.add(entry_id)


def validate_batch_size(total_size: int, maximum: int) -> None:
    """The entries of a send batch together may not exceed `maximum` bytes."""
    if total_size > maximum:
        raise BatchRequestTooLong(
            f"Batch requests cannot be longer than {maximum} bytes. You have sent {total_size}"
            " bytes."
        )


# --- tags ---------------------------------------------------------------------------------


def validate_tags(
    tags: Mapping[str, str], existing_keys: Iterable[str] = (), queue_name: str = ""
) -> None:
    """Keys of 1-128 characters, values of 0-256, and at most 50 tags on the queue afterwards.

    Keys and values hold only the characters SQS allows in message bodies (anything else
    would come back altered in XML). `existing_keys` are the queue's current tag keys;
    re-tagging one of them replaces it.
    """
    for key, value in tags.items():
        _validate_tag_key(key)
        if len(value) > MAX_TAG_VALUE_LENGTH:
            raise InvalidParameterValue(
                f"Tag values must be between 0 and {MAX_TAG_VALUE_LENGTH} characters in length."
            )
        validate_text(value, "Tags")
    if len(set(existing_keys) | set(tags)) > MAX_TAGS_PER_QUEUE:
        raise TooManyTags(f"Too many tags added for queue {queue_name}.")


def validate_tag_keys(keys: Sequence[str]) -> None:
    """UntagQueue's keys: at least one, each 1-128 characters."""
    if not keys:
        raise MissingParameter("The request must contain the parameter TagKeys.")
    for key in keys:
        _validate_tag_key(key)


def _validate_tag_key(key: str) -> None:
    if not 1 <= len(key) <= MAX_TAG_KEY_LENGTH:
        raise InvalidParameterValue(
            f"Tag keys must be between 1 and {MAX_TAG_KEY_LENGTH} characters in length."
        )
    validate_text(key, "TagKey")


# --- per-request parameters ---------------------------------------------------------------


def validate_delay_seconds(value: int) -> None:
    if not 0 <= value <= MAX_DELAY_SECONDS:
        raise InvalidParameterValue(
            f"Value {value} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be"
            f" >= 0 and <= {MAX_DELAY_SECONDS}."
        )


def validate_visibility_timeout(value: int) -> None:
    if not 0 <= value <= MAX_VISIBILITY_TIMEOUT:
        raise InvalidParameterValue(
            f"Value {value} for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and"
            f" <= {MAX_VISIBILITY_TIMEOUT}, if provided."
        )


def validate_max_number_of_messages(value: int) -> None:
    if not 1 <= value <= MAX_NUMBER_OF_MESSAGES:
        raise InvalidParameterValue(
            f"Value {value} for parameter MaxNumberOfMessages is invalid. Reason: Must be between"
            f" 1 and {MAX_NUMBER_OF_MESSAGES}, if provided."
        )


def validate_wait_time_seconds(value: int) -> None:
    if not 0 <= value <= MAX_WAIT_TIME_SECONDS:
        raise InvalidParameterValue(
            f"Value {value} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and"
            f" <= {MAX_WAIT_TIME_SECONDS}, if provided."
        )


# --- FIFO queues --------------------------------------------------------------------------

FIFO_ONLY_QUEUE_ATTRIBUTES = frozenset(
    {"ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}
)
FIFO_QUEUE_DEFAULTS: Mapping[str, str] = {
    "FifoQueue": "true",
    "ContentBasedDeduplication": "false",
    "DeduplicationScope": "queue",
    "FifoThroughputLimit": "perQueue",
}
MAX_FIFO_IDENTIFIER_LENGTH = 128
# MessageGroupId, MessageDeduplicationId, ReceiveRequestAttemptId: alphanumerics and
# punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~), 1 to 128 characters.
_FIFO_IDENTIFIER = re.compile(r"[A-Za-z0-9!-/:-@\[-`{-~]{1,128}")


def validate_fifo_identifier(value: str, parameter: str) -> None:
    if not _FIFO_IDENTIFIER.fullmatch(value):
        raise InvalidParameterValue(
            f"Value {value} for parameter {parameter} is invalid. Reason: {parameter} can only"
            " include alphanumeric and punctuation characters. 1 to 128 in length."
        )


def validate_queue_type_attributes(attributes: Mapping[str, str], fifo: bool) -> None:
    """FIFO-only attributes are unknown to a standard queue; a FIFO queue's
    FifoThroughputLimit=perMessageGroupId needs DeduplicationScope=messageGroup."""
    if not fifo:
        for name in attributes:
            if name in FIFO_ONLY_QUEUE_ATTRIBUTES:
                raise InvalidAttributeName(f"Unknown Attribute {name}.")
        return
    if (
        attributes.get("FifoThroughputLimit") == "perMessageGroupId"
        and attributes.get("DeduplicationScope") != "messageGroup"
    ):
        raise InvalidAttributeValue(
            "Invalid value for the parameter FifoThroughputLimit. Reason: perMessageGroupId"
            " is allowed only when the value for DeduplicationScope is messageGroup."
        )


def validate_fifo_send(
    group_id: str | None,
    deduplication_id: str | None,
    delay_seconds: int | None,
    content_based_deduplication: bool,
) -> None:
    """What SendMessage to a FIFO queue needs: a group id, a deduplication id unless the
    queue deduplicates by content, and no per-message delay."""
    if group_id is None:
        raise MissingParameter("The request must contain the parameter MessageGroupId.")
    validate_fifo_identifier(group_id, "MessageGroupId")
    if deduplication_id is not None:
        validate_fifo_identifier(deduplication_id, "MessageDeduplicationId")
    elif not content_based_deduplication:
        raise InvalidParameterValue(
            "The queue should either have ContentBasedDeduplication enabled or"
            " MessageDeduplicationId provided explicitly"
        )
    if delay_seconds:
        raise InvalidParameterValue(
            f"Value {delay_seconds} for parameter DelaySeconds is invalid. Reason: The request"
            " include parameter that is not valid for this queue type."
        )
