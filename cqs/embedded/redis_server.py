"""EmbeddedRedis: a real `redis-server` child process for the CLI's embedded mode and tests.

Owns starting, waiting for, stopping and killing one non-persistent Redis (no RDB, no AOF:
cqs depends on Redis being empty after a restart). Synchronous (subprocess). Imports only
the standard library and `cqs.embedded` (ports, processes); never redis-py or the service.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from cqs.embedded.ports import free_port
from cqs.embedded.processes import ChildProcess, terminate

_MISSING_BINARY = (
    "redis-server was not found on PATH; install it (Debian: apt-get install redis-server) "
    "or pass the path of a redis-server binary"
)
_PORT_ATTEMPTS = 3  # a free port may be taken between lookup and bind: try a new one


class EmbeddedRedisError(RuntimeError):
    """redis-server could not be found or did not come up."""


def _answering_pid(port: int, host: str = "127.0.0.1") -> int | None:
    """The process id of the Redis answering on `port` (INFO server), or None.

    Comparing it with our child's pid tells our server apart from another one that
    happened to take the port first.
    """
    try:
        with socket.create_connection((host, port), timeout=0.5) as connection:
            connection.sendall(b"INFO server\r\n")
            reply = b""
            while b"process_id:" not in reply or not reply.endswith(b"\r\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        return None
    for line in reply.decode(errors="replace").splitlines():
        if line.startswith("process_id:"):
            return int(line.partition(":")[2])
    return None


class EmbeddedRedis(ChildProcess):
    """One redis-server on 127.0.0.1 (or on `host`, an address of this machine or of the
    network namespace it is started in), its log and working files under `data_dir`."""

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        binary: str | None = None,
        host: str = "127.0.0.1",
        *,
        config_file: Path | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        """`config_file` and `extra_args`: for a cluster node or a Sentinel (`--sentinel`
        needs a config file it can rewrite); the defaults make the plain cache server."""
        self._config_file = config_file
        self._extra_args = tuple(extra_args)
        self._data_dir = Path(data_dir).resolve()
        self.host = host
        self._requested_port = port
        self._port: int | None = port
        self._binary = binary
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedRedisError("the port is chosen when the server starts")
        return self._port

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def log_file(self) -> Path:
        return self._data_dir / "redis.log"

    @property
    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _resolve_binary(self) -> str:
        if self._binary is not None:
            if not Path(self._binary).is_file():
                raise EmbeddedRedisError(
                    f"{self._binary} does not exist; install redis-server (Debian: apt-get "
                    "install redis-server) or pass the path of a redis-server binary"
                )
            return self._binary
        found = shutil.which("redis-server")
        if found is None:
            raise EmbeddedRedisError(_MISSING_BINARY)
        return found

    def start(self, timeout: float = 10.0) -> None:
        """Launch redis-server and return once it answers."""
        if self.is_running:
            raise EmbeddedRedisError("this redis-server is already running")
        binary = self._resolve_binary()
        self._data_dir.mkdir(parents=True, exist_ok=True)
        attempts = 1 if self._requested_port is not None else _PORT_ATTEMPTS
        failure = ""
        for _ in range(attempts):
            port = self._requested_port if self._requested_port is not None else free_port()
            failure = self._launch(binary, port, timeout)
            if not failure:
                self._port = port
                return
        raise EmbeddedRedisError(failure)

    def _launch(self, binary: str, port: int, timeout: float) -> str:
        """Start on `port`; return "" once it answers, else why it did not."""
        command = [
            binary,
            *([str(self._config_file)] if self._config_file is not None else []),
            "--bind", self.host,
            "--port", str(port),
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self._data_dir.resolve()),
            "--logfile", str(self.log_file.resolve()),
            "--daemonize", "no",
            # Protected mode refuses every client but loopback ones: a server bound to another
            # address (a test host's network namespace) was put there to be reached.
            *(["--protected-mode", "no"] if self.host != "127.0.0.1" else []),
            *self._extra_args,
        ]  # fmt: skip
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._process = process
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
                self._process = None
                return (
                    f"redis-server exited with {process.returncode} on port {port}: "
                    f"{stderr.strip() or self._log_tail()}"
                )
            if _answering_pid(port, self.host) == process.pid:
                return ""
            time.sleep(0.05)
        terminate(process, grace=2.0)
        self._process = None
        return f"redis-server did not answer on port {port} within {timeout}s: {self._log_tail()}"

    def _log_tail(self, lines: int = 10) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the server has not exited within `timeout` seconds."""
        if self._process is not None:
            terminate(self._process, grace=timeout)
            self._process = None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("redis-server is not running")
        return self._process.pid
