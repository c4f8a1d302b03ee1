"""Dead-letter and permission rules of SQS as pure functions: no I/O.

Owns reading queue ARNs, RedrivePolicy and RedriveAllowPolicy; the hidden system attribute
that remembers which queue a dead-lettered message came from; the text of message move
task handles; and the edits AddPermission / RemovePermission make to a queue's Policy
document, with AWS's error texts. Imports only `cqs.errors`, `cqs.model` and the standard
library: never the service, a port or an adapter.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cqs.errors import (
    InvalidParameterValue,
    MissingParameter,
    OverLimit,
)
from cqs.model import MessageMoveTask

# Stored with a dead-lettered message among its system attributes: the ARN of the queue it
# was moved from, so a move task can send it back. Clients cannot set it (only
# AWSTraceHeader is accepted on send) and receives never return it.
DEAD_LETTER_SOURCE_ATTRIBUTE = "cqs.DeadLetterQueueSourceArn"

# AddPermission's ActionName values (AWS SQS API reference); batch actions are covered by
# their single-message names.
PERMISSION_ACTIONS = frozenset({
    "*",
    "ChangeMessageVisibility",
    "DeleteMessage",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "PurgeQueue",
    "ReceiveMessage",
    "SendMessage",
})
MAX_PERMISSION_ACTIONS = 7
MAX_SOURCE_QUEUE_ARNS = 10
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,80}")
_ARN = re.compile(r"arn:([^:]+):sqs:([^:]*):([^:]*):([^:/]+)")


def queue_name_from_arn(arn: str) -> str | None:
    """The queue name of an SQS queue ARN (`arn:aws:sqs:<region>:<account>:<name>`), or None."""
    match = _ARN.fullmatch(arn.strip())
    return match.group(4) if match else None


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


# --- AddPermission / RemovePermission -------------------------------------------------------


def _policy_document(policy: str | None, queue_arn: str) -> dict[str, object]:
    if policy:
        try:
            document = json.loads(policy)
        except ValueError:
            document = None
        if isinstance(document, dict):
            if not isinstance(document.get("Statement"), list):
                document["Statement"] = [] if "Statement" not in document else [
                    document["Statement"]
                ]
            return document
    return {"Version": "2012-10-17", "Id": f"{queue_arn}/SQSDefaultPolicy", "Statement": []}


def _statements(document: dict[str, object]) -> list[object]:
    statements = document["Statement"]
    assert isinstance(statements, list)
    return statements


def add_permission(
    policy: str | None,
    queue_arn: str,
    label: str,
    account_ids: Sequence[str],
    actions: Sequence[str],
) -> str:
    """The queue's Policy with one more statement, as AWS writes it for AddPermission:
    Sid = label, Effect Allow, Principal {"AWS": account root ARN(s)}, Action "SQS:<name>"
    (a list when several), Resource the queue ARN."""
    if not label:
        raise MissingParameter("The request must contain the parameter Label.")
    if not _LABEL.fullmatch(label):
        raise InvalidParameterValue(
            f"Value {label} for parameter Label is invalid. Reason: Can only include"
            " alphanumeric characters, hyphens, or underscores. 1 to 80 in length."
        )
    if not actions:
        raise MissingParameter("The request must contain the parameter Actions.")
    if not account_ids:
        raise InvalidParameterValue(
            "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify."
        )
    if len(actions) > MAX_PERMISSION_ACTIONS:
        raise OverLimit(
            f"{len(actions)} Actions were found, maximum allowed is {MAX_PERMISSION_ACTIONS}."
        )
    for action in actions:
        if action not in PERMISSION_ACTIONS:
            raise InvalidParameterValue(
                f"Value SQS:{action} for parameter ActionName is invalid. Reason: Only the"
                " queue owner is allowed to invoke this action."
            )
    document = _policy_document(policy, queue_arn)
    statements = _statements(document)
    if any(isinstance(s, dict) and s.get("Sid") == label for s in statements):
        raise InvalidParameterValue(
            f"Value {label} for parameter Label is invalid. Reason: Already exists."
        )
    partition = queue_arn.split(":")[1] if queue_arn.count(":") >= 5 else "aws"
    principals = [f"arn:{partition}:iam::{account}:root" for account in account_ids]
    sqs_actions = [f"SQS:{action}" for action in actions]
    statements.append({
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
        "Action": sqs_actions[0] if len(sqs_actions) == 1 else sqs_actions,
        "Resource": queue_arn,
    })
    return json.dumps(document, separators=(",", ":"))


def remove_permission(policy: str | None, label: str) -> str | None:
    """The queue's Policy without the statement `label`; None when no statement is left."""
    if not label:
        raise MissingParameter("The request must contain the parameter Label.")
    document = _policy_document(policy, "")
    statements = _statements(document)
    remaining = [s for s in statements if not (isinstance(s, dict) and s.get("Sid") == label)]
    if not policy or len(remaining) == len(statements):
        raise InvalidParameterValue(
            f"Value {label} for parameter Label is invalid. Reason: can't find label on"
            " existing policy."
        )
    if not remaining:
        return None
    document["Statement"] = remaining
    return json.dumps(document, separators=(",", ":"))


# JSON attributes that an empty value removes (SetQueueAttributes with "").
CLEARABLE_ATTRIBUTES = ("Policy", "RedrivePolicy", "RedriveAllowPolicy")
