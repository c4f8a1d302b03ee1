"""One of three Cassandra nodes is frozen (SIGSTOP) under load, longer than the driver
timeout, then resumed.

A frozen node keeps its sockets open and answers nothing, so requests the driver sends it
time out rather than fail fast. The promise of docs/reliability.md for a single node holds
on the cluster: no call takes longer than 2 x the Cassandra timeout + 2 s. Sends go on
through the two other nodes (a quorum), a send refused meanwhile is a 503, and nothing
acknowledged is lost. The node stays frozen until both others have convicted it (the
failure detector's verdict, well past the 2-s driver timeout), then comes back.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from benchmarks._sqs_wire import client_session
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster
from tests.cluster.conftest import TimedClient, started_load
from tests.fixtures.cassandra_cluster import (
    CALL_BOUND_SECONDS,
    CLUSTER_TIMEOUT_SECONDS,
    StartClusterApi,
)

VICTIM = 2
SURVIVORS = (0, 1)
DETECTION_SECONDS = 60.0
DRAIN_SECONDS = 120.0


@pytest.mark.timeout(600)
async def test_calls_stay_bounded_while_a_node_is_frozen_and_nothing_is_lost(
    cluster: EmbeddedCassandraCluster, start_cluster_api: StartClusterApi
) -> None:
    servers = [start_cluster_api(), start_cluster_api()]
    run = "frozen-" + uuid.uuid4().hex[:8]
    async with client_session() as session:
        clients = [TimedClient(session, server.url) for server in servers]
        load = await started_load(clients, run)

        marks = {i: cluster.log_mark(i) for i in SURVIVORS}
        cluster.pause(VICTIM)
        frozen_at = time.time()
        try:
            for survivor in SURVIVORS:
                await asyncio.to_thread(
                    cluster.wait_for_state, survivor, VICTIM, "dead", marks[survivor],
                    DETECTION_SECONDS,
                )
            acknowledged_while_frozen = await load.until_acknowledged(100, 60, since=frozen_at)
        finally:
            marks = {i: cluster.log_mark(i) for i in SURVIVORS}
            cluster.resume(VICTIM)
        resumed_at = time.time()
        for survivor in SURVIVORS:
            await asyncio.to_thread(
                cluster.wait_for_state, survivor, VICTIM, "up", marks[survivor],
                DETECTION_SECONDS,
            )
        acknowledged_after = await load.until_acknowledged(100, 60, since=resumed_at)
        drained = await load.drain(DRAIN_SECONDS)

    verdict = load.ledger.verdict()
    calls = load.calls()
    slowest = max(calls, key=lambda c: c.seconds)
    during = [c for c in calls if frozen_at <= c.started <= resumed_at]
    refused = [c for c in during if c.outcome != "ok"]
    print(
        f"{load.describe(verdict)}; frozen {resumed_at - frozen_at:.1f} s (driver timeout "
        f"{CLUSTER_TIMEOUT_SECONDS:g} s): {len(during)} calls, refused "
        f"{sorted({(c.action, c.outcome, c.status) for c in refused})} x {len(refused)}, "
        f"{acknowledged_while_frozen} sends acknowledged; after the resume "
        f"{acknowledged_after}"
    )
    assert resumed_at - frozen_at > CLUSTER_TIMEOUT_SECONDS
    assert acknowledged_while_frozen >= 100, "sends stopped while one node of three was frozen"
    assert {(c.outcome, c.status) for c in refused} <= {("ServiceUnavailable", 503)}, refused[:5]
    assert acknowledged_after >= 100, "sends did not go on after the resume"
    assert drained, f"not every acknowledged message was received and deleted: {verdict.lost[:5]}"
    assert not verdict.lost, f"lost {len(verdict.lost)}: {verdict.lost[:10]}"
    assert verdict.unexpected_duplicates == 0, verdict.examples
    assert slowest.seconds <= CALL_BOUND_SECONDS, (
        f"a call took {slowest.seconds:.1f} s > {CALL_BOUND_SECONDS:g} s while a node was "
        f"frozen: {slowest}"
    )
