"""QueueService: one async method per SQS action, each handed to the mechanism that owns it.

Takes queues as `QueueIdentity` (account id, region, name) and returns model values, never
URLs or wire formats. The constructor
composes the mechanisms (one module each in this package); the methods only pick the one
to call. Imports model, ports, receipts and this package; never an adapter, aiohttp, redis
or cassandra.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cqs.domain.extension_model import (
    ConsumedMessage,
    ConsumedRange,
    ConsumerGroup,
    PeekRequest,
    ScheduledSummary,
)
from cqs.domain.model import (
    BatchResult,
    MessageMoveTask,
    QueueDescription,
    QueueIdentity,
    QueueListing,
    QueueNamespace,
    ReceivedMessage,
    ReceiveRequest,
    SendRequest,
    SendResult,
)
from cqs.domain.receipts import ReceiptSigner
from cqs.ports import (
    ConsumedMessageStore,
    MessageCache,
    MessageStore,
    NullTelemetry,
    PromotionLeases,
    QueueCatalog,
    ScheduledMessages,
    Telemetry,
)
from cqs.ports.inspection import MessagePage, PeekedMessage
from cqs.service.access import QueueAccess
from cqs.service.cache_fill import CacheFiller
from cqs.service.chores import Chores
from cqs.service.consumed import ConsumedMessages, NoConsumedStore
from cqs.service.consumer_groups import ConsumerGroups
from cqs.service.dead_letters import DeadLetters
from cqs.service.fifo import FifoSender
from cqs.service.in_flight import InFlightMessages
from cqs.service.long_poll import LongPollWaiters
from cqs.service.move_tasks import MoveTasks
from cqs.service.peeking import MessagePeeker
from cqs.service.queue_directory import QueueDirectory
from cqs.service.queue_storage import QueueStorage
from cqs.service.queues import Queues
from cqs.service.receiving import Receiver
from cqs.service.replays import ReplayProgress, Replays
from cqs.service.sending import Sender
from cqs.service.timer_promotion import TimerPromoter
from cqs.service.timers import TIMER_QUEUE_ATTRIBUTES, TimerMessages, wants_timer


@dataclass
class ServiceTuning:
    """Timing knobs of the service, taken from Settings by the composition root."""

    long_poll_recheck_seconds: float = 1.0
    cache_fill_lease_seconds: float = 30.0
    cache_fill_page_size: int = 500
    metadata_ttl_seconds: float = 1.0
    # A deleted queue's name cannot be used again for this long (AWS: 60); 0 = at once.
    queue_deleted_recently_seconds: float = 0.0
    # A message move task whose process has not reported for this long is taken over.
    move_task_lease_seconds: float = 6.0
    # Timer messages (#19): due further ahead than the horizon, they wait in the scheduled
    # store and are promoted into the ordinary delayed path `lead` seconds before due.
    timer_horizon_seconds: int = 900
    timer_promotion_lead_seconds: float = 60.0
    timer_promotion_lease_seconds: float = 15.0
    timer_promotion_page_size: int = 500


class QueueService:
    def __init__(
        self,
        catalog: QueueCatalog,
        store: MessageStore,
        cache: MessageCache,
        signer: ReceiptSigner,
        *,
        home: QueueNamespace,
        tuning: ServiceTuning | None = None,
        clock: Callable[[], float] = time.time,
        telemetry: Telemetry | None = None,
        consumed: ConsumedMessageStore | None = None,

        scheduled: ScheduledMessages | None = None,
        promotion_leases: PromotionLeases | None = None,
    ) -> None:
        """`consumed`: where consumed messages are kept for replay (None: nowhere)."""
        tuning = tuning or ServiceTuning()
        telemetry = telemetry or NullTelemetry()
        owner = uuid.uuid4().hex  # this process, as a fill lease holder and move task runner
        # The deployment's own account and region: what the console and statistics show,
        # and the SenderId of sends (requests do not name their caller yet).
        self.home = home
        self._cache = cache
        self._directory = QueueDirectory(
            catalog,
            ttl_seconds=tuning.metadata_ttl_seconds,
            deleted_recently_seconds=tuning.queue_deleted_recently_seconds, clock=clock,
        )
        # Who may do what to which queue: the API asks before calling an action method.
        self.access = QueueAccess(self._directory)
        self._waiters = LongPollWaiters(tuning.long_poll_recheck_seconds)
        self._cache_fill = CacheFiller(
            cache, cache, store, owner=owner, lease_seconds=tuning.cache_fill_lease_seconds,
            page_size=tuning.cache_fill_page_size, telemetry=telemetry, clock=clock,
            wake=self._waiters.wake,
        )
        fifo = FifoSender(cache, store, self._cache_fill, telemetry=telemetry, clock=clock)
        storage = QueueStorage(catalog, store, self._directory, self._cache_fill)
        dead_letters = DeadLetters(
            storage, fifo,
            telemetry=telemetry, clock=clock,
        )
        self._dead_letters = dead_letters
        self._queues = Queues(storage, dead_letters, clock=clock)
        self._sender = Sender(
            store, self._cache_fill, fifo, sender_id=home.account_id, telemetry=telemetry, clock=clock
        )
        self._receiver = Receiver(
            cache, self._directory, self._cache_fill, dead_letters, self._waiters, signer,
            telemetry=telemetry, clock=clock,
        )
        # Peek and replay (issue 19): the store delete of DeleteMessage may keep a copy.
        consumed = consumed or NoConsumedStore()
        self._consumed = ConsumedMessages(store, consumed, clock=clock)
        self._replays = Replays(store, consumed, self._sender, clock=clock)
        self._peeker = MessagePeeker(cache, store, self._cache_fill.deliveries, clock=clock)
        self._in_flight = InFlightMessages(
            cache, store, self._cache_fill, signer, telemetry=telemetry, clock=clock,
            delete_stored=self._consumed.delete_stored,
        )
        self._move_tasks = MoveTasks(
            catalog, self._directory, self._cache_fill, self._receiver, self._sender,
            self._in_flight, dead_letters, owner=owner,
            lease_seconds=tuning.move_task_lease_seconds, clock=clock,
        )
        # Consumer groups (#19): a send's messages are copied to the queue's groups.
        self._consumer_groups = ConsumerGroups(
            storage, dead_letters, self._queues,
            self._sender.store_and_cache, ttl_seconds=tuning.metadata_ttl_seconds, clock=clock,
        )
        self._sender.fan_out = self._consumer_groups.fan_out

        self._init_timers(
            catalog, store, scheduled, promotion_leases, tuning, owner, telemetry, clock
        )
        self._timers.fan_out = self._consumer_groups.fan_out  # timer messages reach groups
        # The periodic upkeep of these mechanisms, run by `cqs.service.housekeeping`.
        self.chores = Chores(
            cache, catalog, store, self._directory, self._cache_fill, self._move_tasks,
            telemetry=telemetry, clock=clock,
        )

    # --- hooks for the composition root, the worker and the admin console ------------------
    def queue_arn(self, identity: QueueIdentity) -> str:
        return self._directory.arn(identity)

    def notify_messages_available(self, queues: Sequence[QueueIdentity]) -> None:
        """Wake this process's long polls on these queues (called on send and by the worker)."""
        for queue in queues:
            self._waiters.wake(queue)

    async def relay_arrivals(self) -> None:
        """Wake local long polls for messages announced by any process; runs until cancelled."""
        async for queue in self._cache.arrivals():
            self.notify_messages_available([queue])

    async def close(self) -> None:
        await self._waiters.close()
        tasks = self._cache_fill.running() + self._move_tasks.running()
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    # --- queues ----------------------------------------------------------------------------
    async def create_queue(
        self, identity: QueueIdentity, attributes: Mapping[str, str], tags: Mapping[str, str]
    ) -> None:
        if await self._queues.create_queue(identity, attributes, tags):
            self._consumer_groups.queue_created(identity)

    async def get_queue_url(self, identity: QueueIdentity) -> None:
        await self._directory.get(identity)

    async def list_queues(
        self, namespace: QueueNamespace, listing: QueueListing
    ) -> tuple[list[str], str | None]:
        """Names of one account's queues in one region."""
        return await self._queues.list_queues(namespace, listing)

    async def delete_queue(self, identity: QueueIdentity) -> None:
        await self._queues.delete_queue(identity)
        await self._consumer_groups.queue_deleted(identity)  # consumer groups (#19)

    async def get_queue_attributes(self, identity: QueueIdentity, names: Sequence[str]) -> dict[str, str]:
        timer_names = [name for name in names if name in TIMER_QUEUE_ATTRIBUTES]
        if timer_names:  # timer messages (#19): extension attributes, only when named
            return await self._timer_queue_attributes(identity, names, timer_names)
        return await self._queues.get_queue_attributes(identity, names)

    async def set_queue_attributes(self, identity: QueueIdentity, attributes: Mapping[str, str]) -> None:
        await self._queues.set_queue_attributes(identity, attributes)

    async def purge_queue(self, identity: QueueIdentity) -> None:
        await self._queues.purge_queue(identity)
        await self._timers.purge(await self._directory.get(identity))  # timer messages (#19)

    async def tag_queue(self, identity: QueueIdentity, tags: Mapping[str, str]) -> None:
        await self._queues.tag_queue(identity, tags)

    async def untag_queue(self, identity: QueueIdentity, tag_keys: Sequence[str]) -> None:
        await self._queues.untag_queue(identity, tag_keys)

    async def list_queue_tags(self, identity: QueueIdentity) -> dict[str, str]:
        return await self._queues.list_queue_tags(identity)

    async def describe_queue(self, identity: QueueIdentity) -> QueueDescription:
        """The queue as an operator's view shows it (the admin console)."""
        return await self._queues.describe_queue(identity)

    async def add_permission(
        self, identity: QueueIdentity, label: str, account_ids: Sequence[str], actions: Sequence[str]
    ) -> None:
        await self._queues.add_permission(identity, label, account_ids, actions)

    async def remove_permission(self, identity: QueueIdentity, label: str) -> None:
        await self._queues.remove_permission(identity, label)

    # --- messages --------------------------------------------------------------------------
    async def send_message(self, identity: QueueIdentity, request: SendRequest) -> SendResult:
        if wants_timer([request]):  # timer messages (#19)
            return await self._timers.send_message(await self._directory.get(identity), request)
        return await self._sender.send_message(await self._directory.get(identity), request)

    async def send_message_batch(
        self, identity: QueueIdentity, entries: Sequence[tuple[str, SendRequest]]
    ) -> BatchResult[SendResult]:
        if wants_timer([request for _, request in entries]):  # timer messages (#19)
            queue = await self._directory.get(identity)
            return await self._timers.send_message_batch(queue, entries)
        return await self._sender.send_message_batch(await self._directory.get(identity), entries)

    async def receive_message(self, identity: QueueIdentity, request: ReceiveRequest) -> list[ReceivedMessage]:
        return await self._receiver.receive_message(identity, request)

    async def delete_message(self, identity: QueueIdentity, receipt_handle: str) -> None:
        await self._in_flight.delete_message(await self._directory.get(identity), receipt_handle)

    async def delete_message_batch(
        self, identity: QueueIdentity, entries: Sequence[tuple[str, str]]
    ) -> BatchResult[None]:
        return await self._in_flight.delete_message_batch(await self._directory.get(identity), entries)

    async def change_message_visibility(
        self, identity: QueueIdentity, receipt_handle: str, visibility_timeout: int
    ) -> None:
        await self._in_flight.change_message_visibility(
            await self._directory.get(identity), receipt_handle, visibility_timeout
        )

    async def change_message_visibility_batch(
        self, identity: QueueIdentity, entries: Sequence[tuple[str, str, int]]
    ) -> BatchResult[None]:
        return await self._in_flight.change_message_visibility_batch(
            await self._directory.get(identity), entries
        )

    # --- dead-letter queues and message move tasks -----------------------------------------
    async def list_dead_letter_source_queues(
        self, identity: QueueIdentity, max_results: int | None, next_token: str | None
    ) -> tuple[list[str], str | None]:
        return await self._dead_letters.list_source_queues(identity, max_results, next_token)

    async def start_message_move_task(
        self, source_arn: str, destination_arn: str | None, max_per_second: int | None
    ) -> str:
        """Start moving the messages of a dead-letter queue; returns the task handle."""
        return await self._move_tasks.start_message_move_task(
            source_arn, destination_arn, max_per_second
        )

    async def list_message_move_tasks(
        self, source_arn: str, max_results: int | None
    ) -> list[MessageMoveTask]:
        return await self._move_tasks.list_message_move_tasks(source_arn, max_results)

    async def cancel_message_move_task(self, handle: str) -> int:
        return await self._move_tasks.cancel_message_move_task(handle)

    # --- peek and replay (issue 19): CqsExtensions actions and the console's browser ------
    async def peek_messages(self, identity: QueueIdentity, request: PeekRequest) -> MessagePage:
        """Messages looked at without being received: no visibility or receive count changes."""
        return await self._peeker.peek(await self._directory.get(identity), request)

    async def peek_message(self, identity: QueueIdentity, message_id: str) -> PeekedMessage | None:
        """One message by id, looked at (None: deleted, expired or never sent)."""
        return await self._peeker.message(await self._directory.get(identity), message_id)

    async def read_consumed_messages(
        self, identity: QueueIdentity, span: ConsumedRange, next_token: str | None, limit: int
    ) -> tuple[list[ConsumedMessage], str | None]:
        """A page of the messages DeleteMessage consumed within `span` (kept while the queue
        has cqs.ConsumedRetentionSeconds)."""
        return await self._consumed.read(
            await self._directory.get(identity), span, next_token, limit
        )

    async def replay_messages(
        self, identity: QueueIdentity, span: ConsumedRange, replay_id: str | None,
        next_token: str | None, limit: int | None = None,
    ) -> ReplayProgress:
        """Send the messages consumed within `span` to the queue again, as new messages:
        the replay `replay_id` (or NextToken's), started or resumed at its cursor; at most
        `limit` by this call."""
        return await self._replays.replay(
            await self._directory.get(identity), span, replay_id, next_token, limit
        )

    # --- consumer groups (#19): extension actions ------------------------------------------
    async def create_consumer_group(
        self, identity: QueueIdentity, group_name: str, attributes: Mapping[str, str]
    ) -> ConsumerGroup:
        """A group of the queue, served as the queue `<queue>/<group>`: it receives a copy of
        every later send its FilterPolicy matches (or, with StartAt, of earlier ones the
        queue still holds)."""
        return await self._consumer_groups.create(identity, group_name, attributes)

    async def set_consumer_group_attributes(
        self, identity: QueueIdentity, group_name: str, attributes: Mapping[str, str]
    ) -> ConsumerGroup:
        """Change a group's FilterPolicy in place ("" removes it)."""
        return await self._consumer_groups.set_attributes(identity, group_name, attributes)

    async def list_consumer_groups(self, identity: QueueIdentity) -> list[ConsumerGroup]:
        return await self._consumer_groups.list_groups(identity)

    async def delete_consumer_group(self, identity: QueueIdentity, group_name: str) -> None:
        await self._consumer_groups.delete(identity, group_name)

    async def consumer_group_queue(self, identity: QueueIdentity, group_name: str) -> QueueIdentity:
        """The queue a group of `identity` is served as: peek and replay into one group."""
        return await self._consumer_groups.group_queue(identity, group_name)

    # --- timer messages (#19) ----------------------------------------------------------------
    def _init_timers(
        self,
        catalog: QueueCatalog,
        store: MessageStore,
        scheduled: ScheduledMessages | None,
        leases: PromotionLeases | None,
        tuning: ServiceTuning,
        owner: str,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._timers = TimerMessages(
            scheduled, self._sender, horizon_seconds=tuning.timer_horizon_seconds,
            telemetry=telemetry,
        )
        self._timer_promoter = None if scheduled is None or leases is None else TimerPromoter(
            scheduled, leases, store, catalog, self._directory, self._cache_fill,
            owner=owner, lead_seconds=tuning.timer_promotion_lead_seconds,
            lease_seconds=tuning.timer_promotion_lease_seconds,
            page_size=tuning.timer_promotion_page_size, telemetry=telemetry, clock=clock,
        )

    async def _timer_queue_attributes(
        self, identity: QueueIdentity, names: Sequence[str], timer_names: Sequence[str]
    ) -> dict[str, str]:
        others = [name for name in names if name not in TIMER_QUEUE_ATTRIBUTES]
        found = await self._queues.get_queue_attributes(identity, others) if others else {}
        queue = await self._directory.get(identity)
        return {**found, **await self._timers.queue_attributes(queue, timer_names)}

    async def scheduled_summary(self, identity: QueueIdentity) -> ScheduledSummary:
        """The queue's timer messages waiting in the store: how many, the earliest due time."""
        return await self._timers.summary(await self._directory.get(identity))

    async def promote_timer_messages(self) -> int:
        """One promotion round (the housekeeper runs it about once a second)."""
        if self._timer_promoter is None:
            return 0
        return await self._timer_promoter.promote_due()
