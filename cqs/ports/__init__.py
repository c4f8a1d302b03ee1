"""The interfaces the service needs, in queue language: storage, the cache and telemetry
(and the durable store's side of `cqs migrate`).

One module per role; this package re-exports them so callers write `from cqs.ports import
MessageStore`. Imports only `cqs.domain.model`: adapters implement these, the service uses them.
"""

from cqs.ports.cache import (
    CachedMessages,
    CacheFill,
    CacheInspection,
    DueSweeper,
    MessageCache,
)
from cqs.ports.consumed import ConsumedMessageStore
from cqs.ports.inspection import QueueInspector
from cqs.ports.migration import LegacyKeyspace, MigrationCounts, MigrationRecord
from cqs.ports.scheduled import PromotionLeases, ScheduledMessages
from cqs.ports.storage import MessageStore, QueueCatalog
from cqs.ports.telemetry import NullTelemetry, Telemetry

__all__ = [
    "CacheFill",
    "CacheInspection",
    "CachedMessages",
    "ConsumedMessageStore",
    "DueSweeper",
    "LegacyKeyspace",
    "MessageCache",
    "MessageStore",
    "MigrationCounts",
    "MigrationRecord",
    "NullTelemetry",
    "PromotionLeases",
    "QueueCatalog",
    "QueueInspector",
    "ScheduledMessages",
    "Telemetry",
]
