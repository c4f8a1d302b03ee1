"""The console's forms: which fields each has, and turning posted fields into the values the
service takes (attribute maps, tags, message attributes, send requests).

Owns only the shape of the forms. Every value is passed on as typed, as an SQS client would
send it, so the service applies the API's validation and its error texts; the checks here
are only those a form needs before it can even build a request (a number field that is not
a number, a tag line without "="). Imports the model and the standard library.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from aiohttp.web_request import FileField
from multidict import MultiDictProxy

from cqs.domain.model import MessageAttributeValue, SendRequest


class FormError(Exception):
    """The form cannot be turned into a request; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class AttributeField:
    name: str
    label: str
    hint: str
    kind: str = "number"  # number | text | json | choice
    choices: tuple[str, ...] = ()
    fifo_only: bool = False


# Attributes a queue's owner may change after creation (SetQueueAttributes), in the order the
# form shows them. The ranges in the hints are the API's; the service checks them.
EDITABLE_ATTRIBUTES: tuple[AttributeField, ...] = (
    AttributeField("VisibilityTimeout", "Visibility timeout (seconds)", "0 to 43200"),
    AttributeField("DelaySeconds", "Delivery delay (seconds)", "0 to 900"),
    AttributeField("ReceiveMessageWaitTimeSeconds", "Receive wait time (seconds)", "0 to 20"),
    AttributeField("MessageRetentionPeriod", "Retention period (seconds)", "60 to 1209600"),
    AttributeField("MaximumMessageSize", "Maximum message size (bytes)", "1024 to 1048576"),
    AttributeField(
        "RedrivePolicy", "Redrive policy (JSON)",
        '{"deadLetterTargetArn": "<DLQ ARN>", "maxReceiveCount": 5}; empty removes it',
        kind="json",
    ),
    AttributeField(
        "RedriveAllowPolicy", "Redrive allow policy (JSON)",
        '{"redrivePermission": "allowAll" | "denyAll" | "byQueue", "sourceQueueArns": [...]}',
        kind="json",
    ),
    AttributeField("Policy", "Access policy (JSON)", "enforced: see docs/security.md", kind="json"),
    AttributeField(
        "KmsMasterKeyId", "KMS key id", "stored, no encryption is performed", kind="text"
    ),
    AttributeField(
        "KmsDataKeyReusePeriodSeconds", "KMS data key reuse period (seconds)", "60 to 86400"
    ),
    AttributeField(
        "SqsManagedSseEnabled", "SQS-managed encryption", "stored, no encryption is performed",
        kind="choice", choices=("true", "false"),
    ),
    AttributeField(
        "ContentBasedDeduplication", "Content-based deduplication",
        "deduplication id from a SHA-256 of the body", kind="choice",
        choices=("true", "false"), fifo_only=True,
    ),
    AttributeField(
        "DeduplicationScope", "Deduplication scope", "", kind="choice",
        choices=("queue", "messageGroup"), fifo_only=True,
    ),
    AttributeField(
        "FifoThroughputLimit", "FIFO throughput limit", "", kind="choice",
        choices=("perQueue", "perMessageGroupId"), fifo_only=True,
    ),
)

# Attributes the create form offers as plain number fields.
CREATE_NUMBER_ATTRIBUTES: tuple[AttributeField, ...] = EDITABLE_ATTRIBUTES[:5]

MESSAGE_ATTRIBUTE_TYPES = ("String", "Number", "Binary")

Form = MultiDictProxy[str | bytes | bytearray | FileField]


def text(form: Form, name: str) -> str:
    value = form.get(name, "")
    return value if isinstance(value, str) else ""


def changed_attributes(form: Form, current: Mapping[str, str], fifo: bool) -> dict[str, str]:
    """The editable attributes whose posted value differs from the queue's (an attribute the
    queue does not have counts as empty)."""
    changed: dict[str, str] = {}
    for field in EDITABLE_ATTRIBUTES:
        if (field.fifo_only and not fifo) or field.name not in form:
            continue
        value = text(form, field.name).strip()
        if value != current.get(field.name, ""):
            changed[field.name] = value
    return changed


def create_attributes(form: Form, dead_letter_arn: str | None) -> dict[str, str]:
    """The CreateQueue attributes of the create form: the number fields that were filled in,
    FIFO, and a RedrivePolicy built from the dead-letter queue and the receive count."""
    attributes = {
        field.name: text(form, field.name).strip()
        for field in CREATE_NUMBER_ATTRIBUTES
        if text(form, field.name).strip()
    }
    if text(form, "FifoQueue") == "true":
        attributes["FifoQueue"] = "true"
        if text(form, "ContentBasedDeduplication") == "true":
            attributes["ContentBasedDeduplication"] = "true"
    if dead_letter_arn:
        count = text(form, "maxReceiveCount").strip() or "5"
        if not count.isdigit():
            raise FormError("Maximum receives must be a whole number.")
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": int(count)}
        )
    return attributes


def parse_tags(lines: str) -> dict[str, str]:
    """`key=value`, one per line; blank lines are skipped."""
    tags: dict[str, str] = {}
    for number, line in enumerate(lines.splitlines(), start=1):
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        if not equals or not key.strip():
            raise FormError(f"Tag line {number} is not key=value: {line.strip()!r}")
        tags[key.strip()] = value.strip()
    return tags


def message_attributes(
    names: Sequence[str], types: Sequence[str], values: Sequence[str]
) -> dict[str, MessageAttributeValue]:
    """Rows of the send form (name, data type, value); rows without a name are skipped.

    Binary values are typed in base64, as the SQS JSON protocol carries them.
    """
    attributes: dict[str, MessageAttributeValue] = {}
    for name, data_type, value in zip(names, types, values, strict=False):
        name = name.strip()
        if not name:
            continue
        data_type = data_type.strip() or "String"
        if name in attributes:
            raise FormError(f"Message attribute {name} is given twice.")
        if data_type.split(".", 1)[0] == "Binary":
            try:
                binary = base64.b64decode(value.strip(), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise FormError(
                    f"Message attribute {name}: a Binary value is typed in base64."
                ) from exc
            attributes[name] = MessageAttributeValue(data_type, binary_value=binary)
        else:
            attributes[name] = MessageAttributeValue(data_type, string_value=value)
    return attributes


def send_request(form: Form) -> SendRequest:
    delay_text = text(form, "DelaySeconds").strip()
    if delay_text and not delay_text.lstrip("-").isdigit():
        raise FormError("Delay must be a whole number of seconds.")
    return SendRequest(
        # Browsers send a textarea's line breaks as CRLF: the body is what the operator saw.
        body=text(form, "MessageBody").replace("\r\n", "\n"),
        delay_seconds=int(delay_text) if delay_text else None,
        message_attributes=message_attributes(
            [str(v) for v in form.getall("attr_name", [])],
            [str(v) for v in form.getall("attr_type", [])],
            [str(v) for v in form.getall("attr_value", [])],
        ),
        message_group_id=text(form, "MessageGroupId").strip() or None,
        message_deduplication_id=text(form, "MessageDeduplicationId").strip() or None,
    )


# --- consumer groups (#19) ------------------------------------------------------------------
def group_attributes(form: Form, arn_of: Callable[[str], str]) -> dict[str, str]:
    """CreateConsumerGroup's attributes from the group form: the filter policy and the
    visibility timeout as typed, StartAt when given, and a RedrivePolicy built from the
    dead-letter queue's name (`arn_of` gives its ARN) and the receive count."""
    attributes = {
        key: text(form, key).strip()
        for key in ("FilterPolicy", "VisibilityTimeout", "StartAt")
        if text(form, key).strip()
    }
    dead_letter_queue = text(form, "DeadLetterQueue").strip()
    if dead_letter_queue:
        count = text(form, "maxReceiveCount").strip() or "5"
        if not count.isdigit():
            raise FormError("Maximum receives must be a whole number.")
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": arn_of(dead_letter_queue), "maxReceiveCount": int(count)}
        )
    return attributes
