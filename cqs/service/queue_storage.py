"""QueueStorage: the four handles the queue-wide mechanisms (queues, dead letters, consumer
groups) share: the catalog, the message store, the queue directory and the cache filler.

One value, built once by `QueueService`, so each mechanism takes it whole instead of
repeating the four. Imports ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

from dataclasses import dataclass

from cqs.ports import MessageStore, QueueCatalog
from cqs.service.cache_fill import CacheFiller
from cqs.service.queue_directory import QueueDirectory


@dataclass(frozen=True, slots=True)
class QueueStorage:
    catalog: QueueCatalog
    store: MessageStore
    directory: QueueDirectory
    cache_fill: CacheFiller
