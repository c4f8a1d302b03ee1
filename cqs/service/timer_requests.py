"""Timer requests: when a send asks its message to be delivered, read from its attributes.

Owns the two message attributes of timer messages (issue #19), `cqs.DeliverAt` (epoch
seconds as a Number, or an ISO-8601 time with a UTC offset as a String) and
`cqs.DelaySeconds` (a whole Number of seconds), and their rules: within the queue's
retention period, not on FIFO queues, not beside the SQS `DelaySeconds` parameter. A time
already past means "now". The attributes stay on the message (the consumer sees what was
asked, and the MD5s stay those of the attributes sent). Pure: no I/O. Imports model and
errors only.
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal, InvalidOperation

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.model import MessageAttributeValue, SendRequest

DELIVER_AT = "cqs.DeliverAt"
DELAY_SECONDS = "cqs.DelaySeconds"
TIMER_ATTRIBUTES = (DELIVER_AT, DELAY_SECONDS)


def asks_for_timer(request: SendRequest) -> bool:
    """Whether the send names either timer attribute (cheap: the hot path asks it)."""
    attributes = request.message_attributes
    return bool(attributes) and (DELIVER_AT in attributes or DELAY_SECONDS in attributes)


def requested_due_ms(
    request: SendRequest, now_ms: int, *, retention_seconds: int, fifo: bool
) -> int | None:
    """When the message is due (ms, never before `now_ms`), or None if it asks no timer.

    Raises InvalidParameterValue for a value that cannot be read, one beyond the queue's
    retention period, both attributes at once, either beside `DelaySeconds`, or a FIFO queue.
    """
    attributes = request.message_attributes
    deliver_at = attributes.get(DELIVER_AT)
    delay = attributes.get(DELAY_SECONDS)
    if deliver_at is None and delay is None:
        return None
    if deliver_at is not None and delay is not None:
        raise InvalidParameterValue(
            f"Give either the {DELIVER_AT} or the {DELAY_SECONDS} message attribute, not both."
        )
    name = DELIVER_AT if deliver_at is not None else DELAY_SECONDS
    if fifo:
        raise InvalidParameterValue(
            f"The {name} message attribute is not supported on FIFO queues (FIFO queues have"
            " no per-message delay)."
        )
    if request.delay_seconds is not None:
        raise InvalidParameterValue(
            f"Give either the DelaySeconds parameter or the {name} message attribute, not both."
        )
    if deliver_at is not None:
        due_ms = _deliver_at_ms(deliver_at)
    else:
        assert delay is not None
        due_ms = now_ms + _delay_seconds(delay) * 1000
    if due_ms - now_ms >= retention_seconds * 1000:
        raise InvalidParameterValue(
            f"Value {_shown(deliver_at or delay)} for message attribute {name} is invalid."
            f" Reason: the message must be due within the queue's MessageRetentionPeriod"
            f" ({retention_seconds} seconds from now)."
        )
    return max(due_ms, now_ms)


def _deliver_at_ms(value: MessageAttributeValue) -> int:
    text = value.string_value
    if text is None:
        raise _invalid(DELIVER_AT, value, "expected a Number or a String value.")
    if value.data_type.split(".", 1)[0] == "Number":
        try:
            seconds = Decimal(text)
        except InvalidOperation:
            raise _invalid(DELIVER_AT, value, "not a number of epoch seconds.") from None
        if not seconds.is_finite() or seconds < 0:
            raise _invalid(DELIVER_AT, value, "expected epoch seconds >= 0.")
        return int(seconds * 1000)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise _invalid(
            DELIVER_AT, value, "expected an ISO-8601 time such as 2030-01-31T12:00:00Z."
        ) from None
    if moment.tzinfo is None:
        raise _invalid(DELIVER_AT, value, "the time needs a UTC offset, such as Z or +02:00.")
    return math.floor(moment.timestamp() * 1000)


def _delay_seconds(value: MessageAttributeValue) -> int:
    text = value.string_value
    if value.data_type.split(".", 1)[0] != "Number" or text is None:
        raise _invalid(DELAY_SECONDS, value, "expected a Number of seconds.")
    try:
        seconds = Decimal(text)
    except InvalidOperation:
        raise _invalid(DELAY_SECONDS, value, "not a number of seconds.") from None
    if not seconds.is_finite() or seconds < 0 or seconds != seconds.to_integral_value():
        raise _invalid(DELAY_SECONDS, value, "expected a whole number of seconds >= 0.")
    return int(seconds)


def _shown(value: MessageAttributeValue | None) -> str:
    if value is None or value.string_value is None:
        return "(binary)"
    return value.string_value[:64]


def _invalid(name: str, value: MessageAttributeValue, reason: str) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"Value {_shown(value)} for message attribute {name} is invalid. Reason: {reason}"
    )
