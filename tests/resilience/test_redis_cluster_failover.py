"""Failover drills on a real six-node Redis Cluster under load: every message id checked.

The workload, as deployed: four `cqs serve` processes over one cluster and one keyspace,
two that only take sends and two that only take receives (and deletes), so every message
crosses processes through the cluster. The nemesis hits the primary that owns the queue's
slot, one fault per test:
- killed (SIGKILL): its replica is promoted, clients follow the new slot map;
- frozen (SIGSTOP) past the node timeout: its replica is promoted; when thawed, the old
  primary learns it was replaced and becomes a replica;
- its slots moved away and back with `redis-cli --cluster reshard` while the load runs.
The checker is `Ledger` (tests/resilience/conftest.py): nothing acknowledged may be lost,
nothing unsent may appear, nothing deleted may come back. Deliveries before the previous
delivery's visibility timeout ran out (early duplicates) are printed with the fault they
followed: a failover can lose the last writes the old primary had not passed on yet (an
ambiguous call, after which the service refills the queue's cache from Cassandra), and a
refill shows messages whose receive it lost as visible. docs/operations.md reports them.

Wall clock: each drill runs its load for some seconds on both sides of the fault, as a
failover takes the cluster's node timeout (one second here) plus an election.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from redis.crc import key_slot

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.fixtures.redis_cluster import LocalRedisCluster, wait_until
from tests.resilience.conftest import HOME, Ledger, Workload, sqs_client

LOAD_SECONDS_EACH_SIDE = 6.0
VISIBILITY = 10  # seconds: longer than a failover, so an early duplicate is the fault's doing


def queue_slot(name: str) -> int:
    return int(key_slot(HOME.queue(name).key.encode()))


def queue_in_slots_below(limit: int) -> str:
    """A queue name whose keys live in one of the first `limit` slots (the ones a reshard of
    `limit` slots from slot 0's owner moves)."""
    while True:
        name = "drill-" + uuid.uuid4().hex[:10]
        if queue_slot(name) < limit:
            return name


@pytest.fixture(scope="module")
def drill_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    cluster = LocalRedisCluster(tmp_path_factory.mktemp("drill-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def start_api_processes(start_cqs_server: StartServer, urls: list[str]) -> list[CqsProcess]:
    """Four API processes of one deployment: the first two send, the last two receive."""
    keyspace = "drill_" + uuid.uuid4().hex[:8]
    return [
        start_cqs_server(urls, keyspace=keyspace, extra_args=["--cassandra-timeout-seconds", "2"])
        for _ in range(4)
    ]


@pytest.fixture(scope="module")
def api_processes(
    drill_cluster: LocalRedisCluster, start_cqs_server: StartServer
) -> Iterator[list[CqsProcess]]:
    """Stopped with the module's cluster, not at the end of the session."""
    processes = start_api_processes(start_cqs_server, drill_cluster.urls)
    yield processes
    for process in processes:
        process.stop()


@pytest.fixture
def healthy_cluster(drill_cluster: LocalRedisCluster) -> Iterator[LocalRedisCluster]:
    """The cluster, every node up and synced, before and after the drill."""
    drill_cluster.wait_healthy()
    yield drill_cluster
    for node in drill_cluster.nodes:
        if node.frozen:
            drill_cluster.thaw(node)
        if not node.server.is_running:
            drill_cluster.restart(node)
    drill_cluster.wait_healthy(60)


# What the API processes log about the queue's cache during a drill: the evidence for the
# cause of early duplicates (the outage path: failed writes, dropped caches, refills).
CACHE_EVENTS = {
    "failed cache writes": "cache add failed",
    "caches dropped as stale": "dropped to be refilled",
    "refills": "filling the cache of queue",
}


def cache_events(api: list[CqsProcess], offsets: list[int], queue_name: str) -> dict[str, int]:
    logged = [line for process, offset in zip(api, offsets, strict=True)
              for line in process.log_tail_since(offset).splitlines() if queue_name in line]  # fmt: skip
    return {what: sum(marker in line for line in logged) for what, marker in CACHE_EVENTS.items()}


def run_drill(
    api: list[CqsProcess], queue_name: str, fault: Any, ledger: Ledger
) -> tuple[float, str]:
    """Load the queue, apply `fault()` halfway, drain; (seconds the fault took, its note
    with what the API processes logged about the queue's cache)."""
    offsets = [process.log_path.stat().st_size for process in api]
    senders, receivers = api[:2], api[2:]
    url = sqs_client(senders[0].url).create_queue(QueueName=queue_name)["QueueUrl"]
    sending = Workload(ledger, [(s.url, url) for s in senders], producers=4, consumers=0)
    receiving = Workload(
        ledger, [(r.url, url) for r in receivers], producers=0, consumers=4,
        visibility=VISIBILITY,
    )
    sending.start()
    receiving.start()
    try:
        time.sleep(LOAD_SECONDS_EACH_SIDE)  # Wall clock: load before the fault (docstring)
        started = time.monotonic()
        note = fault()
        fault_seconds = time.monotonic() - started
        time.sleep(LOAD_SECONDS_EACH_SIDE)  # Wall clock: load after the fault (docstring)
        sending.stop_producing()
        assert receiving.drain(60), f"not drained: {ledger.summary()}"
    finally:
        sending.stop()
        receiving.stop()
    return fault_seconds, f"{note}; logged: {cache_events(api, offsets, queue_name)}"


def check(ledger: Ledger, drill: str, fault_seconds: float, note: str) -> None:
    early = ledger.early_redeliveries()
    duplicates = ledger.duplicates()
    print(
        f"\n{drill}: fault {fault_seconds:.1f}s ({note}); {ledger.summary()}; "
        f"early duplicates {len(early)}: {early[:10]}; all duplicates {len(duplicates)}"
    )
    assert len(ledger.acknowledged) >= 200, f"too little load to mean much: {ledger.summary()}"
    assert ledger.lost() == [], f"{drill} lost acknowledged messages: {ledger.summary()}"
    assert ledger.unexpected() == [], f"{drill}: messages nobody sent: {ledger.unexpected()[:5]}"
    assert ledger.resurrected() == [], f"{drill}: deleted messages came back"
    internal = [error for error in ledger.errors() if error.endswith(":InternalError")]
    assert not internal, f"{drill}: the server failed with 500s: {internal}"


@pytest.mark.timeout(240)
def test_killed_primary_is_replaced_and_nothing_acknowledged_is_lost(
    healthy_cluster: LocalRedisCluster, api_processes: list[CqsProcess]
) -> None:
    queue_name = "kill-" + uuid.uuid4().hex[:10]
    slot = queue_slot(queue_name)
    victim = healthy_cluster.node_of_slot(slot)

    def kill_primary() -> str:
        healthy_cluster.kill(victim)
        wait_until(
            lambda: healthy_cluster.node_of_slot_or_none(slot) not in (None, victim), 30,
            "no replica took over the killed primary's slots",
        )
        return f"primary {victim.port} killed, replica promoted"

    ledger = Ledger()
    fault_seconds, note = run_drill(api_processes, queue_name, kill_primary, ledger)
    check(ledger, "primary killed", fault_seconds, note)


@pytest.mark.timeout(240)
def test_frozen_primary_is_replaced_and_nothing_acknowledged_is_lost(
    healthy_cluster: LocalRedisCluster, api_processes: list[CqsProcess]
) -> None:
    queue_name = "freeze-" + uuid.uuid4().hex[:10]
    slot = queue_slot(queue_name)
    victim = healthy_cluster.node_of_slot(slot)

    def freeze_primary() -> str:
        healthy_cluster.freeze(victim)
        wait_until(
            lambda: healthy_cluster.node_of_slot_or_none(slot) not in (None, victim), 30,
            "no replica took over the frozen primary's slots",
        )
        healthy_cluster.thaw(victim)  # it finds itself replaced and follows the new primary
        return f"primary {victim.port} frozen until its replica was promoted, then thawed"

    ledger = Ledger()
    fault_seconds, note = run_drill(api_processes, queue_name, freeze_primary, ledger)
    check(ledger, "primary frozen", fault_seconds, note)


@pytest.mark.timeout(240)
def test_slots_resharded_under_load_lose_nothing(
    healthy_cluster: LocalRedisCluster, api_processes: list[CqsProcess]
) -> None:
    moved_slots = 100
    queue_name = queue_in_slots_below(moved_slots)
    source = healthy_cluster.node_of_slot(0)
    target = next(n for n in healthy_cluster.primaries() if n is not source)

    def reshard_there_and_back() -> str:
        outputs = []
        for giver, taker in ((source, target), (target, source)):
            resharding = healthy_cluster.reshard(giver, taker, moved_slots)
            output, _ = resharding.communicate(timeout=120)
            assert resharding.returncode == 0, output[-2000:]
            outputs.append(taker.port)
        return f"{moved_slots} slots (the queue's among them) moved to {outputs[0]}, then back"

    ledger = Ledger()
    fault_seconds, note = run_drill(api_processes, queue_name, reshard_there_and_back, ledger)
    check(ledger, "slots resharded", fault_seconds, note)
