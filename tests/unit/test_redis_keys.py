"""The Redis key layout: every key of a queue shares its hash tag."""

from __future__ import annotations

from cqs.redis_cache.keys import DUE_KEY, QueueKeys


def test_every_key_of_a_queue_carries_the_queue_name_as_hash_tag() -> None:
    keys = QueueKeys("orders")
    assert keys.state == "cqs:{orders}:state"
    for key in keys.message_keys():
        assert key.startswith("cqs:{orders}:")


def test_two_queues_share_no_key_but_the_per_server_due_set() -> None:
    first, second = QueueKeys("orders"), QueueKeys("orders-2")
    assert set(first.script_keys()) & set(second.script_keys()) == {DUE_KEY}


def test_scripts_get_the_state_first_and_the_due_set_last() -> None:
    keys = QueueKeys("orders").script_keys()
    assert keys[0] == QueueKeys("orders").state
    assert keys[-1] == DUE_KEY
    assert len(keys) == len(set(keys)) == 8
