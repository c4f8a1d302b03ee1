"""Housekeeper: the cadence of an API process's periodic chores.

Owns when each chore runs: flushing deletes the store missed while it was away, trimming
cached messages past their retention period, forgetting expired delivery records, taking
over message move tasks whose process stopped, promoting timer messages due soon (what each
does is `cqs.service.chores` and `cqs.service.timer_promotion`), and relaying cross-process
arrival announcements to local long polls. A failing chore is logged and retried; it never
stops the others. Imports the service only; never an adapter.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from cqs.domain.errors import StorageError
from cqs.service.service import QueueService

log = logging.getLogger(__name__)


class Housekeeper:
    def __init__(
        self,
        service: QueueService,
        *,
        deferred_delete_seconds: float = 1.0,
        trim_seconds: float = 30.0,
        prune_seconds: float = 10.0,
        move_task_seconds: float = 2.0,
        timer_promotion_seconds: float = 1.0,
    ) -> None:
        self._service = service
        chores = service.chores
        self._chores: list[tuple[str, float, Callable[[], Awaitable[object]]]] = [
            ("flush deferred store deletes", deferred_delete_seconds,
             chores.flush_deferred_store_deletes),
            ("trim expired messages", trim_seconds, chores.trim_expired_messages),
            ("prune delivery records", prune_seconds, self._prune),
            ("resume message move tasks", move_task_seconds,
             chores.resume_message_move_tasks),
            ("promote timer messages", timer_promotion_seconds, service.promote_timer_messages),
        ]

    async def _prune(self) -> int:
        return self._service.chores.prune_deliveries()

    async def run(self) -> None:
        """Run every chore at its interval, forever; a failing chore is logged and retried."""
        await asyncio.gather(
            self._service.relay_arrivals(),
            *(self._every(name, seconds, chore) for name, seconds, chore in self._chores),
        )

    @staticmethod
    async def _every(name: str, seconds: float, chore: Callable[[], Awaitable[object]]) -> None:
        while True:
            started = time.monotonic()
            try:
                await chore()
            except asyncio.CancelledError:
                raise
            except StorageError as error:  # a backend away: expected, retried next round
                log.warning("housekeeping chore %r skipped: %s", name, error)
            except Exception:  # a chore must never stop the others
                log.exception("housekeeping chore %r failed", name)
            await asyncio.sleep(max(0.0, seconds - (time.monotonic() - started)))
