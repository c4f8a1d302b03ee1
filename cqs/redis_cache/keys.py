"""Every Redis key cqs uses, in one place.

Owns the key layout of the message cache. Each queue's keys share the `{queue_name}` hash
tag, so they live together on the queue's server (and in one slot under Redis Cluster).
Imports only the standard library.

Per queue (`cqs:{<queue>}:...`):

  state         STRING  absent | "filling:<owner>" (with a PX lease) | "ready"
  visible       LIST    message ids; sends RPUSH at the tail, receives LPOP the head,
                        messages back from flight LPUSH at the head
  payload       HASH    id -> the message as compact JSON (`codec.py`)
  receipt       HASH    id -> "<sent_ms>:<receive_count>:<first_receive_ms>:<nonce>"
                        (sent_ms here lets Lua apply retention without decoding JSON;
                        first_receive_ms 0 = never received; nonce of the latest receive)
  inflight      ZSET    id -> ms when the message becomes visible again
  delayed       ZSET    id -> ms when the message is first deliverable
  fill_deleted  SET     ids deleted while a fill runs, so the fill does not bring them back

Per server:

  cqs:due       ZSET    queue name -> earliest ms at which one of its in-flight or delayed
                        messages is due (may be early after deletes; never late)
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "cqs"
DUE_KEY = f"{PREFIX}:due"

STATE_READY = "ready"
STATE_FILLING_PREFIX = "filling:"


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The keys of one queue."""

    queue_name: str

    def _key(self, part: str) -> str:
        return f"{PREFIX}:{{{self.queue_name}}}:{part}"

    @property
    def state(self) -> str:
        return self._key("state")

    @property
    def visible(self) -> str:
        return self._key("visible")

    @property
    def payload(self) -> str:
        return self._key("payload")

    @property
    def receipt(self) -> str:
        return self._key("receipt")

    @property
    def inflight(self) -> str:
        return self._key("inflight")

    @property
    def delayed(self) -> str:
        return self._key("delayed")

    @property
    def fill_deleted(self) -> str:
        return self._key("fill_deleted")

    def script_keys(self) -> list[str]:
        """KEYS for every queue script, in the order the Lua headers document."""
        return [
            self.state,
            self.visible,
            self.payload,
            self.receipt,
            self.inflight,
            self.delayed,
            self.fill_deleted,
            DUE_KEY,
        ]

    def message_keys(self) -> list[str]:
        """The keys that hold messages (everything but the state)."""
        return [
            self.visible,
            self.payload,
            self.receipt,
            self.inflight,
            self.delayed,
            self.fill_deleted,
        ]


def filling_state(owner: str) -> str:
    return f"{STATE_FILLING_PREFIX}{owner}"
