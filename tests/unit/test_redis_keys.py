"""The Redis key layout: every key of a queue shares its hash tag."""

from __future__ import annotations

from cqs.redis_cache.keys import (
    ARRIVALS_CHANNEL,
    DUE_KEY,
    STORE_DELETE_QUEUES_KEY,
    SWEEPER_KEY,
    QueueKeys,
)

PER_SERVER_KEYS = {DUE_KEY, STORE_DELETE_QUEUES_KEY}


def test_every_key_of_a_queue_carries_the_queue_name_as_hash_tag() -> None:
    keys = QueueKeys("orders")
    assert keys.state == "cqs:{orders}:state"
    for key in [*keys.message_keys(), keys.listening, keys.store_deletes]:
        assert key.startswith("cqs:{orders}:")


def test_two_queues_share_no_key_but_the_per_server_ones() -> None:
    first, second = QueueKeys("orders"), QueueKeys("orders-2")
    assert set(first.script_keys()) & set(second.script_keys()) == PER_SERVER_KEYS


def test_scripts_get_eighteen_distinct_keys_in_the_documented_order() -> None:
    queue = QueueKeys("orders")
    keys = queue.script_keys()
    assert len(keys) == len(set(keys)) == 18
    assert keys[0] == queue.state
    assert keys[7] == DUE_KEY  # _common.lua's helpers use KEYS[8]
    assert keys[8] == queue.listening
    assert keys[9] == queue.store_deletes
    assert keys[10] == STORE_DELETE_QUEUES_KEY
    fifo_keys = [queue.fifo, queue.group_locks, queue.dedup, queue.dedup_expiry,
                 queue.sequence, queue.attempts, queue.attempt_expiry]
    assert keys[11:] == fifo_keys  # KEYS[12] .. KEYS[18] in the Lua headers


def test_the_per_queue_store_deletes_set_is_not_the_per_server_index() -> None:
    assert QueueKeys("store_delete_queues").store_deletes != STORE_DELETE_QUEUES_KEY


def test_per_server_names_are_distinct_and_outside_every_queue_tag() -> None:
    names = {DUE_KEY, STORE_DELETE_QUEUES_KEY, SWEEPER_KEY, ARRIVALS_CHANNEL}
    assert len(names) == 4
    assert not any("{" in name for name in names)
