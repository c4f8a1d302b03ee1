"""Amazon Resource Names of queues: building and reading them, in one place.

Owns the `arn:<partition>:sqs:<region>:<account>:<name>` layout of a queue ARN, reading the
queue's identity (account, region, name) and partition back out of one, and the account
root ARN a Policy principal names. Pure: imports only the standard library and
`cqs.domain.model`; never the service, a port or an adapter.
"""

from __future__ import annotations

import re

from cqs.domain.model import QueueIdentity

# The name may be a consumer group's, `<queue>/<group>` (cqs.domain.group_names).
_QUEUE_ARN = re.compile(r"arn:([^:]+):sqs:([^:]*):([^:]*):([^:/]+(?:/[^:/]+)?)")


def queue_arn(region: str, account_id: str, name: str) -> str:
    """The ARN of the queue `name` of this service (partition `aws`)."""
    return f"arn:aws:sqs:{region}:{account_id}:{name}"


def queue_identity_from_arn(arn: str) -> QueueIdentity | None:
    """The account, region and name of an SQS queue ARN, or None."""
    match = _QUEUE_ARN.fullmatch(arn.strip())
    return QueueIdentity(match.group(3), match.group(2), match.group(4)) if match else None


def queue_name_from_arn(arn: str) -> str | None:
    """The queue name of an SQS queue ARN (`arn:aws:sqs:<region>:<account>:<name>`), or None."""
    match = _QUEUE_ARN.fullmatch(arn.strip())
    return match.group(4) if match else None


def partition_of(arn: str) -> str:
    """The partition an ARN names (`aws` when it is too short to name one)."""
    return arn.split(":")[1] if arn.count(":") >= 5 else "aws"


def account_root_arn(partition: str, account_id: str) -> str:
    """The ARN of an account's root user, as a Policy principal names the account."""
    return f"arn:{partition}:iam::{account_id}:root"
