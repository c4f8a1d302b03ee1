"""What is left behind: deleted queues and expired messages, counted in Redis and Cassandra.

Deleted queues: starts a real `cqs serve`, creates Q queues through boto3 and sends M
messages to each (a share of them delayed ten minutes, a share received with a ten-minute
visibility timeout and left in flight, a few deleted normally, the rest visible), counts
what each queue holds, deletes every queue through boto3, then counts again:

- Redis: keys matching `cqs:{<queue>}:*` (SCAN), and the queue's entries in the per-server
  keys (`cqs:due`, `cqs:store_delete_queues`);
- Cassandra (read with the driver at consistency ONE, whole-table reads, so a row is found
  whatever bucket it sits in): rows of the deleted queue ids in `messages` and
  `message_buckets`, and rows of the names in `queues`.

Retention: a queue with MessageRetentionPeriod=60 gets messages that are never received,
plus some received once with a 20 s visibility timeout and never deleted (they come back,
then expire). After 65 s, and then until the server's periodic trim has run (polled until
`--trim-wait` seconds), it counts the queue's cached messages in Redis and its live rows in
Cassandra (TTL).

Starts an embedded redis-server and Cassandra unless `--redis-url` / `--cassandra-host`
are given (the keyspace is always a fresh one).

    python benchmarks/cleanup_orphans.py --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from benchmarks.harness.clients import sqs_client  # noqa: E402
from benchmarks.harness.report import host_lines, write_section  # noqa: E402
from benchmarks.harness.servers import start_server  # noqa: E402
from cqs.cassandra_store import CassandraConnection, connect  # noqa: E402
from cqs.cassandra_store import schema as tables  # noqa: E402
from cqs.domain.model import DEFAULT_ACCOUNT_ID, DEFAULT_REGION, QueueNamespace  # noqa: E402
from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402
from cqs.redis_cache.keys import DUE_KEY, STORE_DELETE_QUEUES_KEY, QueueKeys  # noqa: E402

HOME = QueueNamespace(DEFAULT_ACCOUNT_ID, DEFAULT_REGION)

DOC = ROOT / "docs" / "scale.md"
BEGIN = "<!-- cleanup_orphans:begin -->"
END = "<!-- cleanup_orphans:end -->"
DUE_ENTRY = "cqs:due entry"
STORE_DELETES_ENTRY = "cqs:store_delete_queues entry"
WHOLE_TABLE = 10_000_000  # CQL 3.0 applies LIMIT 10000 when none is given


# --- counting --------------------------------------------------------------------------------

def redis_leftovers(client: redis.Redis, names: list[str]) -> Counter[str]:
    """Per key kind (`state`, `payload`, ..., `cqs:due entry`): how many the queues have."""
    found: Counter[str] = Counter()
    for name in names:
        queue_key = HOME.queue(name).key
        pattern = f"cqs:{{{queue_key}}}:*"
        for key in client.scan_iter(match=pattern, count=1000):  # keys have no glob chars
            found[str(key).rsplit(":", 1)[1]] += 1
        if client.zscore(DUE_KEY, queue_key) is not None:
            found[DUE_ENTRY] += 1
        if client.sismember(STORE_DELETE_QUEUES_KEY, queue_key):
            found[STORE_DELETES_ENTRY] += 1
    return found


def cached_messages(client: redis.Redis, name: str) -> dict[str, int]:
    keys = QueueKeys(HOME.queue(name))
    return {
        "payload": int(client.hlen(keys.payload)),
        "receipt": int(client.hlen(keys.receipt)),
        "visible": int(client.llen(keys.visible)),
        "inflight": int(client.zcard(keys.inflight)),
        "delayed": int(client.zcard(keys.delayed)),
    }


@dataclass
class CassandraCounts:
    messages: Counter[str] = field(default_factory=Counter)  # queue_id -> live message rows
    buckets: Counter[str] = field(default_factory=Counter)  # queue_id -> bucket index rows
    queue_names: set[str] = field(default_factory=set)
    queue_ids: dict[str, str] = field(default_factory=dict)  # name -> queue_id
    bucket_ttls: dict[str, int] = field(default_factory=dict)  # queue_id -> longest TTL left, s


async def cassandra_counts(contact_point: str, keyspace: str) -> CassandraCounts:
    """Whole-table reads of the keyspace (small here), at consistency ONE."""
    session = await connect(CassandraConnection((contact_point,), keyspace, request_timeout=60))
    try:
        counts = CassandraCounts()
        for row in await session.read(
            f"SELECT queue_id, message_id FROM {tables.MESSAGES_TABLE} LIMIT {WHOLE_TABLE}"
        ):
            counts.messages[row.queue_id] += 1
        for row in await session.read(
            f"SELECT queue_id, bucket, TTL(registered_ms)"
            f" FROM {tables.MESSAGE_BUCKETS_TABLE} LIMIT {WHOLE_TABLE}"
        ):
            counts.buckets[row.queue_id] += 1
            ttl = int(row[2] or 0)  # CQL 3.0 has no AS: the TTL is the third column
            counts.bucket_ttls[row.queue_id] = max(ttl, counts.bucket_ttls.get(row.queue_id, 0))
        for row in await session.read(
            f"SELECT name, queue_id FROM {tables.QUEUES_TABLE} LIMIT {WHOLE_TABLE}"
        ):
            if row.queue_id is not None:
                counts.queue_names.add(row.name)
                counts.queue_ids[row.name] = row.queue_id
        return counts
    finally:
        await session.close()


# --- the scenarios ---------------------------------------------------------------------------

@dataclass
class Snapshot:
    redis: Counter[str]
    cassandra_messages: int
    cassandra_buckets: int
    catalog_rows: int
    bucket_ttl_s: int  # longest TTL left on their message_buckets rows


def snapshot(client: redis.Redis, contact_point: str, keyspace: str, names: list[str],
             ids: dict[str, str]) -> Snapshot:
    counts = asyncio.run(cassandra_counts(contact_point, keyspace))
    return Snapshot(
        redis=redis_leftovers(client, names),
        cassandra_messages=sum(counts.messages[ids[name]] for name in names),
        cassandra_buckets=sum(counts.buckets[ids[name]] for name in names),
        catalog_rows=len(counts.queue_names & set(names)),
        bucket_ttl_s=max((counts.bucket_ttls.get(ids[name], 0) for name in names), default=0),
    )


@dataclass
class Sent:
    visible: int = 0
    delayed: int = 0
    in_flight: int = 0
    deleted: int = 0


def fill_queues(sqs: Any, names: list[str], per_queue: int) -> tuple[dict[str, str], Sent]:
    urls: dict[str, str] = {}
    sent = Sent()
    delayed_share, inflight_share, deleted_share = per_queue // 5, per_queue * 3 // 10, 10
    for name in names:
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        urls[name] = url
        for first in range(0, per_queue, 10):
            entries = []
            for index in range(first, min(first + 10, per_queue)):
                entry: dict[str, Any] = {"Id": str(index), "MessageBody": f"message {index}"}
                if index < delayed_share:
                    entry["DelaySeconds"] = 600
                entries.append(entry)
            sqs.send_message_batch(QueueUrl=url, Entries=entries)
        sent.delayed += delayed_share
        received = 0
        while received < inflight_share + deleted_share:
            want = min(10, inflight_share + deleted_share - received)
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=want,
                                      VisibilityTimeout=600).get("Messages", [])
            if not got:
                break
            for message in got:
                if received < deleted_share:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                    sent.deleted += 1
                else:
                    sent.in_flight += 1
                received += 1
        sent.visible += per_queue - delayed_share - min(received, inflight_share + deleted_share)
    return urls, sent


@dataclass
class RetentionResult:
    label: str
    elapsed_s: float
    redis: dict[str, int]
    cassandra_messages: int
    cassandra_buckets: int


def retention_case(client: redis.Redis, sqs: Any, contact_point: str, keyspace: str,
                   args: argparse.Namespace) -> tuple[list[RetentionResult], float | None, int]:
    name = "bench-retention-" + uuid.uuid4().hex[:6]
    url = sqs.create_queue(QueueName=name, Attributes={"MessageRetentionPeriod": "60"})[
        "QueueUrl"]
    for first in range(0, args.retention_messages, 10):
        sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "MessageBody": f"expiring {i}"}
            for i in range(first, min(first + 10, args.retention_messages))
        ])
    sent_at = time.monotonic()
    received = 0
    while received < args.retention_received:
        want = min(10, args.retention_received - received)
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=want,
                                  VisibilityTimeout=20).get("Messages", [])
        if not got:
            break
        received += len(got)  # never deleted: back after 20 s, then expiring
    queue_id = asyncio.run(cassandra_counts(contact_point, keyspace)).queue_ids[name]
    results: list[RetentionResult] = []

    def record(label: str) -> RetentionResult:
        counts = asyncio.run(cassandra_counts(contact_point, keyspace))
        result = RetentionResult(label, time.monotonic() - sent_at, cached_messages(client, name),
                                 counts.messages[queue_id], counts.buckets[queue_id])
        results.append(result)
        print(f"  {label}: {result}", flush=True)
        return result

    record("just after sending")
    time.sleep(max(0.0, 65 - (time.monotonic() - sent_at)))
    record("65 s after sending")
    cleared_at: float | None = None
    while time.monotonic() - sent_at < args.trim_wait:
        if cached_messages(client, name)["payload"] == 0:
            cleared_at = time.monotonic() - sent_at
            break
        time.sleep(1)
    record("after the trim" if cleared_at is not None else f"{args.trim_wait:.0f} s (gave up)")
    sqs.delete_queue(QueueUrl=url)
    return results, cleared_at, received


# --- report ----------------------------------------------------------------------------------

def machine(redis_version: str) -> list[str]:
    return [
        *host_lines(),
        f"- redis-server {redis_version} (no persistence); the embedded Cassandra 5.0 "
        "(one node); one `cqs serve` process; all on the same machine",
    ]


def bucket_note(after: Snapshot) -> str:
    if not after.cassandra_buckets:
        return ""
    return f" (expire by TTL within {after.bucket_ttl_s:,} s = {after.bucket_ttl_s / 86400:.1f} days)"


def queue_keys(counter: Counter[str]) -> int:
    return sum(n for kind, n in counter.items() if kind not in (DUE_ENTRY, STORE_DELETES_ENTRY))


def kinds(counter: Counter[str]) -> str:
    listed = [f"{kind} {n}" for kind, n in sorted(counter.items())
              if kind not in (DUE_ENTRY, STORE_DELETES_ENTRY) and n]
    return ", ".join(listed) or "none"


def markdown(args: argparse.Namespace, command: str, version: str, sent: Sent, before: Snapshot,
             after: Snapshot, retention: list[RetentionResult], cleared_at: float | None,
             retention_received: int) -> str:
    q = args.queues
    lines = [
        BEGIN,
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `benchmarks/cleanup_orphans.py`. Command:",
        "",
        "```",
        command,
        "```",
        "",
        *machine(version),
        "",
        f"**Deleted queues.** {q} queues × {args.messages} messages: {sent.visible} visible, "
        f"{sent.delayed} delayed 600 s, {sent.in_flight} received and left in flight (600 s), "
        f"{sent.deleted} deleted normally; then DeleteQueue on every queue.",
        "",
        "| what | before DeleteQueue | after DeleteQueue (expected 0) |",
        "|---|---|---|",
        f"| Redis keys `cqs:{{q}}:*` of the {q} queues | {queue_keys(before.redis)} | "
        f"{queue_keys(after.redis)} |",
        f"| ... by kind | {kinds(before.redis)} | {kinds(after.redis)} |",
        f"| their entries in `cqs:due` / `cqs:store_delete_queues` | "
        f"{before.redis[DUE_ENTRY]} / {before.redis[STORE_DELETES_ENTRY]} | "
        f"{after.redis[DUE_ENTRY]} / {after.redis[STORE_DELETES_ENTRY]} |",
        f"| Cassandra `messages` rows of their queue ids | {before.cassandra_messages:,} | "
        f"{after.cassandra_messages:,} |",
        f"| Cassandra `message_buckets` rows of their queue ids | {before.cassandra_buckets} | "
        f"{after.cassandra_buckets}{bucket_note(after)} |",
        f"| Cassandra `queues` rows of their names | {before.catalog_rows} | "
        f"{after.catalog_rows} |",
        "",
        f"**Retention.** One queue, MessageRetentionPeriod=60, {args.retention_messages} "
        f"messages sent, {retention_received} of them received once with a 20 s visibility "
        "timeout and never deleted, the rest never received. Counted in Redis (the queue's "
        "hashes, list and sets) and in Cassandra (live rows of its queue id). "
        + (f"The cached messages were gone {cleared_at:.0f} s after sending."
           if cleared_at is not None else
           f"The cached messages were still there {args.trim_wait:.0f} s after sending."),
        "",
        "| when | s after sending | Redis payload / receipt / visible / inflight / delayed "
        "| Cassandra `messages` rows | Cassandra `message_buckets` rows |",
        "|---|---|---|---|---|",
    ]
    for result in retention:
        cached = result.redis
        lines.append(
            f"| {result.label} | {result.elapsed_s:.0f} | {cached['payload']} / "
            f"{cached['receipt']} / {cached['visible']} / {cached['inflight']} / "
            f"{cached['delayed']} | {result.cassandra_messages} | {result.cassandra_buckets} |"
        )
    lines += ["", END]
    return "\n".join(lines)




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--messages", type=int, default=200, help="per queue")
    parser.add_argument("--retention-messages", type=int, default=200)
    parser.add_argument("--retention-received", type=int, default=50)
    parser.add_argument("--trim-wait", type=float, default=130.0,
                        help="give the server's trim until this many s after sending")
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds between the last DeleteQueue and counting")
    parser.add_argument("--redis-url", help="a running Redis (default: embedded)")
    parser.add_argument("--cassandra-host", help="host:port of a running node (default: embedded)")
    parser.add_argument("--server-arg", action="append", default=[])
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(part) for part in sys.argv)

    with tempfile.TemporaryDirectory(prefix="cqs-bench-cleanup-") as scratch:
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
            keyspace = "bench_cleanup_" + uuid.uuid4().hex[:8]
            server, endpoint, _log = start_server(redis_url, contact_point, keyspace, work,
                                                  args.server_arg)
            sqs = sqs_client(endpoint, attempts=2)
            client = redis.Redis.from_url(redis_url, decode_responses=True)
            version = str(client.info("server")["redis_version"])

            tag = uuid.uuid4().hex[:6]
            names = [f"bench-cleanup-{tag}-{index}" for index in range(args.queues)]
            urls, sent = fill_queues(sqs, names, args.messages)
            ids = asyncio.run(cassandra_counts(contact_point, keyspace)).queue_ids
            before = snapshot(client, contact_point, keyspace, names, ids)
            print(f"before DeleteQueue: {before}", flush=True)
            for url in urls.values():
                sqs.delete_queue(QueueUrl=url)
            time.sleep(args.settle)
            after = snapshot(client, contact_point, keyspace, names, ids)
            print(f"after DeleteQueue: {after}", flush=True)

            print("retention case (about two minutes)", flush=True)
            retention, cleared_at, received = retention_case(client, sqs, contact_point,
                                                             keyspace, args)
            client.close()
            section = markdown(args, command, version, sent, before, after, retention,
                               cleared_at, received)
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


if __name__ == "__main__":
    main()
