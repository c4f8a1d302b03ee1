"""The interfaces the service needs, in queue language: storage, the cache and telemetry.

One module per role; this package re-exports them so callers write `from cqs.ports import
MessageStore`. Imports only `cqs.model`: adapters implement these, the service uses them.
"""

from cqs.ports.cache import (
    CachedMessages,
    CacheFill,
    CacheInspection,
    DueSweeper,
    MessageCache,
)
from cqs.ports.inspection import QueueInspector
from cqs.ports.storage import MessageStore, QueueCatalog
from cqs.ports.telemetry import NullTelemetry, Telemetry

__all__ = [
    "CacheFill",
    "CacheInspection",
    "CachedMessages",
    "DueSweeper",
    "MessageCache",
    "MessageStore",
    "NullTelemetry",
    "QueueCatalog",
    "QueueInspector",
    "Telemetry",
]
