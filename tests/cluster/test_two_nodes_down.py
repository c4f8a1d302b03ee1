"""Two of three Cassandra nodes are SIGKILLed under load: no quorum, then both come back.

With replication factor 3 and QUORUM writes, one node cannot acknowledge a write: every
send asked after the kill fails with a retryable 503 ServiceUnavailable and none is
acknowledged; messages already in the cache can still be received. Once both nodes are
back, sends are acknowledged again and every acknowledged message is delivered. Counts
only; waits for states (nodes seen dead or up, sends refused or acknowledged).
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from benchmarks.harness.sqs_wire import client_session
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster
from tests.cluster.conftest import TimedClient, started_load
from tests.fixtures.cassandra_cluster import StartClusterApi

SURVIVOR = 0  # the seed; the driver sessions keep it as a live host
VICTIMS = (1, 2)
DETECTION_SECONDS = 60.0
DRAIN_SECONDS = 120.0
REFUSALS_WANTED = 20


@pytest.mark.timeout(600)
async def test_without_quorum_sends_are_refused_with_503_and_nothing_acknowledged_is_lost(
    cluster: EmbeddedCassandraCluster, start_cluster_api: StartClusterApi
) -> None:
    """Wall clock: after draining, 2 s more would show a repeat; nothing signals its absence."""
    servers = [start_cluster_api(), start_cluster_api()]
    run = "quorum-" + uuid.uuid4().hex[:8]
    async with client_session() as session:
        clients = [TimedClient(session, server.url) for server in servers]
        load = await started_load(clients, run)

        mark = cluster.log_mark(SURVIVOR)
        for victim in VICTIMS:
            cluster.kill(victim)
        killed_at = time.time()
        for victim in VICTIMS:
            await asyncio.to_thread(
                cluster.wait_for_state, SURVIVOR, victim, "dead", mark, DETECTION_SECONDS
            )

        def refused_since(moment: float) -> int:
            return sum(
                1 for client in clients for call in client.calls
                if call.action.startswith("SendMessage") and call.outcome != "ok"
                and call.started > moment
            )  # fmt: skip

        seen_dead_at = time.time()
        deadline = time.monotonic() + 60
        while refused_since(seen_dead_at) < REFUSALS_WANTED and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        delivered_while_down = sum(1 for d in load.ledger.deliveries if d.requested_at > killed_at)
        back_at = time.time()  # both nodes are down until here
        await asyncio.to_thread(cluster.ensure_running)
        acknowledged_after = await load.until_acknowledged(100, 120, since=time.time())
        drained = await load.drain(DRAIN_SECONDS)

    verdict = load.ledger.verdict()
    sends_while_down = [
        call for client in clients for call in client.calls
        if call.action.startswith("SendMessage") and killed_at < call.started
        and call.started + call.seconds < back_at
    ]  # fmt: skip
    acknowledged_while_down = [
        a for a in load.ledger.acknowledged if killed_at < a.requested_at < back_at
    ]
    refusals = sorted({c.outcome for c in sends_while_down if c.outcome != "ok"})
    statuses = sorted({c.status for c in sends_while_down if c.outcome != "ok"})
    print(
        f"{load.describe(verdict)}; while two nodes were down: {len(sends_while_down)} send "
        f"calls ({refusals}), {len(acknowledged_while_down)} messages acknowledged, "
        f"{delivered_while_down} deliveries; after they returned {acknowledged_after} sends "
        f"acknowledged"
    )
    assert refused_since(seen_dead_at) >= REFUSALS_WANTED, "sends were not refused without quorum"
    assert not acknowledged_while_down, f"acknowledged without quorum: {acknowledged_while_down[:5]}"
    assert refusals == ["ServiceUnavailable"] and statuses == [503], (refusals, statuses)
    assert acknowledged_after >= 100, "sends were not acknowledged again after the nodes returned"
    assert drained, f"not every acknowledged message was received and deleted: {verdict.lost[:5]}"
    assert not verdict.lost, f"lost {len(verdict.lost)}: {verdict.lost[:10]}"
    assert verdict.unexpected_duplicates == 0, verdict.examples
