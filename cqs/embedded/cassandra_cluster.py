"""EmbeddedCassandraCluster: a throwaway multi-node Apache Cassandra ring on loopback.

Owns starting N embedded Cassandra 5.0 JVMs (`cassandra.py`), each on a loopback address of
its own (127.0.0.2, .3, ...; Linux routes all of 127.0.0.0/8 to `lo`) with its own data
directory; one cluster name, the first node as the seed (or, with data centres, the first
node of each: GossipingPropertyFileSnitch), the same ports on every node (checked free on
every address), evenly spaced Murmur3 tokens and `auto_bootstrap: false`, so no node waits
to bootstrap (the first seed starts first: the others need it to gossip). Also
the faults the tests inject (SIGKILL, restart on the same data, SIGSTOP / SIGCONT), what
the nodes' logs say about each other (up, dead), and their resident memory.

Used by the cluster tests and the soak's cluster mode; nothing in `cqs serve` starts a
cluster. Imports the standard library and `cqs.embedded`; never the driver, the adapters
or the service.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from cqs.embedded.cassandra import (
    MURMUR3_MIN_TOKEN,
    ClusterMembership,
    EmbeddedCassandra,
    EmbeddedCassandraError,
)

DEFAULT_ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
MURMUR3_TOKEN_RANGE = 2**64  # Murmur3Partitioner, from MURMUR3_MIN_TOKEN
# A killed node is convicted after about 12.6 s with phi 5 (about 18 s with the default 8).
PHI_CONVICT_THRESHOLD = 5
_PORTS_PER_NODE = 2  # storage, native


def free_port_on_all(addresses: Sequence[str], taken: set[int] | None = None) -> int:
    """A TCP port that nothing listens on at any of `addresses` right now."""
    taken = taken or set()
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((addresses[0], 0))
            port: int = probe.getsockname()[1]
        if port in taken:
            continue
        try:
            for address in addresses:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                    probe.bind((address, port))
        except OSError:
            continue
        return port
    raise EmbeddedCassandraError(f"no port is free on all of {', '.join(addresses)}")


def initial_token(index: int, nodes: int) -> int:
    """Node `index`'s token of `nodes` evenly spaced ones (Murmur3Partitioner)."""
    return MURMUR3_MIN_TOKEN + index * MURMUR3_TOKEN_RANGE // nodes


def resident_bytes(pid: int) -> int:
    """VmRSS of `pid`, from /proc (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class EmbeddedCassandraCluster:
    """`len(addresses)` Cassandra nodes forming one ring; node i is `nodes[i]`."""

    def __init__(
        self,
        work_dir: Path,
        addresses: Sequence[str] = DEFAULT_ADDRESSES,
        heap: str = "512m",
        jvm_options: Sequence[str] = ("-Xms256m",),
        phi_convict_threshold: int = PHI_CONVICT_THRESHOLD,
        datacenters: Sequence[str] | None = None,
        commitlog_sync: str = "off",
    ) -> None:
        """`datacenters`: each node's data centre, in the order of `addresses` (None: one
        data centre); the first node of each is a seed. `commitlog_sync`: as
        EmbeddedCassandra's; "off" by default, since the tests' nodes are throwaway and
        what faults cost is their subject."""
        self.work_dir = Path(work_dir).resolve()
        self.addresses = tuple(addresses)
        if datacenters is not None and len(datacenters) != len(self.addresses):
            raise ValueError("give one data centre per address")
        self.datacenters = tuple(datacenters) if datacenters is not None else None
        seeds = [self.addresses[0]]
        if self.datacenters is not None:
            firsts = {dc: self.addresses[self.datacenters.index(dc)] for dc in self.datacenters}
            seeds = list(firsts.values())
        taken: set[int] = set()
        for _ in range(_PORTS_PER_NODE):
            taken.add(free_port_on_all(self.addresses, taken))
        storage, native = sorted(taken)
        self.native_port = native
        self.storage_port = storage  # every node's internode port, on its own address
        name = f"cqs-{uuid.uuid4().hex[:8]}"
        self.nodes = [
            EmbeddedCassandra(
                self.work_dir / f"node{index + 1}",
                native_port=native,
                heap=heap,
                jvm_options=jvm_options,
                commitlog_sync=commitlog_sync,
                membership=ClusterMembership(
                    address=address,
                    cluster_name=name,
                    seeds=",".join(seeds),
                    storage_port=storage,
                    initial_token=initial_token(index, len(self.addresses)),
                    settings={
                        "auto_bootstrap": "false",
                        "phi_convict_threshold": str(phi_convict_threshold),
                    },
                    datacenter=self.datacenters[index] if self.datacenters else None,
                ),
            )
            for index, address in enumerate(self.addresses)
        ]
        self._paused: set[int] = set()
        self.start_seconds = 0.0

    @property
    def contact_points(self) -> list[str]:
        return [node.contact_point for node in self.nodes]

    def pid(self, index: int) -> int:
        pid = self.nodes[index].pid
        if pid is None:
            raise EmbeddedCassandraError(f"node {self.addresses[index]} is not running")
        return pid

    def running(self, index: int) -> bool:
        return self.nodes[index].running

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> float:
        """Start the first seed, then every other node at once, and return when each sees
        all the others up; returns (and remembers in `start_seconds`) how long that took."""
        began = time.monotonic()
        marks = [self.log_mark(index) for index in range(len(self.nodes))]
        self._start_nodes([0], timeout)  # the others cannot join without their seed up
        self._start_nodes(range(1, len(self.nodes)), timeout)
        for index in range(len(self.nodes)):
            for other in range(len(self.nodes)):
                if other != index:
                    self.wait_for_state(index, other, "up", marks[index], timeout)
        self.start_seconds = time.monotonic() - began
        return self.start_seconds

    def _start_nodes(self, indexes: Sequence[int] | range, timeout: float) -> None:
        failures: list[BaseException] = []

        def start(node: EmbeddedCassandra) -> None:
            try:
                node.start(timeout)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=start, args=(self.nodes[i],)) for i in indexes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            self.stop()
            raise failures[0]

    def indexes_in(self, datacenter: str) -> list[int]:
        """The nodes of one data centre."""
        return [i for i, dc in enumerate(self.datacenters or ()) if dc == datacenter]

    def kill(self, index: int) -> None:
        """SIGKILL node `index`, as a crash would (its commit log stays on disk)."""
        self.resume(index)
        self.nodes[index].kill()

    def restart(self, index: int, timeout: float = 120.0) -> None:
        """Start node `index` again on its data and ports; return when its native port
        answers and every other running node sees it up."""
        self.kill(index)
        marks = {i: self.log_mark(i) for i in range(len(self.nodes)) if i != index}
        self._start_nodes([index], timeout)
        for other, mark in marks.items():
            if self.running(other) and other not in self._paused:
                self.wait_for_state(other, index, "up", mark, timeout)

    def pause(self, index: int) -> None:
        """SIGSTOP node `index`: its sockets stay open and nothing answers."""
        os.kill(self.pid(index), signal.SIGSTOP)
        self._paused.add(index)

    def resume(self, index: int) -> None:
        if index in self._paused:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid(index), signal.SIGCONT)
            self._paused.discard(index)

    def ensure_running(self, timeout: float = 120.0) -> None:
        """Every node resumed and running (killed ones restarted together)."""
        for index in list(self._paused):
            self.resume(index)
        stopped = [i for i in range(len(self.nodes)) if not self.running(i)]
        if stopped:
            marks = {i: self.log_mark(i) for i in range(len(self.nodes)) if i not in stopped}
            self._start_nodes(stopped, timeout)
            for other, mark in marks.items():
                for index in stopped:
                    self.wait_for_state(other, index, "up", mark, timeout)

    def stop(self) -> None:
        for index in list(self._paused):
            self.resume(index)
        for node in self.nodes:
            node.stop()

    def resident_bytes(self) -> list[int]:
        """VmRSS of each node's JVM (0 for a node that is not running)."""
        return [resident_bytes(n.pid) if n.pid is not None else 0 for n in self.nodes]

    # --- what the nodes say about each other -------------------------------------------------

    def log_mark(self, index: int) -> int:
        """Where node `index`'s log ends now: pass it to `wait_for_state` to read only what
        the node logs from here on."""
        try:
            return self.nodes[index].log_file.stat().st_size
        except OSError:
            return 0

    def saw(self, observer: int, pattern: str, since: int = 0) -> bool:
        """True if node `observer` logged a line matching `pattern` after `since`."""
        try:
            with self.nodes[observer].log_file.open("rb") as log:
                log.seek(since)
                text = log.read().decode(errors="replace")
        except OSError:
            return False
        return re.search(pattern, text) is not None

    def saw_state(self, observer: int, subject: int, state: str, since: int = 0) -> bool:
        """True if node `observer` logged, after `since`, that `subject` is `state` ("up"
        or "dead", as its gossiper and failure detector say it; 5.0 writes the address with
        its storage port)."""
        address = re.escape(self.addresses[subject]) + r"(?::\d+)?"
        pattern = {
            "up": rf"InetAddress /{address} is now UP",
            "dead": rf"InetAddress /{address} is now DOWN",
        }[state]
        return self.saw(observer, pattern, since)

    def saw_hints_delivered(self, observer: int, subject: int, since: int = 0) -> bool:
        """True if node `observer` logged, after `since`, that it finished handing the
        writes it kept for `subject` (hinted handoff) over to it."""
        address = re.escape(self.addresses[subject]) + r"(?::\d+)?"
        handed = r"Finished hinted handoff of file \S+"
        return self.saw(observer, rf"{handed} to endpoint /{address}\b", since)

    def wait_for_state(
        self, observer: int, subject: int, state: str, since: int = 0, timeout: float = 60.0
    ) -> None:
        deadline = time.monotonic() + timeout
        while not self.saw_state(observer, subject, state, since):
            if time.monotonic() > deadline:
                raise EmbeddedCassandraError(
                    f"node {self.addresses[observer]} did not see {self.addresses[subject]} "
                    f"{state} within {timeout:.0f} s; see {self.nodes[observer].log_file}"
                )
            time.sleep(0.2)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


__all__ = [
    "DEFAULT_ADDRESSES",
    "EmbeddedCassandraCluster",
    "free_port_on_all",
    "initial_token",
    "resident_bytes",
]
