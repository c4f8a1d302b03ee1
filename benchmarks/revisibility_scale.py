"""Does returning due messages cost time per due message, or per hidden message?

Puts H messages in flight with visibility deadlines an hour away (in one queue, and spread
over Q queues), then makes k more due and times the sweep that returns them: the real
`RedisMessageCache.release_due` against a real redis-server, called with the revisibility
worker's batch limit until nothing is left due. For each (layout, H, k) it reports the
median wall time of several sweeps, the number of `release_due` calls, and Redis's own time
from `INFO commandstats` (usec spent in EVALSHA, i.e. inside the Lua scripts: the sweep
lease and one release script per due queue).

How the state is built, quickly: `begin_fill` / `load` / `finish_fill` in pages of
`--page` messages, the far ones loaded in flight for an hour (`load`'s `hidden_until`, as a
fill does for messages handed out while the cache was away). Another `k_max` messages are
loaded visible as a reservoir; before each sweep, k of them
are received with a `now_ms` ten seconds in the past and a 1 ms timeout, so they are
exactly k due messages. The sweep puts them back at the head of the visible list, ready for
the next round. Hidden total during a sweep = H (far) + k (due).

Starts its own embedded redis-server unless `--redis-url` is given (then it only touches
its own `bench-rv-*` queues, but the sweep also moves other queues' due messages).

    python benchmarks/revisibility_scale.py --write-docs
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from redis.asyncio import Redis  # noqa: E402

from benchmarks.harness.report import host_lines, write_section  # noqa: E402
from cqs.domain.model import (  # noqa: E402
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    Message,
    QueueIdentity,
    QueueNamespace,
)
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402
from cqs.redis_cache.cache import RedisMessageCache  # noqa: E402
from cqs.redis_cache.keys import QueueKeys  # noqa: E402

HOME = QueueNamespace(DEFAULT_ACCOUNT_ID, DEFAULT_REGION)

DOC = ROOT / "docs" / "scale.md"
BEGIN = "<!-- revisibility_scale:begin -->"
END = "<!-- revisibility_scale:end -->"
HOUR_MS = 3_600_000
RETENTION_MS = 14 * 24 * HOUR_MS
SWEEPER = "bench-sweeper"
SWEEP_LEASE_MS = 5_000


def make_messages(count: int, now_ms: int) -> list[Message]:
    return [
        Message(
            message_id=str(uuid.uuid1()),
            body="x" * 64,
            md5_of_body="0" * 32,
            sent_timestamp_ms=now_ms,
            visible_at_ms=now_ms,
            sender_id="bench",
        )
        for _ in range(count)
    ]


def nonces(count: int) -> list[str]:
    return [uuid.uuid4().hex[:12] for _ in range(count)]


async def release_due(cache: RedisMessageCache, now_ms: int, limit: int) -> list[QueueIdentity]:
    return await cache.release_due(now_ms, limit, SWEEPER, SWEEP_LEASE_MS)


async def fill(cache: RedisMessageCache, queue: QueueIdentity, far: int, reservoir: int, page: int) -> None:
    """`far` messages loaded in flight for an hour (`hidden_until`), `reservoir` visible."""
    owner = "bench-" + uuid.uuid4().hex[:8]
    now = int(time.time() * 1000)
    assert await cache.begin_fill(queue, owner, 600_000)
    remaining = far + reservoir
    while remaining:
        size = min(page, remaining)
        messages = make_messages(size, now)
        hidden_count = max(0, min(size, remaining - reservoir))
        hidden_until = {m.message_id: now + HOUR_MS for m in messages[:hidden_count]}
        assert await cache.load(queue, owner, messages, now, hidden_until)
        remaining -= size
    assert await cache.finish_fill(queue, owner)


async def make_due(
    cache: RedisMessageCache, queues: list[QueueIdentity], due: int
) -> dict[QueueIdentity, list[str]]:
    """Hide `due` reservoir messages (spread over `queues`) with a deadline already past;
    returns their ids by queue."""
    past = int(time.time() * 1000) - 10_000
    share, extra = divmod(due, len(queues))
    made: dict[QueueIdentity, list[str]] = {}
    for index, queue in enumerate(queues):
        count = share + (1 if index < extra else 0)
        if count:
            got = await cache.receive(queue, count, 1, past, RETENTION_MS, nonces(count))
            assert got is not None and len(got.deliveries) == count, "reservoir ran dry"
            made[queue] = [delivery.message.message_id for delivery in got.deliveries]
    return made


async def sweep_outcome(
    admin: Redis, queues: list[QueueIdentity], due_ids: dict[QueueIdentity, list[str]],
    far: int,
) -> tuple[int, int]:
    """After a sweep: (due messages still in flight: not returned, each checked by id;
    far messages no longer in flight: returned before their deadline, i.e. would be
    delivered again early)."""
    not_returned = in_flight = 0
    for queue in queues:
        keys = QueueKeys(queue)
        in_flight += int(await admin.zcard(keys.inflight))
        ids = due_ids.get(queue, [])
        if ids:
            scores = await admin.zmscore(keys.inflight, ids)
            not_returned += sum(1 for score in scores if score is not None)
    return not_returned, far - (in_flight - not_returned)


def script_usec(stats: dict[str, Any]) -> float:
    """Microseconds Redis spent running scripts (EVALSHA and friends) since the last reset.

    Redis 7 also lists the commands a script runs under their own names, inside this
    time, so only the script entries are summed.
    """
    return sum(
        float(value["usec"])
        for name, value in stats.items()
        if name.removeprefix("cmdstat_") in ("evalsha", "eval", "evalsha_ro", "eval_ro", "fcall")
    )


@dataclass
class Row:
    layout: str
    queues: int
    far: int
    due: int
    wall_ms: list[float]
    calls: int
    script_usec: list[float]
    not_returned: int = 0  # over all sweeps: due messages the sweep left in flight
    returned_early: int = 0  # over all sweeps: far messages the sweep made visible

    def line(self) -> str:
        median_ms = statistics.median(self.wall_ms)
        usec = statistics.median(self.script_usec)
        per_due = f"{usec / self.due:.1f}" if self.due else "–"
        return (
            f"| {self.layout} | {self.queues} | {self.far:,} | {self.due:,} | "
            f"{median_ms:.2f} | {min(self.wall_ms):.2f} | {max(self.wall_ms):.2f} | "
            f"{self.calls} | {usec:,.0f} | {per_due} | **{self.not_returned}** | "
            f"**{self.returned_early}** |"
        )


async def measure_layout(
    redis_url: str, layout: str, queue_count: int, far: int, dues: list[int], args: argparse.Namespace
) -> list[Row]:
    cache = RedisMessageCache([redis_url], socket_timeout=30.0)
    admin = Redis.from_url(redis_url, decode_responses=True)
    tag = uuid.uuid4().hex[:6]
    queues = [HOME.queue(f"bench-rv-{tag}-{index}") for index in range(queue_count)]
    rows: list[Row] = []
    try:
        reservoir = max(dues)
        started = time.perf_counter()
        for index, queue in enumerate(queues):
            share = far // queue_count + (1 if index < far % queue_count else 0)
            spare = reservoir // queue_count + (1 if index < reservoir % queue_count else 0)
            await fill(cache, queue, share, spare, args.page)
        print(f"{layout}: {far:,} hidden in {queue_count} queue(s) built in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        # Nothing of ours should be due now; sweep away anything left over first.
        while await release_due(cache, int(time.time() * 1000), args.limit):
            pass
        for due in dues:
            wall: list[float] = []
            script: list[float] = []
            calls_seen = not_returned = returned_early = 0
            for _ in range(args.runs):
                due_ids = await make_due(cache, queues, due)
                await admin.config_resetstat()
                now = int(time.time() * 1000)
                began = time.perf_counter()
                calls = 0
                released: set[QueueIdentity] = set()
                while True:
                    calls += 1
                    names = await release_due(cache, now, args.limit)
                    if not names:
                        break
                    released.update(names)
                wall.append((time.perf_counter() - began) * 1000)
                stats = await admin.info("commandstats")
                script.append(script_usec(stats))
                calls_seen = calls
                expected = min(due, queue_count)
                assert len(released & set(queues)) == expected, (
                    f"expected {expected} queues released, got {len(released & set(queues))}"
                )
                left, early = await sweep_outcome(admin, queues, due_ids, far)
                not_returned += left
                returned_early += early
            row = Row(layout, queue_count, far, due, wall, calls_seen, script, not_returned,
                      returned_early)
            print(row.line(), flush=True)
            rows.append(row)
    finally:
        for queue in queues:
            await cache.drop(queue)
        await cache.close()
        await admin.aclose()
    return rows


def machine(redis_version: str) -> list[str]:
    return [
        *host_lines(' (unused here)'),
        f"- redis-server {redis_version} (no persistence), on the same machine as the client",
    ]


def markdown(rows: list[Row], args: argparse.Namespace, command: str, redis_version: str) -> str:
    return "\n".join([
        BEGIN,
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `benchmarks/revisibility_scale.py`. Command:",
        "",
        "```",
        command,
        "```",
        "",
        *machine(redis_version),
        f"- Each row: median of {args.runs} sweeps; one sweep = `release_due(now, "
        f"{args.limit})` (the worker's batch limit) called until it returns nothing, so "
        "`calls` includes the final empty call. *far hidden* messages are in flight for "
        "another hour; *due* messages are in flight with a deadline already passed.",
        "- *Redis µs* is `usec` of `cmdstat_evalsha` in `INFO commandstats` (reset before "
        "each sweep): the time Redis spent inside the sweep's Lua scripts (the sweep lease "
        "on every call, one release script per due queue). The one ZRANGEBYSCORE on "
        "`cqs:due` per call is not in it.",
        "- *due not returned*: due messages (checked by id) still in flight after a sweep "
        "(they would come back only at the next sweep); *far returned early*: far messages "
        "no longer in flight after it (they would be delivered again before their "
        "visibility timeout); both summed over the row's sweeps.",
        "",
        "| layout | queues | far hidden | due | wall ms (median) | min | max | "
        "release_due calls | Redis µs (scripts) | Redis µs per due msg | **due not "
        "returned** | **far returned early** |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[row.line() for row in rows],
        "",
        END,
    ])




async def run(args: argparse.Namespace, redis_url: str) -> list[Row]:
    dues = [int(value) for value in args.due.split(",")]
    rows: list[Row] = []
    for far in [int(value) for value in args.hidden.split(",")]:
        for queue_count in [int(value) for value in args.queues.split(",")]:
            layout = "one queue" if queue_count == 1 else "spread"
            rows += await measure_layout(redis_url, layout, queue_count, far, dues, args)
    return rows


async def redis_version(url: str) -> str:
    client = Redis.from_url(url, decode_responses=True)
    try:
        info = await client.info("server")
        return str(info["redis_version"])
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="a running Redis (default: start an embedded one)")
    parser.add_argument("--hidden", default="10000,100000,1000000", help="far hidden totals, comma-separated")
    parser.add_argument("--queues", default="1,100", help="queue counts, comma-separated")
    parser.add_argument("--due", default="0,10,100,1000,10000", help="due counts, comma-separated")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--limit", type=int, default=1000, help="release_due limit per call")
    parser.add_argument("--page", type=int, default=5000, help="messages per load / receive call")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(part) for part in sys.argv)
    with tempfile.TemporaryDirectory(prefix="cqs-bench-rv-") as work:
        redis: EmbeddedRedis | None = None
        url = args.redis_url
        if url is None:
            redis = EmbeddedRedis(Path(work) / "redis")
            redis.start()
            url = redis.url
        try:
            version = asyncio.run(redis_version(url))
            rows = asyncio.run(run(args, url))
        finally:
            if redis is not None:
                redis.stop()
    section = markdown(rows, args, command, version)
    print(section)
    if args.write_docs:
        write_section(DOC, BEGIN, END, section, "Scale and resilience measurements")


if __name__ == "__main__":
    main()
