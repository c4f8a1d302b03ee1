"""`cqs migrate`: move a keyspace written by an earlier cqs version to today's schema.

Owns the course of the migration over the durable store's side of it (the `LegacyKeyspace`
port, which `cqs.main` opens on the configured keyspace): nothing to do; or copy every
queue, deletion record, bucket index entry and live message into today's tables, with
progress reports, then record the migration (the servers' go-ahead); or report the
migration an earlier run finished, copying nothing (the servers may have changed today's
tables since). A run interrupted before the record copies everything again: the copies
keep each row's write time, so rewriting a row changes nothing. With `drop_legacy`, the
legacy tables are dropped once the migration is recorded and none of their rows is newer
than the copy that finished it (a process of the earlier version still running would have
written some, and they would be lost). Reports through `report`, a line each. Imports the
ports and the model; never an adapter, aiohttp or the service.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from cqs.domain.model import QueueNamespace
from cqs.ports import LegacyKeyspace, MigrationCounts, MigrationRecord

PROGRESS_SECONDS = 5.0


class MigrationRefused(RuntimeError):
    """The migration cannot go on; the message is one line for the operator."""


@dataclass(frozen=True, slots=True)
class MigrationOutcome:
    """What a run found and did."""

    record: MigrationRecord | None  # the keyspace's migration; None: nothing to migrate
    copied: MigrationCounts | None  # by this run; None: this run copied nothing
    seconds: float  # the copy's, 0 when nothing was copied
    dropped: tuple[str, ...] = ()


async def migrate(
    keyspace: LegacyKeyspace,
    namespace: QueueNamespace,
    *,
    drop_legacy: bool = False,
    report: Callable[[str], None] = print,
    progress_seconds: float = PROGRESS_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> MigrationOutcome:
    """Migrate `keyspace`, putting its queues into `namespace` (the account and region the
    servers of the earlier version ran with). Raises MigrationRefused when the legacy tables
    must not be dropped."""
    name = keyspace.name
    legacy = await keyspace.legacy_tables()
    record = await keyspace.migration_record()
    if not legacy:
        if record is None:
            report(f"nothing to migrate: keyspace {name} holds no table of an earlier cqs version")
        else:
            report(
                f"nothing to migrate: keyspace {name} was migrated {_when(record.finished_ms)}"
                " and its legacy tables are dropped"
            )
        return MigrationOutcome(record, None, 0.0)
    copied: MigrationCounts | None = None
    seconds = 0.0
    if record is None:
        report(
            f"migrating keyspace {name} (legacy tables: {', '.join(legacy)}) into account"
            f" {namespace.account_id}, region {namespace.region}"
        )
        started_ms = wall_clock_ms()
        started = clock()
        copied = await keyspace.copy(
            namespace, _ProgressReport(report, clock, progress_seconds, started)
        )
        seconds = clock() - started
        record = MigrationRecord(
            namespace.account_id, namespace.region, started_ms, wall_clock_ms(), copied
        )
        await keyspace.record_migration(record)
        report(
            f"migrated keyspace {name} in {seconds:.1f} s: copied {_counts(copied)}"
            " (messages of deleted queues are not copied: they were unreachable already)"
        )
    else:
        report(
            f"keyspace {name} was migrated {_when(record.finished_ms)} into account"
            f" {record.account_id}, region {record.region} ({_counts(record.copied)});"
            " nothing copied now"
        )
        if (record.account_id, record.region) != tuple(namespace):
            report(
                f"note: this run names account {namespace.account_id}, region"
                f" {namespace.region}; the queues are in account {record.account_id}, region"
                f" {record.region}"
            )
    if not drop_legacy:
        report(
            f"the legacy tables ({', '.join(legacy)}) are kept; once this version serves"
            " well, drop them with `cqs migrate --drop-legacy`"
        )
        return MigrationOutcome(record, copied, seconds)
    newer = await keyspace.written_since(record.started_ms)
    if newer.total:
        raise MigrationRefused(
            f"the legacy tables of keyspace {name} are kept: they hold rows written after the"
            f" migration began ({_when(record.started_ms)}): {_counts(newer)}. A process of"
            " the earlier cqs version wrote them, and they are not in this version's tables;"
            " stop every process of the earlier version (see docs/operations.md, Upgrading)"
        )
    dropped = tuple(await keyspace.drop_legacy_tables())
    report(f"dropped the legacy tables of keyspace {name}: {', '.join(dropped)}")
    return MigrationOutcome(record, copied, seconds, dropped)


class _ProgressReport:
    """Told the running counts after every page; reports them every `every` seconds."""

    def __init__(
        self, report: Callable[[str], None], clock: Callable[[], float], every: float,
        started: float,
    ) -> None:
        self._report = report
        self._clock = clock
        self._every = every
        self._started = started
        self._last = started

    def __call__(self, counts: MigrationCounts) -> None:
        now = self._clock()
        if now - self._last < self._every:
            return
        self._last = now
        elapsed = max(now - self._started, 1e-9)
        self._report(
            f"copied so far: {_counts(counts)} in {elapsed:.0f} s"
            f" ({counts.messages / elapsed:,.0f} messages/s)"
        )


def _counts(counts: MigrationCounts) -> str:
    return (
        f"{_plural(counts.queues, 'queue')}, {_plural(counts.deletion_records, 'deletion record')},"
        f" {_plural(counts.buckets, 'bucket index entry', 'bucket index entries')},"
        f" {_plural(counts.messages, 'message')}"
    )


def _plural(number: int, one: str, many: str | None = None) -> str:
    return f"{number:,} {one if number == 1 else many or one + 's'}"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
