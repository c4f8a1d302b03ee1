"""Replays: CqsExtensions.ReplayMessages as a resumable run with a durable cursor.

Owns a replay's life: its id (the caller's `ReplayId`, or one made here and given back as
`NextToken`), its record in the consumed-message store (range, cursor, count, done), and the
order of each batch of up to ten copies:

1. the copy ledger records source message id -> copy id (new ids for new sources);
2. the copies are stored (standard queues; FIFO queues send with deduplication);
3. the record's cursor moves past the batch;
4. only then are the copies added to the cache, where consumers can take them.

A call that fails part-way (the store or Redis away, the process killed) leaves the record
`running`. Calling again with the same id resumes at the cursor: the batch after it is in
doubt, so each of its sources with a ledger entry is looked up by its copy id in the store
and sent again (under the same id) only if it is not there, and the queue's cache is
reloaded from the store, which brings in copies stored but never cached. A copy stays out
of the cache until the cursor is past it, so none can have been consumed (and so be
missing from the store) when the resume decides; the one exception is a refill of the
cache by some other cause between the failure and the resume, which could hand out a
stored copy of the batch in doubt. FIFO copies carry the original message id as their
deduplication id, so within five minutes a FIFO queue drops such a second send anyway.

One call runs a given replay at a time in this process; two processes running the same
replay at once are not guarded against (docs/compatibility.md). Imports model, errors,
ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.extension_model import ConsumedMessage, ConsumedRange, Replay
from cqs.domain.model import Message, Queue
from cqs.ports import ConsumedMessageStore, MessageStore
from cqs.service.clock import epoch_ms
from cqs.service.consumed import check_span, replayed_request
from cqs.service.messages import new_message_id
from cqs.service.sending import Sender

# Messages one ReplayMessages call sends at most; calling again with the id continues.
MAX_REPLAY_PER_CALL = 10_000
REPLAY_BATCH = 10  # copies read, recorded, stored and cached together; the cursor's step
# How long a replay's record and ledger are kept: a replay can be resumed for this long.
REPLAY_KEEP_SECONDS = 14 * 86_400
_REPLAY_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


@dataclass(frozen=True, slots=True)
class ReplayProgress:
    """What one ReplayMessages call did: the replay's id, copies sent by this call and by
    the whole replay, and whether more is left (call again with the id)."""

    replay_id: str
    replayed: int
    total_replayed: int
    done: bool


class Replays:
    def __init__(
        self,
        store: MessageStore,
        consumed: ConsumedMessageStore,
        sender: Sender,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._consumed = consumed
        self._sender = sender
        self._clock = clock
        self._running: set[tuple[str, str]] = set()  # (queue id, replay id) run here now

    async def replay(
        self, queue: Queue, span: ConsumedRange, replay_id: str | None, next_token: str | None,
        limit: int | None = None,
    ) -> ReplayProgress:
        """Start the replay `replay_id` (or a new one) of the copies consumed within `span`,
        or resume it where it stopped; sends up to `limit` (MAX_REPLAY_PER_CALL) copies."""
        check_span(span)
        limit = MAX_REPLAY_PER_CALL if limit is None else limit
        if not 1 <= limit <= MAX_REPLAY_PER_CALL:
            raise InvalidParameterValue(
                f"Value {limit} for parameter MaxNumberOfMessages is invalid. Reason: Must be"
                f" between 1 and {MAX_REPLAY_PER_CALL}, if provided."
            )
        if replay_id is not None and not _REPLAY_ID.match(replay_id):
            raise InvalidParameterValue(
                f"Value {replay_id} for parameter ReplayId is invalid. Reason: must be 1 to"
                " 80 letters, digits, hyphens and underscores."
            )
        if next_token is not None and (
            not _REPLAY_ID.match(next_token) or replay_id not in (None, next_token)
        ):
            raise InvalidParameterValue("Invalid NextToken value.")
        chosen = replay_id or next_token or uuid.uuid4().hex
        key = (queue.queue_id, chosen)
        if key in self._running:
            raise InvalidParameterValue(
                f"Replay {chosen} is running: call again once the running call has answered."
            )
        self._running.add(key)
        try:
            record = await self._consumed.replay(queue, chosen)
            if record is None:
                if replay_id is None and next_token is not None:
                    raise InvalidParameterValue("Invalid NextToken value.")
                record = Replay(chosen, span, min(span.end_ms, epoch_ms(self._clock)))
            elif record.span != span:
                raise InvalidParameterValue(
                    f"Replay {chosen} was started with other StartTime and EndTime values:"
                    " resume it with the same ones, or choose a new ReplayId."
                )
            if record.done:
                return ReplayProgress(chosen, 0, record.replayed, True)
            return await self._run(queue, record, limit)
        finally:
            self._running.discard(key)

    async def _run(self, queue: Queue, record: Replay, limit: int) -> ReplayProgress:
        interrupted = record.running  # an earlier call stopped part-way
        record = replace(record, running=True)
        await self._save(queue, record)
        span = ConsumedRange(record.span.start_ms, record.until_ms)
        sent = 0
        while sent < limit and not record.done:
            page, position = await self._consumed.read(
                queue, span, record.position, min(REPLAY_BATCH, limit - sent)
            )
            stored = await self._store_batch(queue, record.replay_id, page, in_doubt=interrupted)
            record = replace(record, position=position, replayed=record.replayed + len(page),
                             done=position is None)
            await self._save(queue, record)
            if interrupted:
                # Copies of the batches before the cursor may be stored but not cached.
                self._sender.refill(queue)
                interrupted = False
            if stored:
                await self._sender.cache_replayed(queue, stored)
            sent += len(page)
        record = replace(record, running=False)
        await self._save(queue, record)
        return ReplayProgress(record.replay_id, sent, record.replayed, record.done)

    async def _store_batch(
        self, queue: Queue, replay_id: str, page: Sequence[ConsumedMessage], *, in_doubt: bool
    ) -> list[Message]:
        """Record and store one batch's copies; the stored copies of a standard queue that
        the cache is still to get (a FIFO send caches its own). `in_doubt`: the batch
        follows the cursor of an interrupted call."""
        sources = [copy.message.message_id for copy in page]
        known = await self._consumed.replay_copies(queue, replay_id, sources) if in_doubt else {}
        stored = await self._already_stored(queue, known)
        fresh = {source: new_message_id() for source in sources if source not in known}
        if fresh:
            await self._consumed.record_replay_copies(
                queue, replay_id, fresh, REPLAY_KEEP_SECONDS
            )
        copy_ids = {**known, **fresh}
        to_send: list[Message] = []
        for copy in page:
            copy_id = copy_ids[copy.message.message_id]
            if copy_id not in stored:
                stored.add(copy_id)  # a message kept twice (racing deletes) is sent once
                to_send.append(self._sender.build_replayed(
                    queue, replayed_request(queue, copy.message), copy_id
                ))
        if queue.fifo:
            await self._sender.send_replayed_fifo(queue, to_send)
            return []
        if to_send:
            await self._sender.store_replayed(queue, to_send)
        return to_send

    async def _already_stored(self, queue: Queue, known: dict[str, str]) -> set[str]:
        """Of the copy ids a resumed batch had recorded, those the store holds."""
        copy_ids = list(known.values())
        found = await asyncio.gather(*(self._store.get(queue, c) for c in copy_ids))
        return {c for c, message in zip(copy_ids, found, strict=True) if message is not None}

    async def _save(self, queue: Queue, record: Replay) -> None:
        await self._consumed.save_replay(queue, record, REPLAY_KEEP_SECONDS)
