"""A cqs deployment over the test hosts: Redis and Cassandra behind links, API processes on hosts.

Owns starting and stopping, on a `HostNetwork` (tests/hosts/network.py), the deployed shape
of issue 26: a redis-server (the embedded launcher, bound to its services address) and an
embedded Cassandra 5.0 (one node, or three with replication factor 3 and QUORUM)
in the services namespace, and on every API host one or more `cqs serve` processes
(listening on that host's loopback) that reach Redis and Cassandra only over the host's
veth link. Also: the Redis stall (SIGSTOP / SIGCONT) and each server's redelivery counters
by reason (`cqs_messages_redelivered_total`), which name the cause of early duplicates.

`deployed(...)` is the context manager the fixture and the benchmark use: whatever fails,
every process is stopped and every namespace removed on the way out. Imports the embedded
launchers, the test fixtures' `CqsProcess` and the network; never the service.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster
from cqs.embedded.redis_server import EmbeddedRedis
from tests.fixtures.cassandra_cluster import QUORUM_ARGS
from tests.fixtures.cqs_server import CqsProcess
from tests.fixtures.untimed import outside_test_timeout
from tests.hosts.network import REDIS_ADDRESS, Host, HostNetwork, inside

CASSANDRA_TIMEOUT_SECONDS = 2.0
_REDELIVERED = re.compile(
    r'^cqs_messages_redelivered_total\{(?=[^}]*queue="(?P<queue>[^"]*)")'
    r'(?=[^}]*reason="(?P<reason>[^"]*)")[^}]*\}\s+(?P<value>\S+)$'
)


@dataclass(frozen=True)
class ApiServer:
    host: Host
    process: CqsProcess

    @property
    def url(self) -> str:
        return self.process.url


class Deployment:
    """Redis, Cassandra and the API servers of `layout` (host name -> processes)."""

    def __init__(
        self, network: HostNetwork, work_dir: Path, layout: Mapping[str, int],
        extra_args: Sequence[str] = (),
        clock_offsets: Mapping[str, float] | None = None,
    ) -> None:
        self.network = network
        # host name -> seconds its API processes' wall clock is off (libfaketime)
        self.clock_offsets = dict(clock_offsets or {})
        self.work_dir = work_dir
        self.layout = dict(layout)
        self.extra_args = tuple(extra_args)
        self.redis: EmbeddedRedis | None = None
        self.cassandra: EmbeddedCassandraCluster | None = None
        self.servers: list[ApiServer] = []
        self.keyspace = "hosts_" + uuid.uuid4().hex[:12]
        self.redis_paused = False
        self.redis_killed = False
        self.killed_servers: set[ApiServer] = set()
        self.paused_servers: set[ApiServer] = set()

    def start(self) -> None:
        with inside(self.network.services):
            self.redis = EmbeddedRedis(self.work_dir / "redis", host=REDIS_ADDRESS)
            self.redis.start()
            self.cassandra = EmbeddedCassandraCluster(
                self.work_dir / "cassandra", addresses=self.network.cassandra_addresses,
            )
            with outside_test_timeout():  # bounded by the cluster's own start timeout
                self.cassandra.start()
        for name, count in self.layout.items():
            host = self.network.host(name)
            for _ in range(count):
                self.servers.append(ApiServer(host, self._start_server(host)))

    def _start_server(self, host: Host) -> CqsProcess:
        assert self.redis is not None and self.cassandra is not None
        logs = self.work_dir / f"logs-{host.name}"
        logs.mkdir(parents=True, exist_ok=True)
        cluster = QUORUM_ARGS if len(self.network.cassandra_addresses) > 1 else (
            "--cassandra-timeout-seconds", str(CASSANDRA_TIMEOUT_SECONDS))
        for attempt in (1, 2):
            with inside(host.namespace):
                server = CqsProcess(
                    [self.redis.url], ",".join(self.cassandra.contact_points), logs,
                    self.keyspace, [*cluster, *self.extra_args],
                    environment=clock_offset_environment(self.clock_offsets.get(host.name)),
                )
                try:
                    server.start()
                    return server
                except RuntimeError:
                    # The first server creates the schema, which a JVM that has just started
                    # can answer slower than the 2-s timeout; cqs serve then exits.
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        for host_name in {s.host.name for s in self.paused_servers}:
            self.resume_api(host_name)  # a stopped process would not take SIGTERM
        for server in self.servers:
            with contextlib.suppress(Exception):
                server.process.stop()
        if self.redis is not None:
            self.resume_redis()
            self.redis.stop()
        if self.cassandra is not None:
            self.cassandra.stop()

    # --- who is where ----------------------------------------------------------------------

    def servers_on(self, *host_names: str) -> list[ApiServer]:
        return [s for s in self.servers if s.host.name in host_names]

    # --- faults ----------------------------------------------------------------------------

    def pause_redis(self) -> None:
        """SIGSTOP: connections stay open, nothing answers, the data is kept."""
        assert self.redis is not None
        os.kill(self.redis.pid, signal.SIGSTOP)
        self.redis_paused = True

    def resume_redis(self) -> None:
        if self.redis is not None and self.redis_paused:
            os.kill(self.redis.pid, signal.SIGCONT)
            self.redis_paused = False

    def kill_redis(self) -> None:
        """SIGKILL, as a crash: Redis runs without persistence, so its data is gone."""
        assert self.redis is not None
        self.resume_redis()
        os.kill(self.redis.pid, signal.SIGKILL)
        self.redis_killed = True

    def restart_redis(self) -> None:
        """Start Redis again, empty, on its address and port."""
        if self.redis is None or not self.redis_killed:
            return
        self.redis.stop()  # reaps the killed process
        with inside(self.network.services):
            self.redis = EmbeddedRedis(
                self.work_dir / f"redis-{uuid.uuid4().hex[:6]}", port=self.redis.port,
                host=REDIS_ADDRESS,
            )
            self.redis.start()
        self.redis_killed = False

    def pause_cassandra(self) -> None:
        """SIGSTOP one Cassandra node (with one node, the whole store stalls)."""
        assert self.cassandra is not None
        self.cassandra.pause(0)

    def resume_cassandra(self) -> None:
        if self.cassandra is not None:
            self.cassandra.resume(0)

    def kill_api(self, host_name: str) -> None:
        """SIGKILL the first API process on a host, as a crash: its clients' calls fail
        until it is back."""
        server = self.servers_on(host_name)[0]
        server.process.kill()
        self.killed_servers.add(server)

    def restart_api(self, host_name: str, within_seconds: float = 60.0) -> None:
        """Start the killed API processes of a host again, on their ports, as a supervisor
        would: a start that fails (Cassandra slow to accept a connection under the load)
        is tried again."""
        for server in [s for s in self.killed_servers if s.host.name == host_name]:
            deadline = time.monotonic() + within_seconds
            while True:
                try:
                    with inside(server.host.namespace):
                        server.process.start()
                    break
                except RuntimeError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1.0)
            self.killed_servers.discard(server)

    def pause_api(self, host_name: str) -> None:
        """SIGSTOP the first API process on a host: its connections stay open, nothing
        answers (a long GC pause, a host swapping)."""
        server = self.servers_on(host_name)[0]
        os.kill(server.process.pid, signal.SIGSTOP)
        self.paused_servers.add(server)

    def resume_api(self, host_name: str) -> None:
        for server in [s for s in self.paused_servers if s.host.name == host_name]:
            os.kill(server.process.pid, signal.SIGCONT)
            self.paused_servers.discard(server)

    def offset_clock(self, host_name: str, seconds: float) -> None:
        """Restart a host's API processes (on their ports) with their wall clock `seconds`
        off; 0 sets it right again."""
        self.clock_offsets[host_name] = seconds
        self.restart_with(host_name, clock_offset_environment(seconds))

    def restart_with(self, host_name: str, environment: Mapping[str, str]) -> None:
        """Restart a host's API processes on their ports with this environment (settings
        as CQS_* variables, a clock offset); an empty one restores the defaults."""
        for server in self.servers_on(host_name):
            server.process.stop()
            server.process.environment = dict(environment)
            with inside(server.host.namespace):
                server.process.start()

    def heal(self) -> None:
        """Undo every process fault still in force (links are the network's)."""
        for host_name in {s.host.name for s in self.paused_servers}:
            self.resume_api(host_name)
        self.resume_redis()
        self.restart_redis()
        self.resume_cassandra()
        for host_name in {s.host.name for s in self.killed_servers}:
            self.restart_api(host_name)

    # --- what the servers say --------------------------------------------------------------

    def redeliveries(self, queue_names: Sequence[str]) -> Counter[str]:
        """Redeliveries of these queues by reason, summed over every server."""
        reasons: Counter[str] = Counter()
        for server in self.servers:
            with inside(server.host.namespace):
                try:
                    with urllib.request.urlopen(server.url + "/metrics", timeout=5) as reply:
                        text = reply.read().decode()
                except OSError:
                    continue
            for line in text.splitlines():
                found = _REDELIVERED.match(line)
                if found and found["queue"] in queue_names:
                    reasons[found["reason"]] += int(float(found["value"]))
        return reasons

    def log_tails(self, chars: int = 1500) -> str:
        return "\n".join(
            f"--- cqs on {s.host.name} port {s.process.port} ---\n{s.process.log_tail(chars)}"
            for s in self.servers
        )


def libfaketime() -> Path | None:
    """Debian's libfaketime (scripts/bootstrap --test installs it), wherever its arch puts it."""
    return next(iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))), None)


def clock_offset_environment(seconds: float | None) -> dict[str, str]:
    """The environment that runs a process with its wall clock `seconds` off, as a host
    whose clock drifted (Debian's libfaketime; monotonic time is left alone)."""
    if not seconds:
        return {}
    library = libfaketime()
    if library is None:
        raise RuntimeError("a clock offset needs Debian's libfaketime (scripts/bootstrap --test)")
    return {"LD_PRELOAD": str(library), "FAKETIME": f"{seconds:+g}s",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"}


@contextlib.contextmanager
def deployed(
    work_dir: Path, layout: Mapping[str, int], cassandra_nodes: int = 1,
    extra_args: Sequence[str] = (), clock_offsets: Mapping[str, float] | None = None,
) -> Iterator[Deployment]:
    """A network of len(layout) API hosts and a running deployment on it; everything is
    stopped and removed when the block ends, however it ends."""
    network = HostNetwork(len(layout), cassandra_nodes)
    network.create()
    try:
        deployment = Deployment(network, work_dir, layout, extra_args, clock_offsets)
        try:
            deployment.start()
            yield deployment
        finally:
            with contextlib.suppress(Exception):  # stop the processes whatever this says
                network.heal()
            deployment.stop()
    finally:
        network.remove()
