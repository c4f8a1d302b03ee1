"""What a Cassandra write costs the API process, driver by driver: cqs's own session (the
DataStax Python driver under cqs's awaitable wrapper, what every send goes through), the
DataStax Python driver bare (execute_async bridged to asyncio), and acsylla (asyncio
bindings over the DataStax C++ driver, native code on its own I/O thread).

One embedded Cassandra 5.0 node (commit log periodic, so the node's fsyncs are not in the
latency), one table shaped like cqs's message rows (a partition of 100, a timeuuid
clustering key, a 1 KiB payload). Each driver runs in a process of its own on uvloop:
`--in-flight` concurrent loops of prepared INSERTs, an untimed warm-up, then `--writes`
timed ones. The figures: the client process's CPU (all its threads, from
`time.process_time`) per write and the Cassandra JVM's (from /proc), both over the timed
writes alone, and the
writes' p50/p99 latency. Every write is read back by count at the end (a driver whose rows
did not all arrive is not a result).

acsylla comes from a venv of its own (`benchmarks/install_acsylla`), never the project's.
`--write-docs` regenerates the section of docs/performance.md between its markers.

    benchmarks/install_acsylla
    python benchmarks/driver_cost.py --writes 20000 --in-flight 8 --rounds 3 --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ACSYLLA_PYTHON = ROOT / "benchmarks" / ".peers" / "acsylla" / "bin" / "python"
DRIVERS = ("cqs", "datastax", "acsylla")
PAYLOAD = "x" * 1024
PARTITIONS = 100
TABLE = "driver_bench"


# --- the child: one driver, one process -------------------------------------------------------

def insert_cql(keyspace: str) -> str:
    return f"INSERT INTO {keyspace}.{TABLE} (pk, id, payload) VALUES (?, ?, ?)"


async def cqs_writer(host: str, port: int, keyspace: str) -> Any:
    from cqs.cassandra_store.connection import CassandraConnection, connect

    session = await connect(CassandraConnection((f"{host}:{port}",), keyspace))
    cql = insert_cql(keyspace)

    async def write(n: int) -> None:
        await session.write(cql, (n % PARTITIONS, uuid.uuid1(), PAYLOAD))
    return write


async def datastax_writer(host: str, port: int, keyspace: str) -> Any:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port)
    session = await asyncio.to_thread(cluster.connect)
    prepared = await asyncio.to_thread(session.prepare, insert_cql(keyspace))
    loop = asyncio.get_running_loop()

    async def write(n: int) -> None:
        done: asyncio.Future[None] = loop.create_future()
        future = session.execute_async(prepared, (n % PARTITIONS, uuid.uuid1(), PAYLOAD))
        future.add_callbacks(
            lambda _rows: loop.call_soon_threadsafe(done.set_result, None),
            lambda error: loop.call_soon_threadsafe(done.set_exception, error),
        )
        await done
    return write


async def acsylla_writer(host: str, port: int, keyspace: str) -> Any:
    import acsylla

    cluster = acsylla.create_cluster([host], port=port)
    session = await cluster.create_session()
    prepared = await session.create_prepared(insert_cql(keyspace))

    async def write(n: int) -> None:
        statement = prepared.bind()
        statement.bind_list([n % PARTITIONS, uuid.uuid1(), PAYLOAD])
        await session.execute(statement)
    return write


WRITERS = {"cqs": cqs_writer, "datastax": datastax_writer, "acsylla": acsylla_writer}


def process_cpu_seconds(pid: int) -> float:
    """User + system time of `pid` (all its threads), from /proc (the Cassandra JVM's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def child(args: argparse.Namespace) -> dict[str, Any]:
    write = await WRITERS[args.child](args.host, args.port, args.keyspace)
    latencies: list[float] = []

    async def loops(count: int, first: int, timed: bool) -> None:
        async def one_loop(index: int) -> None:
            for n in range(first + index, first + count, args.in_flight):
                began = time.perf_counter()
                await write(n)
                if timed:
                    latencies.append((time.perf_counter() - began) * 1000)
        await asyncio.gather(*(one_loop(i) for i in range(args.in_flight)))

    await loops(args.warmup, 0, timed=False)
    jvm, cpu, wall = process_cpu_seconds(args.jvm_pid), time.process_time(), time.perf_counter()
    await loops(args.writes, args.warmup, timed=True)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    jvm = process_cpu_seconds(args.jvm_pid) - jvm
    latencies.sort()
    return {"writes": len(latencies), "cpu_s": cpu, "wall_s": wall, "jvm_s": jvm,
            "p50_ms": latencies[len(latencies) // 2],
            "p99_ms": latencies[int(len(latencies) * 0.99)]}


def run_child(args: argparse.Namespace) -> int:
    try:
        import uvloop
        uvloop.install()
        loop_name = "uvloop"
    except ImportError:
        loop_name = "asyncio"
    from importlib.metadata import version

    result = asyncio.run(child(args))
    distribution = "acsylla" if args.child == "acsylla" else "cassandra-driver"
    print(json.dumps(result | {"loop": loop_name,
                               "driver": f"{distribution} {version(distribution)}"}))
    return 0


# --- the parent: a node, the drivers in turn, the table ---------------------------------------

def rows_in(session: Any, keyspace: str) -> int:
    return sum(
        session.execute(f"SELECT COUNT(*) FROM {keyspace}.{TABLE} WHERE pk = %s",
                        (pk,), timeout=60).one()[0]
        for pk in range(PARTITIONS)
    )


def measure_driver(driver: str, node: Any, session: Any, args: argparse.Namespace,
                   python: str) -> dict[str, Any]:
    keyspace = "drv_" + uuid.uuid4().hex[:10]
    session.execute(f"CREATE KEYSPACE {keyspace} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE {keyspace}.{TABLE} (pk int, id timeuuid, payload text, "
                    "PRIMARY KEY (pk, id))")
    host, port = node.contact_point.rsplit(":", 1)
    done = subprocess.run(
        [python, __file__, "--child", driver, "--host", host, "--port", port,
         "--jvm-pid", str(node.pid),
         "--keyspace", keyspace, "--writes", str(args.writes), "--warmup", str(args.warmup),
         "--in-flight", str(args.in_flight)],
        capture_output=True, text=True, cwd=ROOT, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{driver} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["stored"] = rows_in(session, keyspace)
    result["expected"] = args.writes + args.warmup
    session.execute(f"DROP KEYSPACE {keyspace}", timeout=60)
    return result


def report(results: dict[str, list[dict[str, Any]]], release: str, args: argparse.Namespace,
           minutes: float) -> str:
    from benchmarks.harness.report import (
        command_line,
        git_commit,
        load_average_span,
        system_summary,
    )

    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} at commit {git_commit()} on "
        f"{system_summary()}; one embedded Cassandra {release} node (commit log periodic) on "
        f"the same machine; {args.in_flight} writes in flight, {args.warmup:,} untimed then "
        f"{args.writes:,} timed per round, {args.rounds} rounds per driver, alternating. It "
        f"took {minutes:.1f} minutes; {load_average_span()}. Command: "
        f"`{command_line('driver_cost.py')}`.",
        "",
        "| driver | client CPU µs per write (rounds) | median | Cassandra JVM CPU µs per "
        "write (median) | p50 ms | p99 ms | writes/s | rows stored / written |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for driver, runs in results.items():
        client = [r["cpu_s"] * 1e6 / r["writes"] for r in runs]
        jvm = [r["jvm_s"] * 1e6 / r["writes"] for r in runs]
        stored = all(r["stored"] == r["expected"] for r in runs)
        lines.append(
            f"| {DRIVER_NAMES[driver]}, {runs[0]['driver']} on {runs[0]['loop']} | "
            f"{', '.join(f'{c:.0f}' for c in client)} | "
            f"{statistics.median(client):.0f} | {statistics.median(jvm):.0f} | "
            f"{statistics.median(r['p50_ms'] for r in runs):.2f} | "
            f"{statistics.median(r['p99_ms'] for r in runs):.2f} | "
            f"{statistics.median(r['writes'] / r['wall_s'] for r in runs):,.0f} | "
            f"{'all' if stored else 'MISSING ROWS'} ({sum(r['stored'] for r in runs):,} / "
            f"{sum(r['expected'] for r in runs):,}) |"
        )
    return "\n".join(lines)


DRIVER_NAMES = {
    "cqs": "cqs's session (DataStax Python driver, cqs's wrapper)",
    "datastax": "DataStax Python driver, bare (execute_async → asyncio)",
    "acsylla": "acsylla (DataStax C++ driver)",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=DRIVERS, help=argparse.SUPPRESS)
    parser.add_argument("--host", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--keyspace", help=argparse.SUPPRESS)
    parser.add_argument("--jvm-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--drivers", default=",".join(DRIVERS))
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--acsylla-python", default=str(ACSYLLA_PYTHON))
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if args.child:
        return run_child(args)

    sys.path.insert(0, str(ROOT))
    from cassandra.cluster import Cluster

    from benchmarks.harness.report import DocSection
    from cqs.embedded.cassandra import EmbeddedCassandra

    drivers = [d.strip() for d in args.drivers.split(",") if d.strip()]
    if "acsylla" in drivers and not Path(args.acsylla_python).exists():
        parser.error(f"acsylla is not installed at {args.acsylla_python}: run "
                     "benchmarks/install_acsylla, or leave it out of --drivers")
    pythons = {d: args.acsylla_python if d == "acsylla" else sys.executable for d in drivers}
    started = time.monotonic()
    results: dict[str, list[dict[str, Any]]] = {d: [] for d in drivers}
    with tempfile.TemporaryDirectory(prefix="cqs-drivers-") as work:
        node = EmbeddedCassandra(Path(work) / "cassandra", commitlog_sync="periodic")
        node.start()
        try:
            host, port = node.contact_point.rsplit(":", 1)
            cluster = Cluster([host], port=int(port))
            session = cluster.connect()
            for round_number in range(args.rounds):
                for driver in drivers:
                    result = measure_driver(driver, node, session, args, pythons[driver])
                    print(f"round {round_number + 1} {driver}: {json.dumps(result)}", flush=True)
                    results[driver].append(result)
            cluster.shutdown()
            release = node.release_version
        finally:
            node.stop()
    text = report(results, release, args, (time.monotonic() - started) / 60)
    print(text)
    complete = all(r["stored"] == r["expected"] for runs in results.values() for r in runs)
    if args.write_docs and complete:
        DocSection(ROOT / "docs" / "performance.md", "driver_cost", "Performance").write(text)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
