"""Extension actions for consumer groups (create, change, list, delete): `CqsExtensions.<Action>`
handlers.

`CreateConsumerGroup` {QueueUrl, GroupName, Attributes?} answers the group's own QueueUrl
(`<queue URL>/<group>`), on which any SQS client receives, deletes and changes visibility
as on a queue; `ListConsumerGroups` {QueueUrl} answers `ConsumerGroups`, each with
GroupName, QueueUrl, Attributes (FilterPolicy among them when set) and CreatedTimestamp;
`SetConsumerGroupAttributes` {QueueUrl, GroupName, Attributes: {FilterPolicy}} changes the
filter in place ("" removes it) and answers the group as ListConsumerGroups describes it;
`DeleteConsumerGroup` {QueueUrl, GroupName} answers nothing. Access control names the
action `CqsExtensions.<Action>` on the queue's URL.

Imports the service, model values and the other `sqs_api` modules: never aiohttp, Redis or
Cassandra.
"""

from __future__ import annotations

from collections.abc import Mapping

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.extension_model import ConsumerGroup
from cqs.domain.group_names import group_queue_name
from cqs.service import QueueService
from cqs.sqs_api.handlers import ApiCall, Handler
from cqs.sqs_api.protocol import WireResult
from cqs.sqs_api.requests.fields import json_required_str, json_required_str_map, json_str_map


def _described(call: ApiCall, owner: str, group: ConsumerGroup) -> WireResult:
    attributes = dict(group.attributes)
    if group.filter_policy is not None:
        attributes["FilterPolicy"] = group.filter_policy
    return {
        "GroupName": group.group_name,
        "QueueUrl": call.queue_url(group_queue_name(group.queue_name, group.group_name), owner),
        "Attributes": attributes,
        "CreatedTimestamp": group.created_timestamp,
    }


async def create_consumer_group(service: QueueService, call: ApiCall) -> WireResult | None:
    body = call.request.json_body
    queue = await call.queue(json_required_str(body, "QueueUrl"))
    for misplaced in ("FilterPolicy", "StartAt", "VisibilityTimeout", "RedrivePolicy"):
        if misplaced in body:  # an easy slip that would otherwise be silently dropped
            raise InvalidParameterValue(
                f"{misplaced} is a group attribute: give it inside Attributes."
            )
    group = await service.create_consumer_group(
        queue, json_required_str(body, "GroupName"), json_str_map(body, "Attributes")
    )
    return _described(call, queue.account_id, group)


async def set_consumer_group_attributes(
    service: QueueService, call: ApiCall
) -> WireResult | None:
    body = call.request.json_body
    queue = await call.queue(json_required_str(body, "QueueUrl"))
    group = await service.set_consumer_group_attributes(
        queue, json_required_str(body, "GroupName"), json_required_str_map(body, "Attributes")
    )
    return _described(call, queue.account_id, group)


async def list_consumer_groups(service: QueueService, call: ApiCall) -> WireResult | None:
    queue = await call.queue(json_required_str(call.request.json_body, "QueueUrl"))
    groups = await service.list_consumer_groups(queue)
    return {"ConsumerGroups": [_described(call, queue.account_id, g) for g in groups]}


async def delete_consumer_group(service: QueueService, call: ApiCall) -> WireResult | None:
    body = call.request.json_body
    queue = await call.queue(json_required_str(body, "QueueUrl"))
    await service.delete_consumer_group(queue, json_required_str(body, "GroupName"))
    return None


HANDLERS: Mapping[str, Handler] = {
    "CqsExtensions.CreateConsumerGroup": create_consumer_group,
    "CqsExtensions.SetConsumerGroupAttributes": set_consumer_group_attributes,
    "CqsExtensions.ListConsumerGroups": list_consumer_groups,
    "CqsExtensions.DeleteConsumerGroup": delete_consumer_group,
}
