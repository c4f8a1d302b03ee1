"""QueueService.access over the real Redis and Cassandra: the owner rules, AddPermission
grants, Deny statements, wildcards, foreign queues that do not exist, and how soon a Policy
written through one service instance is honoured by another on the same storage."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest

from cqs.cassandra_store import CassandraMessageStore, CassandraQueueCatalog
from cqs.domain.errors import AccessDenied, QueueDoesNotExist
from cqs.domain.model import Caller, QueueIdentity, QueueNamespace, SendRequest
from cqs.domain.receipts import ReceiptSigner
from cqs.redis_cache.cache import RedisMessageCache
from cqs.service import QueueService
from cqs.service.queue_directory import METADATA_STALE_SECONDS
from tests.fixtures.manual_clock import ManualClock

OWNER, OTHER, STRANGER = "444455556666", "111122223333", "999988887777"
REGION = "us-east-1"


def caller(account: str, *, tls: bool = False) -> Caller:
    return Caller(account, REGION, access_key_id=f"AKIA{account}", secure_transport=tls)


def service_on(
    catalog: CassandraQueueCatalog,
    store: CassandraMessageStore,
    cache: RedisMessageCache,
    clock: ManualClock | None = None,
) -> QueueService:
    return QueueService(
        catalog, store, cache, ReceiptSigner(b"s" * 32), home=QueueNamespace(OWNER, REGION),
        **({"clock": clock} if clock else {}),
    )


@pytest.fixture
async def service(
    queue_catalog: CassandraQueueCatalog,
    message_store: CassandraMessageStore,
    message_cache: RedisMessageCache,
) -> AsyncIterator[QueueService]:
    service = service_on(queue_catalog, message_store, message_cache)
    yield service
    await service.close()


async def new_queue(service: QueueService, policy: dict[str, object] | None = None) -> QueueIdentity:
    queue = QueueIdentity(OWNER, REGION, f"shared-{uuid.uuid4().hex[:10]}")
    attributes = {"Policy": json.dumps(policy)} if policy else {}
    await service.create_queue(queue, attributes, {})
    return queue


async def allowed(service: QueueService, who: Caller, action: str, queue: QueueIdentity) -> bool:
    try:
        await service.access.authorize(who, action, queue)
    except AccessDenied as denied:
        assert denied.message == f"Access to the resource {service.queue_arn(queue)} is denied."
        return False
    return True


def arn(queue: QueueIdentity) -> str:
    return f"arn:aws:sqs:{queue.region}:{queue.account_id}:{queue.name}"


async def test_without_a_policy_the_owner_may_do_everything_and_other_accounts_nothing(
    service: QueueService,
) -> None:
    queue = await new_queue(service)
    for action in ("SendMessage", "ReceiveMessage", "DeleteQueue", "SetQueueAttributes",
                   "AddPermission", "ListQueueTags", "GetQueueUrl"):
        assert await allowed(service, caller(OWNER), action, queue), action
    for action in ("SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage",
                   "GetQueueAttributes", "PurgeQueue", "DeleteQueue", "SetQueueAttributes"):
        assert not await allowed(service, caller(OTHER), action, queue), action
    with pytest.raises(QueueDoesNotExist) as refused:
        await service.access.authorize(caller(OTHER), "GetQueueUrl", queue)
    assert refused.value.message == (
        "The specified queue does not exist or you do not have access to it."
    )


async def test_an_add_permission_grant_allows_exactly_its_action_to_exactly_its_account(
    service: QueueService,
) -> None:
    queue = await new_queue(service)
    await service.add_permission(queue, "send-only", [OTHER], ["SendMessage"])

    assert await allowed(service, caller(OTHER), "SendMessage", queue)
    assert await allowed(service, caller(OTHER), "SendMessageBatch", queue)
    for action in ("ReceiveMessage", "DeleteMessage", "GetQueueAttributes", "PurgeQueue"):
        assert not await allowed(service, caller(OTHER), action, queue), action
    assert not await allowed(service, caller(STRANGER), "SendMessage", queue)
    assert await allowed(service, caller(OWNER), "ReceiveMessage", queue)

    await service.remove_permission(queue, "send-only")
    assert not await allowed(service, caller(OTHER), "SendMessage", queue)


async def test_a_grant_of_every_action_still_leaves_the_owner_only_actions_to_the_owner(
    service: QueueService,
) -> None:
    queue = await new_queue(service)
    await service.add_permission(queue, "everything", [OTHER], ["*"])
    for action in ("SendMessage", "ReceiveMessage", "DeleteMessageBatch",
                   "ChangeMessageVisibilityBatch", "GetQueueAttributes", "GetQueueUrl",
                   "PurgeQueue", "ListDeadLetterSourceQueues"):
        assert await allowed(service, caller(OTHER), action, queue), action
    for action in ("SetQueueAttributes", "DeleteQueue", "AddPermission", "RemovePermission",
                   "TagQueue", "UntagQueue", "ListQueueTags", "StartMessageMoveTask",
                   "ListMessageMoveTasks", "CancelMessageMoveTask", "CreateQueue"):
        assert not await allowed(service, caller(OTHER), action, queue), action


async def test_a_deny_statement_for_the_owners_own_account_wins(service: QueueService) -> None:
    queue = await new_queue(service)
    await service.set_queue_attributes(queue, {"Policy": json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "sqs:*", "Resource": arn(queue)},
        {"Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{OWNER}:root"},
         "Action": ["sqs:SendMessage", "sqs:PurgeQueue"], "Resource": arn(queue)},
    ]})})

    assert not await allowed(service, caller(OWNER), "SendMessage", queue)
    assert not await allowed(service, caller(OWNER), "SendMessageBatch", queue)
    assert not await allowed(service, caller(OWNER), "PurgeQueue", queue)
    assert await allowed(service, caller(OWNER), "ReceiveMessage", queue)
    assert await allowed(service, caller(OTHER), "SendMessage", queue)


async def test_a_policy_denying_everyone_cannot_lock_the_owner_out_of_the_policy(
    service: QueueService,
) -> None:
    queue = await new_queue(service, {"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "*", "Resource": "*"},
    ]})
    assert not await allowed(service, caller(OWNER), "SendMessage", queue)
    assert not await allowed(service, caller(OWNER), "DeleteQueue", queue)
    assert await allowed(service, caller(OWNER), "GetQueueAttributes", queue)
    assert await allowed(service, caller(OWNER), "SetQueueAttributes", queue)
    assert not await allowed(service, caller(OTHER), "SetQueueAttributes", queue)

    await service.set_queue_attributes(queue, {"Policy": ""})
    assert await allowed(service, caller(OWNER), "SendMessage", queue)


async def test_deny_unless_secure_transport(service: QueueService) -> None:
    queue = await new_queue(service, {"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": OTHER}, "Action": "sqs:SendMessage"},
        {"Effect": "Deny", "Principal": "*", "Action": "sqs:*", "Resource": "*",
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
    ]})
    assert not await allowed(service, caller(OTHER), "SendMessage", queue)
    assert await allowed(service, caller(OTHER, tls=True), "SendMessage", queue)
    assert not await allowed(service, caller(OWNER), "ReceiveMessage", queue)
    assert await allowed(service, caller(OWNER, tls=True), "ReceiveMessage", queue)


async def test_wildcard_grants_in_action_resource_and_principal(service: QueueService) -> None:
    queue = await new_queue(service, {"Statement": [{
        "Effect": "Allow", "Principal": {"AWS": "*"},
        "Action": ["sqs:Receive*", "SQS:Delete*", "sqs:ChangeMessageVisibilit?"],
        "Resource": f"arn:aws:sqs:*:{OWNER}:shared-*",
    }]})
    for action in ("ReceiveMessage", "DeleteMessage", "DeleteMessageBatch",
                   "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"):
        assert await allowed(service, caller(STRANGER), action, queue), action
    assert not await allowed(service, caller(STRANGER), "SendMessage", queue)
    assert not await allowed(service, caller(STRANGER), "DeleteQueue", queue)  # owner-only


async def test_a_grant_conditioned_on_an_sns_topic_does_not_match_a_direct_call(
    service: QueueService,
) -> None:
    queue = await new_queue(service, {"Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage",
        "Condition": {"ArnEquals": {"aws:SourceArn": f"arn:aws:sns:{REGION}:{OWNER}:topic"}},
    }]})
    assert not await allowed(service, caller(STRANGER), "SendMessage", queue)


async def test_a_foreign_queue_that_does_not_exist_is_refused_like_one_that_does(
    service: QueueService,
) -> None:
    missing = QueueIdentity(OWNER, REGION, f"missing-{uuid.uuid4().hex[:10]}")
    assert not await allowed(service, caller(OTHER), "SendMessage", missing)
    with pytest.raises(QueueDoesNotExist) as refused:
        await service.access.authorize(caller(OTHER), "GetQueueUrl", missing)
    assert "or you do not have access to it" in refused.value.message


async def test_the_owners_queue_that_does_not_exist_is_left_to_the_action(
    service: QueueService,
) -> None:
    missing = QueueIdentity(OWNER, REGION, f"missing-{uuid.uuid4().hex[:10]}")
    await service.access.authorize(caller(OWNER), "SendMessage", missing)
    with pytest.raises(QueueDoesNotExist):
        await service.send_message(missing, SendRequest(body="hello"))
    await service.access.authorize(caller(OWNER), "CreateQueue", missing)


async def test_a_policy_written_by_one_instance_is_honoured_by_another_within_the_bound(
    queue_catalog: CassandraQueueCatalog,
    message_store: CassandraMessageStore,
    message_cache: RedisMessageCache,
) -> None:
    clock = ManualClock()
    writer = service_on(queue_catalog, message_store, message_cache, clock)
    reader = service_on(queue_catalog, message_store, message_cache, clock)
    try:
        queue = await new_queue(writer)
        assert not await allowed(reader, caller(OTHER), "SendMessage", queue)  # now cached

        await writer.add_permission(queue, "grant", [OTHER], ["SendMessage"])
        assert await allowed(writer, caller(OTHER), "SendMessage", queue)  # at once, here
        clock.now += METADATA_STALE_SECONDS
        assert await allowed(reader, caller(OTHER), "SendMessage", queue)

        await writer.remove_permission(queue, "grant")
        clock.now += METADATA_STALE_SECONDS
        assert not await allowed(reader, caller(OTHER), "SendMessage", queue)

        # Past the cache's time to live, one request starts a refresh and the change is
        # seen as soon as that catalog read returns.
        await writer.add_permission(queue, "grant", [OTHER], ["SendMessage"])
        clock.now += 2
        for _ in range(100):
            if await allowed(reader, caller(OTHER), "SendMessage", queue):
                break
            await asyncio.sleep(0.02)
        assert await allowed(reader, caller(OTHER), "SendMessage", queue)
    finally:
        await writer.close()
        await reader.close()
