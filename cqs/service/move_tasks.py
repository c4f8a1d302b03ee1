"""MoveTasks: StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask, and the
tasks themselves.

Owns the move tasks this process runs (one background task each), taking over the active
tasks whose process stopped reporting, and a task's loop: receive a batch from the
dead-letter queue through the cache, send each message on as a new message, delete it from
the dead-letter queue, report progress, and finish (completed, failed or cancelled). The
catalog keeps every task's state, so any process can list or cancel it. Imports model,
errors, ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace

from cqs.domain import checksums, dead_letter_policy
from cqs.domain.errors import (
    InvalidParameterValue,
    QueueDoesNotExist,
    ResourceNotFound,
    StorageUnavailable,
)
from cqs.domain.model import Message, MessageMoveTask, MoveTaskStatus, Queue
from cqs.ports import QueueCatalog
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms
from cqs.service.dead_letters import DeadLetters
from cqs.service.in_flight import InFlightMessages
from cqs.service.messages import new_message_id
from cqs.service.queue_directory import QueueDirectory
from cqs.service.receiving import Receiver
from cqs.service.sending import Sender

log = logging.getLogger(__name__)

MAX_MOVE_TASK_RATE = 500  # MaxNumberOfMessagesPerSecond, per the AWS API reference
# How long a move task holds the batch it is moving: short, so that a batch held by a
# process that died is soon visible again to the process that takes the task over.
MOVE_TASK_VISIBILITY_TIMEOUT = 5


class MoveTasks:
    def __init__(
        self,
        catalog: QueueCatalog,
        directory: QueueDirectory,
        cache_fill: CacheFiller,
        receiver: Receiver,
        sender: Sender,
        in_flight: InFlightMessages,
        dead_letters: DeadLetters,
        *,
        owner: str,
        lease_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self._catalog = catalog
        self._directory = directory
        self._cache_fill = cache_fill
        self._receiver = receiver
        self._sender = sender
        self._in_flight = in_flight
        self._dead_letters = dead_letters
        self._owner = owner  # this process, as the runner of a task
        self._lease_ms = int(lease_seconds * 1000)
        self._clock = clock
        self._runners: dict[str, asyncio.Task[None]] = {}  # task id -> its runner here

    async def _queue_named_by(self, arn: str, parameter: str) -> Queue:
        try:
            return await self._directory.for_arn(arn)
        except QueueDoesNotExist:
            raise ResourceNotFound(
                f"The resource that you specified for the {parameter} parameter doesn't exist."
            ) from None

    async def start_message_move_task(
        self, source_arn: str, destination_arn: str | None, max_per_second: int | None
    ) -> str:
        """Start moving the messages of a dead-letter queue; returns the task handle."""
        source = await self._queue_named_by(source_arn, "SourceArn")
        if max_per_second is not None and not 1 <= max_per_second <= MAX_MOVE_TASK_RATE:
            raise InvalidParameterValue(
                f"Value {max_per_second} for parameter MaxNumberOfMessagesPerSecond is"
                f" invalid. Reason: must be between 1 and {MAX_MOVE_TASK_RATE}."
            )
        if destination_arn:
            await self._queue_named_by(destination_arn, "DestinationArn")
        if not await self._dead_letters.source_queue_names(source.identity):
            raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
        if any(task.status.active for task in await self._catalog.move_tasks(source_arn)):
            raise InvalidParameterValue(
                "There is already a task running. Only one active task is allowed for a source"
                " queue arn at a given time."
            )
        now_ms = epoch_ms(self._clock)
        task = MessageMoveTask(
            task_id=uuid.uuid4().hex,
            source_arn=source_arn,
            destination_arn=destination_arn or None,
            max_per_second=max_per_second,
            status=MoveTaskStatus.RUNNING,
            started_ms=now_ms,
            to_move=(await self._cache_fill.counts(source)).visible,
            owner=self._owner,
            heartbeat_ms=now_ms,
        )
        await self._catalog.save_move_task(task)
        self._run(task)
        return dead_letter_policy.task_handle(task)

    async def list_message_move_tasks(
        self, source_arn: str, max_results: int | None
    ) -> list[MessageMoveTask]:
        """The most recent tasks of the source queue, newest first (1 unless asked for up
        to 10)."""
        await self._queue_named_by(source_arn, "SourceArn")
        limit = 1 if max_results is None else max_results
        if not 1 <= limit <= 10:
            raise InvalidParameterValue(
                f"Value {limit} for parameter MaxResults is invalid. Reason: You must enter a"
                " number that's between 1 and 10."
            )
        return (await self._catalog.move_tasks(source_arn))[:limit]

    async def cancel_message_move_task(self, handle: str) -> int:
        """Ask a RUNNING task to stop; returns how many messages it has moved so far."""
        source_arn, task_id = dead_letter_policy.read_task_handle(handle)
        await self._queue_named_by(source_arn, "SourceArn")
        task = await self._catalog.move_task(source_arn, task_id)
        if task is None:
            raise ResourceNotFound("Task does not exist.")
        if task.status is not MoveTaskStatus.RUNNING:
            raise InvalidParameterValue("Only active tasks can be cancelled.")
        await self._catalog.request_move_cancel(source_arn, task_id)
        return task.moved

    def _run(self, task: MessageMoveTask) -> None:
        if task.task_id in self._runners:
            return
        runner = asyncio.get_running_loop().create_task(
            self._move_messages(task), name=f"cqs-move-task {task.task_id}"
        )
        self._runners[task.task_id] = runner
        runner.add_done_callback(lambda _: self._runners.pop(task.task_id, None))

    def running(self) -> list[asyncio.Task[None]]:
        """The tasks this process runs (to stop on shutdown: another process takes over)."""
        return list(self._runners.values())

    async def resume_stopped_tasks(self) -> int:
        """Take over the active move tasks whose process stopped reporting (it died or was
        restarted); returns how many this process took over."""
        taken = 0
        for task in await self._catalog.active_move_tasks():
            if task.task_id in self._runners:
                continue
            if epoch_ms(self._clock) - task.heartbeat_ms < self._lease_ms:
                continue
            claimed = replace(task, owner=self._owner, heartbeat_ms=epoch_ms(self._clock))
            await self._catalog.save_move_task(claimed)
            # No lightweight transactions: let a racing claimer's write land, then re-read.
            await asyncio.sleep(0.2)
            current = await self._catalog.move_task(task.source_arn, task.task_id)
            if current is not None and current.owner == self._owner:
                log.info("resuming message move task %s of %s", task.task_id, task.source_arn)
                self._run(current)
                taken += 1
        return taken

    async def _finish(
        self, task: MessageMoveTask, status: MoveTaskStatus, reason: str | None = None
    ) -> None:
        await self._catalog.save_move_task(replace(
            task, status=status, failure_reason=reason, heartbeat_ms=epoch_ms(self._clock)
        ))

    async def _move_messages(self, task: MessageMoveTask) -> None:
        """Run one move task until it completes, fails, is cancelled or is taken over."""
        while True:
            try:
                current = await self._catalog.move_task(task.source_arn, task.task_id)
                if current is None or current.owner != self._owner:
                    return
                task = current
                if task.status is MoveTaskStatus.CANCELLING:
                    await self._finish(task, MoveTaskStatus.CANCELLED)
                    return
                if task.status is not MoveTaskStatus.RUNNING:
                    return
                if task.moved >= task.to_move:
                    await self._finish(task, MoveTaskStatus.COMPLETED)
                    return
                started = self._clock()
                outcome = await self._move_batch(task)
                if isinstance(outcome, str):
                    await self._finish(task, MoveTaskStatus.FAILED, outcome)
                    return
                if outcome == 0:
                    if await self._source_in_flight(task):
                        task = replace(task, heartbeat_ms=epoch_ms(self._clock))
                        await self._catalog.record_move_progress(task)
                        await asyncio.sleep(1.0)  # held by a consumer or a dead runner
                        continue
                    await self._finish(task, MoveTaskStatus.COMPLETED)
                    return
                task = replace(task, moved=task.moved + outcome, heartbeat_ms=epoch_ms(self._clock))
                await self._catalog.record_move_progress(task)
                if task.max_per_second:
                    pause = outcome / task.max_per_second - (self._clock() - started)
                    await asyncio.sleep(max(0.0, pause))
            except asyncio.CancelledError:
                raise
            except StorageUnavailable as exc:
                log.warning("message move task %s waits for storage: %s", task.task_id, exc)
                await asyncio.sleep(1.0)
            except Exception:
                log.exception("message move task %s failed", task.task_id)
                await self._finish(task, MoveTaskStatus.FAILED, "InternalError")
                return

    async def _move_batch(self, task: MessageMoveTask) -> int | str:
        """Move up to ten messages; how many moved, or the failure reason that stops the task."""
        try:
            source = await self._directory.for_arn(task.source_arn)
        except QueueDoesNotExist:
            return "AWS.SimpleQueueService.NonExistentQueue"
        count = min(10, task.to_move - task.moved, task.max_per_second or 10)
        deliveries = await self._receiver.receive_once(source, count, MOVE_TASK_VISIBILITY_TIMEOUT)
        moved = 0
        for index, delivery in enumerate(deliveries):
            message = delivery.message
            origin = message.system_attributes.get(dead_letter_policy.DEAD_LETTER_SOURCE_ATTRIBUTE)
            target_arn = task.destination_arn or (origin.string_value if origin else None)
            reason = None
            if not target_arn:
                reason = "CouldNotDetermineMessageSource"
            else:
                try:
                    destination = await self._directory.for_arn(target_arn)
                except QueueDoesNotExist:
                    reason = "AWS.SimpleQueueService.NonExistentQueue"
            if reason is not None:
                await self._in_flight.release(source, deliveries[index:])
                return reason
            await self._sender.store_and_cache(destination, [self._redriven(message)])
            await self._in_flight.delete_delivered(source, delivery)
            moved += 1
        return moved

    async def _source_in_flight(self, task: MessageMoveTask) -> bool:
        """Whether messages the task still has to move are in flight in its source queue."""
        try:
            source = await self._directory.for_arn(task.source_arn)
        except QueueDoesNotExist:
            return False
        return (await self._cache_fill.counts(source)).in_flight > 0

    def _redriven(self, message: Message) -> Message:
        """A moved-back message is a new message (new MessageId, SentTimestamp and
        retention period, as AWS documents for redrive), with the same body and attributes."""
        now_ms = epoch_ms(self._clock)
        system = {
            k: v for k, v in message.system_attributes.items()
            if k not in dead_letter_policy.DEAD_LETTER_ATTRIBUTES
        }
        return replace(
            message,
            message_id=new_message_id(),
            sent_timestamp_ms=now_ms,
            visible_at_ms=now_ms,
            system_attributes=system,
            md5_of_system_attributes=checksums.md5_of_system_attributes(system),
        )
