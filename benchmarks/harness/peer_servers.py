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
- elasticmq: ElasticMQ (a JVM server, in memory) from the jars benchmarks/install_elasticmq
  fetched, with a generated elasticmq.conf (benchmarks/harness/elasticmq.py).
- moto: `python -m moto.server` from the venv benchmarks/install_moto makes.

`STARTERS` names them for a script's `--servers`; `chosen_servers` checks that option (a
peer that is not installed is a usage error naming its installer) and `started` starts one
by name.
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
from benchmarks.harness import elasticmq as elasticmq_install
from benchmarks.harness.clients import sqs_client
from benchmarks.harness.report import git_commit, java_version
from benchmarks.harness.servers import (
    cassandra_summary,
    process_tree,
    shipped_cassandra,
    start_server,
)
from cqs.embedded.ports import free_port
from cqs.embedded.redis_server import EmbeddedRedis

BENCHMARKS = Path(__file__).resolve().parent.parent  # the entry scripts and .peers/
LOCALSTACK_PYTHON = BENCHMARKS / ".peers" / "localstack" / "bin" / "python"
MOTO_PYTHON = BENCHMARKS / ".peers" / "moto" / "bin" / "python"
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
def one_process(name: str, command: list[str], port: int, log: Path, cwd: Path,
                description: str, env: dict[str, str] | None = None) -> Iterator[Target]:
    """A server that is one process (with its children) answering SQS on `port`: started
    with its output in `log`, waited for until it answers ListQueues, yielded as the
    Target `name` with one CPU part ("server"), stopped on the way out."""
    process = subprocess.Popen(
        command, stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=cwd, env=env,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(endpoint, process, log, name)
        yield Target(name, endpoint, description, {"server": process.pid})
    finally:
        stop(process)


def floor(work: Path) -> AbstractContextManager[Target]:
    port = free_port()
    return one_process(
        "floor", [sys.executable, str(BENCHMARKS / "floor_server.py"), "--port", str(port)],
        port, work / "floor.log", ROOT, "benchmarks/floor_server.py, one aiohttp process on "
        "uvloop, in memory, JSON protocol only",
    )


def installed_versions(python: Path, distribution: str, what: str, installer: str) -> list[str]:
    """The version of `distribution` in the venv of `python` and that Python's version; a
    RuntimeError naming `installer` when `python` is not there."""
    if not python.exists():
        raise RuntimeError(f"{what} is not installed ({python}): run {installer} first, or "
                           "leave it out of --servers")
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, platform, sys; "
         "print(m.version(sys.argv[1]), platform.python_version())", distribution],
        check=True, capture_output=True, text=True, env=clean_environment(),
    ).stdout.split()


def localstack(work: Path, python: Path = LOCALSTACK_PYTHON) -> AbstractContextManager[Target]:
    version, python_version = installed_versions(python, "localstack-core", "LocalStack",
                                                 "benchmarks/install_localstack")
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
    return one_process(
        "LocalStack", [str(python), "-m", "localstack.runtime.main"], port,
        work / "localstack.log", scratch, f"LocalStack {version} in host mode (no Docker), "
        f"Python {python_version}, SERVICES=sqs, in memory, its default logging", env,
    )


@contextlib.contextmanager
def cqs(work: Path, workers: int = 1, commitlog_sync: str | None = None) -> Iterator[Target]:
    """`cqs serve --workers N` over a fresh embedded Redis and Cassandra, the Cassandra's
    commit log synced as `commitlog_sync` says (None: as `./scripts/serve`'s embedded one
    is, the settings' default)."""
    work = work / f"cqs-{workers}"
    work.mkdir(parents=True, exist_ok=True)
    redis = EmbeddedRedis(work / "redis")
    cassandra = shipped_cassandra(work / "cassandra", commitlog_sync)
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
                     f"over an embedded Redis and an embedded {cassandra_summary(cassandra)}, "
                     "every message durable",
                     {"API": server.pid, "Redis": redis.pid, "Cassandra": cassandra.pid})
    finally:
        if server is not None:
            stop(server)
        redis.stop()
        cassandra.stop()


def elasticmq(work: Path) -> AbstractContextManager[Target]:
    """ElasticMQ from its installed jars, on a free loopback port, in memory."""
    try:
        jars = elasticmq_install.installed_classpath()
    except elasticmq_install.ElasticMQInstallError as error:
        raise RuntimeError(str(error)) from None
    port = free_port()
    scratch = work / "elasticmq"
    scratch.mkdir(parents=True, exist_ok=True)
    config = scratch / "elasticmq.conf"
    config.write_text(elasticmq_install.config_text(port))
    return one_process(
        "ElasticMQ", elasticmq_install.server_command("java", jars, config), port,
        work / "elasticmq.log", scratch, f"ElasticMQ {elasticmq_install.ELASTICMQ_VERSION} "
        f"({elasticmq_install.GROUP}:{elasticmq_install.SERVER_ARTIFACT} from Maven Central, "
        f"its own main class), {java_version()} with the JVM's default options, in memory "
        "(no persistence), its default logging", clean_environment(),
    )


def moto(work: Path, python: Path = MOTO_PYTHON) -> AbstractContextManager[Target]:
    """moto's server mode from the venv benchmarks/install_moto made."""
    version, python_version = installed_versions(python, "moto", "moto's server",
                                                 "benchmarks/install_moto")
    port = free_port()
    return one_process(
        "moto", [str(python), "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], port,
        work / "moto.log", work, f"moto {version} server mode (`python -m moto.server`, "
        f"Flask/Werkzeug, threaded), Python {python_version}, one process, in memory, its "
        "default logging", clean_environment(),
    )


STARTERS: dict[str, Callable[[Path], AbstractContextManager[Target]]] = {
    "floor": floor,
    "localstack": localstack,
    "elasticmq": elasticmq,
    "moto": moto,
    "cqs": functools.partial(cqs, workers=1),
    "cqs2": functools.partial(cqs, workers=2),
}


def missing_install(name: str, localstack_python: Path | None) -> str | None:
    """Why the peer `name` cannot start here (not installed, and the command that installs
    it), or None."""
    if name == "localstack" and localstack_python is not None and not localstack_python.exists():
        return (f"LocalStack is not installed at {localstack_python}: run "
                "benchmarks/install_localstack, or leave localstack out of --servers")
    if name == "moto" and not MOTO_PYTHON.exists():
        return (f"moto's server is not installed at {MOTO_PYTHON}: run benchmarks/install_moto, "
                "or leave moto out of --servers")
    if name == "elasticmq":
        try:
            elasticmq_install.installed_classpath()
        except elasticmq_install.ElasticMQInstallError as error:
            return f"{error}, or leave elasticmq out of --servers"
    return None


def chosen_servers(
    parser: argparse.ArgumentParser, args: argparse.Namespace, offered: Sequence[str]
) -> list[str]:
    """The names in `args.servers`, in order; one not `offered`, or a peer that is not
    installed (LocalStack: at `args.localstack_python`), is a usage error."""
    names = [name.strip() for name in args.servers.split(",") if name.strip()]
    if unknown := sorted(set(names) - set(offered)):
        parser.error(f"--servers: {','.join(unknown)}; choose from {','.join(offered)}")
    localstack_python = getattr(args, "localstack_python", None)
    if missing := [why for name in names if (why := missing_install(name, localstack_python))]:
        parser.error("; ".join(missing))
    return names


def started(name: str, work: Path, localstack_python: Path,
            cqs_commitlog_sync: str | None = None) -> AbstractContextManager[Target]:
    """The server `name` of `STARTERS`, LocalStack from `localstack_python`, cqs's embedded
    Cassandra with `cqs_commitlog_sync` (None: the settings' default)."""
    if name == "localstack":
        return localstack(work, python=localstack_python)
    if name in ("cqs", "cqs2") and cqs_commitlog_sync:
        return cqs(work, workers=1 if name == "cqs" else 2, commitlog_sync=cqs_commitlog_sync)
    return STARTERS[name](work)
