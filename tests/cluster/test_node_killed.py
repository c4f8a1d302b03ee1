"""One of three Cassandra nodes is SIGKILLed under load, then restarted.

With replication factor 3 and QUORUM reads and writes, two nodes are a quorum: sends and
receives go on while the node is down, nothing acknowledged is lost, and the restarted
node catches up: hinted handoff brings it the writes it missed, and a QUORUM read that
must include it (one survivor frozen) repairs what handoff did not (a write in flight to
it when it died); read at consistency ONE through it alone, while the other two are
frozen, it then holds every message sent while it was down. Counts only; waits for
states (a node seen dead or up, sends acknowledged), never for fixed times.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from benchmarks.harness.delivery_ledger import DeliveryLedger
from benchmarks.harness.sqs_wire import SendPlan, client_session, send_messages
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster
from tests.cluster.conftest import (
    ClusterLoad,
    TimedClient,
    message_ids_on_node,
    started_load,
    until_acknowledged,
)
from tests.fixtures.cassandra_cluster import StartClusterApi

VICTIM = 2  # 127.0.0.4; node 0 is the seed
SURVIVORS = (0, 1)
DETECTION_SECONDS = 60.0
HANDOFF_SECONDS = 120.0
DRAIN_SECONDS = 120.0
KEPT_MESSAGES = 20  # sends acknowledged into the kept queue while the node is down


async def only_node_answering(
    cluster: EmbeddedCassandraCluster, keyspace: str, frozen: tuple[int, ...],
    consistency: str = "ONE",
) -> set[str]:
    """The message ids read through the victim while the nodes `frozen` are paused (and seen
    dead by the victim, so that its coordinator does not wait for them)."""
    mark = cluster.log_mark(VICTIM)
    for node in frozen:
        cluster.pause(node)
    try:
        for node in frozen:
            await asyncio.to_thread(
                cluster.wait_for_state, VICTIM, node, "dead", mark, DETECTION_SECONDS
            )
        return await asyncio.to_thread(
            message_ids_on_node, cluster.nodes[VICTIM].contact_point, keyspace, consistency
        )
    finally:
        mark = cluster.log_mark(VICTIM)
        for node in frozen:
            cluster.resume(node)
        for node in frozen:
            await asyncio.to_thread(
                cluster.wait_for_state, VICTIM, node, "up", mark, DETECTION_SECONDS
            )


@pytest.mark.timeout(600)
async def test_a_killed_node_loses_nothing_and_catches_up_after_its_restart(
    cluster: EmbeddedCassandraCluster, start_cluster_api: StartClusterApi, cluster_keyspace: str
) -> None:
    """Wall clock: after draining, 2 s more would show a repeat; nothing signals its absence."""
    servers = [start_cluster_api(), start_cluster_api()]
    run = "kill-" + uuid.uuid4().hex[:8]
    async with client_session() as session:
        clients = [TimedClient(session, server.url) for server in servers]
        kept_url = await clients[1].create_queue(f"{run}-kept")  # nobody receives from it
        load = await started_load(clients, run)

        marks = {i: cluster.log_mark(i) for i in SURVIVORS}
        kill_started = time.time()
        await asyncio.to_thread(cluster.kill, VICTIM)
        # Messages sent while the node is down, kept in a queue nobody reads, so that they
        # are still rows in Cassandra when we ask the restarted node for them.
        kept = DeliveryLedger()
        stop_kept = asyncio.Event()
        kept_sender = asyncio.create_task(send_messages(
            clients[1], kept, SendPlan([kept_url], 10**9, 1, f"{run}-kept"), stop_kept
        ))  # fmt: skip
        for survivor in SURVIVORS:
            await asyncio.to_thread(
                cluster.wait_for_state, survivor, VICTIM, "dead", marks[survivor],
                DETECTION_SECONDS,
            )
        seen_dead_at = time.time()
        acknowledged_while_down = await load.until_acknowledged(200, 60, since=seen_dead_at)
        kept_while_down = await until_acknowledged(kept, KEPT_MESSAGES, 60, since=seen_dead_at)
        delivered_while_down = sum(
            1 for d in load.ledger.deliveries if d.requested_at > seen_dead_at
        )
        stop_kept.set()
        await kept_sender
        window = (kill_started, time.time())

        marks = {i: cluster.log_mark(i) for i in SURVIVORS}
        await asyncio.to_thread(cluster.restart, VICTIM)
        restarted_at = time.time()
        acknowledged_after = await load.until_acknowledged(100, 60, since=restarted_at)
        drained = await load.drain(DRAIN_SECONDS)

        # Hinted handoff: wait (bounded) until both survivors report handing their hints
        # over; the read below is the judge either way.
        def hints_delivered() -> bool:
            return all(cluster.saw_hints_delivered(i, VICTIM, marks[i]) for i in SURVIVORS)

        deadline = time.monotonic() + HANDOFF_SECONDS
        while not hints_delivered() and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        handed_over = hints_delivered()

        # What hinted handoff alone gave it: read through it alone, the others frozen.
        on_victim_after_hints = await only_node_answering(cluster, cluster_keyspace, SURVIVORS)
        # A QUORUM read through it with one survivor frozen must include it, and repairs
        # what it lacks (hinted handoff is best effort: a write in flight to it when it
        # died may miss it).
        quorum_read = await only_node_answering(
            cluster, cluster_keyspace, SURVIVORS[1:], consistency="QUORUM"
        )
        on_victim = await only_node_answering(cluster, cluster_keyspace, SURVIVORS)

        # The kept messages are all there to receive, too.
        kept_load = ClusterLoad(clients, f"{run}-kept", run, producers=0, ledger=kept)
        kept_load.start()
        await kept_load.drain(DRAIN_SECONDS)

    failed_while_down = [
        (i, call.action, round(call.started - kill_started, 2), round(call.seconds, 2),
         call.outcome)
        for i, client in enumerate(clients) for call in client.calls
        if window[0] <= call.started <= window[1] and call.outcome != "ok"
    ]  # fmt: skip
    verdict = load.ledger.verdict()
    kept_verdict = kept.verdict()
    kept_ids = {a.message_id for a in kept.acknowledged}
    missing_on_victim = kept_ids - on_victim
    missing_after_hints = kept_ids - on_victim_after_hints
    print(
        f"load: {load.describe(verdict)}; while the node was down (after the survivors saw it "
        f"dead): {acknowledged_while_down} sends acknowledged, {delivered_while_down} "
        f"deliveries; after its restart {acknowledged_after} sends acknowledged; kept "
        f"queue: {kept_verdict.sent} sent while down; on the restarted node after hinted "
        f"handoff {len(kept_ids) - len(missing_after_hints)} (both survivors logged the "
        f"handoff: {handed_over}), after a QUORUM read through it "
        f"{len(kept_ids) - len(missing_on_victim)}; the survivors saw it dead "
        f"{seen_dead_at - kill_started:.1f} s after the kill; kept sender's errors "
        f"{dict(kept.errors)}; failed calls while the node was down (client, action, "
        f"seconds after the kill, seconds taken, outcome): {failed_while_down[:20]}"
    )
    assert acknowledged_while_down >= 200, "sends stopped while one node of three was down"
    assert delivered_while_down > 0, "receives stopped while one node of three was down"
    assert acknowledged_after >= 100, "sends did not go on after the node's restart"
    assert drained, f"not every acknowledged message was received and deleted: {verdict.lost[:5]}"
    assert not verdict.lost, f"lost {len(verdict.lost)}: {verdict.lost[:10]}"
    assert verdict.unexpected_duplicates == 0, verdict.examples
    # Before the survivors convict it, a QUORUM read may wait on the dead node (Cassandra
    # 1.2 has no speculative retry); a send to a queue this process just created reads
    # nothing, so it goes on like any write.
    kept_before_seen_dead = sum(1 for a in kept.acknowledged if a.requested_at < seen_dead_at)
    assert kept_before_seen_dead > 0, (
        "no send to the new queue was acknowledged until the survivors saw the node dead"
    )
    assert kept_while_down >= KEPT_MESSAGES, (
        f"the kept queue's sender got {kept_while_down} sends acknowledged after the node was "
        "seen dead"
    )
    assert kept_ids <= quorum_read, "a QUORUM read missed messages acknowledged at QUORUM"
    assert not missing_on_victim, (
        f"the restarted node lacks {len(missing_on_victim)} of {len(kept_ids)} messages "
        f"sent while it was down: {sorted(missing_on_victim)[:5]}"
    )
    assert not kept_verdict.lost, f"kept queue lost {len(kept_verdict.lost)}"
    send_errors = {code for (action, code) in load.ledger.errors if action.startswith("Send")}
    assert send_errors <= {"ServiceUnavailable"}, load.ledger.errors
