"""The Redis key layout: every key of a queue shares its hash tag."""

from __future__ import annotations

import pytest

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.keys import (
    ARRIVALS_CHANNEL,
    DUE_KEY,
    STORE_DELETE_QUEUES_KEY,
    SWEEPER_KEY,
    QueueKeys,
    queue_from_key,
)

PER_SERVER_KEYS = {DUE_KEY, STORE_DELETE_QUEUES_KEY}


def queue(name: str, account_id: str = "000000000000", region: str = "us-east-1") -> QueueKeys:
    return QueueKeys(QueueIdentity(account_id, region, name))


def test_every_key_of_a_queue_carries_account_region_and_name_as_hash_tag() -> None:
    keys = queue("orders")
    assert keys.state == "cqs:{000000000000:us-east-1:orders}:state"
    for key in [*keys.message_keys(), keys.listening, keys.store_deletes]:
        assert key.startswith("cqs:{000000000000:us-east-1:orders}:")


def test_two_queues_share_no_key_but_the_per_server_ones() -> None:
    first, second = queue("orders"), queue("orders-2")
    assert set(first.script_keys()) & set(second.script_keys()) == PER_SERVER_KEYS


@pytest.mark.parametrize(
    "other", [queue("orders", account_id="111122223333"), queue("orders", region="eu-west-1")]
)
def test_a_queue_of_the_same_name_in_another_account_or_region_shares_no_queue_key(
    other: QueueKeys,
) -> None:
    assert set(queue("orders").script_keys()) & set(other.script_keys()) == PER_SERVER_KEYS


def test_a_queue_key_reads_back_as_the_queue_and_a_legacy_name_as_none() -> None:
    identity = QueueIdentity("123456789012", "eu-west-1", "jobs.fifo")
    assert queue_from_key(identity.key) == identity
    assert queue_from_key("orders") is None  # written by a version before queue keys


def test_scripts_get_eighteen_distinct_keys_in_the_documented_order() -> None:
    queue_keys = queue("orders")
    keys = queue_keys.script_keys()
    assert len(keys) == len(set(keys)) == 18
    assert keys[0] == queue_keys.state
    assert keys[7] == DUE_KEY  # _common.lua's helpers use KEYS[8]
    assert keys[8] == queue_keys.listening
    assert keys[9] == queue_keys.store_deletes
    assert keys[10] == STORE_DELETE_QUEUES_KEY
    fifo_keys = [queue_keys.fifo, queue_keys.group_locks, queue_keys.dedup,
                 queue_keys.dedup_expiry, queue_keys.sequence, queue_keys.attempts,
                 queue_keys.attempt_expiry]
    assert keys[11:] == fifo_keys  # KEYS[12] .. KEYS[18] in the Lua headers


def test_the_per_queue_store_deletes_set_is_not_the_per_server_index() -> None:
    assert queue("store_delete_queues").store_deletes != STORE_DELETE_QUEUES_KEY


def test_per_server_names_are_distinct_and_outside_every_queue_tag() -> None:
    names = {DUE_KEY, STORE_DELETE_QUEUES_KEY, SWEEPER_KEY, ARRIVALS_CHANNEL}
    assert len(names) == 4
    assert not any("{" in name for name in names)
