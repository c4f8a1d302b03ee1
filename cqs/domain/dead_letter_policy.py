"""The dead-letter rules of SQS as pure functions: no I/O.

Owns reading RedrivePolicy and RedriveAllowPolicy, the hidden system attribute that
remembers which queue a dead-lettered message came from, the text of message move task
handles, and the queue attributes an empty value clears. Imports only `cqs.domain.errors`,
`cqs.domain.model` and the standard library: never the service, a port or an adapter.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.model import MessageMoveTask

# Stored with a dead-lettered message among its system attributes: the ARN of the queue it
# was moved from, so a move task can send it back. Clients cannot set it (only
# AWSTraceHeader is accepted on send) and receives never return it.
DEAD_LETTER_SOURCE_ATTRIBUTE = "cqs.DeadLetterQueueSourceArn"
# How many times a message was received before it moved to a dead-letter queue (a hidden
# system attribute like the source): its ApproximateReceiveCount goes on from there, as AWS's.
PRIOR_RECEIVES_ATTRIBUTE = "cqs.PriorReceiveCount"
# What both are while a message sits in a dead-letter queue, dropped when a task moves it on.
DEAD_LETTER_ATTRIBUTES = (DEAD_LETTER_SOURCE_ATTRIBUTE, PRIOR_RECEIVES_ATTRIBUTE)

MAX_SOURCE_QUEUE_ARNS = 10  # sourceQueueArns of a byQueue RedriveAllowPolicy

# JSON attributes that an empty value removes (SetQueueAttributes with "").
CLEARABLE_ATTRIBUTES = ("Policy", "RedrivePolicy", "RedriveAllowPolicy")


@dataclass(frozen=True, slots=True)
class RedrivePolicy:
    dead_letter_target_arn: str
    max_receive_count: int


def parse_redrive_policy(value: str | None) -> RedrivePolicy | None:
    """The queue's RedrivePolicy (already validated when it was set), or None when unset."""
    if not value:
        return None
    try:
        document = json.loads(value)
        target = document["deadLetterTargetArn"]
        count = int(document["maxReceiveCount"])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(target, str):
        return None
    return RedrivePolicy(target, count)


def redrive_allowed(allow_policy: str | None, source_arn: str) -> bool:
    """Whether a dead-letter queue with this RedriveAllowPolicy accepts `source_arn`.

    No policy (or allowAll) accepts every queue; denyAll none; byQueue the listed ARNs.
    """
    if not allow_policy:
        return True
    try:
        document = json.loads(allow_policy)
    except ValueError:
        return True
    permission = document.get("redrivePermission")
    if permission == "denyAll":
        return False
    if permission == "byQueue":
        return source_arn in (document.get("sourceQueueArns") or [])
    return True


# --- message move task handles -------------------------------------------------------------


def task_handle(task: MessageMoveTask) -> str:
    """An opaque handle naming the task and its source queue (AWS's is base64 JSON too)."""
    document = json.dumps({"taskId": task.task_id, "sourceArn": task.source_arn})
    return base64.b64encode(document.encode("utf-8")).decode("ascii")


def read_task_handle(handle: str) -> tuple[str, str]:
    """(source ARN, task id) from a handle; InvalidParameterValue when it is not one."""
    try:
        document = json.loads(base64.b64decode(handle.encode("ascii"), validate=True))
        task_id, source_arn = document["taskId"], document["sourceArn"]
    except (ValueError, KeyError, TypeError, UnicodeEncodeError, binascii.Error):
        raise InvalidParameterValue("Value for parameter TaskHandle is invalid.") from None
    if not isinstance(task_id, str) or not isinstance(source_arn, str):
        raise InvalidParameterValue("Value for parameter TaskHandle is invalid.")
    return source_arn, task_id
