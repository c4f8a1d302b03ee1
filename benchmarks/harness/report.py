"""What the benchmark scripts share: how they describe the machine a figure was measured
on (and the commit and the command line), how they write their generated section into a
doc (between its begin and end markers, so a re-run replaces only its own section), how
they start a `cqs serve` child (alone, or with an embedded Redis and Cassandra of its own)
and talk to it with boto3, how they raise the open-file limit for thousands of sockets,
and how a parent takes what its client processes report. The scripts run as
`python benchmarks/<name>.py`, which puts this folder on sys.path.
"""

from __future__ import annotations

import contextlib
import os
import platform
import queue
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.embedded.ports import free_port
from cqs.embedded.redis_server import EmbeddedRedis

ROOT = Path(__file__).resolve().parent.parent

# Taken when the benchmark starts (its first import of this module).
LOAD_AT_START = os.getloadavg()


def java_version() -> str:
    """The first line `java -version` prints, or "not found"."""
    try:
        printed = subprocess.run(
            ["java", "-version"], check=False, capture_output=True, text=True
        ).stderr
    except FileNotFoundError:
        return "not found"
    return printed.splitlines()[0] if printed else "not found"


def memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def machine_summary() -> str:
    """One line: CPUs, memory, architecture, Python and Java."""
    return (f"{os.cpu_count()} CPUs, {memory_gib():.0f} GiB RAM, {platform.machine()}, "
            f"Python {platform.python_version()}, {java_version()}")


def system_summary() -> str:
    """`machine_summary()` and the operating system with its release."""
    return f"{machine_summary()} ({platform.system()} {platform.release()})"


def load_average_span() -> str:
    """The 1-minute load average when the benchmark started and now."""
    return (f"load average (1 min) {LOAD_AT_START[0]:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end")


def host_lines(java_note: str = "") -> list[str]:
    """Two Markdown list items: the hardware and the load average over the run (other
    work on the machine shows there), then Python and Java."""
    return [
        f"- CPUs (`nproc`): {os.cpu_count()}; RAM: {memory_gib():.1f} GiB; "
        f"{platform.system()} {platform.release()} {platform.machine()}; "
        f"{load_average_span()} (other work on the machine shows here)",
        f"- Python {platform.python_version()}; Java: {java_version()}{java_note}",
    ]


def git_commit() -> str:
    """The short hash of the checkout's HEAD, or "unknown"."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=False,
                          capture_output=True, text=True).stdout.strip() or "unknown"


def command_line(script: str) -> str:
    """The command a report quotes: `python benchmarks/<script>` with this run's arguments,
    --write-docs left out."""
    return " ".join([f"python benchmarks/{script}", *sys.argv[1:]]).replace(
        " --write-docs", "")


def write_section(doc: Path, begin: str, end: str, section: str, title: str) -> None:
    """Put `section` (which starts with `begin` and ends with `end`) in place of the doc's
    current section between those markers, or append it; a missing doc starts with `title`."""
    text = doc.read_text() if doc.exists() else f"# {title}\n"
    if begin in text and end in text.split(begin, 1)[1]:
        before, rest = text.split(begin, 1)
        text = before + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


@dataclass(frozen=True)
class DocSection:
    """The section of `doc` a benchmark regenerates: between `<!-- {marker}:begin -->` and
    `<!-- {marker}:end -->`; a doc that does not exist yet starts with `# {title}`."""

    doc: Path
    marker: str
    title: str

    def write(self, text: str) -> None:
        begin, end = f"<!-- {self.marker}:begin -->", f"<!-- {self.marker}:end -->"
        write_section(self.doc, begin, end, f"{begin}\n{text}\n{end}", self.title)


def sqs_client(
    endpoint: str, attempts: int = 1, read_timeout: float = 30, pool: int = 10
) -> Any:
    """A boto3 SQS client for `endpoint` with dummy credentials; `attempts` 1 means an
    error is seen, not retried; `pool` caps its HTTP connections."""
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(
            retries={"total_max_attempts": attempts},
            connect_timeout=5,
            read_timeout=read_timeout,
            max_pool_connections=pool,
        ),
    )


def start_server(
    redis_url: str, contact_point: str, keyspace: str, work: Path, extra: list[str],
    environment: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], str, Path]:
    """Start `cqs serve` on a free port (no CQS_* variables inherited, only `environment`'s)
    and wait until it answers ListQueues; returns the process, its endpoint and its log file."""
    port = free_port()
    log_path = work / "cqs.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    env.update(environment or {})
    process = subprocess.Popen(
        [sys.executable, "-m", "cqs", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--redis-urls", redis_url, "--cassandra-hosts", contact_point,
         "--cassandra-keyspace", keyspace, "--data-dir", str(work / "data"),
         "--log-level", "INFO", *extra],
        stdout=log_path.open("ab"), stderr=subprocess.STDOUT, cwd=ROOT, env=env,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            sqs_client(endpoint).list_queues()
            return process, endpoint, log_path
        except Exception:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"cqs serve did not start; see {log_path}") from None
            time.sleep(0.3)


@dataclass(frozen=True)
class RunningServer:
    endpoint: str
    pid: int | None  # with --workers N, the supervisor's: its workers are its children
    description: str  # for a report: what was measured


@contextlib.contextmanager
def embedded_cqs(work: Path, workers: int = 1) -> Iterator[RunningServer]:
    """An embedded Redis, an embedded Cassandra (a fresh keyspace) and `cqs serve --workers
    N` over them, logging warnings only; stops all three on the way out."""
    redis = EmbeddedRedis(work / "redis")
    cassandra = EmbeddedCassandra(work / "cassandra")
    server: subprocess.Popen[bytes] | None = None
    try:
        redis.start()
        cassandra.start()
        keyspace = "bench_" + uuid.uuid4().hex[:10]
        server, endpoint, _log = start_server(
            redis.url, cassandra.contact_point, keyspace, work,
            ["--log-level", "WARNING", "--workers", str(workers)],
        )
        yield RunningServer(
            endpoint, server.pid,
            f"one `cqs serve --workers {workers}` over an embedded Redis and an embedded "
            "Cassandra",
        )
    finally:
        if server is not None and server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        redis.stop()
        cassandra.stop()


@contextlib.contextmanager
def target_server(
    endpoint: str | None, server_pid: int | None, workers: int, work: Path
) -> Iterator[RunningServer]:
    """The server at `endpoint` (its pid, if given, for memory readings), or else an
    embedded one (`embedded_cqs`)."""
    if endpoint:
        yield RunningServer(endpoint, server_pid, f"`{endpoint}`")
        return
    with embedded_cqs(work, workers) as server:
        yield server


def process_tree(pid: int) -> list[int]:
    """`pid` and all its live descendants (the workers of `cqs serve --workers N`, the
    Redis and Cassandra a server started)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in children.get(parent, [])]
        tree += frontier
    return tree


def arrivals(channel: Any, seconds: float) -> Iterator[Any]:
    """What arrives on `channel` (a multiprocessing queue) within `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            yield channel.get(timeout=left)
        except queue.Empty:
            return


def raise_open_file_limit(wanted: int) -> int:
    """Raise this process's open-file limit (inherited by the children it starts, the
    server among them) towards `wanted`, as far as the hard limit allows; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft
