"""Cache fill of a large queue: how long, how much Redis, and does anyone else notice?

1. Writes N messages of one queue straight into Cassandra through `CassandraMessageStore.put`
   (many puts at once), after creating the queue in the catalog, so the queue's Redis cache
   is ABSENT, as after a Redis restart.
2. Starts a real `cqs serve` process over that keyspace and a Redis.
3. Creates a second, small queue through boto3 and runs a probe on it (SendMessage,
   ReceiveMessage, DeleteMessage in a loop, no retries) for a baseline period.
4. Triggers the big queue's fill with one ReceiveMessage on it, then watches
   `cqs:{<queue>}:state` (`filling:<owner>` -> `ready`) and the size of its payload hash,
   while the probe keeps going and a second probe receives from the big queue now and then.
5. Drains the big queue through the SQS API (asyncio tasks, ReceiveMessage of 10 with
   VisibilityTimeout 600 s, then DeleteMessageBatch), bounded by `--drain-timeout`, then
   deletes the messages the big-queue probe kept in flight during the fill.
6. Checks every message id (benchmarks/harness/fill_drain.py, benchmarks/harness/compact_ledger.py): each
   written message has a numbered body and a known id; every delivery, during the fill and
   in the drain, goes into one ledger. Lost = written, never delivered; early duplicate =
   delivered again before the previous delivery's 600 s visibility timeout ran out (e.g. a
   message handed out from Cassandra during the fill and again in the drain); also
   deliveries after a delete, deliveries with a wrong or unknown id, and ids left undeleted.
7. Reports write, fill and drain rates beside those counts, Redis memory, probe latencies
   and errors during the fill, and the server's fill log lines. A run that lost a message,
   delivered one early or after its delete, or whose drain did not finish, is not a
   result: its rates are struck through and the script exits 1.

The probes live in benchmarks/harness/fill_probes.py, the drain and the check's verdict in
benchmarks/harness/fill_drain.py, the report in benchmarks/harness/fill_report.py.

Starts an embedded redis-server and Cassandra unless `--redis-url` / `--cassandra-host`
are given (the keyspace is always a fresh one).

    python benchmarks/cache_fill.py --messages 200000 --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.compact_ledger import CompactLedger, id_bytes  # noqa: E402
from benchmarks.harness.fill_drain import Checked, body_of, delete_held, drain, problems  # noqa: E402
from benchmarks.harness.fill_probes import VISIBILITY_SECONDS, BigQueueProbe, Probe  # noqa: E402
from benchmarks.harness.fill_report import BEGIN, END, Fill, fill_log_lines, markdown  # noqa: E402
from benchmarks.harness.report import write_section  # noqa: E402
from benchmarks.harness.servers import start_server  # noqa: E402
from cqs.cassandra_store import CassandraConnection, CassandraMessageStore  # noqa: E402
from cqs.cassandra_store.catalog import CassandraQueueCatalog  # noqa: E402
from cqs.domain.model import (  # noqa: E402
    DEFAULT_ACCOUNT_ID,
    DEFAULT_QUEUE_ATTRIBUTES,
    DEFAULT_REGION,
    Message,
    Queue,
    QueueIdentity,
)
from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402
from cqs.redis_cache.keys import QueueKeys  # noqa: E402
from cqs.service import new_message_id  # noqa: E402

DOC = ROOT / "docs" / "scale.md"


# --- 1. writing the big queue straight into the store -----------------------------------------

async def write_messages(
    contact_point: str, keyspace: str, queue_name: str, checked: Checked, batch: int,
    concurrency: int,
) -> tuple[Queue, float]:
    """Create the queue in the catalog and put message 0..capacity-1 (numbered bodies,
    each acknowledged in `checked` once its put returned); return (queue, seconds)."""
    count = checked.ledger.capacity
    connection = CassandraConnection((contact_point,), keyspace, request_timeout=60)
    catalog = await CassandraQueueCatalog.open(connection)
    store = await CassandraMessageStore.open(connection)
    try:
        now_s = int(time.time())
        queue = await catalog.create(Queue(
            name=queue_name,
            queue_id=uuid.uuid4().hex,
            attributes=dict(DEFAULT_QUEUE_ATTRIBUTES),
            created_timestamp=now_s,
            last_modified_timestamp=now_s,
        ))
        claimed = 0
        started = time.perf_counter()
        next_report = started + 15

        async def writer() -> None:
            nonlocal claimed, next_report
            while claimed < count:
                numbers = range(claimed, min(claimed + batch, count))
                claimed = numbers.stop
                requested = time.time()
                now_ms = int(requested * 1000)
                messages = [
                    Message(
                        message_id=new_message_id(),
                        body=body_of(checked.run_id, n),
                        md5_of_body="0" * 32,
                        sent_timestamp_ms=now_ms,
                        visible_at_ms=now_ms,
                        sender_id="bench",
                    )
                    for n in numbers
                ]
                await store.put(queue, messages)
                for n, message in zip(numbers, messages, strict=True):
                    checked.ledger.record_acknowledged(n, id_bytes(message.message_id), requested)
                if time.perf_counter() > next_report:
                    next_report += 15
                    elapsed = time.perf_counter() - started
                    print(f"  written ~{claimed:,} in {elapsed:.0f} s", flush=True)

        await asyncio.gather(*(writer() for _ in range(concurrency)))
        return queue, time.perf_counter() - started
    finally:
        await store.close()
        await catalog.close()



def watch_fill(client: redis.Redis, queue_name: str, trigger: Any, timeout: float) -> Fill:
    keys = QueueKeys(QueueIdentity(DEFAULT_ACCOUNT_ID, DEFAULT_REGION, queue_name))
    fill = Fill(memory_before=int(client.info("memory")["used_memory"]))
    client.slowlog_reset()  # from here on: the Redis commands of the fill that took >= 10 ms
    started = time.perf_counter()
    trigger()
    next_sample = started
    while time.perf_counter() - started < timeout:
        state = client.get(keys.state)
        now = time.perf_counter()
        if isinstance(state, str) and state.startswith("filling:"):
            fill.owners.add(state.removeprefix("filling:"))
        if now >= next_sample:
            fill.progress.append((now - started, int(client.hlen(keys.payload))))
            next_sample += 5
        if state == "ready":
            fill.ready = True
            break
        time.sleep(0.1)
    fill.seconds = time.perf_counter() - started
    fill.cached = int(client.hlen(keys.payload))
    memory = client.info("memory")
    fill.memory_after = int(memory["used_memory"])
    fill.memory_peak = int(memory["used_memory_peak"])
    entries = client.slowlog_get(128)
    fill.slowest = sorted(
        ((entry["duration"] / 1000, slowlog_command(entry["command"])) for entry in entries),
        reverse=True,
    )
    return fill


def slowlog_command(command: bytes | str) -> str:
    """A SLOWLOG entry's command, short: its name and, when Redis cut the arguments short,
    how many more there were (a script's script hash and key names left out)."""
    words = (command.decode(errors="replace") if isinstance(command, bytes) else command).split()
    more = re.search(r"\.\.\. \((\d+) more arguments\)", " ".join(words))
    name = words[0] if words else "?"
    return f"{name} ({int(more.group(1)) + 31} arguments)" if more else name



def approximate_counts(admin: Any, url: str) -> str:
    attributes = admin.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                      "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return (f"{int(attributes['ApproximateNumberOfMessages']):,} visible, "
            f"{int(attributes['ApproximateNumberOfMessagesNotVisible']):,} in flight")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=100, help="messages per put")
    parser.add_argument("--concurrency", type=int, default=16, help="puts at once")
    parser.add_argument("--baseline", type=float, default=10.0, help="probe seconds before the fill")
    parser.add_argument("--fill-timeout", type=float, default=1800.0)
    parser.add_argument("--drain-tasks", type=int, default=8, help="concurrent drain loops")
    parser.add_argument("--drain-timeout", type=float, default=900.0,
                        help="seconds the drain may take before it stops unfinished")
    parser.add_argument("--redis-url", help="a running Redis (default: embedded)")
    parser.add_argument("--cassandra-host", help="host:port of a running node (default: embedded)")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="extra `cqs serve` argument, e.g. --server-arg=--cache-fill-page-size=1000")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(part) for part in sys.argv)

    with tempfile.TemporaryDirectory(prefix="cqs-bench-fill-") as scratch:
        work = Path(scratch)
        embedded_redis: EmbeddedRedis | None = None
        cassandra: EmbeddedCassandra | None = None
        server: subprocess.Popen[bytes] | None = None
        try:
            redis_url = args.redis_url
            if redis_url is None:
                embedded_redis = EmbeddedRedis(work / "redis")
                embedded_redis.start()
                redis_url = embedded_redis.url
            contact_point = args.cassandra_host
            if contact_point is None:
                cassandra = EmbeddedCassandra(work / "cassandra")
                cassandra.start()
                contact_point = cassandra.contact_point
            keyspace = "bench_fill_" + uuid.uuid4().hex[:8]
            big_name = "bench-fill-big-" + uuid.uuid4().hex[:6]
            checked = Checked(uuid.uuid4().hex[:8],
                              CompactLedger(args.messages, VISIBILITY_SECONDS))
            print(f"writing {args.messages:,} messages into {keyspace}", flush=True)
            _, write_seconds = asyncio.run(write_messages(
                contact_point, keyspace, big_name, checked, args.batch, args.concurrency
            ))
            print(f"  done in {write_seconds:.0f} s", flush=True)

            server, endpoint, log_path = start_server(
                redis_url, contact_point, keyspace, work, args.server_arg
            )
            admin = sqs_client(endpoint)
            small_url = admin.create_queue(QueueName="bench-fill-probe-" + uuid.uuid4().hex[:6])[
                "QueueUrl"]
            big_url = admin.get_queue_url(QueueName=big_name)["QueueUrl"]
            client = redis.Redis.from_url(redis_url, decode_responses=True)
            version = str(client.info("server")["redis_version"])

            probe = Probe(endpoint, small_url)
            probe.start()
            time.sleep(args.baseline)
            probe.phase = "during fill"
            big = BigQueueProbe(endpoint, big_url, checked)

            def trigger() -> None:
                big.receive(admin, 1)
                big.start()

            print("fill triggered", flush=True)
            fill = watch_fill(client, big_name, trigger, args.fill_timeout)
            probe.phase = "after"
            big.stopping.set()
            probe.stopping.set()
            big.join()
            probe.join()
            print(f"fill {'done' if fill.ready else 'NOT done'} in {fill.seconds:.1f} s",
                  flush=True)
            approximate = approximate_counts(admin, big_url)
            client.close()
            print(f"draining ({args.drain_tasks} tasks, at most {args.drain_timeout:.0f} s)",
                  flush=True)
            drained = asyncio.run(drain(endpoint, big_url, checked, args.drain_tasks,
                                        args.drain_timeout, VISIBILITY_SECONDS))
            print(f"  drain {'finished' if drained.finished else 'STOPPED'}: "
                  f"{drained.deliveries:,} deliveries in {drained.seconds:.1f} s", flush=True)
            asyncio.run(delete_held(endpoint, big_url, checked, big.held))
            verdict = checked.verdict()
            failed = problems(verdict, checked, drained)
            section = markdown(args, command, version, write_seconds, fill, probe, big,
                               approximate, drained, checked, verdict,
                               approximate_counts(admin, big_url), fill_log_lines(log_path))
        except BaseException:
            server_log = work / "cqs.log"
            if server_log.exists():  # the scratch directory goes away: show why here
                print("--- end of the cqs serve log ---", file=sys.stderr)
                print(server_log.read_text(errors="replace")[-6000:], file=sys.stderr)
            raise
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    server.kill()
            if embedded_redis is not None:
                embedded_redis.stop()
            if cassandra is not None:
                cassandra.stop()
    print(section)
    if args.write_docs:
        write_section(DOC, BEGIN, END, section, "Scale and resilience measurements")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
