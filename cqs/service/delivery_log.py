"""DeliveryLog: the messages this process handed out, kept hidden through a Redis loss.

Owns the process-local record of deliveries (per queue incarnation, until when each stays
hidden) that Return-From-Cassandra skips and a refill loads in flight. Imports nothing of
cqs.
"""

from __future__ import annotations


class DeliveryLog:
    """The messages this process handed out, and until when (ms) each stays hidden.

    Kept per queue incarnation (queue id). Redis keeps the authoritative in-flight set; this
    record lets the process keep its own deliveries hidden when Redis is lost:
    Return-From-Cassandra receives skip them, and a refill loads them in flight rather than
    visible. Entries leave on delete and when their time passes.
    """

    def __init__(self) -> None:
        self._hidden: dict[str, dict[str, int]] = {}

    def record(self, queue_id: str, message_id: str, hidden_until_ms: int) -> None:
        self._hidden.setdefault(queue_id, {})[message_id] = hidden_until_ms

    def extend(self, queue_id: str, message_id: str, hidden_until_ms: int) -> bool:
        """Move a known delivery's return time; False if this process did not hand it out."""
        entries = self._hidden.get(queue_id)
        if entries is None or message_id not in entries:
            return False
        entries[message_id] = hidden_until_ms
        return True

    def forget(self, queue_id: str, message_id: str) -> None:
        entries = self._hidden.get(queue_id)
        if entries is not None:
            entries.pop(message_id, None)

    def forget_queue(self, queue_id: str) -> None:
        self._hidden.pop(queue_id, None)

    def hidden(self, queue_id: str, now_ms: int) -> dict[str, int]:
        """The queue's deliveries still hidden at `now_ms` (a copy); drops the others."""
        entries = self._hidden.get(queue_id)
        if not entries:
            return {}
        live = {mid: until for mid, until in entries.items() if until > now_ms}
        if len(live) != len(entries):
            if live:
                self._hidden[queue_id] = dict(live)
            else:
                del self._hidden[queue_id]
        return live

    def prune(self, now_ms: int) -> int:
        """Drop every delivery whose time has passed; return how many remain."""
        for queue_id in list(self._hidden):
            self.hidden(queue_id, now_ms)
        return sum(len(entries) for entries in self._hidden.values())
