"""One frozen request type per SQS action, each with a query reader and a JSON reader.

The types live beside the actions they serve: `queues` (queue actions, tags, permissions),
`messages` (send, receive, delete, change visibility), `batches` (the three batch actions),
`dead_letters` (dead-letter sources and message move tasks); `fields` holds the readers of
single parameters they share. This package re-exports them, so handlers import
`cqs.sqs_api.requests` only. Readers check only presence and types; SQS limits are the
service's to check.

Imports `cqs.domain.model` and `cqs.domain.errors` (through its modules) only: never aiohttp, the service
or storage.
"""

from __future__ import annotations

from cqs.sqs_api.requests.batches import (
    ChangeMessageVisibilityBatchRequest,
    DeleteMessageBatchRequest,
    SendMessageBatchRequest,
)
from cqs.sqs_api.requests.dead_letters import (
    CancelMessageMoveTaskRequest,
    ListDeadLetterSourceQueuesRequest,
    ListMessageMoveTasksRequest,
    StartMessageMoveTaskRequest,
)
from cqs.sqs_api.requests.fields import (
    ActionRequest,
    AnyRequest,
    JsonBody,
    QueryParams,
    QueueActionRequest,
)
from cqs.sqs_api.requests.messages import (
    ChangeMessageVisibilityRequest,
    DeleteMessageRequest,
    ReceiveMessageRequest,
    SendMessageRequest,
)
from cqs.sqs_api.requests.queues import (
    AddPermissionRequest,
    CreateQueueRequest,
    DeleteQueueRequest,
    GetQueueAttributesRequest,
    GetQueueUrlRequest,
    ListQueuesRequest,
    ListQueueTagsRequest,
    PurgeQueueRequest,
    QueueUrlRequest,
    RemovePermissionRequest,
    SetQueueAttributesRequest,
    TagQueueRequest,
    UntagQueueRequest,
)

__all__ = [
    "ActionRequest",
    "AddPermissionRequest",
    "AnyRequest",
    "CancelMessageMoveTaskRequest",
    "ChangeMessageVisibilityBatchRequest",
    "ChangeMessageVisibilityRequest",
    "CreateQueueRequest",
    "DeleteMessageBatchRequest",
    "DeleteMessageRequest",
    "DeleteQueueRequest",
    "GetQueueAttributesRequest",
    "GetQueueUrlRequest",
    "JsonBody",
    "ListDeadLetterSourceQueuesRequest",
    "ListMessageMoveTasksRequest",
    "ListQueueTagsRequest",
    "ListQueuesRequest",
    "PurgeQueueRequest",
    "QueryParams",
    "QueueActionRequest",
    "QueueUrlRequest",
    "ReceiveMessageRequest",
    "RemovePermissionRequest",
    "SendMessageBatchRequest",
    "SendMessageRequest",
    "SetQueueAttributesRequest",
    "StartMessageMoveTaskRequest",
    "TagQueueRequest",
    "UntagQueueRequest",
]
