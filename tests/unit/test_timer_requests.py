"""When a send asks its message to be delivered (`cqs/service/timer_requests.py`): the
`cqs.DeliverAt` and `cqs.DelaySeconds` attributes, read without any server."""

from __future__ import annotations

import pytest

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.model import MessageAttributeValue, SendRequest
from cqs.service.timer_requests import asks_for_timer, requested_due_ms

NOW_MS = 1_800_000_000_000
DAY = 86_400


def send(delay_seconds: int | None = None, **attributes: MessageAttributeValue) -> SendRequest:
    named = {name.replace("_", "."): value for name, value in attributes.items()}
    return SendRequest(body="x", delay_seconds=delay_seconds, message_attributes=named)


def number(text: str) -> MessageAttributeValue:
    return MessageAttributeValue("Number", string_value=text)


def string(text: str) -> MessageAttributeValue:
    return MessageAttributeValue("String", string_value=text)


def due(request: SendRequest, retention: int = 4 * DAY, fifo: bool = False) -> int | None:
    return requested_due_ms(request, NOW_MS, retention_seconds=retention, fifo=fifo)


def test_a_send_without_timer_attributes_asks_for_nothing() -> None:
    plain = send(other=string("x"))
    assert not asks_for_timer(plain)
    assert due(plain) is None


def test_delay_seconds_counts_from_now() -> None:
    assert due(send(cqs_DelaySeconds=number("7200"))) == NOW_MS + 7_200_000


def test_deliver_at_reads_epoch_seconds_with_a_fraction_and_iso_times_with_an_offset() -> None:
    assert due(send(cqs_DeliverAt=number("1800003600.25"))) == NOW_MS + 3_600_250
    assert due(send(cqs_DeliverAt=string("2027-01-15T09:00:00Z"))) == NOW_MS + 3_600_000
    assert due(send(cqs_DeliverAt=string("2027-01-15T11:00:00+02:00"))) == NOW_MS + 3_600_000


def test_a_custom_number_type_is_still_a_number() -> None:
    assert due(send(cqs_DeliverAt=MessageAttributeValue(
        "Number.epoch", string_value="1800000060"))) == NOW_MS + 60_000


def test_a_time_in_the_past_means_now() -> None:
    assert due(send(cqs_DeliverAt=number("1"))) == NOW_MS


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (send(cqs_DelaySeconds=number(str(4 * DAY))), "MessageRetentionPeriod"),
        (send(cqs_DeliverAt=number("1800000000000")), "MessageRetentionPeriod"),
        (send(cqs_DeliverAt=string("soon")), "ISO-8601"),
        (send(cqs_DeliverAt=string("2027-01-16T10:00:00")), "UTC offset"),
        (send(cqs_DeliverAt=number("NaN")), "epoch seconds"),
        (send(cqs_DeliverAt=number("-5")), "epoch seconds"),
        (send(cqs_DeliverAt=MessageAttributeValue("Binary", binary_value=b"1")), "Number or"),
        (send(cqs_DelaySeconds=number("2.5")), "whole number"),
        (send(cqs_DelaySeconds=number("-1")), "whole number"),
        (send(cqs_DelaySeconds=string("60")), "Number of seconds"),
        (send(cqs_DelaySeconds=number("60"), cqs_DeliverAt=number("1")), "not both"),
        (send(5, cqs_DelaySeconds=number("60")), "DelaySeconds parameter"),
    ],
)
def test_bad_timers_are_invalid_parameter_values(request_: SendRequest, reason: str) -> None:
    with pytest.raises(InvalidParameterValue, match=reason):
        due(request_)


def test_fifo_queues_refuse_timers() -> None:
    with pytest.raises(InvalidParameterValue, match="FIFO"):
        due(send(cqs_DelaySeconds=number("60")), fifo=True)


def test_the_limit_is_the_queue_retention_period() -> None:
    assert due(send(cqs_DelaySeconds=number("59")), retention=60) == NOW_MS + 59_000
    with pytest.raises(InvalidParameterValue, match="60 seconds"):
        due(send(cqs_DelaySeconds=number("60")), retention=60)
