"""AddPermission / RemovePermission as pure edits of a queue's Policy document: no I/O.

Owns the ActionName values AddPermission accepts, its limits, and the statements it writes
and removes, with AWS's error texts. Imports only `cqs.domain.errors`, `cqs.domain.arns` and the standard
library: never the service, a port or an adapter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from cqs.domain import arns
from cqs.domain.errors import InvalidParameterValue, MissingParameter, OverLimit

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
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,80}")


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
    # AWS writes the 2008 policy language version here (recorded against SQS).
    return {"Version": "2008-10-17", "Id": f"{queue_arn}/SQSDefaultPolicy", "Statement": []}


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
    partition = arns.partition_of(queue_arn)
    principals = [arns.account_root_arn(partition, account) for account in account_ids]
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
            f"Value {label} for parameter Label is invalid. Reason: can't find label."
        )
    if not remaining:
        return None
    document["Statement"] = remaining
    return json.dumps(document, separators=(",", ":"))
