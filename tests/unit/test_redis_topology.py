"""Reading CQS_REDIS_URLS into a topology: servers on the ring, one cluster, or Sentinels."""

from __future__ import annotations

import pytest

from cqs.domain.model import QueueIdentity
from cqs.main import main
from cqs.redis_cache.keys import QueueKeys, script_keys
from cqs.redis_cache.topology import TopologyKind, parse_topology


def test_plain_urls_are_servers_on_the_ring() -> None:
    topology = parse_topology(["redis://a:6379/0", "rediss://b:6380/0"])
    assert topology.kind is TopologyKind.SERVERS
    assert topology.urls == ("redis://a:6379/0", "rediss://b:6380/0")
    assert not topology.one_cache


def test_cluster_entries_are_the_seed_nodes_of_one_cache() -> None:
    topology = parse_topology(
        ["redis-cluster://:s3cret@10.0.0.1:7000", "redis-cluster://:s3cret@10.0.0.2"]
    )
    assert topology.kind is TopologyKind.CLUSTER and topology.one_cache
    assert topology.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 6379))
    assert topology.password == "s3cret"
    assert "s3cret" not in topology.label and "10.0.0.1:7000" in topology.label


def test_sentinel_entries_name_the_primary_by_their_path() -> None:
    topology = parse_topology(
        ["redis-sentinel://s1:26379/cache", "redis-sentinel://s2/cache"]
    )
    assert topology.kind is TopologyKind.SENTINEL
    assert topology.nodes == (("s1", 26379), ("s2", 26379))
    assert topology.primary_name == "cache"


@pytest.mark.parametrize(
    ("urls", "complaint"),
    [
        (["redis://a:6379/0", "redis-cluster://b:7000"], "mixes"),
        (["redis-sentinel://s1:26379"], "same primary"),
        (["redis-sentinel://s1:26379/a", "redis-sentinel://s2:26379/b"], "same primary"),
        (["redis-cluster://b:7000/3"], "no path"),
        (["redis-cluster://:x@a:7000", "redis-cluster://:y@b:7000"], "different credentials"),
        (["memcached://a:11211"], "unknown"),
        ([], "no Redis server"),
    ],
)
def test_a_list_that_is_no_one_topology_is_refused_with_the_reason(
    urls: list[str], complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_topology(urls)


def test_under_a_cluster_every_key_of_a_queue_script_shares_the_queue_hash_tag() -> None:
    queue = QueueIdentity("123456789012", "us-east-1", "orders.fifo")
    tag = "{" + queue.key + "}"
    assert all(tag in key for key in script_keys(queue, clustered=True))
    assert not all(tag in key for key in script_keys(queue))  # one server: cqs:due is shared
    assert tag in QueueKeys(queue).arrivals


def test_serve_refuses_a_mixed_list_before_starting_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--redis-urls", "redis://a:6379/0,redis-cluster://b:7000",
              "--cassandra-hosts", "127.0.0.1:1"])  # fmt: skip
    assert exit_info.value.code == 2
    assert "mixes" in capsys.readouterr().err
