"""Messages as SQS builds and shows them: from a send request to a stored `Message`, and
from a `Delivery` to what ReceiveMessage answers.

Owns message ids, the checksums and limits checked on send, the FIFO deduplication id a
content-based queue derives, SequenceNumber text, and which system and message attributes
a receive returns. Pure: no I/O. Imports model, validation, checksums and receipts; never
a port or an adapter.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Mapping

from cqs.domain import checksums, dead_letter_policy, validation
from cqs.domain.model import (
    Delivery,
    Message,
    MessageAttributeValue,
    Queue,
    ReceiptHandle,
    ReceivedMessage,
    ReceiveRequest,
    SendRequest,
    SendResult,
)
from cqs.domain.receipts import ReceiptSigner

# A standard (fair) queue's MessageGroupId, kept with the message as a hidden system
# attribute (clients cannot send it: only AWSTraceHeader is accepted) and shown on receive.
TENANT_ATTRIBUTE = "cqs.MessageGroupId"


def new_message_id() -> str:
    """A version-1 UUID (time-ordered, as the store's layout wants) with a random node.

    The random node keeps the host's MAC address out of message ids; the random clock
    sequence spreads messages over the store's shards.
    """
    return str(uuid.uuid1(node=random.getrandbits(48) | 0x010000000000))


def format_sequence_number(sequence: int) -> str:
    """SequenceNumber as SQS shows it: a 20-digit decimal string (zero-padded, so that
    comparing the strings compares the numbers)."""
    return f"{sequence:020d}"


def build_message(queue: Queue, request: SendRequest, now_ms: int, sender_id: str) -> Message:
    """The message a SendMessage (or one batch entry) asks for; CqsError if it breaks a rule."""
    validation.validate_message_body(request.body)
    validation.validate_message_attributes(request.message_attributes)
    validation.validate_message_system_attributes(request.system_attributes)
    size = validation.message_size(request.body, request.message_attributes)
    validation.validate_message_size(size, queue.maximum_message_size)
    group_id = deduplication_id = None
    system_attributes = dict(request.system_attributes)
    if queue.fifo:
        validation.validate_fifo_send(
            request.message_group_id, request.message_deduplication_id,
            request.delay_seconds, queue.content_based_deduplication,
        )
        group_id = request.message_group_id
        deduplication_id = request.message_deduplication_id or hashlib.sha256(
            request.body.encode("utf-8")
        ).hexdigest()
    else:
        # A fair queue's tenant id is accepted, checked and given back on receive (as
        # AWS does), kept among the system attributes rather than as a FIFO group: cqs does
        # not yet schedule standard queues by tenant (docs/compatibility.md).
        validation.validate_standard_send(
            request.message_group_id, request.message_deduplication_id
        )
        if request.message_group_id is not None:
            system_attributes[TENANT_ATTRIBUTE] = MessageAttributeValue(
                data_type="String", string_value=request.message_group_id
            )
    if request.delay_seconds is None or queue.fifo:
        delay = queue.delay_seconds
    else:
        validation.validate_delay_seconds(request.delay_seconds)
        delay = request.delay_seconds
    return Message(
        message_id=new_message_id(),
        body=request.body,
        md5_of_body=checksums.md5_of_body(request.body),
        sent_timestamp_ms=now_ms,
        visible_at_ms=now_ms + delay * 1000,
        sender_id=sender_id,
        message_attributes=dict(request.message_attributes),
        md5_of_message_attributes=checksums.md5_of_message_attributes(
            request.message_attributes
        ),
        system_attributes=system_attributes,
        md5_of_system_attributes=checksums.md5_of_system_attributes(
            request.system_attributes
        ),
        group_id=group_id,
        deduplication_id=deduplication_id,
    )


def send_result(message: Message) -> SendResult:
    return SendResult(
        message_id=message.message_id,
        md5_of_body=message.md5_of_body,
        md5_of_message_attributes=message.md5_of_message_attributes,
        md5_of_system_attributes=message.md5_of_system_attributes,
    )


def carried_system_attributes(message: Message) -> dict[str, str]:
    """The system attributes a message carries from its send, as ReceiveMessage (and a
    peek) shows them: trace header, FIFO group, deduplication id and sequence number."""
    carried: dict[str, str] = {}
    trace = message.system_attributes.get("AWSTraceHeader")
    if trace is not None and trace.string_value is not None:
        carried["AWSTraceHeader"] = trace.string_value
    tenant = message.system_attributes.get(TENANT_ATTRIBUTE)
    if message.group_id is not None:
        carried["MessageGroupId"] = message.group_id
    elif tenant is not None and tenant.string_value is not None:  # a fair queue's tenant
        carried["MessageGroupId"] = tenant.string_value
    if message.deduplication_id is not None:
        carried["MessageDeduplicationId"] = message.deduplication_id
    if message.sequence_number is not None:
        carried["SequenceNumber"] = format_sequence_number(message.sequence_number)
    source = message.system_attributes.get(dead_letter_policy.DEAD_LETTER_SOURCE_ATTRIBUTE)
    if source is not None and source.string_value is not None:
        carried["DeadLetterQueueSourceArn"] = source.string_value
    return carried


def prior_receive_count(system_attributes: Mapping[str, MessageAttributeValue]) -> int:
    """How many times a dead-lettered message was received in the queues it came from."""
    prior = system_attributes.get(dead_letter_policy.PRIOR_RECEIVES_ATTRIBUTE)
    try:
        return int(prior.string_value or 0) if prior is not None else 0
    except ValueError:
        return 0


def received_message(
    queue: Queue, delivery: Delivery, request: ReceiveRequest, signer: ReceiptSigner
) -> ReceivedMessage:
    """A delivery as ReceiveMessage answers it: a signed receipt handle and the attributes
    the request asked for."""
    message = delivery.message
    handle = signer.issue(
        ReceiptHandle(queue.identity.key, message.message_id, delivery.receipt_nonce)
    )
    system: dict[str, str] = {
        "SenderId": message.sender_id,
        "SentTimestamp": str(message.sent_timestamp_ms),
        "ApproximateReceiveCount": str(
            delivery.receive_count + prior_receive_count(message.system_attributes)
        ),
        "ApproximateFirstReceiveTimestamp": str(delivery.first_receive_timestamp_ms),
    }
    system.update(carried_system_attributes(message))
    attributes = {
        k: v for k, v in system.items()
        if validation.message_attribute_selected(k, request.system_attribute_names)
    }
    selected = {
        k: v
        for k, v in message.message_attributes.items()
        if validation.message_attribute_selected(k, request.message_attribute_names)
    }
    return ReceivedMessage(
        delivery=delivery, receipt_handle=handle, attributes=attributes,
        message_attributes=selected,
    )
