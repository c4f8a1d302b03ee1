"""What benchmarks/compaction_strategies.py measures on a node, and the strategies it sets.

Owns the time compression (`TimeScale`: every clock-based setting divided by one factor),
the compaction options of each strategy under test, scaled by it, and the probes of one
sample: a cache fill run with driver query tracing (the tombstone cells and live rows each
partition read stepped over, as Cassandra's traces say, and how many sstables it merged),
the compactions of a table so far (system.compaction_history), the bytes and sstables of
its data directory, and the JVM's CPU time from /proc.
Imports the Cassandra store and the driver (for tracing); the entry script imports this.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassandra import ConsistencyLevel

from cqs.cassandra_store import CassandraMessageStore, CassandraSession
from cqs.cassandra_store import schema as store_schema
from cqs.domain.model import Queue

# What the message tables' clock-based settings are in production (cqs's defaults and
# Cassandra's): compressed by the same factor in a run.
PRODUCTION_BUCKET_SECONDS = store_schema.DEFAULT_BUCKET_SECONDS  # 300
PRODUCTION_CLOSED_SLACK_SECONDS = 120
PRODUCTION_GC_GRACE_SECONDS = store_schema.DEFAULT_MESSAGE_GC_GRACE_SECONDS  # 3600
PRODUCTION_TOMBSTONE_COMPACTION_INTERVAL = 86_400  # Cassandra's default, every strategy
PRODUCTION_EXPIRED_CHECK_SECONDS = 600  # expired_sstable_check_frequency_seconds (TWCS, UCS)
STRATEGY_NAMES = ("stcs", "ucs", "lcs", "twcs")
# The tables a strategy is set on: the ones the schema gives the short gc grace.
STRATEGY_TABLES = (store_schema.MESSAGES_TABLE, store_schema.MESSAGE_BUCKETS_TABLE)


@dataclass(frozen=True)
class TimeScale:
    """`factor` simulated seconds pass in one real second. Every clock-based setting of the
    message tables is the production value divided by `factor`; `flush_minutes` and
    `twcs_window_minutes` are simulated minutes."""

    factor: int
    flush_minutes: int
    twcs_window_minutes: int

    def real(self, simulated_seconds: float) -> float:
        return simulated_seconds / self.factor

    def simulated_hours(self, real_seconds: float) -> float:
        return real_seconds * self.factor / 3600

    def _exact(self, simulated_seconds: int, what: str) -> int:
        real = simulated_seconds / self.factor
        if real < 1 or real != int(real):
            raise ValueError(f"{what} ({simulated_seconds} s) / scale {self.factor} is not a"
                             " whole number of seconds")
        return int(real)

    @property
    def bucket_seconds(self) -> int:
        return self._exact(PRODUCTION_BUCKET_SECONDS, "the bucket length")

    @property
    def closed_slack_seconds(self) -> int:
        return max(1, round(PRODUCTION_CLOSED_SLACK_SECONDS / self.factor))

    @property
    def gc_grace_seconds(self) -> int:
        return max(1, round(PRODUCTION_GC_GRACE_SECONDS / self.factor))

    @property
    def flush_period_ms(self) -> int:
        return round(self.flush_minutes * 60_000 / self.factor)

    @property
    def twcs_window_real_minutes(self) -> int:
        real_seconds = self._exact(self.twcs_window_minutes * 60, "the TWCS window")
        if real_seconds % 60:  # TWCS's smallest unit is the minute
            raise ValueError(f"the TWCS window ({self.twcs_window_minutes} simulated minutes)"
                             f" / scale {self.factor} is not a whole number of minutes")
        return real_seconds // 60

    def compaction(self, strategy: str) -> dict[str, str]:
        """The `compaction` map of `strategy`, its clock-based options scaled."""
        common = {"tombstone_compaction_interval": str(
            max(1, round(PRODUCTION_TOMBSTONE_COMPACTION_INTERVAL / self.factor)))}
        expired_check = str(max(1, round(PRODUCTION_EXPIRED_CHECK_SECONDS / self.factor)))
        if strategy == "stcs":
            return {"class": "SizeTieredCompactionStrategy", **common}
        if strategy == "ucs":
            return {"class": "UnifiedCompactionStrategy",
                    "expired_sstable_check_frequency_seconds": expired_check, **common}
        if strategy == "lcs":
            return {"class": "LeveledCompactionStrategy", **common}
        if strategy == "twcs":
            return {
                "class": "TimeWindowCompactionStrategy",
                "compaction_window_unit": "MINUTES",
                "compaction_window_size": str(self.twcs_window_real_minutes),
                "expired_sstable_check_frequency_seconds": expired_check,
                **common,
            }
        raise ValueError(f"unknown strategy {strategy!r}")


def compaction_literal(options: dict[str, str]) -> str:
    return "{" + ", ".join(f"'{key}': '{value}'" for key, value in options.items()) + "}"


async def set_strategy(
    session: CassandraSession, keyspace: str, strategy: str, scale: TimeScale
) -> str:
    """ALTER the message tables to `strategy` and the scaled flush period; the map set."""
    literal = compaction_literal(scale.compaction(strategy))
    for table in STRATEGY_TABLES:
        await session.change_schema(
            f"ALTER TABLE {keyspace}.{table} WITH compaction = {literal}"
            f" AND memtable_flush_period_in_ms = {scale.flush_period_ms}"
        )
    return literal


# --- a traced cache fill ---------------------------------------------------------------

_READ = re.compile(r"Read (\d+) live rows and (\d+) tombstone cells")
_MERGED = re.compile(r"Merged data from memtables and (\d+) sstables")


class _TracingDriverSession:
    """The driver session, with every statement sent traced and its future kept."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.sent: list[tuple[str, Any]] = []  # (query text, response future)

    def execute_async(self, statement: Any, parameters: Any = None, **options: Any) -> Any:
        future = self._session.execute_async(statement, parameters, trace=True, **options)
        query = getattr(getattr(statement, "prepared_statement", statement), "query_string", "")
        self.sent.append((str(query), future))
        return future

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


@dataclass
class FillTrace:
    """What one traced cache fill read, summed over every partition read."""

    statements: int = 0
    partitions: int = 0
    live_rows: int = 0
    message_tombstones: int = 0  # in queue_messages
    index_tombstones: int = 0  # in the bucket index
    sstables_merged: list[int] = field(default_factory=list)  # per partition read
    untraced: int = 0  # statements whose trace could not be fetched

    @property
    def tombstones(self) -> int:
        return self.message_tombstones + self.index_tombstones


class TracedStore:
    """A second CassandraMessageStore on the same cluster whose statements are all traced:
    its `scan` is the cache fill's read (it also drops closed empty buckets, as a fill does)."""

    def __init__(self, driver: _TracingDriverSession, store: CassandraMessageStore) -> None:
        self._driver = driver
        self._store = store

    @classmethod
    async def open(cls, session: CassandraSession, keyspace: str, scale: TimeScale
                   ) -> TracedStore:
        cluster = session.driver_cluster
        read_consistency, write_consistency = (
            ConsistencyLevel.name_to_value[name] for name in session.consistency)
        driver_session = await asyncio.to_thread(cluster.connect)
        driver_session.default_fetch_size = None  # as connect() sets it: no driver paging
        driver = _TracingDriverSession(driver_session)
        traced = CassandraSession(
            cluster, driver, keyspace,  # type: ignore[arg-type]
            read_consistency, write_consistency,
            session.request_timeout, release_version=session.release_version,
        )
        store = CassandraMessageStore(
            traced, bucket_seconds=scale.bucket_seconds,
            closed_bucket_slack_seconds=scale.closed_slack_seconds,
        )
        return cls(driver, store)

    async def fill(self, queue: Queue, page_size: int) -> FillTrace:
        self._driver.sent.clear()
        async for _ in self._store.scan(queue, page_size):
            pass
        await asyncio.sleep(1.0)  # trace events are written asynchronously
        found = FillTrace()
        for query, future in list(self._driver.sent):
            if not query.lstrip().upper().startswith("SELECT"):
                continue
            found.statements += 1
            try:
                trace = await asyncio.to_thread(future.get_query_trace, 10.0)
                events = trace.events or []
            except Exception:  # trace not written in time: reported, not guessed
                found.untraced += 1
                continue
            index = store_schema.MESSAGE_BUCKETS_TABLE in query
            for event in events:
                description = str(event.description)
                read = _READ.search(description)
                if read:
                    found.partitions += 1
                    found.live_rows += int(read.group(1))
                    if index:
                        found.index_tombstones += int(read.group(2))
                    else:
                        found.message_tombstones += int(read.group(2))
                merged = _MERGED.search(description)
                if merged and not index:
                    found.sstables_merged.append(int(merged.group(1)))
        return found


# --- compaction, disk and CPU -------------------------------------------------------------

async def compactions_so_far(session: CassandraSession, keyspace: str, table: str
                             ) -> tuple[int, int]:
    """(compactions, bytes read by them) of the table, from system.compaction_history."""
    history = await session.read(
        "SELECT keyspace_name, columnfamily_name, bytes_in FROM system.compaction_history")
    mine = [row for row in history
            if row.keyspace_name == keyspace and row.columnfamily_name == table]
    return len(mine), sum(int(row.bytes_in or 0) for row in mine)


def table_disk(data_dir: Path, keyspace: str, table: str) -> tuple[int, int]:
    """(bytes of every file, live sstables) in the table's data directory (snapshots and
    backups left out; the memtable is not on disk)."""
    total = sstables = 0
    for directory in data_dir.glob(f"**/{keyspace}/{table}-*"):
        for path in directory.iterdir():
            if not path.is_file():
                continue
            try:
                total += path.stat().st_size
            except OSError:  # removed by a compaction while we looked
                continue
            if path.name.endswith("-Data.db"):
                sstables += 1
    return total, sstables


def jvm_cpu_seconds(pid: int | None) -> float | None:
    """User plus system CPU time of the process, from /proc."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
