"""Partial-fault scenarios over the test hosts: a workload, a nemesis, a checker, a table row.

Owns running one scenario on a `Deployment` (tests/hosts/deployment.py): a fresh queue
(standard or FIFO), every host's clients (tests/hosts/workload.py) by its role (send,
receive, both), a schedule of faults injected at set seconds into the sends and healed after
set durations, then a drain until every acknowledged message was received, and the verdict
of the merged delivery ledger: sent, received, lost, early duplicates (with the servers'
redelivery counters by reason as their cause), deliveries after delete, FIFO order
violations, failed calls, and the time from the end of the sends and faults until nothing
was missing.

The faults (`Fault`): a host cut off from Redis or from Cassandra (blackhole route), a host's
link to Cassandra slowed (a narrow HTB class), Redis stalled (SIGSTOP) or killed and
restarted empty, Cassandra stalled, an API process killed (SIGKILL) and restarted or
stalled (SIGSTOP), one node of a three-node Cassandra cut off from its peers. `standard_faults`
builds the named ones of issue 26; `random_schedule` a seeded schedule for the benchmark.
`purge_and_resend` checks a FIFO deduplication id sent again after PurgeQueue.

Wall clock: the faults are real (routes, signals), so a scenario lasts as long as its sends.
Imports the hosts' modules and the load tools' JSON client; never cqs.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict
from benchmarks.harness.sqs_wire import SqsJsonClient, client_session
from tests.hosts.deployment import Deployment
from tests.hosts.network import CASSANDRA_ADDRESSES, REDIS_ADDRESS, inside
from tests.hosts.workload import HostClients, HostJob, merged, order_violations, undelivered

ROLES = {"h1": "send", "h2": "receive", "h3": "both"}


@dataclass(frozen=True)
class Load:
    messages: int  # in all, over the sending hosts
    send_seconds: float
    polls: int  # long polls in all, over the receiving servers
    producers_per_endpoint: int = 4
    wait_seconds: int = 5
    visibility_seconds: int = 60  # longer than a scenario: every repeat is early
    drain_seconds: float = 60.0
    linger_seconds: float = 2.0  # after the drain, so that late repeats show


@dataclass(frozen=True)
class Fault:
    name: str
    at: float  # seconds into the sends
    lasts: float
    inject: Callable[[Deployment], None]
    heal: Callable[[Deployment], None]


def cut_from_redis(host: str, at: float, lasts: float) -> Fault:
    return Fault(
        f"{host} cut off from Redis {lasts:g} s", at, lasts,
        lambda d: d.network.cut(d.network.host(host), REDIS_ADDRESS),
        lambda d: d.network.reconnect(d.network.host(host), REDIS_ADDRESS),
    )


def cut_from_cassandra(host: str, at: float, lasts: float) -> Fault:
    def each(action: Callable[..., None], d: Deployment) -> None:
        for address in d.network.cassandra_addresses:
            action(d.network.host(host), address)

    return Fault(
        f"{host} cut off from Cassandra {lasts:g} s", at, lasts,
        lambda d: each(d.network.cut, d), lambda d: each(d.network.reconnect, d),
    )


def slow_cassandra_link(host: str, at: float, lasts: float, rate: str = "64kbit") -> Fault:
    return Fault(
        f"{host}'s link to Cassandra slowed to {rate} {lasts:g} s", at, lasts,
        lambda d: d.network.slow(d.network.host(host), CASSANDRA_ADDRESSES[0], rate),
        lambda d: d.network.speed_up(d.network.host(host)),
    )


def redis_stall(at: float, lasts: float) -> Fault:
    return Fault(f"Redis SIGSTOP {lasts:g} s", at, lasts,
                 lambda d: d.pause_redis(), lambda d: d.resume_redis())


def redis_restart(at: float, lasts: float) -> Fault:
    return Fault(f"Redis SIGKILL, restarted empty after {lasts:g} s", at, lasts,
                 lambda d: d.kill_redis(), lambda d: d.restart_redis())


def cassandra_stall(at: float, lasts: float) -> Fault:
    return Fault(f"Cassandra SIGSTOP {lasts:g} s", at, lasts,
                 lambda d: d.pause_cassandra(), lambda d: d.resume_cassandra())


def api_crash(host: str, at: float, lasts: float) -> Fault:
    return Fault(f"an API process on {host} SIGKILL, restarted after {lasts:g} s", at, lasts,
                 lambda d: d.kill_api(host), lambda d: d.restart_api(host))


def cassandra_partition(node: int, at: float, lasts: float) -> Fault:
    """One node of a Cassandra cluster cut off from its peers; the API hosts still reach it."""
    def node_of(d: Deployment) -> tuple[str, int]:
        assert d.cassandra is not None
        return d.network.cassandra_addresses[node], d.cassandra.storage_port

    return Fault(
        f"Cassandra node {node + 1} cut off from its peers {lasts:g} s", at, lasts,
        lambda d: d.network.partition_cassandra(*node_of(d)),
        lambda d: d.network.rejoin_cassandra(*node_of(d)),
    )


def api_stall(host: str, at: float, lasts: float) -> Fault:
    return Fault(f"an API process on {host} SIGSTOP {lasts:g} s", at, lasts,
                 lambda d: d.pause_api(host), lambda d: d.resume_api(host))


def standard_faults(kind: str, at: float = 3.0, lasts: float = 5.0) -> list[Fault]:
    """Issue 26's faults by name: cut, stall, slow, all (those three in turn), and
    redis-restart, cassandra-stall, api-crash (a receiving process, then a sending one),
    api-stall (h3's process, which sends and receives), cut-cassandra (h3 cut off from
    Cassandra), cassandra-partition (on a three-node cluster: node 2 cut off from its
    peers)."""
    faults = {
        "cut": [cut_from_redis("h1", at, lasts)],
        "stall": [redis_stall(at, lasts)],
        "slow": [slow_cassandra_link("h1", at, lasts * 1.5)],
        "redis-restart": [redis_restart(at, lasts / 2)],
        "cassandra-stall": [cassandra_stall(at, lasts)],
        "api-crash": [api_crash("h2", at, lasts / 2), api_crash("h1", at + lasts, lasts / 2)],
        "api-stall": [api_stall("h3", at, lasts)],
        "cut-cassandra": [cut_from_cassandra("h3", at, lasts)],
        "cassandra-partition": [cassandra_partition(1, at, lasts * 2)],  # three nodes
        "none": [],
    }
    if kind == "all":
        return [cut_from_redis("h1", at, lasts), redis_stall(at + lasts + 2, lasts * 0.8),
                slow_cassandra_link("h3", at + 2 * lasts + 4, lasts)]
    return faults[kind]


def random_schedule(seed: int, seconds: float, every: float = 30.0) -> list[Fault]:
    """One fault in each `every`-second slot, of a random kind, host and length (seeded).
    Kinds: a host cut off from Redis or from Cassandra, a slowed link to Cassandra, a Redis
    stall, Redis killed and restarted empty, a Cassandra stall, an API process killed and
    restarted."""
    rng = random.Random(seed)
    faults = []
    for start in range(int(every / 3), int(seconds - every / 2), int(every)):
        at = start + rng.uniform(0, every / 4)
        lasts = rng.uniform(2.0, every / 2)
        host = rng.choice(list(ROLES))
        faults.append(rng.choice([
            cut_from_redis(host, at, round(lasts, 1)),
            cut_from_cassandra(host, at, round(lasts, 1)),
            slow_cassandra_link(host, at, round(lasts, 1)),
            redis_stall(at, round(min(lasts, 10.0), 1)),
            redis_restart(at, round(min(lasts, 5.0), 1)),
            cassandra_stall(at, round(min(lasts, 10.0), 1)),
            api_crash(host, at, round(min(lasts, 5.0), 1)),
        ]))
    return faults


@dataclass
class Outcome:
    scenario: str
    fifo: bool
    verdict: Verdict
    causes: Counter[str]  # server redeliveries by reason
    order_violations: int
    errors: Counter[tuple[str, str]]
    calls_ok: int
    recovered_seconds: float | None  # end of sends and faults -> nothing missing; None: never
    faults: list[str] = field(default_factory=list)
    began_at: float = 0.0  # time.time() when the sends began, for reading `ledgers`
    ledgers: dict[str, DeliveryLedger] = field(default_factory=dict)  # by host

    def summary(self) -> str:
        v = self.verdict
        return (
            f"{self.scenario} ({'; '.join(self.faults) or 'no fault'}): sent {v.sent}, "
            f"received {v.received}, lost {len(v.lost)}, "
            f"early duplicates {v.early_duplicates} (server redeliveries by reason "
            f"{dict(self.causes)}), after delete {v.deliveries_after_delete}, before their "
            f"delay {v.delivered_before_delay}, order "
            f"violations {self.order_violations}, received unacknowledged "
            f"{v.received_unacknowledged}, calls ok {self.calls_ok}, failed "
            f"{sum(self.errors.values())} {dict(self.errors)}, recovered "
            f"{self.recovered_seconds if self.recovered_seconds is None else round(self.recovered_seconds, 1)} s "
            f"after the sends and faults ended; examples {v.examples[:3]}"
        )


    def repeat_timelines(self, limit: int = 5) -> list[str]:
        """For the first `limit` unexpected repeats: every delivery and delete of the
        message, by host, in seconds from the start of the sends (to trace their cause)."""
        lines = []
        for example in self.verdict.examples[:limit]:
            events = []
            for host, ledger in self.ledgers.items():
                for d in ledger.deliveries:
                    if d.message_id == example.message_id:
                        events.append((d.requested_at, f"{host} receive asked "
                                       f"{d.requested_at - self.began_at:.3f} answered "
                                       f"{d.answered_at - self.began_at:.3f} count "
                                       f"{d.receive_count}"))
                for x in ledger.deletes:
                    if x.message_id == example.message_id:
                        events.append((x.requested_at, f"{host} delete asked "
                                       f"{x.requested_at - self.began_at:.3f} answered "
                                       f"{x.answered_at - self.began_at:.3f} {x.error or 'ok'}"))
            for host, ledger in self.ledgers.items():
                for a in ledger.acknowledged:
                    if a.message_id == example.message_id:
                        events.append((a.requested_at, f"{host} send asked "
                                       f"{a.requested_at - self.began_at:.3f} answered "
                                       f"{a.answered_at - self.began_at:.3f}"))
            lines.append(f"{example.kind} repeat of {example.message_id}: "
                         + "; ".join(text for _, text in sorted(events)))
        return lines


def _create_queue(deployment: Deployment, name: str, fifo: bool, visibility: int) -> str:
    server = deployment.servers[0]
    attributes = {"VisibilityTimeout": str(visibility)}
    if fifo:
        attributes["FifoQueue"] = "true"

    async def create() -> str:
        async with client_session() as session:
            return await SqsJsonClient(session, server.url).create_queue(name, attributes)

    with inside(server.host.namespace):
        return asyncio.run(create())


def run_scenario(
    deployment: Deployment, scenario: str, load: Load, faults: Sequence[Fault],
    fifo: bool = False, roles: Mapping[str, str] = ROLES,
) -> Outcome:
    """Run the load with `faults` on a fresh queue; every fault is healed before the drain."""
    run_id = uuid.uuid4().hex[:8]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", scenario)[:40] + f"-{run_id}" + (".fifo" if fifo else "")
    queue_url = _create_queue(deployment, name, fifo, load.visibility_seconds)
    senders = [h for h, role in roles.items() if role in ("send", "both")]
    receivers = [s for s in deployment.servers if roles[s.host.name] in ("receive", "both")]
    clients = []
    for host_name, role in roles.items():
        host = deployment.network.host(host_name)
        on_host = [s.url for s in deployment.servers_on(host_name)]
        clients.append(HostClients(HostJob(
            host, on_host if role in ("send", "both") else [],
            on_host if role in ("receive", "both") else [], [queue_url],
            load.messages // len(senders) if host_name in senders else 0, load.send_seconds,
            load.producers_per_endpoint, load.polls // max(1, len(receivers)),
            load.wait_seconds, load.visibility_seconds, run_id,
        )))
    events = sorted(
        [(f.at, f.inject, False) for f in faults] + [(f.at + f.lasts, f.heal, True) for f in faults],
        key=lambda e: e[0],
    )
    began, began_at = time.monotonic(), time.time()
    for client in clients:
        client.start()
    last_heal = began
    try:
        for at, action, heals in events:
            time.sleep(max(0.0, began + at - time.monotonic()))
            action(deployment)
            if heals:
                last_heal = time.monotonic()
        for client in clients:
            client.producers_done.wait(load.send_seconds + 120)
    finally:
        deployment.network.heal()
        deployment.heal()
    recovered: float | None = None
    settled = max(last_heal, time.monotonic())  # sends and faults are over
    deadline = time.monotonic() + load.drain_seconds
    while time.monotonic() < deadline:
        if not undelivered(clients):
            recovered = time.monotonic() - settled
            break
        time.sleep(0.25)
    time.sleep(load.linger_seconds)
    for client in clients:
        client.request_stop()
    for client in clients:
        client.join(30)
    failures = [c.failure for c in clients if c.failure is not None]
    if failures:
        raise RuntimeError(f"a host's clients failed: {failures[0]!r}") from failures[0]
    ledger = merged([c.ledger for c in clients])
    return Outcome(
        scenario, fifo, ledger.verdict(), deployment.redeliveries([name]),
        order_violations(ledger) if fifo else 0, ledger.errors,
        sum(len(d) for a, d in ledger.durations.items()), recovered,
        [f"{f.name} at {f.at:.0f} s{_answered(ledger, began_at, f)}" for f in faults],
        began_at,
        {c.job.host.name: c.ledger for c in clients},
    )


def _answered(ledger: DeliveryLedger, began_at: float, fault: Fault) -> str:
    """Availability during a fault: the share of calls that ended meanwhile answered."""
    share = ledger.answered_share(began_at + fault.at, began_at + fault.at + fault.lasts)
    return "" if share is None else f" ({share:.0%} of calls answered)"


def purge_and_resend(deployment: Deployment) -> tuple[str, str, list[str]]:
    """FIFO: send deduplication id d through h1, PurgeQueue through h3, send d again through
    h1, receive through h2. Returns (first id, second id, ids received)."""
    first_server = deployment.servers_on("h1")[0]
    name = f"purge-{uuid.uuid4().hex[:8]}.fifo"
    queue_url = _create_queue(deployment, name, True, 30)
    entry = {"QueueUrl": queue_url, "MessageGroupId": "g", "MessageDeduplicationId": "d"}

    async def on(server_url: str, action: str, payload: Mapping[str, object],
                 wait: float = 0) -> dict[str, object]:
        async with client_session() as session:
            return await SqsJsonClient(session, server_url).call(action, payload, wait)

    with inside(first_server.host.namespace):
        first = asyncio.run(on(first_server.url, "SendMessage", {**entry, "MessageBody": "one"}))
    purger = deployment.servers_on("h3")[0]
    with inside(purger.host.namespace):
        asyncio.run(on(purger.url, "PurgeQueue", {"QueueUrl": queue_url}))
    with inside(first_server.host.namespace):
        second = asyncio.run(on(first_server.url, "SendMessage", {**entry, "MessageBody": "two"}))
    receiver = deployment.servers_on("h2")[0]
    received: list[str] = []
    deadline = time.monotonic() + 20
    with inside(receiver.host.namespace):
        while time.monotonic() < deadline and str(second["MessageId"]) not in received:
            reply = asyncio.run(on(receiver.url, "ReceiveMessage", {
                "QueueUrl": queue_url, "WaitTimeSeconds": 2, "MaxNumberOfMessages": 10,
            }, 2))
            received += [str(m["MessageId"]) for m in reply.get("Messages") or []]  # type: ignore[attr-defined]
    return str(first["MessageId"]), str(second["MessageId"]), received
