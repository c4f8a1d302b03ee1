"""Every Redis key (and the one pub/sub channel) cqs uses, in one place.

Owns the key layout of the message cache. Each queue's keys share the hash tag
`{<account>:<region>:<name>}` (`QueueIdentity.key`), so they live together on the queue's
server (and in one slot under Redis Cluster). Imports only the standard library and
`cqs.domain.model`.

Per queue (`cqs:{<account>:<region>:<name>}:...`):

  state          STRING  absent | "filling:<owner>" (with a PX lease) | "ready"
  visible        LIST    message ids; sends RPUSH at the tail, receives LPOP the head,
                         messages back from flight LPUSH at the head. A FIFO queue's
                         (its name ends in ".fifo") is a ZSET instead: id -> sequence
                         number, so order holds however messages were cached
  payload        HASH    id -> the message as compact JSON (`cqs/domain/message_codec.py`)
  receipt        HASH    id -> "<sent_ms>:<receive_count>:<first_receive_ms>:<nonce>"
                         (sent_ms here lets Lua apply retention without decoding JSON;
                         first_receive_ms 0 = never received; nonce of the latest receive,
                         empty when the message was loaded in flight: any handle matches)
  inflight       ZSET    id -> ms when the message becomes visible again
  delayed        ZSET    id -> ms when the message is first deliverable
  recent_deletes ZSET    id -> ms deleted: ids deleted lately (60 s while READY) or since
                         the fill began, so that no fill brings them back (the store's
                         delete follows the cache's and may land after a fill read it)
  listening      STRING  "1" with a PX ttl while a long poll of some process waits on the
                         queue; sends and returns publish on the arrivals channel only then
  store_deletes  SET     ids deleted from the cache whose delete the durable store could not
                         take yet; fills skip them. Kept by purge, drop and begin_fill: the
                         deletes must still reach the store

FIFO queues only (the keys exist only for them; every queue script still gets them in KEYS):

  fifo           HASH    id -> "<sequence number>:<message group id>" of every cached message;
                         receives read groups and order from it
  group_locks    HASH    message group id -> the sequence numbers of its messages in flight
                         (",<n>,<n>", ascending); a receive serves the group's visible
                         messages below the first only (an earlier cqs wrote a count here,
                         holding the whole group: still counted down)
  dedup          HASH    "<queue id>/<deduplication key>" -> "<message id>:<sequence>:<0|1>"
                         (1 = stored durably; 0 = a send still storing it, for a short lease)
  dedup_expiry   ZSET    the same fields -> ms when the entry lapses (5 minutes after the send)
  sequence       STRING  the last sequence number given out (at least now_ms * 1000, so it
                         keeps growing after a Redis loss)
  attempts       HASH    ReceiveRequestAttemptId -> the ids and nonces that receive handed out
  attempt_expiry ZSET    the same fields -> ms when the attempt id lapses (5 minutes)
  The dedup, sequence and attempt keys outlive drop and begin_fill (they are not
  messages) and expire as a whole when the queue sees no FIFO traffic for a while; purge
  removes the dedup keys (SQS forgets a purged message's deduplication id) and keeps the rest.

Per server:

  cqs:due                  ZSET    queue key -> earliest ms at which one of its in-flight or
                                   delayed messages is due (may be early after deletes;
                                   never late)
  cqs:store_delete_queues  SET     keys of the queues whose store_deletes set is not empty
  cqs:sweeper              STRING  the id of the process sweeping this server (`release_due`),
                                   with a PX lease it renews on every sweep

Per server pub/sub channel:

  cqs:arrivals             keys of queues that got visible messages while `listening`

Under Redis Cluster nothing may be shared by queues in a script (a script's keys must share
one slot), so the per-server keys above become the queue's own, in its slot:

  cqs:{<queue>}:due              ZSET    the queue's entry of `cqs:due` (one member, the
                                         queue key -> its earliest due ms); the sweep reads
                                         it for the queues this process's long polls wait on
  cqs:{<queue>}:store_delete_mark SET    stands in for `cqs:store_delete_queues` in the
                                         scripts; the directory of queues with deferred
                                         deletes is the plain key `cqs:store_delete_queues`,
                                         written by the client after the script
  cqs:{<queue>}:arrivals         sharded pub/sub channel (SSUBSCRIBE/SPUBLISH), served by
                                 the node that owns the queue's slot
  cqs:sweeper is not used: each process sweeps the queues it waits on (`sweep.py`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from cqs.domain.model import QueueIdentity

PREFIX = "cqs"
DUE_KEY = f"{PREFIX}:due"
STORE_DELETE_QUEUES_KEY = f"{PREFIX}:store_delete_queues"
SWEEPER_KEY = f"{PREFIX}:sweeper"
ARRIVALS_CHANNEL = f"{PREFIX}:arrivals"

STATE_READY = "ready"
STATE_FILLING_PREFIX = "filling:"


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The keys of one queue."""

    queue: QueueIdentity

    def _key(self, part: str) -> str:
        return f"{PREFIX}:{{{self.queue.key}}}:{part}"

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
    def recent_deletes(self) -> str:
        return self._key("recent_deletes")

    @property
    def listening(self) -> str:
        return self._key("listening")

    @property
    def store_deletes(self) -> str:
        return self._key("store_deletes")

    @property
    def fifo_queue(self) -> bool:
        """FIFO queue names end in ".fifo"; the Lua scripts tell the same from KEYS[1]."""
        return self.queue.fifo

    @property
    def fifo(self) -> str:
        return self._key("fifo")

    @property
    def group_locks(self) -> str:
        return self._key("group_locks")

    @property
    def dedup(self) -> str:
        return self._key("dedup")

    @property
    def dedup_expiry(self) -> str:
        return self._key("dedup_expiry")

    @property
    def sequence(self) -> str:
        return self._key("sequence")

    @property
    def attempts(self) -> str:
        return self._key("attempts")

    @property
    def attempt_expiry(self) -> str:
        return self._key("attempt_expiry")

    @property
    def own_due(self) -> str:
        return self._key("due")

    @property
    def store_delete_mark(self) -> str:
        return self._key("store_delete_mark")

    @property
    def arrivals(self) -> str:
        return self._key("arrivals")

    def script_keys(self, clustered: bool = False) -> list[str]:
        """KEYS for every queue script, in the order the Lua headers document.

        The first eight keep their historical positions; later keys were appended.
        `clustered`: the per-server keys are replaced by the queue's own (one slot).
        """
        return [
            self.state,
            *self._message_keys_of_every_queue(),  # KEYS[2..7]
            self.own_due if clustered else DUE_KEY,
            self.listening,
            self.store_deletes,
            self.store_delete_mark if clustered else STORE_DELETE_QUEUES_KEY,
            self.fifo,
            self.group_locks,
            self.dedup,
            self.dedup_expiry,
            self.sequence,
            self.attempts,
            self.attempt_expiry,
        ]

    def message_keys(self) -> list[str]:
        """The keys that hold the cached messages (dropped with the queue's cache)."""
        return [*self._message_keys_of_every_queue(), self.fifo, self.group_locks]

    def _message_keys_of_every_queue(self) -> list[str]:
        """The message keys a standard queue has too, in script order (KEYS[2..7])."""
        return [
            self.visible,
            self.payload,
            self.receipt,
            self.inflight,
            self.delayed,
            self.recent_deletes,
        ]


def queue_from_key(key: str) -> QueueIdentity | None:
    """The queue a member of `cqs:due`, `cqs:store_delete_queues` or an arrival names; None
    for a name written by a cqs version before queue keys held the account and region."""
    try:
        return QueueIdentity.from_key(key)
    except ValueError:
        return None


def filling_state(owner: str) -> str:
    return f"{STATE_FILLING_PREFIX}{owner}"


@functools.lru_cache(maxsize=4096)
def _script_keys(queue: QueueIdentity, clustered: bool) -> tuple[str, ...]:
    return tuple(QueueKeys(queue).script_keys(clustered))


def script_keys(queue: QueueIdentity, clustered: bool = False) -> tuple[str, ...]:
    """`QueueKeys(queue).script_keys()`, built once per queue: every script call needs them."""
    return _script_keys(queue, clustered)


def arrivals_channel(queue: QueueIdentity, clustered: bool) -> str:
    """Where the queue's arrivals are announced: the server's channel, or under a cluster
    the queue's own shard channel (the scripts SPUBLISH on a channel with a hash tag)."""
    return QueueKeys(queue).arrivals if clustered else ARRIVALS_CHANNEL

# --- timer messages (issue #19) -------------------------------------------------------------
# Per queue: `cqs:{<queue>}:promoter`  STRING  the id of the process promoting the queue's
# due timer messages from the durable store, with a PX lease it renews while it works.


def promotion_lease_key(queue: QueueIdentity) -> str:
    return f"{PREFIX}:{{{queue.key}}}:promoter"
