"""QueueAccess: whether a caller may do an SQS action to a queue, as SQS decides it.

Owns the access rules below; the Policy language itself is `cqs.domain.access_policy`'s. Imports
model, errors, `cqs.domain.access_policy` and the queue directory; never an adapter or aiohttp.

The rules (`authorize` raises, or returns to let the action run):
- The queue's owner (the caller's account is the queue's) may do every action, unless a
  Deny statement of the queue's Policy matches the request. Whatever the Policy says, the
  owner can always read and replace it (GetQueueAttributes, SetQueueAttributes): every cqs
  key acts as its account's root user, and AWS lets the root user unlock a queue whose
  policy denies everyone.
- Another account may never do the actions SQS keeps to the owner (OWNER_ONLY_ACTIONS:
  cross-account permissions do not apply to them). Any other action is allowed only when a
  statement of the queue's Policy (written by SetQueueAttributes or AddPermission) allows it
  and none denies it. Batch actions need their single-message action ("sqs:SendMessage" for
  SendMessageBatch).
- A queue of another account that does not exist is refused like one that does, so a
  caller learns nothing of another account's queues; a queue of the caller's own account
  that does not exist passes here and the action answers QueueDoesNotExist.
- A refusal is AccessDenied ("Access to the resource <queue ARN> is denied."), except for
  GetQueueUrl, where SQS answers QueueDoesNotExist with "The specified queue does not exist
  or you do not have access to it." either way.

The request context of a policy: the caller's account and root ARN (`aws:PrincipalAccount`,
`aws:PrincipalArn`), the action, the queue ARN and `aws:SecureTransport` from
`Caller.secure_transport`. `aws:SourceAccount` and `aws:SourceArn` are set by AWS only when
a service (SNS, S3, EventBridge) acts for a resource of its own; cqs has no such service, so
they are absent from every request and a statement conditioned on them (the usual "allow my
SNS topic" grant) never matches a direct call.

How fresh the Policy is: it is read through the service's queue directory, whose copy is
refreshed from the catalog after `metadata_ttl_seconds` (1 s by default) and never served
older than METADATA_STALE_SECONDS (30 s) while the catalog can be read. So a Policy change
made through one API process is honoured by every other one within 30 seconds (by the
process that made it, at once); SQS itself documents up to 60 seconds for attribute
changes. While the catalog cannot be read, the owner's requests go on with the last copy
(the queue keeps working from Redis, as the rest of the service does), but another
account's request is never decided on a copy older than 30 seconds: it gets the retryable
StorageUnavailable instead.
"""

from __future__ import annotations

from cqs.domain.access_policy import AccessRequest, Decision, evaluate, policy_action
from cqs.domain.errors import AccessDenied, CqsError, QueueDoesNotExist
from cqs.domain.model import Caller, Queue, QueueIdentity
from cqs.service.queue_directory import QueueDirectory

# AWS: "Cross-account permissions don't apply to the following actions" (SQS Developer
# Guide, limitations of custom policies).
OWNER_ONLY_ACTIONS = frozenset({
    "AddPermission",
    "CancelMessageMoveTask",
    "CreateQueue",
    "DeleteQueue",
    "ListMessageMoveTasks",
    "ListQueues",
    "ListQueueTags",
    "RemovePermission",
    "SetQueueAttributes",
    "StartMessageMoveTask",
    "TagQueue",
    "UntagQueue",
})
# What the owner may always do, so that no Policy can lock it out of its own queue.
POLICY_REPAIR_ACTIONS = frozenset({"GetQueueAttributes", "SetQueueAttributes"})
_NO_SUCH_QUEUE_OR_NO_ACCESS = "The specified queue does not exist or you do not have access to it."


class QueueAccess:
    def __init__(self, directory: QueueDirectory) -> None:
        self._directory = directory

    async def authorize(self, caller: Caller, action: str, queue: QueueIdentity) -> None:
        """Return if `caller` may do `action` (an SQS API action name, "SendMessageBatch")
        to `queue`; raise AccessDenied (QueueDoesNotExist for GetQueueUrl) otherwise."""
        if caller.account_id == queue.account_id:
            await self._authorize_owner(caller, action, queue)
        else:
            await self._authorize_other_account(caller, action, queue)

    async def _authorize_owner(self, caller: Caller, action: str, queue: QueueIdentity) -> None:
        if action in POLICY_REPAIR_ACTIONS:
            return
        try:
            stored = await self._directory.get(queue)
        except QueueDoesNotExist:
            return  # the action answers for it (or, for CreateQueue, creates it)
        if self._decide(stored, caller, action) is Decision.DENY:
            raise self._refusal(action, queue)

    async def _authorize_other_account(
        self, caller: Caller, action: str, queue: QueueIdentity
    ) -> None:
        if action in OWNER_ONLY_ACTIONS:
            raise self._refusal(action, queue)
        try:
            stored = await self._directory.get_recent(queue)
        except QueueDoesNotExist:
            raise self._refusal(action, queue) from None
        if self._decide(stored, caller, action) is not Decision.ALLOW:
            raise self._refusal(action, queue)

    def _decide(self, stored: Queue, caller: Caller, action: str) -> Decision:
        policy = stored.attributes.get("Policy")
        if not policy:
            return Decision.NOT_APPLICABLE
        return evaluate(policy, AccessRequest(
            principal_account=caller.account_id,
            principal_arn=caller.principal_arn,
            action=policy_action(action),
            resource=self._directory.arn(stored.identity),
            secure_transport=caller.secure_transport,
        ))

    def _refusal(self, action: str, queue: QueueIdentity) -> CqsError:
        if action == "GetQueueUrl":
            return QueueDoesNotExist(_NO_SUCH_QUEUE_OR_NO_ACCESS)
        return AccessDenied(f"Access to the resource {self._directory.arn(queue)} is denied.")
