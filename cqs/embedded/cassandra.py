"""EmbeddedCassandra: a throwaway Apache Cassandra 5.0 node in a child JVM (Java 17).

Owns starting cassandra-all 5.0 from the jars `cassandra5_install` fetched: a generated
cassandra.yaml for a small node that starts fast (one token, no auto-snapshot, small
memtables and caches, every directory under one data directory, the commit log synced
by the mode asked for), a logback.xml, the Java
17 flags of Cassandra's own jvm17-server.options, JMX off (no JMX property at all), gossip
settling skipped; readiness is CQL answering (a STARTUP and a query of
`system.local.release_version` over native protocol v4, spoken here in a few lines so this
module needs no driver); a start again on fresh ports when another process took one first
(ports it chose itself only). With a `ClusterMembership` the node joins a ring on its own
loopback address (`cassandra_cluster.py`). Used by `cqs serve` and `cqs migrate` when no
Cassandra is configured, by the tests and by the benchmarks.

Imports the standard library and `cqs.embedded`; never the driver, the adapters or the service.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cqs.embedded.cassandra5_install import CassandraInstallError, installed_lib
from cqs.embedded.ports import free_port, listens_on
from cqs.embedded.processes import ChildProcess


class EmbeddedCassandraError(RuntimeError):
    """The embedded node could not be found, started or reached."""


class _PortTaken(EmbeddedCassandraError):
    """Another process bound one of the node's ports between `free_port` and the JVM."""


# Tries with fresh ports when another process took one first (tests start many servers
# at once on two workers); a node whose ports were all given is tried once.
_PORT_ATTEMPTS = 3
_BIND_FAILURE = "Address already in use"
_MOST_TIMEOUTS = 4  # a start still making progress waits at most this many timeouts


@dataclass(frozen=True, slots=True)
class ClusterMembership:
    """What a node of a multi-node cluster needs beyond a single node's defaults: its own
    address (listen and rpc), the cluster's name, seeds and storage port (the same on every
    node), its token, and any further cassandra.yaml keys. Given a `datacenter`, the node
    names its data centre and rack to the others (GossipingPropertyFileSnitch); without
    one, every node is in SimpleSnitch's single data centre, "datacenter1"."""

    address: str
    cluster_name: str
    seeds: str  # comma-separated addresses
    storage_port: int
    initial_token: int
    settings: Mapping[str, str] = field(default_factory=dict)
    datacenter: str | None = None
    rack: str = "rack1"

# conf/jvm17-server.options and conf/jvm-server.options of Cassandra 5.0 (JPMS, GC, netty),
# plus the two java.rmi opens of its test JVM arguments.
_EXPORTS = (
    "java.base/jdk.internal.misc", "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.management/com.sun.jmx.remote.security", "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server", "java.sql/java.sql", "java.base/java.lang.ref",
    "jdk.unsupported/sun.misc", "java.rmi/sun.rmi.transport.tcp",
)
_OPENS = (
    "java.base/java.lang.module", "java.base/jdk.internal.loader", "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect", "java.base/jdk.internal.math", "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar", "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch", "java.base/java.io", "java.base/java.lang.reflect",
    "java.base/java.lang", "java.base/java.util", "java.base/java.nio",
    "java.rmi/sun.rmi.transport.tcp",
)
# What Cassandra's classes need of Java 17's modules, in its own JVM and in a tool's
# (nodetool) that loads them.
JPMS_FLAGS = (
    *(f"--add-exports={name}=ALL-UNNAMED" for name in _EXPORTS),
    *(f"--add-opens={name}=ALL-UNNAMED" for name in _OPENS),
)
_JVM_FLAGS = (
    "-ea", "-da:net.openhft...", "-Xss256k",
    "-XX:+UseG1GC", "-XX:+ParallelRefProcEnabled", "-XX:MaxTenuringThreshold=1",
    "-XX:MaxGCPauseMillis=300", "-XX:InitiatingHeapOccupancyPercent=70",
    "-XX:+UseThreadPriorities", "-XX:+PerfDisableSharedMem", "-XX:+HeapDumpOnOutOfMemoryError",
    "-XX:OnOutOfMemoryError=kill -9 %p",
    "-Djava.net.preferIPv4Stack=true", "-Djdk.attach.allowAttachSelf=true",
    "-Dchronicle.analytics.disable=true",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true", "-Dio.netty.allocator.maxOrder=11",
    *JPMS_FLAGS,
    # Start speed: no 8-s wait for gossip to settle.
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    "-Dcassandra-foreground=yes",
)  # fmt: skip

MURMUR3_MIN_TOKEN = -(2**63)

# How the commit log reaches the disk, by mode (docs/reliability.md, "What is guaranteed"):
# batch: a write is answered after an fsync that covers it (one starts as soon as the
#   previous one ends), so a power loss loses nothing acknowledged; group: the same with an
#   fsync every 10 ms; periodic: answered at once, fsync every 10 s (Cassandra's default),
#   so a power loss may lose the last 10 s; off: Cassandra never fsyncs (the tests'
#   throwaway nodes): a process crash loses nothing, a power loss what the OS still held.
COMMITLOG_SYNC_MODES = ("batch", "group", "periodic", "off")
_COMMITLOG_YAML = {
    "group": {"commitlog_sync": "group", "commitlog_sync_group_window": "10ms"},
    "periodic": {"commitlog_sync": "periodic", "commitlog_sync_period": "10000ms"},
    "batch": {"commitlog_sync": "batch"},
    "off": {"commitlog_sync": "periodic", "commitlog_sync_period": "10000ms"},
}

_LOGBACK_XML = """\
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log_file}</file>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <logger name="com.datastax" level="WARN"/>
  <logger name="io.netty" level="WARN"/>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def _node_yaml(
    *, address: str, native_port: int, storage_port: int, cluster_name: str, seeds: str,
    initial_token: int, extra: dict[str, str],
) -> str:
    settings: dict[str, str] = {
        "cluster_name": f"'{cluster_name}'",
        "num_tokens": "1",
        "initial_token": f'"{initial_token}"',
        "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
        "endpoint_snitch": "SimpleSnitch",
        "listen_address": address,
        "rpc_address": address,
        "storage_port": str(storage_port),
        "native_transport_port": str(native_port),
        "start_native_transport": "true",
        "auto_bootstrap": "false",
        "commitlog_segment_size": "16MiB",
        "commitlog_total_space": "256MiB",
        "auto_snapshot": "false",
        "concurrent_reads": "8",
        "concurrent_writes": "8",
        "concurrent_counter_writes": "4",
        "concurrent_compactors": "1",
        "memtable_heap_space": "64MiB",
        "key_cache_size": "16MiB",
        "file_cache_size": "32MiB",
        "storage_compatibility_mode": "NONE",  # a fresh test cluster: 5.0's own formats
        # generous limits, for the slow shared CI machines
        "read_request_timeout": "10000ms",
        "write_request_timeout": "10000ms",
        "range_request_timeout": "20000ms",
        "request_timeout": "20000ms",
        **extra,
    }
    lines = [f"{key}: {value}" for key, value in settings.items()]
    lines += [
        "seed_provider:",
        "  - class_name: org.apache.cassandra.locator.SimpleSeedProvider",
        f'    parameters: [{{seeds: "{seeds}"}}]',
    ]
    return "\n".join(lines) + "\n"


def _frame(opcode: int, body: bytes, stream: int = 0) -> bytes:
    return struct.pack(">BBhBi", 0x04, 0, stream, opcode, len(body)) + body


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">H", len(data)) + data


def _read_frame(sock: socket.socket) -> tuple[int, bytes]:
    header = _read_exactly(sock, 9)
    _, _, _, opcode, length = struct.unpack(">BBhBi", header)
    return opcode, _read_exactly(sock, length)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


def cql_release_version(address: str, port: int, timeout: float = 2.0) -> str:
    """`release_version` from system.local over native protocol v4 (OSError while the node
    does not answer CQL yet)."""
    with socket.create_connection((address, port), timeout=timeout) as sock:
        startup = struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.0.0")
        sock.sendall(_frame(0x01, startup))
        opcode, _ = _read_frame(sock)
        if opcode != 0x02:  # READY
            raise OSError(f"STARTUP answered with opcode {opcode}")
        query = b"SELECT release_version FROM system.local"
        body = struct.pack(">i", len(query)) + query + struct.pack(">HB", 0x0001, 0)  # ONE
        sock.sendall(_frame(0x07, body, stream=1))
        opcode, result = _read_frame(sock)
        if opcode != 0x08:  # RESULT (0x00 is ERROR: not ready yet)
            raise OSError(f"query answered with opcode {opcode}")
        kind, flags, columns = struct.unpack_from(">iii", result, 0)
        offset = 12
        if kind != 2 or columns != 1:
            raise OSError("unexpected result to the release_version query")
        if flags & 0x0002:  # has_more_pages: skip the paging state
            (size,) = struct.unpack_from(">i", result, offset)
            offset += 4 + max(size, 0)
        if flags & 0x0001:  # global table spec: keyspace and table names
            for _ in range(2):
                (size,) = struct.unpack_from(">H", result, offset)
                offset += 2 + size
        (size,) = struct.unpack_from(">H", result, offset)  # column name, then its type id
        offset += 2 + size + 2
        (rows,) = struct.unpack_from(">i", result, offset)
        offset += 4
        if rows < 1:
            raise OSError("system.local has no row yet")
        (size,) = struct.unpack_from(">i", result, offset)
        offset += 4
        return result[offset:offset + size].decode()


class EmbeddedCassandra(ChildProcess):
    """One Cassandra 5.0 node with its data in `data_dir`: alone on 127.0.0.1 (the
    default), or a member of a cluster on an address of its own (`membership`)."""

    def __init__(
        self,
        data_dir: Path,
        native_port: int | None = None,
        heap: str = "768m",
        java: str = "java",
        membership: ClusterMembership | None = None,
        jvm_options: Sequence[str] = (),
        commitlog_sync: str = "periodic",
    ) -> None:
        """`commitlog_sync`: one of COMMITLOG_SYNC_MODES."""
        if commitlog_sync not in COMMITLOG_SYNC_MODES:
            raise ValueError(f"commitlog_sync must be one of {COMMITLOG_SYNC_MODES}")
        self.data_dir = Path(data_dir).resolve()
        self.native_port = native_port or free_port()
        self._ports_chosen_here = native_port is None and membership is None
        self.heap = heap
        self.java = java
        self.membership = membership
        self.jvm_options = tuple(jvm_options)
        self.commitlog_sync = commitlog_sync
        self.release_version = ""
        self.start_seconds = 0.0
        self._process = None

    @property
    def address(self) -> str:
        return self.membership.address if self.membership is not None else "127.0.0.1"

    @property
    def contact_point(self) -> str:
        return f"{self.address}:{self.native_port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "cassandra.log"

    def command(self) -> list[str]:
        """The java command line (also writes the node's cassandra.yaml and logback.xml)."""
        java = shutil.which(self.java)
        if java is None:
            raise EmbeddedCassandraError(f"no java executable {self.java!r} on PATH")
        try:
            lib = installed_lib()
        except CassandraInstallError as error:
            raise EmbeddedCassandraError(str(error)) from error
        jamm = sorted(lib.glob("jamm-*.jar"))
        conf = self.data_dir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "cassandra.yaml").write_text(self._yaml())
        (conf / "logback.xml").write_text(_LOGBACK_XML.format(log_file=self.log_file))
        if self.membership is not None and self.membership.datacenter is not None:
            # GossipingPropertyFileSnitch reads it from the classpath, which starts at conf/.
            (conf / "cassandra-rackdc.properties").write_text(
                f"dc={self.membership.datacenter}\nrack={self.membership.rack}\n"
            )
        return [
            java,
            f"-Xms{self.heap}", f"-Xmx{self.heap}",
            *_JVM_FLAGS,
            *(["-Dcassandra.skip_sync=true"] if self.commitlog_sync == "off" else []),
            *(f"-javaagent:{jar}" for jar in jamm[:1]),
            *self.jvm_options,
            f"-Dcassandra.config={(conf / 'cassandra.yaml').as_uri()}",
            f"-Dcassandra.storagedir={self.data_dir / 'data'}",
            f"-Dcassandra.logdir={self.data_dir}",
            f"-Dlogback.configurationFile={conf / 'logback.xml'}",
            f"-Djava.io.tmpdir={self.data_dir / 'tmp'}",
            "-cp", f"{conf}:{lib}/*",
            "org.apache.cassandra.service.CassandraDaemon",
        ]  # fmt: skip

    def _yaml(self) -> str:
        member = self.membership
        if member is None:
            return _node_yaml(
                address="127.0.0.1", native_port=self.native_port, storage_port=free_port(),
                cluster_name="cqs embedded", seeds="127.0.0.1",
                initial_token=MURMUR3_MIN_TOKEN, extra=_COMMITLOG_YAML[self.commitlog_sync],
            )
        snitch = {} if member.datacenter is None else {
            "endpoint_snitch": "GossipingPropertyFileSnitch"
        }
        return _node_yaml(
            address=member.address, native_port=self.native_port,
            storage_port=member.storage_port, cluster_name=member.cluster_name,
            seeds=member.seeds, initial_token=member.initial_token,
            extra={**_COMMITLOG_YAML[self.commitlog_sync], **snitch, **member.settings},
        )

    def start(self, timeout: float = 120.0) -> None:
        """Start the JVM and return once CQL answers (a query of system.local succeeds);
        on fresh ports again when another process took one of those it chose."""
        if self.running:
            return
        attempts = _PORT_ATTEMPTS if self._ports_chosen_here else 1
        while True:
            try:
                self._launch(timeout)
                return
            except _PortTaken:
                attempts -= 1
                if attempts == 0:
                    raise
                self.native_port = free_port()  # the storage port is new per yaml

    def _launch(self, timeout: float) -> None:
        command = self.command()
        (self.data_dir / "tmp").mkdir(exist_ok=True)
        log_offsets = self._log_sizes()
        began = time.monotonic()
        with open(self.data_dir / "stdout.log", "ab") as output:
            self._process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.data_dir,
                start_new_session=True,  # a Ctrl-C for the parent does not hit the JVM first
            )
        try:
            self._wait_until_ready(timeout, log_offsets)
        except BaseException:
            self.kill()
            raise
        self.start_seconds = time.monotonic() - began

    def _wait_until_ready(self, timeout: float, log_offsets: Sequence[int]) -> None:
        """Ready once this JVM listens on the native port and answers CQL there (another
        node that took the port first must not pass for this one). A node that writes no
        log line for `timeout` seconds has stalled; one still logging its startup gets
        more time, up to _MOST_TIMEOUTS times `timeout` (on a starved 2-core machine a
        restart after a kill was seen to take 5 minutes of steady progress)."""
        now = time.monotonic()
        deadline, ceiling = now + timeout, now + timeout * _MOST_TIMEOUTS
        sizes = self._log_sizes()
        while time.monotonic() < deadline:
            if (grown := self._log_sizes()) != sizes:
                sizes = grown
                deadline = min(time.monotonic() + timeout, ceiling)
            process = self._process
            if self._logged(_BIND_FAILURE, log_offsets):
                raise _PortTaken(f"a port of {self.data_dir} was taken; see {self.log_file}")
            if process is None or process.poll() is not None:
                raise EmbeddedCassandraError(
                    f"Cassandra exited during startup; see {self.log_file} and "
                    f"{self.data_dir / 'stdout.log'}"
                )
            if not listens_on(process.pid, self.native_port):
                time.sleep(0.25)
                continue
            try:
                self.release_version = cql_release_version(self.address, self.native_port)
                return
            except (OSError, struct.error):
                time.sleep(0.25)
        raise EmbeddedCassandraError(
            f"Cassandra did not answer CQL on {self.contact_point}: no progress for "
            f"{timeout:.0f} s or no answer within {timeout * _MOST_TIMEOUTS:.0f} s; "
            f"see {self.log_file}"
        )

    def _logs(self) -> tuple[Path, Path]:
        return self.log_file, self.data_dir / "stdout.log"

    def _log_sizes(self) -> list[int]:
        sizes = []
        for path in self._logs():
            try:
                sizes.append(path.stat().st_size)
            except OSError:
                sizes.append(0)
        return sizes

    def _logged(self, text: str, log_offsets: Sequence[int]) -> bool:
        """Whether this start's log or output (past `log_offsets`) holds `text`."""
        for path, offset in zip(self._logs(), log_offsets, strict=True):
            try:
                with open(path, "rb") as log:
                    log.seek(offset)
                    if text.encode() in log.read():
                        return True
            except OSError:
                continue
        return False


__all__ = [
    "JPMS_FLAGS",
    "MURMUR3_MIN_TOKEN",
    "ClusterMembership",
    "EmbeddedCassandra",
    "EmbeddedCassandraError",
    "cql_release_version",
]
