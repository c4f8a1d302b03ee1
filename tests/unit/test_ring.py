"""The consistent-hash ring that maps queue names to Redis servers."""

from __future__ import annotations

from collections import Counter

import pytest

from cqs.redis_cache.ring import HashRing
from cqs.redis_cache.servers import ring_node, server_label

SERVERS = [f"redis://10.0.0.{index}:6379/0" for index in range(1, 4)]
QUEUES = [f"queue-{index}" for index in range(10_000)]


def test_one_server_owns_every_queue() -> None:
    ring = HashRing(SERVERS[:1])
    assert {ring.node_for(queue) for queue in QUEUES} == {SERVERS[0]}


def test_the_same_servers_always_give_the_same_owner() -> None:
    first, second = HashRing(SERVERS), HashRing(list(reversed(SERVERS)))
    assert all(first.node_for(queue) == second.node_for(queue) for queue in QUEUES)


def test_queues_spread_over_every_server() -> None:
    ring = HashRing(SERVERS)
    owners = Counter(ring.node_for(queue) for queue in QUEUES)
    assert set(owners) == set(SERVERS)
    for server in SERVERS:
        # 160 virtual nodes keep each share near 1/3
        assert 0.25 < owners[server] / len(QUEUES) < 0.42


def test_adding_a_server_moves_only_about_a_quarter_of_the_queues_all_to_it() -> None:
    before = HashRing(SERVERS)
    new_server = "redis://10.0.0.4:6379/0"
    after = HashRing([*SERVERS, new_server])
    moved = [queue for queue in QUEUES if before.node_for(queue) != after.node_for(queue)]
    assert 0.17 < len(moved) / len(QUEUES) < 0.33
    assert {after.node_for(queue) for queue in moved} == {new_server}


def test_removing_a_server_moves_only_its_queues() -> None:
    before = HashRing(SERVERS)
    after = HashRing(SERVERS[:2])
    for queue in QUEUES:
        if before.node_for(queue) != SERVERS[2]:
            assert after.node_for(queue) == before.node_for(queue)


def test_a_ring_refuses_no_servers_and_duplicate_servers() -> None:
    with pytest.raises(ValueError):
        HashRing([])
    with pytest.raises(ValueError):
        HashRing([SERVERS[0], SERVERS[0]])


# --- secured URLs: the same place on the ring, no password in a name -------------------------


def test_a_password_or_tls_on_a_server_url_moves_no_queue() -> None:
    plain = ["redis://10.0.0.1:6379/0", "redis://10.0.0.2:6379/0", "redis://10.0.0.3:6379/0"]
    secured = [
        "rediss://cqs:pw1@10.0.0.1:6379/0", "redis://:pw2@10.0.0.2:6379/0",
        "rediss://10.0.0.3:6379/0",
    ]
    before = HashRing(plain)
    after = HashRing([ring_node(url) for url in secured])

    keys = [f"000000000000/us-east-1/q{i}" for i in range(2000)]

    assert [ring_node(url) for url in plain] == plain  # plain URLs keep their own names
    assert [after.node_for(key) for key in keys] == [before.node_for(key) for key in keys]


def test_a_server_label_never_holds_the_user_name_or_password() -> None:
    url = "rediss://cqs-app:s3cret@redis.internal:6380/2"

    assert server_label(url) == "redis.internal:6380/2"
    assert "s3cret" not in ring_node(url) and "cqs-app" not in ring_node(url)
