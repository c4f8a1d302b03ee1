"""The servers benchmarks/peer_throughput.py puts side by side, and their CPU time.

Each server is started on a free loopback port by a context manager that yields a
`Target`: its endpoint, a description for the report, and the processes whose CPU time is
read from /proc, by part ("API", "Redis", "Cassandra" for cqs; "server" for the others).
A part's CPU time is its process's and every descendant's user + system time, plus what
their exited (waited-for) children used, so `cqs serve --workers 2` counts its supervisor
and both workers, and LocalStack any helper it starts.

- floor: benchmarks/floor_server.py, this interpreter.
- localstack: LocalStack in host mode (no Docker) from the venv that
  benchmarks/install_localstack makes, SQS only, state under a scratch directory.
- cqs: `cqs serve --workers N` over a fresh embedded Redis and a fresh embedded Cassandra.
- moto: `python -m moto.server`, when moto's server extra is installed.

`STARTERS` names them for a script's `--servers`; `chosen_servers` checks that option and
`started` starts one by name.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import ROOT
from benchmarks.harness.clients import sqs_client
from benchmarks.harness.report import git_commit
from benchmarks.harness.servers import process_tree, start_server
from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.embedded.ports import free_port
from cqs.embedded.redis_server import EmbeddedRedis

BENCHMARKS = Path(__file__).resolve().parent.parent  # the entry scripts and .peers/
LOCALSTACK_PYTHON = BENCHMARKS / ".peers" / "localstack" / "bin" / "python"
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Target:
    name: str  # the table's label
    endpoint: str
    description: str  # for the report's heading: what ran, which version
    parts: dict[str, int]  # CPU part -> the root pid of its processes


def cpu_seconds(pid: int) -> float:
    """User + system time of `pid` and its descendants, their waited-for children included."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def cpu_by_part(target: Target) -> dict[str, float]:
    return {part: cpu_seconds(pid) for part, pid in target.parts.items()}


def wait_until_answering(endpoint: str, process: subprocess.Popen[bytes], log: Path,
                         what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            sqs_client(endpoint).list_queues()
            return
        except Exception:
            if time.monotonic() > deadline or process.poll() is not None:
                stop(process)
                raise RuntimeError(f"{what} did not start; see {log}") from None
            time.sleep(0.3)


def stop(process: subprocess.Popen[bytes], grace: float = 30) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def clean_environment() -> dict[str, str]:
    """This environment without another interpreter's paths or cqs's settings."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("CQS_")}


@contextlib.contextmanager
def floor(work: Path) -> Iterator[Target]:
    port = free_port()
    log = work / "floor.log"
    process = subprocess.Popen(
        [sys.executable, str(BENCHMARKS / "floor_server.py"), "--port", str(port)],
        stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=ROOT,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(endpoint, process, log, "the floor server")
        yield Target("floor", endpoint, "benchmarks/floor_server.py, one aiohttp process on "
                     "uvloop, in memory, JSON protocol only", {"server": process.pid})
    finally:
        stop(process)


def localstack_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, platform; "
         "print(m.version('localstack-core'), platform.python_version())"],
        check=True, capture_output=True, text=True, env=clean_environment(),
    ).stdout.strip()


@contextlib.contextmanager
def localstack(work: Path, python: Path = LOCALSTACK_PYTHON) -> Iterator[Target]:
    if not python.exists():
        raise RuntimeError(f"LocalStack is not installed ({python}): run "
                           "benchmarks/install_localstack first, or leave it out of --servers")
    version, python_version = localstack_version(python).split()
    port = free_port()
    scratch = work / "localstack"
    for sub in ("fs", "home", "tmp"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    env = clean_environment() | {
        "GATEWAY_LISTEN": f"127.0.0.1:{port}", "SERVICES": "sqs", "OVERRIDE_IN_DOCKER": "0",
        "DNS_ADDRESS": "0", "SKIP_SSL_CERT_DOWNLOAD": "1", "DISABLE_EVENTS": "1",
        # Queue URLs on the gateway's own address, not a name that needs DNS.
        "SQS_ENDPOINT_STRATEGY": "path", "LOCALSTACK_HOST": f"127.0.0.1:{port}",
        "FILESYSTEM_ROOT": str(scratch / "fs"), "HOME": str(scratch / "home"),
        "TMPDIR": str(scratch / "tmp"),
    }
    log = work / "localstack.log"
    process = subprocess.Popen(
        [str(python), "-m", "localstack.runtime.main"],
        stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=scratch, env=env,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(endpoint, process, log, "LocalStack")
        yield Target("LocalStack", endpoint, f"LocalStack {version} in host mode (no Docker), "
                     f"Python {python_version}, SERVICES=sqs, in memory, its default logging",
                     {"server": process.pid})
    finally:
        stop(process)


@contextlib.contextmanager
def cqs(work: Path, workers: int = 1) -> Iterator[Target]:
    """`cqs serve --workers N` over a fresh embedded Redis and Cassandra."""
    work = work / f"cqs-{workers}"
    work.mkdir(parents=True, exist_ok=True)
    redis = EmbeddedRedis(work / "redis")
    cassandra = EmbeddedCassandra(work / "cassandra")
    server: subprocess.Popen[bytes] | None = None
    try:
        redis.start()
        cassandra.start()
        assert cassandra.pid is not None
        server, endpoint, _log = start_server(
            redis.url, cassandra.contact_point, "bench_" + uuid.uuid4().hex[:10], work,
            ["--log-level", "WARNING", "--workers", str(workers)],
        )
        name = "cqs" if workers == 1 else f"cqs --workers {workers}"
        yield Target(name, endpoint, f"commit {git_commit()}, `cqs serve --workers {workers}` "
                     "over an embedded Redis and an embedded Cassandra, every message durable",
                     {"API": server.pid, "Redis": redis.pid, "Cassandra": cassandra.pid})
    finally:
        if server is not None:
            stop(server)
        redis.stop()
        cassandra.stop()


@contextlib.contextmanager
def moto(work: Path) -> Iterator[Target]:
    try:
        import moto as moto_package
        import moto.server  # needs moto's server extra
    except ImportError:
        raise RuntimeError("moto's server mode is not installed: "
                           ".venv/bin/pip install 'moto[server]'") from None
    port = free_port()
    log = work / "moto.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(endpoint, process, log, "moto's server")
        yield Target("moto", endpoint, f"moto {moto_package.__version__} server mode, one "
                     "process, in memory", {"server": process.pid})
    finally:
        stop(process)


STARTERS: dict[str, Callable[[Path], AbstractContextManager[Target]]] = {
    "floor": floor,
    "localstack": localstack,
    "cqs": functools.partial(cqs, workers=1),
    "cqs2": functools.partial(cqs, workers=2),
    "moto": moto,
}


def chosen_servers(
    parser: argparse.ArgumentParser, args: argparse.Namespace, offered: Sequence[str]
) -> list[str]:
    """The names in `args.servers`, in order; one not `offered`, or localstack while
    `args.localstack_python` does not exist, is a usage error."""
    names = [name.strip() for name in args.servers.split(",") if name.strip()]
    if unknown := sorted(set(names) - set(offered)):
        parser.error(f"--servers: {','.join(unknown)}; choose from {','.join(offered)}")
    if "localstack" in names and not args.localstack_python.exists():
        parser.error(f"LocalStack is not installed at {args.localstack_python}: run "
                     "benchmarks/install_localstack, or leave localstack out of --servers")
    return names


def started(name: str, work: Path, localstack_python: Path) -> AbstractContextManager[Target]:
    """The server `name` of `STARTERS`, LocalStack from `localstack_python`."""
    if name == "localstack":
        return localstack(work, python=localstack_python)
    return STARTERS[name](work)
