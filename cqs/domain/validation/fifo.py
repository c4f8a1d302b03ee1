"""What FIFO queues add: their attributes and defaults, group and deduplication ids, and
what a send to one needs.

Owns the FIFO-only queue attributes (unknown to a standard queue), the FIFO defaults, the
identifier rule of MessageGroupId, MessageDeduplicationId and ReceiveRequestAttemptId, and
AWS's error texts for them. Pure functions: imports `cqs.domain.errors` and the standard library
only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cqs.domain.errors import (
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidParameterValue,
    MissingParameter,
)

FIFO_ONLY_QUEUE_ATTRIBUTES = frozenset(
    {"ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}
)
FIFO_QUEUE_DEFAULTS: Mapping[str, str] = {
    "FifoQueue": "true",
    "ContentBasedDeduplication": "false",
    "DeduplicationScope": "queue",
    "FifoThroughputLimit": "perQueue",
}
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


def validate_fifo_requirements(
    group_id: str | None,
    deduplication_id: str | None,
    content_based_deduplication: bool,
    *,
    in_batch: bool = False,
) -> None:
    """What every message to a FIFO queue must carry: a group id, and a deduplication id
    unless the queue deduplicates by content. SQS refuses a whole SendMessageBatch when
    one entry lacks them, so a batch checks this for every entry before anything else.
    A missing group id is MissingParameter for SendMessage but InvalidParameterValue, in
    the same words, for a batch entry (as AWS answers each)."""
    if group_id is None:
        missing = "The request must contain the parameter MessageGroupId."
        raise InvalidParameterValue(missing) if in_batch else MissingParameter(missing)
    if deduplication_id is None and not content_based_deduplication:
        raise InvalidParameterValue(
            "The queue should either have ContentBasedDeduplication enabled or"
            " MessageDeduplicationId provided explicitly"
        )


def validate_fifo_send(
    group_id: str | None,
    deduplication_id: str | None,
    delay_seconds: int | None,
    content_based_deduplication: bool,
) -> None:
    """What SendMessage to a FIFO queue needs: the FIFO requirements, well-formed ids and no
    per-message delay (the last two fail only their entry in a batch)."""
    validate_fifo_requirements(group_id, deduplication_id, content_based_deduplication)
    validate_fifo_identifier(group_id or "", "MessageGroupId")
    if deduplication_id is not None:
        validate_fifo_identifier(deduplication_id, "MessageDeduplicationId")
    if delay_seconds:
        raise _not_for_this_queue_type("DelaySeconds", delay_seconds)


def validate_standard_send(group_id: str | None, deduplication_id: str | None) -> None:
    """A standard queue takes a MessageGroupId (it names the tenant of a fair queue) but
    refuses a MessageDeduplicationId, which only FIFO queues know."""
    if group_id is not None:
        validate_fifo_identifier(group_id, "MessageGroupId")
    if deduplication_id is not None:
        raise _not_for_this_queue_type("MessageDeduplicationId", deduplication_id)


def _not_for_this_queue_type(parameter: str, value: object) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"Value {value} for parameter {parameter} is invalid. Reason: The request include"
        " parameter that is not valid for this queue type."
    )
