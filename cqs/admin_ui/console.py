"""AdminConsole: what the console's pages work with, and where the console is mounted.

Owns `PREFIX` (the one place the console's URL prefix is written), `AdminConsole` (the
service and the statistics through the observability hub, the read-only `QueueInspector`
port, the users and session rules, the login throttle, the per-process history, the shared
list of queue names) and the app key the pages find it under. Imports aiohttp (for the
key), the console's auth modules, the service, the inspector port, the model, the errors
and the observability hub; never the pages, the app, a storage port or an adapter.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from cqs.admin_ui.auth import SessionRules, derived_key
from cqs.admin_ui.history import QueueHistory, Sample
from cqs.admin_ui.login_limits import LoginThrottle
from cqs.admin_ui.users import ConsoleUsers
from cqs.domain import group_names
from cqs.domain.errors import StorageError, StorageUnavailable
from cqs.domain.model import CacheState, QueueListing
from cqs.observability.hub import ObservabilityHub
from cqs.observability.stats import QueueStatistics
from cqs.ports.inspection import QueueInspector
from cqs.service import QueueService

PREFIX = "/admin"


class AdminConsole:
    """Everything the console's pages use. The storage-backed parts (the service and the
    statistics, through the hub; the inspector and the session keys, derived from the
    deployment's shared secret) arrive with `attach` once storage is connected."""

    def __init__(
        self,
        hub: ObservabilityHub,
        users: ConsoleUsers,
        *,
        session_seconds: float,
        login_failures_per_minute: int,
        history: QueueHistory | None = None,
        refresh_seconds: float = 2.0,
    ) -> None:
        self.hub = hub
        self.users = users
        self.sessions = SessionRules(
            users, lambda: self._fingerprint_key, lifetime_seconds=session_seconds
        )
        self.login_throttle = LoginThrottle(login_failures_per_minute)
        self.history = history or QueueHistory()
        self.refresh_seconds = refresh_seconds
        self._inspector: QueueInspector | None = None
        self._session_key: bytes | None = None
        self._fingerprint_key: bytes | None = None
        self._names: tuple[float, list[str]] | None = None
        self._groups: tuple[float, dict[str, list[str]]] | None = None

    def attach(self, inspector: QueueInspector, shared_secret: bytes) -> None:
        self._inspector = inspector
        self.use_shared_secret(shared_secret)

    def use_shared_secret(self, shared_secret: bytes) -> None:
        """Key the session cookie and the users' fingerprints (login works from here on)."""
        self._session_key = derived_key(shared_secret, b"session cookie")
        self._fingerprint_key = derived_key(shared_secret, b"user fingerprint")

    def detach(self) -> None:
        self._inspector = None

    def session_key(self) -> bytes | None:
        return self._session_key

    @property
    def service(self) -> QueueService:
        if self.hub.attached is None:
            raise StorageUnavailable("The server is starting or stopping.")
        return self.hub.attached.service

    @property
    def statistics(self) -> QueueStatistics:
        if self.hub.attached is None:
            raise StorageUnavailable("The server is starting or stopping.")
        return self.hub.attached.statistics

    @property
    def inspector(self) -> QueueInspector:
        if self._inspector is None:
            raise StorageUnavailable("The server is starting or stopping.")
        return self._inspector

    async def queue_names(self, max_age_seconds: float = 2.0) -> list[str]:
        """Every queue name through ListQueues (1000 a call, following NextToken); shared
        for `max_age_seconds` by every page and refresh of this process."""
        loop = asyncio.get_running_loop()
        if self._names is not None and loop.time() - self._names[0] < max_age_seconds:
            return self._names[1]
        names: list[str] = []
        token: str | None = None
        while True:
            page, token = await self.service.list_queues(
                self.service.home, QueueListing(max_results=1000, next_token=token)
            )
            names.extend(page)
            if token is None:
                break
        self._names = (loop.time(), names)
        return names

    async def consumer_groups(self, max_age_seconds: float = 2.0) -> dict[str, list[str]]:
        """Queue name -> the queue names of its consumer groups (`<queue>/<group>`), from
        one catalog read shared like `queue_names`; empty while the catalog does not answer
        (the group counts are left out rather than the page)."""
        loop = asyncio.get_running_loop()
        if self._groups is not None and loop.time() - self._groups[0] < max_age_seconds:
            return self._groups[1]
        try:
            names = await self.inspector.all_queue_names()
        except StorageError:
            return {}
        found: dict[str, list[str]] = {}
        for name in names:
            parts = group_names.split_group_queue_name(name)
            if parts is not None:
                found.setdefault(parts[0], []).append(name)
        self._groups = (loop.time(), found)
        return found

    def forget_names(self) -> None:
        """A queue was created or deleted here: list again on next use."""
        self._names = None
        self._groups = None
        if self._inspector is not None:
            self._inspector.forget_links()

    async def sample(self) -> None:
        """One history sample of every queue (figures and the sent/received totals)."""
        if self.hub.attached is None:
            return
        # A read of its own: the metrics' snapshot and its cached queue names are left to
        # the scrapes (sampling through them would hide a new queue from /metrics for a while).
        groups = [g for found in (await self.consumer_groups()).values() for g in found]
        snapshot = await self.hub.attached.statistics.read([*await self.queue_names(), *groups])
        totals = await asyncio.to_thread(self.hub.exposition.queue_totals)
        samples = {}
        for name, figures in snapshot.queues.items():
            if figures.state is CacheState.UNAVAILABLE:
                continue
            counted = totals.get(name, {})
            samples[name] = Sample(
                figures.visible, figures.in_flight, figures.delayed,
                int(counted.get("sent", 0)), int(counted.get("received", 0)),
            )
        self.history.record(snapshot.taken_ms, samples)


CONSOLE_KEY = web.AppKey("cqs_admin_console", AdminConsole)


def console_of(request: web.Request) -> AdminConsole:
    """The console a request of the admin sub-app is served by."""
    return request.app[CONSOLE_KEY]
