"""The cqs server under test: a `cqs serve` child started on a free port (alone, or with an
embedded Redis and Cassandra of its own), or one already running; and the process tree
whose CPU time and memory a report reads.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import ROOT
from benchmarks.harness.clients import sqs_client
from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.embedded.ports import free_port
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.settings import Settings


def shipped_cassandra(work: Path, commitlog_sync: str | None = None) -> EmbeddedCassandra:
    """An embedded Cassandra under `work` whose commit log syncs as `commitlog_sync` says
    (None: as `./scripts/serve`'s embedded one does, the settings' default)."""
    return EmbeddedCassandra(
        work, commitlog_sync=commitlog_sync or Settings().embedded_cassandra_commitlog_sync)


def cassandra_summary(cassandra: EmbeddedCassandra) -> str:
    """"Cassandra 5.0.8 (commit log: batch)", for a report's heading (once started)."""
    return f"Cassandra {cassandra.release_version} (commit log: {cassandra.commitlog_sync})"


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
    cassandra = shipped_cassandra(work / "cassandra")
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
            f"{cassandra_summary(cassandra)}",
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
