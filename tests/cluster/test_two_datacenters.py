"""Two data centres, 2 + 2 Cassandra nodes: data centre 1 goes down whole, then comes back.

The topology of the CQS paper and of docs/operations.md ("Two data centres"): every node
names its data centre (GossipingPropertyFileSnitch), the keyspace keeps two replicas in each
(NetworkTopologyStrategy), and each data centre has its own Redis and API processes, which
coordinate through their own nodes (`--cassandra-local-datacenter`) at LOCAL_QUORUM. Each
queue has a home data centre whose API takes its traffic.

The drill, under load, every message id checked:
- queue `home1` lives in data centre 1, `home2` in data centre 2;
- data centre 1 goes down whole: both Cassandra nodes SIGKILLed, its Redis and its API
  process killed. Data centre 2 keeps serving `home2` as before;
- `home1`'s clients move to data centre 2, whose API fills its cache for the queue from its
  own replicas, as the API does for any queue it serves for the first time;
- data centre 1 comes back (its nodes on their data, an empty Redis, a new API process);
  once data centre 2 handed the writes it kept for them over (hinted handoff), `home1`'s
  clients move back;
- both queues drain: nothing acknowledged is lost, and `home1` ends empty (its ledger
  cannot tell whether a delete whose answer died with data centre 1 was done).

Redeliveries of `home1` are expected at each move (what was in flight lived in the Redis of
the data centre it left) and are reported, not asserted. `home2` never moved: it may have
no early repeat. Waits for states (nodes seen dead or up, hints handed over, counts of
acknowledged sends); the drain's last 2 s (a repeat would show up) are wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.harness.delivery_ledger import DeliveryLedger
from benchmarks.harness.sqs_wire import client_session
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster
from cqs.embedded.redis_server import EmbeddedRedis
from tests.cluster.conftest import ClusterLoad, TimedClient
from tests.fixtures.cqs_server import CqsProcess
from tests.fixtures.untimed import outside_test_timeout

pytestmark = pytest.mark.drill  # about 5 minutes: run on demand, see docs/testing.md

ADDRESSES = ("127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8")
DATACENTERS = ("dc1", "dc1", "dc2", "dc2")
REPLICATION = "{'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}"
TIMEOUT_SECONDS = 5.0
SENDS_PER_PHASE = 150
PHASE_SECONDS = 120.0
HANDOFF_SECONDS = 180.0
DRAIN_SECONDS = 180.0


@pytest.fixture(scope="module")
def two_datacenters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCassandraCluster]:
    cluster = EmbeddedCassandraCluster(
        tmp_path_factory.mktemp("two-datacenters"), addresses=ADDRESSES, datacenters=DATACENTERS
    )
    with outside_test_timeout():  # bounded by the cluster's own start timeout
        cluster.start(timeout=240.0)
    try:
        yield cluster
    finally:
        cluster.stop()


class DataCentre:
    """One data centre's Redis and `cqs serve` processes over its own Cassandra nodes."""

    def __init__(
        self, name: str, cluster: EmbeddedCassandraCluster, work_dir: Path, keyspace: str
    ) -> None:
        self.name = name
        self.cluster = cluster
        self.work_dir = work_dir
        self.keyspace = keyspace
        self.redis: EmbeddedRedis | None = None
        self.servers: list[CqsProcess] = []
        self._generation = 0

    def start(self) -> CqsProcess:
        """A Redis (empty) and one API process of this data centre."""
        self._generation += 1
        self.redis = EmbeddedRedis(self.work_dir / f"redis-{self.name}-{self._generation}")
        self.redis.start()
        nodes = [self.cluster.nodes[i].contact_point for i in self.cluster.indexes_in(self.name)]
        logs = self.work_dir / f"logs-{self.name}-{self._generation}"
        logs.mkdir(parents=True)
        server = CqsProcess(
            [self.redis.url], ",".join(nodes), logs, self.keyspace, [
                "--cassandra-replication", REPLICATION,
                "--cassandra-local-datacenter", self.name,
                "--cassandra-timeout-seconds", str(TIMEOUT_SECONDS),
            ],
        )  # fmt: skip
        server.start()
        self.servers.append(server)
        return server

    def go_down(self) -> None:
        """The whole data centre at once: API processes, Redis and Cassandra nodes killed."""
        for server in self.servers:
            with contextlib.suppress(Exception):
                server.kill()
        if self.redis is not None:
            self.redis.kill()
        for index in self.cluster.indexes_in(self.name):
            self.cluster.kill(index)

    def stop(self) -> None:
        for server in self.servers:
            with contextlib.suppress(Exception):
                server.stop()
            print(f"--- log of cqs in {self.name} on port {server.port} ---\n"
                  f"{server.log_tail(2000)}")
        if self.redis is not None:
            with contextlib.suppress(Exception):
                self.redis.stop()


def sends_acknowledged_since(ledger: DeliveryLedger, moment: float) -> int:
    return sum(1 for a in ledger.acknowledged if a.requested_at > moment)


def deliveries_since(ledger: DeliveryLedger, moment: float) -> int:
    return sum(1 for d in ledger.deliveries if d.requested_at > moment)


async def wait_for_handoff(
    cluster: EmbeddedCassandraCluster, givers: list[int], takers: list[int], since: dict[int, int]
) -> bool:
    """True once, for every node in `takers`, a node in `givers` logged that it handed the
    writes it kept for it over; False if HANDOFF_SECONDS ran out."""
    deadline = time.monotonic() + HANDOFF_SECONDS
    while time.monotonic() < deadline:
        if all(
            any(cluster.saw_hints_delivered(giver, taker, since[giver]) for giver in givers)
            for taker in takers
        ):
            return True
        await asyncio.sleep(0.5)
    return False


@pytest.mark.timeout(900)
async def test_one_data_centre_down_whole_then_back_loses_nothing_acknowledged(
    two_datacenters: EmbeddedCassandraCluster, tmp_path: Path
) -> None:
    cluster = two_datacenters
    keyspace = "two_dcs_" + uuid.uuid4().hex[:10]
    first, second = (DataCentre(dc, cluster, tmp_path, keyspace) for dc in ("dc1", "dc2"))
    run = uuid.uuid4().hex[:8]
    loads: list[ClusterLoad] = []
    try:
        api1, api2 = first.start(), second.start()
        async with client_session() as session:
            client1, client2 = TimedClient(session, api1.url), TimedClient(session, api2.url)
            await client1.create_queue("home1")
            await client2.create_queue("home2")
            home1 = ClusterLoad([client1], "home1", f"{run}-home1-dc1")
            home2 = ClusterLoad([client2], "home2", f"{run}-home2")
            loads += [home1, home2]
            home1.start()
            home2.start()
            for load in (home1, home2):
                assert await load.until_acknowledged(SENDS_PER_PHASE, PHASE_SECONDS) >= (
                    SENDS_PER_PHASE
                ), load.describe(load.ledger.verdict())

            # Data centre 1 goes down whole.
            givers = cluster.indexes_in("dc2")
            takers = cluster.indexes_in("dc1")
            marks = {giver: cluster.log_mark(giver) for giver in givers}
            down_at = time.time()
            first.go_down()
            await home1.halt()  # its clients' calls fail from here on
            for giver in givers:
                for taker in takers:
                    await asyncio.to_thread(
                        cluster.wait_for_state, giver, taker, "dead", marks[giver], 60.0
                    )
            served_while_down = await home2.until_acknowledged(
                SENDS_PER_PHASE, PHASE_SECONDS, since=down_at
            )

            # home1's clients move to data centre 2.
            moved_at = time.time()
            home1_in_dc2 = ClusterLoad(
                [client2], "home1", f"{run}-home1-dc2", ledger=home1.ledger
            )
            loads.append(home1_in_dc2)
            home1_in_dc2.start()
            moved_sends = await home1_in_dc2.until_acknowledged(
                SENDS_PER_PHASE, PHASE_SECONDS, since=moved_at
            )
            home2_while_down = (
                sends_acknowledged_since(home2.ledger, down_at),
                deliveries_since(home2.ledger, down_at),
            )

            # Data centre 1 comes back; home1 moves home once the hints are handed over.
            back_marks = {giver: cluster.log_mark(giver) for giver in givers}
            with outside_test_timeout():
                await asyncio.to_thread(cluster.ensure_running, 240.0)
            handed_over = await wait_for_handoff(cluster, givers, takers, back_marks)
            api1_again = first.start()
            client1_again = TimedClient(session, api1_again.url)
            await home1_in_dc2.halt()
            back_at = time.time()
            home1_back = ClusterLoad(
                [client1_again], "home1", f"{run}-home1-back", ledger=home1.ledger
            )
            loads.append(home1_back)
            home1_back.start()
            back_sends = await home1_back.until_acknowledged(
                SENDS_PER_PHASE, PHASE_SECONDS, since=back_at
            )
            drained = [
                await home1_back.drain_until_empty(DRAIN_SECONDS),
                await home2.drain(DRAIN_SECONDS),
            ]
    finally:
        for load in loads:
            with contextlib.suppress(Exception):
                await load.halt()
        first.stop()
        second.stop()

    moved, stayed = home1.ledger.verdict(), home2.ledger.verdict()
    print(
        f"home1 (moved to dc2 and back): {home1_back.describe(moved)}; "
        f"home2 (stayed in dc2): {home2.describe(stayed)}; while dc1 was down home2 had "
        f"{home2_while_down[0]} sends acknowledged and {home2_while_down[1]} deliveries; "
        f"hints handed over: {handed_over}"
    )
    assert served_while_down >= SENDS_PER_PHASE, "data centre 2 stopped serving its queue"
    assert moved_sends >= SENDS_PER_PHASE, "data centre 2 did not serve the queue moved to it"
    assert handed_over, "data centre 2 did not hand its hints over to data centre 1's nodes"
    assert back_sends >= SENDS_PER_PHASE, "the queue was not served again at home"
    assert drained == [True, True], (moved.lost[:5], stayed.lost[:5])
    assert not moved.lost, f"home1 lost {len(moved.lost)}: {moved.lost[:10]}"
    assert not stayed.lost, f"home2 lost {len(stayed.lost)}: {stayed.lost[:10]}"
    assert stayed.unexpected_duplicates == 0, stayed.examples
