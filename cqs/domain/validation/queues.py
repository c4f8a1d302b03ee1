"""Queue names and queue attributes: which a client may set, their ranges and stored form.

Owns the queue name rule, the settable and readable queue attributes with their kinds
(integer ranges, booleans, choices, JSON policies), the shape checks of RedrivePolicy and
RedriveAllowPolicy, and AWS's error texts for them; the FIFO-only attributes are `.fifo`'s.
Pure functions: imports `cqs.domain.errors`, the other `cqs.domain.validation` modules and the standard
library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from cqs.domain.errors import InvalidAttributeName, InvalidAttributeValue, InvalidParameterValue
from cqs.domain.validation.limits import (
    MAX_DELAY_SECONDS,
    MAX_RECEIVE_COUNT,
    MAX_VISIBILITY_TIMEOUT,
    MAX_WAIT_TIME_SECONDS,
)
from cqs.domain.validation.text import UnreadableJson, load_json

FIFO_SUFFIX = ".fifo"

# Integer queue attributes and their inclusive ranges.
INTEGER_QUEUE_ATTRIBUTES: Mapping[str, tuple[int, int]] = {
    "DelaySeconds": (0, MAX_DELAY_SECONDS),
    "MaximumMessageSize": (1024, 1_048_576),
    "MessageRetentionPeriod": (60, 1_209_600),
    "ReceiveMessageWaitTimeSeconds": (0, MAX_WAIT_TIME_SECONDS),
    "VisibilityTimeout": (0, MAX_VISIBILITY_TIMEOUT),
    "KmsDataKeyReusePeriodSeconds": (60, 86_400),
    # cqs's own (peek and replay, issue 19; see EXTENSION_QUEUE_ATTRIBUTES)
    "cqs.ConsumedRetentionSeconds": (0, 1_209_600),
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

_QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
_FIFO_QUEUE_NAME_STEM = re.compile(r"[A-Za-z0-9_-]{1,75}")
_PLAIN_INTEGER = re.compile(r"-?[0-9]{1,18}")


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


def is_possible_queue_name(name: str) -> bool:
    """Whether any queue can have `name` (the rule CreateQueue applies, for either type)."""
    stem = name[: -len(FIFO_SUFFIX)] if name.endswith(FIFO_SUFFIX) else None
    if stem is not None:
        return _FIFO_QUEUE_NAME_STEM.fullmatch(stem) is not None
    return _QUEUE_NAME.fullmatch(name) is not None


def normalize_queue_attributes(
    attributes: Mapping[str, str], *, creating: bool, queue_is_fifo: bool = False
) -> dict[str, str]:
    """Checks queue attributes a client sets and returns them in stored form.

    Integers become plain decimal without leading zeros, booleans lowercase, RedrivePolicy
    and RedriveAllowPolicy compact JSON as SQS returns them; Policy and the KMS key id are
    kept as given. Defaults are not filled in here. `FifoQueue` fixes the queue type when
    `creating`; afterwards a standard queue does not know it and a FIFO queue
    (`queue_is_fifo`) takes only `true`, which changes nothing, as in SQS.
    """
    normalized: dict[str, str] = {}
    for name, value in attributes.items():
        if name not in SETTABLE_QUEUE_ATTRIBUTES:
            raise InvalidAttributeName(f"Unknown Attribute {name}.")
        if name in CREATE_ONLY_QUEUE_ATTRIBUTES and not creating:
            if not queue_is_fifo:
                raise InvalidAttributeName(f"Unknown Attribute {name}.")
            if value.lower() != "true":
                raise InvalidAttributeValue(
                    f"Invalid value for the parameter {name}. Reason: Modifying queue type is"
                    " not supported."
                )
            continue
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
        return _canonical_redrive_policy(value)
    elif name == "RedriveAllowPolicy":
        return _canonical_redrive_allow_policy(value)
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


def _compact_json(document: Mapping[str, object]) -> str:
    """JSON as SQS gives policies back: no spaces, the members in SQS's order."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _canonical_redrive_policy(value: str) -> str:
    """The RedrivePolicy as SQS stores and returns it: `maxReceiveCount` a number even
    when given as a string, other members dropped; "" (which clears it) stays ""."""
    policy = _parse_json_object("RedrivePolicy", value)
    if policy is None:
        return value
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
    return _compact_json({"deadLetterTargetArn": target, "maxReceiveCount": count})


def _canonical_redrive_allow_policy(value: str) -> str:
    """The RedriveAllowPolicy as SQS returns it: compact, sourceQueueArns only for byQueue."""
    policy = _parse_json_object("RedriveAllowPolicy", value)
    if policy is None:
        return value
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
        return _compact_json({"redrivePermission": permission, "sourceQueueArns": sources})
    if sources is not None:
        raise _invalid_attribute_value("RedriveAllowPolicy")
    return _compact_json({"redrivePermission": permission})


def validate_attribute_names_for_get(names: Iterable[str]) -> list[str]:
    """The attribute names GetQueueAttributes should report, with `All` expanded.

    Keeps the caller's order and drops repeats. The service leaves out names that do not
    apply to the queue (FIFO attributes of a standard queue, an unset Policy). cqs's own
    attributes (EXTENSION_QUEUE_ATTRIBUTES) are accepted by name; `All` leaves them out.
    """
    requested = list(names)
    for name in requested:
        if name != "All" and name not in READABLE_QUEUE_ATTRIBUTES + EXTENSION_NAMES:
            raise InvalidAttributeName(f"Unknown Attribute {name}.")
    if "All" in requested:
        return list(READABLE_QUEUE_ATTRIBUTES)
    return list(dict.fromkeys(requested))


# --- cqs's own queue attributes (peek and replay, issue 19) --------------------------------
# Settable in CreateQueue and SetQueueAttributes like SQS's (their ranges are in
# INTEGER_QUEUE_ATTRIBUTES) and readable by name, when they are answered with their
# default if unset. `All` answers them only when the queue has them set, so a queue that
# never used them shows exactly SQS's attribute set (docs/compatibility.md, Extensions).
EXTENSION_QUEUE_ATTRIBUTES: Mapping[str, str] = {"cqs.ConsumedRetentionSeconds": "0"}
EXTENSION_NAMES = tuple(EXTENSION_QUEUE_ATTRIBUTES)
