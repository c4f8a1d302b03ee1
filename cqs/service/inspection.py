"""StorageQueueInspector: the `cqs.ports.QueueInspector` port over the storage ports.

Owns what operators look at that the SQS API does not show, read only: which queue
dead-letters into which, and the cluster: Redis servers
with the queues they own, their memory and revisibility lag, Cassandra's status, and the
API processes of this deployment this process can see. Everything that changes a queue
goes through `QueueService`, never through here; so does peeking at messages
(`QueueService.peek_messages`, the mechanism of CqsExtensions.PeekMessages).

Imports model, errors, ports, the pure `arns` and `dead_letter_policy` helpers, the service
clock and the standard library; never an adapter, aiohttp, redis or cassandra (the composition root hands
in the ports).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence

from cqs.domain import arns, dead_letter_policy
from cqs.domain.errors import StorageError
from cqs.domain.model import QueueNamespace
from cqs.ports import CacheInspection, MessageStore, QueueCatalog
from cqs.ports.inspection import (
    CassandraView,
    ClusterView,
    ProcessView,
    RedisServerView,
)
from cqs.service.clock import epoch_ms

# The dead-letter links of every queue (one catalog read per queue) are read again at most
# every LINKS_TTL_SECONDS, or every second per LINKS_QUEUES_PER_SECOND queues if that is
# longer, however many consoles refresh.
LINKS_TTL_SECONDS = 15.0
LINKS_QUEUES_PER_SECOND = 100
_CATALOG_READS_AT_ONCE = 32
_CLUSTER_CHECK_SECONDS = 3.0


class StorageQueueInspector:
    """The `QueueInspector` port over the catalog, the store and the cache's read-only views.

    `worker_pids` names the API processes serving this port (the workers of
    `cqs serve --workers N`, or this process alone); processes on other hosts are not seen.
    Queues are named within `namespace`, the deployment's own account and region.
    """

    def __init__(
        self,
        catalog: QueueCatalog,
        store: MessageStore,
        cache: CacheInspection,
        namespace: QueueNamespace,
        *,
        worker_pids: Callable[[], Sequence[int]] = lambda: [os.getpid()],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._catalog = catalog
        self._store = store
        self._cache = cache
        self._namespace = namespace
        self._worker_pids = worker_pids
        self._clock = clock
        self._links: dict[str, str] = {}
        self._links_at: float | None = None
        self._links_ttl = LINKS_TTL_SECONDS
        self._links_lock = asyncio.Lock()

    # --- dead-letter links -------------------------------------------------------------------

    async def dead_letter_links(self) -> dict[str, str]:
        """Source queue name -> the name of its dead-letter queue, for every queue with a
        RedrivePolicy (kept for a while: see LINKS_TTL_SECONDS)."""
        if self._links_at is not None and self._clock() - self._links_at < self._links_ttl:
            return self._links
        async with self._links_lock:
            if self._links_at is None or self._clock() - self._links_at >= self._links_ttl:
                self._links = await self._read_links()
                self._links_at = self._clock()
        return self._links

    async def _read_links(self) -> dict[str, str]:
        gate = asyncio.Semaphore(_CATALOG_READS_AT_ONCE)

        async def target(name: str) -> str | None:
            async with gate:
                queue = await self._catalog.get(self._namespace.queue(name))
            policy = dead_letter_policy.parse_redrive_policy(
                None if queue is None else queue.attributes.get("RedrivePolicy")
            )
            return None if policy is None else arns.queue_name_from_arn(
                policy.dead_letter_target_arn
            )

        names = await self._catalog.list_names(*self._namespace)
        self._links_ttl = max(LINKS_TTL_SECONDS, len(names) / LINKS_QUEUES_PER_SECOND)
        targets = await asyncio.gather(*(target(name) for name in names))
        return {
            name: dlq for name, dlq in zip(names, targets, strict=True) if dlq is not None
        }

    def forget_links(self) -> None:
        """A queue's RedrivePolicy changed here: read the links again on next use."""
        self._links_at = None

    # --- cluster -----------------------------------------------------------------------------

    def server_label_for(self, queue_name: str) -> str:
        return self._cache.server_label_for(self._namespace.queue(queue_name))

    async def cluster(self) -> ClusterView:
        now_ms = epoch_ms(self._clock)
        names_read, servers, cassandra = await asyncio.gather(
            self._names(), self._cache.describe_servers(now_ms), self._cassandra()
        )
        owned: dict[str, list[str]] = {server: [] for server in servers}
        for name in names_read or []:
            owned.setdefault(self.server_label_for(name), []).append(name)
        redis_views = []
        for server, figures in sorted(servers.items()):
            earliest = int(figures.get("earliest_due_ms", now_ms))
            redis_views.append(RedisServerView(
                name=server,
                reachable=bool(figures),
                figures=figures,
                queues=owned.get(server, []),
                revisibility_lag_ms=max(0, now_ms - earliest),
            ))
        return ClusterView(
            taken_ms=now_ms,
            redis=redis_views,
            cassandra=cassandra,
            processes=[_process(pid) for pid in self._worker_pids()],
            queue_count=None if names_read is None else len(names_read),
        )

    async def _names(self) -> list[str] | None:
        try:
            return await self._catalog.list_names(*self._namespace)
        except StorageError:
            return None

    async def _cassandra(self) -> CassandraView:
        try:
            figures = await asyncio.wait_for(self._store.describe(), _CLUSTER_CHECK_SECONDS)
        except (StorageError, TimeoutError) as error:
            return CassandraView(False, error=str(error) or "no answer in time")
        return CassandraView(True, figures)

    # --- consumer groups (#19) ---------------------------------------------------------------
    async def all_queue_names(self) -> list[str]:
        return await self._catalog.list_names(*self._namespace)


def _process(pid: int) -> ProcessView:
    """Figures of a local process from /proc (Linux); only the pid elsewhere."""
    this = pid == os.getpid()
    try:
        with open(f"/proc/{pid}/stat") as handle:
            # Fields after the command name (which may hold spaces) start at field 3.
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as handle:
            boot_uptime = float(handle.read().split()[0])
    except (OSError, IndexError, ValueError):
        return ProcessView(pid, this)
    ticks = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    cpu_seconds = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    started = int(fields[19]) / ticks  # seconds after boot
    return ProcessView(
        pid=pid,
        this_process=this,
        rss_bytes=int(fields[21]) * page,
        cpu_seconds=round(cpu_seconds, 2),
        uptime_seconds=round(boot_uptime - started, 1),
    )
