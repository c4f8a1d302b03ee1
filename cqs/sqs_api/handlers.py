"""One async handler per SQS action, and the dict that dispatches to them.

Each handler reads its request type (in the request's protocol), calls exactly one
`QueueService` method, and returns a protocol-neutral result (the output shape's members by
their model names) or None for actions without output; `json_codec` / `query_codec` render
it. An empty list is None (left out), as AWS leaves out empty lists such as `"Failed": []`. Queue URLs are turned into names on the way in and built from names on the way out.
An action that only calls the service on the queue its QueueUrl names, answering nothing
or a batch answer, is one row of the dispatch dict (`_on_queue`: its request type, its
service call, its answer).

Imports the service (for its type), model values, pure helpers and the other `sqs_api`
modules: never aiohttp, Redis or Cassandra.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from cqs.domain import arns, checksums
from cqs.domain.dead_letter_policy import read_task_handle, task_handle
from cqs.domain.errors import InvalidParameterValue, ResourceNotFound
from cqs.domain.model import (
    BatchFailure,
    BatchResult,
    Caller,
    Message,
    MessageAttributeValue,
    MessageMoveTask,
    MoveTaskStatus,
    QueueIdentity,
    QueueListing,
    ReceivedMessage,
    SendRequest,
    SendResult,
)
from cqs.service import QueueAccess, QueueService
from cqs.sqs_api.errors import client_message, wire_error_for
from cqs.sqs_api.protocol import DecodedRequest, Protocol, WireResult, WireValue
from cqs.sqs_api.requests import (
    AddPermissionRequest,
    AnyRequest,
    CancelMessageMoveTaskRequest,
    ChangeMessageVisibilityBatchRequest,
    ChangeMessageVisibilityRequest,
    CreateQueueRequest,
    DeleteMessageBatchRequest,
    DeleteMessageRequest,
    DeleteQueueRequest,
    GetQueueAttributesRequest,
    GetQueueUrlRequest,
    ListDeadLetterSourceQueuesRequest,
    ListMessageMoveTasksRequest,
    ListQueuesRequest,
    ListQueueTagsRequest,
    PurgeQueueRequest,
    QueueActionRequest,
    ReceiveMessageRequest,
    RemovePermissionRequest,
    SendMessageBatchRequest,
    SendMessageRequest,
    SetQueueAttributesRequest,
    StartMessageMoveTaskRequest,
    TagQueueRequest,
    UntagQueueRequest,
)
from cqs.sqs_api.urls import queue_address_from_url, queue_url

TRACE_HEADER_ATTRIBUTE = "AWSTraceHeader"  # the X-Ray message system attribute

Outcome = TypeVar("Outcome")  # what a batch action keeps of each successful entry
Performed = TypeVar("Performed")  # what an action's service call returns
QueueRequest = TypeVar("QueueRequest", bound=QueueActionRequest)


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One decoded request, who sent it (the account and region it acts in) and what is
    needed to build queue URLs for the answer."""

    request: DecodedRequest
    base_url: str
    caller: Caller
    access: QueueAccess  # decides whether the caller may do this action to a queue
    trace_header: str | None = None  # the request's X-Amzn-Trace-Id (X-Ray), if any

    @property
    def action(self) -> str:
        return self.request.action

    @property
    def account_id(self) -> str:
        return self.caller.account_id

    @property
    def region(self) -> str:
        return self.caller.region

    def read(self, request_type: type[AnyRequest]) -> AnyRequest:
        if self.request.protocol is Protocol.QUERY:
            return request_type.from_query(self.request.query_params)
        return request_type.from_json(self.request.json_body)

    def queue_url(self, queue_name: str, owner_account_id: str | None = None) -> str:
        return queue_url(self.base_url, owner_account_id or self.account_id, queue_name)

    def named(self, queue_name: str) -> QueueIdentity:
        """The queue of this account and region called `queue_name`."""
        return QueueIdentity(self.account_id, self.region, queue_name)

    async def queue(self, url: str) -> QueueIdentity:
        """The queue `url` names (of whichever account it names), once access control lets
        the caller do this action to it (AccessDenied otherwise)."""
        owner, name = queue_address_from_url(url, self.account_id)
        return await self.authorized(QueueIdentity(owner, self.region, name))

    async def queue_of_arn(self, arn: str) -> None:
        """Refuse the action unless the caller may do it to the queue `arn` names; an ARN
        that names no queue is left to the action to refuse as it words it."""
        identity = arns.queue_identity_from_arn(arn)
        if identity is not None:
            await self.authorized(identity)

    async def authorized(self, queue: QueueIdentity) -> QueueIdentity:
        await self.access.authorize(self.caller, self.action, queue)
        return queue


Handler = Callable[[QueueService, ApiCall], Awaitable[WireResult | None]]


def _on_queue(
    request_type: type[QueueRequest],
    perform: Callable[[QueueService, QueueIdentity, QueueRequest], Awaitable[Performed]],
    answer: Callable[[Performed], WireResult | None] = lambda _: None,
) -> Handler:
    """The handler of an action on the queue its QueueUrl names: read the request, find the
    queue (once access control allows), `perform` the service call and `answer` its outcome
    (by default nothing)."""

    async def handle(service: QueueService, call: ApiCall) -> WireResult | None:
        request = call.read(request_type)
        return answer(await perform(service, await call.queue(request.queue_url), request))

    return handle


# --- result pieces ----------------------------------------------------------------------------

def _failure(failure: BatchFailure) -> WireResult:
    wire = wire_error_for(failure.error)
    return {
        "Id": failure.entry_id,
        "SenderFault": wire.sender_fault,
        "Code": wire.query_code,
        "Message": client_message(failure.error),
    }


def _batch_answer(
    batch: BatchResult[Outcome], members: Callable[[Outcome], WireResult] = lambda _: {}
) -> WireResult:
    """A batch action's answer: each success by its entry id (plus the `members` of its
    result), each failure with its error."""
    return {
        "Successful": [{"Id": entry_id, **members(result)}
                       for entry_id, result in batch.successful] or None,
        "Failed": [_failure(failure) for failure in batch.failed] or None,
    }


def _send_result(result: SendResult) -> dict[str, WireValue]:
    return {
        "MD5OfMessageBody": result.md5_of_body,
        "MD5OfMessageAttributes": result.md5_of_message_attributes,
        "MD5OfMessageSystemAttributes": result.md5_of_system_attributes,
        "MessageId": result.message_id,
        "SequenceNumber": result.sequence_number,
    }


def _attribute_value(value: MessageAttributeValue) -> WireResult:
    return {
        "StringValue": value.string_value,
        "BinaryValue": value.binary_value,
        "DataType": value.data_type,
    }


def shown_message(
    message: Message, system: Mapping[str, str], attributes: Mapping[str, MessageAttributeValue]
) -> dict[str, WireValue]:
    """A message as ReceiveMessage shows it, without its receipt handle (as peek shows it)."""
    return {
        "MessageId": message.message_id,
        "MD5OfBody": message.md5_of_body,
        "Body": message.body,
        "Attributes": dict(system) or None,
        # Over the attributes returned, which is what the SDKs that check it recompute.
        "MD5OfMessageAttributes": checksums.md5_of_message_attributes(attributes),
        "MessageAttributes": {
            name: _attribute_value(value) for name, value in attributes.items()
        } or None,
    }


def _received(received: ReceivedMessage) -> WireResult:
    message = received.delivery.message
    shown = shown_message(message, received.attributes, received.message_attributes)
    # The receipt handle second, as AWS orders it: `shown` keeps MessageId in first place.
    return {"MessageId": message.message_id, "ReceiptHandle": received.receipt_handle, **shown}


# --- queues -----------------------------------------------------------------------------------

async def create_queue(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(CreateQueueRequest)
    await service.create_queue(call.named(request.queue_name), request.attributes, request.tags)
    return {"QueueUrl": call.queue_url(request.queue_name)}


async def get_queue_url(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(GetQueueUrlRequest)
    owner = request.queue_owner_account_id or call.account_id
    queue = await call.authorized(QueueIdentity(owner, call.region, request.queue_name))
    await service.get_queue_url(queue)
    return {"QueueUrl": call.queue_url(request.queue_name, owner)}


async def list_queues(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(ListQueuesRequest)
    names, next_token = await service.list_queues(call.caller.namespace, QueueListing(
        request.queue_name_prefix, request.max_results, request.next_token
    ))
    return {
        "QueueUrls": [call.queue_url(name) for name in names] or None,
        "NextToken": next_token,
    }


async def get_queue_attributes(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(GetQueueAttributesRequest)
    attributes = await service.get_queue_attributes(
        await call.queue(request.queue_url), request.attribute_names
    )
    return {"Attributes": attributes or None}


async def list_queue_tags(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(ListQueueTagsRequest)
    tags = await service.list_queue_tags(await call.queue(request.queue_url))
    return {"Tags": tags or None}


# --- messages ---------------------------------------------------------------------------------

def _traced(message: SendRequest, trace_header: str | None) -> SendRequest:
    """As AWS: the request's X-Amzn-Trace-Id becomes the AWSTraceHeader of every message
    it sends, unless the message carries its own (the system attribute wins)."""
    if not trace_header or TRACE_HEADER_ATTRIBUTE in message.system_attributes:
        return message
    traced = MessageAttributeValue(data_type="String", string_value=trace_header)
    return replace(
        message,
        system_attributes={**message.system_attributes, TRACE_HEADER_ATTRIBUTE: traced},
    )


async def send_message(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(SendMessageRequest)
    result = await service.send_message(
        await call.queue(request.queue_url), _traced(request.message, call.trace_header)
    )
    return _send_result(result)


async def send_message_batch(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(SendMessageBatchRequest)
    batch = await service.send_message_batch(
        await call.queue(request.queue_url),
        [(entry_id, _traced(message, call.trace_header)) for entry_id, message in request.entries],
    )
    return _batch_answer(batch, _send_result)


async def receive_message(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(ReceiveMessageRequest)
    received = await service.receive_message(
        await call.queue(request.queue_url), request.receive
    )
    return {"Messages": [_received(message) for message in received] or None}


# --- dead-letter queues and move tasks ------------------------------------------------------

async def list_dead_letter_source_queues(
    service: QueueService, call: ApiCall
) -> WireResult | None:
    request = call.read(ListDeadLetterSourceQueuesRequest)
    queue = await call.queue(request.queue_url)
    names, next_token = await service.list_dead_letter_source_queues(
        queue, request.max_results, request.next_token
    )
    # `queueUrls` is required in the output shape: an empty list, never left out.
    return {
        "queueUrls": [call.queue_url(name, queue.account_id) for name in names] or None,
        "NextToken": next_token,
    }


async def start_message_move_task(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(StartMessageMoveTaskRequest)
    await call.queue_of_arn(request.source_arn)
    if request.destination_arn:
        await call.queue_of_arn(request.destination_arn)
    handle = await service.start_message_move_task(
        request.source_arn, request.destination_arn, request.max_number_of_messages_per_second
    )
    return {"TaskHandle": handle}


def _move_task(task: MessageMoveTask) -> WireResult:
    running = task.status is MoveTaskStatus.RUNNING
    return {
        "TaskHandle": task_handle(task) if running else None,  # only while RUNNING, as AWS
        "Status": task.status.value,
        "SourceArn": task.source_arn,
        "DestinationArn": task.destination_arn,
        "MaxNumberOfMessagesPerSecond": task.max_per_second,
        "ApproximateNumberOfMessagesMoved": task.moved,
        "ApproximateNumberOfMessagesToMove": task.to_move,
        "FailureReason": task.failure_reason if task.status is MoveTaskStatus.FAILED else None,
        "StartedTimestamp": task.started_ms,
    }


async def list_message_move_tasks(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(ListMessageMoveTasksRequest)
    await call.queue_of_arn(request.source_arn)
    tasks = await service.list_message_move_tasks(request.source_arn, request.max_results)
    return {"Results": [_move_task(task) for task in tasks] or None}


async def cancel_message_move_task(service: QueueService, call: ApiCall) -> WireResult | None:
    request = call.read(CancelMessageMoveTaskRequest)
    try:
        source_arn, _ = read_task_handle(request.task_handle)
    except InvalidParameterValue:
        pass  # not a handle: the action refuses it in its own words
    else:
        source = arns.queue_identity_from_arn(source_arn)
        if source is not None and source.account_id != call.account_id:
            # A handle naming another account's queue names, to its caller, no queue at
            # all: AWS answers 404 ResourceNotFoundException, not a refusal.
            raise ResourceNotFound(
                "The resource that you specified for the SourceArn parameter doesn't exist."
            )
        await call.queue_of_arn(source_arn)
    moved = await service.cancel_message_move_task(request.task_handle)
    return {"ApproximateNumberOfMessagesMoved": moved}


HANDLERS: Mapping[str, Handler] = {
    "CreateQueue": create_queue,
    "GetQueueUrl": get_queue_url,
    "ListQueues": list_queues,
    "DeleteQueue": _on_queue(
        DeleteQueueRequest, lambda service, queue, _: service.delete_queue(queue)
    ),
    "GetQueueAttributes": get_queue_attributes,
    "SetQueueAttributes": _on_queue(
        SetQueueAttributesRequest,
        lambda service, queue, request: service.set_queue_attributes(queue, request.attributes),
    ),
    "PurgeQueue": _on_queue(PurgeQueueRequest, lambda service, queue, _: service.purge_queue(queue)),
    "TagQueue": _on_queue(
        TagQueueRequest, lambda service, queue, request: service.tag_queue(queue, request.tags)
    ),
    "UntagQueue": _on_queue(
        UntagQueueRequest,
        lambda service, queue, request: service.untag_queue(queue, request.tag_keys),
    ),
    "ListQueueTags": list_queue_tags,
    "SendMessage": send_message,
    "SendMessageBatch": send_message_batch,
    "ReceiveMessage": receive_message,
    "DeleteMessage": _on_queue(
        DeleteMessageRequest,
        lambda service, queue, request: service.delete_message(queue, request.receipt_handle),
    ),
    "DeleteMessageBatch": _on_queue(
        DeleteMessageBatchRequest,
        lambda service, queue, request: service.delete_message_batch(queue, request.entries),
        _batch_answer,
    ),
    "ChangeMessageVisibility": _on_queue(
        ChangeMessageVisibilityRequest,
        lambda service, queue, request: service.change_message_visibility(
            queue, request.receipt_handle, request.visibility_timeout
        ),
    ),
    "ChangeMessageVisibilityBatch": _on_queue(
        ChangeMessageVisibilityBatchRequest,
        lambda service, queue, request: service.change_message_visibility_batch(
            queue, request.entries
        ),
        _batch_answer,
    ),
    "ListDeadLetterSourceQueues": list_dead_letter_source_queues,
    "AddPermission": _on_queue(
        AddPermissionRequest,
        lambda service, queue, request: service.add_permission(
            queue, request.label, request.account_ids, request.actions
        ),
    ),
    "RemovePermission": _on_queue(
        RemovePermissionRequest,
        lambda service, queue, request: service.remove_permission(queue, request.label),
    ),
    "StartMessageMoveTask": start_message_move_task,
    "ListMessageMoveTasks": list_message_move_tasks,
    "CancelMessageMoveTask": cancel_message_move_task,
}
