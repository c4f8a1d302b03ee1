"""Extension actions for peek and replay: `CqsExtensions.<Action>` handlers.

- `PeekMessages`: visible messages, looked at without being received (no visibility or
  receive count change), paged with `NextToken`; attributes selected as ReceiveMessage
  selects them, no receipt handle.
- `PeekConsumedMessages`: the messages DeleteMessage consumed within [StartTime, EndTime)
  (epoch seconds) of a queue with `cqs.ConsumedRetentionSeconds`, paged the same way.
- `ReplayMessages`: sends those messages to the queue again (new message ids); answers
  the replay's `ReplayId`, how many, and a `NextToken` when one call did not finish the
  range. A call that failed part-way is resumed by calling again with the same `ReplayId`
  (chosen by the caller) or `NextToken`: the replay goes on from its durable cursor.

Each also takes `ConsumerGroup`: the action then applies to that group of the queue, as it
does on the group's own URL (a group keeps and replays what its own consumers consumed).

Owns these requests' JSON readers and answers. Imports the service, model values and the
other `sqs_api` modules: never aiohttp, Redis or Cassandra.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.extension_model import ConsumedRange, PeekRequest
from cqs.domain.model import QueueIdentity
from cqs.ports.inspection import PeekedMessage
from cqs.service import QueueService
from cqs.service.peeking import peeked_attributes
from cqs.sqs_api.handlers import ApiCall, Handler, shown_message
from cqs.sqs_api.protocol import WireResult, WireValue
from cqs.sqs_api.requests.fields import (
    JsonBody,
    json_attribute_names,
    json_int,
    json_required_str,
    json_str,
    missing_parameter,
)

DEFAULT_PAGE = 10  # MaxNumberOfMessages when not given


@dataclass(frozen=True, slots=True)
class _PeekMessagesRequest:
    queue_url: str
    peek: PeekRequest

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        count = json_int(body, "MaxNumberOfMessages")
        return cls(json_required_str(body, "QueueUrl"), PeekRequest(
            max_number_of_messages=DEFAULT_PAGE if count is None else count,
            next_token=json_str(body, "NextToken") or None,
            **json_attribute_names(body),
        ))


@dataclass(frozen=True, slots=True)
class _ConsumedRequest:
    """PeekConsumedMessages and ReplayMessages: a queue and a range of delete times."""

    queue_url: str
    span: ConsumedRange
    peek: PeekRequest

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        peek = _PeekMessagesRequest.from_json(body).peek
        return cls(
            json_required_str(body, "QueueUrl"),
            ConsumedRange(_epoch_ms(body, "StartTime"), _epoch_ms(body, "EndTime")),
            peek,
        )


def _epoch_ms(body: JsonBody, name: str) -> int:
    """A required time in seconds since the epoch (an integer or a fraction), as ms."""
    value = body.get(name)
    if value is None:
        raise missing_parameter(name)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidParameterValue(
            f"Value for parameter {name} is invalid. Reason: must be a number of seconds"
            " since the epoch."
        )
    if not 0 <= value <= 1e11:
        raise InvalidParameterValue(
            f"Value {value} for parameter {name} is invalid. Reason: out of range."
        )
    return int(value * 1000)


# --- answers ---------------------------------------------------------------------------------

def _peeked(peeked: PeekedMessage, request: PeekRequest) -> dict[str, WireValue]:
    system, attributes = peeked_attributes(
        peeked, request.system_attribute_names, request.message_attribute_names
    )
    return shown_message(peeked.message, system, attributes)


def _messages(shown: Sequence[Mapping[str, WireValue]], next_token: str | None) -> WireResult:
    return {"Messages": list(shown) or None, "NextToken": next_token}


# --- handlers --------------------------------------------------------------------------------

async def _target(service: QueueService, call: ApiCall, queue_url: str) -> QueueIdentity:
    """The queue `queue_url` names, or its group `ConsumerGroup` when the body names one.
    Access control asks about the queue's URL, as for managing its groups."""
    queue = await call.queue(queue_url)
    group = json_str(call.request.json_body, "ConsumerGroup")
    return queue if group is None else await service.consumer_group_queue(queue, group)


async def peek_messages(service: QueueService, call: ApiCall) -> WireResult | None:
    request = _PeekMessagesRequest.from_json(call.request.json_body)
    target = await _target(service, call, request.queue_url)
    page = await service.peek_messages(target, request.peek)
    return _messages([_peeked(p, request.peek) for p in page.messages], page.next_position)


async def peek_consumed_messages(service: QueueService, call: ApiCall) -> WireResult | None:
    request = _ConsumedRequest.from_json(call.request.json_body)
    consumed, next_token = await service.read_consumed_messages(
        await _target(service, call, request.queue_url), request.span,
        request.peek.next_token, request.peek.max_number_of_messages,
    )
    shown = []
    for copy in consumed:
        peeked = PeekedMessage(copy.message, "consumed")
        answer = _peeked(peeked, request.peek)
        answer["ConsumedTimestamp"] = str(copy.consumed_ms)
        shown.append(answer)
    return _messages(shown, next_token)


async def replay_messages(service: QueueService, call: ApiCall) -> WireResult | None:
    request = _ConsumedRequest.from_json(call.request.json_body)
    progress = await service.replay_messages(
        await _target(service, call, request.queue_url), request.span,
        json_str(call.request.json_body, "ReplayId"), request.peek.next_token,
        json_int(call.request.json_body, "MaxNumberOfMessages"),
    )
    return {
        "ReplayId": progress.replay_id,
        "ReplayedCount": progress.replayed,
        "TotalReplayedCount": progress.total_replayed,
        "NextToken": None if progress.done else progress.replay_id,
    }


HANDLERS: Mapping[str, Handler] = {
    "CqsExtensions.PeekMessages": peek_messages,
    "CqsExtensions.PeekConsumedMessages": peek_consumed_messages,
    "CqsExtensions.ReplayMessages": replay_messages,
}
